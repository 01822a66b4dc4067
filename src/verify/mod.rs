//! Verify: a fix is shown or written only after it proves itself. The YAML gate re-parses every
//! changed file; the render gate re-models the changed repository and requires every object
//! rendered before to be rendered after, as often and with identical content (a phase that
//! protects objects may add exactly its `prune: disabled` annotation), and the finding to be gone
//! or, for a first phase, to move on to its next phase (convergence); the apply-context gate
//! ([`context`]) requires every object to be applied as before (cluster, identity,
//! substitution, decryption, prune/force/deletion policy, suspension, health expressions); the transition gate plays
//! the change through Flux's reconcile ([`crate::rollout`]) and refuses one that deletes a live
//! object on the way. A fix that fails a gate is dropped; its finding stays, with the reason.
//!
//! Two comparisons, each against what it is about. The render, apply-context and convergence
//! gates compare the work tree with the result: they judge what the change does to the files,
//! whatever else the work tree holds. The transition gate plays the rollout from the [`Base`],
//! what the cluster runs (kustomize-controller prunes what the live object carries: the
//! annotations the base revision applied), to the result: it judges what merging does on the
//! cluster. Deletions the work tree already makes relative to the base are the user's own
//! change, not the fix's. So a later phase passes only once the base holds the earlier phase's
//! protection: written twice without committing, a move never collapses into one change.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet as HashSet;

use crate::changes::{self, FileChange};
use crate::load::Repo;
use crate::model::{Model, ModelOptions, Name, ObjectKey};
use crate::parse::YamlFile;
use crate::rollout::{self, Consequence};
use crate::rules::{self, Dropped, Finding, Fix, Gate, GateFailure, Phase, Remedy};

pub mod context;
mod deployed;
pub mod gates;
pub mod kustomize;
mod moves;
mod render;
pub mod yaml;

pub use deployed::{Deployed, base_of};
pub use render::{Allowed, without_protection};
use render::{alike_layers, render_gate};

/// The verified result of `fix`: the findings (fixes kept or dropped) and the combined change.
#[derive(Debug)]
pub struct Plan {
    pub findings: Vec<Finding>,
    pub files: Vec<FileChange>,
    /// Which renderers checked the change.
    pub verified_by: Vec<Verifier>,
    /// What could not be verified, and why (e.g. a layer with a remote resource, or
    /// `--verify off`); shown in every report.
    pub not_verified: Vec<String>,
    /// `(built, affected)`: of the layers the change can alter, how many the kustomize gate
    /// built and compared; `None` when it did not run. A summary must not claim more.
    pub kustomize_layers: Option<(usize, usize)>,
    /// Each layer the kustomize gate had to build (`namespace/name`), and why it could not,
    /// when it could not: what a reviewer needs to know was really checked.
    pub kustomize_per_layer: Vec<(String, Option<String>)>,
    /// What the rollout does that the fixes accept (a disposable workload recreated), said in
    /// every report.
    pub rollout_notes: Vec<String>,
}

/// A renderer that checked a change: the built-in model (its gates), or a real kustomize.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verifier {
    Builtin,
    Kustomize,
}

impl Verifier {
    /// Its name in the reports (`verified: builtin + kustomize`).
    pub fn name(self) -> &'static str {
        match self {
            Verifier::Builtin => "builtin",
            Verifier::Kustomize => "kustomize",
        }
    }
}

impl Plan {
    /// The names of the renderers that checked the change.
    pub fn verifier_names(&self) -> Vec<&'static str> {
        self.verified_by.iter().map(|v| v.name()).collect()
    }

    /// Take in what the kustomize gate checked of this plan's change.
    fn record(&mut self, outcome: kustomize::Outcome) {
        self.not_verified.extend(outcome.not_verified);
        if let Some(why) = outcome.network {
            self.not_verified.push(format!(
                "network isolation of the kustomize builds: {why}; they ran with the network reachable (every reference was checked to be local first)"
            ));
        }
        self.kustomize_layers = Some((outcome.layers_built, outcome.layers));
        self.kustomize_per_layer = outcome.per_layer;
    }
}

