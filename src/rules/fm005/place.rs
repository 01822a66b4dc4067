//! Where each entry of the ignored list is, as far as the model can tell: applied here, made by
//! what this layer applies, applied by another layer, nowhere, or unknown (and why).

use std::collections::BTreeSet;

use crate::model::{FLUX_OPERATOR_GROUP, HealthCheck, Layer, LayerId, Model, display_dir};

/// Where an entry of the ignored list is, as far as the model can tell.
#[derive(Debug)]
pub(super) enum Place {
    /// Applied by this layer: with wait: true it is checked anyway.
    Here,
    /// Not applied by any layer, but this layer applies what may make it (a HelmRelease's
    /// chart, a ResourceSet, a FluxInstance), and waits on that.
    MadeHere(Vec<String>),
    /// The model cannot tell: this layer's build (or the way it is rendered) is not fully known
    /// (see [`uncertainty`]).
    Unknown,
    /// Applied by another layer; `after` when that layer depends on this one.
    Elsewhere { layer: LayerId, after: bool },
    /// Nothing in the repository applies or makes it.
    Nowhere,
}

/// The kinds Flux's own controllers define: a chart does not make those (a HelmRelease entry
/// that nothing applies is a stale entry, not a chart's object).
const FLUX_KINDS: &[&str] = &[
    "HelmRelease",
    "Kustomization",
    "GitRepository",
    "OCIRepository",
    "HelmRepository",
    "HelmChart",
    "Bucket",
];

/// Why the model cannot claim that an entry is not applied by this layer, if it cannot: its
/// build holds remote or unmodelled entries, or the parent that renders its Flux Kustomization
/// has transformers or replacements whose effect is unknown.
pub(super) fn uncertainty(model: &Model, layer: &Layer) -> Option<String> {
    for v in &layer.variants {
        if v.error.is_some() {
            return Some(format!("the build of {} fails", display_dir(&v.dir)));
        }
        if !v.unmodelled.is_empty() {
            return Some(format!("{} is not fully modelled", display_dir(&v.dir)));
        }
        if !model.fully_known(&v.dir) {
            return Some(format!(
                "the build of {} holds remote or unmodelled entries",
                display_dir(&v.dir)
            ));
        }
    }
    let parent = model.layer(layer.applied_by?);
    parent
        .variants
        .iter()
        .filter(|v| v.inventory.iter().any(|r| Some(r.object) == layer.object))
        .find(|v| !v.unmodelled.is_empty())
        .map(|v| {
            format!(
                "{} renders this layer with transformers or replacements that may rename or \
                 re-namespace ({})",
                parent.id,
                v.unmodelled.join(", ")
            )
        })
}

/// Where the entry `hc` of `layer`'s list is.
pub(super) fn place(
    model: &Model,
    layer_id: LayerId,
    layer: &Layer,
    hc: &HealthCheck,
    unsure: Option<&String>,
) -> Place {
    if layer.inventory().any(|(_, r)| hc.matches(&r.key)) {
        return Place::Here;
    }
    if unsure.is_some() {
        return Place::Unknown;
    }
    let dependents = model.dependents(layer_id);
    let elsewhere = model
        .live_layers()
        .filter(|(id, l)| *id != layer_id && l.cluster == layer.cluster)
        .find(|(_, l)| l.inventory().any(|(_, r)| hc.matches(&r.key)));
    if let Some((other, _)) = elsewhere {
        return Place::Elsewhere {
            layer: other,
            after: dependents.contains(&other),
        };
    }
    let makers: Vec<String> = layer
        .inventory()
        .filter(|(_, r)| {
            r.key.is_helm_release()
                || model.is_flux_instance(r.object)
                || r.key.is(FLUX_OPERATOR_GROUP, "ResourceSet")
        })
        .map(|(_, r)| r.key.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !makers.is_empty() && !FLUX_KINDS.contains(&hc.kind.as_str()) {
        return Place::MadeHere(makers);
    }
    Place::Nowhere
}
