//! The move of the instance into a layer of its own: a folder that renders it alone (found on
//! its way, or made for it), the old layer no longer applying it, the new layer registered.

use std::collections::BTreeSet;

use crate::edit::{self, Changeset, TextEdit};
use crate::load::{FileId, dir_prefix, parent_of};
use crate::model::{Layer, LayerId, Model, Rendered, Renderer, Variant, display_dir};
use crate::parse::NodeId;
use crate::rules::Fix;
use crate::rules::layer_split::{
    bringing_entry, built_elsewhere, first_free, free_name, generated_cover, not_carried_patches,
    path_text, register, relative_below, remove_resource_entry,
};

use super::document::new_layer_document;
use super::meta::TRADEOFF;

/// Name of the layer the instance moves to.
const NEW_LAYER: &str = "flux-instance";

/// Move the instance into a layer of its own (the fix designed in devantler-tech/platform#3006).
pub(super) fn split_out(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    mut changes: Changeset,
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let mut folders = Vec::new();
    let mut renderer = Renderer::new(model);
    for &(variant, r) in gated {
        let vi = layer
            .variants
            .iter()
            .position(|v| std::ptr::eq(v, variant))
            .expect("a variant of this layer");
        let folder = isolate_instance(model, &mut renderer, layer_id, vi, r, &mut changes)?;
        folders.push((variant, folder));
    }
    let name = free_name(model, layer, NEW_LAYER, &[]);
    let path_text = new_layer_path(layer, &folders)?;
    let doc = new_layer_document(&file.yaml, obj.root, &name, &path_text, layer);
    register(model, layer, &[(name.clone(), doc)], &mut changes)?;
    let not_carried = not_carried_patches(model, layer, &name);
    Ok(Fix::titled(
        format!("move FluxInstance out of {}", layer.id.name),
        format!(
            "move the FluxInstance out of {} into its own Kustomization {name} (path {path_text}, dependsOn {}, wait: false){not_carried}",
            layer.id, layer.id.name
        ),
        TRADEOFF.as_str(),
        changes,
    ))
}

