//! Which layers a change touches and affects: the ones the gate builds.

use std::collections::BTreeSet;

use rustc_hash::FxHashSet as HashSet;

use crate::load::is_within;
use crate::model::{Layer, Model, Name};

/// (cluster, namespace, name) of a layer.
pub(super) type LayerKey = (usize, Name, Name);

pub(super) fn layer_key(l: &Layer) -> LayerKey {
    (l.cluster, l.id.namespace.clone(), l.id.name.clone())
}

/// The layers the change touches (their Flux Kustomization objects may differ: in a changed
/// file, or new) and the layers it affects (what it can alter: the touched ones, and every live
/// layer reading a changed file).
pub(super) fn touched_and_affected(
    model: &Model,
    after: &Model,
    changed: &BTreeSet<&str>,
) -> (HashSet<LayerKey>, BTreeSet<LayerKey>) {
    // Touched layers: their Flux Kustomization objects may differ.
    let mut touched: HashSet<LayerKey> = HashSet::default();
    for m in [model, after] {
        for l in m.layers.iter() {
            let in_changed = l
                .object
                .is_some_and(|o| changed.contains(m.repo.file(m.object(o).file).path.as_str()));
            if in_changed {
                touched.insert(layer_key(l));
            }
        }
    }
    let before_ids: HashSet<LayerKey> = model.layers.iter().map(layer_key).collect();
    touched.extend(
        after
            .layers
            .iter()
            .map(layer_key)
            .filter(|k| !before_ids.contains(k)),
    );

    // Affected layers: what the change can alter.
    let mut affected: BTreeSet<LayerKey> = touched.iter().cloned().collect();
    for m in [model, after] {
        for (_, l) in m.live_layers() {
            let reads_changed = l.variants.iter().any(|v| {
                changed.iter().any(|p| is_within(p, &v.dir))
                    || v.inventory.iter().any(|r| {
                        changed.contains(m.repo.file(m.object(r.object).file).path.as_str())
                            || r.chain
                                .iter()
                                .any(|&f| changed.contains(m.repo.file(f).path.as_str()))
                    })
            });
            if reads_changed {
                affected.insert(layer_key(l));
            }
        }
    }
    (touched, affected)
}
