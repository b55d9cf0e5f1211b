//! The manual: how the crate is meant to be used and why it is built as it
//! is, kept with the code so its links are checked by rustdoc.
//!
//! - [`embedding`]: putting the server core inside a transport of your own,
//!   async or a thread per request: what the transport must report, and how
//!   soon.

pub mod embedding;
