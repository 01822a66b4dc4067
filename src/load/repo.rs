//! The loaded repository: its parsed YAML files sorted by path, its directories, what was
//! skipped, and the indexes the model asks through (a file by path, a directory's files and
//! subdirectories); a variant of it with some files changed, made without touching disk. Its
//! ResourceSets' generated files are made again whenever its files change.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::Arc;

use arcstr::ArcStr;

use crate::diagnostics::Diagnostic;
use crate::parse::YamlFile;

use super::file::{FileId, SourceFile, dir_prefix, file_id, is_within, parent_of};
use super::folder_files::FolderFiles;
use super::objects::Objects;
use super::read;
use super::resourceset;

/// Where a loaded repository's files are read from after loading (a generator's input files).
#[derive(Clone, Debug)]
pub(super) enum Origin {
    WorkTree,
    Revision(Arc<Objects>),
}

/// The loaded repository: every YAML file fluxmend reads, every directory, and what was skipped.
#[derive(Clone, Debug)]
pub struct Repo {
    pub root: PathBuf,
    /// Sorted by path. Shared so that a re-modelled variant of the repository (verification)
    /// copies no file.
    pub files: Vec<Arc<SourceFile>>,
    /// Every directory below the root that Flux would ship (relative, `""` is the root).
    /// Shared, like `files`: a variant with changes copies it only when a change adds a folder.
    /// Each path is shared as well ([`Repo::dir_path`]): every model of the repository names
    /// its folders with these, not with copies (issue 26).
    pub dirs: Arc<BTreeSet<ArcStr>>,
    pub diagnostics: Vec<Diagnostic>,
    /// YAML files directly in each directory, sorted by path.
    pub(super) folder_files: FolderFiles,
    /// Every non-YAML or skipped file path, so that `resources` entries naming them resolve.
    pub(super) other_files: BTreeSet<String>,
    /// The files fluxmend generated (the objects a ResourceSet generates,
    /// [`resourceset::generated_path`]), with what they come from. They are in `files`, not in
    /// any directory, and no fix may edit them.
    pub(super) generated: BTreeMap<String, String>,
    /// Where files not loaded as YAML are read from, when the model needs one.
    pub(super) origin: Origin,
}

impl Repo {
    /// The bytes of a file of the repository that is not loaded as YAML (a generator's input),
    /// read from where the repository was loaded: the work tree (through [`read::read_repo_file`]:
    /// no link followed, regular files only, within the size limit) or the revision's objects.
    pub fn read_bytes(&self, rel: &str) -> Result<Vec<u8>, read::ReadError> {
        match &self.origin {
            Origin::WorkTree => read::read_repo_file(&self.root, rel),
            Origin::Revision(objects) => objects.read_bytes(rel),
        }
    }

    /// This repository with some files replaced (`Some(text)`, BOM included) or removed
    /// (`None`): what verification re-models after a planned change, without touching disk.
    /// As the change is committed: a folder a removal leaves without a file is gone, as git
    /// keeps no empty folder (and kustomize-controller fails a `spec.path` that names one).
    #[must_use]
    pub fn with_changes(&self, changes: &BTreeMap<String, Option<String>>) -> Repo {
        let mut repo = Repo {
            root: self.root.clone(),
            files: Vec::new(),
            dirs: self.dirs.clone(),
            diagnostics: Vec::new(),
            folder_files: FolderFiles::default(),
            other_files: self.other_files.clone(),
            generated: BTreeMap::new(),
            origin: self.origin.clone(),
        };
        // The files stay in path order: each changed path is found by a search and the new text
        // put in its place, rather than every path compared with the changes and then sorted
        // (a fleet has 140,000 files, each read from memory the cache no longer holds).
        let kept = |files: &[Arc<SourceFile>]| {
            files
                .iter()
                .filter(|f| !self.generated.contains_key(&f.path))
                .cloned()
                .collect::<Vec<_>>()
        };
        let mut files = Vec::with_capacity(self.files.len() + changes.len());
        let mut next = 0;
        for (path, text) in changes {
            let at = next + self.files[next..].partition_point(|f| f.path < *path);
            files.extend(kept(&self.files[next..at]));
            next = at + usize::from(self.files.get(at).is_some_and(|f| f.path == *path));
            if let Some(text) = text {
                let (yaml, error) = YamlFile::parse(text);
                files.push(Arc::new(SourceFile {
                    path: path.clone(),
                    yaml,
                    error: error.map(Box::new),
                }));
                let mut dir = parent_of(path);
                while !dir.is_empty() && !repo.dirs.contains(dir) {
                    Arc::make_mut(&mut repo.dirs).insert(dir.into());
                    dir = parent_of(dir);
                }
            }
        }
        files.extend(kept(&self.files[next..]));
        repo.files = files;
        for (path, _) in changes.iter().filter(|(_, text)| text.is_none()) {
            repo.forget_emptied_folders(parent_of(path));
        }
        repo.finish()
    }

