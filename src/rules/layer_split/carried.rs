//! What a new layer carries of the old one: the spec fields it copies, and the patches of the
//! old layer by name that do not reach it (named in the move's description).

use crate::model::{Layer, Model};

/// Spec fields of the old layer a new layer beside it copies verbatim (in the old document's
/// order): everything that decides how the moved objects are built and applied.
pub(in crate::rules) const CARRIED: &[&str] = &[
    "interval",
    "retryInterval",
    "timeout",
    "sourceRef",
    "serviceAccountName",
    "kubeConfig",
    "decryption",
    "postBuild",
    "targetNamespace",
    "namePrefix",
    "nameSuffix",
    "commonMetadata",
    "patches",
    "images",
    "force",
    "deletionPolicy",
    "prune",
    "suspend",
    "healthCheckExprs",
];

/// The patches of the kustomizations that bring the old layer object into its parent and edit
/// it by name (a cluster overlay's `timeout`, say): an inline `patches` entry whose target is
/// that Kustomization, or a patch file (`patches` path, `patchesStrategicMerge`) holding a
/// Kustomization of that name. They do not reach the new layer, and whether they should is the
/// overlay author's call. As `file:line`.
fn patches_by_name(model: &Model, layer: &Layer) -> Vec<String> {
    let (Some(obj), Some(parent)) = (layer.object, layer.applied_by) else {
        return Vec::new();
    };
    let name = layer.id.name.as_str();
    let mut out: Vec<String> = model
        .layer(parent)
        .inventory()
        .filter(|(_, r)| r.object == obj)
        .flat_map(|(_, r)| model.patches_on_the_way(r))
        .filter(|p| {
            p.selector().is_some_and(|s| {
                s.kind.as_deref().is_none_or(|k| k == "Kustomization")
                    && s.name.as_deref() == Some(name)
            })
        })
        .map(|p| format!("{}:{}", p.entry.0, p.entry.1))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// For a move's description: the patches of the old layer by name that the new layer `name`
/// does not get, or nothing.
pub(in crate::rules) fn not_carried_patches(model: &Model, layer: &Layer, name: &str) -> String {
    let patches = patches_by_name(model, layer);
    if patches.is_empty() {
        return String::new();
    }
    format!(
        "; not carried: the patch{} at {} of {} by name (review whether {name} needs the same)",
        if patches.len() == 1 { "" } else { "es" },
        patches.join(", "),
        layer.id
    )
}
