//! The new layers registered beside the old one, in its style: documents after the old one's in
//! a multi-document file, else a file each beside the old file, listed after it wherever it is.

use crate::edit::{self, Changeset, FileOp, TextEdit};
use crate::load::{dir_prefix, parent_of};
use crate::model::{Layer, Model};

use super::document::modelines;
use super::entries::resources_list;

/// Register new layers (name, document) beside the old one, in the same style: new documents
/// right after the old layer's in a multi-document file; otherwise one new file each beside the
/// old file, listed after it by every kustomization that lists the old file (none when a
/// generated kustomization picks up the folder).
pub(in crate::rules) fn register(
    model: &Model,
    layer: &Layer,
    docs: &[(String, String)],
    changes: &mut Changeset,
) -> Result<(), String> {
    let obj = model.object(layer.object.ok_or("the layer has no object to edit")?);
    let file = model.repo.file(obj.file);
    let eol = file.yaml.line_ending.as_str();
    let modeline: String = modelines(&file.yaml, obj.doc())
        .iter()
        .map(|m| format!("{m}{eol}"))
        .collect();
    if file.yaml.docs().len() > 1 {
        // New documents right after the old layer's.
        let (_, end) = edit::document_region(&file.yaml, obj.doc());
        let lead = if file.yaml.text()[..end].ends_with('\n') {
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
        let new_base = if base.contains(layer.id.name.as_str()) {
            base.replacen(layer.id.name.as_str(), name, 1)
        } else {
            format!("{name}.yaml")
        };
        let new_path = format!("{}{new_base}", dir_prefix(dir));
        if model.repo.is_file(&new_path) || changes.files.contains_key(&new_path) {
            return Err(format!("{new_path} already exists"));
        }
        let starts_with_marker = file.yaml.text().starts_with("---");
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
    let listers = model.listers_of(obj.file);
    if listers.is_empty()
        && let Some(k) = model.kustomize_dirs.get(dir)
    {
        return Err(format!(
            "{} does not list {} in resources; cannot register the new layer beside it",
            model.repo.file(k.file).path,
            base
        ));
    }
    for &(_, kfile, item) in listers {
        let kf = model.repo.file(kfile);
        let entry = model
            .kustomize_dirs
            .get(parent_of(&kf.path))
            .and_then(|k| k.resources.iter().find(|r| r.item == item))
            .map(|r| r.text(&kf.yaml))
            .ok_or("resources entry not found")?;
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
