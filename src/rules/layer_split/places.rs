//! Where a move may go: a free name and folder, the new layer's `spec.path`, whether a folder
//! would be picked up by a generated kustomization, whether a file is built by another layer.

use crate::load::{FileId, dir_prefix};
use crate::model::{KUSTOMIZATION_FILE_NAMES, Layer, LayerId, LayerRef, Model, display_dir, join};

/// The live layer whose generated kustomization would pick up a new folder `dir` (with its own
/// kustomization file) as a directory resource.
pub(in crate::rules) fn generated_cover(model: &Model, dir: &str) -> Option<LayerRef> {
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
            let mut walked = v.dir.to_string();
            let parts: Vec<&str> = rel.split('/').collect();
            let mut reached = true;
            for part in &parts[..parts.len() - 1] {
                walked = format!("{}{part}", dir_prefix(&walked));
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
pub(in crate::rules) fn path_text(layer: &Layer, dir: &str) -> Result<String, String> {
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
pub(in crate::rules) fn built_elsewhere(
    model: &Model,
    layer_id: LayerId,
    vi: usize,
    files: impl IntoIterator<Item = FileId>,
) -> Option<(FileId, LayerId, usize)> {
    let layer = model.layer(layer_id);
    let dir = &layer.variants[vi].dir;
    for f in files {
        for (lid, i) in model.users_of_file(f) {
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

/// `dir` relative to `base` when it is `base` or below it.
pub(in crate::rules) fn relative_below(base: &str, dir: &str) -> Option<String> {
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

/// `base`, or `base-2`, … when a layer of that name exists in the layer's namespace (or the
/// plan already uses it).
pub(in crate::rules) fn free_name(
    model: &Model,
    layer: &Layer,
    base: &str,
    planned: &[String],
) -> String {
    first_free(base, |n| {
        planned.iter().any(|p| p == n)
            || model.layers.iter().any(|l| {
                l.cluster == layer.cluster && l.id.namespace == layer.id.namespace && l.id.name == n
            })
    })
}

/// The one way a new name is chosen: `base` when it is free, else `base-2`, `base-3`, …
#[allow(
    clippy::maybe_infinite_iter,
    reason = "finitely many names are taken: the sequence reaches a free one"
)]
pub(in crate::rules) fn first_free(base: &str, taken: impl Fn(&str) -> bool) -> String {
    std::iter::once(base.to_string())
        .chain((2..).map(|i| format!("{base}-{i}")))
        .find(|n| !taken(n))
        .expect("an unbounded sequence has a free name")
}
