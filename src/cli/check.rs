//! `mcp-streamable check`: every model x its expected preset pairs, a verdict
//! matrix, and for each counterexample a JSON trace, an SVG and Mermaid text.

use mcp_streamable::check::{
    replay, run_search, CheckModel, Diagram, Expectation, Scenario, Search, Trace, Verdict,
};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `check`.
#[derive(clap::Args)]
pub struct CheckArgs {
    /// Directory of model files.
    #[arg(long, default_value = "models")]
    models: PathBuf,
    /// Only this model (file stem or `name`).
    #[arg(long)]
    model: Option<String>,
    /// Only this server preset.
    #[arg(long)]
    server: Option<String>,
    /// Only this client preset.
    #[arg(long)]
    client: Option<String>,
    /// Checker threads (default: the machine's cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Where counterexample traces and pictures go.
    #[arg(long, default_value = "target/check")]
    out: PathBuf,
    /// Search: `bfs` (exhaustive, shortest counterexamples), `dfs` (exhaustive,
    /// less memory) or `simulation` (seeded random walks for big bounds).
    #[arg(long, default_value = "bfs")]
    search: String,
    /// Seed of `--search simulation`.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds each `--search simulation` runs.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
}

struct Line {
    model: String,
    pair: String,
    verdict: String,
    states: usize,
    depth: usize,
    millis: u128,
    ok: Option<bool>,
}

#[allow(clippy::disallowed_methods)] // the CLI reports wall time; the cores never read it
pub fn run(args: CheckArgs) -> Result<ExitCode, String> {
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let search = match args.search.as_str() {
        "bfs" => Search::Bfs,
        "dfs" => Search::Dfs,
        "simulation" => Search::Simulation {
            seed: args.seed,
            limit: std::time::Duration::from_secs(args.seconds),
        },
        other => {
            return Err(format!(
                "--search {other:?}: expected bfs, dfs or simulation"
            ))
        }
    };
    let models = Scenario::load_dir(&args.models).map_err(|e| e.to_string())?;
    let models: Vec<(PathBuf, Scenario)> = models
        .into_iter()
        .filter(|(f, s)| match &args.model {
            Some(m) => s.name == *m || f.file_stem().is_some_and(|x| x == m.as_str()),
            None => true,
        })
        .collect();
    if models.is_empty() {
        return Err(format!("no model matches in {}", args.models.display()));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut lines = Vec::new();
    let total_start = std::time::Instant::now();
    for (_, scenario) in &models {
        for e in pairs(scenario, &args) {
            let Some(model) = CheckModel::for_expectation(scenario, &e) else {
                return Err(format!(
                    "{}: unknown presets {} x {}",
                    scenario.name, e.server, e.client
                ));
            };
            let label = format!("{} {} x {}", scenario.name, e.server, e.client);
            let tty = std::io::stderr().is_terminal();
            let mut shown = false;
            let out = run_search(&model, threads, search, |states, t| {
                if tty {
                    eprint!(
                        "\r  checking {label}: {states} states, {:.1}s ",
                        t.as_secs_f64()
                    );
                    let _ = std::io::stderr().flush();
                    shown = true;
                }
            });
            if shown {
                eprint!("\r{:width$}\r", "", width = label.len() + 48);
            }
            let (verdict, ok) = match (&out.counterexample, &e.verdict) {
                // Only an exhaustive search can confirm "holds".
                (None, Verdict::Holds) if matches!(search, Search::Simulation { .. }) => {
                    ("none found".to_owned(), None)
                }
                (None, Verdict::Holds) => (
                    "holds".to_owned(),
                    Some(out.states >= e.min_states.unwrap_or(1)),
                ),
                (None, Verdict::Violates(_)) => ("holds".to_owned(), Some(false)),
                (Some(c), expected) => {
                    let trace = Trace::new(&model, c);
                    write_artifacts(&args.out, &trace)?;
                    let ok = match expected {
                        Verdict::Violates(ids) => ids.iter().any(|i| i == c.violation.id),
                        Verdict::Holds => false,
                    };
                    (
                        format!("{} ({} steps)", c.violation.id, c.steps.len()),
                        Some(ok),
                    )
                }
            };
            let listed = scenario
                .expect
                .iter()
                .any(|x| x.server == e.server && x.client == e.client);
            lines.push(Line {
                model: scenario.name.clone(),
                pair: format!("{} x {}", e.server, e.client),
                verdict,
                states: out.states,
                depth: out.depth,
                millis: out.elapsed.as_millis(),
                ok: if listed { ok } else { None },
            });
        }
    }
    print_matrix(&lines);
    let bad = lines.iter().filter(|l| l.ok == Some(false)).count();
    println!(
        "\n{} checks in {:.1}s with {threads} thread(s); {} as expected, {bad} not; traces and pictures in {}",
        lines.len(),
        total_start.elapsed().as_secs_f64(),
        lines.iter().filter(|l| l.ok == Some(true)).count(),
        args.out.display()
    );
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The preset pairs to run: the model's expectations, filtered; or the one
/// pair asked for when the model does not list it.
fn pairs(s: &Scenario, args: &CheckArgs) -> Vec<Expectation> {
    let keep = |e: &Expectation| {
        args.server
            .as_ref()
            .is_none_or(|x| x.eq_ignore_ascii_case(&e.server))
            && args
                .client
                .as_ref()
                .is_none_or(|x| x.eq_ignore_ascii_case(&e.client))
    };
    let listed: Vec<Expectation> = s.expect.iter().filter(|e| keep(e)).cloned().collect();
    if !listed.is_empty() {
        return listed;
    }
    match (&args.server, &args.client) {
        (Some(server), Some(client)) => vec![Expectation {
            server: server.to_uppercase(),
            client: client.to_uppercase(),
            verdict: Verdict::Holds,
            min_states: None,
            judge: Vec::new(),
        }],
        _ => Vec::new(),
    }
}

fn write_artifacts(dir: &Path, trace: &Trace) -> Result<(), String> {
    let base = format!("{}.{}.{}", trace.scenario.name, trace.server, trace.client);
    let json = serde_json::to_string_pretty(trace).map_err(|e| e.to_string())?;
    let write = |ext: &str, text: &str| {
        let f = dir.join(format!("{base}.{ext}"));
        std::fs::write(&f, text).map_err(|e| format!("{}: {e}", f.display()))
    };
    write("trace.json", &json)?;
    let replayed = replay(trace).map_err(|e| format!("{base}: {e}"))?;
    let diagram = Diagram::new(trace, &replayed);
    write("svg", &diagram.svg())?;
    write("mmd", &diagram.mermaid())?;
    Ok(())
}

fn print_matrix(lines: &[Line]) {
    let w_model = lines
        .iter()
        .map(|l| l.model.len())
        .max()
        .unwrap_or(5)
        .max(5);
    let w_pair = lines.iter().map(|l| l.pair.len()).max().unwrap_or(4).max(4);
    println!(
        "{:<w_model$}  {:<w_pair$}  {:<14}  {:>9}  {:>5}  {:>8}  expected",
        "model", "server x client", "verdict", "states", "depth", "time"
    );
    for l in lines {
        let expected = match l.ok {
            Some(true) => "ok",
            Some(false) => "MISMATCH",
            None => "-",
        };
        println!(
            "{:<w_model$}  {:<w_pair$}  {:<14}  {:>9}  {:>5}  {:>6}ms  {expected}",
            l.model, l.pair, l.verdict, l.states, l.depth, l.millis
        );
    }
}
