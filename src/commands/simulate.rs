//! `simulate`: a failing object played through Flux (`--fail`), before and after the fixes; or
//! a change between revisions played through Flux's reconcile order (`--from`).

use fluxmend::config::Config;
use fluxmend::diagnostics::Severity;
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};
use fluxmend::verify::gates::VerifyMode;

use crate::cli::{Format, SimulateArgs};

use super::status::{ExitStatus, UsageError};
use super::steps::{findings_and_diagnostics, load, select_rules};

/// How many rounds of `fix` `simulate --fail` applies to reach the fixed layout (a phased fix
/// takes two).
const MAX_PHASES: usize = 4;

/// A usage error of `simulate`, said on stderr as it is.
fn usage(message: impl std::fmt::Display) -> UsageError {
    eprintln!("fluxmend: {message}");
    UsageError
}

/// Run `simulate`.
pub(crate) fn simulate(args: &SimulateArgs) -> Result<ExitStatus, UsageError> {
    use fluxmend::emit::simulate as out;
    use fluxmend::rollout::failure;
    if let Some(from) = &args.from {
        return simulate_from(args, from);
    }
    if args.fail.is_empty() {
        return Err(usage(
            "simulate needs --fail KIND/NAMESPACE/NAME or --from REV (see fluxmend simulate --help)",
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
        .map(ToString::to_string)
        .collect();
    if !unknown.is_empty() {
        return Err(usage(format!(
            "--fail {}: no live layer applies or reads {} (`fluxmend graph` lists what each layer applies)",
            unknown.join(", "),
            if unknown.len() == 1 { "it" } else { "them" }
        )));
    }
    let before = failure::simulate(&model, &targets);
    let fixed = fixed_layout(&repo, &options, &rules, &config);
    // Said only when the fixes change what this failure does.
    let after = fixed
        .map(|r| failure::simulate(&model.build_variant(&r, &options), &targets))
        .filter(|after| *after != before);
    print!(
        "{}",
        match args.format {
            Format::Text => out::failure_text(&before, after.as_deref()),
            Format::Json => out::failure_json(&before, after.as_deref()),
        }
    );
    Ok(ExitStatus::Success)
}

/// `simulate --from REV [--to REV]`: the change between two revisions (or a revision and the
/// work tree) played through Flux's reconcile order.
fn simulate_from(args: &SimulateArgs, from: &str) -> Result<ExitStatus, UsageError> {
    use fluxmend::emit::simulate as out;
    use fluxmend::rollout;
    // Both sides leave out what the configuration excludes, as the work tree's load does.
    let exclude = Config::read(&args.repo.path).exclude;
    let revision = |rev: &str, known: Option<&Repo>| {
        fluxmend::load::revision::load_revision(&args.repo.path, rev, &exclude, known)
            .map_err(usage)
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
    for (rev, repo) in [Some(from), args.to.as_deref()]
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
    // The revisions differ in a few files: the later one is modelled beside the earlier.
    let from = Model::build(&before, &options);
    let played = rollout::play(&from, &from.build_variant(&after, &options));
    print!(
        "{}",
        match args.format {
            Format::Text => out::rollout_text(&played),
            Format::Json => out::rollout_json(&played),
        }
    );
    let harmful = played.deletions().any(|d| d.consequence.is_harmful());
    Ok(ExitStatus::failure_if(harmful))
}

/// Every phase of every fix, applied in turn: the layout the fixes lead to (`None` when there
/// is nothing to fix).
fn fixed_layout(
    repo: &Repo,
    options: &ModelOptions,
    rules: &[String],
    config: &Config,
) -> Option<Repo> {
    let mut fixed: Option<Repo> = None;
    for _ in 0..MAX_PHASES {
        let next = {
            let base = fixed.as_ref().unwrap_or(repo);
            let model = Model::build(base, options);
            let (findings, _, _) = findings_and_diagnostics(
                &model,
                rules,
                fluxmend::rules::Strategy::default(),
                config.clone(),
            );
            // Each round's base is the previous round: its fixes are taken as deployed.
            let plan = fluxmend::verify::gates::plan_with(
                base,
                &model,
                fluxmend::verify::Base::WorkTree,
                options,
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
    fixed
}
