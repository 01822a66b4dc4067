//! Where the objects of an FM002 move go: an existing folder that renders only them (its
//! listing entry goes, or the folder itself moves out of a generated path), the runners' own
//! folder, or a new folder their files (or documents) move to, each with a kustomization that
//! carries what the chain they leave did to them.

use std::collections::{BTreeMap, BTreeSet};

use crate::edit::{self, Changeset, TextEdit};
use crate::load::{FileId, SourceFile, dir_prefix, file_id, parent_of};
use crate::model::{
    KUSTOMIZATION_FILE_NAMES, Model, Rendered, Variant, display_dir, join, relative_path,
};
use crate::parse::{NodeId, Value};
use crate::rules::disposable::Analysis;
use crate::rules::layer_split::{
    bringing_entry, first_free, generated_cover, relative_below, remove_items, resources_list,
};

use super::carry::{Carried, carry};
use super::document::kustomization_text;
use super::overlays::FluxOverlays;

/// Everything a plan touches, for the exclusivity check.
#[derive(Default)]
pub(super) struct Touched {
    /// Files whose documents move (deleted or split).
    pub(super) objects: BTreeSet<FileId>,
    /// Kustomization files edited.
    pub(super) kustomizations: BTreeSet<FileId>,
}

/// One move in the planning: the layer variant the objects leave, the changes so far, what
/// they touch, the folders already planned, and what carrying needs to know.
pub(super) struct Ctx<'a, 'm, 'r> {
    pub(super) model: &'m Model<'r>,
    pub(super) variant: &'a Variant,
    pub(super) changes: Changeset,
    pub(super) touched: Touched,
    pub(super) planned_dirs: Vec<String>,
    pub(super) flux: FluxOverlays,
    /// RoleBindings move (their subjects' namespaces follow the namespace transformers).
    pub(super) moved_bindings: bool,
}

