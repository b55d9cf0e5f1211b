//! `mcp-streamable check`: every model x its expected preset pairs, a verdict
//! matrix, and for each counterexample a JSON trace, an SVG and Mermaid text.

use mcp_streamable::policy::{ClientPolicy, ServerPolicy};
use mcp_streamable_check::fleet::FleetFile;
use mcp_streamable_check::sim::{Clocks, Naming};
use mcp_streamable_check::{
    found_reduced, memory, replay, run_search, CheckModel, Diagram, Expectation, Interrupt, Limit,
    Limits, NotifyReach, Order, Progress, Scenario, Search, Trace, Verdict,
};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    threads: Option<usize>,
    /// Where counterexample traces and pictures go.
    #[arg(long, default_value = "target/check")]
    out: PathBuf,
    /// Search: `auto` (exhaustive, shortest counterexamples: breadth first
    /// until its frontier has grown by 64 MiB, then depth first, which costs
    /// half as much a state; a counterexample met depth first is searched
    /// for again breadth first), `bfs` (exhaustive, shortest
    /// counterexamples; turns depth first by itself when the frontier
    /// outgrows half the memory budget), `dfs` (exhaustive, least memory),
    /// `stateright` (stateright's own BFS, no budget: a cross-check),
    /// `bitstate` (depth first against a bit array instead of a table of
    /// states, for state spaces past memory: real counterexamples, never
    /// "holds", and the chance it missed something) or `simulation` (seeded
    /// random walks).
    #[arg(long, default_value = "auto")]
    search: String,
    /// The bit array of `--search bitstate`: 2^N bits (20 to 40; 32 is
    /// 512 MiB). More bits, fewer states missed by collisions.
    #[arg(long, default_value_t = 32, value_name = "N",
          value_parser = clap::value_parser!(u32).range(20..=40))]
    bitstate_bits: u32,
    /// Stop a check after this many distinct states; its verdict is then
    /// "bounded" (exit code 3 when nothing else is wrong).
    #[arg(long, value_parser = super::at_least_one::<usize>)]
    max_states: Option<usize>,
    /// Stop a check when the process holds this much memory (e.g. `8G`);
    /// default: 60% of the memory available at start. Verdict "bounded".
    #[arg(long)]
    max_memory: Option<String>,
    /// Turn the symmetry reduction off: clients that run the same script are
    /// then told apart (more states, the same verdicts; for cross-checks).
    #[arg(long)]
    no_symmetry: bool,
    /// Name the server's exchanges and sessions in the order requests
    /// arrive, as real servers do, instead of after the client exchange that
    /// carried each (more states when clients interleave, the same
    /// verdicts; for cross-checks).
    #[arg(long)]
    arrival_naming: bool,
    /// Turn the partial-order reduction off: every client's steps are then
    /// interleaved with every other client's, not run one client at a time
    /// (more states, the same verdicts; for cross-checks). It acts only on
    /// models with a clock per component.
    #[arg(long)]
    no_reduction: bool,
    /// Run every model under these clocks, whatever it says: `auto` (a
    /// model's default: per component where the reduction can act, one
    /// clock elsewhere), `global` (one clock) or `per-component` (a clock
    /// per client and one for the server, which the reduction needs).
    #[arg(long, value_name = "CLOCKS")]
    clocks: Option<String>,
    /// Run every model with its `notify` steps reaching sessions this way,
    /// whatever it says: `auto` (a model's default: per session where the
    /// clocks are per component), `atomic` or `per-session` (which the
    /// reduction needs when the server's script has `notify`).
    #[arg(long, value_name = "REACH")]
    notify: Option<String>,
    /// Seed of `--search simulation`.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds each `--search simulation` runs.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// When stderr is not a terminal (a CI log, a file), a long check prints
    /// a progress line every this many seconds (on a terminal the line is
    /// live).
    #[arg(long, default_value_t = 15, value_name = "SECONDS")]
    progress_every: u64,
}

struct Line {
    model: String,
    pair: String,
    verdict: String,
    states: usize,
    depth: usize,
    millis: u128,
    ok: Option<bool>,
    bounded: bool,
    /// Held within the model's depth bound, which the search met with
    /// actions enabled: nothing is known past it.
    within_depth: bool,
}

