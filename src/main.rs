//! The `fluxmend` command line. Exit codes are a contract (README, "Exit codes"):
//! 0 nothing to report, 1 findings (or, for `fix`, a change to make), 2 usage or I/O error.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use fluxmend::diagnostics::Severity;
use fluxmend::emit::report;
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};

#[derive(Parser)]
#[command(name = "fluxmend", version, about = "Find and rewrite Flux delivery trees that can lock themselves.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report risky layouts (rule findings) and problems in the repository (diagnostics).
    Check(CheckArgs),
    /// Show the layer graph fluxmend understood: layers, sources, paths, gating, inventories.
    Graph(GraphArgs),
}

#[derive(Args)]
struct RepoArgs {
    /// Repository (or artifact) root to analyse.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Treat this Flux Kustomization (`name` or `namespace/name`) as a root; repeatable. Without
    /// it the roots are every FluxInstance's sync and the bootstrap `flux-system` Kustomization.
    #[arg(long = "root", value_name = "NAME")]
    roots: Vec<String>,
    /// Artifact root of OCIRepository/Bucket sources, relative to PATH (default: inferred from
    /// where their `spec.path` values exist).
    #[arg(long, value_name = "DIR")]
    source_root: Option<String>,
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    repo: RepoArgs,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Lowest severity of a finding or diagnostic that makes the exit code 1.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    fail_on: FailOn,
    /// Run only this rule (e.g. FM001); repeatable.
    #[arg(long = "rule", value_name = "ID")]
    rules: Vec<String>,
}

#[derive(Args)]
struct GraphArgs {
    #[command(flatten)]
    repo: RepoArgs,
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    format: GraphFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum GraphFormat {
    Text,
    Json,
    Dot,
    Mermaid,
}

#[derive(Clone, Copy, ValueEnum)]
enum FailOn {
    Note,
    Warning,
    Error,
}

impl FailOn {
    fn severity(self) -> Severity {
        match self {
            FailOn::Note => Severity::Note,
            FailOn::Warning => Severity::Warning,
            FailOn::Error => Severity::Error,
        }
    }
}

fn load(args: &RepoArgs) -> Result<(Repo, ModelOptions), ExitCode> {
    let repo = Repo::load(&args.path).map_err(|e| {
        eprintln!("fluxmend: {e}");
        ExitCode::from(2)
    })?;
    let options = ModelOptions { roots: args.roots.clone(), source_root: args.source_root.clone() };
    Ok((repo, options))
}

fn check(args: CheckArgs) -> Result<ExitCode, ExitCode> {
    let (repo, options) = load(&args.repo)?;
    let model = Model::build(&repo, &options);
    let findings = fluxmend::rules::run(&model, &args.rules);
    let mut diagnostics = repo.diagnostics.clone();
    diagnostics.extend(model.diagnostics.iter().cloned());
    let summary = report::Summary::new(&model, &findings, &diagnostics);
    print!(
        "{}",
        match args.format {
            Format::Text => report::check_text(&findings, &diagnostics, &summary),
            Format::Json => report::check_json(&findings, &diagnostics, &summary),
        }
    );
    let threshold = args.fail_on.severity();
    let failing = findings.iter().any(|f| f.severity >= threshold) || diagnostics.iter().any(|d| d.severity >= threshold);
    Ok(ExitCode::from(u8::from(failing)))
}

fn graph(args: GraphArgs) -> Result<ExitCode, ExitCode> {
    let (repo, options) = load(&args.repo)?;
    let mut model = Model::build(&repo, &options);
    let mut diagnostics = repo.diagnostics.clone();
    diagnostics.append(&mut model.diagnostics);
    model.diagnostics = diagnostics;
    print!(
        "{}",
        match args.format {
            GraphFormat::Text => report::graph_text(&model),
            GraphFormat::Json => report::graph_json(&model),
            GraphFormat::Dot => report::graph_dot(&model),
            GraphFormat::Mermaid => report::graph_mermaid(&model),
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let result = match cli.command {
        Command::Check(args) => check(args),
        Command::Graph(args) => graph(args),
    };
    result.unwrap_or_else(|code| code)
}
