//! A repository as it was at a git revision, read from git's objects and never written to disk:
//! the tree below the analysed path is listed with git's own rules for names (an entry git would
//! refuse to check out is skipped and reported) and the ignore rules a checkout of it would have
//! (its `.gitignore` and `.sourceignore` blobs, Flux's defaults, the configuration's
//! `exclude`); only the YAML blobs fluxmend parses are read, each judged by the size in its
//! object header before it is read. The loaded [`Repo`] is the one a checkout would give, so that
//! the revision and the work tree compare as equals (`simulate --from`, `fix --base`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::gitignore::Gitignore;

use super::ignore_files::{self, DirIgnores, ignored};
use super::read::ReadError;
use super::{
    Contents, EntryKind, Ignores, Listing, Origin, Repo, SourceFile, WalkedEntry, decode_text,
    not_utf8, within_limit,
};

/// Reading a revision failed.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error(
        "{path} is not inside a git repository, so no revision of it can be read (--from, --to, --base)"
    )]
    NotARepository { path: PathBuf },
    #[error("`{rev}` is not a revision of {repo}: {message}")]
    UnknownRevision {
        rev: String,
        repo: PathBuf,
        message: String,
    },
    #[error("reading {rev}: {message}")]
    Read { rev: String, message: String },
}

/// The repository at `path` as it was at revision `rev`, with the configuration's `exclude`
/// patterns applied as [`Repo::load_excluding`] applies them to the work tree. `path` may be
/// a directory below the work tree's top level; at a revision where it does not exist the
/// repository is empty.
///
/// A YAML file of `known` (the work tree, loaded already) whose bytes are those of the blob at
/// the same path is shared, not read nor parsed again: the revision usually differs from the work
/// tree in a few files.
pub fn load_revision(
    path: &Path,
    rev: &str,
    exclude: &[String],
    known: Option<&Repo>,
) -> Result<Repo, RevisionError> {
    let read = |message: String| RevisionError::Read {
        rev: rev.into(),
        message,
    };
    let (git, root, prefix) = open(path).map_err(|e| match e {
        Opened::NotARepository => RevisionError::NotARepository {
            path: path.to_path_buf(),
        },
        Opened::Failed(message) => read(message),
    })?;
    let below = {
        let tree = git
            .revparse_single(rev)
            .and_then(|o| o.peel_to_tree())
            .map_err(|e| RevisionError::UnknownRevision {
                rev: rev.into(),
                repo: git.workdir().unwrap_or(git.path()).to_path_buf(),
                message: e.message().to_string(),
            })?;
        if prefix.as_os_str().is_empty() {
            Some(tree.id())
        } else {
            tree.get_path(&prefix)
                .ok()
                .filter(|e| e.kind() == Some(git2::ObjectType::Tree))
                .map(|e| e.id())
        }
    };
    let mut blobs = BTreeMap::new();
    let listing = match below {
        Some(id) => {
            list(&git, id, &root, &Ignores::new(&root, exclude), &mut blobs).map_err(read)?
        }
        // Nothing there at this revision: an empty root, as an empty checkout would be.
        None => Listing {
            entries: vec![WalkedEntry {
                rel: String::new(),
                kind: EntryKind::Dir,
                default_ignored: false,
            }],
            problems: Vec::new(),
        },
    };
    let objects = Arc::new(Objects {
        git: Mutex::new(git),
        blobs,
        missing: Mutex::default(),
    });
    let repo = Repo::assemble(
        root,
        listing,
        &Reading {
            objects: &objects,
            known,
        },
        Origin::Revision(objects.clone()),
    );
    let mut missing = std::mem::take(
        &mut *objects
            .missing
            .lock()
            .map_err(|_| read("a reader panicked".into()))?,
    );
    missing.sort();
    if let Some(first) = missing.first() {
        return Err(read(incomplete(first, missing.len())));
    }
    Ok(repo)
}

/// Why a revision whose objects are not all here cannot be read: a file missing from it would
/// look deleted (or never protected) in the comparison.
fn incomplete(first: &str, count: usize) -> String {
    format!(
        "its objects are incomplete (a shallow or partial clone?): {first}{} cannot be read; fetch the revision first",
        match count {
            1 => String::new(),
            n => format!(" and {} more files", n - 1),
        }
    )
}

/// A revision's files as a load reads them: from its objects, or shared with `known`.
struct Reading<'a> {
    objects: &'a Objects,
    known: Option<&'a Repo>,
}

