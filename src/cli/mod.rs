//! The subcommands.

pub mod call;
pub mod check;
pub mod explore;
pub mod replay;
pub mod serve;
