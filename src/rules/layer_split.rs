//! Planning helpers shared by the rules that split objects out of a Flux layer into a new one
//! beside it (FM001, FM002): where an object entered a layer, removing `resources` entries,
//! free names, copying settings of the old Flux Kustomization, and registering the new one in
//! the same style as the old.

use std::collections::BTreeSet;

use crate::edit::{self, Changeset, FileOp, TextEdit};
use crate::load::{FileId, parent_of};
use crate::model::{
    KUSTOMIZATION_FILE_NAMES, Layer, LayerId, LayerRef, Model, ObjectIdx, RefTarget, Rendered,
    display_dir, join,
};
use crate::parse::{NodeId, NodeKind, YamlFile};
use crate::rollout::{PRUNE_DISABLED, prune_exempt};

use super::{Fix, Phase};

/// Spec fields of the old layer a new layer beside it copies verbatim (in the old document's
/// order): everything that decides how the moved objects are built and applied.
pub(super) const CARRIED: &[&str] = &[
    "interval",
    "retryInterval",
    "timeout",
    "sourceRef",
    "serviceAccountName",
    "kubeConfig",
    "decryption",
    "postBuild",
    "targetNamespace",
    "namePrefix",
    "nameSuffix",
    "commonMetadata",
    "patches",
    "images",
    "force",
    "deletionPolicy",
    "prune",
    "suspend",
    "healthCheckExprs",
];

/// The `resources` entry that put the object in the layer, or the document itself.
pub(super) fn entry_location(model: &Model, r: &Rendered) -> (String, usize) {
    if let Some((file, item)) = bringing_entry(model, r, 0) {
        let f = model.repo.file(file);
        return (f.path.clone(), f.yaml.line_of(f.yaml.node(item).span.start));
    }
    let obj = model.object(r.object);
    (model.repo.file(obj.file).path.clone(), obj.line)
}

/// The entry in kustomization `r.chain[k]` that leads to the object: (file, item node).
pub(super) fn bringing_entry(model: &Model, r: &Rendered, k: usize) -> Option<(FileId, NodeId)> {
    let file = *r.chain.get(k)?;
    let dir = model
        .kustomize_dirs
        .get(parent_of(&model.repo.file(file).path))?;
    let next_dir = r
        .chain
        .get(k + 1)
        .map(|&f| parent_of(&model.repo.file(f).path).to_string());
    let obj_file = &model.repo.file(model.object(r.object).file).path;
    dir.resources
        .iter()
        .find_map(|res| match (&res.target, &next_dir) {
            (RefTarget::Dir(d), Some(next)) if d == next => Some((file, res.item)),
            (RefTarget::File(p), None) if p == obj_file => Some((file, res.item)),
            _ => None,
        })
}

/// The live layer whose generated kustomization would pick up a new folder `dir` (with its own
/// kustomization file) as a directory resource.
pub(super) fn generated_cover(model: &Model, dir: &str) -> Option<LayerRef> {
    let has_kustomization = |d: &str| {
        model.kustomize_dirs.contains_key(d)
            || KUSTOMIZATION_FILE_NAMES
                .iter()
                .any(|n| join(d, n).is_some_and(|p| model.repo.is_file(&p)))
    };
    for (_, l) in model.live_layers() {
        for v in l.variants.iter().filter(|v| v.generated) {
            let Some(rel) = relative_below(&v.dir, dir).filter(|r| !r.is_empty()) else {
                continue;
            };
            // Every folder between the generated one and the new one is walked into unless it
            // has a kustomization file of its own.
            let mut walked = v.dir.clone();
            let parts: Vec<&str> = rel.split('/').collect();
            let mut reached = true;
            for part in &parts[..parts.len() - 1] {
                walked = format!("{}{part}", prefix(&walked));
                if has_kustomization(&walked) {
                    reached = false;
                    break;
                }
            }
            if reached {
                return Some(l.id.clone());
            }
        }
    }
    None
}