    /// Forget `dir` and the folders above it while they hold no file (YAML or other): the
    /// empty folders below them go too.
    fn forget_emptied_folders(&mut self, mut dir: &str) {
        while !dir.is_empty() && self.dirs.contains(dir) {
            // The first file (YAML, then other) at or after the folder's own paths, in order.
            let prefix = dir_prefix(dir);
            let yaml = self.files[self.files.partition_point(|f| f.path < prefix)..]
                .first()
                .map(|f| f.path.as_str());
            let other = self.other_files.range(prefix.clone()..).next();
            if yaml
                .into_iter()
                .chain(other.map(String::as_str))
                .any(|p| is_within(p, dir))
            {
                return;
            }
            let dirs = Arc::make_mut(&mut self.dirs);
            dirs.remove(dir);
            let below: Vec<ArcStr> = dirs
                .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                .take_while(|d| is_within(d, dir))
                .cloned()
                .collect();
            for d in below {
                dirs.remove(&d);
            }
            dir = parent_of(dir);
        }
    }

    /// The repository once every file is in (`files`, in path order): its ResourceSets expanded.
    pub(super) fn finish(mut self) -> Repo {
        self.expand_resourcesets();
        self.debug_assert_sorted();
        self
    }

    /// Replace the generated files with those of the repository's ResourceSets as they are now.
    fn expand_resourcesets(&mut self) {
        self.files.retain(|f| !self.generated.contains_key(&f.path));
        self.generated.clear();
        for (file, origin) in resourceset::expand(&self.files, &mut self.diagnostics) {
            self.generated.insert(file.path.clone(), origin);
            self.files.push(Arc::new(file));
        }
        // The repository's own files come in path order; generated ones join them.
        if !self.generated.is_empty() {
            self.files.sort_by(|a, b| a.path.cmp(&b.path));
        }
        self.reindex_files();
    }

    /// Rebuild the per-directory file index after `files` changed order (generated files,
    /// which belong to no directory, left out).
    fn reindex_files(&mut self) {
        self.folder_files = FolderFiles::of(&self.files, |f| self.generated.contains_key(&f.path));
    }

    /// Whether `other` lists what this repository lists, each YAML file with the same text: the
    /// same folders, other files and generated files, in the same places. A revision's load
    /// shares the work tree's files its blobs hold ([`super::revision::load_revision`]): on a
    /// clean checkout every file is the same `Arc`, and only what is not shared is compared by
    /// text. What a model reads beyond this (generators' non-YAML inputs) is its own to compare.
    pub fn lists_the_same(&self, other: &Repo) -> bool {
        let same_file = |a: &Arc<SourceFile>, b: &Arc<SourceFile>| {
            Arc::ptr_eq(a, b)
                || (a.path == b.path && a.yaml.bom == b.yaml.bom && a.yaml.text() == b.yaml.text())
        };
        self.root == other.root
            && self.files.len() == other.files.len()
            && self
                .files
                .iter()
                .zip(&other.files)
                .all(|(a, b)| same_file(a, b))
            && (Arc::ptr_eq(&self.dirs, &other.dirs) || self.dirs == other.dirs)
            && self.other_files == other.other_files
            && self.generated == other.generated
    }

    /// How many files of the repository were parsed (generated files not counted).
    pub fn parsed_files(&self) -> usize {
        self.files.len() - self.generated.len()
    }

    /// What a generated file comes from (`ResourceSet ns/name (file:line)`); `None` for a file
    /// of the repository.
    pub fn generated_from(&self, path: &str) -> Option<&str> {
        self.generated.get(path).map(String::as_str)
    }

    /// `file_id` searches a folder's files, or all of them by path: `files` must be sorted by
    /// path, each path once.
    fn debug_assert_sorted(&self) {
        debug_assert!(
            self.files.windows(2).all(|w| w[0].path < w[1].path),
            "Repo::files must be sorted by path"
        );
    }

