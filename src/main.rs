//! The `fluxmend` command line. Exit codes are a contract (README, "Exit codes"):
//! 0 nothing to report, 1 findings (or, for `fix`, a change to make, or what it cannot fix
//! standing at `--fail-on`), 2 usage or I/O error.

// A repository must never make fluxmend panic: no `unwrap` (an `expect` states the invariant
// that rules the panic out). Unit tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use fluxmend::config::Config;
use fluxmend::diagnostics::{Diagnostic, Severity};
use fluxmend::emit::report;
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};
use fluxmend::verify::gates::VerifyMode;

/// mimalloc (built without transparent huge pages): parsing allocates and frees millions of short
/// strings; against the system allocator it was faster at 10k and 100k files for about the same
/// peak memory (README, Performance).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `fluxmend --help`: the commands people start with, and the exit codes every command keeps.
const HELP: &str = "\
Examples:
  fluxmend check                        report risky layouts in the repository here
  fluxmend fix | git apply              review the verified fix as a diff, then apply it
  fluxmend simulate --fail FluxInstance/flux-system/flux
                                        what stalls while that object fails
  fluxmend explain FM001                a rule's documentation

Exit codes:
  0  nothing to report (check), nothing to change (fix), success (other commands)
  1  findings at --fail-on (check); a change to review, or what cannot be fixed standing at
     --fail-on (fix); a rollout that deletes a live object (simulate --from)
  2  usage error, PATH cannot be read, or a refused or failed write or commit";

/// `fluxmend check --help`.
const CHECK_HELP: &str = "\
Examples:
  fluxmend check                        the repository in the current directory
  fluxmend check k8s --show-notes       a folder, with the notes
  fluxmend check --format sarif > fluxmend.sarif
  fluxmend check --rule FM001 --fail-on error

Exit codes:
  0  no finding or diagnostic at or above --fail-on (default: warning)
  1  findings or diagnostics at or above --fail-on
  2  usage error, or PATH cannot be read";

/// `fluxmend fix --help`.
const FIX_HELP: &str = "\
Examples:
  fluxmend fix | git apply              review the verified fix as a diff, then apply it
  fluxmend fix --write                  apply it in place (every file, or none)
  fluxmend fix --commit --branch fluxmend/fix --pr-body pr.md

