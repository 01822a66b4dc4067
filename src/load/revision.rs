//! A repository as it was at a git revision, read from git's objects and never written to disk:
//! its tree listed as a checkout of it would hold it (`git_tree`), and only the YAML blobs
//! fluxmend parses read (`objects`). The loaded [`Repo`] is the one a checkout would give, so that
//! the revision and the work tree compare as equals (`simulate --from`, `fix --base`). Also the
//! revision `fix` starts from by default, and a revision's name as people read it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::assemble::Contents;
use super::file::SourceFile;
use super::git_tree::list;
use super::ignores::Ignores;
use super::listing::{EntryKind, Listing, WalkedEntry};
use super::objects::{Objects, incomplete};
use super::repo::{Origin, Repo};

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
    // The listing reads each tree once: libgit2's object cache (on by default, up to 256 MB)
    // kept every tree it read, 35 MB of `fix`'s peak in a clean checkout of 142k files (issue
    // 26), in the system allocator's heap, where freeing it did not give it back.
    git2::opts::enable_caching(false);
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
        let file = &known.files[known.file_id(rel)? as usize];
        let blob = *self.objects.blobs.get(rel)?;
        let bom = if file.yaml.bom { "\u{feff}" } else { "" };
        let bytes = [bom.as_bytes(), file.yaml.text().as_bytes()].concat();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short_name("refs/remotes/origin/main"), "origin/main");
        assert_eq!(short_name("HEAD"), "HEAD");
    }
}