    /// The parsed YAML file at a relative path.
    pub fn file_id(&self, path: &str) -> Option<FileId> {
        // Through the folder's few files: a search of every path compares long shared
        // prefixes, and the model asks for a file by path once per resources entry per build.
        // Generated files belong to no folder.
        if self.generated.is_empty() {
            return self
                .folder_files
                .of_folder(&self.files, parent_of(path))
                .find(|&id| self.files[id as usize].path == path);
        }
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .map(file_id)
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id as usize]
    }

    /// Whether a relative path names a file Flux would ship (YAML or not).
    pub fn is_file(&self, path: &str) -> bool {
        self.file_id(path).is_some() || self.other_files.contains(path)
    }

    pub fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path)
    }

    /// The repository's own copy of a directory's path, shared by whoever keeps it.
    pub fn dir_path(&self, path: &str) -> Option<&ArcStr> {
        self.dirs.get(path)
    }

    /// YAML files directly in `dir`, sorted by path.
    pub fn files_in(&self, dir: &str) -> impl ExactSizeIterator<Item = FileId> + '_ {
        self.folder_files.of_folder(&self.files, dir)
    }

    /// Every file Flux would ship that fluxmend does not parse (non-YAML, skipped), sorted.
    pub fn other_files(&self) -> impl Iterator<Item = &str> {
        self.other_files.iter().map(String::as_str)
    }

    /// `.yaml`/`.yml` files directly in `dir` that were skipped (templates, binary, too big):
    /// Flux would still try to decode them.
    pub fn skipped_yaml_in<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = dir_prefix(dir);
        let skip = prefix.len();
        self.other_files
            .range(prefix.clone()..)
            .take_while(move |p| p.starts_with(&prefix))
            .filter(move |p| {
                let rest = &p[skip..];
                !rest.contains('/') && (rest.ends_with(".yaml") || rest.ends_with(".yml"))
            })
            .map(String::as_str)
    }

    /// Direct subdirectories of `dir` (full relative paths), sorted: read from the sorted
    /// directories, each child's own subtree jumped over, not from an index of every folder's
    /// children (a fleet's 40,000 folders, kept again for every re-modelled variant).
    pub fn subdirs<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = dir_prefix(dir);
        let mut from = Bound::Included(prefix.clone());
        std::iter::from_fn(move || {
            loop {
                let next = self
                    .dirs
                    .range::<str, _>((from.as_ref().map(String::as_str), Bound::Unbounded))
                    .next()?;
                let rest = next.strip_prefix(&prefix)?;
                match rest.find('/') {
                    // A child's subtree: its paths sort after `child/` and before `child0`
                    // (`/` is just below `0`); siblings such as `child-x` came before it.
                    Some(slash) => {
                        from = Bound::Included(format!("{}0", &next[..prefix.len() + slash]));
                    }
                    None => {
                        from = Bound::Excluded(next.to_string());
                        if !rest.is_empty() {
                            return Some(next.as_str());
                        }
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::load::write_test_file as write;

    /// A repository of ConfigMaps at these paths, loaded (the directory lives as long as it).
    fn load_config_maps(paths: &[&str]) -> (tempfile::TempDir, Repo) {
        let tmp = tempfile::tempdir().unwrap();
        for rel in paths {
            write(tmp.path(), rel, "kind: ConfigMap\n");
        }
        let repo = Repo::load(tmp.path()).unwrap();
        (tmp, repo)
    }

    /// `file_id` searches `files` by path: every file is found at its index, in a loaded
    /// repository and in one with changes (files removed, replaced, added first, in between, last
    /// and in new folders), whatever the order of `-`, `.` and `/` in the paths; `files` stays
    /// in path order and each folder lists its files, in order, however its runs are split by
    /// subfolders.
    #[test]
    fn every_file_is_found_by_its_path() {
        let (_tmp, repo) = load_config_maps(&[
            "a.yaml",
            "a-b.yaml",
            "a/b.yaml",
            "a/b/c.yaml",
            "a.b/x.yaml",
            "z.yml",
        ]);
        let found = |repo: &Repo| {
            for (id, file) in repo.files.iter().enumerate() {
                assert_eq!(repo.file_id(&file.path), Some(file_id(id)), "{}", file.path);
                assert!(repo.is_file(&file.path));
            }
            assert!(repo.files.windows(2).all(|w| w[0].path < w[1].path));
            for dir in repo.files.iter().map(|f| parent_of(&f.path)) {
                let listed: Vec<FileId> = (0..repo.files.len())
                    .filter(|&id| parent_of(&repo.files[id].path) == dir)
                    .map(file_id)
                    .collect();
                assert_eq!(repo.files_in(dir).collect::<Vec<_>>(), listed, "{dir:?}");
            }
            repo.files.len()
        };
        assert_eq!(found(&repo), 6);
        assert_eq!(repo.file_id("a"), None);
        assert_eq!(repo.file_id("a/b"), None);
        let changes = BTreeMap::from([
            ("a/b.yaml".to_string(), None),
            ("a/a.yaml".to_string(), Some("kind: Secret\n".to_string())),
            ("0.yaml".to_string(), Some("kind: Secret\n".to_string())),
            ("a.yaml".to_string(), Some("kind: Namespace\n".to_string())),
            (
                "zz/new/x.yaml".to_string(),
                Some("kind: Secret\n".to_string()),
            ),
            ("missing.yaml".to_string(), None),
        ]);
        let changed = repo.with_changes(&changes);
        assert_eq!(found(&changed), 8);
        assert_eq!(changed.file_id("a/b.yaml"), None);
        assert!(changed.file_id("0.yaml").is_some());
        let replaced = changed.file_id("a.yaml").unwrap();
        assert_eq!(changed.file(replaced).yaml.text(), "kind: Namespace\n");
        assert!(changed.is_dir("zz/new") && changed.is_dir("zz"));
        assert_eq!(changed.files[changed.files.len() - 1].path, "zz/new/x.yaml");
    }

    /// `subdirs` lists each folder's children from the sorted folders, jumping over each
    /// child's subtree: it agrees with a listing of every folder whose parent it is, whatever
    /// sorts between a child and its own subfolders (`-`, `.`) or just after them (`0`), in a
    /// loaded repository and in one a change adds folders to (the loaded one keeps its own).
    #[test]
    fn subdirs_are_each_folders_children_in_order() {
        let (_tmp, repo) = load_config_maps(&[
            "a/b/c/x.yaml",
            "a/b-c/x.yaml",
            "a/b.c/d/x.yaml",
            "a/b0/x.yaml",
            "a-b/x.yaml",
            "a0/x.yaml",
            "b/x.yaml",
        ]);
        let agrees = |repo: &Repo| {
            for dir in std::iter::once("").chain(repo.dirs.iter().map(ArcStr::as_str)) {
                let children: Vec<&str> = repo
                    .dirs
                    .iter()
                    .filter(|d| !d.is_empty() && parent_of(d) == dir)
                    .map(ArcStr::as_str)
                    .collect();
                assert_eq!(repo.subdirs(dir).collect::<Vec<_>>(), children, "{dir:?}");
            }
        };
        agrees(&repo);
        assert_eq!(
            repo.subdirs("a").collect::<Vec<_>>(),
            ["a/b", "a/b-c", "a/b.c", "a/b0"]
        );
        assert_eq!(
            repo.subdirs("").collect::<Vec<_>>(),
            ["a", "a-b", "a0", "b"]
        );
        let changes = BTreeMap::from([(
            "a/b/e/f/x.yaml".to_string(),
            Some("kind: Secret\n".to_string()),
        )]);
        let changed = repo.with_changes(&changes);
        agrees(&changed);
        assert_eq!(
            changed.subdirs("a/b").collect::<Vec<_>>(),
            ["a/b/c", "a/b/e"]
        );
        assert_eq!(repo.subdirs("a/b").collect::<Vec<_>>(), ["a/b/c"]);
    }

    /// A change that removes a folder's last file removes the folder, as its commit does (git
    /// keeps no empty folder), with the empty folders below it and above it; a folder that
    /// still holds a file (YAML or other, here or below) stays, and the loaded repository
    /// keeps its own.
    #[test]
    fn a_folder_a_change_empties_is_gone() {
        let tmp = tempfile::tempdir().unwrap();
        for rel in ["a/b/x.yaml", "a/c/y.yaml", "d/e/z.yaml"] {
            write(tmp.path(), rel, "kind: ConfigMap\n");
        }
        write(tmp.path(), "d/notes.txt", "kept\n");
        std::fs::create_dir_all(tmp.path().join("a/b/empty")).unwrap();
        let repo = Repo::load(tmp.path()).unwrap();
        assert!(repo.is_dir("a/b/empty"));
        let removed = |paths: &[&str]| {
            repo.with_changes(&paths.iter().map(|p| (p.to_string(), None)).collect())
        };
        let changed = removed(&["a/b/x.yaml"]);
        assert!(!changed.is_dir("a/b") && !changed.is_dir("a/b/empty"));
        assert!(changed.is_dir("a") && changed.is_dir("a/c"));
        let changed = removed(&["a/b/x.yaml", "a/c/y.yaml"]);
        assert!(!changed.is_dir("a") && !changed.is_dir("a/c"));
        let changed = removed(&["d/e/z.yaml"]);
        assert!(!changed.is_dir("d/e") && changed.is_dir("d"));
        assert!(repo.is_dir("a/b") && repo.is_dir("a/b/empty") && repo.is_dir("d/e"));
    }
}
