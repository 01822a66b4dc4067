//! Playing a change through Flux's reconcile, cluster by cluster: each layer's apply and
//! prune in an order Flux may take.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::model::ObjectKey;
use crate::model::{FLUX_KUSTOMIZE_GROUP, Layer, LayerRef, Model};

use super::consequence::consequence;
use super::outcome::{
    ClusterRollout, Consequence, Deletion, LayerChange, LeaveOutcome, Leaving, Rollout, Step,
};
use super::side::{Applied, Appliers, Side, compatible, deletes_inventory, ordered_before, sides};
use crate::model::cluster_keys;

/// Play the change from `before` to `after` through Flux's reconcile, cluster by cluster.
pub fn play(before: &Model, after: &Model) -> Rollout {
    play_with(before, after, Detail::Steps)
}

/// The deletions [`play`] finds, each cluster's steps left empty: all the transition gate asks.
/// A deletion never reads a step (which layers change, what each takes over), so they are
/// [`play`]'s deletions, in its order.
pub fn deletions(before: &Model, after: &Model) -> Rollout {
    play_with(before, after, Detail::DeletionsOnly)
}

/// What a play records besides the deletions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Each layer's step: its change, what it takes over, what leaves it.
    Steps,
    DeletionsOnly,
}

fn play_with(before: &Model, after: &Model, detail: Detail) -> Rollout {
    let before_keys = cluster_keys(before);
    let after_keys = cluster_keys(after);
    let mut names: BTreeMap<&String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (&c, k) in &before_keys {
        names.entry(k).or_default().0 = Some(c);
    }
    for (&c, k) in &after_keys {
        names.entry(k).or_default().1 = Some(c);
    }
    // Clusters are independent (a fleet has thousands): played side by side, kept in name order.
    let (mut before_sides, mut after_sides) = (sides(before), sides(after));
    let names: Vec<_> = names
        .into_iter()
        .map(|(root, (b, a))| {
            let sides = (
                take_side(before, &mut before_sides, b),
                take_side(after, &mut after_sides, a),
            );
            (root, sides, a.or(b))
        })
        .collect();
    let clusters = names
        .into_par_iter()
        .map(|(root, (b, a), cluster)| play_cluster(root, &b, &a, cluster, detail))
        .collect();
    Rollout { clusters }
}

/// The side of `cluster` (none: an empty one), taken out of `sides`: each plays once.
fn take_side<'m, 'r>(
    model: &'m Model<'r>,
    sides: &mut HashMap<usize, Side<'m, 'r>>,
    cluster: Option<usize>,
) -> Side<'m, 'r> {
    cluster
        .and_then(|c| sides.remove(&c))
        .unwrap_or_else(|| Side::empty(model))
}

