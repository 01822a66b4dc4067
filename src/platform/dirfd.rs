//! Files named relative to an open directory, never through a symbolic link: what the journalled
//! write needs so that a directory swapped for a link while it runs cannot send a file outside the
//! repository. On unix every step is an `*at` call on a directory handle (`openat` with
//! `O_NOFOLLOW` or, on Linux, `O_TMPFILE`, `renameat`, `linkat`, `unlinkat`, `mkdirat`);
//! elsewhere the same operations go by path, each component checked with `symlink_metadata`
//! first (a smaller guarantee: a link swapped in between the check and the call is followed).
//!
//! Every `name` is one path component (no `/`), checked by the caller.

use std::fs::File;
use std::io;

pub use imp::{Dir, chown_like};

/// What a name in a directory is, without following a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A symbolic link, FIFO, socket or device.
    Other,
}

/// A name's metadata, read without following a link.
#[derive(Clone, Copy, Debug)]
pub struct Meta {
    pub kind: Kind,
    pub len: u64,
    /// Permission bits (`0o7777`); 0 where the system has none.
    pub mode: u32,
    /// Owner and group, where the system has them.
    pub owner: Option<(u32, u32)>,
    /// Device and inode: the identity of a file or directory, where the system has one.
    pub id: Option<(u64, u64)>,
}

