//! What a layer applies from one directory: its kustomization, or the one Flux generates, with
//! the layer's `spec.components` appended and its overlays (`targetNamespace`, `namePrefix`,
//! `nameSuffix`, renaming `spec.patches`) layered on top; and what on the way the model does
//! not follow.

use std::sync::Arc;

use rustc_hash::FxHashSet as HashSet;

use crate::load::{FileId, parent_of};
use crate::model::kustomize::{
    Chain, KUSTOMIZATION_FILE_NAMES, RefTarget, Rendered, Renderer, ResourceRef, Transform,
    apply_renames, check_unique, display_dir,
};
use crate::model::{Model, join};
use crate::parse::Value;

use super::layer::Layer;

/// kustomize fields that can rename, re-namespace or add objects in ways the model does not
/// follow (`transformers:` and `replacements:` entries are read one by one: only those whose
/// effect is unknown are unmodelled).
const UNMODELLED_FIELDS: &[&str] = &["helmCharts"];

/// The [`UNMODELLED_FIELDS`] and the transformers of unknown effect of the kustomization files
/// a variant's build reads.
pub(super) fn unmodelled_fields(model: &Model, dir: &str, inventory: &[Rendered]) -> Vec<String> {
    let mut files: Vec<FileId> = model
        .kustomize_dirs
        .get(dir)
        .map(|k| k.file)
        .into_iter()
        .chain(inventory.iter().flat_map(|r| r.chain.iter().copied()))
        .collect();
    files.sort_unstable();
    files.dedup();
    let mut out = Vec::new();
    for file in files {
        let source = model.repo.file(file);
        let Some(k) = model.kustomize_dirs.get(parent_of(&source.path)) else {
            continue;
        };
        if k.file != file {
            continue;
        }
        for field in UNMODELLED_FIELDS {
            if source.yaml.lookup(k.root, &[field]).is_some() {
                out.push(format!("`{field}` in {}", source.path));
            }
        }
        out.extend(k.transformers().unknown.iter().cloned());
    }
    out
}

/// The [`UNMODELLED_FIELDS`] and unknown transformers of every kustomization a build of `dir`
/// may read (resources and components, recursively): what a failed build, whose inventory is
/// empty, may have depended on.
pub(super) fn unmodelled_below(model: &Model, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::default();
    let mut stack = vec![dir.to_string()];
    while let Some(dir) = stack.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Some(k) = model.kustomize_dirs.get(dir.as_str()) else {
            continue;
        };
        let source = model.repo.file(k.file);
        for field in UNMODELLED_FIELDS {
            if source.yaml.lookup(k.root, &[field]).is_some() {
                out.push(format!("`{field}` in {}", source.path));
            }
        }
        out.extend(k.transformers().unknown.iter().cloned());
        for r in k.resources.iter().chain(&k.components) {
            if let RefTarget::Dir(d) = &r.target {
                stack.push(d.to_string());
            }
        }
    }
    out
}

impl Model<'_> {
    /// A Flux Kustomization's `spec.components`, resolved against the directory `dir` of one of
    /// its variants. Flux appends them to the kustomization at the path (fluxcd/pkg
    /// `kustomize/kustomize_generator.go`); with `ignoreMissingComponents` a missing one is
    /// left out, otherwise it fails the build.
    pub fn flux_components(&self, layer: &Layer, dir: &str) -> Result<Vec<ResourceRef>, String> {
        let ignore_missing = layer.spec.ignore_missing_components;
        let mut out = Vec::new();
        for (text, item) in &layer.spec.components {
            let target = match join(dir, text) {
                Some(p) if self.repo.is_dir(&p) => RefTarget::Dir(p.into()),
                Some(_) if ignore_missing => continue,
                Some(p) if self.repo.is_file(&p) => {
                    return Err(format!("component `{text}` is not a directory"));
                }
                _ => return Err(format!("component `{text}` does not exist")),
            };
            out.push(ResourceRef {
                item: *item,
                target,
            });
        }
        Ok(out)
    }
}

