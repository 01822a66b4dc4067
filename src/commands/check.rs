//! `check`: the findings and diagnostics, in the format asked for.

use fluxmend::diagnostics::Severity;
use fluxmend::emit::report;
use fluxmend::load::Repo;
use fluxmend::verify::gates::VerifyMode;

use crate::cli::{CheckArgs, CheckFormat};

use super::output::print_styled;
use super::status::{ExitStatus, UsageError, usage};
use super::steps::{
    base_revision, below_path, build_model, findings_and_diagnostics, load, select_rules,
    work_tree_top,
};

/// Run `check`.
pub(crate) fn check(args: &CheckArgs) -> Result<ExitStatus, UsageError> {
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
        findings_and_diagnostics(&model, &rules, fluxmend::rules::Strategy::default(), config);
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
                let deployed = base_revision(&model, &args.repo.path, None, &exclude)
                    .ok()
                    .flatten();
                let deployed_model = deployed.as_ref().and_then(|d| d.model(&model, &options));
                let plan = fluxmend::verify::gates::plan_with(
                    &repo,
                    &model,
                    fluxmend::verify::base_of(deployed.as_ref(), deployed_model.as_ref(), &model),
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
    Ok(ExitStatus::failure_if(failing))
}