/// The new layer's `spec.path`: the folder relative to the source root, in the old path's style.
pub(super) fn path_text(layer: &Layer, dir: &str) -> Result<String, String> {
    let root = layer.source_root.as_deref().unwrap_or("");
    let rel = relative_below(root, dir)
        .ok_or_else(|| format!("{dir} is outside the source root {}", display_dir(root)))?;
    Ok(if layer.path.starts_with("./") || rel.is_empty() {
        format!("./{rel}")
    } else {
        rel
    })
}

/// Another live layer than variant `vi` of `layer_id` (or the same layer object modelled for
/// another cluster) builds from one of `files`: editing or moving them would change it too.
/// Returns the file and that layer's variant, for the caller's message.
pub(super) fn built_elsewhere(
    model: &Model,
    layer_id: LayerId,
    vi: usize,
    files: impl IntoIterator<Item = FileId>,
) -> Option<(FileId, LayerId, usize)> {
    let layer = model.layer(layer_id);
    let dir = &layer.variants[vi].dir;
    for f in files {
        for &(lid, i) in model.users_of_file(f) {
            let l = model.layer(lid);
            let same = (lid == layer_id && i == vi)
                || (l.object == layer.object && l.variants[i].dir == *dir);
            if !same {
                return Some((f, lid, i));
            }
        }
    }
    None
}

/// Remove the entries `items` of the list under `spec.KEY` of the object at `root`; when none
/// would be left, the whole key goes (never an empty `KEY: []` left behind).
pub(super) fn drop_spec_entries(
    yaml: &YamlFile,
    root: NodeId,
    key: &str,
    items: &BTreeSet<NodeId>,
    path: &str,
    changes: &mut Changeset,
) -> Result<(), String> {
    if items.is_empty() {
        return Ok(());
    }
    let spec = yaml.lookup(root, &["spec"]).ok_or("spec not found")?;
    let (key_node, list) = yaml
        .entry(spec, key)
        .ok_or_else(|| format!("{key} not found"))?;
    if items.len() == yaml.items(list).len() {
        let e = edit::remove_entry(yaml, spec, key_node).map_err(|e| format!("{path}: {e}"))?;
        changes.edit(path, e);
        Ok(())
    } else {
        remove_items(yaml, list, items, path, changes)
    }
}

/// Remove items of a sequence; when every item goes, the list is emptied (`[]`).
pub(super) fn remove_items(
    yaml: &YamlFile,
    list: NodeId,
    items: &BTreeSet<NodeId>,
    path: &str,
    changes: &mut Changeset,
) -> Result<(), String> {
    if !items.is_empty() && items.len() == yaml.items(list).len() {
        // Every entry goes: the list is emptied (`key: []`) in one edit.
        let e = edit::clear_sequence(yaml, list).map_err(|e| e.to_string())?;
        changes.edit(path, e);
        return Ok(());
    }
    for &item in items {
        changes.edit(
            path,
            edit::remove_item(yaml, list, item).map_err(|e| e.to_string())?,
        );
    }
    Ok(())
}

/// The `resources` (or `bases`) list of the kustomization in `file` that holds `item`.
pub(super) fn resources_list(model: &Model, file: FileId, item: NodeId) -> Option<NodeId> {
    let f = model.repo.file(file);
    let k = model.kustomize_dirs.get(parent_of(&f.path))?;
    ["resources", "bases"].iter().find_map(|key| {
        f.yaml
            .lookup(k.root, &[key])
            .filter(|&l| f.yaml.items(l).contains(&item))
    })
}

/// Remove one `resources` entry of a kustomization file.
pub(super) fn remove_resource_entry(
    model: &Model,
    file: FileId,
    item: NodeId,
    changes: &mut Changeset,
) -> Result<(), String> {
    let f = model.repo.file(file);
    if f.error.is_some() {
        return Err(format!("{} does not parse to its end", f.path));
    }
    if !model.kustomize_dirs.contains_key(parent_of(&f.path)) {
        return Err(format!("{} is not a kustomization", f.path));
    }
    let list = resources_list(model, file, item).ok_or("entry not found in resources")?;
    changes.edit(
        &f.path,
        edit::remove_item(&f.yaml, list, item).map_err(|e| e.to_string())?,
    );
    Ok(())
}