impl Contents for Reading<'_> {
    fn read(&self, rel: &str) -> Result<String, String> {
        self.objects.read(rel)
    }

    fn is_file(&self, rel: &str) -> bool {
        self.objects.is_file(rel)
    }

    fn parsed(&self, rel: &str) -> Option<Arc<SourceFile>> {
        let known = self.known?;
        if known.generated_from(rel).is_some() {
            return None;
        }
        let file = &known.files[known.file_id(rel)?];
        let blob = *self.objects.blobs.get(rel)?;
        let bom = if file.yaml.bom { "\u{feff}" } else { "" };
        let bytes = [bom.as_bytes(), file.yaml.text.as_bytes()].concat();
        let same = git2::Oid::hash_object(git2::ObjectType::Blob, &bytes).ok()? == blob;
        same.then(|| file.clone())
    }
}

/// The revision `fix` takes the cluster to run when `--base` is not given: the remote's default
/// branch (`refs/remotes/<remote>/HEAD`, the remote being the current branch's or `origin`),
/// else the current branch's remote-tracking branch, else `HEAD`; `None` when `path` is not in
/// a git repository or has no commit yet. As a full reference name (`refs/remotes/origin/main`,
/// `HEAD`).
///
/// The default branch comes first because it is what Flux's `GitRepository` usually follows: a
/// feature branch's own remote-tracking branch holds a phase as soon as it is pushed, long
/// before the cluster runs it.
pub fn default_base(path: &Path) -> Option<String> {
    let (git, _, _) = open(path).ok()?;
    let head = git.head().ok()?;
    let branch = head
        .is_branch()
        .then(|| head.name().ok().map(str::to_string))
        .flatten();
    let upstream_remote = branch
        .as_deref()
        .and_then(|b| git.branch_upstream_remote(b).ok())
        .and_then(|r| r.as_str().ok().map(str::to_string));
    let remote = upstream_remote.or_else(|| {
        let remotes = git.remotes().ok()?;
        let names: Vec<&str> = remotes.iter().filter_map(|r| r.ok().flatten()).collect();
        match names.as_slice() {
            [only] => Some(only.to_string()),
            _ if names.contains(&"origin") => Some("origin".into()),
            _ => None,
        }
    });
    let resolves = |name: &str| git.revparse_single(name).is_ok();
    let default_branch = remote.and_then(|r| {
        let head = git.find_reference(&format!("refs/remotes/{r}/HEAD")).ok()?;
        head.symbolic_target().ok().flatten().map(str::to_string)
    });
    let upstream = branch
        .as_deref()
        .and_then(|b| git.branch_upstream_name(b).ok())
        .and_then(|u| u.as_str().ok().map(str::to_string));
    default_branch
        .into_iter()
        .chain(upstream)
        .find(|r| resolves(r))
        .or_else(|| resolves("HEAD").then(|| "HEAD".to_string()))
}

/// A revision name as people read it: `origin/main` for `refs/remotes/origin/main`.
pub fn short_name(rev: &str) -> &str {
    ["refs/remotes/", "refs/heads/", "refs/tags/"]
        .iter()
        .find_map(|p| rev.strip_prefix(p))
        .unwrap_or(rev)
}

/// Why a repository could not be opened.
enum Opened {
    NotARepository,
    Failed(String),
}

/// The git repository holding `path`, `path` canonical, and `path` relative to the work tree's
/// top level.
fn open(path: &Path) -> Result<(git2::Repository, PathBuf, PathBuf), Opened> {
    let git = git2::Repository::discover(path).map_err(|_| Opened::NotARepository)?;
    let workdir = git
        .workdir()
        .ok_or(Opened::NotARepository)?
        .canonicalize()
        .map_err(|e| Opened::Failed(e.to_string()))?;
    let root = path
        .canonicalize()
        .map_err(|e| Opened::Failed(e.to_string()))?;
    let prefix = root
        .strip_prefix(&workdir)
        .map_err(|_| Opened::Failed(format!("{} is outside the work tree", path.display())))?
        .to_path_buf();
    Ok((git, root, prefix))
}

/// The blobs of a revision below the analysed path, read on demand.
pub struct Objects {
    /// `git2::Repository` is not `Sync`; reads are short (a header, or a blob within the limit).
    git: Mutex<git2::Repository>,
    /// Every regular file of the listed tree (ignored ones included, as on disk), by path
    /// relative to the root.
    blobs: BTreeMap<String, git2::Oid>,
    /// Files whose blob the object store lacks, as they are met.
    missing: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Objects")
            .field("blobs", &self.blobs.len())
            .finish_non_exhaustive()
    }
}

