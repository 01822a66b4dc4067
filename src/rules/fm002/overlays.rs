//! What the old Flux Kustomization's spec layers on top of the build, as far as an FM002 split
//! cares: a name prefix or suffix, a target namespace, and patches and components that the
//! new layer would not repeat.

use crate::model::{Layer, Model, join};

use super::touches::only_resources;

/// What the old layer's spec layers on top of the build, as far as a split cares.
pub(super) struct FluxOverlays {
    /// `spec.namePrefix` or `spec.nameSuffix` is set.
    pub(super) prefix_or_suffix: bool,
    /// `spec.targetNamespace`.
    pub(super) target_namespace: Option<String>,
}

/// The old layer's overlays; an error when its `spec.patches` or `spec.components` may change
/// the moved objects in a way the new layer would not repeat.
pub(super) fn flux_overlays(model: &Model, layer: &Layer) -> Result<FluxOverlays, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let spec = &layer.spec;
    if let Some(p) = spec.patches.iter().find(|p| p.target.is_none()) {
        return Err(format!(
            "{}:{}: a spec.patches entry without a target would fail in the layer that no longer holds its object",
            file.path,
            yaml.line_of(yaml.node(p.item).span.start)
        ));
    }
    if let Some(list) = spec.components_list {
        let dir = layer.variants.first().map_or("", |v| v.dir.as_str());
        for &item in yaml.items(list) {
            let text = yaml.scalar(item).unwrap_or_default();
            let comp = join(dir, text).and_then(|d| model.kustomize_dirs.get(d.as_str()));
            match comp {
                Some(c) if only_resources(model, c.file) => {}
                _ => {
                    return Err(format!(
                        "{}:{}: component `{text}` may change the moved objects; fluxmend does not carry components over",
                        file.path,
                        yaml.line_of(yaml.node(item).span.start)
                    ));
                }
            }
        }
    }
    Ok(FluxOverlays {
        prefix_or_suffix: !spec.name_prefix.is_empty() || !spec.name_suffix.is_empty(),
        target_namespace: spec
            .written_target_namespace
            .as_deref()
            .filter(|ns| !ns.is_empty())
            .map(str::to_string),
    })
}