/// What the cluster runs when the change merges: where the transition gate's rollout starts.
#[derive(Clone, Copy)]
pub enum Base<'a> {
    /// The work tree is what is deployed: PATH is not in git, or a hypothetical deployed state
    /// (`simulate --fail` applies each round of fixes on the previous one).
    WorkTree,
    /// The repository at a git revision (`fix --base`; by default the remote's branch, or HEAD).
    Revision {
        /// The revision as people name it (`origin/main`), for reports.
        name: &'a str,
        model: &'a Model<'a>,
    },
}

/// The (cluster, name) of every layer defined in a changed file, or new: only their own Flux
/// Kustomization objects may differ (in a fleet, other clusters' same-named layers may not).
fn touched_layers(model: &Model, after: &Model, files: &[FileChange]) -> Vec<(usize, Name)> {
    let changed: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let in_changed_file = |m: &Model, l: &crate::model::Layer| {
        l.object
            .is_some_and(|o| changed.contains(m.repo.file(m.object(o).file).path.as_str()))
    };
    let before_ids: HashSet<(usize, &crate::model::LayerRef)> =
        model.layers.iter().map(|l| (l.cluster, &l.id)).collect();
    let mut out: Vec<(usize, Name)> = Vec::new();
    for l in model.layers.iter() {
        if in_changed_file(model, l) {
            out.push((l.cluster, l.id.name.clone()));
        }
    }
    for l in after.layers.iter() {
        if in_changed_file(after, l) || !before_ids.contains(&(l.cluster, &l.id)) {
            out.push((l.cluster, l.id.name.clone()));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A change already re-modelled by an earlier gate: the whole-move gate models the first phases
/// of every move applied together, which is, when every fix of the run is such a phase, exactly
/// the change the builtin gates then check combined. [`Model::build`] is a function of the
/// repository and the options alone, so the model of the same base repository with the same
/// overlay is the same model, and the rules run on it find the same findings: [`check`] takes
/// them from here instead of computing them twice.
pub(crate) struct Remodelled<'a> {
    /// The files changed, as [`Repo::with_changes`] applies them to the base repository.
    overlay: BTreeMap<String, Option<String>>,
    /// The model of the base repository with `overlay` applied.
    pub model: &'a Model<'a>,
    /// The rule ids run on `model` (sorted, each once) and what they found.
    rules: Vec<String>,
    pub found: Vec<Finding>,
}

impl<'a> Remodelled<'a> {
    /// `model` (of the base repository with `files` applied) with what `rules` find on it.
    pub fn new(files: &[FileChange], model: &'a Model<'a>, rules: Vec<String>) -> Remodelled<'a> {
        let rules = rule_set(rules);
        let found = rules::run(model, &rules);
        Remodelled {
            overlay: changes::as_overlay(files),
            model,
            rules,
            found,
        }
    }

    /// The rule ids as [`Remodelled`] keeps them: which rules run is all that `rules::run`
    /// reads of them, not their order or repetition.
    pub fn rules_of<'f>(findings: impl Iterator<Item = &'f Finding>) -> Vec<String> {
        rule_set(findings.map(|f| f.rule.to_string()).collect())
    }
}

/// Rule ids sorted, each once.
fn rule_set(mut rules: Vec<String>) -> Vec<String> {
    rules.sort();
    rules.dedup();
    rules
}

