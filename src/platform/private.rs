//! Owner-only files and directories (0600, 0700 where modes exist), never written through a
//! link: the copies the kustomize gate builds can hold Secrets.

use std::io;
use std::path::Path;

/// Make `dir` and its missing parents, owner-only (0700 where modes exist): the copies the
/// kustomize gate builds can hold Secrets.
pub fn private_dirs(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Write a file owner-only (0600 where modes exist), never through a link.
pub fn private_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(io::Error::other(
            "refusing to write through a symbolic link",
        ));
    }
    options.open(path)?.write_all(bytes)
}

/// A private temporary directory (0700 where modes exist), removed on drop.
pub fn private_temp_dir(prefix: &str) -> io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder.tempdir()
}
