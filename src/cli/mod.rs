//! The subcommands.

pub mod call;
pub mod check;
pub mod explore;
pub mod probe;
pub mod replay;
pub mod serve;
pub mod serve_fleet;
