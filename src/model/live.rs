//! Which files a live layer reads, so that problems outside Flux's reach (archived folders,
//! commented-out layers, tool configuration beside the manifests) do not fail a CI gate.
//!
//! A file is *live* when a live layer renders an object from it or passes through it (a
//! kustomization file on the way: [`Model::users_of_file`]), defines a live layer (its Flux
//! Kustomization or FluxInstance), or would be read by a live layer's build even though it gave
//! no object: a file below a directory Flux generates a kustomization for, a kustomization file
//! of a directory the build reaches, and a file a reached kustomization names (resources,
//! components, patches, replacements, transformers, generators).

use std::collections::BTreeSet;
use std::ops::Bound;

use rustc_hash::FxHashSet as HashSet;

use crate::diagnostics::{Diagnostic, Severity};

use super::kustomize::NAMED_FILE_FIELDS;
use super::{KUSTOMIZATION_FILE_NAMES, Model, RefTarget, join};
use crate::load::{FileId, Repo, dir_prefix, file_id, is_within, parent_of};

/// The directories of `sorted` strictly below `dir` (all of them below the root).
fn below<'a>(sorted: &'a BTreeSet<&str>, dir: &str) -> impl Iterator<Item = &'a str> {
    let from = dir_prefix(dir);
    // `0` is the character after `/`: the range holds exactly the paths under `dir/`.
    let to = (!dir.is_empty()).then(|| format!("{dir}0"));
    // A pair of bounds, not `from..`: a set of `&str` ranges over `str` only through them.
    sorted
        .range::<str, _>((Bound::Included(from.as_str()), Bound::Unbounded))
        .take_while(move |d| to.as_deref().is_none_or(|t| **d < t))
        .copied()
}

/// The paths (relative to the repository root) live layers read, and the directories whose
/// every file they read. A file the repository holds is kept as its id: a fleet's live layers
/// read most of its files.
#[derive(Debug)]
pub(super) struct LiveFiles {
    files: HashSet<FileId>,
    /// Paths read that the repository holds no YAML file at (a generator's file, a missing one).
    elsewhere: HashSet<String>,
    /// Directories Flux generates a kustomization for: it reads every file below them, down to
    /// the directories with a kustomization file of their own.
    generated_dirs: HashSet<String>,
    /// Directories with a kustomization file. Flux's generator lists such a directory as a
    /// resource and does not descend into it: kustomize reads only what its kustomization names.
    kustomize_dirs: HashSet<String>,
}

impl LiveFiles {
    pub(super) fn of(model: &Model) -> LiveFiles {
        let repo = model.repo;
        // Sorted, so that the directories below one are a range: a fleet has thousands of
        // generated layer paths and tens of thousands of kustomization directories.
        let sorted_kustomize_dirs: BTreeSet<&str> = repo
            .files
            .iter()
            .map(|f| f.path.as_str())
            .filter(|p| KUSTOMIZATION_FILE_NAMES.contains(&p.rsplit('/').next().unwrap_or(p)))
            .map(parent_of)
            .collect();
        let mut live = LiveFiles {
            files: (0..repo.files.len())
                .map(file_id)
                .filter(|&f| model.users_of_file(f).next().is_some())
                .collect(),
            elsewhere: HashSet::default(),
            generated_dirs: HashSet::default(),
            kustomize_dirs: sorted_kustomize_dirs
                .iter()
                .map(|d| (*d).to_string())
                .collect(),
        };
        let mut seen_dirs: HashSet<String> = HashSet::default();
        for (_, layer) in model.live_layers() {
            for obj in layer.object.iter().chain(&layer.created_by_instance) {
                live.files.insert(model.object(*obj).file);
            }
            for variant in &layer.variants {
                if variant.generated {
                    live.generated_dirs.insert(variant.dir.to_string());
                    // The directories the generator lists as resources: the topmost ones below
                    // with a kustomization file.
                    let nested: Vec<&str> = below(&sorted_kustomize_dirs, &variant.dir)
                        .filter(|k| {
                            live.nearest_stop(parent_of(k), &variant.dir) == Some(&variant.dir)
                                && *k != variant.dir
                                && is_within(k, &variant.dir)
                        })
                        .collect();
                    for dir in nested {
                        live.reach_dir(model, dir, &mut seen_dirs);
                    }
                } else {
                    live.reach_dir(model, &variant.dir, &mut seen_dirs);
                }
            }
        }
        live
    }

    /// Mark what kustomize reads from `dir`'s kustomization, recursively.
    fn reach_dir(&mut self, model: &Model, dir: &str, seen: &mut HashSet<String>) {
        if !seen.insert(dir.to_string()) {
            return;
        }
        for name in KUSTOMIZATION_FILE_NAMES {
            if let Some(path) = join(dir, name).filter(|p| model.repo.is_file(p)) {
                self.insert(model.repo, path);
            }
        }
        let Some(k) = model.kustomize_dirs.get(dir) else {
            return;
        };
        for r in k.resources.iter().chain(&k.components) {
            match &r.target {
                RefTarget::File(id) => {
                    self.files.insert(*id);
                }
                RefTarget::OtherFile(path) => {
                    self.elsewhere.insert(path.to_string());
                }
                RefTarget::Dir(sub) => self.reach_dir(model, sub, seen),
                _ => {}
            }
        }
        // Files named elsewhere in the kustomization: a patch or a transformer configuration
        // that does not parse fails the build as surely as a resource.
        for path in k.named_files(model, dir, NAMED_FILE_FIELDS) {
            self.insert(model.repo, path);
        }
    }

    /// Note `path` as read, as a file of the repository when it holds a YAML file there.
    fn insert(&mut self, repo: &Repo, path: String) {
        match repo.file_id(&path) {
            Some(id) => self.files.insert(id),
            None => self.elsewhere.insert(path),
        };
    }

    /// Whether a live layer reads the file at `path`.
    pub(super) fn contains(&self, repo: &Repo, path: &str) -> bool {
        repo.file_id(path).map_or_else(
            || self.elsewhere.contains(path),
            |id| self.files.contains(&id),
        ) || self
            .nearest_stop(parent_of(path), "")
            .is_some_and(|dir| self.generated_dirs.contains(dir))
    }

    /// Walking up from `dir` (itself included) to `top`, the first directory that is generated
    /// or has a kustomization file, or `top` itself.
    fn nearest_stop<'a>(&'a self, mut dir: &'a str, top: &'a str) -> Option<&'a str> {
        loop {
            if self.generated_dirs.contains(dir) || self.kustomize_dirs.contains(dir) || dir == top
            {
                return Some(dir);
            }
            if dir.is_empty() {
                return None;
            }
            dir = parent_of(dir);
        }
    }

    /// Make a warning or error about a file no live layer reads a note, saying so: Flux never
    /// meets the problem, so it must not fail `check`. Diagnostics about the repository as a
    /// whole (no file) keep their severity.
    pub(super) fn demote(&self, repo: &Repo, diagnostics: &mut [Diagnostic]) {
        for d in diagnostics {
            if d.severity > Severity::Note && !d.file().is_empty() && !self.contains(repo, d.file())
            {
                d.message = format!(
                    "{} (no live layer reads this file: {} reported as a note)",
                    d.message, d.severity
                );
                d.severity = Severity::Note;
            }
        }
    }
}