/// Read the regular file `name` of `dir` (never through a link), at most `limit` bytes: `None`
/// when it is larger.
pub fn read_at(dir: &Dir, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let file = dir.open_file(name)?;
    let len = file.metadata()?.len();
    if len > limit {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(limit + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// Create `name` in `dir` exclusively, holding what `fill` writes into it. On Linux the file is
/// written unnamed (`O_TMPFILE`) and linked in as `name` only once `fill` has returned, so that
/// a process killed meanwhile leaves nothing (a kill can cut a write short at any page): a name
/// never holds half of what was meant. Where the file system has no unnamed files, or neither
/// way of linking one in is allowed, and on other systems, `name` is created and filled in place.
pub fn create_filled(
    dir: &Dir,
    name: &str,
    mode: u32,
    mut fill: impl FnMut(&mut File) -> io::Result<()>,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if let Some(created) = dir.create_unnamed_then_link(
        name,
        mode,
        &mut fill,
        &[imp::Link::ByDescriptor, imp::Link::ThroughProc],
    ) {
        return created;
    }
    fill(&mut dir.create(name, mode)?)
}

fn not_a(what: &str, name: &str) -> io::Error {
    io::Error::other(format!("{name} is not a {what}"))
}

#[cfg(unix)]
mod imp {
    use std::ffi::CString;
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
    use std::path::Path;

    use super::{Kind, Meta, not_a};

    /// An open directory.
    #[derive(Debug)]
    pub struct Dir {
        fd: OwnedFd,
    }

    /// How an unnamed file gets its name: `linkat` of its descriptor (`AT_EMPTY_PATH`, allowed
    /// to a process that may read any file, and to any on recent kernels), or of its
    /// `/proc/self/fd` entry (allowed to any process that can see /proc).
    #[cfg(target_os = "linux")]
    #[derive(Clone, Copy, Debug)]
    pub enum Link {
        ByDescriptor,
        ThroughProc,
    }

    fn c_name(name: &str) -> io::Result<CString> {
        if name.is_empty() || name.contains('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not one path component"),
            ));
        }
        CString::new(name).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
    }

    /// `-1` from a libc call as the error it means.
    fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret)
        }
    }

    impl Dir {
        /// Open the repository root (the path the user gave: a link there is followed).
        pub fn open_root(root: &Path) -> io::Result<Dir> {
            let file = File::open(root)?;
            if !file.metadata()?.is_dir() {
                return Err(not_a("directory", &root.display().to_string()));
            }
            Ok(Dir { fd: file.into() })
        }

        fn open_at(&self, name: &str, flags: libc::c_int, mode: libc::mode_t) -> io::Result<File> {
            let c = c_name(name)?;
            // SAFETY: a valid directory descriptor and a NUL-terminated name; the result is a new
            // descriptor owned by the File.
            let fd = check(unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    flags | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                    libc::c_uint::from(mode),
                )
            })
            .map_err(|e| match e.raw_os_error() {
                // O_NOFOLLOW on a link.
                Some(libc::ELOOP) => not_a("regular file or directory (a symbolic link)", name),
                _ => e,
            })?;
            // SAFETY: `fd` was just opened and is owned by nothing else.
            Ok(unsafe { File::from_raw_fd(fd) })
        }

        pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
            let file = self
                .open_at(name, libc::O_RDONLY | libc::O_DIRECTORY, 0)
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::ENOTDIR) => not_a("directory", name),
                    _ => e,
                })?;
            Ok(Dir { fd: file.into() })
        }

        /// Open the regular file `name` for reading (a FIFO does not block: it is refused).
        pub fn open_file(&self, name: &str) -> io::Result<File> {
            let file = self.open_at(name, libc::O_RDONLY | libc::O_NONBLOCK, 0)?;
            if !file.metadata()?.is_file() {
                return Err(not_a("regular file", name));
            }
            Ok(file)
        }

        /// Open the existing regular file `name` to append to it.
        pub fn append(&self, name: &str) -> io::Result<File> {
            let file = self.open_at(name, libc::O_WRONLY | libc::O_APPEND | libc::O_NONBLOCK, 0)?;
            if !file.metadata()?.is_file() {
                return Err(not_a("regular file", name));
            }
            Ok(file)
        }

        /// Create `name` exclusively (never over anything, never through a link) for writing.
        pub fn create(&self, name: &str, mode: u32) -> io::Result<File> {
            self.open_at(
                name,
                libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL,
                mode as libc::mode_t,
            )
        }

        /// [`super::create_filled`] through an unnamed file, linked in the first of `ways` the
        /// kernel allows; `None` when this file system or kernel cannot (then nothing was
        /// created).
        #[cfg(target_os = "linux")]
        pub(super) fn create_unnamed_then_link(
            &self,
            name: &str,
            mode: u32,
            fill: &mut impl FnMut(&mut File) -> io::Result<()>,
            ways: &[Link],
        ) -> Option<io::Result<()>> {
            let c = match c_name(name) {
                Ok(c) => c,
                Err(e) => return Some(Err(e)),
            };
            // SAFETY: a valid directory descriptor and a NUL-terminated name; the result is a
            // new descriptor owned by the File.
            let fd = unsafe {
                libc::openat(
                    self.fd.as_raw_fd(),
                    c".".as_ptr(),
                    libc::O_TMPFILE | libc::O_WRONLY | libc::O_CLOEXEC,
                    libc::c_uint::from(mode as libc::mode_t),
                )
            };
            if fd < 0 {
                // EOPNOTSUPP: no unnamed files here; EISDIR or EINVAL: a kernel before 3.11.
                return match io::Error::last_os_error().raw_os_error() {
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL) => None,
                    _ => Some(Err(io::Error::last_os_error())),
                };
            }
            // SAFETY: `fd` was just opened and is owned by nothing else.
            let mut file = unsafe { File::from_raw_fd(fd) };
            if let Err(e) = fill(&mut file) {
                return Some(Err(e));
            }
            for way in ways {
                match self.link_unnamed(&file, &c, *way) {
                    Ok(()) => return Some(Ok(())),
                    // Not allowed this way (or no /proc): the next way, else none.
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOENT)) => {}
                    Err(e) => return Some(Err(e)),
                }
            }
            // No way allowed: the file is dropped unnamed.
            None
        }

        /// Give the unnamed `file` the name `name` in this directory, never over another.
        #[cfg(target_os = "linux")]
        fn link_unnamed(&self, file: &File, name: &CString, way: Link) -> io::Result<()> {
            let to = self.fd.as_raw_fd();
            match way {
                // SAFETY: valid descriptors and NUL-terminated names; an empty path with
                // AT_EMPTY_PATH names the descriptor itself.
                Link::ByDescriptor => check(unsafe {
                    libc::linkat(
                        file.as_raw_fd(),
                        c"".as_ptr(),
                        to,
                        name.as_ptr(),
                        libc::AT_EMPTY_PATH,
                    )
                }),
                Link::ThroughProc => {
                    let proc = CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
                        .expect("a number holds no NUL byte");
                    // SAFETY: as above; AT_SYMLINK_FOLLOW resolves the /proc entry to the file.
                    check(unsafe {
                        libc::linkat(
                            libc::AT_FDCWD,
                            proc.as_ptr(),
                            to,
                            name.as_ptr(),
                            libc::AT_SYMLINK_FOLLOW,
                        )
                    })
                }
            }
            .map(drop)
        }

        pub fn stat(&self, name: &str) -> io::Result<Option<Meta>> {
            let c = c_name(name)?;
            let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: valid descriptor, NUL-terminated name, `st` is written on success.
            let ret = unsafe {
                libc::fstatat(
                    self.fd.as_raw_fd(),
                    c.as_ptr(),
                    st.as_mut_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                )
            };
            match check(ret) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
            // SAFETY: fstatat succeeded.
            let st = unsafe { st.assume_init() };
            let kind = match st.st_mode & libc::S_IFMT {
                libc::S_IFREG => Kind::File,
                libc::S_IFDIR => Kind::Dir,
                _ => Kind::Other,
            };
            Ok(Some(Meta {
                kind,
                len: st.st_size as u64,
                // `mode_t` is 16 bits on some systems, and the device and inode other widths.
                #[allow(clippy::useless_conversion)]
                mode: u32::from(st.st_mode) & 0o7777,
                owner: Some((st.st_uid, st.st_gid)),
                #[allow(clippy::unnecessary_cast)]
                id: Some((st.st_dev as u64, st.st_ino as u64)),
            }))
        }

        /// This directory's own identity (device, inode).
        pub fn id(&self) -> io::Result<Option<(u64, u64)>> {
            let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: a valid descriptor; `st` is written on success.
            check(unsafe { libc::fstat(self.fd.as_raw_fd(), st.as_mut_ptr()) })?;
            // SAFETY: fstat succeeded.
            let st = unsafe { st.assume_init() };
            #[allow(clippy::unnecessary_cast)]
            Ok(Some((st.st_dev as u64, st.st_ino as u64)))
        }

        /// This directory's owner and group.
        pub fn owner(&self) -> io::Result<Option<(u32, u32)>> {
            let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
            // SAFETY: a valid descriptor; `st` is written on success.
            check(unsafe { libc::fstat(self.fd.as_raw_fd(), st.as_mut_ptr()) })?;
            // SAFETY: fstat succeeded.
            let st = unsafe { st.assume_init() };
            Ok(Some((st.st_uid, st.st_gid)))
        }

        /// Give this directory the owner and group `owner` where the process may (see
        /// [`chown_like`]).
        pub fn chown_like(&self, owner: Option<(u32, u32)>) -> io::Result<()> {
            fchown_like(self.fd.as_raw_fd(), owner)
        }

        pub fn mkdir(&self, name: &str) -> io::Result<()> {
            let c = c_name(name)?;
            // SAFETY: valid descriptor and name.
            check(unsafe { libc::mkdirat(self.fd.as_raw_fd(), c.as_ptr(), 0o777) }).map(drop)
        }

        /// Rename `from` to `to`, both in this directory (`to` replaced when it exists).
        pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
            let (f, t) = (c_name(from)?, c_name(to)?);
            let fd = self.fd.as_raw_fd();
            // SAFETY: valid descriptors and names.
            check(unsafe { libc::renameat(fd, f.as_ptr(), fd, t.as_ptr()) }).map(drop)
        }

        /// A hard link `to` of `from`, both in this directory: never over an existing `to`,
        /// never through a link at `from`.
        pub fn link(&self, from: &str, to: &str) -> io::Result<()> {
            let (f, t) = (c_name(from)?, c_name(to)?);
            let fd = self.fd.as_raw_fd();
            // SAFETY: valid descriptors and names; flags 0 does not follow a link at `from`.
            check(unsafe { libc::linkat(fd, f.as_ptr(), fd, t.as_ptr(), 0) }).map(drop)
        }

        pub fn unlink(&self, name: &str) -> io::Result<()> {
            let c = c_name(name)?;
            // SAFETY: valid descriptor and name.
            check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) }).map(drop)
        }

        /// Remove the empty directory `name`.
        pub fn rmdir(&self, name: &str) -> io::Result<()> {
            let c = c_name(name)?;
            // SAFETY: valid descriptor and name.
            check(unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), libc::AT_REMOVEDIR) })
                .map(drop)
        }

        /// Flush the directory's entries to disk.
        pub fn sync(&self) -> io::Result<()> {
            // SAFETY: valid descriptor.
            check(unsafe { libc::fsync(self.fd.as_raw_fd()) }).map(drop)
        }
    }

    /// Give `file` the owner and group `owner` where the process may: both (root), else the
    /// group alone (a group the user is in), else nothing.
    pub fn chown_like(file: &File, owner: Option<(u32, u32)>) -> io::Result<()> {
        fchown_like(file.as_raw_fd(), owner)
    }

    fn fchown_like(fd: std::os::fd::RawFd, owner: Option<(u32, u32)>) -> io::Result<()> {
        let Some((uid, gid)) = owner else {
            return Ok(());
        };
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: a valid descriptor; `st` is written on success.
        check(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
        // SAFETY: fstat succeeded.
        let st = unsafe { st.assume_init() };
        if (st.st_uid, st.st_gid) == (uid, gid) {
            return Ok(());
        }
        // SAFETY: a valid descriptor; -1 leaves the owner as it is.
        for (u, g) in [(uid, gid), (u32::MAX, gid)] {
            match check(unsafe { libc::fchown(fd, u, g) }) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EPERM) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    use std::fs::{self, File, OpenOptions};
    use std::io;
    use std::path::{Path, PathBuf};

    use super::{Kind, Meta, not_a};

    /// An open directory: on this system, its path (each component checked when it was opened).
    #[derive(Debug)]
    pub struct Dir {
        path: PathBuf,
    }

    fn component(name: &str) -> io::Result<&str> {
        if name.is_empty() || name.contains(['/', '\\']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not one path component"),
            ));
        }
        Ok(name)
    }

    impl Dir {
        pub fn open_root(root: &Path) -> io::Result<Dir> {
            if !fs::metadata(root)?.is_dir() {
                return Err(not_a("directory", &root.display().to_string()));
            }
            Ok(Dir {
                path: root.to_path_buf(),
            })
        }

        fn at(&self, name: &str) -> io::Result<PathBuf> {
            Ok(self.path.join(component(name)?))
        }

        pub fn open_dir(&self, name: &str) -> io::Result<Dir> {
            let path = self.at(name)?;
            let m = fs::symlink_metadata(&path)?;
            if !m.is_dir() || m.file_type().is_symlink() {
                return Err(not_a("directory", name));
            }
            Ok(Dir { path })
        }

        pub fn open_file(&self, name: &str) -> io::Result<File> {
            let path = self.at(name)?;
            if !fs::symlink_metadata(&path)?.is_file() {
                return Err(not_a("regular file", name));
            }
            File::open(path)
        }

        pub fn append(&self, name: &str) -> io::Result<File> {
            let path = self.at(name)?;
            if !fs::symlink_metadata(&path)?.is_file() {
                return Err(not_a("regular file", name));
            }
            OpenOptions::new().append(true).open(path)
        }

        pub fn create(&self, name: &str, _mode: u32) -> io::Result<File> {
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(self.at(name)?)
        }

        pub fn stat(&self, name: &str) -> io::Result<Option<Meta>> {
            let m = match fs::symlink_metadata(self.at(name)?) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            let kind = if m.file_type().is_symlink() {
                Kind::Other
            } else if m.is_file() {
                Kind::File
            } else if m.is_dir() {
                Kind::Dir
            } else {
                Kind::Other
            };
            Ok(Some(Meta {
                kind,
                len: m.len(),
                mode: 0,
                owner: None,
                id: None,
            }))
        }

        pub fn id(&self) -> io::Result<Option<(u64, u64)>> {
            Ok(None)
        }

        pub fn owner(&self) -> io::Result<Option<(u32, u32)>> {
            Ok(None)
        }

        pub fn chown_like(&self, _owner: Option<(u32, u32)>) -> io::Result<()> {
            Ok(())
        }

        pub fn mkdir(&self, name: &str) -> io::Result<()> {
            fs::create_dir(self.at(name)?)
        }

        pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
            fs::rename(self.at(from)?, self.at(to)?)
        }

        pub fn link(&self, from: &str, to: &str) -> io::Result<()> {
            fs::hard_link(self.at(from)?, self.at(to)?)
        }

        pub fn unlink(&self, name: &str) -> io::Result<()> {
            fs::remove_file(self.at(name)?)
        }

        pub fn rmdir(&self, name: &str) -> io::Result<()> {
            fs::remove_dir(self.at(name)?)
        }

        pub fn sync(&self) -> io::Result<()> {
            Ok(())
        }
    }

    pub fn chown_like(_file: &File, _owner: Option<(u32, u32)>) -> io::Result<()> {
        Ok(())
    }
}

