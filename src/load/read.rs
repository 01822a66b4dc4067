//! Reading a file of the repository, the one way every reader does it (the loader, the
//! generators' files, the kustomize gate's copies): the path is relative to the root and stays
//! below it, no component is followed through a symbolic link, only a regular file is opened
//! (a FIFO would hang, a device never end), and never more than [`MAX_FILE_BYTES`] is read.
//! A YAML file's bytes become text here too, whichever reader read them.

use std::io::Read as _;
use std::path::Path;

use crate::platform::{Beneath, OpenError};

/// Files larger than this are skipped: no Flux manifest is this big, and it bounds memory.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// Why a file of the repository was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{0}` is not a path inside the repository")]
    OutsideRoot(String),
    #[error("it leads through the symbolic link {0} (fluxmend never reads through a link)")]
    Link(String),
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    #[error("{0} bytes is over the {MAX_FILE_BYTES} byte limit")]
    TooLarge(u64),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Revision(String),
}

impl ReadError {
    /// The file does not exist.
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadError::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// The bytes of `rel` (`/`-separated, relative to `root`), read as the module says.
pub fn read_repo_file(root: &Path, rel: &str) -> Result<Vec<u8>, ReadError> {
    read_beneath(&Beneath::new(root), rel)
}

/// [`read_repo_file`] below a root held open, for a reader of many files.
pub fn read_beneath(root: &Beneath, rel: &str) -> Result<Vec<u8>, ReadError> {
    let components: Vec<&str> = rel.split('/').collect();
    if rel.is_empty()
        || components
            .iter()
            // A backslash separates components only on Windows; elsewhere it is a name's byte.
            .any(|c| c.is_empty() || *c == "." || *c == ".." || (cfg!(windows) && c.contains('\\')))
    {
        return Err(ReadError::OutsideRoot(rel.to_string()));
    }
    let (file, size) = root.open_regular(&components).map_err(|e| match e {
        OpenError::Link(at) => ReadError::Link(at),
        OpenError::NotRegular(what) => ReadError::NotRegular(what),
        OpenError::Io(e) => ReadError::Io(e),
    })?;
    if size > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(size));
    }
    // The file may grow while it is read: never take more than the limit.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadError::TooLarge(bytes.len() as u64));
    }
    Ok(bytes)
}

/// A file of `len` bytes is read only within [`MAX_FILE_BYTES`].
pub(super) fn within_limit(len: u64) -> Result<(), String> {
    if len > MAX_FILE_BYTES {
        return Err(format!(
            "{len} bytes is over the {MAX_FILE_BYTES} byte limit"
        ));
    }
    Ok(())
}

/// A YAML file's bytes as text: UTF-8 without NUL bytes.
pub(super) fn decode_text(bytes: Vec<u8>) -> Result<String, String> {
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

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn reads_regular_files_only_and_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        std::fs::write(tmp.path().join("d/ok"), "inside").unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("linked-dir")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), tmp.path().join("d/link"))
            .unwrap();
        let fifo = std::ffi::CString::new(tmp.path().join("d/fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let root = tmp.path().canonicalize().unwrap();
        assert_eq!(read_repo_file(&root, "d/ok").unwrap(), b"inside");
        assert!(matches!(
            read_repo_file(&root, "linked-dir/secret"),
            Err(ReadError::Link(l)) if l == "linked-dir"
        ));
        assert!(matches!(
            read_repo_file(&root, "d/link"),
            Err(ReadError::Link(_))
        ));
        assert!(matches!(
            read_repo_file(&root, "d/fifo"),
            Err(ReadError::NotRegular("a named pipe (FIFO)"))
        ));
        assert!(matches!(
            read_repo_file(&root, "d"),
            Err(ReadError::NotRegular("a directory"))
        ));
        for bad in ["../x", "d/../d/ok", "/etc/passwd", "", "d//ok"] {
            assert!(
                matches!(read_repo_file(&root, bad), Err(ReadError::OutsideRoot(_))),
                "{bad}"
            );
        }
        assert!(read_repo_file(&root, "d/none").unwrap_err().is_missing());
        // Off Windows a backslash is a byte of the name, not a way out of the directory.
        std::fs::write(tmp.path().join("d/a\\b.yaml"), "named").unwrap();
        assert_eq!(read_repo_file(&root, "d/a\\b.yaml").unwrap(), b"named");
        assert!(
            read_repo_file(&root, "d\\..\\..\\x")
                .unwrap_err()
                .is_missing()
        );
    }
}