/// The new layer's `spec.path`: the old path and the folder's place below it when every variant
/// keeps the instance below its directory (placeholders stay), else the one folder itself.
fn new_layer_path(layer: &Layer, folders: &[(&Variant, String)]) -> Result<String, String> {
    let below: BTreeSet<Option<String>> = folders
        .iter()
        .map(|(v, folder)| relative_below(&v.dir, folder).filter(|sub| !sub.is_empty()))
        .collect();
    match (below.into_iter().collect::<Vec<_>>().as_slice(), folders) {
        ([Some(sub)], _) => Ok(format!("{}/{sub}", layer.path.trim_end_matches('/'))),
        (_, [(_, folder)]) => path_text(layer, folder),
        _ => Err(format!(
            "the instance sits in different folders per variant ({}); one path cannot cover them",
            folders
                .iter()
                .map(|(_, f)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Make sure the instance has a folder of its own, and stop the old layer from applying it;
/// returns that folder. It is the outermost folder on the way that renders the instance alone,
/// else a new one: beside the file that listed the instance, or, where Flux generated the
/// layer's kustomization and would pick up any folder below it, beside the layer's directory.
fn isolate_instance(
    model: &Model,
    renderer: &mut Renderer,
    layer_id: LayerId,
    vi: usize,
    r: &Rendered,
    changes: &mut Changeset,
) -> Result<String, String> {
    let variant = &model.layer(layer_id).variants[vi];
    // Editing a file another layer builds from would change that layer too.
    let shared = |files: &[FileId]| match built_elsewhere(
        model,
        layer_id,
        vi,
        files.iter().copied(),
    ) {
        Some((f, lid, i)) => Err(format!(
            "{} is also built by {} ({}): moving the instance out of it would change that layer too",
            model.repo.file(f).path,
            model.layer(lid).id,
            display_dir(&model.layer(lid).variants[i].dir)
        )),
        None => Ok(()),
    };
    let only_instance = |renderer: &mut Renderer, dir: &str| {
        renderer
            .render_dir(dir)
            .as_ref()
            .as_ref()
            .is_ok_and(|objs| objs.len() == 1 && objs[0].object == r.object)
    };
    for k in 1..r.chain.len() {
        let dir = parent_of(&model.repo.file(r.chain[k]).path).to_string();
        if only_instance(renderer, &dir) {
            let (file, item) = bringing_entry(model, r, k - 1)
                .ok_or("cannot find the resources entry that lists the instance")?;
            shared(&[file])?;
            remove_resource_entry(model, file, item, changes)?;
            return Ok(dir);
        }
    }
    let source = model.object(r.object).file;
    shared(&[source])?;
    if r.chain.is_empty() && variant.generated {
        let folder = beside_generated(model, &variant.dir)?;
        move_instance(model, r, &folder, None, changes)?;
        return Ok(folder);
    }
    // The instance is a file (or a document of one) listed directly: give it a folder.
    let (list_file, item) = bringing_entry(model, r, r.chain.len().saturating_sub(1))
        .ok_or("the instance is not listed by a kustomization")?;
    shared(&[list_file])?;
    let folder = format!(
        "{}{NEW_LAYER}",
        dir_prefix(parent_of(&model.repo.file(list_file).path))
    );
    if model.repo.is_dir(&folder) || model.repo.is_file(&folder) {
        return Err(format!("{folder} already exists"));
    }
    move_instance(model, r, &folder, Some((list_file, item)), changes)?;
    Ok(folder)
}

/// A new folder for the instance beside `dir`, whose kustomization Flux generates: anything
/// below `dir` would still be applied by the old layer.
fn beside_generated(model: &Model, dir: &str) -> Result<String, String> {
    if dir.is_empty() {
        return Err(
            "the layer's path is its source's root and has no kustomization file (Flux generates one): every folder of the source is applied by it".into(),
        );
    }
    let folder = first_free(&format!("{}{NEW_LAYER}", dir_prefix(parent_of(dir))), |d| {
        model.repo.is_dir(d) || model.repo.is_file(d)
    });
    if let Some(by) = generated_cover(model, &folder) {
        return Err(format!(
            "{} has no kustomization file (Flux generates one), and a new folder {folder} beside it would be picked up by the generated kustomization of {by}",
            display_dir(dir)
        ));
    }
    Ok(folder)
}

/// Move the instance's document (its whole file when it is alone there) into `folder` with a
/// kustomization listing it; `entry` is the `resources` entry that listed the file, if any.
fn move_instance(
    model: &Model,
    r: &Rendered,
    folder: &str,
    entry: Option<(FileId, NodeId)>,
    changes: &mut Changeset,
) -> Result<(), String> {
    let obj = model.object(r.object);
    let src = model.repo.file(obj.file);
    if src.error.is_some() {
        return Err(format!("{} does not parse to its end", src.path));
    }
    let name = src
        .path
        .rsplit('/')
        .next()
        .unwrap_or("flux-instance.yaml")
        .to_string();
    let eol = src.yaml.line_ending.as_str();
    let instance_text;
    if src.yaml.docs().len() == 1 {
        instance_text = format!(
            "{}{}",
            if src.yaml.bom { "\u{feff}" } else { "" },
            src.yaml.text()
        );
        changes.delete(&src.path);
        if let Some((list_file, item)) = entry {
            remove_resource_entry(model, list_file, item, changes)?;
        }
    } else {
        let (start, end) = edit::document_region(&src.yaml, obj.doc());
        let region = &src.yaml.text()[start..end];
        let body = region
            .strip_prefix("---")
            .map_or(region, |b| b.trim_start_matches(['\r', '\n']));
        instance_text = format!("---{eol}{body}");
        changes.edit(
            &src.path,
            TextEdit {
                start,
                end,
                text: String::new(),
            },
        );
    }
    changes.create(&format!("{folder}/{name}"), instance_text);
    changes.create(
        &format!("{folder}/kustomization.yaml"),
        format!("apiVersion: kustomize.config.k8s.io/v1beta1{eol}kind: Kustomization{eol}resources:{eol}  - {name}{eol}"),
    );
    Ok(())
}

/// Settings of the old layer a move cannot carry as they are: `components` (paths relative to
/// the old path, and they may patch the instance) and `patches` without a `target` (they would
/// fail in a layer that does not hold what they patch).
pub(super) fn uncarried_settings(model: &Model, layer: &Layer) -> Result<(), String> {
    let obj = model.object(layer.object.ok_or("the layer has no object to edit")?);
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let at = |n: NodeId| format!("{}:{}", file.path, yaml.line_of(yaml.node(n).span.start));
    if let Some(list) = layer.spec.components_list
        && !yaml.items(list).is_empty()
    {
        return Err(format!(
            "{}: spec.components of {} may patch the instance and name paths relative to its path; fluxmend does not carry components into the new layer",
            at(list),
            layer.id
        ));
    }
    if let Some(p) = layer.spec.patches.iter().find(|p| p.target.is_none()) {
        return Err(format!(
            "{}: a spec.patches entry without a target would fail in the new layer, which holds only the instance",
            at(p.item)
        ));
    }
    Ok(())
}