Exit codes:
  0  nothing to change, and nothing without a fix stands at --fail-on (default: error)
  1  a change was printed, written or committed: review it (a move in phases changes one phase
     per run); or nothing to change, but a finding without a fix or a diagnostic stands at
     --fail-on (the report's last line says what)
  2  usage error, PATH cannot be read, a refused or failed write or commit";

/// `fluxmend simulate --help`.
const SIMULATE_HELP: &str = "\
Examples:
  fluxmend simulate --fail FluxInstance/flux-system/flux
  fluxmend simulate --fail StatefulSet/forgejo/runner --format json
  fluxmend simulate --from main         what merging the work tree into main deletes
  fluxmend simulate --from HEAD~1 --to HEAD

Exit codes:
  0  --fail: always; --from: nothing live is deleted, or only workloads re-created (pods restart)
  1  --from: the rollout deletes a live object with a worse consequence
  2  usage error: neither --fail nor --from, a target that is not KIND/NAMESPACE/NAME or that no
     live layer applies or reads, --from outside git or naming no revision";

/// `fluxmend graph --help`.
const GRAPH_HELP: &str = "\
Examples:
  fluxmend graph                        layers, sources, paths, gating and inventories
  fluxmend graph --format dot | dot -Tsvg > layers.svg

Exit codes:
  0  success
  2  usage error, or PATH cannot be read";

#[derive(Parser)]
#[command(
    name = "fluxmend",
    version,
    about = "Find and rewrite Flux delivery trees that can lock themselves.",
    after_help = HELP
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Report risky layouts (rule findings) and problems in the repository (diagnostics).
    #[command(after_help = CHECK_HELP)]
    Check(CheckArgs),
    /// Show the layer graph fluxmend understood: layers, sources, paths, gating, inventories.
    #[command(after_help = GRAPH_HELP)]
    Graph(GraphArgs),
    /// Rewrite risky layouts into the safe one. Prints a unified diff (git apply / patch -p1)
    /// and writes nothing unless --write or --commit is given. Every fix is verified first.
    #[command(after_help = FIX_HELP)]
    Fix(FixArgs),
    /// Play Flux on the repository offline: what failing objects stall (--fail), or what a
    /// change does as Flux rolls it out, step by step, and what it deletes (--from/--to).
    #[command(after_help = SIMULATE_HELP)]
    Simulate(SimulateArgs),
    /// Print a rule's documentation: what it detects, why, its fix and the fix's trade-off.
    Explain {
        /// Rule id, e.g. FM001.
        rule: String,
    },
    /// List the rule catalogue.
    Rules,
    /// Print a shell completion script (e.g. `fluxmend completion bash > /etc/bash_completion.d/fluxmend`).
    #[command(alias = "completions")]
    Completion {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `fluxmend man > /usr/local/share/man/man1/fluxmend.1`;
    /// with --dir, write it and a page per subcommand (fluxmend-check.1, …) into DIR.
    Man {
        /// Write every page (fluxmend.1 and the subcommands' pages it refers to) into DIR.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Args)]
struct FixArgs {
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// Fix only this rule's findings: an id (FM001) or a name (flux-instance-in-gated-layer);
    /// repeatable, or a comma-separated list.
    #[arg(long = "rule", visible_alias = "select", value_name = "ID")]
    rules: Vec<String>,
    /// Leave this rule out (id or name; repeatable, or a comma-separated list).
    #[arg(long = "ignore", value_name = "ID")]
    ignore: Vec<String>,
    /// Apply the change to the files (atomically, all or nothing) instead of printing a diff.
    #[arg(long, conflicts_with = "commit")]
    write: bool,
    /// Apply the change and commit it with git on the current branch (or --branch). Refuses when
    /// a file it would touch has uncommitted changes.
    #[arg(long)]
    commit: bool,
    /// With --commit: create this branch from HEAD, switch to it and commit there.
    #[arg(long, value_name = "NAME", requires = "commit")]
    branch: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Which gates prove the change before it is shown or written: `auto` = builtin, plus a real
    /// kustomize render when `kustomize` or `kubectl` is on PATH; `kustomize` = both, and an error
    /// without one; `builtin` = the YAML and model gates only; `off` = none (reported as NOT
    /// verified).
    #[arg(long, value_enum, default_value_t = Verify::Auto)]
    verify: Verify,
    /// Lowest severity of a finding left without a fix, or of a diagnostic, that makes the exit
    /// code 1 even when there is nothing to change; `never` accepts them all.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    fail_on: FailOn,
    /// Write the diff's paths below DIR (`.`: relative to PATH). Default: relative to the git
    /// work tree's top level when PATH is inside one (so `git apply` takes the diff there),
    /// else relative to PATH.
    #[arg(long, value_name = "DIR")]
    diff_prefix: Option<String>,
    /// Write the pull-request body (Markdown: findings, files, trade-offs, rollout notes, how to
    /// review) to FILE when there is a change; with or without --write/--commit.
    #[arg(long, value_name = "FILE")]
    pr_body: Option<PathBuf>,
    /// Which fix to offer where the right one depends on what you meant. FM005 (healthChecks
    /// ignored because wait is true): `wait` keeps waiting on everything the layer applies and
    /// removes the ignored list (nothing changes on the cluster); `health-checks` sets
    /// `wait: false` so the list becomes the gate (objects not listed are no longer waited on).
    #[arg(long, value_enum, default_value_t = FixStrategy::Wait)]
    strategy: FixStrategy,
    /// Colour the text report (and the diff, on a terminal only: a piped diff is never coloured).
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
    /// The git revision the cluster runs: the transition gate plays the rollout from it, so the
    /// next phase of a move is offered only once this revision holds the earlier one. Default:
    /// the remote's default branch (`origin/HEAD`), else the current branch's remote-tracking
    /// branch, else HEAD; the work tree when PATH is not in git.
    #[arg(long, value_name = "REV")]
    base: Option<String>,
}

/// When text output is coloured.
#[derive(Clone, Copy, ValueEnum)]
enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (`CLICOLOR_FORCE` forces it).
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    fn choice(self) -> anstream::ColorChoice {
        match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        }
    }
}

/// Print `text` to standard output, coloured as `when` says.
fn print_styled(text: &str, when: ColorWhen) {
    use std::io::Write as _;
    let mut out = anstream::AutoStream::new(std::io::stdout(), when.choice());
    let _ = out.write_all(text.as_bytes());
}

/// Print `text` to standard error, coloured as `when` says.
fn eprint_styled(text: &str, when: ColorWhen) {
    use std::io::Write as _;
    let mut out = anstream::AutoStream::new(std::io::stderr(), when.choice());
    let _ = out.write_all(text.as_bytes());
}

#[derive(Clone, Copy, ValueEnum)]
enum FixStrategy {
    Wait,
    HealthChecks,
}

#[derive(Clone, Copy, ValueEnum)]
enum Verify {
    Auto,
    Kustomize,
    Builtin,
    Off,
}

impl Verify {
    fn mode(self) -> VerifyMode {
        match self {
            Verify::Auto => VerifyMode::Auto,
            Verify::Kustomize => VerifyMode::Kustomize,
            Verify::Builtin => VerifyMode::Builtin,
            Verify::Off => VerifyMode::Off,
        }
    }
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
    /// Analyse the layers of this source (`name`, `namespace/name` or `kind/namespace/name`)
    /// against DIR, a checkout of its repository below PATH, instead of treating them as
    /// external; repeatable.
    #[arg(long = "source", value_name = "NAME=DIR")]
    sources: Vec<String>,
    /// Read the settings from FILE instead of `.fluxmend.yaml` (found in PATH or the nearest
    /// directory above it, up to the git work tree's top level).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// How much of the text report to show.
#[derive(Args)]
struct OutputArgs {
    /// Show notes (findings and diagnostics of severity note) in the text report; they are
    /// counted but hidden by default (shown anyway with `--fail-on note`). JSON and SARIF always
    /// hold them.
    #[arg(long, short = 'v', visible_alias = "verbose")]
    show_notes: bool,
    /// Headlines only: no detail lines, no notes, no summary (`fix` still says what it changed).
    #[arg(long, short = 'q', conflicts_with = "show_notes")]
    quiet: bool,
}

impl OutputArgs {
    fn shown(&self, fail_on: Option<Severity>) -> fluxmend::emit::text::Shown {
        fluxmend::emit::text::Shown {
            notes: !self.quiet && (self.show_notes || fail_on == Some(Severity::Note)),
            detail: !self.quiet,
        }
    }
}

#[derive(Args)]
struct CheckArgs {
    #[command(flatten)]
    repo: RepoArgs,
    #[command(flatten)]
    output: OutputArgs,
    /// `sarif`: SARIF 2.1.0 for code scanning; `github`: GitHub Actions annotations.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    format: CheckFormat,
    /// Lowest severity of a finding or diagnostic that makes the exit code 1; `never` exits 0
    /// whatever is found.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    fail_on: FailOn,
    /// Run only this rule: an id (FM001) or a name (flux-instance-in-gated-layer); repeatable,
    /// or a comma-separated list.
    #[arg(long = "rule", visible_alias = "select", value_name = "ID")]
    rules: Vec<String>,
    /// Leave this rule out (id or name; repeatable, or a comma-separated list).
    #[arg(long = "ignore", value_name = "ID")]
    ignore: Vec<String>,
    /// Exit 0 whatever is found (the same as `--fail-on never`): report without gating.
    #[arg(long, conflicts_with = "fail_on")]
    exit_zero: bool,
    /// Colour the text report: `auto` on a terminal unless `NO_COLOR` is set.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
    color: ColorWhen,
}

#[derive(Args)]
struct SimulateArgs {
    #[command(flatten)]
    repo: RepoArgs,
    /// An object that fails its health check, as KIND/NAMESPACE/NAME (KIND/NAME when
    /// cluster-scoped), e.g. FluxInstance/flux-system/flux; repeatable. Shows which layers go
    /// Ready=False or DependencyNotReady, whose status is masked, and whether a corrective commit
    /// can still arrive — before and after the fixes `fluxmend fix` would make.
    #[arg(
        long = "fail",
        value_name = "KIND/NAMESPACE/NAME",
        conflicts_with = "from"
    )]
    fail: Vec<String>,
    /// Play the change from this git revision (e.g. main, HEAD~1, a commit id) to --to: every
    /// layer's step in an order Flux may take and every live object deleted on the way.
    /// Exit 1 when something is deleted with a consequence worse than pods restarting.
    #[arg(long, value_name = "REV")]
    from: Option<String>,
    /// The revision the change goes to (default: the work tree as it is).
    #[arg(long, value_name = "REV", requires = "from")]
    to: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
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

/// `check` speaks to more consumers than the other commands: code scanning and CI annotations.
#[derive(Clone, Copy, ValueEnum)]
enum CheckFormat {
    Text,
    Json,
    Sarif,
    Github,
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
    Never,
}

impl FailOn {
    /// The lowest failing severity; `None` when nothing fails.
    fn severity(self) -> Option<Severity> {
        match self {
            FailOn::Note => Some(Severity::Note),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Error => Some(Severity::Error),
            FailOn::Never => None,
        }
    }
}

/// A usage error: said on stderr (a repository's control characters escaped), exit code 2.
fn usage(message: impl std::fmt::Display) -> ExitCode {
    eprintln!(
        "fluxmend: {}",
        fluxmend::emit::escape::terminal_lines(&message.to_string())
    );
    ExitCode::from(2)
}

/// Read the configuration, then load the repository with it; flags win over the file.
fn load(args: &RepoArgs) -> Result<(Repo, ModelOptions, Config), ExitCode> {
    let journal = args.path.join(fluxmend::emit::write::JOURNAL);
    if std::fs::symlink_metadata(&journal).is_ok() {
        if fluxmend::emit::write::journal_tracked(&args.path) {
            eprintln!(
                "fluxmend: warning: {} is tracked by git: it came with the repository and is not \
                 an interrupted write; fluxmend ignores it",
                journal.display()
            );
        } else {
            eprintln!(
                "fluxmend: warning: {} holds an interrupted fix --write; `fluxmend fix --write {}` \
                 completes or rolls it back (a dry run leaves it alone)",
                args.path.display(),
                args.path.display()
            );
        }
    }
    let mut config = match &args.config {
        Some(file) if !file.is_file() => {
            return Err(usage(format!("--config {}: no such file", file.display())));
        }
        Some(file) => Config::read_file(file, &args.path),
        None => Config::read(&args.path),
    };
    let repo = Repo::load_excluding(&args.path, &config.exclude).map_err(usage)?;
    let artifact_root = match (&args.source_root, &config.source_root) {
        (Some(dir), _) => Some(source_root(&repo, dir).map_err(usage)?),
        (None, Some(dir)) => match source_root(&repo, dir) {
            Ok(dir) => Some(dir),
            Err(e) => {
                config.diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    &config.file,
                    format!(
                        "{}; it is inferred instead",
                        e.replacen("--source-root", "source-root", 1)
                    ),
                ));
                None
            }
        },
        (None, None) => None,
    };
    let mut sources = Vec::new();
    for given in &args.sources {
        let (name, dir) = given
            .split_once('=')
            .filter(|(n, d)| !n.is_empty() && !d.is_empty())
            .ok_or_else(|| usage(format!("--source {given}: give NAME=DIR")))?;
        sources.push((
            name.to_string(),
            source_root(&repo, dir).map_err(|e| usage(format!("--source {given}: {e}")))?,
        ));
    }
    let options = ModelOptions {
        roots: if args.roots.is_empty() {
            config.roots.clone()
        } else {
            args.roots.clone()
        },
        source_root: artifact_root,
        sources,
    };
    Ok((repo, options, config))
}