/// `dir` relative to `base` when it is `base` or below it.
pub(super) fn relative_below(base: &str, dir: &str) -> Option<String> {
    if base.is_empty() {
        return Some(dir.to_string());
    }
    if dir == base {
        return Some(String::new());
    }
    dir.strip_prefix(base)?
        .strip_prefix('/')
        .map(str::to_string)
}

/// `dir/`, or nothing for the root.
pub(super) fn prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

/// `base`, or `base-2`, … when a layer of that name exists in the layer's namespace (or the
/// plan already uses it).
pub(super) fn free_name(model: &Model, layer: &Layer, base: &str, planned: &[String]) -> String {
    first_free(base, |n| {
        planned.iter().any(|p| p == n)
            || model.layers.iter().any(|l| {
                l.cluster == layer.cluster && l.id.namespace == layer.id.namespace && l.id.name == n
            })
    })
}

/// The one way a new name is chosen: `base` when it is free, else `base-2`, `base-3`, …
pub(super) fn first_free(base: &str, taken: impl Fn(&str) -> bool) -> String {
    std::iter::once(base.to_string())
        .chain((2..).map(|i| format!("{base}-{i}")))
        .find(|n| !taken(n))
        .expect("an unbounded sequence has a free name")
}

/// The indentation of the entries of the layer document's `spec` mapping.
pub(super) fn spec_indent(yaml: &YamlFile, root: NodeId) -> String {
    yaml.lookup(root, &["spec"])
        .and_then(|s| match yaml.node(s).kind {
            NodeKind::Mapping {
                entries,
                flow: false,
            } => entries.first().map(|&(k, _)| {
                let start = yaml.node(k).span.start;
                " ".repeat(start - yaml.line_start(start))
            }),
            _ => None,
        })
        .unwrap_or_else(|| "  ".into())
}

/// The text of one `key: value` entry, from its key to the end of its value, with aliases to
/// anchors outside it resolved (the copy lands in another document).
pub(super) fn entry_text(yaml: &YamlFile, key: NodeId, value: NodeId) -> String {
    let start = yaml.node(key).span.start;
    let end = yaml.node(value).span.end.max(yaml.node(key).span.end);
    edit::resolved_text(yaml, start, end).replace("\r\n", "\n")
}

/// Copy `key: value` of a mapping verbatim (its lines keep their original indentation, which is
/// the new document's too): the first line is prefixed with `indent`.
pub(super) fn copy_entry(
    yaml: &YamlFile,
    map: Option<NodeId>,
    key: &str,
    indent: &str,
    line: &mut impl FnMut(&str),
) {
    let Some((k, v)) = map.and_then(|s| yaml.entry(s, key)) else {
        return;
    };
    copy_entry_nodes(yaml, k, v, indent, line);
}

/// [`copy_entry`] for an entry already found.
pub(super) fn copy_entry_nodes(
    yaml: &YamlFile,
    k: NodeId,
    v: NodeId,
    indent: &str,
    line: &mut impl FnMut(&str),
) {
    let body = entry_text(yaml, k, v);
    let mut lines = body.split('\n');
    if let Some(first) = lines.next() {
        line(&format!("{indent}{first}"));
    }
    for l in lines {
        line(l);
    }
}

/// `# yaml-language-server:` modelines of a document's preamble (between its `---` and its
/// content): a new document beside it gets them too.
pub(super) fn modelines(yaml: &YamlFile, doc: usize) -> Vec<String> {
    let Some(d) = yaml.docs.get(doc) else {
        return Vec::new();
    };
    let content = yaml.node(d.root).span.start;
    let start = d.region.start.min(content);
    yaml.text[start..content]
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.trim_start().starts_with("# yaml-language-server:"))
        .map(str::to_string)
        .collect()
}

