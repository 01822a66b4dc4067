//! Whether a patch may set a layer's `wait` or `healthChecks` on the way its Flux Kustomization
//! is rendered: then its document does not say what Flux runs, and FM005 neither reports nor
//! edits it.

use crate::model::patch::{Labels, PatchBody, Selection, fields_overlap};
use crate::model::{Layer, Model};
use crate::parse::Value;

/// Whether a patch on the way this layer's Flux Kustomization is rendered (a kustomize patch in
/// its parent's build, or the parent's `spec.patches`) may set its `wait` or `healthChecks`:
/// the document then does not say what Flux runs, and the rule stays silent. A patch that does
/// not parse, or whose target the model cannot decide, may.
pub(super) fn patched(model: &Model, layer: &Layer) -> bool {
    let (Some(object), Some(parent)) = (layer.object, layer.applied_by) else {
        return false;
    };
    let obj = model.object(object);
    let key = &obj.key;
    let metadata = |field: &str| -> Labels {
        let yaml = &model.repo.file(obj.file).yaml;
        let Some(Value::Map(entries)) = yaml
            .lookup(obj.root, &["metadata", field])
            .and_then(|n| yaml.value(n).ok())
        else {
            return Labels::new();
        };
        entries
            .into_iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str().map(str::to_string))))
            .collect()
    };
    let (labels, annotations) = (metadata("labels"), metadata("annotations"));
    let parent = model.layer(parent);
    let patches = parent
        .inventory()
        .filter(|(_, r)| r.object == object)
        .flat_map(|(_, r)| model.patches_on_the_way(r))
        .chain(model.layer_patches(parent));
    let gate: [&[String]; 2] = [
        &["spec".to_string(), "wait".to_string()],
        &["spec".to_string(), "healthChecks".to_string()],
    ];
    patches.into_iter().any(|p| {
        let Ok(body) = PatchBody::parse(&p.body) else {
            return true;
        };
        let selects = p
            .selector()
            .is_none_or(|s| s.selects(key, &labels, &annotations) != Selection::No);
        selects
            && body
                .fields()
                .iter()
                .any(|f| gate.iter().any(|g| fields_overlap(f, g)))
    })
}
