//! What an object's kind and YAML say about the objects it uses: its namespace, its kind's
//! family, the chart source a HelmRelease reads, the Secret an object produces.

use crate::model::{Model, Rendered};

pub(super) fn ns_of(r: &Rendered) -> &str {
    r.key.namespace.as_deref().unwrap_or("default")
}

pub(super) fn is_core(r: &Rendered, kinds: &[&str]) -> bool {
    r.key.group().is_empty() && kinds.contains(&r.key.kind.as_str())
}

pub(super) fn is_rbac(r: &Rendered, kinds: &[&str]) -> bool {
    r.key.group() == "rbac.authorization.k8s.io" && kinds.contains(&r.key.kind.as_str())
}

/// The chart source a HelmRelease names: (kind, name, namespace), the namespace defaulting to
/// the release's own.
pub(super) fn chart_ref<'a>(
    model: &'a Model,
    r: &'a Rendered,
) -> Option<(&'a str, &'a str, &'a str)> {
    if r.key.kind != "HelmRelease" || r.key.group() != "helm.toolkit.fluxcd.io" {
        return None;
    }
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let base: &[&str] = if yaml.lookup(obj.root, &["spec", "chartRef"]).is_some() {
        &["spec", "chartRef"]
    } else {
        &["spec", "chart", "spec", "sourceRef"]
    };
    let get = |k: &str| {
        let keys: Vec<&str> = base.iter().copied().chain([k]).collect();
        yaml.lookup(obj.root, &keys).and_then(|n| yaml.scalar(n))
    };
    Some((
        get("kind")?,
        get("name")?,
        get("namespace").unwrap_or(ns_of(r)),
    ))
}

/// The Secret an object produces in its own namespace: an ExternalSecret's `spec.target.name`
/// (default: its own name), a SealedSecret's name, a cert-manager Certificate's `secretName`.
/// What a runner reads then comes from it, so it belongs to the runner as a Secret would.
pub(super) fn produced_secret(model: &Model, r: &Rendered) -> Option<String> {
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let scalar = |keys: &[&str]| {
        yaml.lookup(obj.root, keys)
            .and_then(|n| yaml.scalar(n))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (r.key.group(), r.key.kind.as_str()) {
        ("external-secrets.io", "ExternalSecret") => {
            Some(scalar(&["spec", "target", "name"]).unwrap_or_else(|| obj.key.name.to_string()))
        }
        ("bitnami.com", "SealedSecret") => Some(obj.key.name.to_string()),
        ("cert-manager.io", "Certificate") => scalar(&["spec", "secretName"]),
        _ => None,
    }
}