/// Check one changeset meant to fix `findings`; `Err` says which gate failed and why, `Ok` what
/// the rollout does that the fixes accept. `known`: a change modelled already, used when it is
/// this one.
fn check(
    repo: &Repo,
    model: &Model,
    base: Base,
    options: &ModelOptions,
    files: &[FileChange],
    findings: &[&Finding],
    known: Option<&Remodelled>,
) -> Result<Vec<String>, GateFailure> {
    // YAML gate: every changed file parses completely.
    for f in files {
        if let Some(text) = &f.after {
            let (_, err) = YamlFile::parse(text);
            if let Some(e) = err {
                return Err(Gate::Yaml.fails(format!(
                    "{} would not parse ({}:{}: {})",
                    f.path, e.line, e.column, e.message
                )));
            }
        }
    }
    // The changed repository, modelled (or known already).
    let overlay = changes::as_overlay(files);
    let known = known.filter(|k| k.overlay == overlay);
    let after_repo;
    let built;
    let after: &Model = match known {
        Some(k) => k.model,
        None => {
            after_repo = repo.with_changes(&overlay);
            built = model.build_variant(&after_repo, options);
            &built
        }
    };
    let touched = touched_layers(model, after, files);
    let touched: HashSet<(usize, Name)> = touched.into_iter().collect();
    let changed: HashSet<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let fixes = || findings.iter().filter_map(|f| f.fix());
    let allowed = Allowed::of(fixes());
    let rerun = Remodelled::rules_of(findings.iter().copied());
    let known_found = known.filter(|k| k.rules == rerun).map(|k| &k.found[..]);
    let alike = alike_layers(model, after, &changed);
    // The gates only read the models (before, after, deployed): they run at once, and their verdicts are
    // taken in the order below, so the first gate that refuses is the one named.
    let ((rendered, context), (again_run, transition)) = rayon::join(
        || {
            rayon::join(
                || render_gate(model, after, &touched, &changed, &allowed, &alike),
                || context::check(model, after, &alike),
            )
        },
        || {
            rayon::join(
                || {
                    (!findings.is_empty() && known_found.is_none())
                        .then(|| rules::run(after, &rerun))
                },
                || transition_gate(base, model, after, &fixes().collect::<Vec<_>>()),
            )
        },
    );
    // Render gate: the same objects, with the same content, before and after.
    rendered?;
    // An error is new when its file reports it more often than before, wherever the edit moved
    // its line.
    if let Some((file, message)) = first_new_error(&model.diagnostics, &after.diagnostics) {
        return Err(Gate::Render.fails(format!(
            "the change introduces a problem: {file}: {message}"
        )));
    }
    // Apply-context gate: every object is applied as before (cluster, identity, substitution,
    // decryption, prune/force/deletion policy, suspension, health expressions).
    context?;
    // Convergence: the rules no longer report these findings (same rule, layer, object and place
    // file: in a fleet, other clusters have findings with the same names).
    if let Some(again) = known_found.or(again_run.as_deref()) {
        converges(model, findings, again, &rerun)?;
    }
    // Transition gate: played from the base, the rollout deletes nothing live.
    transition
}