/// The repository the cluster runs, for the transition gate: `--base REV`, else the default
/// base of PATH's git repository (see `load::revision::default_base`), read with the work
/// tree's `exclude` beside the work tree; `None` when PATH is not in git (the work tree is then
/// the base). With the name reports give it; `Err` says why it cannot be read.
fn base_revision(
    work_tree: &Repo,
    path: &std::path::Path,
    given: Option<&str>,
    exclude: &[String],
) -> Result<Option<(String, Repo)>, String> {
    use fluxmend::load::revision;
    let (rev, name) = match given {
        Some(rev) => (rev.to_string(), rev.to_string()),
        None => match revision::default_base(path) {
            Some(rev) => {
                let name = revision::short_name(&rev).to_string();
                (rev, name)
            }
            None => return Ok(None),
        },
    };
    let repo = revision::load_revision(path, &rev, exclude, Some(work_tree)).map_err(|e| {
        let hint = if given.is_none() {
            format!(" (the default base, {name}: `--base REV` names the revision the cluster runs)")
        } else {
            String::new()
        };
        format!("--base: {e}{hint}")
    })?;
    Ok(Some((name, repo)))
}

/// The transition gate's base from what [`base_revision`] read and its model.
fn base_of<'a>(
    deployed: &'a Option<(String, Repo)>,
    model: &'a Option<Model<'a>>,
) -> fluxmend::verify::Base<'a> {
    match (deployed, model) {
        (Some((name, _)), Some(model)) => fluxmend::verify::Base::Revision { name, model },
        _ => fluxmend::verify::Base::WorkTree,
    }
}

