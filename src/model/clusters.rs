//! Which cluster each live layer belongs to, and a stable name for it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use super::display_dir;
use super::{Layer, Model};

/// A stable name for each cluster: its root layer and the path it syncs (what tells a fleet's
/// clusters apart, and stays put when a change moves the file that defines the root).
pub fn cluster_keys(model: &Model) -> BTreeMap<usize, String> {
    let mut out: BTreeMap<usize, String> = BTreeMap::new();
    // The keys given so far, sorted: those starting with a key are a range of them (a fleet has
    // thousands of clusters, and comparing each key with every earlier one was quadratic).
    let mut given: BTreeSet<String> = BTreeSet::new();
    for (cluster, layers) in top_layers(model) {
        let mut key = match layers.as_slice() {
            [root] => format!("{} (path {})", root.id, display_dir(&root.path)),
            // No FluxInstance sync or bootstrap Kustomization: every layer is its own root.
            _ => "every layer (no root found: no FluxInstance sync, no bootstrap flux-system Kustomization)".to_string(),
        };
        let taken = given
            .range::<str, _>((Bound::Included(key.as_str()), Bound::Unbounded))
            .take_while(|k| k.starts_with(&key))
            .count();
        if taken > 0 {
            key = format!("{key} #{}", taken + 1);
        }
        given.insert(key.clone());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{Repo, write_test_file as write};
    use crate::model::ModelOptions;

    /// Clusters whose roots read alike are told apart by `#2`, `#3`… in the order of their
    /// cluster indices.
    #[test]
    fn clusters_whose_roots_read_alike_are_numbered() {
        let tmp = tempfile::tempdir().unwrap();
        let sync = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
                    metadata:\n  name: flux-system\n  namespace: flux-system\n\
                    spec:\n  interval: 10m\n  path: ./shared\n  prune: true\n\
                    sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
        for cluster in ["a", "b", "c"] {
            write(tmp.path(), &format!("clusters/{cluster}/sync.yaml"), sync);
        }
        write(
            tmp.path(),
            "shared/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
        );
        let repo = Repo::load(tmp.path()).unwrap();
        let model = Model::build(&repo, &ModelOptions::default());
        let keys: Vec<String> = cluster_keys(&model).into_values().collect();
        let first = "flux-system/flux-system (path ./shared)";
        assert_eq!(
            keys,
            [
                first.to_string(),
                format!("{first} #2"),
                format!("{first} #3")
            ]
        );
    }
}
