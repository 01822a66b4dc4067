//! Load: walk a repository the way Flux packages it (its ignore rules), read the YAML files and
//! parse them, and set aside — with a note, not an error — what is not Kubernetes YAML.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{Match, WalkBuilder};
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use crate::diagnostics::{Diagnostic, Severity};
use crate::parse::{ParseError, YamlFile};

mod ignore_files;
pub mod read;
pub mod resourceset;
pub mod revision;

/// fluxmend's configuration file, at the repository root: fluxmend's, not Flux's (its
/// diagnostics are the configuration's, `crate::config`).
pub const CONFIG_FILE: &str = ".fluxmend.yaml";

/// Files larger than this are skipped: no Flux manifest is this big, and it bounds memory.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Flux source-controller's always-applied exclusions (fluxcd/pkg `sourceignore.ExcludeVCS`).
const FLUX_VCS_IGNORES: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];

/// Flux's other default exclusions (`ExcludeExt`, `ExcludeCI`, `ExcludeExtra`): dropped by
/// source-controller as soon as the repository has any `.sourceignore` file.
const FLUX_DEFAULT_IGNORES: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// A path the walk found (relative to the root) and whether Flux's default ignores match it.
struct WalkedEntry {
    rel: String,
    kind: EntryKind,
    default_ignored: bool,
}

/// What a walked entry is (a link is never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryKind {
    Dir,
    File,
    Symlink,
}

/// What a walk of a repository found, from the root down with Flux's ignore rules: every entry
/// Flux would ship, and what could not be walked (a warning each: path and message).
#[derive(Default)]
struct Listing {
    entries: Vec<WalkedEntry>,
    problems: Vec<(String, String)>,
}

/// What the walk met.
enum Walked {
    Entry(WalkedEntry),
    /// An entry whose path relative to the root is not UTF-8 (shown lossily).
    NotUtf8 {
        rel: String,
        is_dir: bool,
    },
    /// The walk could not read something.
    Error(String),
}

/// Where the contents of a listing's files come from: the work tree, or a git revision's
/// objects ([`revision`]).
trait Contents: Sync {
    /// The text of a YAML file, or why it cannot be read (see [`decode_text`]).
    fn read(&self, rel: &str) -> Result<String, String>;
    /// Whether a file exists at `rel`, ignored or not (a Helm chart's `Chart.yaml`).
    fn is_file(&self, rel: &str) -> bool;
    /// The file at `rel` already parsed, when another load holds the same bytes at that path
    /// (the base revision and the work tree share most files): not read nor parsed again.
    fn parsed(&self, _rel: &str) -> Option<Arc<SourceFile>> {
        None
    }
}

/// The files of a work tree.
struct WorkTree<'a> {
    root: &'a Path,
}

impl Contents for WorkTree<'_> {
    fn read(&self, rel: &str) -> Result<String, String> {
        read_candidate(self.root, rel)
    }

    fn is_file(&self, rel: &str) -> bool {
        self.root.join(rel).is_file()
    }
}

/// Where a loaded repository's files are read from after loading (a generator's input files).
#[derive(Clone, Debug)]
enum Origin {
    WorkTree,
    Revision(Arc<revision::Objects>),
}

/// What reading one YAML-named file gave.
enum Loaded {
    Parsed(Arc<SourceFile>),
    /// Not Kubernetes YAML (a note): path, reason and where it stops being YAML, if known.
    Skipped(String, String, Option<(usize, usize)>),
    /// Could not be read as text (a warning): path and reason.
    Unreadable(String, String),
}

/// Index of a file in [`Repo::files`].
pub type FileId = usize;

/// One parsed YAML file. `path` is relative to the repository root, `/`-separated.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub yaml: YamlFile,
    /// Set when the file did not parse to its end; its later documents are unknown and no fix
    /// may touch the file.
    pub error: Option<ParseError>,
}

