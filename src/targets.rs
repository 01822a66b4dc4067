//! Whether a changeset's targets can be written on disk: a plain relative path below the root
//! with no symbolic link on the way, no file on disk where one is created (whatever the ignore
//! rules hid from the loader), a regular file where one is edited or deleted. Below `verify`,
//! which drops a fix that could not be written, and `emit::write`, which checks again.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::changes::{ChangeError, FileChange};

/// The longest file name Linux file systems take, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// Why a change cannot be written where it goes.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("refusing to write {0}: it is outside the repository root or behind a symbolic link")]
    Unsafe(String),
    #[error(
        "refusing to create {0}: it already exists (perhaps hidden from fluxmend by .gitignore or \
         .sourceignore); move it away and run fix again"
    )]
    Exists(String),
    #[error(
        "refusing to create {path}: a file name of {bytes} bytes is longer than the 255 allowed"
    )]
    NameTooLong { path: String, bytes: usize },
    #[error("{0}")]
    Change(#[from] ChangeError),
    #[error("{0:#}")]
    Io(#[from] anyhow::Error),
}

/// Check that `rel` is a plain relative path whose existing components below `root` are real
/// directories (no symbolic link anywhere), and return the full path.
fn safe_path(root: &Path, rel: &str) -> Result<PathBuf, TargetError> {
    if !plain_relative(rel) {
        return Err(TargetError::Unsafe(rel.into()));
    }
    if let Some(long) = rel.split('/').find(|c| c.len() > MAX_NAME_BYTES) {
        return Err(TargetError::NameTooLong {
            path: shorten(rel),
            bytes: long.len(),
        });
    }
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(TargetError::Unsafe(rel.into()));
            }
            Ok(meta) if i + 1 < parts.len() && !meta.is_dir() => {
                return Err(TargetError::Unsafe(rel.into()));
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => break,
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", at.display()))
                    .into());
            }
        }
    }
    Ok(root.join(rel))
}

/// `rel` is relative, without empty, `.` or `..` components or NUL.
pub(crate) fn plain_relative(rel: &str) -> bool {
    !rel.is_empty()
        && !rel.starts_with('/')
        && !rel
            .split('/')
            .any(|c| c == ".." || c == "." || c.is_empty() || c.contains('\0'))
}

/// A path for messages: at most 120 bytes of it.
fn shorten(rel: &str) -> String {
    if rel.len() <= 120 {
        return rel.to_string();
    }
    let mut end = 100;
    while !rel.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &rel[..end], rel.len())
}

/// Check, without writing, that every change can be written: its path is safe, a file it
/// creates does not exist on disk (whatever the ignore rules hide from the loader), a file it
/// edits or deletes is a regular file.
pub fn check_targets(root: &Path, files: &[FileChange]) -> Result<(), TargetError> {
    for f in files {
        let target = safe_path(root, &f.path)?;
        let meta = fs::symlink_metadata(&target);
        match (&f.before, meta) {
            (None, Ok(_)) => return Err(TargetError::Exists(f.path.clone())),
            (None, Err(e)) if e.kind() == io::ErrorKind::NotFound => {}
            (Some(_), Ok(m)) if m.is_file() => {}
            (Some(_), Ok(_)) => return Err(TargetError::Unsafe(f.path.clone())),
            (_, Err(e)) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", target.display()))
                    .into());
            }
        }
    }
    Ok(())
}
