//! What the FluxInstance rules (FM004, FM006, FM007) share: every FluxInstance with the live
//! layer that delivers it, and the objects it generates.

use rustc_hash::FxHashMap as HashMap;

use crate::diagnostics::Severity;
use crate::load::FileId;
use crate::model::{InstanceObjects, LayerId, Model, ObjectIdx, SourceRef};

use super::{Draft, Finding};

/// A FluxInstance as one live layer delivers it.
pub(super) struct Delivered<'g> {
    pub layer: LayerId,
    /// Whether the layer applies the instance; false for an instance installed out of band,
    /// reported in the root layer it creates.
    pub applied: bool,
    pub generated: &'g InstanceObjects,
}

/// An instance's generated objects and the live layers that apply it (or the root layer it
/// creates, when none does).
pub(super) struct Generated {
    pub layers: Vec<LayerId>,
    pub applied: bool,
    pub objects: InstanceObjects,
}

/// The generated objects of every FluxInstance a live layer applies, or, for an instance no
/// layer applies (installed out of band at bootstrap), of one whose root layer is live. One at a
/// time: a fleet has an instance per cluster, each generating flux-operator's distribution, and
/// three rules running side by side each held all of them at once (issue 26).
pub(super) fn generated_instances<'m>(model: &'m Model) -> impl Iterator<Item = Generated> + 'm {
    let mut layers_of: HashMap<ObjectIdx, Vec<LayerId>> = HashMap::default();
    let mut order = Vec::new();
    for (id, layer) in model.live_layers() {
        for (_, r) in layer.inventory() {
            if model.is_flux_instance(r.object) {
                let entry = layers_of.entry(r.object).or_default();
                if entry.is_empty() {
                    order.push(r.object);
                }
                if !entry.contains(&id) {
                    entry.push(id);
                }
            }
        }
    }
    let mut bootstrapped = Vec::new();
    for (id, layer) in model.live_layers() {
        if let Some(instance) = layer.created_by_instance
            && !layers_of.contains_key(&instance)
            && !bootstrapped.iter().any(|(i, _)| *i == instance)
        {
            bootstrapped.push((instance, id));
        }
    }
    // What to generate, in order: (instance, its layers, applied, the root source assumed).
    let mut planned: Vec<(ObjectIdx, Vec<LayerId>, bool, Option<&SourceRef>)> = Vec::new();
    for idx in order {
        let Some(layers) = layers_of.remove(&idx) else {
            continue;
        };
        if model.instance_source(idx).is_some() {
            planned.push((idx, layers, true, None));
            continue;
        }
        // No `spec.sync` here: each applying layer's own source is the root source when it is
        // in the instance's namespace and no object of the repository defines it.
        for layer in layers {
            let source = &model.layer(layer).source;
            let namespace = model
                .object(idx)
                .key
                .namespace
                .as_deref()
                .unwrap_or("flux-system");
            let assumed = (source.namespace == namespace
                && model
                    .find_object(&source.kind, &source.name, Some(&source.namespace))
                    .is_none())
            .then_some(source);
            planned.push((idx, vec![layer], true, assumed));
        }
    }
    planned.extend(
        bootstrapped
            .into_iter()
            .map(|(idx, layer)| (idx, vec![layer], false, None)),
    );
    planned
        .into_iter()
        .filter_map(move |(idx, layers, applied, assumed)| {
            Some(Generated {
                layers,
                applied,
                objects: model.instance_objects_assuming(idx, assumed)?,
            })
        })
}

/// Each (layer, instance) pair of one instance, for rules that judge an instance per layer
/// delivering it.
pub(super) fn delivered(g: &Generated) -> impl Iterator<Item = Delivered<'_>> {
    g.layers.iter().map(move |&layer| Delivered {
        layer,
        applied: g.applied,
        generated: &g.objects,
    })
}

/// The root source an instance generates, as a `sourceRef` names it.
pub(super) fn root_source(generated: &InstanceObjects) -> Option<SourceRef> {
    let object = &generated.objects[generated.root_source?];
    Some(SourceRef {
        kind: object.key.kind.clone(),
        name: object.key.name.clone(),
        namespace: object.key.namespace.clone().unwrap_or_default(),
    })
}

/// A finding about an instance, placed `at` (file, line) and reported in the layer `layer`.
pub(super) fn instance_finding(
    model: &Model,
    rule: (&'static str, Severity),
    summary: String,
    (file, line): (FileId, usize),
    layer: LayerId,
    instance: ObjectIdx,
) -> Draft {
    let layer_ref = model.layer(layer);
    Finding::draft(
        rule,
        (model.repo.file(file).path.clone(), line),
        (layer_ref.id.clone(), layer_ref.cluster),
        model.object(instance).key.clone(),
    )
    .summary(summary)
}
