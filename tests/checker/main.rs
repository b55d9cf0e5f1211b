//! The checker's own tests in one binary: every bundled model against its
//! expectations, random models, and the soundness of each reduction (ample
//! sets, sleep sets, symmetry, naming by exchange, retirement). One binary,
//! not one per file: `cargo test` runs binaries one after another, so here
//! the long searches of one file share the cores with the others', and the
//! crate's generic code is compiled once for them all.
//! `cargo test --profile test-release --test checker sleep_sets::` runs one file's tests.
//!
//! Not here: `tests/engine.rs`, `tests/engine_memory.rs` and
//! `tests/bitstate.rs`, whose memory budgets and bit arrays watch or grow
//! the resident size of their process.

/// The allocator of the `mcp-streamable` binary.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../check_support/mod.rs"]
mod check_support;

mod ample_sets;
mod check_models;
mod defaults;
mod pool;
mod random_models;
mod reductions;
mod retirement;
mod sleep_sets;
mod stuck;