impl Objects {
    /// A blob's bytes, when its header says it is within the size limit.
    fn bytes(&self, rel: &str) -> Result<Vec<u8>, String> {
        let id = *self
            .blobs
            .get(rel)
            .ok_or_else(|| "no such file at this revision".to_string())?;
        let git = self
            .git
            .lock()
            .map_err(|_| "a reader panicked".to_string())?;
        read_blob(&git, id).map_err(|e| match e {
            Unread::Skipped(why) => why,
            Unread::Missing(why) => {
                if let Ok(mut missing) = self.missing.lock() {
                    missing.push(rel.to_string());
                }
                why
            }
        })
    }

    /// A YAML file's text (see [`decode_text`]).
    fn read(&self, rel: &str) -> Result<String, String> {
        decode_text(self.bytes(rel)?)
    }

    fn is_file(&self, rel: &str) -> bool {
        self.blobs.contains_key(rel)
    }

    /// A file's bytes, as [`Repo::read_bytes`] reads them from a work tree: a name the
    /// revision does not hold is missing.
    pub(super) fn read_bytes(&self, rel: &str) -> Result<Vec<u8>, ReadError> {
        if !self.blobs.contains_key(rel) {
            return Err(ReadError::Io(std::io::ErrorKind::NotFound.into()));
        }
        self.bytes(rel).map_err(ReadError::Revision)
    }
}

/// Why a blob was not read.
enum Unread {
    /// The object store does not have it (a shallow or partial clone): the revision cannot be
    /// loaded as its checkout would be.
    Missing(String),
    /// Not a file fluxmend reads (over the size limit, not a blob).
    Skipped(String),
}

/// A blob's bytes, its size judged from the object header before anything else is read.
fn read_blob(git: &git2::Repository, id: git2::Oid) -> Result<Vec<u8>, Unread> {
    let missing = |e: git2::Error| Unread::Missing(e.message().to_string());
    let odb = git.odb().map_err(missing)?;
    let (size, kind) = odb.read_header(id).map_err(missing)?;
    if kind != git2::ObjectType::Blob {
        return Err(Unread::Skipped(format!(
            "object {id} is a {kind}, not a file"
        )));
    }
    within_limit(size as u64).map_err(Unread::Skipped)?;
    let blob = git.find_blob(id).map_err(missing)?;
    Ok(blob.content().to_vec())
}

/// Why git refuses to check out an entry of this name (`verify_path`, with the NTFS and HFS
/// protections git applies on the platforms that need them: they cost nothing elsewhere);
/// `None` when it is an ordinary name.
pub fn refused_name(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        return Some("an empty name");
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Some("a name holding `/` or NUL (a path, not a name)");
    }
    if name == b"." || name == b".." {
        return Some("`.` or `..`");
    }
    if is_ntfs_dotgit(name) || is_hfs_dotgit(name) {
        return Some(
            "a name git reserves for its own directory (`.git`, in any case or spelling a file system takes for it)",
        );
    }
    None
}

/// git's `is_ntfs_dotgit`: `.git` or its short name `git~1`, in any case, followed only by
/// spaces and dots (which NTFS drops) or an alternate data stream (`:`).
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    let rest = if let Some(rest) = lower.strip_prefix(b".git") {
        rest
    } else if let Some(rest) = lower.strip_prefix(b"git~1") {
        rest
    } else {
        return false;
    };
    let end = rest.iter().position(|&c| c == b':').unwrap_or(rest.len());
    rest[..end].iter().all(|&c| c == b' ' || c == b'.')
}

/// git's `is_hfs_dotgit`: `.git` in any case once the code points HFS+ ignores are removed.
fn is_hfs_dotgit(name: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(name) else {
        return false;
    };
    let ignorable =
        |c: char| matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff);
    let kept: String = text.chars().filter(|&c| !ignorable(c)).collect();
    kept.eq_ignore_ascii_case(".git")
}

/// How deep a tree may nest: git's own limit (`core.maxTreeDepth`, 4096 since git 2.45), past
/// which it refuses to read a tree. A crafted commit can nest trees without end (a checkout
/// cannot: paths have a length limit); 20,000 levels overflowed the stack.
const MAX_TREE_DEPTH: usize = 4096;

