//! The `fluxmend` command line. Exit codes are a contract (README, "Exit codes"):
//! 0 nothing to report, 1 findings (or, for `fix`, a change to make, or what it cannot fix
//! standing at `--fail-on`), 2 usage or I/O error.
//!
//! `cli` is what clap parses, `commands` the steps the commands share; the commands and all
//! printing are here.

// A repository must never make fluxmend panic: no `unwrap` (an `expect` states the invariant
// that rules the panic out). Unit tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used)]

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

use fluxmend::config::Config;
use fluxmend::diagnostics::Severity;
use fluxmend::emit::report;
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};

use fluxmend::verify::gates::VerifyMode;

use cli::{
    CheckArgs, CheckFormat, Cli, ColorWhen, Command, FixArgs, FixStrategy, Format, GraphArgs,
    GraphFormat, SimulateArgs,
};
use commands::{
    base_of, base_revision, below_path, build_model, findings_and_diagnostics, load, select_rules,
    usage, work_tree_top,
};

/// mimalloc (built without transparent huge pages): parsing allocates and frees millions of short
/// strings; against the system allocator it was faster at 10k and 100k files for about the same
/// peak memory (README, Performance).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
                    fluxmend::changes::contents(&repo, &f.fix()?.changes).ok()
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
                    fluxmend::emit::escape::terminal(d.file()),
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
