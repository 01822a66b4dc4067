//! The blobs of a git revision, read on demand from git's objects and never written to disk:
//! each judged by the size in its object header before it is read, and a blob the object store
//! lacks (a shallow or partial clone) noted, so that the revision is refused rather than loaded
//! with files missing.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::read::{ReadError, decode_text, within_limit};

/// Why a revision whose objects are not all here cannot be read: a file missing from it would
/// look deleted (or never protected) in the comparison.
pub(super) fn incomplete(first: &str, count: usize) -> String {
    format!(
        "its objects are incomplete (a shallow or partial clone?): {first}{} cannot be read; fetch the revision first",
        match count {
            1 => String::new(),
            n => format!(" and {} more files", n - 1),
        }
    )
}

/// The blobs of a revision below the analysed path, read on demand.
pub struct Objects {
    /// `git2::Repository` is not `Sync`; reads are short (a header, or a blob within the limit).
    pub(super) git: Mutex<git2::Repository>,
    /// Every regular file of the listed tree (ignored ones included, as on disk), by path
    /// relative to the root.
    pub(super) blobs: BTreeMap<String, git2::Oid>,
    /// Files whose blob the object store lacks, as they are met.
    pub(super) missing: Mutex<Vec<String>>,
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
    pub(super) fn read(&self, rel: &str) -> Result<String, String> {
        decode_text(self.bytes(rel)?)
    }

    pub(super) fn is_file(&self, rel: &str) -> bool {
        self.blobs.contains_key(rel)
    }

    /// A file's bytes, as `Repo::read_bytes` reads them from a work tree: a name the
    /// revision does not hold is missing.
    pub(super) fn read_bytes(&self, rel: &str) -> Result<Vec<u8>, ReadError> {
        if !self.blobs.contains_key(rel) {
            return Err(ReadError::Io(std::io::ErrorKind::NotFound.into()));
        }
        self.bytes(rel).map_err(ReadError::Revision)
    }
}

/// Why a blob was not read.
pub(super) enum Unread {
    /// The object store does not have it (a shallow or partial clone): the revision cannot be
    /// loaded as its checkout would be.
    Missing(String),
    /// Not a file fluxmend reads (over the size limit, not a blob).
    Skipped(String),
}

/// A blob's bytes, its size judged from the object header before anything else is read.
pub(super) fn read_blob(git: &git2::Repository, id: git2::Oid) -> Result<Vec<u8>, Unread> {
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
