//! A repository as it was at a git revision, read with git2 without checking anything out: its
//! tree (below the analysed path) is written to a private temporary directory and loaded from
//! there like a work tree, so that the ignore rules, paths and parsing are exactly those of a
//! checkout of that revision.

use std::path::{Path, PathBuf};

use super::{LoadError, Repo};

/// Reading a revision failed.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    #[error("{path} is not inside a git repository, so --from/--to cannot read revisions")]
    NotARepository { path: PathBuf },
    #[error("`{rev}` is not a revision of {repo}: {message}")]
    UnknownRevision {
        rev: String,
        repo: PathBuf,
        message: String,
    },
    #[error("reading {rev}: {message}")]
    Read { rev: String, message: String },
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// The repository at `path` as it was at revision `rev`: the loaded repository and the
/// temporary directory that holds it (removed when dropped).
pub fn load_revision(path: &Path, rev: &str) -> Result<(Repo, tempfile::TempDir), RevisionError> {
    let git = git2::Repository::discover(path).map_err(|_| RevisionError::NotARepository {
        path: path.to_path_buf(),
    })?;
    let workdir = git
        .workdir()
        .ok_or_else(|| RevisionError::NotARepository {
            path: path.to_path_buf(),
        })?
        .canonicalize()
        .map_err(|e| RevisionError::Read {
            rev: rev.into(),
            message: e.to_string(),
        })?;
    let read = |message: String| RevisionError::Read {
        rev: rev.into(),
        message,
    };
    let absolute = path.canonicalize().map_err(|e| read(e.to_string()))?;
    let prefix = absolute
        .strip_prefix(&workdir)
        .map_err(|_| read(format!("{} is outside the work tree", path.display())))?
        .to_path_buf();
    let tree = git
        .revparse_single(rev)
        .and_then(|o| o.peel_to_tree())
        .map_err(|e| RevisionError::UnknownRevision {
            rev: rev.into(),
            repo: workdir.clone(),
            message: e.message().to_string(),
        })?;
    let dir = tempfile::Builder::new()
        .prefix("fluxmend-rev-")
        .tempdir()
        .map_err(|e| read(e.to_string()))?;
    let mut failure = None;
    tree.walk(git2::TreeWalkMode::PreOrder, |parent, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) || entry.filemode() == 0o120000 {
            return git2::TreeWalkResult::Ok;
        }
        let Ok(name) = entry.name() else {
            return git2::TreeWalkResult::Ok;
        };
        let full = Path::new(parent).join(name);
        let Ok(relative) = full.strip_prefix(&prefix) else {
            return git2::TreeWalkResult::Ok;
        };
        let written = git
            .find_blob(entry.id())
            .map_err(|e| e.message().to_string())
            .and_then(|blob| {
                let target = dir.path().join(relative);
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                std::fs::write(&target, blob.content()).map_err(|e| e.to_string())
            });
        match written {
            Ok(()) => git2::TreeWalkResult::Ok,
            Err(e) => {
                failure = Some(e);
                git2::TreeWalkResult::Abort
            }
        }
    })
    .map_err(|e| read(e.message().to_string()))?;
    if let Some(e) = failure {
        return Err(read(e));
    }
    let repo = Repo::load(dir.path())?;
    Ok((repo, dir))
}