/// `--source-root` as a path relative to the root, `/`-separated: it must name a directory
/// below PATH that Flux would ship (absolute paths inside PATH are accepted).
fn source_root(repo: &Repo, dir: &str) -> Result<String, String> {
    let given = std::path::Path::new(dir);
    let relative = if given.is_absolute() {
        let resolved = given.canonicalize().unwrap_or_else(|_| given.to_path_buf());
        resolved
            .strip_prefix(&repo.root)
            .ok()
            .and_then(|p| p.to_str())
            .map(str::to_string)
    } else {
        fluxmend::model::normalize(dir)
    };
    let Some(relative) = relative else {
        return Err(format!(
            "--source-root {dir} lies outside PATH ({}): give the artifact root as a directory \
             below PATH",
            repo.root.display()
        ));
    };
    if !relative.is_empty() && !repo.is_dir(&relative) {
        return Err(format!(
            "--source-root {dir}: no such directory below PATH ({}), or Flux ignores it",
            repo.root.display()
        ));
    }
    Ok(relative)
}

/// Build the model, refusing `--root` values that name no Flux Kustomization.
fn build_model<'r>(repo: &'r Repo, options: &ModelOptions) -> Result<Model<'r>, ExitCode> {
    let model = Model::build(repo, options);
    let unmatched = model.unmatched_roots(&options.roots);
    if !unmatched.is_empty() {
        return Err(usage(format!(
            "--root {} names no Flux Kustomization below PATH (a root given by `roots:` in .fluxmend.yaml or by --root; `fluxmend graph` lists the layers)",
            unmatched.join(", ")
        )));
    }
    Ok(model)
}

/// The rule ids to run: those `--rule`/`--select` names, else every rule the configuration
/// does not disable; then without those `--ignore` names. An unknown one is a usage error, and
/// so is leaving no rule (a run that checks nothing).
fn select_rules(
    values: &[String],
    ignore: &[String],
    config: &Config,
) -> Result<Vec<String>, ExitCode> {
    let selected = fluxmend::rules::select(values).map_err(usage)?;
    let ignored = fluxmend::rules::select(ignore).map_err(usage)?;
    let base: Vec<String> = if selected.is_empty() {
        let disabled: Vec<&str> = config.disabled().collect();
        fluxmend::rules::all()
            .iter()
            .map(|r| r.meta().id)
            .filter(|id| !disabled.contains(id))
            .map(str::to_string)
            .collect()
    } else {
        selected
    };
    let left: Vec<String> = base
        .into_iter()
        .filter(|id| !ignored.contains(id))
        .collect();
    if left.is_empty() {
        return Err(usage(format!(
            "{} leaves no rule to run (`fluxmend rules` lists them)",
            if ignored.is_empty() {
                ".fluxmend.yaml (rules: enabled: false)"
            } else {
                "--ignore"
            }
        )));
    }
    Ok(left)
}