/// Render what Flux applies from `dir`: its kustomization, or the one Flux generates, with the
/// layer's `spec.components` appended.
pub(super) fn render_layer_dir(
    renderer: &mut Renderer,
    layer: &Layer,
    dir: &str,
) -> (bool, Result<Vec<Rendered>, String>) {
    let model = renderer.model;
    let components = match model.flux_components(layer, dir) {
        Ok(c) => c,
        Err(e) => return (!has_kustomization_file(model, dir), Err(e)),
    };
    if has_kustomization_file(model, dir) {
        // Flux generates only when there is no kustomization file; an unusable one fails.
        return (false, renderer.render_dir_with(dir, &components));
    }
    let generated = generate(renderer, dir).and_then(|mut out| {
        for c in &components {
            renderer.add_component(c, None, &mut out)?;
        }
        Ok(out)
    });
    (true, generated)
}

/// Whether `dir` holds a file kustomize takes as its kustomization (usable or not).
fn has_kustomization_file(model: &Model, dir: &str) -> bool {
    model.kustomize_dirs.contains_key(dir)
        || KUSTOMIZATION_FILE_NAMES
            .iter()
            .any(|name| join(dir, name).is_some_and(|p| model.repo.is_file(&p)))
}

/// Flux's generated kustomization: every `.yaml`/`.yml` below `dir`, recursively; a subdirectory
/// with its own kustomization file is a directory resource and is not descended into.
fn generate(renderer: &mut Renderer, dir: &str) -> Result<Vec<Rendered>, String> {
    let model = renderer.model;
    let mut out = Vec::new();
    // Flux decodes every YAML file it lists; one it cannot decode fails the whole layer.
    if let Some(skipped) = model.repo.skipped_yaml_in(dir).next() {
        return Err(format!(
            "Flux cannot generate a kustomization for {}: {skipped} is not plain Kubernetes YAML",
            display_dir(dir)
        ));
    }
    // Brought in by no kustomization file: one empty chain for all.
    let no_chain: Chain = Arc::from([]);
    for file in model.repo.files_in(dir) {
        let source = model.repo.file(file);
        if let Some(e) = &source.error {
            return Err(format!(
                "Flux cannot generate a kustomization for {}: {} does not parse ({}:{}: {})",
                display_dir(dir),
                source.path,
                e.line,
                e.column,
                e.message
            ));
        }
        let objects = model.objects_in(file);
        let non_object = source.yaml.docs().iter().enumerate().find(|(idx, d)| {
            let empty = matches!(source.yaml.value(d.root), Ok(Value::Null));
            !empty && !objects.clone().any(|o| model.object(o).doc() == *idx)
        });
        if let Some((_, doc)) = non_object {
            return Err(format!(
                "Flux cannot generate a kustomization for {}: {}:{} is a document that is not a Kubernetes object",
                display_dir(dir),
                source.path,
                source.yaml.line_of(source.yaml.node(doc.root).span.start)
            ));
        }
        out.extend(renderer.file_objects(file, &no_chain));
    }
    for sub in model
        .repo
        .subdirs(dir)
        .map(str::to_string)
        .collect::<Vec<_>>()
    {
        if has_kustomization_file(model, &sub) {
            out.extend(renderer.render_dir_owned(&sub)?);
        } else {
            out.extend(generate(renderer, &sub)?);
        }
    }
    Ok(out)
}

/// What Flux layers on top of the build (its `spec.components` are part of it):
/// `targetNamespace`, `namePrefix`, `nameSuffix`.
pub(super) fn flux_overlays(
    model: &Model,
    layer: &Layer,
    inventory: &mut [Rendered],
) -> Result<(), String> {
    // Its spec.patches join the kustomization's patches (fluxcd/pkg kustomize_generator.go):
    // those that rename act before targetNamespace and the name prefixes.
    let patches = model.layer_patches(layer);
    apply_renames(model, &patches.iter().collect::<Vec<_>>(), inventory);
    // As the layer holds it: a transformer of its parent's build may have set it.
    let t = Transform {
        namespace: layer.target_namespace.clone(),
        prefix: &layer.spec.name_prefix,
        suffix: &layer.spec.name_suffix,
    };
    for o in inventory.iter_mut() {
        t.apply(o, model.hash_suffix(o.object));
    }
    check_unique(inventory, model)
}
