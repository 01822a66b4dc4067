//! A file of the repository opened for reading without following a link on the way, and only
//! when it is a regular file: on Linux one `openat2` that refuses every link, on other Unix
//! systems (and wherever `openat2` is refused) `openat` step by step, each component's metadata
//! checked first elsewhere.

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

/// A trusted directory (canonical) that files are opened below. On Linux it is held open, so
/// that a file is one `openat2` from it rather than a walk from `/` to it first: a fleet's load
/// opens a hundred thousand files.
pub struct Beneath {
    root: std::path::PathBuf,
    /// `root` as an `O_PATH` handle; `None` when it could not be opened (each open then takes
    /// the step-by-step walk, which says why).
    #[cfg(target_os = "linux")]
    dir: Option<std::os::fd::OwnedFd>,
}

impl Beneath {
    pub fn new(root: &Path) -> Beneath {
        Beneath {
            root: root.to_path_buf(),
            #[cfg(target_os = "linux")]
            dir: unix::open_dir(root),
        }
    }

    /// Open the regular file `root/components…` for reading, following no link on the way
    /// (nor the file itself), and never opening anything but a regular file (a FIFO would
    /// block, a device would never end). The size comes with the file.
    pub fn open_regular(&self, components: &[&str]) -> Result<(File, u64), OpenError> {
        #[cfg(unix)]
        {
            let Some((name, dirs)) = components.split_last() else {
                return Err(OpenError::NotRegular("a directory"));
            };
            #[cfg(target_os = "linux")]
            if let Some(opened) = self
                .dir
                .as_ref()
                .and_then(|dir| unix::resolved::open(dir, components))
            {
                return opened;
            }
            unix::step_by_step(&self.root, components, name, dirs)
        }
        #[cfg(not(unix))]
        {
            // No `openat` here: check each component's own metadata, then the opened file's. A
            // link swapped in between the check and the open is the remaining (racy) gap.
            let mut path = self.root.clone();
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

    /// `root` as a handle that opens nothing, for `openat2` to resolve below.
    #[cfg(target_os = "linux")]
    pub(super) fn open_dir(root: &Path) -> Option<OwnedFd> {
        let root = c_string(root.as_os_str().as_bytes()).ok()?;
        open_at(libc::AT_FDCWD, &root, libc::O_PATH | libc::O_DIRECTORY).ok()
    }

    /// Each directory looked at and opened in turn, links refused: the whole rule, and the one
    /// that names which component is a link.
    pub(super) fn step_by_step(
        root: &Path,
        components: &[&str],
        name: &str,
        dirs: &[&str],
    ) -> Result<(File, u64), OpenError> {
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

    /// Linux 5.6 and later: the whole path resolved in one `openat2` call that refuses every
    /// link and every way out of the root, where the step-by-step walk costs three calls per
    /// directory (a fleet reads 100,000 files, and probes two ignore files in each directory).
    #[cfg(target_os = "linux")]
    pub(super) mod resolved {
        use std::ffi::CString;
        use std::fs::File;
        use std::io;
        use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
        use std::sync::atomic::{AtomicBool, Ordering};

        use super::super::{OpenError, kind_of};
        use super::c_string;

        /// Set once the kernel or a sandbox refuses `openat2`: the step-by-step walk from then on.
        static REFUSED: AtomicBool = AtomicBool::new(false);

        /// No link anywhere on the path, not even a kernel "magic" one, and nothing above `dir`.
        const RESOLVE: u64 =
            libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS;

        fn open_beneath(dir: &OwnedFd, rel: &CString, flags: libc::c_int) -> io::Result<OwnedFd> {
            // SAFETY: `open_how` is plain data; zero is a valid value for each field.
            let mut how: libc::open_how = unsafe { std::mem::zeroed() };
            how.flags = (flags | libc::O_CLOEXEC) as u64;
            how.resolve = RESOLVE;
            // SAFETY: a valid descriptor, a NUL-terminated path, and `how` with its own size.
            let fd = unsafe {
                libc::syscall(
                    libc::SYS_openat2,
                    dir.as_raw_fd(),
                    rel.as_ptr(),
                    &raw const how,
                    std::mem::size_of::<libc::open_how>(),
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: a descriptor the call just opened for us.
            Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
        }

        /// The regular file `root/components…` opened, a missing one reported; `None` for
        /// anything else (a link on the way, a FIFO, a device, a directory, `openat2` refused):
        /// the step-by-step walk then decides and says which component is at fault.
        pub(in super::super) fn open(
            dir: &OwnedFd,
            components: &[&str],
        ) -> Option<Result<(File, u64), OpenError>> {
            if REFUSED.load(Ordering::Relaxed) {
                return None;
            }
            let rel = c_string(components.join("/").as_bytes()).ok()?;
            // First a handle that opens nothing (opening a device has effects): is it a regular file?
            let handle = match open_beneath(dir, &rel, libc::O_PATH | libc::O_NOFOLLOW) {
                Ok(handle) => handle,
                Err(e) => {
                    return match e.raw_os_error() {
                        Some(libc::ENOENT) => Some(Err(OpenError::Io(e))),
                        Some(libc::ENOSYS | libc::EPERM | libc::E2BIG) => {
                            REFUSED.store(true, Ordering::Relaxed);
                            None
                        }
                        _ => None,
                    };
                }
            };
            if !File::from(handle).metadata().ok()?.is_file() {
                return None;
            }
            // Non-blocking, in case something else was swapped in since: then checked again.
            let fd = open_beneath(
                dir,
                &rel,
                libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
            )
            .ok()?;
            let file = File::from(fd);
            Some(match file.metadata() {
                Ok(meta) if meta.is_file() => Ok((file, meta.len())),
                Ok(meta) => Err(OpenError::NotRegular(kind_of(meta.file_type()))),
                Err(e) => Err(OpenError::Io(e)),
            })
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::ffi::CString;

    use super::OpenError;
    use super::unix::{resolved, step_by_step};

    /// An outcome as text, to compare two ways of opening.
    fn outcome(opened: Result<(std::fs::File, u64), OpenError>) -> String {
        match opened {
            Ok((_, len)) => format!("regular, {len} bytes"),
            Err(OpenError::Link(at)) => format!("link at {at}"),
            Err(OpenError::NotRegular(what)) => format!("not regular: {what}"),
            Err(OpenError::Io(e)) => format!("io: {e}"),
        }
    }

    #[test]
    fn one_openat2_call_agrees_with_the_step_by_step_walk() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::fs::write(tmp.path().join("a/b/ok.yaml"), "inside").unwrap();
        std::fs::write(tmp.path().join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("a/out")).unwrap();
        std::os::unix::fs::symlink("ok.yaml", tmp.path().join("a/b/near")).unwrap();
        std::os::unix::fs::symlink("gone", tmp.path().join("a/dangling")).unwrap();
        let fifo = CString::new(tmp.path().join("a/fifo").to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let root = tmp.path().canonicalize().unwrap();
        let dir = super::unix::open_dir(&root).unwrap();
        // What the one call answers itself: a regular file and a missing one (the common cases).
        for (rel, answers) in [
            ("a/b/ok.yaml", true),
            ("a/b/none.yaml", true),
            ("a/none/x.yaml", true),
            ("a/out/secret", false),
            ("a/b/near", false),
            ("a/dangling", false),
            ("a/dangling/x", false),
            ("a/fifo", false),
            ("a/b", false),
            ("a/file/x", false),
        ] {
            let components: Vec<&str> = rel.split('/').collect();
            let (name, dirs) = components.split_last().unwrap();
            let walked = outcome(step_by_step(&root, &components, name, dirs));
            match resolved::open(&dir, &components) {
                Some(opened) => {
                    assert!(
                        answers,
                        "{rel}: answered, though only the walk can name why"
                    );
                    assert_eq!(outcome(opened), walked, "{rel}");
                }
                None => assert!(!answers, "{rel}: left to the walk ({walked})"),
            }
        }
    }
}