/// The rules' findings as the configuration and the suppressions leave them, those suppressed,
/// and every diagnostic of the run: the configuration's, the model's and the suppressions'.
fn findings_and_diagnostics(
    model: &Model,
    rules: &[String],
    strategy: fluxmend::rules::Strategy,
    config: fluxmend::config::Config,
) -> (
    Vec<fluxmend::rules::Finding>,
    Vec<fluxmend::rules::suppress::Suppressed>,
    Vec<fluxmend::diagnostics::Diagnostic>,
) {
    let mut findings = fluxmend::rules::run_with(model, rules, strategy);
    config.apply_severity(&mut findings);
    let outcome = fluxmend::rules::suppress::apply(model, findings, rules);
    let mut diagnostics = config.diagnostics;
    diagnostics.extend(model.all_diagnostics());
    diagnostics.extend(outcome.diagnostics);
    (
        outcome.findings,
        outcome.suppressed,
        fluxmend::diagnostics::dedup(diagnostics),
    )
}

/// The top level of the git work tree PATH lies below, and PATH relative to it, when this
/// repository's layers are written from there: a Flux Kustomization reading a GitRepository
/// whose `spec.path` starts with PATH's own place (`./kubernetes/apps` under PATH `kubernetes`)
/// and does not exist below PATH. Flux (and flux-local) resolve such paths from the top level.
/// Not with `--source-root`/`--source`, whose directories are given relative to PATH.
fn work_tree_top(args: &RepoArgs, repo: &Repo, config: &Config) -> Option<(PathBuf, String)> {
    if args.source_root.is_some() || !args.sources.is_empty() || config.source_root.is_some() {
        return None;
    }
    let prefix = fluxmend::emit::apply::work_tree_prefix(&repo.root).filter(|p| !p.is_empty())?;
    let written_from_top = repo.files.iter().any(|file| {
        let yaml = &file.yaml;
        yaml.docs.iter().any(|doc| {
            let text = |keys: &[&str]| yaml.lookup(doc.root, keys).and_then(|n| yaml.scalar(n));
            let path = text(&["spec", "path"])
                .and_then(fluxmend::model::normalize)
                .unwrap_or_default();
            text(&["kind"]) == Some("Kustomization")
                && text(&["apiVersion"])
                    .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/"))
                && text(&["spec", "sourceRef", "kind"]).is_none_or(|k| k == "GitRepository")
                && (path == prefix || path.starts_with(&format!("{prefix}/")))
                && !repo.is_dir(&path)
        })
    });
    if !written_from_top {
        return None;
    }
    let root = repo.root.canonicalize().ok()?;
    let top = root
        .ancestors()
        .nth(prefix.split('/').count())?
        .to_path_buf();
    Some((top, prefix))
}

/// Keep what lies below `prefix/` (PATH within the work tree; a diagnostic about no file stays),
/// and with `strip`, write its paths relative to PATH.
fn below_path(
    prefix: &str,
    strip: bool,
    findings: &mut Vec<fluxmend::rules::Finding>,
    suppressed: &mut Vec<fluxmend::rules::suppress::Suppressed>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let dir = format!("{prefix}/");
    let relative = |path: &mut String| {
        if strip {
            *path = path[dir.len()..].to_string();
        }
    };
    findings.retain(|f| f.file.starts_with(&dir));
    findings.iter_mut().for_each(|f| relative(&mut f.file));
    suppressed.retain(|s| s.finding.file.starts_with(&dir));
    suppressed
        .iter_mut()
        .for_each(|s| relative(&mut s.finding.file));
    diagnostics.retain(|d| d.file.is_empty() || d.file.starts_with(&dir));
    diagnostics
        .iter_mut()
        .filter(|d| !d.file.is_empty())
        .for_each(|d| relative(&mut d.file));
}

