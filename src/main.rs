//! The `mcp-streamable` command line: `check` runs every model in `models/`
//! and prints the verdict matrix; `replay` re-runs a counterexample trace;
//! `explore` serves stateright's Explorer for one model; `serve` runs the
//! reference server; `call` calls a tool.

mod cli;

/// mimalloc: the checker clones and frees millions of small states across
/// threads, where glibc's allocator spent half the time (perf) and scaled
/// poorly past one thread.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// Sans-IO MCP Streamable HTTP cores and their checkers.
#[derive(Parser)]
#[command(name = "mcp-streamable", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check every model (or one) under its expected preset pairs; print the verdict matrix.
    Check(cli::check::CheckArgs),
    /// Re-run a counterexample trace on the cores and confirm its violation.
    Replay {
        /// The trace (JSON) written by `check`.
        trace: PathBuf,
    },
    /// Serve stateright's Explorer for one model on 127.0.0.1.
    Explore(cli::explore::ExploreArgs),
    /// Run the reference MCP server (the conformance suite's tool set).
    Serve(cli::serve::ServeArgs),
    /// Call one tool on an MCP server; also the conformance client command.
    Call(cli::call::CallArgs),
    /// Check a running MCP server's Streamable HTTP rules, black box.
    Probe(cli::probe::ProbeArgs),
    /// Run an MCP client command against adversarial server schedules and
    /// judge what it did: holds, violates, hangs or loops.
    ProbeClient(cli::probe_client::ProbeClientArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(args) => cli::check::run(args),
        Command::Replay { trace } => cli::replay::run(&trace),
        Command::Explore(args) => cli::explore::run(args),
        Command::Serve(args) => cli::serve::run(args),
        Command::Call(args) => cli::call::run(args),
        Command::Probe(args) => cli::probe::run(args),
        Command::ProbeClient(args) => cli::probe_client::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