impl Ctx<'_, '_, '_> {
    /// What the kustomizations `levels` did to the moved objects `members` (inventory indices).
    fn carry(
        &self,
        an: &mut Analysis,
        levels: &[FileId],
        members: &[usize],
    ) -> Result<Carried, String> {
        let moved: Vec<&Rendered> = members
            .iter()
            .map(|&i| &self.variant.inventory[i])
            .collect();
        carry(an, &self.flux, self.moved_bindings, &moved, levels)
    }

    /// An existing folder renders the moved objects only: the entry listing it goes. With
    /// nothing to carry over it becomes the new layer's path as it is; otherwise a new `runners`
    /// folder beside the entry wraps it with what the levels above it did (the folder itself,
    /// perhaps shared, is not edited).
    pub(super) fn plan_folder(
        &mut self,
        an: &mut Analysis,
        k: usize,
        dir: &str,
        members: &[usize],
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let r = &self.variant.inventory[members[0]];
        let (kfile, item) = bringing_entry(model, r, k - 1)
            .ok_or_else(|| format!("cannot find the resources entry that lists {dir}"))?;
        self.remove_entries(kfile, &[item])?;
        let carried = self.carry(an, &r.chain[..k], members)?;
        if carried.is_empty() {
            return Ok(dir.to_string());
        }
        let lister = model.repo.file(kfile);
        let listing_dir = parent_of(&lister.path);
        let folder = self.free_folder(&format!("{}runners", dir_prefix(listing_dir)))?;
        let rel = relative_path(&folder, dir);
        let text = kustomization_text(
            lister.yaml.line_ending.as_str(),
            Some(lister),
            listing_dir,
            layer_name,
            &carried.lines_for(&folder),
            &[rel],
            &carried.components_from(&folder),
        );
        self.changes
            .create(&format!("{folder}/kustomization.yaml"), text);
        Ok(folder)
    }

    /// A folder with a kustomization of its own inside a generated path renders the moved
    /// objects only: the generated walk picks it up as a whole, so it moves whole, out of that
    /// path, to the same depth (`<path>-runners/<folder>`), where its relative references
    /// still resolve.
    pub(super) fn plan_move_folder(&mut self, dir: &str) -> Result<String, String> {
        let model = self.model;
        let base = &self.variant.dir;
        let rel = relative_below(base, dir)
            .filter(|r| !r.is_empty() && !base.is_empty())
            .ok_or_else(|| format!("{dir} is not below {}", display_dir(base)))?;
        if let Some(other) = model
            .repo
            .other_files()
            .find(|p| relative_below(dir, parent_of(p)).is_some())
        {
            return Err(format!(
                "{dir} holds {other}, which is not YAML: fluxmend moves only what it has read"
            ));
        }
        // References that climb out of the folder must land outside the generated path.
        for (kdir, k) in model.kustomize_dirs.iter() {
            if relative_below(dir, kdir).is_none() {
                continue;
            }
            let f = model.repo.file(k.file);
            let mut texts = Vec::new();
            if let Ok(v) = f.yaml.value(k.root) {
                collect_strings(&v, &mut texts);
            }
            for t in texts.iter().filter(|t| t.starts_with("../")) {
                let lands = join(kdir, t).unwrap_or_default();
                if relative_below(dir, &lands).is_none() && relative_below(base, &lands).is_some() {
                    return Err(format!(
                        "{} refers to `{t}` inside {}; moving the folder out would break it",
                        f.path,
                        display_dir(base)
                    ));
                }
            }
        }
        let root = self.free_dir(&format!("{base}-runners"));
        let target = format!("{root}/{rel}");
        if let Some(by) = generated_cover(model, &target) {
            return Err(format!(
                "a new folder {target} would also be picked up by the generated kustomization of {by}"
            ));
        }
        for (id, f) in model.repo.files.iter().enumerate() {
            let id = file_id(id);
            let Some(inner) = relative_below(dir, &f.path) else {
                continue;
            };
            if f.error.is_some() {
                return Err(format!("{} does not parse to its end", f.path));
            }
            self.move_whole(f, &format!("{target}/{inner}"));
            self.touched.objects.insert(id);
            self.touched.kustomizations.insert(id);
        }
        Ok(target)
    }

    /// A directory path no file, directory or earlier part of the plan uses (`base`, `base-2`,
    /// …), taken for this plan.
    fn free_dir(&mut self, base: &str) -> String {
        let model = self.model;
        let dir = first_free(base, |d| {
            model.repo.is_dir(d)
                || model.repo.is_file(d)
                || self.planned_dirs.iter().any(|p| p == d)
        });
        self.planned_dirs.push(dir.clone());
        dir
    }

    /// A free folder name ([`Self::free_dir`]) that no generated kustomization picks up.
    fn free_folder(&mut self, base: &str) -> Result<String, String> {
        let folder = self.free_dir(base);
        if let Some(by) = generated_cover(self.model, &folder) {
            return Err(format!(
                "a new folder {folder} would also be picked up by the generated kustomization of {by}"
            ));
        }
        Ok(folder)
    }

    /// Files listed by a kustomization (or picked up by a generated walk) move to a new folder
    /// with its own kustomization, which carries what the chain did to them.
    pub(super) fn plan_files(
        &mut self,
        an: &mut Analysis,
        chain: &[FileId],
        members: &[usize],
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let inventory = &self.variant.inventory;
        let listing = chain.last().copied();
        let base = match listing {
            Some(f) => format!("{}runners", dir_prefix(parent_of(&model.repo.file(f).path))),
            None if self.variant.dir.is_empty() => {
                return Err(
                    "the layer's path is the repository root and has no kustomization file; there is no folder outside it to move the workloads to".into(),
                );
            }
            None => format!("{}-runners", self.variant.dir),
        };
        // The files, in the order the layer renders them.
        let mut files: Vec<(FileId, Vec<usize>)> = Vec::new();
        for &i in members {
            let file = model.object(inventory[i].object).file;
            match files.iter_mut().find(|(f, _)| *f == file) {
                Some((_, docs)) => docs.push(i),
                None => files.push((file, vec![i])),
            }
        }
        let carried = self.carry(an, chain, members)?;
        if let Some(dir) = self.own_folder(listing, &files) {
            return self.plan_own_folder(dir, chain, &files, &carried, layer_name);
        }
        let folder = self.free_folder(&base)?;
        let lister = listing.map(|f| model.repo.file(f));
        let eol = lister
            .map_or(model.repo.file(files[0].0).yaml.line_ending, |f| {
                f.yaml.line_ending
            })
            .as_str();
        let mut names: Vec<String> = Vec::new();
        let mut removed: BTreeMap<FileId, Vec<NodeId>> = BTreeMap::new();
        let mut dot_slash = false;
        for (file, docs) in &files {
            let src = model.repo.file(*file);
            if src.error.is_some() {
                return Err(format!(
                    "{} does not parse to its end; fluxmend does not edit it",
                    src.path
                ));
            }
            let basename = src.path.rsplit('/').next().unwrap_or("runners.yaml");
            let name = free_file_name(basename, &names);
            if whole_file(model, *file, docs, inventory) {
                self.move_whole(src, &format!("{folder}/{name}"));
                if listing.is_some() {
                    let (kfile, item) = bringing_entry(model, &inventory[docs[0]], chain.len() - 1)
                        .ok_or_else(|| {
                            format!("cannot find the resources entry that lists {}", src.path)
                        })?;
                    let kf = model.repo.file(kfile);
                    dot_slash |= kf.yaml.scalar(item).is_some_and(|t| t.starts_with("./"));
                    removed.entry(kfile).or_default().push(item);
                }
            } else {
                self.split_file(*file, docs, &format!("{folder}/{name}"))?;
            }
            self.touched.objects.insert(*file);
            names.push(name);
        }
        for (kfile, items) in &removed {
            self.remove_entries(*kfile, items)?;
        }
        // The new folder's kustomization.
        let from = match lister {
            Some(f) => parent_of(&f.path).to_string(),
            None => self.variant.dir.to_string(),
        };
        let entries: Vec<String> = names
            .iter()
            .map(|n| format!("{}{n}", if dot_slash { "./" } else { "" }))
            .collect();
        let out = kustomization_text(
            eol,
            lister,
            &from,
            layer_name,
            &carried.lines_for(&folder),
            &entries,
            &carried.components_from(&folder),
        );
        self.changes
            .create(&format!("{folder}/kustomization.yaml"), out);
        Ok(folder)
    }

    /// A file moves whole to `to`, byte for byte.
    fn move_whole(&mut self, src: &SourceFile, to: &str) {
        self.changes.delete(&src.path);
        self.changes.create(
            to,
            format!(
                "{}{}",
                if src.yaml.bom { "\u{feff}" } else { "" },
                src.yaml.text()
            ),
        );
    }

    /// The moved documents (`docs`, inventory indices) of a file that also holds objects that
    /// stay leave it for a new file `to`, with the file's header comment.
    fn split_file(&mut self, file: FileId, docs: &[usize], to: &str) -> Result<(), String> {
        let model = self.model;
        let src = model.repo.file(file);
        if model.objects_in(file).any(|o| model.object(o).encrypted()) {
            return Err(format!(
                "{} is SOPS-encrypted and holds objects that stay; splitting it would break its MAC",
                src.path
            ));
        }
        let mut moved_docs: Vec<usize> = docs
            .iter()
            .map(|&i| model.object(self.variant.inventory[i].object).doc())
            .collect();
        moved_docs.sort_unstable();
        let text = src.yaml.text();
        let feol = src.yaml.line_ending.as_str();
        let mut out = String::new();
        // The file's header comment (before its first `---`) describes both halves.
        if let Some(first) = src.yaml.docs().first() {
            let header = &text[..first.region().start];
            if header.lines().all(|l| {
                let t = l.trim();
                t.is_empty() || t.starts_with('#')
            }) {
                out.push_str(header);
            }
        }
        for &d in &moved_docs {
            let (start, end) = edit::document_region(&src.yaml, d);
            let region = &text[start..end];
            let body = match region.strip_prefix("---") {
                Some(rest) => rest.find('\n').map_or("", |i| &rest[i + 1..]),
                None => region,
            };
            out.push_str(&format!("---{feol}{body}"));
            if !out.ends_with('\n') {
                out.push_str(feol);
            }
            self.changes.edit(
                &src.path,
                TextEdit {
                    start,
                    end,
                    text: String::new(),
                },
            );
        }
        self.changes.create(
            to,
            format!("{}{out}", if src.yaml.bom { "\u{feff}" } else { "" }),
        );
        Ok(())
    }

    /// The folder below the listing kustomization's that already holds exactly the moved files
    /// (whole), with no kustomization file of its own and no other YAML: the runners are in a
    /// folder of their own, listed file by file, and need not move.
    fn own_folder(
        &self,
        listing: Option<FileId>,
        files: &[(FileId, Vec<usize>)],
    ) -> Option<String> {
        let model = self.model;
        let listing_dir = parent_of(&model.repo.file(listing?).path);
        let dir = parent_of(&model.repo.file(files.first()?.0).path);
        let below = relative_below(listing_dir, dir).is_some_and(|r| !r.is_empty());
        let has_kustomization = model.kustomize_dirs.contains_key(dir)
            || KUSTOMIZATION_FILE_NAMES
                .iter()
                .any(|n| join(dir, n).is_some_and(|p| model.repo.is_file(&p)));
        if !below || has_kustomization || generated_cover(model, dir).is_some() {
            return None;
        }
        let whole = files.iter().all(|(file, docs)| {
            let src = model.repo.file(*file);
            parent_of(&src.path) == dir
                && src.error.is_none()
                && whole_file(model, *file, docs, &self.variant.inventory)
        });
        let only_these = model
            .repo
            .files_in(dir)
            .all(|f| files.iter().any(|(m, _)| *m == f));
        (whole && only_these && model.repo.skipped_yaml_in(dir).next().is_none())
            .then(|| dir.to_string())
    }

    /// The runners' own folder gets a kustomization listing its files (carrying what the chain
    /// did to them) and becomes the new layer's path; the entries that listed them go.
    fn plan_own_folder(
        &mut self,
        dir: String,
        chain: &[FileId],
        files: &[(FileId, Vec<usize>)],
        carried: &Carried,
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let inventory = &self.variant.inventory;
        let lister = model
            .repo
            .file(*chain.last().ok_or("no listing kustomization")?);
        let mut removed: BTreeMap<FileId, Vec<NodeId>> = BTreeMap::new();
        let mut entries = Vec::new();
        for (file, docs) in files {
            let (kfile, item) = bringing_entry(model, &inventory[docs[0]], chain.len() - 1)
                .ok_or_else(|| {
                    format!(
                        "cannot find the resources entry that lists {}",
                        model.repo.file(*file).path
                    )
                })?;
            let dot_slash = model
                .repo
                .file(kfile)
                .yaml
                .scalar(item)
                .is_some_and(|t| t.starts_with("./"));
            let base = model.repo.file(*file).path.rsplit('/').next().unwrap_or("");
            entries.push(format!("{}{base}", if dot_slash { "./" } else { "" }));
            removed.entry(kfile).or_default().push(item);
            self.touched.objects.insert(*file);
        }
        for (kfile, items) in &removed {
            self.remove_entries(*kfile, items)?;
        }
        let text = kustomization_text(
            lister.yaml.line_ending.as_str(),
            Some(lister),
            parent_of(&lister.path),
            layer_name,
            &carried.lines_for(&dir),
            &entries,
            &carried.components_from(&dir),
        );
        self.changes
            .create(&format!("{dir}/kustomization.yaml"), text);
        Ok(dir)
    }

    fn remove_entries(&mut self, kfile: FileId, items: &[NodeId]) -> Result<(), String> {
        let model = self.model;
        let f = model.repo.file(kfile);
        if f.error.is_some() {
            return Err(format!("{} does not parse to its end", f.path));
        }
        let mut by_list: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
        for &item in items {
            let list = resources_list(model, kfile, item)
                .ok_or_else(|| format!("entry not found in the resources of {}", f.path))?;
            by_list.entry(list).or_default().insert(item);
        }
        for (list, items) in by_list {
            remove_items(&f.yaml, list, &items, &f.path, &mut self.changes)?;
        }
        self.touched.kustomizations.insert(kfile);
        Ok(())
    }
}