fn check(args: CheckArgs) -> Result<ExitCode, ExitCode> {
    let (repo, options, config) = load(&args.repo)?;
    let exclude = config.exclude.clone();
    let rules = select_rules(&args.rules, &args.ignore, &config)?;
    let path_root = repo.root.clone();
    // PATH below a work tree's top level that the layers are written from: model from there,
    // report what lies below PATH.
    let (repo, below) = match work_tree_top(&args.repo, &repo, &config) {
        Some((top, prefix)) => {
            let exclude: Vec<String> = config
                .exclude
                .iter()
                .map(|p| match p.strip_prefix('/') {
                    Some(anchored) => format!("/{prefix}/{anchored}"),
                    None => p.clone(),
                })
                .collect();
            (
                Repo::load_excluding(&top, &exclude).map_err(usage)?,
                Some(prefix),
            )
        }
        None => (repo, None),
    };
    let model = build_model(&repo, &options)?;
    let (mut findings, mut suppressed, mut diagnostics) =
        findings_and_diagnostics(&model, &rules, Default::default(), config);
    if let Some(prefix) = &below {
        // SARIF and annotations write paths from the top level, which is now the root.
        let strip = matches!(args.format, CheckFormat::Text | CheckFormat::Json);
        below_path(
            prefix,
            strip,
            &mut findings,
            &mut suppressed,
            &mut diagnostics,
        );
    }
    let summary = report::Summary::new(&model, &findings, &suppressed, &diagnostics);
    let threshold = if args.exit_zero {
        None
    } else {
        args.fail_on.severity()
    };
    // Code scanning and CI annotations resolve paths against the checkout.
    let checkout_prefix = || match fluxmend::emit::apply::work_tree_prefix(&repo.root) {
        Some(p) if !p.is_empty() => format!("{p}/"),
        _ => String::new(),
    };
    print_styled(
        &match args.format {
            CheckFormat::Text => report::check_text(
                &findings,
                &diagnostics,
                &summary,
                &report::path_base(&path_root),
                args.output.shown(threshold),
            ),
            CheckFormat::Json => report::check_json(&findings, &suppressed, &diagnostics, &summary),
            CheckFormat::Sarif => {
                // Only verified fixes go into SARIF: the builtin gates prove them first, the
                // rollout played from the base `fix` would take (the work tree when it cannot be
                // read: a suggestion is not a write, and `fix` refuses then).
                let deployed = base_revision(&repo, &args.repo.path, None, &exclude)
                    .ok()
                    .flatten();
                let deployed_model = deployed.as_ref().map(|(_, r)| Model::build(r, &options));
                let plan = fluxmend::verify::gates::plan_with(
                    &repo,
                    &model,
                    base_of(&deployed, &deployed_model),
                    &options,
                    findings.clone(),
                    VerifyMode::Builtin,
                    None,
                );
                let fix_of = |f: &fluxmend::rules::Finding| {
                    fluxmend::changes::contents(&repo, &f.fix.as_ref()?.changes).ok()
                };
                fluxmend::emit::sarif::check_sarif(
                    &plan.findings,
                    &suppressed,
                    &diagnostics,
                    &checkout_prefix(),
                    &fix_of,
                )
            }
            CheckFormat::Github => {
                fluxmend::emit::github::check_github(&findings, &diagnostics, &checkout_prefix())
            }
        },
        args.color,
    );
    let fails = |severity: Severity| threshold.is_some_and(|t| severity >= t);
    let failing =
        findings.iter().any(|f| fails(f.severity)) || diagnostics.iter().any(|d| fails(d.severity));
    Ok(ExitCode::from(u8::from(failing)))
}

