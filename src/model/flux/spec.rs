//! The parts of a Flux Kustomization's `spec` that change *what* it applies (`namePrefix`,
//! `nameSuffix`, `components`, `patches`) and *how* (its apply context), read once with the
//! layer: the render, the rules, the gates and the rollout read them here, never from the YAML.

use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;

use crate::model::Name;
use crate::parse::{NodeId, Value, YamlFile};

/// The spec fields of a Flux Kustomization that decide how its objects are applied: where and
/// as whom they land, what is substituted and decrypted in them, what may delete them and
/// whether they are reconciled at all. `wait`, `healthChecks`, `dependsOn`, `path`, timing and
/// the name are the layer's own business, which a fix may change.
pub const APPLY_CONTEXT: &[&str] = &[
    "kubeConfig",
    "serviceAccountName",
    "postBuild",
    "decryption",
    "prune",
    "force",
    "deletionPolicy",
    "suspend",
    "healthCheckExprs",
];

/// What a layer's spec layers on the build and how it applies it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FluxSpec {
    /// `spec.namePrefix` and `spec.nameSuffix` (empty when unset).
    pub name_prefix: Name,
    pub name_suffix: Name,
    /// `spec.targetNamespace` as the file writes it; [`super::Layer::target_namespace`] is what
    /// the cluster gets once a parent's transformers had their say.
    pub written_target_namespace: Option<Name>,
    /// The `spec.components` list node, where a message about it points.
    pub components_list: Option<NodeId>,
    /// Each `spec.components` entry written as a string, with its node.
    pub components: Vec<(String, NodeId)>,
    /// `spec.ignoreMissingComponents`: a missing component is left out instead of failing.
    pub ignore_missing_components: bool,
    pub patches: Vec<SpecPatch>,
    /// `spec.commonMetadata.annotations`: every object the layer applies carries them.
    pub common_annotations: Option<NodeId>,
    /// [`APPLY_CONTEXT`]'s values in its order, normalised as Flux defaults them (an absent
    /// boolean is `false`, except `prune` of the root layer a FluxInstance creates; an absent
    /// `deletionPolicy` is `MirrorPrune`; anything else absent is null).
    /// Shared by the layers that apply alike ([`share_apply_contexts`]).
    pub apply_context: ApplyContext,
}

/// A layer's [`APPLY_CONTEXT`] values, in its order.
pub type ApplyContext = Arc<[(&'static str, Value)]>;

/// One `spec.patches` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SpecPatch {
    pub item: NodeId,
    /// `target`, as data (`None` when the entry has none: it patches what its body names).
    pub target: Option<Value>,
    /// `patch`, the body as written.
    pub body: String,
    /// `options.allowNameChange: true`.
    pub allow_name_change: bool,
}

impl FluxSpec {
    /// Read from the `spec` node of a Flux Kustomization (`None`: it has none).
    pub(super) fn read(yaml: &YamlFile, spec: Option<NodeId>) -> FluxSpec {
        let at = |keys: &[&str]| spec.and_then(|s| yaml.lookup(s, keys));
        let text = |key: &str| at(&[key]).and_then(|n| yaml.scalar(n)).map(Name::from);
        let components_list = at(&["components"]);
        let patches = at(&["patches"])
            .map_or(&[][..], |l| yaml.items(l))
            .iter()
            .map(|&item| SpecPatch {
                item,
                target: yaml
                    .lookup(item, &["target"])
                    .and_then(|t| yaml.value(t).ok()),
                body: yaml
                    .lookup(item, &["patch"])
                    .and_then(|n| yaml.scalar(n))
                    .unwrap_or_default()
                    .to_string(),
                allow_name_change: as_bool(
                    yaml,
                    yaml.lookup(item, &["options", "allowNameChange"]),
                ) == Some(true),
            })
            .collect();
        FluxSpec {
            name_prefix: text("namePrefix").unwrap_or_default(),
            name_suffix: text("nameSuffix").unwrap_or_default(),
            written_target_namespace: text("targetNamespace"),
            components_list,
            components: components_list
                .map_or(&[][..], |l| yaml.items(l))
                .iter()
                .filter_map(|&item| Some((yaml.scalar(item)?.to_string(), item)))
                .collect(),
            ignore_missing_components: as_bool(yaml, at(&["ignoreMissingComponents"]))
                .unwrap_or(false),
            patches,
            common_annotations: at(&["commonMetadata", "annotations"]),
            apply_context: apply_context(
                |field| at(&[field]).and_then(|n| yaml.value(n).ok()),
                false,
            ),
        }
    }

    /// The spec of the root Kustomization flux-operator creates for a FluxInstance's sync: it
    /// prunes, and sets nothing else that changes what or how it applies.
    pub(super) fn of_instance_sync() -> FluxSpec {
        FluxSpec {
            apply_context: apply_context(|_| None, true),
            ..FluxSpec::default()
        }
    }

    /// One [`APPLY_CONTEXT`] field's value.
    pub fn applies_with(&self, field: &str) -> &Value {
        self.apply_context
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(&Value::Null, |(_, v)| v)
    }

    /// `spec.deletionPolicy` (`MirrorPrune` when unset).
    pub fn deletion_policy(&self) -> &str {
        self.applies_with("deletionPolicy")
            .as_str()
            .unwrap_or("MirrorPrune")
    }
}

fn as_bool(yaml: &YamlFile, node: Option<NodeId>) -> Option<bool> {
    node.and_then(|n| yaml.value(n).ok())
        .and_then(|v| v.as_bool())
}

/// `written` gives a field's value as the spec writes it.
fn apply_context(written: impl Fn(&str) -> Option<Value>, prunes_by_default: bool) -> ApplyContext {
    APPLY_CONTEXT
        .iter()
        .map(|&field| {
            let value = match (field, written(field)) {
                ("prune", None) if prunes_by_default => Value::Str("true".into(), false),
                ("prune" | "force" | "suspend", None) => Value::Str("false".into(), false),
                ("deletionPolicy", None) => Value::Str("MirrorPrune".into(), false),
                (_, v) => v.unwrap_or(Value::Null),
            };
            (field, value)
        })
        .collect()
}

/// One copy of each distinct apply context, shared by every layer that has it: most layers of
/// a fleet apply alike, and each context is nine values with their texts (issue 26).
#[derive(Default)]
pub(super) struct SharedContexts(HashSet<ApplyContext>);

impl SharedContexts {
    /// Replace `context` with the copy already known, or know it.
    pub(super) fn share(&mut self, context: &mut ApplyContext) {
        match self.0.get(context) {
            Some(shared) => *context = shared.clone(),
            None => {
                self.0.insert(context.clone());
            }
        }
    }
}

/// Share the contexts of layers found apart (each walk shares its own, [`SharedContexts`]).
pub(super) fn share_apply_contexts(layers: &mut [super::layer::Layer]) {
    let mut distinct = SharedContexts::default();
    for layer in layers {
        distinct.share(&mut layer.spec.apply_context);
    }
}
