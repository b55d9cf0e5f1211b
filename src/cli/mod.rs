//! The subcommands.

pub mod check;
pub mod explore;
pub mod replay;
