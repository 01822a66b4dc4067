//! The whole-move gate for every move of a run at once. A first phase is offered only when the
//! rest of its move passes every gate ([`super::gates`]). Checked one move at a time, that
//! re-models the whole repository twice per move, and a fleet has a move per cluster: the cost
//! grows with the square of the fleet. The next `fix` run plans the next phases of every move
//! together and verifies them combined first, so they are predicted the same way here: each
//! phase of every move applied together, one model per phase. Only when that fails are the
//! moves checked one at a time, to find the ones that fail.

use std::collections::BTreeMap;

use crate::changes;
use crate::edit::Changeset;
use crate::load::Repo;
use crate::model::{Model, ModelOptions};
use crate::rules::{self, Finding, Fix};

use super::kustomize::{self, Tool};
use super::{Allowed, Base, Remodelled, same_place, yaml};

/// Whether the rest of every move begun by `firsts` (first phases that passed the YAML gate)
/// passes every gate when the moves go on together. `first` is their first phases applied
/// together ([`first_phases`]), modelled, with what their rules find there. `false` says only
/// that one of them may fail: the caller then checks them one at a time.
pub(super) fn rest_passes_together(
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    firsts: &[&Finding],
    first: &Remodelled,
    tool: Option<&Tool>,
) -> bool {
    // Each move: its first phase's finding and the finding whose fix is its phase applied last.
    let moves: Vec<(&Finding, Finding)> = firsts.iter().map(|f| (*f, (*f).clone())).collect();
    let mut fixes: Vec<Fix> = firsts.iter().filter_map(|f| f.fix().cloned()).collect();
    // The final state, as the files every phase so far changed (path → text, or deleted).
    let mut overlay = first.overlay.clone();
    let deployed = first.model;
    let goes_on = next_phases_pass(
        deployed.repo,
        deployed,
        &first.found,
        moves,
        &mut fixes,
        &mut overlay,
        options,
    );
    if !goes_on {
        return false;
    }
    let Some(tool) = tool else {
        return true;
    };
    let files = changes::from_overlay(repo, overlay);
    kustomize::check(
        tool,
        repo,
        model,
        options,
        &files,
        &Allowed::of(fixes.iter()),
    )
    .is_ok()
}

/// The files the first phases of `firsts` change together on `repo`; `None` when their edits
/// conflict or cannot be applied (the moves cannot go on together).
pub(super) fn first_phases(repo: &Repo, firsts: &[&Finding]) -> Option<Vec<changes::FileChange>> {
    together(repo, firsts.iter().copied())
}

/// From `current`, the repository with each move's phases so far applied (every move of
/// `moves` has a phase left), `deployed` its model and `found` what the moves' rules find on
/// it: whether each move's next phase, planned by its rule, passes the YAML and builtin gates
/// with the others', and so on to the last phase. Each phase's files join `overlay`, its fixes
/// `fixes`.
fn next_phases_pass(
    current: &Repo,
    deployed: &Model,
    found: &[Finding],
    moves: Vec<(&Finding, Finding)>,
    fixes: &mut Vec<Fix>,
    overlay: &mut BTreeMap<String, Option<String>>,
    options: &ModelOptions,
) -> bool {
    let mut next_moves = Vec::new();
    for (first, done) in moves {
        // A move whose finding is gone early is the convergence gate's to refuse.
        let Some(next) = found.iter().find(|g| same_place(first, g)) else {
            continue;
        };
        let Some(fix) = next.fix() else {
            return false;
        };
        if phase_of(next) <= phase_of(&done) || yaml::check_changes(current, &fix.changes).is_err()
        {
            return false;
        }
        fixes.push(fix.clone());
        next_moves.push((first, next.clone()));
    }
    let mut moves = next_moves;
    if moves.is_empty() {
        return true;
    }
    let Some(files) = together(current, moves.iter().map(|(_, next)| next)) else {
        return false;
    };
    let next: Vec<&Finding> = moves.iter().map(|(_, next)| next).collect();
    if super::check(
        current,
        deployed,
        Base::WorkTree,
        options,
        &files,
        &next,
        None,
    )
    .is_err()
    {
        return false;
    }
    let step = changes::as_overlay(&files);
    let current = current.with_changes(&step);
    overlay.extend(step);
    moves.retain(|(first, done)| phase_of(done) < phases_of(first));
    if moves.is_empty() {
        return true;
    }
    let deployed = deployed.build_variant(&current, options);
    let rules = Remodelled::rules_of(moves.iter().map(|(first, _)| *first));
    let found = rules::run(&deployed, &rules);
    next_phases_pass(&current, &deployed, &found, moves, fixes, overlay, options)
}

/// The files the fixes of `findings` change together on `repo`; `None` when their edits
/// conflict or cannot be applied.
fn together<'a>(
    repo: &Repo,
    findings: impl Iterator<Item = &'a Finding>,
) -> Option<Vec<changes::FileChange>> {
    let mut combined = Changeset::default();
    for f in findings {
        combined.merge(&f.fix()?.changes).ok()?;
    }
    changes::contents(repo, &combined).ok()
}

/// The phase a finding's fix is (a fix without phases is its move's last).
fn phase_of(f: &Finding) -> u8 {
    f.fix()
        .and_then(|x| x.phase.as_ref())
        .map_or(u8::MAX, |p| p.phase)
}

/// How many phases the move a first phase begins takes.
fn phases_of(first: &Finding) -> u8 {
    first
        .fix()
        .and_then(|x| x.phase.as_ref())
        .map_or(1, |p| p.phases)
}