/// Exit code when every verdict is as expected but some run stopped at its
/// budget ("bounded"): nothing wrong was found, nothing was proven either.
const EXIT_BOUNDED: u8 = 3;

/// Exit code when every verdict is as expected and none bounded, but some
/// held only within a depth bound their search met with actions enabled
/// ("holds within depth D"): a deeper bound may still find something.
const EXIT_WITHIN_DEPTH: u8 = 4;

/// Exit code after Ctrl-C (or SIGTERM): the shell's convention, 128 + SIGINT.
/// The check that was running reports what it explored as bounded; the
/// checks after it do not run.
const EXIT_INTERRUPTED: u8 = 130;

/// Set by the first Ctrl-C; the second ends the process at once.
static INTERRUPT: AtomicBool = AtomicBool::new(false);

/// Routes Ctrl-C and SIGTERM to [`INTERRUPT`]: the running search stops
/// within a quarter second and its verdict line, the notes and the summary
/// are still printed. `None` when a handler cannot be installed (then a
/// signal ends the process as it would anyway).
fn interrupt_on_signal() -> Option<Interrupt> {
    ctrlc::set_handler(|| {
        if INTERRUPT.swap(true, Ordering::Relaxed) {
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
        eprintln!(
            "\ninterrupted: reporting what the running check explored (again to quit at once)"
        );
    })
    .ok()?;
    Some(Interrupt::new(&INTERRUPT))
}

fn interrupted() -> bool {
    INTERRUPT.load(Ordering::Relaxed)
}

#[allow(clippy::disallowed_methods)] // the CLI reports wall time; the cores never read it
pub fn run(args: CheckArgs) -> Result<ExitCode, String> {
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let search = match args.search.as_str() {
        "auto" => Search::Auto,
        "bfs" => Search::Bfs,
        "dfs" => Search::Dfs,
        "stateright" => Search::StaterightBfs,
        "bitstate" => Search::BitState {
            log2_bits: args.bitstate_bits,
        },
        "simulation" => Search::Simulation {
            seed: args.seed,
            limit: std::time::Duration::from_secs(args.seconds),
        },
        other => {
            return Err(format!(
                "--search {other:?}: expected auto, bfs, dfs, stateright, bitstate or simulation"
            ))
        }
    };
    let mut limits = Limits::new(threads);
    limits.states_max = args.max_states;
    if let Some(m) = &args.max_memory {
        let max = memory::parse_size(m).map_err(|e| format!("--max-memory {e}"))?;
        if max == 0 {
            return Err(format!("--max-memory {m:?}: must be more than 0"));
        }
        limits.memory_max = Some(max);
    }
    // A preset filter that names no preset would select nothing and pass.
    if let Some(s) = &args.server {
        if ServerPolicy::preset(&s.to_uppercase()).is_none() {
            let names = ServerPolicy::preset_names();
            return Err(format!("--server {s:?}: expected one of {names:?}"));
        }
    }
    if let Some(c) = &args.client {
        if ClientPolicy::preset(&c.to_uppercase()).is_none() {
            let names = ClientPolicy::preset_names();
            return Err(format!("--client {c:?}: expected one of {names:?}"));
        }
    }
    limits.interrupt = interrupt_on_signal();
    let models = Scenario::load_dir(&args.models).map_err(|e| e.to_string())?;
    let models: Vec<(PathBuf, Scenario)> = models
        .into_iter()
        .filter(|(f, s)| match &args.model {
            Some(m) => s.name == *m || f.file_stem().is_some_and(|x| x == m.as_str()),
            None => true,
        })
        .collect();
    // Fleet models (`models/fleet/`) have designs, not preset pairs: they run
    // unless a preset filter is given.
    let fleet_dir = args.models.join("fleet");
    let fleet: Vec<(PathBuf, FleetFile)> = FleetFile::load_dir(&fleet_dir)
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|(f, s)| match &args.model {
            Some(m) => s.name == *m || f.file_stem().is_some_and(|x| x == m.as_str()),
            None => true,
        })
        .filter(|_| args.server.is_none() && args.client.is_none())
        .collect();
    if models.is_empty() && fleet.is_empty() {
        return Err(format!("no model matches in {}", args.models.display()));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut jobs = Vec::new();
    for (_, scenario) in &models {
        for e in pairs(scenario, &args) {
            let Some(model) = CheckModel::for_expectation(scenario, &e) else {
                return Err(format!(
                    "{}: unknown presets {} x {}",
                    scenario.name, e.server, e.client
                ));
            };
            let naming = if args.arrival_naming {
                Naming::Arrival
            } else {
                Naming::ByExchange
            };
            let mut model = model
                .with_symmetry(!args.no_symmetry)
                .with_naming(naming)
                .with_reduction(!args.no_reduction);
            if let Some(clocks) = &args.clocks {
                model = model.with_clocks(match clocks.as_str() {
                    "auto" => Clocks::Auto,
                    "global" => Clocks::Global,
                    "per-component" | "per_component" => Clocks::PerComponent,
                    other => {
                        return Err(format!(
                            "--clocks {other}: expected auto, global or per-component"
                        ))
                    }
                });
            }
            if let Some(notify) = &args.notify {
                model = model.with_notify(match notify.as_str() {
                    "auto" => NotifyReach::Auto,
                    "atomic" => NotifyReach::Atomic,
                    "per-session" | "per_session" => NotifyReach::PerSession,
                    other => {
                        return Err(format!(
                            "--notify {other}: expected auto, atomic or per-session"
                        ))
                    }
                });
            }
            jobs.push((scenario, e, model));
        }
    }
    if jobs.is_empty() && fleet.is_empty() {
        return Err(format!(
            "nothing to check: no expectation of the selected models is for {} x {} \
             (give both --server and --client to check a pair no model lists)",
            args.server.as_deref().unwrap_or("any server"),
            args.client.as_deref().unwrap_or("any client"),
        ));
    }
    let fleet_names = fleet.iter().map(|(_, f)| f.name.len());
    let fleet_designs = fleet
        .iter()
        .flat_map(|(_, f)| f.expect.iter().map(|e| e.design.len()));
    let widths = Widths {
        model: jobs
            .iter()
            .map(|j| j.0.name.len())
            .chain(fleet_names)
            .max()
            .unwrap_or(5)
            .max(5),
        pair: jobs
            .iter()
            .map(|j| j.1.server.len() + j.1.client.len() + 3)
            .chain(fleet_designs)
            .max()
            .unwrap_or(4)
            .max(4),
    };
    print_header(&widths);
    let mut lines = Vec::new();
    let mut notes = Vec::new();
    let total_start = std::time::Instant::now();
    let checks = jobs.len() + fleet.iter().map(|(_, f)| f.expect.len()).sum::<usize>();
    for (scenario, e, model) in jobs {
        if interrupted() {
            break;
        }
        let label = format!("{} {} x {}", scenario.name, e.server, e.client);
        let mut report = ProgressReport::new(Duration::from_secs(args.progress_every.max(1)));
        let out = run_search(&model, limits, search, |p| report.show(&label, p));
        report.finish();
        let (verdict, ok) = match (&out.counterexample, &e.verdict) {
            // Only an exhaustive search can confirm "holds".
            (None, _) if matches!(search, Search::Simulation { .. }) => {
                ("none found".to_owned(), None)
            }
            (None, expected) if out.holds_within_depth().is_some() => {
                let depth = out.holds_within_depth().unwrap_or(0);
                let ok = match expected {
                    Verdict::Holds => out.states >= e.min_states.unwrap_or(1),
                    Verdict::Violates(_) => false,
                };
                (format!("holds within depth {depth}"), Some(ok))
            }
            (None, _) if !out.exhaustive() => ("bounded".to_owned(), None),
            (None, Verdict::Holds) => (
                "holds".to_owned(),
                Some(out.states >= e.min_states.unwrap_or(1)),
            ),
            (None, Verdict::Violates(_)) => ("holds".to_owned(), Some(false)),
            (Some(c), expected) => {
                let trace = Trace::new(&model, c, found_reduced(&model, &out));
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
        if let Some(depth) = out.holds_within_depth() {
            notes.push(format!(
                "{label}: holds within depth {depth}: the search met the depth bound with actions enabled; every state within it was explored ({} states), paths past it were not (raise the model's `depth` for more)",
                out.states
            ));
        } else if let Some(limit) = out.limit {
            let what = match limit {
                Limit::States(n) => format!("the state budget ({n}, --max-states)"),
                Limit::Memory(b) => format!("the memory budget ({} MiB, --max-memory)", b >> 20),
                Limit::Walks => {
                    "the time of --search simulation (random walks prove nothing)".into()
                }
                Limit::Interrupted => "an interrupt (Ctrl-C)".into(),
                // A violation found within the bound: the line says it.
                Limit::DepthBound { .. } => String::new(),
                // A violation found is real: the line says it.
                Limit::BitState(_) if out.counterexample.is_some() => String::new(),
                Limit::BitState(c) => format!(
                    "the end of --search bitstate, which proves nothing: {} of its 2^{} bits set; a state never met is taken for a visited one with chance {:.2e}, and about {:.2e} states are expected to have been missed so (with whatever only they lead to){}",
                    c.bits_set,
                    c.log2_bits,
                    c.miss_chance,
                    c.missed_expected,
                    if c.depth_cut { "; the depth bound cut paths too" } else { "" }
                ),
            };
            if !what.is_empty() {
                notes.push(format!(
                    "{label}: bounded: no violation in {} states to depth {}; stopped at {what}",
                    out.states, out.depth
                ));
            }
        }
        if let Order::ReducedBfs { unreduced_states } = out.order {
            notes.push(format!(
                "{label}: found under the partial-order reduction; the search without it for a shortest counterexample stopped at its budget ({unreduced_states} states), so this one may not be the shortest"
            ));
        }
        if let Order::BfsThenDfs { depth } = out.order {
            let why = if search == Search::Auto {
                "its frontier passed the share `--search auto` gives breadth first"
            } else {
                "the frontier outgrew its share of the memory budget"
            };
            notes.push(format!(
                "{label}: breadth first up to depth {depth}, then depth first ({why}){}",
                if out.counterexample.is_some() {
                    "; the counterexample may not be the shortest"
                } else {
                    ""
                }
            ));
        }
        let listed = scenario
            .expect
            .iter()
            .any(|x| x.server == e.server && x.client == e.client);
        let line = Line {
            model: scenario.name.clone(),
            pair: format!("{} x {}", e.server, e.client),
            verdict,
            states: out.states,
            depth: out.depth,
            millis: out.elapsed.as_millis(),
            ok: if listed { ok } else { None },
            bounded: !out.exhaustive() && out.holds_within_depth().is_none(),
            within_depth: out.holds_within_depth().is_some(),
        };
        print_line(&widths, &line);
        lines.push(line);
    }
    for (_, file) in &fleet {
        for e in &file.expect {
            if interrupted() {
                break;
            }
            let run = file.run(e, limits);
            let ok = run.as_expected(e);
            let verdict = match run.violated {
                Some(id) => {
                    let path = args.out.join(format!("{}-{}.txt", file.name, e.design));
                    let text = format!(
                        "{} under {}: {id} after {} steps\n{}\n",
                        file.name,
                        e.design,
                        run.steps.len(),
                        run.steps.join("\n")
                    );
                    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
                    format!("{id} ({} steps)", run.steps.len())
                }
                None if run.within_depth.is_some() => {
                    let depth = run.within_depth.unwrap_or(0);
                    notes.push(format!(
                        "{} {}: holds within depth {depth}: the search met the depth bound with actions enabled; every state within it was explored, paths past it were not",
                        file.name, e.design
                    ));
                    format!("holds within depth {depth}")
                }
                None if !run.exhaustive => {
                    notes.push(format!(
                        "{} {}: bounded: no violation in {} states to depth {}",
                        file.name, e.design, run.states, run.depth
                    ));
                    "bounded".to_owned()
                }
                None => "holds".to_owned(),
            };
            let line = Line {
                model: file.name.clone(),
                pair: e.design.clone(),
                verdict,
                states: run.states,
                depth: run.depth,
                millis: run.elapsed.as_millis(),
                ok,
                bounded: !run.exhaustive && run.within_depth.is_none(),
                within_depth: run.within_depth.is_some(),
            };
            print_line(&widths, &line);
            lines.push(line);
        }
    }
    let not_run = checks - lines.len();
    if not_run > 0 {
        notes.push(format!("interrupted: {not_run} check(s) not run"));
    }
    for n in &notes {
        println!("note: {n}");
    }
    let bad = lines.iter().filter(|l| l.ok == Some(false)).count();
    let bounded = lines.iter().filter(|l| l.bounded).count();
    let within_depth = lines.iter().filter(|l| l.within_depth).count();
    let within = if within_depth > 0 {
        format!(", {within_depth} within their depth bound only")
    } else {
        String::new()
    };
    println!(
        "\n{} checks in {:.1}s with {threads} thread(s); {} as expected, {bad} not, {bounded} bounded{within}; traces and pictures in {}",
        lines.len(),
        total_start.elapsed().as_secs_f64(),
        lines.iter().filter(|l| l.ok == Some(true)).count(),
        args.out.display()
    );
    Ok(if bad > 0 {
        ExitCode::from(1)
    } else if interrupted() {
        ExitCode::from(EXIT_INTERRUPTED)
    } else if bounded > 0 {
        ExitCode::from(EXIT_BOUNDED)
    } else if within_depth > 0 {
        ExitCode::from(EXIT_WITHIN_DEPTH)
    } else {
        ExitCode::SUCCESS
    })
}

/// A long check's progress: a live line on a terminal; on anything else a
/// plain line every `--progress-every` seconds, so a log shows that a long
/// run is alive and how fast it goes.
struct ProgressReport {
    bar: Option<indicatif::ProgressBar>,
    every: Duration,
    next_plain: Duration,
}

impl ProgressReport {
    fn new(every: Duration) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::with_draw_target(
                None,
                indicatif::ProgressDrawTarget::stderr(),
            );
            bar.set_style(
                indicatif::ProgressStyle::with_template("  {spinner} {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            bar
        });
        ProgressReport {
            bar,
            every,
            next_plain: every,
        }
    }

    fn show(&mut self, label: &str, p: &Progress) {
        let line = progress_line(label, p);
        match &self.bar {
            Some(bar) => {
                bar.set_message(line);
                bar.tick();
            }
            None if p.elapsed >= self.next_plain => {
                eprintln!("  progress: {line}");
                while self.next_plain <= p.elapsed {
                    self.next_plain += self.every;
                }
            }
            None => {}
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `label: N states (R/s), depth D, M MiB[, depth first]`.
fn progress_line(label: &str, p: &Progress) -> String {
    format!(
        "{label}: {} states ({:.0}/s), depth {}{}{}",
        p.states,
        p.states as f64 / p.elapsed.as_secs_f64().max(0.001),
        p.depth,
        p.rss
            .map(|r| format!(", {} MiB", r >> 20))
            .unwrap_or_default(),
        match p.order {
            Order::BfsThenDfs { .. } | Order::Dfs => ", depth first",
            Order::Bfs | Order::ReducedBfs { .. } => "",
        }
    )
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

struct Widths {
    model: usize,
    pair: usize,
}

fn print_header(w: &Widths) {
    println!(
        "{:<wm$}  {:<wp$}  {:<14}  {:>9}  {:>5}  {:>8}  expected",
        "model",
        "server x client",
        "verdict",
        "states",
        "depth",
        "time",
        wm = w.model,
        wp = w.pair
    );
}

/// One verdict line, printed (and flushed) as soon as its check ends.
fn print_line(w: &Widths, l: &Line) {
    let expected = match l.ok {
        Some(true) => "ok",
        Some(false) => "MISMATCH",
        None => "-",
    };
    println!(
        "{:<wm$}  {:<wp$}  {:<14}  {:>9}  {:>5}  {:>6}ms  {expected}",
        l.model,
        l.pair,
        l.verdict,
        l.states,
        l.depth,
        l.millis,
        wm = w.model,
        wp = w.pair
    );
    let _ = std::io::stdout().flush();
}
