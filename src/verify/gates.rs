//! The gates of `fix`, composed: which run (`--verify auto|kustomize|builtin|off`), in what
//! order, and what a failure drops.
//!
//! 0. **the whole move** ([`next_phase_fails`]): a first phase is offered only when the next
//!    one, planned on the repository with it applied and deployed, passes every gate of this
//!    mode (so a move never stops half-way); every move of the run together first
//!    ([`super::moves`]), one at a time when that fails.
//! 1. **YAML** ([`super::yaml`]): each fix alone, then the combination — every edited file means
//!    exactly what its edits intend.
//! 2. **builtin** ([`super::plan`]): re-model the changed repository; the same rendered objects
//!    (render gate), applied in the same context (apply-context gate), no new error, the rule
//!    no longer finds it (convergence), and its rollout from the [`Base`] deletes nothing live
//!    (transition gate).
//! 3. **kustomize** ([`super::kustomize`]): a real kustomize renders the affected layers the
//!    same before and after.
//!
//! Each gate sees only the fixes the earlier ones kept. A gate that fails on the combined change
//! is retried one fix at a time, so one bad fix costs only itself. The builtin gates run after
//! the whole-move gate, on every fix it was given when it keeps them all, else on what it kept.

use std::collections::BTreeMap;

use rayon::prelude::*;

use crate::changes;
use crate::load::Repo;
use crate::model::{Model, ModelOptions};
use crate::rules::{self, Finding, Remedy};
pub use crate::rules::{Gate, GateFailure};

use super::kustomize::{self, Tool};
use super::{Base, Plan, Remodelled, Verifier, combine, drop_fix};
use super::{moves, yaml};

/// Which gates `fix` runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VerifyMode {
    /// builtin, plus kustomize when `kustomize` or `kubectl` is on `PATH`.
    #[default]
    Auto,
    /// builtin and kustomize; an error when neither `kustomize` nor `kubectl` is on `PATH`.
    Kustomize,
    /// YAML and builtin gates only.
    Builtin,
    /// No gate: the change is shown or written unverified (and the report says so).
    Off,
}

impl VerifyMode {
    /// The kustomize renderer this mode uses (`Ok(None)`: none), or why the mode cannot run.
    pub fn tool(self) -> Result<Option<Tool>, String> {
        match self {
            VerifyMode::Auto => Ok(Tool::find()),
            VerifyMode::Kustomize => Tool::find().map(Some).ok_or_else(|| {
                "--verify kustomize: neither `kustomize` nor `kubectl` is on PATH".to_string()
            }),
            VerifyMode::Builtin | VerifyMode::Off => Ok(None),
        }
    }
}

/// Verify one finding's fix through every gate, in order (kustomize only with a `tool`); the
/// first gate that refuses it is named. `fix` runs these same gates; this entry point lets a test
/// hand in a deliberately wrong fix and watch the gate catch it.
pub fn verify_fix(
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    finding: &Finding,
    tool: Option<&Tool>,
) -> Result<(), GateFailure> {
    let Some(fix) = finding.fix() else {
        return Ok(());
    };
    yaml::check_changes(repo, &fix.changes).map_err(|e| Gate::Yaml.fails(e))?;
    builtin_gate(repo, model, options, finding)?;
    if let Some(tool) = tool {
        kustomize_gate(repo, model, options, finding, tool)?;
    }
    Ok(())
}

/// The builtin gates (render and convergence) on one fix alone.
pub fn builtin_gate(
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    finding: &Finding,
) -> Result<(), GateFailure> {
    let plan = super::plan(repo, model, Base::WorkTree, options, vec![finding.clone()]);
    match plan.findings.into_iter().next().map(|f| f.remedy) {
        Some(Remedy::Dropped(dropped)) => Err(dropped.failure),
        _ => Ok(()),
    }
}

/// The kustomize gate on one fix alone.
pub fn kustomize_gate(
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    finding: &Finding,
    tool: &Tool,
) -> Result<kustomize::Outcome, GateFailure> {
    let fail = |reason: String| Gate::Kustomize.refuses(reason);
    let Some(fix) = finding.fix() else {
        return Ok(kustomize::Outcome::default());
    };
    let files = changes::contents(repo, &fix.changes).map_err(|e| fail(e.to_string()))?;
    kustomize::check(
        tool,
        repo,
        model,
        options,
        &files,
        &super::Allowed::of(std::iter::once(fix)),
    )
    .map_err(fail)
}