fn graph(args: GraphArgs) -> Result<ExitCode, ExitCode> {
    let (repo, options, config) = load(&args.repo)?;
    let mut model = build_model(&repo, &options)?;
    let mut diagnostics = config.diagnostics;
    diagnostics.extend(model.all_diagnostics());
    model.diagnostics = fluxmend::diagnostics::dedup(diagnostics);
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

fn fix(args: FixArgs) -> Result<ExitCode, ExitCode> {
    if let Some(name) = &args.branch
        && !fluxmend::emit::apply::valid_branch_name(name)
    {
        eprintln!(
            "fluxmend: --branch {name:?} is not a valid branch name (git check-ref-format --branch)"
        );
        return Err(ExitCode::from(2));
    }
    // An interrupted write is completed (or rolled back) before anything is read, by a run that
    // writes: a dry run never acts on a journal (`load` says it is there).
    if args.write || args.commit {
        recover(&args.repo.path)?;
    }
    let (repo, options, config) = load(&args.repo)?;
    let rules = select_rules(&args.rules, &args.ignore, &config)?;
    let prefix = match &args.diff_prefix {
        Some(dir) => fluxmend::model::normalize(dir)
            .filter(|_| !dir.starts_with('/'))
            .ok_or_else(|| {
                usage(format!(
                    "--diff-prefix {dir}: give a relative directory without `..` (`.` for none)"
                ))
            })?,
        None => fluxmend::emit::apply::work_tree_prefix(&repo.root).unwrap_or_default(),
    };
    let model = build_model(&repo, &options)?;
    let deployed = base_revision(
        &repo,
        &args.repo.path,
        args.base.as_deref(),
        &config.exclude,
    )
    .map_err(usage)?;
    let deployed_model = deployed.as_ref().map(|(_, r)| Model::build(r, &options));
    let strategy = match args.strategy {
        FixStrategy::Wait => fluxmend::rules::Strategy::Wait,
        FixStrategy::HealthChecks => fluxmend::rules::Strategy::HealthChecks,
    };
    let (findings, suppressed, diagnostics) =
        findings_and_diagnostics(&model, &rules, strategy, config);
    let mode = args.verify.mode();
    let tool = mode.tool().map_err(usage)?;
    let plan = fluxmend::verify::gates::plan_with(
        &repo,
        &model,
        base_of(&deployed, &deployed_model),
        &options,
        findings,
        mode,
        tool.as_ref(),
    );
    let fail = |e: fluxmend::emit::error::EmitError| usage(e);
    let prefix = if prefix.is_empty() {
        prefix
    } else {
        format!("{prefix}/")
    };
    let diff = fluxmend::emit::apply::unified_diff(&plan.files, &prefix);
    let changed = !plan.files.is_empty();
    let mut action = "";
    if let (true, Some(file)) = (changed, &args.pr_body) {
        std::fs::write(file, fluxmend::emit::pr::body(&plan))
            .map_err(|e| usage(format!("--pr-body {}: {e}", file.display())))?;
    }
    let mut committed = None;
    if changed && args.write {
        fluxmend::emit::apply::write(&repo.root, &plan.files).map_err(fail)?;
        action = "written";
    }
    if changed && args.commit {
        let message = fluxmend::emit::pr::commit_message(&plan);
        let oid = fluxmend::emit::commit::commit(
            &repo.root,
            &plan.files,
            &message,
            args.branch.as_deref(),
        )
        .map_err(fail)?;
        eprintln!("committed {oid}");
        action = "committed";
        committed = Some(report::Committed {
            id: oid.to_string(),
            branch: args
                .branch
                .clone()
                .or_else(|| fluxmend::emit::apply::head_branch(&repo.root)),
        });
    }
    let standing = report::Standing::new(&plan, &diagnostics, args.fail_on.severity());
    match args.format {
        Format::Json => print!(
            "{}",
            report::fix_json(
                &plan,
                &suppressed,
                &diagnostics,
                &diff,
                action,
                committed.as_ref()
            )
        ),
        Format::Text => {
            eprint_styled(
                &report::fix_text(
                    &plan,
                    &suppressed,
                    &diagnostics,
                    &standing,
                    action,
                    &report::path_base(&repo.root),
                    args.output.shown(args.fail_on.severity()),
                ),
                args.color,
            );
            if action.is_empty() {
                // Coloured, and a repository's control characters escaped, only on a terminal: a
                // piped diff goes to `git apply` as is.
                use std::io::IsTerminal as _;
                let stdout = std::io::stdout();
                let terminal = stdout.is_terminal();
                let coloured = terminal
                    && !matches!(args.color, ColorWhen::Never)
                    && (matches!(args.color, ColorWhen::Always)
                        || anstream::AutoStream::choice(&stdout) != anstream::ColorChoice::Never);
                let shown = if terminal {
                    fluxmend::emit::escape::terminal_lines(&diff)
                } else {
                    std::borrow::Cow::Borrowed(diff.as_str())
                };
                if coloured {
                    print_styled(&fluxmend::emit::text::diff(&shown), ColorWhen::Always);
                } else {
                    print!("{shown}");
                }
            }
        }
    }
    Ok(ExitCode::from(u8::from(changed || standing.fails())))
}

/// Complete or roll back an interrupted write in `root`, and say what was done and left.
fn recover(root: &std::path::Path) -> Result<(), ExitCode> {
    use fluxmend::emit::escape::terminal;
    use fluxmend::emit::write::Outcome;
    let Some(done) = fluxmend::emit::write::recover(root).map_err(usage)? else {
        return Ok(());
    };
    let what = match &done.outcome {
        Outcome::Completed => "completed".to_string(),
        Outcome::RolledBack => "rolled back (nothing of it is applied)".to_string(),
        Outcome::Undone(changed) => format!(
            "rolled back: {} holds neither what it held before nor what the write put there \
             (another program changed it), so it is left as it is",
            terminal(changed)
        ),
    };
    eprintln!(
        "fluxmend: an interrupted fix --write in {} was {what}",
        terminal(&root.display().to_string())
    );
    for path in &done.left {
        eprintln!(
            "fluxmend: warning: {} is left as it is: it does not hold what the journal recorded, \
             so it is not fluxmend's to remove or restore",
            terminal(path)
        );
    }
    Ok(())
}

/// How many rounds of `fix` `simulate --fail` applies to reach the fixed layout (a phased fix
/// takes two).
const MAX_PHASES: usize = 4;

fn simulate(args: SimulateArgs) -> Result<ExitCode, ExitCode> {
    use fluxmend::emit::simulate as out;
    use fluxmend::rollout::{self, failure};
    let usage = |e: String| {
        eprintln!("fluxmend: {e}");
        ExitCode::from(2)
    };
    if let Some(from) = &args.from {
        // Both sides leave out what the configuration excludes, as the work tree's load does.
        let exclude = Config::read(&args.repo.path).exclude;
        let revision = |rev: &str, known: Option<&Repo>| {
            fluxmend::load::revision::load_revision(&args.repo.path, rev, &exclude, known)
                .map_err(|e| usage(e.to_string()))
        };
        let (before, after) = match &args.to {
            Some(to) => {
                let after = revision(to, None)?;
                (revision(from, Some(&after))?, after)
            }
            None => {
                let after = load(&args.repo)?.0;
                (revision(from, Some(&after))?, after)
            }
        };
        // What a revision holds that fluxmend skipped (a name git refuses, a file over the
        // size limit, one that does not parse) is left out of its rollout: say so, as `check`
        // says it of the work tree.
        for (rev, repo) in [Some(from), args.to.as_ref()]
            .into_iter()
            .zip([&before, &after])
            .filter_map(|(rev, repo)| Some((rev?, repo)))
        {
            for d in repo
                .diagnostics
                .iter()
                .filter(|d| d.severity >= Severity::Warning)
            {
                eprintln!(
                    "fluxmend: {}: at {}: {}: {}",
                    d.severity,
                    fluxmend::emit::escape::terminal(rev),
                    fluxmend::emit::escape::terminal(&d.file),
                    fluxmend::emit::escape::terminal(&d.message)
                );
            }
        }
        let options = ModelOptions {
            roots: args.repo.roots.clone(),
            source_root: args.repo.source_root.clone(),
            // As given, like `source_root` above: the revisions are trees of their own.
            sources: args
                .repo
                .sources
                .iter()
                .filter_map(|s| s.split_once('='))
                .map(|(n, d)| (n.to_string(), d.trim_end_matches('/').to_string()))
                .collect(),
        };
        let played = rollout::play(
            &Model::build(&before, &options),
            &Model::build(&after, &options),
        );
        print!(
            "{}",
            match args.format {
                Format::Text => out::rollout_text(&played),
                Format::Json => out::rollout_json(&played),
            }
        );
        let harmful = played.deletions().any(|d| d.consequence.is_harmful());
        return Ok(ExitCode::from(u8::from(harmful)));
    }
    if args.fail.is_empty() {
        return Err(usage(
            "simulate needs --fail KIND/NAMESPACE/NAME or --from REV (see fluxmend simulate --help)"
                .into(),
        ));
    }
    let targets = args
        .fail
        .iter()
        .map(|t| failure::Target::parse(t))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let (repo, options, config) = load(&args.repo)?;
    // The fixes `fix` would offer: the rules the configuration leaves on, their suppressions.
    let rules = select_rules(&[], &[], &config)?;
    let model = Model::build(&repo, &options);
    let unknown: Vec<String> = failure::unknown(&model, &targets)
        .iter()
        .map(|t| t.to_string())
        .collect();
    if !unknown.is_empty() {
        return Err(usage(format!(
            "--fail {}: no live layer applies or reads {} (`fluxmend graph` lists what each layer applies)",
            unknown.join(", "),
            if unknown.len() == 1 { "it" } else { "them" }
        )));
    }
    let before = failure::simulate(&model, &targets);
    // Every phase of every fix, applied in turn: the layout the fixes lead to.
    let mut fixed: Option<Repo> = None;
    for _ in 0..MAX_PHASES {
        let next = {
            let base = fixed.as_ref().unwrap_or(&repo);
            let model = Model::build(base, &options);
            let (findings, _, _) = findings_and_diagnostics(
                &model,
                &rules,
                fluxmend::rules::Strategy::default(),
                config.clone(),
            );
            // Each round's base is the previous round: its fixes are taken as deployed.
            let plan = fluxmend::verify::gates::plan_with(
                base,
                &model,
                fluxmend::verify::Base::WorkTree,
                &options,
                findings,
                VerifyMode::Builtin,
                None,
            );
            if plan.files.is_empty() {
                break;
            }
            base.with_changes(&fluxmend::changes::as_overlay(&plan.files))
        };
        fixed = Some(next);
    }
    // Said only when the fixes change what this failure does.
    let after = fixed
        .map(|r| failure::simulate(&Model::build(&r, &options), &targets))
        .filter(|after| *after != before);
    print!(
        "{}",
        match args.format {
            Format::Text => out::failure_text(&before, after.as_deref()),
            Format::Json => out::failure_json(&before, after.as_deref()),
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
        Command::Fix(args) => fix(args),
        Command::Simulate(args) => simulate(args),
        Command::Explain { rule } => match fluxmend::rules::by_id(&rule) {
            Some(r) => {
                print!("{}", r.meta().doc_text());
                Ok(ExitCode::SUCCESS)
            }
            None => {
                eprintln!("fluxmend: no rule {rule}; `fluxmend rules` lists them");
                Err(ExitCode::from(2))
            }
        },
        Command::Completion { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "fluxmend",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir } => {
            use clap::CommandFactory;
            let written = match &dir {
                Some(dir) => clap_mangen::generate_to(Cli::command(), dir),
                None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()),
            };
            match written {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e) => {
                    eprintln!("fluxmend: writing the man page: {e}");
                    Err(ExitCode::from(2))
                }
            }
        }
        Command::Rules => {
            for r in fluxmend::rules::all() {
                let m = r.meta();
                println!("{}  {}  {}", m.id, m.name, m.summary);
            }
            Ok(ExitCode::SUCCESS)
        }
    };
    result.unwrap_or_else(|code| code)
}
