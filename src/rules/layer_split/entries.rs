//! The entries a move finds and removes: the `resources` entry that brought an object into a
//! layer, the entries of a list in a layer's `spec`, the items of a sequence.

use std::collections::BTreeSet;

use crate::edit::{self, Changeset};
use crate::load::{FileId, parent_of};
use crate::model::{Model, RefTarget, Rendered};
use crate::parse::{NodeId, YamlFile};

/// The `resources` entry that put the object in the layer, or the document itself.
pub(in crate::rules) fn entry_location(model: &Model, r: &Rendered) -> (String, usize) {
    if let Some((file, item)) = bringing_entry(model, r, 0) {
        let f = model.repo.file(file);
        return (f.path.clone(), f.yaml.line_of(f.yaml.node(item).span.start));
    }
    let obj = model.object(r.object);
    (model.repo.file(obj.file).path.clone(), obj.line())
}

/// The entry in kustomization `r.chain[k]` that leads to the object: (file, item node).
pub(in crate::rules) fn bringing_entry(
    model: &Model,
    r: &Rendered,
    k: usize,
) -> Option<(FileId, NodeId)> {
    let file = *r.chain.get(k)?;
    let dir = model
        .kustomize_dirs
        .get(parent_of(&model.repo.file(file).path))?;
    let next_dir = r
        .chain
        .get(k + 1)
        .map(|&f| parent_of(&model.repo.file(f).path).to_string());
    let obj_file = model.object(r.object).file;
    dir.resources
        .iter()
        .find_map(|res| match (&res.target, &next_dir) {
            (RefTarget::Dir(d), Some(next)) if d == next => Some((file, res.item)),
            (RefTarget::File(f), None) if *f == obj_file => Some((file, res.item)),
            _ => None,
        })
}

/// Remove the entries `items` of the list under `spec.KEY` of the object at `root`; when none
/// would be left, the whole key goes (never an empty `KEY: []` left behind).
pub(in crate::rules) fn drop_spec_entries(
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
pub(in crate::rules) fn remove_items(
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
pub(in crate::rules) fn resources_list(
    model: &Model,
    file: FileId,
    item: NodeId,
) -> Option<NodeId> {
    let f = model.repo.file(file);
    let k = model.kustomize_dirs.get(parent_of(&f.path))?;
    ["resources", "bases"].iter().find_map(|key| {
        f.yaml
            .lookup(k.root, &[key])
            .filter(|&l| f.yaml.items(l).contains(&item))
    })
}

/// Remove one `resources` entry of a kustomization file.
pub(in crate::rules) fn remove_resource_entry(
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
