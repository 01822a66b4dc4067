//! A changeset applied to the repository's file contents: what every touched file holds before
//! and after. Below `verify` (the gates re-model the result) and `emit` (which prints, writes or
//! commits it), so that proving a fix does not depend on the printer.

use std::collections::BTreeMap;

use crate::edit::{self, Changeset, FileOp};
use crate::load::Repo;

/// A file's contents before and after (`None`: absent), BOM included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Why a changeset cannot be applied to the contents.
#[derive(Debug, thiserror::Error)]
pub enum ChangeError {
    #[error("refusing to write {0}: it is outside the repository root or behind a symbolic link")]
    NotLoaded(String),
    #[error("{0}")]
    Edit(#[from] edit::EditError),
}

/// Compute every touched file's new contents.
pub fn contents(repo: &Repo, changes: &Changeset) -> Result<Vec<FileChange>, ChangeError> {
    let mut out = Vec::new();
    for (path, op) in &changes.files {
        let before = original_text(repo, path);
        let after = match op {
            FileOp::Edit(edits) => {
                let f = repo.file(
                    repo.file_id(path)
                        .ok_or_else(|| ChangeError::NotLoaded(path.clone()))?,
                );
                Some(format!(
                    "{}{}",
                    if f.yaml.bom { "\u{feff}" } else { "" },
                    edit::apply(f.yaml.text(), edits)?
                ))
            }
            FileOp::Create(text) => Some(text.clone()),
            FileOp::Delete => None,
        };
        out.push(FileChange {
            path: path.clone(),
            before,
            after,
        });
    }
    Ok(out)
}

/// A loaded file's text as it is on disk (its BOM put back); `None` when `path` is not loaded.
pub fn original_text(repo: &Repo, path: &str) -> Option<String> {
    repo.file_id(path).map(|id| {
        let f = repo.file(id);
        format!(
            "{}{}",
            if f.yaml.bom { "\u{feff}" } else { "" },
            f.yaml.text()
        )
    })
}

/// The changes as `path -> new text` (`None` = deleted), for re-modelling.
pub fn as_overlay(files: &[FileChange]) -> BTreeMap<String, Option<String>> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.after.clone()))
        .collect()
}

/// The files an overlay (path → text, or deleted) changes against `repo`: the inverse of
/// [`as_overlay`], for the several phases of a move applied one after another.
pub fn from_overlay(repo: &Repo, overlay: BTreeMap<String, Option<String>>) -> Vec<FileChange> {
    overlay
        .into_iter()
        .map(|(path, after)| FileChange {
            before: original_text(repo, &path),
            path,
            after,
        })
        .filter(|f| f.before != f.after)
        .collect()
}
