//! A file of the repository opened for reading without following a link on the way, and only
//! when it is a regular file: `openat` step by step on Unix, each component's metadata checked
//! first elsewhere.

use std::fs::File;
use std::io;
use std::path::Path;

/// Why a file below a root could not be opened.
#[derive(Debug)]
pub enum OpenError {
    /// The path leads through a symbolic link (the component named).
    Link(String),
    /// The file is not a regular file: what it is.
    NotRegular(&'static str),
    Io(io::Error),
}

/// What kind of file a metadata names, for messages.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_block_device() || file_type.is_char_device() {
            return "a device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// Open the regular file `root/components…` for reading, following no link on the way (nor the
/// file itself), and never opening anything but a regular file (a FIFO would block, a device
/// would never end). `root` itself is trusted (canonical). The size comes with the file.
pub fn open_regular_beneath(root: &Path, components: &[&str]) -> Result<(File, u64), OpenError> {
    #[cfg(unix)]
    {
        unix::open_regular_beneath(root, components)
    }
    #[cfg(not(unix))]
    {
        // No `openat` here: check each component's own metadata, then the opened file's. A link
        // swapped in between the check and the open is the remaining (racy) gap.
        let mut path = root.to_path_buf();
        for (i, c) in components.iter().enumerate() {
            path.push(c);
            let meta = std::fs::symlink_metadata(&path).map_err(OpenError::Io)?;
            if meta.file_type().is_symlink() {
                return Err(OpenError::Link(components[..=i].join("/")));
            }
            let last = i + 1 == components.len();
            if last && !meta.is_file() {
                return Err(OpenError::NotRegular(kind_of(meta.file_type())));
            }
        }
        let file = File::open(&path).map_err(OpenError::Io)?;
        let meta = file.metadata().map_err(OpenError::Io)?;
        if !meta.is_file() {
            return Err(OpenError::NotRegular(kind_of(meta.file_type())));
        }
        Ok((file, meta.len()))
    }
}

#[cfg(unix)]
mod unix {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::Path;

    use super::{OpenError, kind_of};

    fn c_string(bytes: &[u8]) -> Result<CString, OpenError> {
        CString::new(bytes).map_err(|_| {
            OpenError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a path with a NUL byte",
            ))
        })
    }

    /// `openat` relative to `dir`, as an owned descriptor.
    fn open_at(dir: libc::c_int, name: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
        // SAFETY: a valid descriptor and a NUL-terminated name.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just opened and own.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// What `name` in `dir` is, links not followed, without opening it.
    enum Kind {
        Link,
        Regular,
        Other(&'static str),
    }

    fn kind_at(dir: libc::c_int, name: &CString) -> io::Result<Kind> {
        // SAFETY: a zeroed stat buffer filled by the call.
        let mode = unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstatat(dir, name.as_ptr(), &raw mut st, libc::AT_SYMLINK_NOFOLLOW) != 0 {
                return Err(io::Error::last_os_error());
            }
            st.st_mode & libc::S_IFMT
        };
        Ok(match mode {
            libc::S_IFLNK => Kind::Link,
            libc::S_IFREG => Kind::Regular,
            libc::S_IFDIR => Kind::Other("a directory"),
            libc::S_IFIFO => Kind::Other("a named pipe (FIFO)"),
            libc::S_IFSOCK => Kind::Other("a socket"),
            libc::S_IFCHR | libc::S_IFBLK => Kind::Other("a device"),
            _ => Kind::Other("not a regular file"),
        })
    }

    pub fn open_regular_beneath(
        root: &Path,
        components: &[&str],
    ) -> Result<(File, u64), OpenError> {
        let Some((name, dirs)) = components.split_last() else {
            return Err(OpenError::NotRegular("a directory"));
        };
        let root = c_string(root.as_os_str().as_bytes())?;
        let mut dir = open_at(libc::AT_FDCWD, &root, libc::O_RDONLY | libc::O_DIRECTORY)
            .map_err(OpenError::Io)?;
        for (i, d) in dirs.iter().enumerate() {
            let c = c_string(d.as_bytes())?;
            match kind_at(dir.as_raw_fd(), &c).map_err(OpenError::Io)? {
                Kind::Link => return Err(OpenError::Link(components[..=i].join("/"))),
                Kind::Regular => return Err(OpenError::NotRegular("under a regular file")),
                Kind::Other(_) => {}
            }
            // O_NOFOLLOW: a link swapped in since the look above is refused (ELOOP).
            dir = open_at(
                dir.as_raw_fd(),
                &c,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
            )
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP) => OpenError::Link(components[..=i].join("/")),
                _ => OpenError::Io(e),
            })?;
        }
        let c = c_string(name.as_bytes())?;
        // Look before opening: a FIFO or a device is never opened at all.
        match kind_at(dir.as_raw_fd(), &c).map_err(OpenError::Io)? {
            Kind::Link => return Err(OpenError::Link(components.join("/"))),
            Kind::Other(what) => return Err(OpenError::NotRegular(what)),
            Kind::Regular => {}
        }
        // Non-blocking and not following a link, in case it changed since: then checked again.
        let fd = open_at(
            dir.as_raw_fd(),
            &c,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => OpenError::Link(components.join("/")),
            _ => OpenError::Io(e),
        })?;
        let file = File::from(fd);
        let meta = file.metadata().map_err(OpenError::Io)?;
        if !meta.is_file() {
            return Err(OpenError::NotRegular(kind_of(meta.file_type())));
        }
        Ok((file, meta.len()))
    }
}