/// Set `file`'s permission bits (unix; elsewhere nothing).
pub fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
    }
    #[cfg(not(unix))]
    {
        let _ = (file, mode);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::{Dir, create_filled};

    /// A temporary is named only once it holds all it was meant to: when filling it stops half
    /// way (as a kill would stop it), its name holds nothing (Linux: written unnamed first).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_stopped_half_way_is_never_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        let stopped = create_filled(&dir, "t.tmp", 0o600, |file| {
            file.write_all(&[b'x'; 10_000])?;
            Err(std::io::Error::other("stopped"))
        });
        assert!(stopped.is_err());
        assert!(!tmp.path().join("t.tmp").exists());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    /// Each way of naming an unnamed file works on its own (the tests run as root, who may
    /// link by descriptor: the way through /proc, an ordinary user's, is tried here directly).
    #[cfg(target_os = "linux")]
    #[test]
    fn each_way_of_naming_an_unnamed_file_names_it_whole_and_never_over_another() {
        use super::imp::Link;
        for way in [Link::ByDescriptor, Link::ThroughProc] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = Dir::open_root(tmp.path()).unwrap();
            let mut fill = |file: &mut std::fs::File| file.write_all(b"whole");
            let made = dir.create_unnamed_then_link("t.tmp", 0o600, &mut fill, &[way]);
            assert!(matches!(made, Some(Ok(()))), "{way:?}: {made:?}");
            assert_eq!(std::fs::read(tmp.path().join("t.tmp")).unwrap(), b"whole");
            let mut other = |file: &mut std::fs::File| file.write_all(b"other");
            let again = dir.create_unnamed_then_link("t.tmp", 0o600, &mut other, &[way]);
            assert!(
                matches!(&again, Some(Err(e)) if e.kind() == std::io::ErrorKind::AlreadyExists),
                "{way:?}: {again:?}"
            );
            assert_eq!(std::fs::read(tmp.path().join("t.tmp")).unwrap(), b"whole");
            assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
        }
    }

    #[test]
    fn a_file_is_created_whole_and_never_over_another() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_root(tmp.path()).unwrap();
        create_filled(&dir, "t.tmp", 0o600, |file| file.write_all(b"whole")).unwrap();
        assert_eq!(std::fs::read(tmp.path().join("t.tmp")).unwrap(), b"whole");
        let again = create_filled(&dir, "t.tmp", 0o600, |file| file.write_all(b"other"));
        assert_eq!(again.unwrap_err().kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(tmp.path().join("t.tmp")).unwrap(), b"whole");
    }
}
