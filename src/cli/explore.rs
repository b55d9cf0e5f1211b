//! `mcp-streamable explore MODEL`: stateright's Explorer, on 127.0.0.1 only.

use mcp_streamable_check::{CheckModel, Scenario};
use stateright::Model;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `explore`.
#[derive(clap::Args)]
pub struct ExploreArgs {
    /// The model (file stem or `name`).
    model: String,
    /// Directory of model files.
    #[arg(long, default_value = "models")]
    models: PathBuf,
    /// Server preset (default: the model's first expectation).
    #[arg(long)]
    server: Option<String>,
    /// Client preset (default: the model's first expectation).
    #[arg(long)]
    client: Option<String>,
    /// Port on 127.0.0.1.
    #[arg(long, default_value_t = 3000)]
    port: u16,
}

pub fn run(args: ExploreArgs) -> Result<ExitCode, String> {
    let models = Scenario::load_dir(&args.models).map_err(|e| e.to_string())?;
    let (_, scenario) = models
        .into_iter()
        .find(|(f, s)| {
            s.name == args.model || f.file_stem().is_some_and(|x| x == args.model.as_str())
        })
        .ok_or_else(|| format!("no model {:?} in {}", args.model, args.models.display()))?;
    let first = scenario.expect.first().cloned();
    let server = args
        .server
        .or_else(|| first.as_ref().map(|e| e.server.clone()))
        .unwrap_or_else(|| "FIXED".into());
    let client = args
        .client
        .or_else(|| first.as_ref().map(|e| e.client.clone()))
        .unwrap_or_else(|| "FIXED".into());
    let model = CheckModel::new(scenario, &server, &client).ok_or("unknown preset")?;
    let addr = ("127.0.0.1", args.port);
    println!(
        "Explorer for {} ({server} x {client}) on http://127.0.0.1:{}/",
        model.scenario.name, args.port
    );
    model.checker().serve(addr);
    Ok(ExitCode::SUCCESS)
}
