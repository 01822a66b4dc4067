//! `fix`: the verified fixes as a diff, written or committed; an interrupted write completed or
//! rolled back first.

use std::path::Path;

use fluxmend::emit::report;
use fluxmend::verify::Plan;

use crate::cli::{ColorWhen, FixArgs, FixStrategy, Format};

use super::output::{eprint_styled, print_styled};
use super::status::{ExitStatus, UsageError, usage};
use super::steps::{base_revision, build_model, findings_and_diagnostics, load, select_rules};

/// Run `fix`.
pub(crate) fn fix(args: &FixArgs) -> Result<ExitStatus, UsageError> {
    if let Some(name) = &args.branch
        && !fluxmend::emit::apply::valid_branch_name(name)
    {
        eprintln!(
            "fluxmend: --branch {name:?} is not a valid branch name (git check-ref-format --branch)"
        );
        return Err(UsageError);
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
        &model,
        &args.repo.path,
        args.base.as_deref(),
        &config.exclude,
    )
    .map_err(usage)?;
    let deployed_model = deployed.as_ref().and_then(|d| d.model(&model, &options));
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
        fluxmend::verify::base_of(deployed.as_ref(), deployed_model.as_ref(), &model),
        &options,
        findings,
        mode,
        tool.as_ref(),
    );
    let prefix = if prefix.is_empty() {
        prefix
    } else {
        format!("{prefix}/")
    };
    let diff = fluxmend::emit::apply::unified_diff(&plan.files, &prefix);
    let changed = !plan.files.is_empty();
    let (action, committed) = if changed {
        emit_changes(args, &repo.root, &plan)?
    } else {
        ("", None)
    };
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
                print_diff(&diff, args.color);
            }
        }
    }
    Ok(ExitStatus::failure_if(changed || standing.fails()))
}

/// What `fix` does with a change besides printing it: the PR body written (`--pr-body`), the
/// change written (`--write`) or committed (`--commit`). Returns what was done (`written`,
/// `committed` or nothing) and the commit.
fn emit_changes(
    args: &FixArgs,
    root: &Path,
    plan: &Plan,
) -> Result<(&'static str, Option<report::Committed>), UsageError> {
    let fail = |e: fluxmend::emit::error::EmitError| usage(e);
    let mut action = "";
    if let Some(file) = &args.pr_body {
        std::fs::write(file, fluxmend::emit::pr::body(plan))
            .map_err(|e| usage(format!("--pr-body {}: {e}", file.display())))?;
    }
    let mut committed = None;
    if args.write {
        fluxmend::emit::apply::write(root, &plan.files).map_err(fail)?;
        action = "written";
    }
    if args.commit {
        let message = fluxmend::emit::pr::commit_message(plan);
        let oid =
            fluxmend::emit::commit::commit(root, &plan.files, &message, args.branch.as_deref())
                .map_err(fail)?;
        eprintln!("committed {oid}");
        action = "committed";
        committed = Some(report::Committed {
            id: oid.to_string(),
            branch: args
                .branch
                .clone()
                .or_else(|| fluxmend::emit::apply::head_branch(root)),
        });
    }
    Ok((action, committed))
}

/// Print the diff to standard output. Coloured, and a repository's control characters escaped,
/// only on a terminal: a piped diff goes to `git apply` as is.
fn print_diff(diff: &str, color: ColorWhen) {
    use std::io::IsTerminal as _;
    let stdout = std::io::stdout();
    let terminal = stdout.is_terminal();
    let coloured = terminal
        && !matches!(color, ColorWhen::Never)
        && (matches!(color, ColorWhen::Always)
            || anstream::AutoStream::choice(&stdout) != anstream::ColorChoice::Never);
    let shown = if terminal {
        fluxmend::emit::escape::terminal_lines(diff)
    } else {
        std::borrow::Cow::Borrowed(diff)
    };
    if coloured {
        print_styled(&fluxmend::emit::text::diff(&shown), ColorWhen::Always);
    } else {
        print!("{shown}");
    }
}

/// Complete or roll back an interrupted write in `root`, and say what was done and left.
fn recover(root: &std::path::Path) -> Result<(), UsageError> {
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
