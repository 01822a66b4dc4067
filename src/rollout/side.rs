//! One side of a change on one cluster: its live layers, what each applies, and in what
//! order and with what deletion policy they run.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap as HashMap;

use crate::model::ObjectKey;
use crate::model::{Layer, LayerId, LayerRef, Model};
use crate::parse::Value;

use crate::model::annotations::{
    INSTANCE_RECONCILE_DISABLED, PRUNE_EXCLUSIONS, annotations_with, carries,
};

/// An object as one layer applies it: its identity, the placeholder bindings of the variant it
/// comes from (objects of different variants never meet on one cluster), and whether it is
/// exempt from prune.
#[derive(Clone, Debug)]
pub(super) struct Applied {
    pub(super) key: ObjectKey,
    pub(super) bindings: Bindings,
    pub(super) exempt: bool,
    /// flux-operator leaves Flux installed when this FluxInstance is deleted.
    pub(super) instance_disabled: bool,
    pub(super) is_instance: bool,
    /// For a name holding a `${VAR}` that the layer's `postBuild` substitutes: that
    /// `postBuild`. The same text under two different substitutions (one shared component
    /// in every app's layer) names two objects; under the same one (a layer split off with its
    /// settings), one.
    pub(super) scope: Option<crate::parse::Value>,
    /// Applied to another cluster (the layer's `spec.kubeConfig`).
    pub(super) remote: bool,
}

/// Whether an object's name or namespace holds a `${VAR}` left for `postBuild` to substitute.
pub(super) fn named_by_post_build(key: &ObjectKey) -> bool {
    key.name.contains("${") || key.namespace.as_deref().is_some_and(|ns| ns.contains("${"))
}

/// Placeholder bindings of a variant: (placeholder, the directory name it matched).
pub(super) type Bindings = Vec<(String, String)>;

/// For each object (and, for a name `postBuild` substitutes, the layer it belongs to), the layers
/// that apply it and the bindings of the variant it comes from.
pub(super) type Appliers =
    HashMap<(ObjectKey, Option<crate::parse::Value>), Vec<(LayerRef, Bindings)>>;

/// One side of a cluster: its live layers by identity.
pub(super) struct Side<'m, 'r> {
    pub(super) model: &'m Model<'r>,
    pub(super) layers: BTreeMap<LayerRef, LayerId>,
}

impl<'m, 'r> Side<'m, 'r> {
    /// A side with no layer (yet, or at all: a cluster only the other side of the change has).
    pub(super) fn empty(model: &'m Model<'r>) -> Self {
        Side {
            model,
            layers: BTreeMap::new(),
        }
    }

    /// What layer `id` applies. With `annotations` false, only which objects: their
    /// annotation-borne flags (`exempt`, `instance_disabled`, `is_instance`) are left false,
    /// and reading them is most of an inventory's cost.
    pub(super) fn inventory(&self, id: &LayerRef, annotations: bool) -> Vec<Applied> {
        let Some(&l) = self.layers.get(id) else {
            return Vec::new();
        };
        let layer = self.model.layer(l);
        let post_build = Some(layer.spec.applies_with("postBuild"))
            .filter(|v| !matches!(v, Value::Null))
            .cloned();
        // The kustomizations' commonAnnotations, read once for the layer's objects.
        let mut common = HashMap::default();
        let mut out = Vec::new();
        for (v, r) in layer.inventory() {
            let mut applied = Applied {
                key: r.key.clone(),
                bindings: v.bindings.clone(),
                exempt: false,
                instance_disabled: false,
                is_instance: false,
                scope: post_build.clone().filter(|_| named_by_post_build(&r.key)),
                remote: layer.remote,
            };
            if annotations {
                let annotations = annotations_with(self.model, layer, r, &mut common);
                applied.exempt = carries(&annotations, &PRUNE_EXCLUSIONS);
                applied.instance_disabled = carries(&annotations, &[INSTANCE_RECONCILE_DISABLED]);
                applied.is_instance = self.model.is_flux_instance(r.object);
            }
            out.push(applied);
        }
        out
    }

    pub(super) fn layer(&self, id: &LayerRef) -> Option<&'m Layer> {
        self.layers.get(id).map(|&l| self.model.layer(l))
    }
}

/// Two variants' bindings can meet on one cluster when no placeholder is bound differently.
pub(super) fn compatible(a: &[(String, String)], b: &[(String, String)]) -> bool {
    a.iter()
        .all(|(p, v)| b.iter().all(|(q, w)| p != q || v == w))
}

/// Each cluster's side of `model`, by cluster index: gathered in one pass over the layers, not
/// one per cluster (a fleet has thousands of clusters, and a pass reads every layer's record).
pub(super) fn sides<'m, 'r>(model: &'m Model<'r>) -> HashMap<usize, Side<'m, 'r>> {
    let mut sides: HashMap<usize, Side> = HashMap::default();
    for (id, l) in model.live_layers() {
        sides
            .entry(l.cluster)
            .or_insert_with(|| Side::empty(model))
            .layers
            .insert(l.id.clone(), id);
    }
    sides
}

/// The layers `id` is guaranteed to run after: its `dependsOn` targets that read the same
/// source (they must have applied this revision), transitively.
pub(super) fn ordered_before(side: &Side, id: &LayerRef) -> BTreeSet<LayerRef> {
    let mut out = BTreeSet::new();
    let mut frontier = vec![id.clone()];
    while let Some(current) = frontier.pop() {
        let Some(layer) = side.layer(&current) else {
            continue;
        };
        for &dep in &layer.depends_on_ids {
            let d = side.model.layer(dep);
            if d.live && d.source == layer.source && out.insert(d.id.clone()) {
                frontier.push(d.id.clone());
            }
        }
    }
    out
}

/// Whether a layer's inventory is deleted when the layer itself is.
pub(super) fn deletes_inventory(layer: &Layer) -> bool {
    match layer.spec.deletion_policy() {
        "Orphan" => false,
        "Delete" | "WaitForTermination" => true,
        _ => layer.prune,
    }
}