/// Register new layers (name, document) beside the old one, in the same style: new documents
/// right after the old layer's in a multi-document file; otherwise one new file each beside the
/// old file, listed after it by every kustomization that lists the old file (none when a
/// generated kustomization picks up the folder).
pub(super) fn register(
    model: &Model,
    layer: &Layer,
    docs: &[(String, String)],
    changes: &mut Changeset,
) -> Result<(), String> {
    let obj = model.object(layer.object.ok_or("the layer has no object to edit")?);
    let file = model.repo.file(obj.file);
    let eol = file.yaml.line_ending.as_str();
    let modeline: String = modelines(&file.yaml, obj.doc)
        .iter()
        .map(|m| format!("{m}{eol}"))
        .collect();
    if file.yaml.docs.len() > 1 {
        // New documents right after the old layer's.
        let (_, end) = edit::document_region(&file.yaml, obj.doc);
        let lead = if file.yaml.text[..end].ends_with('\n') {
            ""
        } else {
            eol
        };
        let text: String = docs
            .iter()
            .map(|(_, doc)| format!("---{eol}{modeline}{doc}"))
            .collect();
        changes.edit(
            &file.path,
            TextEdit {
                start: end,
                end,
                text: format!("{lead}{text}"),
            },
        );
        return Ok(());
    }
    let dir = parent_of(&file.path);
    let base = file.path.rsplit('/').next().unwrap_or("");
    let mut new_bases = Vec::new();
    for (name, doc) in docs {
        let new_base = if base.contains(&layer.id.name) {
            base.replacen(&layer.id.name, name, 1)
        } else {
            format!("{name}.yaml")
        };
        let new_path = format!("{}{new_base}", prefix(dir));
        if model.repo.is_file(&new_path) || changes.files.contains_key(&new_path) {
            return Err(format!("{new_path} already exists"));
        }
        let starts_with_marker = file.yaml.text.starts_with("---");
        changes.create(
            &new_path,
            format!(
                "{}{modeline}{doc}",
                if starts_with_marker {
                    format!("---{eol}")
                } else {
                    String::new()
                }
            ),
        );
        new_bases.push(new_base);
    }
    // Every kustomization that lists the old file — its own folder's, or one above that names it
    // by a longer path (`./forgejo/ks.yaml`) — lists the new ones right after it, in the same
    // style: the parent that applies the old layer applies the new one.
    let mut listers: Vec<(FileId, NodeId, &str)> = model
        .kustomize_dirs
        .values()
        .flat_map(|k| {
            k.resources
                .iter()
                .filter(|r| r.target == RefTarget::File(file.path.clone()))
                .map(move |r| (k.file, r.item, r.text.as_str()))
        })
        .collect();
    listers.sort_unstable();
    if listers.is_empty()
        && let Some(k) = model.kustomize_dirs.get(dir)
    {
        return Err(format!(
            "{} does not list {} in resources; cannot register the new layer beside it",
            model.repo.file(k.file).path,
            base
        ));
    }
    for (kfile, item, entry) in listers {
        let kf = model.repo.file(kfile);
        let list = resources_list(model, kfile, item).ok_or("resources list not found")?;
        let mut insert: Option<TextEdit> = None;
        for new_base in &new_bases {
            let text = match entry.rsplit_once('/') {
                Some((head, _)) => format!("{head}/{new_base}"),
                None => new_base.clone(),
            };
            let e = edit::insert_item(&kf.yaml, list, Some(item), &edit::scalar_text(&text))
                .map_err(|e| e.to_string())?;
            match &mut insert {
                Some(acc) => acc.text.push_str(e.text.trim_start_matches(['\r', '\n'])),
                None => insert = Some(e),
            }
        }
        if matches!(
            changes.files.get(&kf.path),
            Some(FileOp::Create(_) | FileOp::Delete)
        ) {
            return Err(format!("{} is already replaced by this fix", kf.path));
        }
        if let Some(e) = insert {
            changes.edit(&kf.path, e);
        }
    }
    Ok(())
}

