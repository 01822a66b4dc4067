//! The two phases of a move off a layer that prunes: first the objects are annotated
//! `prune: disabled` where they are defined, then the move, once the cluster runs phase 1.

use crate::edit::{self, Changeset};
use crate::model::{Layer, Model, ObjectIdx, Rendered};
use crate::model::{PRUNE_DISABLED, prune_exempt};
use crate::parse::{NodeId, NodeKind, YamlFile};
use crate::rules::{Fix, Phase};

/// Annotate objects `kustomize.toolkit.fluxcd.io/prune: disabled` where they are defined: the
/// first phase of a move off a layer that prunes (kustomize-controller skips the annotated object
/// when it leaves the old layer's inventory, so the new layer takes it over instead of
/// recreating it). Refused for what cannot carry the annotation in its own document: generated
/// objects and SOPS-encrypted files (the annotation would break the file's MAC).
fn protect_in_place(
    model: &Model,
    objects: &[ObjectIdx],
    changes: &mut Changeset,
) -> Result<(), String> {
    let (key, value) = PRUNE_DISABLED;
    for &idx in objects {
        let obj = model.object(idx);
        let file = model.repo.file(obj.file);
        let what = format!("{} {}", obj.key.kind, obj.key);
        if obj.encrypted() {
            return Err(format!(
                "{what} is SOPS-encrypted in {}: adding an annotation would break its MAC; annotate it {key}: {value} yourself (sops edit), then run fix again",
                file.path
            ));
        }
        if file.error.is_some() {
            return Err(format!("{} does not parse to its end", file.path));
        }
        let yaml = &file.yaml;
        let metadata = yaml
            .lookup(obj.root, &["metadata"])
            .filter(|&m| matches!(yaml.node(m).kind, NodeKind::Mapping { .. }))
            .ok_or_else(|| {
                format!(
                    "{what} has no metadata mapping of its own in {} (generated?)",
                    file.path
                )
            })?;
        let edit = match yaml.entry(metadata, "annotations") {
            Some((_, annotations)) => match yaml.entry(annotations, key) {
                Some((_, v)) => edit::replace_node(yaml, v, value),
                None => edit::insert_entry(yaml, annotations, &[format!("{key}: {value}")])
                    .map_err(|e| format!("{}: annotations of {what}: {e}", file.path))?,
            },
            None => {
                let step = nested_indent(yaml, obj.root, metadata);
                edit::insert_entry(
                    yaml,
                    metadata,
                    &["annotations:".to_string(), format!("{step}{key}: {value}")],
                )
                .map_err(|e| format!("{}: metadata of {what}: {e}", file.path))?
            }
        };
        changes.edit(&file.path, edit);
    }
    Ok(())
}

/// The indentation step of a document: how far `metadata`'s entries sit right of its key.
fn nested_indent(yaml: &YamlFile, root: NodeId, metadata: NodeId) -> String {
    let column = |n: NodeId| {
        let start = yaml.node(n).span.start;
        start - yaml.line_start(start)
    };
    let key = yaml.entry(root, "metadata").map(|(k, _)| column(k));
    let first = yaml.entries(metadata).first().map(|(k, _)| column(k));
    match (key, first) {
        (Some(k), Some(f)) if f > k => " ".repeat(f - k),
        _ => "  ".into(),
    }
}

/// The objects of a move off `layer` that its prune would delete before their new layer applies
/// them: everything moved, unless the layer does not prune, the object is already exempt, or
/// `may_restart` accepts its re-creation.
pub(in crate::rules) fn needs_protection<'m>(
    model: &Model,
    layer: &Layer,
    moved: impl IntoIterator<Item = &'m Rendered>,
    may_restart: impl Fn(&Rendered) -> bool,
) -> Vec<&'m Rendered> {
    if !layer.prune {
        return Vec::new();
    }
    moved
        .into_iter()
        .filter(|r| !may_restart(r) && !prune_exempt(model, layer, r))
        .collect()
}

/// Phase 1 of 2 of a move off a pruning layer: annotate `objects` `prune: disabled` where they
/// are. `why` says what deleting them would cost; `stays` what remains after phase 2.
pub(in crate::rules) fn protect_first(
    model: &Model,
    layer: &Layer,
    objects: &[&Rendered],
    why: &str,
    tradeoff: &'static str,
    stays: &str,
) -> Result<Fix, String> {
    let mut changes = Changeset::default();
    let mut idx: Vec<ObjectIdx> = objects.iter().map(|r| r.object).collect();
    idx.sort_unstable();
    idx.dedup();
    protect_in_place(model, &idx, &mut changes)?;
    let mut keys: Vec<String> = objects.iter().map(|r| r.key.to_string()).collect();
    keys.sort();
    keys.dedup();
    let what = match keys.as_slice() {
        [one] => one.split('/').next().unwrap_or(one).to_string(),
        many => format!("{} objects", many.len()),
    };
    let mut fix = Fix::titled(
        format!("protect {what} from the prune of {}", layer.id.name),
        format!(
            "phase 1 of 2: annotate {} {}: {} where {}, so that {} (prune: true) does not delete {} when the next phase moves {} into a layer of its own — {why}",
            keys.join(", "),
            PRUNE_DISABLED.0,
            PRUNE_DISABLED.1,
            if keys.len() == 1 { "it is" } else { "they are" },
            layer.id,
            if keys.len() == 1 { "it" } else { "them" },
            if keys.len() == 1 { "it" } else { "them" },
        ),
        tradeoff,
        changes,
    );
    fix.phase = Some(Phase {
        phase: 1,
        phases: 2,
        confirm: format!(
            "{} has applied this revision (`flux get kustomizations -n {} {}` shows it as the last applied revision) and the live objects carry the annotation; then run `fluxmend fix` again for phase 2, the move",
            layer.id, layer.id.namespace, layer.id.name
        ),
        stays: stays.to_string(),
    });
    fix.protects = objects.iter().map(|r| r.key.clone()).collect();
    Ok(fix)
}

/// Mark a move off a pruning layer as phase 2 of 2: it is safe only once the cluster runs the
/// protection of phase 1.
pub(in crate::rules) fn second_phase(fix: &mut Fix, layer: &Layer, stays: &str) {
    fix.description = format!("phase 2 of 2: {}", fix.description);
    fix.phase = Some(Phase {
        phase: 2,
        phases: 2,
        confirm: format!(
            "merge this only once {} has applied the revision in which the moved objects carry {}: {} (phase 1)",
            layer.id, PRUNE_DISABLED.0, PRUNE_DISABLED.1
        ),
        stays: stays.to_string(),
    });
}
