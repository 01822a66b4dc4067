//! The command line as clap reads it: the commands, their arguments and help texts. Parsing
//! only; what a command does is `commands` and `main`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use fluxmend::diagnostics::Severity;
use fluxmend::verify::gates::VerifyMode;

/// `fluxmend --help`: the commands people start with, and the exit codes every command keeps.
pub(crate) const HELP: &str = "\
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
pub(crate) const CHECK_HELP: &str = "\
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
pub(crate) const FIX_HELP: &str = "\
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
pub(crate) const SIMULATE_HELP: &str = "\
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
pub(crate) const GRAPH_HELP: &str = "\
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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
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
pub(crate) struct FixArgs {
    #[command(flatten)]
    pub(crate) repo: RepoArgs,
    #[command(flatten)]
    pub(crate) output: OutputArgs,
    /// Fix only this rule's findings: an id (FM001) or a name (flux-instance-in-gated-layer);
    /// repeatable, or a comma-separated list.
    #[arg(long = "rule", visible_alias = "select", value_name = "ID")]
    pub(crate) rules: Vec<String>,
    /// Leave this rule out (id or name; repeatable, or a comma-separated list).
    #[arg(long = "ignore", value_name = "ID")]
    pub(crate) ignore: Vec<String>,
    /// Apply the change to the files (atomically, all or nothing) instead of printing a diff.
    #[arg(long, conflicts_with = "commit")]
    pub(crate) write: bool,
    /// Apply the change and commit it with git on the current branch (or --branch). Refuses when
    /// a file it would touch has uncommitted changes.
    #[arg(long)]
    pub(crate) commit: bool,
    /// With --commit: create this branch from HEAD, switch to it and commit there.
    #[arg(long, value_name = "NAME", requires = "commit")]
    pub(crate) branch: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
    /// Which gates prove the change before it is shown or written: `auto` = builtin, plus a real
    /// kustomize render when `kustomize` or `kubectl` is on PATH; `kustomize` = both, and an error
    /// without one; `builtin` = the YAML and model gates only; `off` = none (reported as NOT
    /// verified).
    #[arg(long, value_enum, default_value_t = Verify::Auto)]
    pub(crate) verify: Verify,
    /// Lowest severity of a finding left without a fix, or of a diagnostic, that makes the exit
    /// code 1 even when there is nothing to change; `never` accepts them all.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub(crate) fail_on: FailOn,
    /// Write the diff's paths below DIR (`.`: relative to PATH). Default: relative to the git
    /// work tree's top level when PATH is inside one (so `git apply` takes the diff there),
    /// else relative to PATH.
    #[arg(long, value_name = "DIR")]
    pub(crate) diff_prefix: Option<String>,
    /// Write the pull-request body (Markdown: findings, files, trade-offs, rollout notes, how to
    /// review) to FILE when there is a change; with or without --write/--commit.
    #[arg(long, value_name = "FILE")]
    pub(crate) pr_body: Option<PathBuf>,
    /// Which fix to offer where the right one depends on what you meant. FM005 (healthChecks
    /// ignored because wait is true): `wait` keeps waiting on everything the layer applies and
    /// removes the ignored list (nothing changes on the cluster); `health-checks` sets
    /// `wait: false` so the list becomes the gate (objects not listed are no longer waited on).
    #[arg(long, value_enum, default_value_t = FixStrategy::Wait)]
    pub(crate) strategy: FixStrategy,
    /// Colour the text report (and the diff, on a terminal only: a piped diff is never coloured).
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
    /// The git revision the cluster runs: the transition gate plays the rollout from it, so the
    /// next phase of a move is offered only once this revision holds the earlier one. Default:
    /// the remote's default branch (`origin/HEAD`), else the current branch's remote-tracking
    /// branch, else HEAD; the work tree when PATH is not in git.
    #[arg(long, value_name = "REV")]
    pub(crate) base: Option<String>,
}