/// List the tree `id` as the walk of its checkout at `root` would (see [`super::walk`]): the
/// ignore files of each directory apply to what lies below it, the nearest match wins, a
/// `.sourceignore` match before a `.gitignore` one, and an ignored directory is not entered.
/// Every regular file seen goes into `blobs`.
fn list(
    git: &git2::Repository,
    id: git2::Oid,
    root: &Path,
    ignores: &Ignores,
    blobs: &mut BTreeMap<String, git2::Oid>,
) -> Result<Listing, String> {
    let mut listing = Listing::default();
    listing.entries.push(WalkedEntry {
        rel: String::new(),
        kind: EntryKind::Dir,
        default_ignored: false,
    });
    // (directory relative to the root, its tree, the ignore files from the root down to it;
    // its depth is the chain's length)
    let mut pending: Vec<(String, git2::Oid, Vec<Arc<DirIgnores>>)> =
        vec![(String::new(), id, Vec::new())];
    while let Some((dir, id, mut chain)) = pending.pop() {
        if chain.len() >= MAX_TREE_DEPTH {
            listing.problems.push((
                dir,
                format!(
                    "skipped with everything below it: deeper than {MAX_TREE_DEPTH} directories, \
                     which git refuses (core.maxTreeDepth), so no checkout has it"
                ),
            ));
            continue;
        }
        let tree = git
            .find_tree(id)
            .map_err(|e| incomplete(&format!("{dir}/ ({})", e.message()), 1))?;
        let dir_path = if dir.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&dir)
        };
        let own = |name: &str| {
            let entry = tree.get_name(name)?;
            (entry.kind() == Some(git2::ObjectType::Blob) && entry.filemode() != 0o120000)
                .then(|| entry.id())
        };
        let ignore_file = |name: &str| {
            ignore_file(git, &dir_path, own(name)).map_err(|why| {
                let path = if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                };
                incomplete(&format!("{path} ({why})"), 1)
            })
        };
        chain.push(Arc::new(DirIgnores {
            gitignore: ignore_file(ignore_files::NAMES[0])?,
            sourceignore: ignore_file(ignore_files::NAMES[1])?,
        }));
        for entry in tree.iter() {
            let name = entry.name_bytes();
            let kind = match (entry.kind(), entry.filemode()) {
                (Some(git2::ObjectType::Tree), _) => EntryKind::Dir,
                (Some(git2::ObjectType::Blob), 0o120000) => EntryKind::Symlink,
                (Some(git2::ObjectType::Blob), _) => EntryKind::File,
                // A submodule: its commit is not in this repository.
                _ => continue,
            };
            let is_dir = kind == EntryKind::Dir;
            let shown = String::from_utf8_lossy(name);
            let rel_of = |name: &str| {
                if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                }
            };
            if let Some(why) = refused_name(name) {
                listing.problems.push((
                    rel_of(&shown.escape_debug().to_string()),
                    format!(
                        "skipped{}: git refuses a tree entry named {:?} ({why}), so no checkout has it",
                        if is_dir { " with everything below it" } else { "" },
                        shown
                    ),
                ));
                continue;
            }
            let Ok(name) = std::str::from_utf8(name) else {
                listing.problems.push((rel_of(&shown), not_utf8(is_dir)));
                continue;
            };
            let rel = rel_of(name);
            let path = root.join(&rel);
            if kind == EntryKind::File {
                blobs.insert(rel.clone(), entry.id());
            }
            if ignores.leaves_out(&path, is_dir) || ignored(&chain, &path, is_dir) {
                continue;
            }
            listing.entries.push(WalkedEntry {
                default_ignored: ignores.default_ignored(&path, is_dir),
                rel: rel.clone(),
                kind,
            });
            if is_dir {
                pending.push((rel, entry.id(), chain.clone()));
            }
        }
    }
    Ok(listing)
}

/// The matcher of one ignore file at `dir` (see [`ignore_files::matcher`]). A blob over the
/// size limit ignores nothing; one the object store lacks is an error.
fn ignore_file(
    git: &git2::Repository,
    dir: &Path,
    blob: Option<git2::Oid>,
) -> Result<Gitignore, String> {
    match blob.map(|id| read_blob(git, id)) {
        None | Some(Err(Unread::Skipped(_))) => Ok(Gitignore::empty()),
        Some(Err(Unread::Missing(why))) => Err(why),
        Some(Ok(bytes)) => Ok(ignore_files::matcher(dir, &bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_refuses_the_names_it_reserves() {
        for name in [
            "",
            ".",
            "..",
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git . ",
            ".git:x",
            "git~1",
            "GIT~1",
            "a/b",
            "../x",
            "/abs",
            ".g\u{200c}it",
            "\u{feff}.GIT",
        ] {
            assert!(refused_name(name.as_bytes()).is_some(), "{name:?}");
        }
        for name in [
            ".gitignore",
            ".github",
            "git",
            ".git-crypt",
            "x.git",
            "git~2",
            "...",
            ".sourceignore",
        ] {
            assert_eq!(refused_name(name.as_bytes()), None, "{name:?}");
        }
    }

    #[test]
    fn short_names() {
        assert_eq!(short_name("refs/remotes/origin/main"), "origin/main");
        assert_eq!(short_name("HEAD"), "HEAD");
    }
}
