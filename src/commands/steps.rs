//! The steps the commands share: read the configuration and load the repository, find the
//! base revision, build the model, select the rules, and gather findings and diagnostics below
//! a path.

use std::path::PathBuf;

use fluxmend::config::Config;
use fluxmend::diagnostics::{Diagnostic, Severity};
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};
use fluxmend::verify::Deployed;

use crate::cli::RepoArgs;

use super::status::{UsageError, usage};

/// Read the configuration, then load the repository with it; flags win over the file.
pub(crate) fn load(args: &RepoArgs) -> Result<(Repo, ModelOptions, Config), UsageError> {
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
/// tree's `exclude` beside the work tree (`model`'s repository, whose model it may share:
/// [`Deployed`]); `None` when PATH is not in git (the work tree is then the base). `Err` says why
/// it cannot be read.
pub(crate) fn base_revision(
    model: &Model,
    path: &std::path::Path,
    given: Option<&str>,
    exclude: &[String],
) -> Result<Option<Deployed>, String> {
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
    let repo = revision::load_revision(path, &rev, exclude, Some(model.repo)).map_err(|e| {
        let hint = if given.is_none() {
            format!(" (the default base, {name}: `--base REV` names the revision the cluster runs)")
        } else {
            String::new()
        };
        format!("--base: {e}{hint}")
    })?;
    Ok(Some(Deployed::new(name, repo, model)))
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
pub(crate) fn build_model<'r>(
    repo: &'r Repo,
    options: &ModelOptions,
) -> Result<Model<'r>, UsageError> {
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
pub(crate) fn select_rules(
    values: &[String],
    ignore: &[String],
    config: &Config,
) -> Result<Vec<String>, UsageError> {
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
pub(crate) fn findings_and_diagnostics(
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
pub(crate) fn work_tree_top(
    args: &RepoArgs,
    repo: &Repo,
    config: &Config,
) -> Option<(PathBuf, String)> {
    if args.source_root.is_some() || !args.sources.is_empty() || config.source_root.is_some() {
        return None;
    }
    let prefix = fluxmend::emit::apply::work_tree_prefix(&repo.root).filter(|p| !p.is_empty())?;
    let written_from_top = repo.files.iter().any(|file| {
        let yaml = &file.yaml;
        yaml.docs().iter().any(|doc| {
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
pub(crate) fn below_path(
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
    findings.retain(|f| f.location.file.starts_with(&dir));
    for f in findings.iter_mut() {
        relative(&mut f.location.file);
    }
    suppressed.retain(|s| s.finding.location.file.starts_with(&dir));
    for s in suppressed.iter_mut() {
        relative(&mut s.finding.location.file);
    }
    diagnostics.retain(|d| d.file().is_empty() || d.file().starts_with(&dir));
    diagnostics
        .iter_mut()
        .filter_map(|d| d.place.file_mut())
        .for_each(relative);
}