/// The head of a new Flux Kustomization written beside the one at `root`: its `apiVersion`,
/// `kind`, `metadata` (the new name, the old namespace when it was written, and the old layer
/// object's own `labels` and `annotations` copied verbatim) and `spec:` with a comment line
/// saying why the layer exists — in the old document's indentation.
pub(super) fn layer_document_head(
    yaml: &YamlFile,
    root: NodeId,
    name: &str,
    why: &str,
    line: &mut impl FnMut(&str),
) {
    let indent = spec_indent(yaml, root);
    let api = yaml
        .lookup(root, &["apiVersion"])
        .and_then(|n| yaml.scalar(n))
        .unwrap_or("kustomize.toolkit.fluxcd.io/v1");
    line(&format!("apiVersion: {api}"));
    line("kind: Kustomization");
    line("metadata:");
    line(&format!("{indent}name: {}", edit::scalar_text(name)));
    if let Some(ns) = yaml
        .lookup(root, &["metadata", "namespace"])
        .and_then(|n| yaml.scalar(n))
    {
        line(&format!("{indent}namespace: {}", edit::scalar_text(ns)));
    }
    // Copied lines keep their own indentation, so the first gets its key's column.
    let metadata = yaml.lookup(root, &["metadata"]);
    for key in ["labels", "annotations"] {
        if let Some((k, v)) = metadata.and_then(|m| yaml.entry(m, key)) {
            let start = yaml.node(k).span.start;
            let column = " ".repeat(start - yaml.line_start(start));
            copy_entry_nodes(yaml, k, v, &column, line);
        }
    }
    line("spec:");
    line(&format!("{indent}{why}"));
}

/// Annotate objects `kustomize.toolkit.fluxcd.io/prune: disabled` where they are defined: the
/// first phase of a move off a layer that prunes (kustomize-controller skips the annotated object
/// when it leaves the old layer's inventory, so the new layer takes it over instead of
/// recreating it). Refused for what cannot carry the annotation in its own document: generated
/// objects and SOPS-encrypted files (the annotation would break the file's MAC).
pub(super) fn protect_in_place(
    model: &Model,
    objects: &[ObjectIdx],
    changes: &mut Changeset,
) -> Result<(), String> {
    let (key, value) = PRUNE_DISABLED;
    for &idx in objects {
        let obj = model.object(idx);
        let file = model.repo.file(obj.file);
        let what = format!("{} {}", obj.key.kind, obj.key);
        if obj.encrypted {
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
    let first = yaml.entries(metadata).first().map(|&(k, _)| column(k));
    match (key, first) {
        (Some(k), Some(f)) if f > k => " ".repeat(f - k),
        _ => "  ".into(),
    }
}

/// The objects of a move off `layer` that its prune would delete before their new layer applies
/// them: everything moved, unless the layer does not prune, the object is already exempt, or
/// `may_restart` accepts its re-creation.
pub(super) fn needs_protection<'m>(
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
pub(super) fn protect_first(
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
pub(super) fn second_phase(fix: &mut Fix, layer: &Layer, stays: &str) {
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

/// The patches of the kustomizations that bring the old layer object into its parent and edit
/// it by name (a cluster overlay's `timeout`, say): an inline `patches` entry whose target is
/// that Kustomization, or a patch file (`patches` path, `patchesStrategicMerge`) holding a
/// Kustomization of that name. They do not reach the new layer, and whether they should is the
/// overlay author's call. As `file:line`.
fn patches_by_name(model: &Model, layer: &Layer) -> Vec<String> {
    let (Some(obj), Some(parent)) = (layer.object, layer.applied_by) else {
        return Vec::new();
    };
    let name = layer.id.name.as_str();
    let mut out: Vec<String> = model
        .layer(parent)
        .inventory()
        .filter(|(_, r)| r.object == obj)
        .flat_map(|(_, r)| model.patches_on_the_way(r))
        .filter(|p| {
            p.selector().is_some_and(|s| {
                s.kind.as_deref().is_none_or(|k| k == "Kustomization")
                    && s.name.as_deref() == Some(name)
            })
        })
        .map(|p| format!("{}:{}", p.entry.0, p.entry.1))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// For a move's description: the patches of the old layer by name that the new layer `name`
/// does not get, or nothing.
pub(super) fn not_carried_patches(model: &Model, layer: &Layer, name: &str) -> String {
    let patches = patches_by_name(model, layer);
    if patches.is_empty() {
        return String::new();
    }
    format!(
        "; not carried: the patch{} at {} of {} by name (review whether {name} needs the same)",
        if patches.len() == 1 { "" } else { "es" },
        patches.join(", "),
        layer.id
    )
}
