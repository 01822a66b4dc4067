//! What an object carries once applied: its annotations, and whether kustomize-controller's
//! prune skips it.

use rustc_hash::FxHashMap as HashMap;

use super::Rendered;
use super::{Layer, Model};
use crate::load::FileId;
use crate::parse::NodeId;

/// The annotation that keeps kustomize-controller from pruning an object (the exemption a
/// phased move adds first).
pub const PRUNE_DISABLED: (&str, &str) = ("kustomize.toolkit.fluxcd.io/prune", "disabled");
/// The other annotation kustomize-controller's prune skips (it also stops the object being
/// applied).
pub(crate) const RECONCILE_DISABLED: (&str, &str) =
    ("kustomize.toolkit.fluxcd.io/reconcile", "disabled");
/// kustomize-controller neither applies nor prunes an object that carries this.
pub(crate) const SSA_IGNORE: (&str, &str) = ("kustomize.toolkit.fluxcd.io/ssa", "Ignore");
/// What kustomize-controller's prune skips (`deleteObjects`' exclusions).
pub(crate) const PRUNE_EXCLUSIONS: [(&str, &str); 3] =
    [PRUNE_DISABLED, RECONCILE_DISABLED, SSA_IGNORE];

/// Whether `annotations` hold one of `wanted`, the value compared as fluxcd/pkg's `ssa/utils`
/// `AnyInMetadata` does (case-insensitively).
pub(crate) fn carries(annotations: &[(String, String)], wanted: &[(&str, &str)]) -> bool {
    annotations.iter().any(|(k, v)| {
        wanted
            .iter()
            .any(|(wk, wv)| k == wk && v.eq_ignore_ascii_case(wv))
    })
}

/// flux-operator does not uninstall a FluxInstance that carries this when it is deleted.
pub(crate) const INSTANCE_RECONCILE_DISABLED: (&str, &str) =
    ("fluxcd.controlplane.io/reconcile", "disabled");

/// The annotations an object carries once applied: its own, its kustomizations'
/// `commonAnnotations`, and the layer's `commonMetadata.annotations` (what kustomize-controller
/// sets on every object it applies). Patches that add annotations are not modelled, which only
/// makes an object look less protected than it is.
pub fn annotations(model: &Model, layer: &Layer, r: &Rendered) -> Vec<(String, String)> {
    annotations_with(model, layer, r, &mut HashMap::default())
}

/// [`annotations`], each kustomization's `commonAnnotations` read once into `common` (by its
/// file): the objects of one layer share the kustomizations on their way.
pub fn annotations_with(
    model: &Model,
    layer: &Layer,
    r: &Rendered,
    common: &mut HashMap<FileId, Vec<(String, String)>>,
) -> Vec<(String, String)> {
    let read = |out: &mut Vec<(String, String)>, file: FileId, node: Option<NodeId>| {
        let yaml = &model.repo.file(file).yaml;
        if let Some(map) = node {
            for (k, v) in yaml.entries(map) {
                if let (Some(k), Some(v)) = (yaml.scalar(k), yaml.scalar(v)) {
                    out.push((k.to_string(), v.to_string()));
                }
            }
        }
    };
    let mut out = Vec::new();
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    read(
        &mut out,
        obj.file,
        yaml.lookup(obj.root, &["metadata", "annotations"]),
    );
    for &k in r.chain.iter() {
        let of_k = common.entry(k).or_insert_with(|| {
            let kyaml = &model.repo.file(k).yaml;
            let node = kyaml
                .docs()
                .first()
                .and_then(|d| kyaml.lookup(d.root, &["commonAnnotations"]));
            let mut read_k = Vec::new();
            read(&mut read_k, k, node);
            read_k
        });
        out.extend(of_k.iter().cloned());
    }
    if let Some(lo) = layer.object.map(|o| model.object(o)) {
        read(&mut out, lo.file, layer.spec.common_annotations);
    }
    out
}

/// Whether kustomize-controller's prune skips this object once applied (annotated
/// `prune: disabled`, `reconcile: disabled` or `ssa: Ignore`).
pub fn prune_exempt(model: &Model, layer: &Layer, r: &Rendered) -> bool {
    carries(&annotations(model, layer, r), &PRUNE_EXCLUSIONS)
}
