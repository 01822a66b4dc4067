//! Which cluster each live layer belongs to, and a stable name for it.

use std::collections::BTreeMap;

use super::display_dir;
use super::{Layer, Model};

/// A stable name for each cluster: its root layer and the path it syncs (what tells a fleet's
/// clusters apart, and stays put when a change moves the file that defines the root).
pub fn cluster_keys(model: &Model) -> BTreeMap<usize, String> {
    let mut out: BTreeMap<usize, String> = BTreeMap::new();
    for (cluster, layers) in top_layers(model) {
        let mut key = match layers.as_slice() {
            [root] => format!("{} (path {})", root.id, display_dir(&root.path)),
            // No FluxInstance sync or bootstrap Kustomization: every layer is its own root.
            _ => "every layer (no root found: no FluxInstance sync, no bootstrap flux-system Kustomization)".to_string(),
        };
        let taken = out.values().filter(|k| k.starts_with(&key)).count();
        if taken > 0 {
            key = format!("{key} #{}", taken + 1);
        }
        out.insert(cluster, key);
    }
    out
}

/// The live layers no other layer applies, per cluster: a cluster's root, or — when the
/// repository holds no root — every such layer, in one shared cluster.
fn top_layers<'m>(model: &'m Model) -> BTreeMap<usize, Vec<&'m Layer>> {
    let mut roots: BTreeMap<usize, Vec<&Layer>> = BTreeMap::new();
    for (_, layer) in model.live_layers() {
        if layer.applied_by.is_none() {
            roots.entry(layer.cluster).or_default().push(layer);
        }
    }
    roots
}

/// Whether PATH holds no root (no FluxInstance sync, no bootstrap Kustomization, no `--root`)
/// and several top layers were taken for roots instead.
pub fn rootless(model: &Model) -> bool {
    top_layers(model).values().any(|layers| layers.len() > 1)
}
