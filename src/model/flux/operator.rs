//! What flux-operator objects make: a FluxInstance's sync (its root source and root
//! Kustomization), the chart a HelmRelease installs (a FluxInstance may arrive as the
//! `flux-instance` chart), and the objects the loader generated from a ResourceSet.

use crate::load::FileId;
use crate::model::{Model, Name, ObjectIdx};
use crate::parse::NodeId;

use super::layer::{FLUX_OPERATOR_GROUP, SourceRef};

/// The sync settings of a FluxInstance (raw, or a HelmRelease of the `flux-instance` chart).
pub(super) struct Sync {
    pub(super) instance: ObjectIdx,
    pub(super) kind: String,
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) path: String,
    /// The repository the root source reads: this one.
    pub(super) url: Option<String>,
}

/// The file and node of a FluxInstance's spec: `spec` of the object, or `spec.values.instance`
/// of a HelmRelease of the `flux-instance` chart. `None` for another object, or one written
/// in a file named only as a patch.
pub(in crate::model) fn instance_spec(model: &Model, idx: ObjectIdx) -> Option<(FileId, NodeId)> {
    if model.in_patch_file(idx) {
        return None;
    }
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let spec = if obj.is(FLUX_OPERATOR_GROUP, "FluxInstance") {
        yaml.lookup(obj.root, &["spec"])?
    } else if obj.key.is_helm_release() && model.helm_chart(idx).as_deref() == Some("flux-instance")
    {
        yaml.lookup(obj.root, &["spec", "values", "instance"])?
    } else {
        return None;
    };
    Some((obj.file, spec))
}

pub(super) fn instance_sync(model: &Model, idx: ObjectIdx) -> Option<Sync> {
    let (file, spec) = instance_spec(model, idx)?;
    let obj = model.object(idx);
    let yaml = &model.repo.file(file).yaml;
    let sync = yaml.lookup(spec, &["sync"])?;
    let get = |k: &str| {
        yaml.lookup(sync, &[k])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let namespace = obj
        .key
        .namespace
        .as_ref()
        .map_or_else(|| "flux-system".into(), Name::to_string);
    Some(Sync {
        instance: idx,
        kind: get("kind").unwrap_or_else(|| "GitRepository".into()),
        name: get("name").unwrap_or_else(|| namespace.clone()),
        namespace,
        path: get("path").unwrap_or_default(),
        url: get("url"),
    })
}

impl Model<'_> {
    /// The chart a HelmRelease installs: `spec.chart.spec.chart`, or the last path segment of the
    /// OCIRepository (or the chart of the HelmChart) its `chartRef` names.
    pub fn helm_chart(&self, idx: ObjectIdx) -> Option<String> {
        let obj = self.object(idx);
        let yaml = &self.repo.file(obj.file).yaml;
        let scalar = |keys: &[&str]| yaml.lookup(obj.root, keys).and_then(|n| yaml.scalar(n));
        if let Some(chart) = scalar(&["spec", "chart", "spec", "chart"]) {
            return Some(chart.rsplit('/').next().unwrap_or(chart).to_string());
        }
        let kind = scalar(&["spec", "chartRef", "kind"])?;
        let name = scalar(&["spec", "chartRef", "name"])?;
        let namespace = scalar(&["spec", "chartRef", "namespace"]).or(obj.key.namespace.as_deref());
        let target = self.object(self.find_object(kind, name, namespace)?);
        let tyaml = &self.repo.file(target.file).yaml;
        let tscalar = |keys: &[&str]| {
            tyaml
                .lookup(target.root, keys)
                .and_then(|n| tyaml.scalar(n))
        };
        match kind {
            "OCIRepository" => tscalar(&["spec", "url"])
                .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
                .map(str::to_string),
            _ => tscalar(&["spec", "chart"]).map(str::to_string),
        }
    }

    /// Whether an object is a FluxInstance (raw or through the `flux-instance` chart).
    pub fn is_flux_instance(&self, idx: ObjectIdx) -> bool {
        let obj = self.object(idx);
        obj.is(FLUX_OPERATOR_GROUP, "FluxInstance")
            || (obj.key.is_helm_release()
                && self.helm_chart(idx).as_deref() == Some("flux-instance"))
    }

    /// The source a FluxInstance's sync creates (the root source it owns).
    pub fn instance_source(&self, idx: ObjectIdx) -> Option<SourceRef> {
        instance_sync(self, idx).map(|s| SourceRef {
            kind: s.kind.into(),
            name: s.name.into(),
            namespace: s.namespace.into(),
        })
    }
}

/// The file the loader generated from a ResourceSet: `None` for another object, and for a
/// ResourceSet it could not expand.
#[allow(
    clippy::option_option,
    reason = "not a ResourceSet (None) and a ResourceSet left unexpanded (Some(None)) differ"
)]
pub(super) fn resource_set_file(model: &Model, idx: ObjectIdx) -> Option<Option<FileId>> {
    let obj = model.object(idx);
    if !obj.is(FLUX_OPERATOR_GROUP, "ResourceSet") {
        return None;
    }
    let file = model.repo.file(obj.file);
    let namespace = file
        .yaml
        .lookup(obj.root, &["metadata", "namespace"])
        .and_then(|n| file.yaml.scalar(n))
        .unwrap_or("default");
    let path = crate::load::resourceset::generated_path(&file.path, namespace, &obj.key.name);
    Some(model.repo.file_id(&path))
}

/// The objects the loader generated from a ResourceSet (none for another object, or a
/// ResourceSet it could not expand).
pub(super) fn generated_by_resource_set(
    model: &Model,
    idx: ObjectIdx,
) -> std::ops::Range<ObjectIdx> {
    resource_set_file(model, idx)
        .flatten()
        .map_or(0..0, |id| model.objects_in(id))
}