/// Whether every document with content in `file` is one of the moved `docs` (inventory
/// indices): the file moves whole.
fn whole_file(model: &Model, file: FileId, docs: &[usize], inventory: &[Rendered]) -> bool {
    let src = model.repo.file(file);
    let objects = model.objects_in(file);
    let content_docs = src
        .yaml
        .docs()
        .iter()
        .filter(|d| src.yaml.value(d.root).is_ok_and(|v| v != Value::Null))
        .count();
    content_docs == objects.len()
        && objects
            .clone()
            .all(|o| docs.iter().any(|&i| inventory[i].object == o))
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Str(s, _) => out.push(s.clone()),
        Value::Seq(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| collect_strings(v, out)),
        Value::Null => {}
    }
}

/// A file name not yet used in the new folder: `name`, or `stem-2.ext`, …
#[allow(
    clippy::maybe_infinite_iter,
    reason = "finitely many names are taken: the sequence reaches a free one"
)]
fn free_file_name(name: &str, used: &[String]) -> String {
    if !used.iter().any(|u| u == name) {
        return name.to_string();
    }
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    (2..)
        .map(|i| {
            if ext.is_empty() {
                format!("{stem}-{i}")
            } else {
                format!("{stem}-{i}.{ext}")
            }
        })
        .find(|n| !used.contains(n))
        .expect("an unbounded sequence has a free name")
}