/// `fix`: verify every finding's fix with the gates of `mode` (`tool`: the kustomize renderer,
/// from [`VerifyMode::tool`]), the rollout played from `base`, and combine those that pass.
pub fn plan_with(
    repo: &Repo,
    model: &Model,
    base: Base,
    options: &ModelOptions,
    mut findings: Vec<Finding>,
    mode: VerifyMode,
    tool: Option<&Tool>,
) -> Plan {
    // Every fix must be writable: a path it creates may not exist on disk (ignored files
    // included), no name may exceed 255 bytes, no path may lead through a link.
    for f in &mut findings {
        let Some(fix) = f.fix() else { continue };
        if let Some((path, origin)) = fix
            .changes
            .files
            .keys()
            .find_map(|p| repo.generated_from(p).map(|o| (p.clone(), o)))
        {
            let reason = format!(
                "{path} is generated from {origin} by flux-operator; fluxmend does not rewrite ResourceSet templates: change the template"
            );
            drop_fix(f, Gate::Writable.refuses(reason), false);
            continue;
        }
        let writable = changes::contents(repo, &fix.changes)
            .map_err(crate::targets::TargetError::from)
            .and_then(|files| crate::targets::check_targets(&repo.root, &files));
        if let Err(e) = writable {
            drop_fix(f, Gate::Writable.refuses(e.to_string()), false);
        }
    }
    if mode == VerifyMode::Off {
        return unverified(repo, findings);
    }
    // YAML gate, each fix alone.
    let refused: Vec<Option<GateFailure>> = findings
        .par_iter()
        .map(|f| {
            let fix = f.fix()?;
            yaml::check_changes(repo, &fix.changes)
                .err()
                .map(|e| Gate::Yaml.fails(e))
        })
        .collect();
    for (f, failure) in findings.iter_mut().zip(refused) {
        if let Some(failure) = failure {
            drop_fix(f, failure, false);
        }
    }
    // The rest of each move begun by a first phase: all moves together, as the next run will
    // verify them; when that fails, one at a time (each verdict depends on its own move alone,
    // so they run in parallel).
    let firsts: Vec<&Finding> = findings
        .iter()
        .filter(|f| {
            f.fix()
                .and_then(|x| x.phase.as_ref())
                .is_some_and(|p| p.phase < p.phases)
        })
        .collect();
    // Their first phases applied together are modelled once: the builtin gates check that same
    // change again when every fix of the run is a first phase (see `Remodelled`).
    let first_files = (firsts.len() > 1)
        .then(|| moves::first_phases(repo, &firsts))
        .flatten();
    let first_repo = first_files
        .as_ref()
        .map(|files| repo.with_changes(&changes::as_overlay(files)));
    let first_model = first_repo.as_ref().map(|r| model.build_variant(r, options));
    let first = first_files
        .as_ref()
        .zip(first_model.as_ref())
        .map(|(files, m)| Remodelled::new(files, m, Remodelled::rules_of(firsts.iter().copied())));
    // The builtin gates run once the whole-move gate has spoken, not beside it: side by side,
    // each held a model of a changed repository at the same time, `fix`'s peak memory (issue
    // 26), and each is parallel inside, so together they were no faster.
    let together = first.as_ref().is_some_and(|first| {
        moves::rest_passes_together(repo, model, options, &firsts, first, tool)
    });
    let mut plan = match first.as_ref().filter(|_| together) {
        Some(first) => super::plan_knowing(repo, model, base, options, findings, Some(first)),
        None => {
            let refused: Vec<Option<GateFailure>> = findings
                .par_iter()
                .map(|f| next_phase_fails(repo, model, options, f, tool))
                .collect();
            for (f, failure) in findings.iter_mut().zip(refused) {
                if let Some(failure) = failure {
                    drop_fix(f, failure, false);
                }
            }
            // Builtin gates (render, convergence, transition), combined then one by one.
            super::plan_knowing(repo, model, base, options, findings, first.as_ref())
        }
    };
    // YAML gate on the combination (edits of different fixes in one file).
    let combined = combine(&mut plan.findings);
    if let Err(e) = yaml::check_changes(repo, &combined) {
        let failure = Gate::Yaml.fails(e);
        for f in &mut plan.findings {
            if f.fix().is_some() {
                drop_fix(f, failure.clone(), true);
            }
        }
        plan.files.clear();
    }
    let Some(tool) = tool else {
        return plan;
    };
    plan.verified_by.push(Verifier::Kustomize);
    if plan.files.is_empty() {
        return plan;
    }
    let fixed = plan.findings.iter().filter(|f| f.fix().is_some()).count();
    match kustomize::check(tool, repo, model, options, &plan.files, &protected(&plan)) {
        Ok(outcome) => {
            plan.record(outcome);
            return plan;
        }
        Err(e) if fixed == 1 => {
            let failure = Gate::Kustomize.refuses(e);
            for f in &mut plan.findings {
                if f.fix().is_some() {
                    drop_fix(f, failure.clone(), false);
                }
            }
            plan.files.clear();
            return plan;
        }
        Err(_) => {}
    }
    // One at a time: drop the fixes the kustomize gate refuses, verify what is left again.
    let mut findings = plan.findings;
    for f in &mut findings {
        if f.fix().is_none() {
            continue;
        }
        if let Err(failure) = kustomize_gate(repo, model, options, f, tool) {
            drop_fix(f, failure, false);
        }
    }
    let mut plan = super::plan(repo, model, base, options, findings);
    plan.verified_by.push(Verifier::Kustomize);
    if plan.files.is_empty() {
        return plan;
    }
    match kustomize::check(tool, repo, model, options, &plan.files, &protected(&plan)) {
        Ok(outcome) => plan.record(outcome),
        Err(e) => {
            let failure = Gate::Kustomize.refuses(e);
            for f in &mut plan.findings {
                if f.fix().is_some() {
                    drop_fix(f, failure.clone(), true);
                }
            }
            plan.files.clear();
        }
    }
    plan
}