/// The loaded repository: every YAML file fluxmend reads, every directory, and what was skipped.
#[derive(Clone, Debug)]
pub struct Repo {
    pub root: PathBuf,
    /// Sorted by path. Shared so that a re-modelled variant of the repository (verification)
    /// copies no file.
    pub files: Vec<Arc<SourceFile>>,
    /// Every directory below the root that Flux would ship (relative, `""` is the root).
    pub dirs: BTreeSet<String>,
    pub diagnostics: Vec<Diagnostic>,
    /// YAML files directly in each directory, sorted by path.
    dir_files: HashMap<String, Vec<FileId>>,
    /// Direct subdirectories of each directory, sorted.
    dir_children: HashMap<String, Vec<String>>,
    /// Every non-YAML or skipped file path, so that `resources` entries naming them resolve.
    other_files: BTreeSet<String>,
    /// The files fluxmend generated (the objects a ResourceSet generates,
    /// [`resourceset::generated_path`]), with what they come from. They are in `files`, not in
    /// any directory, and no fix may edit them.
    generated: BTreeMap<String, String>,
    /// Where files not loaded as YAML are read from, when the model needs one.
    origin: Origin,
}

/// The repository root could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
}

impl Repo {
    /// Walk and parse the repository at `root`.
    pub fn load(root: &Path) -> Result<Repo, LoadError> {
        Repo::load_excluding(root, &[])
    }