fn play_cluster(
    root: &str,
    before: &Side,
    after: &Side,
    cluster: Option<usize>,
    detail: Detail,
) -> ClusterRollout {
    let cluster = cluster.unwrap_or(0);
    let ids: BTreeSet<LayerRef> = before
        .layers
        .keys()
        .chain(after.layers.keys())
        .cloned()
        .collect();
    // Steps compare whole inventories; deletions read the annotations of what leaves only.
    let full = detail == Detail::Steps;
    let mut inv_before: BTreeMap<&LayerRef, Vec<Applied>> = ids
        .iter()
        .map(|id| (id, before.inventory(id, full)))
        .collect();
    let inv_after: BTreeMap<&LayerRef, Vec<Applied>> = ids
        .iter()
        .map(|id| (id, after.inventory(id, full)))
        .collect();
    // Which layers apply each object, before and after: what the steps ask of every object (a
    // deletion asks only after).
    let applied_before = if detail == Detail::Steps {
        index(&inv_before)
    } else {
        Appliers::default()
    };
    let applied_after = index(&inv_after);
    // The layers applying `x` (in a variant it can meet), as one side says.
    let appliers = |side: &Appliers, x: &Applied| -> Vec<LayerRef> {
        side.get(&(x.key.clone(), x.scope.clone()))
            .map(|v| {
                v.iter()
                    .filter(|(_, b)| compatible(b, &x.bindings))
                    .map(|(l, _)| l.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    let order = topological(before, after, &ids);
    let mut steps = Vec::new();
    let mut deletions = Vec::new();
    for id in &order {
        let (b, a) = (before.layer(id), after.layer(id));
        // The prune that deletes what left this layer's inventory: its own (the old or the new
        // spec may be the one in force when the revision arrives), or, for a removed layer, its
        // deletion policy run when the parent prunes its Kustomization object. Which layers are
        // sure to have applied the revision first is asked only when something leaves.
        let (prunes, runs_after): (bool, Box<dyn Fn() -> BTreeSet<LayerRef>>) = match (b, a) {
            (Some(b), Some(a)) => (b.prune || a.prune, Box::new(|| ordered_before(after, id))),
            (Some(b), None) => {
                let parent = b.applied_by.map(|p| before.model.layer(p).id.clone());
                let parent_prunes = parent
                    .as_ref()
                    .and_then(|p| after.layer(p).or(before.layer(p)))
                    .is_some_and(|p| p.prune);
                let after = &after;
                (
                    parent_prunes && deletes_inventory(b),
                    Box::new(move || {
                        let mut runs = parent
                            .as_ref()
                            .map(|p| ordered_before(after, p))
                            .unwrap_or_default();
                        runs.extend(parent.clone());
                        runs
                    }),
                )
            }
            _ => (false, Box::new(BTreeSet::new)),
        };
        // What leaves is known without annotations; whether its deletion is prevented is not.
        if !full
            && inv_before[id]
                .iter()
                .any(|x| !appliers(&applied_after, x).contains(id))
        {
            inv_before.insert(id, before.inventory(id, true));
        }
        let mut leaves: Vec<Leaving> = Vec::new();
        let mut left: HashSet<&ObjectKey> = HashSet::default();
        let mut first_before: Option<BTreeSet<LayerRef>> = None;
        for x in &inv_before[id] {
            let mut applied_by = appliers(&applied_after, x);
            if applied_by.contains(id) || !left.insert(&x.key) {
                continue;
            }
            applied_by.retain(|l| l != id);
            let outcome = if !prunes {
                LeaveOutcome::Orphaned
            } else if x.exempt {
                LeaveOutcome::Protected
            } else if applied_by
                .iter()
                .any(|m| first_before.get_or_insert_with(&runs_after).contains(m))
            {
                LeaveOutcome::HandedOver
            } else {
                LeaveOutcome::Deleted
            };
            if outcome == LeaveOutcome::Deleted {
                let recreated_by = applied_by.first().cloned();
                deletions.push(deletion(
                    before,
                    after,
                    id,
                    (b, a),
                    x,
                    recreated_by,
                    cluster,
                ));
            }
            leaves.push(Leaving {
                object: x.key.clone(),
                outcome,
            });
        }
        if detail == Detail::DeletionsOnly {
            continue;
        }
        let change = match (b, a) {
            (None, Some(_)) => LayerChange::Added,
            (Some(_), None) => LayerChange::Removed,
            _ if same_layer(before, after, id, &inv_before[id], &inv_after[id]) => {
                LayerChange::Unchanged
            }
            _ => LayerChange::Changed,
        };
        let mut takes_over = Vec::new();
        let mut seen: HashSet<&ObjectKey> = HashSet::default();
        for x in &inv_after[id] {
            let before_by = appliers(&applied_before, x);
            let elsewhere = before_by.iter().any(|l| l != id);
            let here = before_by.iter().any(|l| l == id);
            if elsewhere && !here && seen.insert(&x.key) {
                takes_over.push(x.key.clone());
            }
        }
        steps.push(Step {
            layer: id.clone(),
            change,
            after: a
                .map(|a| {
                    a.depends_on_ids
                        .iter()
                        .map(|&d| after.model.layer(d).id.clone())
                        .collect()
                })
                .unwrap_or_default(),
            applies: inv_after[id].len(),
            takes_over,
            leaves,
        });
    }
    ClusterRollout {
        root: root.to_string(),
        steps,
        deletions,
    }
}

/// Which layers apply each object of the inventories `inv`.
fn index(inv: &BTreeMap<&LayerRef, Vec<Applied>>) -> Appliers {
    let mut by_key: Appliers = HashMap::default();
    for (id, objects) in inv {
        for o in objects {
            by_key
                .entry((o.key.clone(), o.scope.clone()))
                .or_default()
                .push(((*id).clone(), o.bindings.clone()));
        }
    }
    by_key
}

/// The deletion of `x`, which leaves the inventory of layer `id` (`b` before, `a` after) and
/// which `id`'s prune deletes; `recreated_by`: the layer that applies it again, if one does.
fn deletion(
    before: &Side,
    after: &Side,
    id: &LayerRef,
    (b, a): (Option<&Layer>, Option<&Layer>),
    x: &Applied,
    recreated_by: Option<LayerRef>,
    cluster: usize,
) -> Deletion {
    let (mut consequence, mut effect) = consequence(x, recreated_by.is_some());
    // A removed layer's Kustomization: what goes with it is its own step's business.
    let removed_layer = before.layers.keys().find(|l| {
        x.key.group() == FLUX_KUSTOMIZE_GROUP
            && x.key.kind == "Kustomization"
            && l.name == x.key.name.as_str()
            && x.key
                .namespace
                .as_deref()
                .is_some_and(|ns| ns == l.namespace)
            && !after.layers.contains_key(*l)
    });
    if let Some(l) = removed_layer.and_then(|l| before.layer(l))
        && recreated_by.is_none()
        && !deletes_inventory(l)
    {
        consequence = Consequence::Removed;
        effect = format!(
            "Flux Kustomization {} is deleted; its deletionPolicy ({}, prune: {}) leaves what it applied in the cluster, unmanaged",
            l.id,
            l.spec.deletion_policy(),
            l.prune
        );
    }
    let mut cause = match (&recreated_by, a) {
        (Some(m), Some(_)) if ordered_before(after, m).contains(id) => format!(
            "it leaves {id}'s inventory, and {m} depends on {id}: {id} prunes it before {m} applies it"
        ),
        (Some(m), Some(_)) => format!(
            "it leaves {id}'s inventory and {id} may prune it before {m} applies it: nothing orders {m} first"
        ),
        (None, Some(_)) => format!("it leaves {id}'s inventory and {id} prunes it"),
        (_, None) => format!(
            "{id} is removed and its deletionPolicy ({}) deletes its inventory",
            b.map_or("", |b| b.spec.deletion_policy())
        ),
    };
    if x.scope.is_some() {
        cause.push_str(&format!(
            "; its name depends on postBuild: {id} substitutes the ${{…}} in it, so a layer that substitutes other values applies another object of the same text"
        ));
    }
    Deletion {
        cluster,
        object: x.key.clone(),
        deleted_by: id.clone(),
        recreated_by,
        consequence,
        effect,
        cause,
    }
}

/// Whether a layer reads the same and applies the same before and after (its Kustomization
/// object's content included).
pub(super) fn same_layer(
    before: &Side,
    after: &Side,
    id: &LayerRef,
    b: &[Applied],
    a: &[Applied],
) -> bool {
    let keys = |v: &[Applied]| v.iter().map(|x| x.key.clone()).collect::<BTreeSet<_>>();
    let spec = |s: &Side| {
        s.layer(id)
            .and_then(|l| l.object)
            .map(|o| s.model.object(o))
            .and_then(|o| s.model.repo.file(o.file).yaml.value(o.root).ok())
    };
    keys(b) == keys(a) && spec(before) == spec(after)
}

/// The layers in an order Flux may reconcile them: `dependsOn` first, then by name; a removed
/// layer goes with its parent, whose prune deletes it.
pub(super) fn topological(before: &Side, after: &Side, ids: &BTreeSet<LayerRef>) -> Vec<LayerRef> {
    // What each layer waits for: its dependsOn targets, or (removed) the parent that deletes it.
    let waits_for = |id: &LayerRef| -> Vec<LayerRef> {
        match after.layer(id) {
            Some(l) => l
                .depends_on_ids
                .iter()
                .map(|&d| after.model.layer(d).id.clone())
                .filter(|d| ids.contains(d) && d != id)
                .collect(),
            None => before
                .layer(id)
                .and_then(|l| l.applied_by)
                .map(|p| before.model.layer(p).id.clone())
                .filter(|p| ids.contains(p) && p != id)
                .into_iter()
                .collect(),
        }
    };
    let mut missing: BTreeMap<&LayerRef, usize> = BTreeMap::new();
    let mut unblocks: BTreeMap<LayerRef, Vec<&LayerRef>> = BTreeMap::new();
    for id in ids {
        let w = waits_for(id);
        missing.insert(id, w.len());
        for d in w {
            unblocks.entry(d).or_default().push(id);
        }
    }
    let mut ready: BTreeSet<&LayerRef> = missing
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut placed = Vec::with_capacity(ids.len());
    let mut done: HashSet<&LayerRef> = HashSet::default();
    while placed.len() < ids.len() {
        // A cycle (reported as a diagnostic by the model): place the rest by name.
        let next = match ready.pop_first() {
            Some(id) => id,
            None => *missing
                .keys()
                .find(|id| !done.contains(*id))
                .expect("fewer placed than layers"),
        };
        if !done.insert(next) {
            continue;
        }
        placed.push(next.clone());
        for &u in unblocks.get(next).map_or(&[][..], Vec::as_slice) {
            let n = missing.get_mut(u).expect("every layer counted");
            *n = n.saturating_sub(1);
            if *n == 0 && !done.contains(u) {
                ready.insert(u);
            }
        }
    }
    placed
}