/// Why a first phase must not be offered: the rest of its move, each later phase planned by the
/// rule on the repository with the earlier ones applied and verified from there as the deployed
/// state (the base advanced to the previous phase), would not pass every gate — the move would
/// stop half-way, its protection left for good and the finding still failing CI. The YAML and
/// builtin gates run on each phase; the kustomize gate (it builds from the files on disk) on the
/// final state, every phase applied, against the work tree. `None` for a fix that is no first
/// phase, or whose whole move passes.
fn next_phase_fails(
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    finding: &Finding,
    tool: Option<&Tool>,
) -> Option<GateFailure> {
    let first = finding.fix()?;
    let phases = first.phase.as_ref().filter(|p| p.phase < p.phases)?.phases;
    let fails = |phase: u8, why: &str| {
        Gate::Move.refuses(format!(
            "phase 1 of {phases} is not offered, since phase {phase} of {phases} would fail: {why}"
        ))
    };
    // The final state, as the files every phase so far changed (path → text, or deleted).
    let mut overlay = BTreeMap::new();
    let mut fixes = vec![first.clone()];
    let mut current = repo.clone();
    let mut done = finding.clone();
    loop {
        let fix = done.fix().expect("a fix to apply");
        let phase = fix.phase.as_ref().map_or(phases, |p| p.phase);
        let files = match changes::contents(&current, &fix.changes) {
            Ok(files) => files,
            Err(e) => return Some(fails(phase, &e.to_string())),
        };
        let step = changes::as_overlay(&files);
        current = current.with_changes(&step);
        overlay.extend(step);
        if phase >= phases {
            break;
        }
        let deployed = model.build_variant(&current, options);
        let Some(next) = rules::run(&deployed, &[finding.rule.to_string()])
            .into_iter()
            .find(|g| super::same_place(finding, g))
        else {
            // Convergence refuses a phase before the last that makes the finding go.
            return None;
        };
        let number = next
            .fix()
            .and_then(|f| f.phase.as_ref())
            .map_or(phases, |p| p.phase);
        let Some(fix) = next.fix() else {
            let why = next.remedy.reason().unwrap_or_default();
            return Some(fails(phase + 1, &format!("the rule offers none: {why}")));
        };
        if number <= phase {
            return Some(fails(
                phase + 1,
                &format!("the rule offers phase {number} again"),
            ));
        }
        if let Err(e) = yaml::check_changes(&current, &fix.changes) {
            return Some(fails(number, &format!("YAML gate: {e}")));
        }
        fixes.push(fix.clone());
        let planned = super::plan(&current, &deployed, Base::WorkTree, options, vec![next]);
        let verdict = planned.findings.into_iter().next()?;
        match &verdict.remedy {
            Remedy::Fix(_) => done = verdict,
            Remedy::Dropped(dropped) => return Some(fails(number, &dropped.to_string())),
            other => return Some(fails(number, &other.reason().unwrap_or_default())),
        }
    }
    let tool = tool?;
    let files = changes::from_overlay(repo, overlay);
    let allowed = super::Allowed::of(fixes.iter());
    kustomize::check(tool, repo, model, options, &files, &allowed)
        .err()
        .map(|e| fails(phases, &e))
}

/// The content changes the plan's fixes intend (protection in place, canonical forms).
fn protected(plan: &Plan) -> super::Allowed {
    super::Allowed::of(plan.findings.iter().filter_map(Finding::fix))
}

/// `--verify off`: the fixes combined, no gate run.
fn unverified(repo: &Repo, mut findings: Vec<Finding>) -> Plan {
    let combined = combine(&mut findings);
    let files = match changes::contents(repo, &combined) {
        Ok(files) => files,
        Err(e) => {
            let failure = Gate::Writable.refuses(format!("the change cannot be applied: {e}"));
            for f in &mut findings {
                if f.fix().is_some() {
                    drop_fix(f, failure.clone(), false);
                }
            }
            Vec::new()
        }
    };
    Plan {
        findings,
        files,
        verified_by: Vec::new(),
        not_verified: vec![
            "--verify off: no gate ran; this change is NOT verified, and its rollout was not played (it may delete live objects)".into(),
        ],
        kustomize_layers: None,
        kustomize_per_layer: Vec::new(),
        rollout_notes: Vec::new(),
    }
}