    /// [`Repo::load`], leaving out the files and directories that `exclude` (gitignore patterns
    /// relative to `root`, the configuration's `exclude`) matches: they are not loaded at all.
    pub fn load_excluding(root: &Path, exclude: &[String]) -> Result<Repo, LoadError> {
        let meta = std::fs::metadata(root).map_err(|source| LoadError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(LoadError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        let root = root.canonicalize().map_err(|source| LoadError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        let listing = walk(&root, Arc::new(Ignores::new(&root, exclude)));
        Ok(Repo::assemble(
            root.clone(),
            listing,
            &WorkTree { root: &root },
            Origin::WorkTree,
        ))
    }

    /// The repository a listing describes, its YAML files read from `contents` and parsed.
    fn assemble(root: PathBuf, listing: Listing, contents: &dyn Contents, origin: Origin) -> Repo {
        let mut repo = Repo {
            root,
            files: Vec::new(),
            dirs: BTreeSet::new(),
            diagnostics: Vec::new(),
            dir_files: HashMap::default(),
            dir_children: HashMap::default(),
            other_files: BTreeSet::new(),
            generated: BTreeMap::new(),
            origin,
        };
        let Listing {
            mut entries,
            mut problems,
        } = listing;
        problems.sort();
        for (rel, message) in problems {
            repo.diagnostics
                .push(Diagnostic::new(Severity::Warning, &rel, message));
        }
        entries.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        let has_sourceignore = entries
            .iter()
            .any(|e| e.rel == ".sourceignore" || e.rel.ends_with("/.sourceignore"));
        let mut candidates = Vec::new();
        for WalkedEntry {
            rel,
            kind,
            default_ignored,
        } in entries
        {
            if default_ignored && !has_sourceignore {
                continue;
            }
            match kind {
                EntryKind::Symlink => repo.diagnostics.push(Diagnostic::new(
                    Severity::Note,
                    &rel,
                    "symbolic link not followed (fluxmend never reads through a link)".into(),
                )),
                EntryKind::Dir => {
                    repo.dirs.insert(rel);
                }
                EntryKind::File if is_yaml_name(&rel) => candidates.push(rel),
                EntryKind::File => {
                    repo.other_files.insert(rel);
                }
            }
        }
        candidates.sort();
        // Read and parse in parallel (the bulk of the work); record in path order.
        let dirs = &repo.dirs;
        let loaded: Vec<Loaded> = candidates
            .into_par_iter()
            .map(|rel| match contents.parsed(&rel) {
                // The same bytes parsed by another load: readable, and judged as text the same.
                Some(file) => match skip_reason(&rel, dirs, contents) {
                    Some(reason) => Loaded::Skipped(rel, reason, None),
                    None => Loaded::Parsed(file),
                },
                None => Repo::read_and_parse(rel, dirs, contents),
            })
            .collect();
        repo.files.reserve_exact(loaded.len());
        for outcome in loaded {
            match outcome {
                Loaded::Skipped(rel, reason, at) => {
                    let note = Diagnostic::new(Severity::Note, &rel, format!("skipped: {reason}"));
                    repo.diagnostics.push(match at {
                        Some((line, column)) => note.at(line, column),
                        None => note,
                    });
                    repo.other_files.insert(rel);
                }
                Loaded::Unreadable(rel, reason) => {
                    repo.diagnostics.push(Diagnostic::new(
                        Severity::Warning,
                        &rel,
                        format!("skipped: {reason}"),
                    ));
                    repo.other_files.insert(rel);
                }
                Loaded::Parsed(file) => {
                    if let Some(e) = &file.error {
                        repo.diagnostics.push(
                            Diagnostic::new(
                                Severity::Error,
                                &file.path,
                                format!("YAML does not parse: {}", e.message),
                            )
                            .at(e.line, e.column),
                        );
                    }
                    repo.dir_files
                        .entry(parent_of(&file.path).to_string())
                        .or_default()
                        .push(repo.files.len());
                    repo.files.push(file);
                }
            }
        }
        resourceset::expand(&mut repo);
        repo.index_dirs();
        repo.debug_assert_sorted();
        repo
    }

    /// Read one YAML-named file and parse it, or say why it is skipped.
    fn read_and_parse(rel: String, dirs: &BTreeSet<String>, contents: &dyn Contents) -> Loaded {
        match contents.read(&rel) {
            Err(reason) => Loaded::Unreadable(rel, reason),
            Ok(text) => match skip_reason(&rel, dirs, contents) {
                Some(reason) => Loaded::Skipped(rel, reason, None),
                None => {
                    // `{{ … }}` in a string value or a comment is ordinary YAML that Flux
                    // applies as is: only a file that does not parse is judged a template.
                    let template = has_template_syntax(&text);
                    let (yaml, error) = YamlFile::parse_owned(text);
                    match error {
                        Some(e) if template => Loaded::Skipped(
                            rel,
                            format!(
                                "template text ({{{{ }}}} or {{% %}}) that is not YAML: {}",
                                e.message
                            ),
                            Some((e.line, e.column)),
                        ),
                        error => Loaded::Parsed(Arc::new(SourceFile {
                            path: rel,
                            yaml,
                            error,
                        })),
                    }
                }
            },
        }
    }

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
    pub fn with_changes(&self, changes: &BTreeMap<String, Option<String>>) -> Repo {
        let mut repo = Repo {
            root: self.root.clone(),
            files: Vec::with_capacity(self.files.len()),
            dirs: self.dirs.clone(),
            diagnostics: Vec::new(),
            dir_files: HashMap::default(),
            dir_children: HashMap::default(),
            other_files: self.other_files.clone(),
            generated: BTreeMap::new(),
            origin: self.origin.clone(),
        };
        let mut sources: Vec<Arc<SourceFile>> = self
            .files
            .iter()
            .filter(|f| !changes.contains_key(&f.path) && !self.generated.contains_key(&f.path))
            .cloned()
            .collect();
        for (path, text) in changes {
            if let Some(text) = text {
                let (yaml, error) = YamlFile::parse(text);
                sources.push(Arc::new(SourceFile {
                    path: path.clone(),
                    yaml,
                    error,
                }));
                let mut dir = parent_of(path);
                while !dir.is_empty() && repo.dirs.insert(dir.to_string()) {
                    dir = parent_of(dir);
                }
            }
        }
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        for source in sources {
            repo.dir_files
                .entry(parent_of(&source.path).to_string())
                .or_default()
                .push(repo.files.len());
            repo.files.push(source);
        }
        resourceset::expand(&mut repo);
        repo.index_dirs();
        repo.debug_assert_sorted();
        repo
    }

    /// Rebuild the per-directory file index after `files` changed order (generated files,
    /// which belong to no directory, left out).
    fn reindex_files(&mut self) {
        self.dir_files.clear();
        for (id, f) in self.files.iter().enumerate() {
            if !self.generated.contains_key(&f.path) {
                self.dir_files
                    .entry(parent_of(&f.path).to_string())
                    .or_default()
                    .push(id);
            }
        }
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

    /// `file_id` is a binary search: `files` must be sorted by path, each path once.
    fn debug_assert_sorted(&self) {
        debug_assert!(
            self.files.windows(2).all(|w| w[0].path < w[1].path),
            "Repo::files must be sorted by path"
        );
    }

    fn index_dirs(&mut self) {
        for dir in &self.dirs {
            if !dir.is_empty() {
                self.dir_children
                    .entry(parent_of(dir).to_string())
                    .or_default()
                    .push(dir.clone());
            }
        }
    }

    /// The parsed YAML file at a relative path (`files` is sorted by path: no index to keep).
    pub fn file_id(&self, path: &str) -> Option<FileId> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id]
    }

    /// Whether a relative path names a file Flux would ship (YAML or not).
    pub fn is_file(&self, path: &str) -> bool {
        self.file_id(path).is_some() || self.other_files.contains(path)
    }

    pub fn is_dir(&self, path: &str) -> bool {
        self.dirs.contains(path)
    }

    /// YAML files directly in `dir`, sorted by path.
    pub fn files_in(&self, dir: &str) -> &[FileId] {
        self.dir_files.get(dir).map_or(&[], Vec::as_slice)
    }

    /// Every file Flux would ship that fluxmend does not parse (non-YAML, skipped), sorted.
    pub fn other_files(&self) -> impl Iterator<Item = &str> {
        self.other_files.iter().map(String::as_str)
    }

    /// `.yaml`/`.yml` files directly in `dir` that were skipped (templates, binary, too big):
    /// Flux would still try to decode them.
    pub fn skipped_yaml_in<'a>(&'a self, dir: &str) -> impl Iterator<Item = &'a str> + 'a {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
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

    /// Direct subdirectories of `dir` (full relative paths), sorted.
    pub fn subdirs(&self, dir: &str) -> &[String] {
        self.dir_children.get(dir).map_or(&[], Vec::as_slice)
    }
}

/// The ignore rules every walk applies besides the repository's own ignore files: Flux's VCS
/// exclusions, its other defaults (which apply until a `.sourceignore` exists), and the
/// configuration's `exclude`, all relative to the root.
struct Ignores {
    vcs: Gitignore,
    defaults: Gitignore,
    excluded: Gitignore,
    /// The configuration file stays whatever `exclude` says: its `disposable:` section is read
    /// from the loaded file.
    config: PathBuf,
}

impl Ignores {
    fn new(root: &Path, exclude: &[String]) -> Ignores {
        let mut builder = GitignoreBuilder::new(root);
        for pattern in exclude {
            // The configuration keeps only patterns that parse.
            let _ = builder.add_line(None, pattern);
        }
        Ignores {
            vcs: ignore_matcher(root, FLUX_VCS_IGNORES),
            defaults: ignore_matcher(root, FLUX_DEFAULT_IGNORES),
            excluded: builder.build().unwrap_or_else(|_| Gitignore::empty()),
            config: root.join(CONFIG_FILE),
        }
    }

    /// Whether the walk leaves `path` (and what lies below it) out entirely.
    fn leaves_out(&self, path: &Path, is_dir: bool) -> bool {
        let ignored = |m: &Gitignore| {
            matches!(
                m.matched_path_or_any_parents(path, is_dir),
                Match::Ignore(_)
            )
        };
        ignored(&self.vcs) || (path != self.config && ignored(&self.excluded))
    }

    /// Whether Flux's default ignores match `path` (they apply only without `.sourceignore`).
    fn default_ignored(&self, path: &Path, is_dir: bool) -> bool {
        matches!(
            self.defaults.matched_path_or_any_parents(path, is_dir),
            Match::Ignore(_)
        )
    }
}

/// Walk the work tree at `root` (canonical) with Flux's ignore rules.
fn walk(root: &Path, ignores: Arc<Ignores>) -> Listing {
    // Only what Flux reads: `.gitignore` and `.sourceignore` files from the root down, with
    // or without a `.git` directory. Not `.ignore` files, not ignore files above the root,
    // not the user's global excludes nor `.git/info/exclude`: none of them reach Flux.
    let own = Arc::new(ignore_files::WorkTree::new(root));
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .parents(false)
        .ignore(false)
        // The repository's ignore files are read by fluxmend (see `ignore_files`), not by the
        // walker, which would follow links and read without a limit.
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .filter_entry({
            let ignores = ignores.clone();
            let own = own.clone();
            move |e| {
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                !ignores.leaves_out(e.path(), is_dir) && !own.ignores(e.path(), is_dir)
            }
        })
        .build_parallel();
    // Walk in parallel (a fleet has 100,000 files to stat), then order by path. Whether
    // Flux's default ignores match is decided here too, in parallel; whether they apply is
    // known only once every `.sourceignore` has been seen.
    let found: std::sync::Mutex<Vec<Walked>> = Default::default();
    walker.run(|| {
        let found = &found;
        let ignores = &ignores;
        Box::new(move |entry| {
            let mut state = ignore::WalkState::Continue;
            let item = match entry {
                Err(err) => Some(Walked::Error(format!("skipped while walking: {err}"))),
                Ok(e) => match (e.path().strip_prefix(root), e.file_type()) {
                    (Ok(rel), Some(kind)) if rel.to_str().is_none() => {
                        // Its path cannot be written in YAML nor compared with one: say
                        // which entry it is, and skip what lies below it.
                        if kind.is_dir() {
                            state = ignore::WalkState::Skip;
                        }
                        Some(Walked::NotUtf8 {
                            rel: rel_string(rel),
                            is_dir: kind.is_dir(),
                        })
                    }
                    (Ok(rel), Some(kind)) => Some(Walked::Entry(WalkedEntry {
                        rel: rel_string(rel),
                        default_ignored: ignores.default_ignored(e.path(), kind.is_dir()),
                        kind: if kind.is_symlink() {
                            EntryKind::Symlink
                        } else if kind.is_dir() {
                            EntryKind::Dir
                        } else {
                            EntryKind::File
                        },
                    })),
                    _ => None,
                },
            };
            if let Some(item) = item {
                found.lock().expect("no walker thread panics").push(item);
            }
            state
        })
    });
    let mut listing = Listing::default();
    listing.problems.extend(own.take_problems());
    for item in found.into_inner().expect("no walker thread panics") {
        match item {
            Walked::Entry(entry) => listing.entries.push(entry),
            Walked::Error(message) => listing.problems.push((String::new(), message)),
            Walked::NotUtf8 { rel, is_dir } => {
                listing.problems.push((rel, not_utf8(is_dir)));
            }
        }
    }
    listing
}

/// Why an entry whose name is not UTF-8 is skipped.
fn not_utf8(is_dir: bool) -> String {
    let what = if is_dir {
        "skipped with everything below it: directory name is not UTF-8"
    } else {
        "skipped: file name is not UTF-8"
    };
    format!(
        "{what} (its invalid bytes are shown as U+FFFD); fluxmend can neither read nor write such \
         a path: rename it to have it analysed"
    )
}

/// The directory part of a relative path (`""` for a top-level entry).
pub fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn ignore_matcher(root: &Path, patterns: &[&str]) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    for pattern in patterns {
        builder
            .add_line(None, pattern)
            .expect("built-in ignore patterns are valid");
    }
    builder.build().expect("built-in ignore patterns are valid")
}

fn rel_string(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn is_yaml_name(path: &str) -> bool {
    path.ends_with(".yaml")
        || path.ends_with(".yml")
        || path.ends_with("/Kustomization")
        || path == "Kustomization"
}

fn read_candidate(root: &Path, rel: &str) -> Result<String, String> {
    decode_text(read::read_repo_file(root, rel).map_err(|e| e.to_string())?)
}

/// A file of `len` bytes is read only within [`MAX_FILE_BYTES`].
fn within_limit(len: u64) -> Result<(), String> {
    if len > MAX_FILE_BYTES {
        return Err(format!(
            "{len} bytes is over the {MAX_FILE_BYTES} byte limit"
        ));
    }
    Ok(())
}

/// A YAML file's bytes as text: UTF-8 without NUL bytes.
fn decode_text(bytes: Vec<u8>) -> Result<String, String> {
    if bytes.contains(&0) {
        return Err("binary file (contains NUL bytes)".into());
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

/// Whether a file holds template syntax (Helm/Go `{{ }}`, Jinja `{% %}`).
fn has_template_syntax(text: &str) -> bool {
    text.contains("{{") && (text.contains("}}") || text.contains("{{-")) || text.contains("{%")
}

/// Why a YAML-named file is not Kubernetes YAML that Flux would apply, whatever its text: a Helm
/// chart's templates and metadata. (Template text elsewhere is judged once parsed.)
fn skip_reason(rel: &str, dirs: &BTreeSet<String>, contents: &dyn Contents) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if let Some(i) = parts.iter().position(|p| *p == "templates") {
        let chart_dir = parts[..i].join("/");
        let chart = if chart_dir.is_empty() {
            "Chart.yaml".to_string()
        } else {
            format!("{chart_dir}/Chart.yaml")
        };
        if contents.is_file(&chart) || dirs.contains(&format!("{chart_dir}/charts")) {
            return Some("Helm chart template".into());
        }
    }
    let name = parts.last().copied().unwrap_or_default();
    let sibling_chart = || {
        let dir = parent_of(rel);
        contents.is_file(&if dir.is_empty() {
            "Chart.yaml".to_string()
        } else {
            format!("{dir}/Chart.yaml")
        })
    };
    if name == "Chart.yaml" || name == "values.yaml" && sibling_chart() {
        return Some("Helm chart metadata".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    /// `file_id` searches `files` by path: every file is found at its index, in a loaded
    /// repository and in one with changes, whatever the order of `-`, `.` and `/` in the paths.
    #[test]
    fn every_file_is_found_by_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        for rel in [
            "a.yaml",
            "a-b.yaml",
            "a/b.yaml",
            "a/b/c.yaml",
            "a.b/x.yaml",
            "z.yml",
        ] {
            write(tmp.path(), rel, "kind: ConfigMap\n");
        }
        let repo = Repo::load(tmp.path()).unwrap();
        let found = |repo: &Repo| {
            for (id, file) in repo.files.iter().enumerate() {
                assert_eq!(repo.file_id(&file.path), Some(id), "{}", file.path);
                assert!(repo.is_file(&file.path));
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
        ]);
        let changed = repo.with_changes(&changes);
        assert_eq!(found(&changed), 7);
        assert_eq!(changed.file_id("a/b.yaml"), None);
        assert!(changed.file_id("0.yaml").is_some());
    }

    #[test]
    fn flux_default_ignores_apply_until_a_sourceignore_exists() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), ".github/workflows/ci.yaml", "on: push\n");
        write(
            tmp.path(),
            "apps/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        );
        let paths = |repo: &Repo| {
            repo.files
                .iter()
                .map(|f| f.path.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(paths(&Repo::load(tmp.path()).unwrap()), ["apps/cm.yaml"]);
        // source-controller keeps only the VCS defaults once any .sourceignore exists.
        write(tmp.path(), "apps/.sourceignore", "*.txt\n");
        assert_eq!(
            paths(&Repo::load(tmp.path()).unwrap()),
            [".github/workflows/ci.yaml", "apps/cm.yaml"]
        );
    }
}
