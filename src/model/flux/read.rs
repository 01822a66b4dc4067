//! Reading a Flux Kustomization into a [`Layer`] (before its path is resolved), the root
//! Kustomization a FluxInstance's sync makes, and the `spec.targetNamespace` a parent's
//! transformers write into one.

use crate::load::parent_of;
use crate::model::{Model, Name, ObjectIdx, ObjectKey, Rendered};
use crate::parse::{NodeId, YamlFile};

use super::layer::{HealthCheck, Layer, LayerId, LayerRef, SourceRef};
use super::operator::Sync;
use super::spec::FluxSpec;

pub(super) fn is_flux_kustomization(model: &Model, idx: ObjectIdx) -> bool {
    model.object(idx).key.is_flux_kustomization() && !model.in_patch_file(idx)
}

/// A layer read from a Flux Kustomization object (before its paths are resolved).
pub(super) fn layer_from_object(
    model: &Model,
    idx: ObjectIdx,
    key: &ObjectKey,
    cluster: usize,
    applied_by: Option<LayerId>,
) -> Layer {
    let obj = model.object(idx);
    let yaml: &YamlFile = &model.repo.file(obj.file).yaml;
    let spec = yaml.lookup(obj.root, &["spec"]);
    let at = |keys: &[&str]| spec.and_then(|s| yaml.lookup(s, keys));
    let text = |keys: &[&str]| at(keys).and_then(|n| yaml.scalar(n)).map(Name::from);
    // The layer's names are the object's own: a fleet has a layer per Flux Kustomization.
    let namespace = key
        .namespace
        .clone()
        .unwrap_or_else(|| Name::from("default"));
    let field = |item: NodeId, k: &str| {
        yaml.lookup(item, &[k])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let items = |key: &str| at(&[key]).map_or(&[][..], |list| yaml.items(list));
    let health_checks = items("healthChecks")
        .iter()
        .filter_map(|&item| {
            Some(HealthCheck {
                kind: field(item, "kind")?,
                name: field(item, "name")?,
                namespace: field(item, "namespace"),
                item,
            })
        })
        .collect();
    let depends_on = items("dependsOn")
        .iter()
        .filter_map(|&item| {
            let name = field(item, "name")?.into();
            let namespace = field(item, "namespace").map_or_else(|| namespace.clone(), Name::from);
            Some((LayerRef { namespace, name }, item))
        })
        .collect();
    let bool_at = |k: &str| {
        at(&[k])
            .and_then(|n| yaml.value(n).ok())
            .and_then(|v| v.as_bool())
    };
    Layer {
        id: LayerRef {
            namespace: namespace.clone(),
            name: key.name.clone(),
        },
        object: Some(idx),
        created_by_instance: None,
        cluster,
        live: false,
        applied_by,
        source: SourceRef {
            kind: text(&["sourceRef", "kind"]).unwrap_or_else(|| "GitRepository".into()),
            name: text(&["sourceRef", "name"]).unwrap_or_default(),
            namespace: text(&["sourceRef", "namespace"]).unwrap_or(namespace),
        },
        source_root: None,
        path: text(&["path"]).unwrap_or_default(),
        variants: Vec::new(),
        wait: bool_at("wait").unwrap_or(false),
        health_checks,
        health_check_exprs: at(&["healthCheckExprs"]).map_or(0, |n| yaml.items(n).len()),
        depends_on,
        depends_on_ids: Vec::new(),
        timeout: text(&["timeout"]),
        interval: text(&["interval"]),
        target_namespace: text(&["targetNamespace"]),
        suspend: bool_at("suspend").unwrap_or(false),
        prune: bool_at("prune").unwrap_or(false),
        post_build: at(&["postBuild"]).is_some(),
        remote: at(&["kubeConfig"]).is_some(),
        spec: FluxSpec::read(yaml, spec),
    }
}

/// The root Kustomization the operator creates for a FluxInstance's sync: `interval: 10m`,
/// `prune: true`, no wait.
pub(super) fn layer_from_sync(sync: &Sync, cluster: usize) -> Layer {
    Layer {
        id: LayerRef {
            namespace: sync.namespace.as_str().into(),
            name: sync.name.as_str().into(),
        },
        object: None,
        created_by_instance: Some(sync.instance),
        cluster,
        live: true,
        applied_by: None,
        source: SourceRef {
            kind: sync.kind.as_str().into(),
            name: sync.name.as_str().into(),
            namespace: sync.namespace.as_str().into(),
        },
        source_root: None,
        path: sync.path.as_str().into(),
        variants: Vec::new(),
        wait: false,
        health_checks: Vec::new(),
        health_check_exprs: 0,
        depends_on: Vec::new(),
        depends_on_ids: Vec::new(),
        timeout: None,
        interval: Some("10m".into()),
        target_namespace: None,
        suspend: false,
        prune: true,
        post_build: false,
        remote: false,
        spec: FluxSpec::of_instance_sync(),
    }
}

/// The `spec.targetNamespace` the transformers on `r`'s way write into the Flux Kustomization
/// it is (innermost kustomization first, each one's transformers in order: the last wins).
pub(super) fn transformed_target_namespace(model: &Model, r: &Rendered) -> Option<String> {
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let mut current = yaml
        .lookup(obj.root, &["spec", "targetNamespace"])
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string);
    let mut changed = false;
    for &file in r.chain.iter().rev() {
        let dir = parent_of(&model.repo.file(file).path);
        let Some(k) = model.kustomize_dirs.get(dir).filter(|k| k.file == file) else {
            continue;
        };
        for t in &k.transformers().identity {
            if let Some(ns) = t.target_namespace(current.as_deref()) {
                current = Some(ns);
                changed = true;
            }
        }
    }
    current.filter(|_| changed)
}