/// The convergence gate: after the change (`again`, what the rules `rerun` find on it) each of
/// `findings` is gone, or a phase before the last leaves its next phase as the fix.
fn converges(
    model: &Model,
    findings: &[&Finding],
    again: &[Finding],
    rerun: &[String],
) -> Result<(), GateFailure> {
    // Where a rule reports several findings at one place (FM004: one per patch of an
    // instance), a fix converges when the place keeps no more findings than the fixes here
    // leave: read from the rules' findings before the change, only when needed.
    let mut before: Option<Vec<Finding>> = None;
    let mut left_by_the_fixes = |f: &Finding| {
        let at = |list: &[Finding]| list.iter().filter(|g| same_place(f, g)).count();
        let fixed = findings
            .iter()
            .filter(|g| same_place(f, g) && g.fix().is_some())
            .count();
        let before = before.get_or_insert_with(|| rules::run(model, rerun));
        at(again) + fixed <= at(before)
    };
    for f in findings {
        let still = again.iter().find(|g| same_place(f, g));
        let phase = f.fix().and_then(|x| x.phase.as_ref());
        match (still, phase) {
            // A phase before the last must leave the finding with its next phase as the fix.
            (Some(g), Some(p)) if p.phase < p.phases => {
                let next = g
                    .fix()
                    .map(|x| x.phase.as_ref().map_or(p.phases, |q| q.phase));
                if next.is_none_or(|n| n <= p.phase) {
                    return Err(Gate::Convergence.fails(format!(
                        "after phase {} of {} {} offers no next phase for {} in {}",
                        p.phase, p.phases, f.rule, f.object, f.layer
                    )));
                }
            }
            (None, Some(p)) if p.phase < p.phases => {
                return Err(Gate::Convergence.fails(format!(
                    "phase {} of {} already makes {} stop reporting {} in {}",
                    p.phase, p.phases, f.rule, f.object, f.layer
                )));
            }
            (Some(_), _) if !left_by_the_fixes(f) => {
                return Err(Gate::Convergence.fails(format!(
                    "{} still reports {} in {} after the fix",
                    f.rule, f.object, f.layer
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Whether `g`, found after a change, is the finding `f`: same rule, layer, object and place
/// file (in a fleet, other clusters have findings with the same names).
pub fn same_place(f: &Finding, g: &Finding) -> bool {
    g.rule == f.rule
        && g.layer == f.layer
        && g.object == f.object
        && g.location.file == f.location.file
}

/// A deletion as two rollouts of one cluster can both have it.
type DeletionKey = (String, ObjectKey, crate::model::LayerRef);

fn deletion_keys(played: &rollout::Rollout) -> HashSet<DeletionKey> {
    played
        .clusters
        .iter()
        .flat_map(|c| {
            c.deletions
                .iter()
                .map(|d| (c.root.clone(), d.object.clone(), d.deleted_by.clone()))
        })
        .collect()
}

/// The transition gate: play the change through Flux's reconcile, from what the cluster runs
/// (`base`) to the result; any live object deleted on the way that the work tree does not
/// already delete fails it, except a disposable workload a fix accepts to restart (returned as
/// a note). A later phase whose earlier phase the base does not hold yet is told so.
fn transition_gate(
    base: Base,
    model: &Model,
    after: &Model,
    fixes: &[&Fix],
) -> Result<Vec<String>, GateFailure> {
    let may_restart: Vec<&ObjectKey> = fixes.iter().flat_map(|f| f.may_restart.iter()).collect();
    let (deployed, already) = match base {
        Base::WorkTree => (model, HashSet::default()),
        Base::Revision {
            model: deployed, ..
        } => (
            deployed,
            deletion_keys(&rollout::deletions(deployed, model)),
        ),
    };
    let rollout = rollout::deletions(deployed, after);
    let mut notes = Vec::new();
    let mut refused = Vec::new();
    for cluster in &rollout.clusters {
        for d in &cluster.deletions {
            let key = (cluster.root.clone(), d.object.clone(), d.deleted_by.clone());
            if already.contains(&key) {
                continue;
            }
            let again = d
                .recreated_by
                .as_ref()
                .map_or(String::new(), |l| format!(", then {l} creates it again"));
            let line = format!(
                "{} deletes {} ({}{again}): {}",
                d.deleted_by, d.object, d.cause, d.effect
            );
            if d.consequence == Consequence::Restart && may_restart.contains(&&d.object) {
                notes.push(format!("rollout: {line} (accepted: a disposable workload)"));
            } else {
                refused.push((key, line, d));
            }
        }
    }
    let Some((_, first, deletion)) = refused.first() else {
        notes.sort();
        notes.dedup();
        return Ok(notes);
    };
    // From the work tree the move deletes none of these: the protection is there, not in the
    // base yet.
    if let Base::Revision { name, .. } = base
        && let Some(phase) = fixes
            .iter()
            .filter_map(|f| f.phase.as_ref())
            .find(|p| p.phase > 1)
    {
        let from_work_tree = deletion_keys(&rollout::deletions(model, after));
        if refused.iter().all(|(k, _, _)| !from_work_tree.contains(k)) {
            return Err(not_deployed(phase, name, deletion));
        }
    }
    Err(Gate::Transition.fails(format!(
        "as Flux rolls this change out, {first}{}",
        match refused.len() {
            1 => String::new(),
            n => format!(
                " (and {} more deletion{})",
                n - 1,
                if n == 2 { "" } else { "s" }
            ),
        }
    )))
}

/// Why a later phase is not offered yet: the base does not hold the earlier phase, so the move
/// would delete what it protects. The one text for it.
fn not_deployed(phase: &Phase, base: &str, deletion: &rollout::Deletion) -> GateFailure {
    Gate::Transition.fails(format!(
        "phase {} of {} is not deployed yet: merge it and let Flux apply it, then run fix again. The base ({base}; `--base REV` names the revision the cluster runs) does not hold its protection, so this move would make {} delete {}: {}",
        phase.phase - 1,
        phase.phases,
        deletion.deleted_by,
        deletion.object,
        deletion.effect
    ))
}

/// Combine every finding's fix (conflicting ones wait for the next run) and verify the
/// combination once; when it fails, verify each fix alone, drop those that fail, and verify what
/// is left combined.
pub fn plan(
    repo: &Repo,
    model: &Model,
    base: Base,
    options: &ModelOptions,
    findings: Vec<Finding>,
) -> Plan {
    plan_knowing(repo, model, base, options, findings, None)
}

/// [`plan`], with a change an earlier gate modelled already (`known`), used by each check of
/// that same change.
pub(crate) fn plan_knowing(
    repo: &Repo,
    model: &Model,
    base: Base,
    options: &ModelOptions,
    mut findings: Vec<Finding>,
    known: Option<&Remodelled>,
) -> Plan {
    let verified = |findings, files, rollout_notes| Plan {
        findings,
        files,
        verified_by: vec![Verifier::Builtin],
        not_verified: Vec::new(),
        kustomize_layers: None,
        kustomize_per_layer: Vec::new(),
        rollout_notes,
    };
    let combined = combine(&mut findings);
    let files = changes::contents(repo, &combined).unwrap_or_default();
    let fixed: Vec<&Finding> = findings.iter().filter(|f| f.fix().is_some()).collect();
    let first = if files.is_empty() {
        Ok(Vec::new())
    } else {
        check(repo, model, base, options, &files, &fixed, known)
    };
    if let Ok(rollout_notes) = first {
        return verified(findings, files, rollout_notes);
    }
    for finding in &mut findings {
        let Some(fix) = finding.fix() else { continue };
        let verdict = changes::contents(repo, &fix.changes)
            .map_err(|e| Gate::Writable.refuses(e.to_string()))
            .and_then(|files| check(repo, model, base, options, &files, &[finding], known));
        if let Err(failure) = verdict {
            drop_fix(finding, failure, false);
        }
    }
    let combined = combine(&mut findings);
    let files = changes::contents(repo, &combined).unwrap_or_default();
    let fixed: Vec<&Finding> = findings.iter().filter(|f| f.fix().is_some()).collect();
    let verdict = if files.is_empty() {
        Ok(Vec::new())
    } else {
        check(repo, model, base, options, &files, &fixed, known)
    };
    match verdict {
        Ok(rollout_notes) => verified(findings, files, rollout_notes),
        Err(failure) => {
            for f in &mut findings {
                if f.fix().is_some() {
                    drop_fix(f, failure.clone(), true);
                }
            }
            verified(findings, Vec::new(), Vec::new())
        }
    }
}

/// The fix of `f` refused by a gate, alone or (`combined`) with the others.
pub(crate) fn drop_fix(f: &mut Finding, failure: GateFailure, combined: bool) {
    f.remedy = Remedy::Dropped(Dropped { failure, combined });
}

/// Merge the fixes in finding order; a fix whose edits conflict with an earlier one waits.
pub(crate) fn combine(findings: &mut [Finding]) -> crate::edit::Changeset {
    let mut combined = crate::edit::Changeset::default();
    for finding in findings.iter_mut() {
        let Some(fix) = finding.fix() else { continue };
        if let Err(e) = combined.merge(&fix.changes) {
            finding.remedy = Remedy::Withheld(format!(
                "not fixed this run: its edits conflict with an earlier fix ({e}); run fix again"
            ));
        }
    }
    combined
}

/// The first error (file, message) `after` reports more often than `before`: lines are left
/// out, since an edit moves them.
fn first_new_error<'a>(
    before: &'a [crate::diagnostics::Diagnostic],
    after: &'a [crate::diagnostics::Diagnostic],
) -> Option<(&'a str, &'a str)> {
    let counts = |diagnostics: &'a [crate::diagnostics::Diagnostic]| {
        let mut count: BTreeMap<(&'a str, &'a str), usize> = BTreeMap::new();
        for d in diagnostics {
            if d.severity == crate::diagnostics::Severity::Error {
                *count.entry((d.file(), d.message.as_str())).or_default() += 1;
            }
        }
        count
    };
    let before = counts(before);
    counts(after)
        .into_iter()
        .find(|(key, n)| before.get(key).is_none_or(|b| b < n))
        .map(|(key, _)| key)
}

#[cfg(test)]
mod tests {
    use super::first_new_error;
    use crate::diagnostics::{Diagnostic, Severity};

    fn error(file: &str, message: &str, line: usize) -> Diagnostic {
        Diagnostic::new(Severity::Error, file, message.to_string()).at(line, 1)
    }

    #[test]
    fn an_error_is_new_only_when_reported_more_often_than_before() {
        let before = [error("a.yaml", "x is missing", 7)];
        // Moved by the edit: not new.
        assert_eq!(
            first_new_error(&before, &[error("a.yaml", "x is missing", 3)]),
            None
        );
        // Reported a second time, another message, another file: new.
        let twice = [
            error("a.yaml", "x is missing", 3),
            error("a.yaml", "x is missing", 9),
        ];
        assert_eq!(
            first_new_error(&before, &twice),
            Some(("a.yaml", "x is missing"))
        );
        assert_eq!(
            first_new_error(&before, &[error("a.yaml", "y is missing", 7)]),
            Some(("a.yaml", "y is missing"))
        );
        assert_eq!(
            first_new_error(&before, &[error("b.yaml", "x is missing", 7)]),
            Some(("b.yaml", "x is missing"))
        );
        // A warning that becomes an error is new; a warning is never one.
        let warning = [Diagnostic::new(Severity::Warning, "a.yaml", "z".into())];
        assert_eq!(
            first_new_error(&warning, &[error("a.yaml", "z", 1)]),
            Some(("a.yaml", "z"))
        );
        assert_eq!(first_new_error(&[], &warning), None);
    }

    /// A change that removes the last file of a layer's `spec.path` is refused: committed, the
    /// folder is gone and kustomize-controller fails the layer (`spec.path ... does not
    /// exist`), an error the change introduces. Modelled with the emptied folder kept, the
    /// layer rendered nothing, and a change that moves its objects to another layer passed.
    #[test]
    fn a_change_that_empties_a_layers_folder_is_refused() {
        use crate::load::{Repo, write_test_file as write};
        use crate::model::{Model, ModelOptions};
        use crate::rules::Gate;

        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "clusters/a/sync.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/a\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        );
        write(
            tmp.path(),
            "clusters/a/apps.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps\n  prune: false\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        );
        let runner =
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: runner\n  namespace: ci\n";
        write(tmp.path(), "apps/runner.yaml", runner);
        let repo = Repo::load(tmp.path()).unwrap();
        let options = ModelOptions::default();
        let model = Model::build(&repo, &options);
        // The object moves into the folder the cluster's root syncs: rendered as before.
        let files = [
            crate::changes::FileChange {
                path: "apps/runner.yaml".into(),
                before: Some(runner.into()),
                after: None,
            },
            crate::changes::FileChange {
                path: "clusters/a/runner.yaml".into(),
                before: None,
                after: Some(runner.into()),
            },
        ];
        let failure = super::check(
            &repo,
            &model,
            super::Base::WorkTree,
            &options,
            &files,
            &[],
            None,
        )
        .unwrap_err();
        assert_eq!(failure.gate, Gate::Render);
        assert!(
            failure
                .reason
                .contains("the change introduces a problem: clusters/a/apps.yaml")
                && failure.reason.contains("spec.path `./apps` does not exist"),
            "{failure}"
        );
    }
}