/// When text output is coloured.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (`CLICOLOR_FORCE` forces it).
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    pub(crate) fn choice(self) -> anstream::ColorChoice {
        match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        }
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FixStrategy {
    Wait,
    HealthChecks,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Verify {
    Auto,
    Kustomize,
    Builtin,
    Off,
}

impl Verify {
    pub(crate) fn mode(self) -> VerifyMode {
        match self {
            Verify::Auto => VerifyMode::Auto,
            Verify::Kustomize => VerifyMode::Kustomize,
            Verify::Builtin => VerifyMode::Builtin,
            Verify::Off => VerifyMode::Off,
        }
    }
}

#[derive(Args)]
pub(crate) struct RepoArgs {
    /// Repository (or artifact) root to analyse.
    #[arg(default_value = ".")]
    pub(crate) path: PathBuf,
    /// Treat this Flux Kustomization (`name` or `namespace/name`) as a root; repeatable. Without
    /// it the roots are every FluxInstance's sync and the bootstrap `flux-system` Kustomization.
    #[arg(long = "root", value_name = "NAME")]
    pub(crate) roots: Vec<String>,
    /// Artifact root of OCIRepository/Bucket sources, relative to PATH (default: inferred from
    /// where their `spec.path` values exist).
    #[arg(long, value_name = "DIR")]
    pub(crate) source_root: Option<String>,
    /// Analyse the layers of this source (`name`, `namespace/name` or `kind/namespace/name`)
    /// against DIR, a checkout of its repository below PATH, instead of treating them as
    /// external; repeatable.
    #[arg(long = "source", value_name = "NAME=DIR")]
    pub(crate) sources: Vec<String>,
    /// Read the settings from FILE instead of `.fluxmend.yaml` (found in PATH or the nearest
    /// directory above it, up to the git work tree's top level).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

/// How much of the text report to show.
#[derive(Args)]
pub(crate) struct OutputArgs {
    /// Show notes (findings and diagnostics of severity note) in the text report; they are
    /// counted but hidden by default (shown anyway with `--fail-on note`). JSON and SARIF always
    /// hold them.
    #[arg(long, short = 'v', visible_alias = "verbose")]
    pub(crate) show_notes: bool,
    /// Headlines only: no detail lines, no notes, no summary (`fix` still says what it changed).
    #[arg(long, short = 'q', conflicts_with = "show_notes")]
    pub(crate) quiet: bool,
}

impl OutputArgs {
    pub(crate) fn shown(&self, fail_on: Option<Severity>) -> fluxmend::emit::text::Shown {
        fluxmend::emit::text::Shown {
            notes: !self.quiet && (self.show_notes || fail_on == Some(Severity::Note)),
            detail: !self.quiet,
        }
    }
}

#[derive(Args)]
pub(crate) struct CheckArgs {
    #[command(flatten)]
    pub(crate) repo: RepoArgs,
    #[command(flatten)]
    pub(crate) output: OutputArgs,
    /// `sarif`: SARIF 2.1.0 for code scanning; `github`: GitHub Actions annotations.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub(crate) format: CheckFormat,
    /// Lowest severity of a finding or diagnostic that makes the exit code 1; `never` exits 0
    /// whatever is found.
    #[arg(long, value_enum, default_value_t = FailOn::Warning)]
    pub(crate) fail_on: FailOn,
    /// Run only this rule: an id (FM001) or a name (flux-instance-in-gated-layer); repeatable,
    /// or a comma-separated list.
    #[arg(long = "rule", visible_alias = "select", value_name = "ID")]
    pub(crate) rules: Vec<String>,
    /// Leave this rule out (id or name; repeatable, or a comma-separated list).
    #[arg(long = "ignore", value_name = "ID")]
    pub(crate) ignore: Vec<String>,
    /// Exit 0 whatever is found (the same as `--fail-on never`): report without gating.
    #[arg(long, conflicts_with = "fail_on")]
    pub(crate) exit_zero: bool,
    /// Colour the text report: `auto` on a terminal unless `NO_COLOR` is set.
    #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
    pub(crate) color: ColorWhen,
}

#[derive(Args)]
pub(crate) struct SimulateArgs {
    #[command(flatten)]
    pub(crate) repo: RepoArgs,
    /// An object that fails its health check, as KIND/NAMESPACE/NAME (KIND/NAME when
    /// cluster-scoped), e.g. FluxInstance/flux-system/flux; repeatable. Shows which layers go
    /// Ready=False or DependencyNotReady, whose status is masked, and whether a corrective commit
    /// can still arrive — before and after the fixes `fluxmend fix` would make.
    #[arg(
        long = "fail",
        value_name = "KIND/NAMESPACE/NAME",
        conflicts_with = "from"
    )]
    pub(crate) fail: Vec<String>,
    /// Play the change from this git revision (e.g. main, HEAD~1, a commit id) to --to: every
    /// layer's step in an order Flux may take and every live object deleted on the way.
    /// Exit 1 when something is deleted with a consequence worse than pods restarting.
    #[arg(long, value_name = "REV")]
    pub(crate) from: Option<String>,
    /// The revision the change goes to (default: the work tree as it is).
    #[arg(long, value_name = "REV", requires = "from")]
    pub(crate) to: Option<String>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

#[derive(Args)]
pub(crate) struct GraphArgs {
    #[command(flatten)]
    pub(crate) repo: RepoArgs,
    #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
    pub(crate) format: GraphFormat,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Format {
    Text,
    Json,
}

/// `check` speaks to more consumers than the other commands: code scanning and CI annotations.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum CheckFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum GraphFormat {
    Text,
    Json,
    Dot,
    Mermaid,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum FailOn {
    Note,
    Warning,
    Error,
    Never,
}

impl FailOn {
    /// The lowest failing severity; `None` when nothing fails.
    pub(crate) fn severity(self) -> Option<Severity> {
        match self {
            FailOn::Note => Some(Severity::Note),
            FailOn::Warning => Some(Severity::Warning),
            FailOn::Error => Some(Severity::Error),
            FailOn::Never => None,
        }
    }
}
