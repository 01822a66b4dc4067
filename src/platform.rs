//! What differs between operating systems, in one place, each with a portable fallback:
//! opening a file of the repository without following links, owner-only temporary files, files
//! named relative to an open directory ([`dirfd`], for the journalled write), the stat data git
//! keeps in its index, finding a program, ending the process at once, and confining a child
//! process (its own process group, a memory limit, death with fluxmend, no network). Linux gets
//! every protection; other Unix systems all but the network namespace and the death signal;
//! elsewhere the fallbacks check what can be checked and say what they could not do. No other
//! module calls the operating system directly (`libc` is a dependency on Unix only).

pub mod dirfd;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};

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

/// Whether `path` is a file this process may run.
fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The program `name` from `PATH`, from its absolute entries only: a relative entry (`.`, or
/// the empty entry of `PATH=/usr/bin:`) names the current directory, which is often the
/// repository's, so a repository could ship the `kustomize` or `git` that fluxmend runs (Go's
/// `exec.LookPath` refuses such a match for the same reason).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .find_map(|dir| {
            executable_names(name)
                .into_iter()
                .map(|n| dir.join(n))
                .find(|p| is_executable(p))
        })
}

/// The names an executable `name` may have on this system (`kubectl.exe` on Windows).
fn executable_names(name: &str) -> Vec<String> {
    if cfg!(windows) {
        vec![format!("{name}.exe"), name.to_string()]
    } else {
        vec![name.to_string()]
    }
}

/// End the process at once with `code`, as a kill would: no destructor, no buffer flushed, no
/// exit handler (the write's crash tests stop it this way).
pub fn exit_at_once(code: i32) -> ! {
    #[cfg(unix)]
    {
        // SAFETY: _exit ends the process at once; nothing is touched afterwards.
        unsafe { libc::_exit(code) }
    }
    #[cfg(not(unix))]
    {
        // No destructor runs (the C runtime's exit handlers may).
        std::process::exit(code)
    }
}

/// What git's index records of a file's metadata (`git status` compares it to tell a file
/// unchanged without reading it): change and modification times (seconds, nanoseconds),
/// device, inode, owner, group. `None` where the system has no such data (git then reads the
/// file to tell).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexStat {
    pub ctime: (i64, i64),
    pub mtime: (i64, i64),
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub gid: u32,
}

pub fn index_stat(m: &std::fs::Metadata) -> Option<IndexStat> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some(IndexStat {
            ctime: (m.ctime(), m.ctime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
            uid: m.uid(),
            gid: m.gid(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

/// Variables a child cannot start without on this system, kept when its environment is
/// cleared (Windows needs `SystemRoot` to load its system libraries).
pub const ESSENTIAL_ENV: &[&str] = if cfg!(windows) {
    &["SystemRoot", "windir"]
} else {
    &[]
};

/// The signal that ended a process, where there are signals.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    {
        std::os::unix::process::ExitStatusExt::signal(status)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// How well a confined child is kept from the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Network {
    /// It runs in a network namespace of its own: no interface but a loopback that is down.
    Isolated,
    /// No namespace could be made: why.
    Reachable(String),
}

/// A child started by [`spawn_confined`].
pub struct Confined {
    pub child: Child,
    pub network: Network,
}

impl Confined {
    /// Kill the child and everything it started (its process group, where there are groups).
    pub fn kill_all(&mut self) {
        #[cfg(unix)]
        {
            let group = self.child.id() as libc::pid_t;
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        #[cfg(not(unix))]
        {
            let _ = self.child.kill();
        }
    }
}

/// Start `command` confined: in a process group of its own with at most `memory_bytes` of data
/// (`RLIMIT_DATA`), killed when fluxmend dies (Linux), and in a network namespace of its own
/// when one can be made (Linux: directly, or inside a user namespace when unprivileged).
pub fn spawn_confined(mut command: Command, memory_bytes: u64) -> io::Result<Confined> {
    #[cfg(target_os = "linux")]
    {
        let (read, write) = linux::report_pipe()?;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || {
                unix::own_group_and_memory(memory_bytes)?;
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                linux::enter_network_namespace(write);
                Ok(())
            });
        }
        let spawned = command.spawn();
        // SAFETY: our own end; the child's copy closed at its exec.
        unsafe { libc::close(write) };
        let network = linux::read_report(read);
        Ok(Confined {
            child: spawned?,
            network,
        })
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt as _;
            command.pre_exec(move || unix::own_group_and_memory(memory_bytes));
        }
        Ok(Confined {
            child: command.spawn()?,
            network: Network::Reachable("network namespaces exist only on Linux".into()),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = memory_bytes;
        Ok(Confined {
            child: command.spawn()?,
            network: Network::Reachable(
                "network namespaces exist only on Linux (and no memory limit could be set)".into(),
            ),
        })
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

    pub fn own_group_and_memory(memory_bytes: u64) -> io::Result<()> {
        // SAFETY: plain system calls on this (child) process.
        unsafe {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            let limit = libc::rlimit {
                rlim_cur: memory_bytes as libc::rlim_t,
                rlim_max: memory_bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

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
            if libc::fstatat(dir, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) != 0 {
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

#[cfg(target_os = "linux")]
mod linux {
    use super::Network;

    /// A pipe (both ends close on exec) on which the child reports whether it entered a
    /// network namespace: `n`, or `e` and the errno.
    pub fn report_pipe() -> std::io::Result<(libc::c_int, libc::c_int)> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: a valid array of two descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((fds[0], fds[1]))
    }

    /// In the child, before exec: a new network namespace (privileged), else a user namespace
    /// with one (unprivileged); the outcome written to `report`. Never fails the spawn.
    pub fn enter_network_namespace(report: libc::c_int) {
        // SAFETY: plain system calls in the forked child; `report` is its copy of the pipe.
        unsafe {
            let mut outcome = [b'n', 0, 0, 0, 0];
            if libc::unshare(libc::CLONE_NEWNET) != 0
                && libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) != 0
            {
                outcome[0] = b'e';
                let errno = *libc::__errno_location();
                outcome[1..].copy_from_slice(&errno.to_ne_bytes());
            }
            libc::write(report, outcome.as_ptr().cast(), outcome.len());
        }
    }

    /// What the child reported (then the read end is closed).
    pub fn read_report(read: libc::c_int) -> Network {
        let mut buf = [0u8; 5];
        // SAFETY: reading into a local buffer from our own descriptor, then closing it.
        let n = unsafe {
            let n = libc::read(read, buf.as_mut_ptr().cast(), buf.len());
            libc::close(read);
            n
        };
        match (n, buf[0]) {
            (5, b'n') => Network::Isolated,
            (5, b'e') => {
                let errno = i32::from_ne_bytes([buf[1], buf[2], buf[3], buf[4]]);
                Network::Reachable(format!(
                    "no network namespace could be made here ({})",
                    std::io::Error::from_raw_os_error(errno)
                ))
            }
            _ => Network::Reachable("the build did not start".into()),
        }
    }
}

/// SIGINT and SIGTERM while a guard lives: noted (see [`interrupted`]) instead of ending the
/// process, so that children are killed and temporary trees removed first; the signal is raised
/// again when the last guard drops. Without signals (Windows) the guard does nothing.
pub struct SignalGuard(());

/// Whether SIGINT or SIGTERM arrived while a [`SignalGuard`] lives: stop and clean up.
pub fn interrupted() -> bool {
    #[cfg(unix)]
    {
        signals::pending()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

impl SignalGuard {
    pub fn new() -> SignalGuard {
        #[cfg(unix)]
        signals::install();
        SignalGuard(())
    }
}

impl Default for SignalGuard {
    fn default() -> Self {
        SignalGuard::new()
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        signals::release();
    }
}

#[cfg(unix)]
mod signals {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    static SIGNALLED: AtomicI32 = AtomicI32::new(0);
    /// How many guards live, and the dispositions to restore after the last.
    static ACTIVE: Mutex<(usize, Option<[libc::sigaction; 2]>)> = Mutex::new((0, None));
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    extern "C" fn note(sig: libc::c_int) {
        SIGNALLED.store(sig, Ordering::SeqCst);
    }

    pub fn pending() -> bool {
        SIGNALLED.load(Ordering::SeqCst) != 0
    }

    pub fn install() {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        if active.0 == 0 {
            // SAFETY: installing a handler that only stores to an atomic.
            let saved = SIGNALS.map(|sig| unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = note as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut new.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &new, &mut old);
                old
            });
            active.1 = Some(saved);
        }
        active.0 += 1;
    }

    pub fn release() {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        active.0 -= 1;
        if active.0 > 0 {
            return;
        }
        if let Some(saved) = active.1.take() {
            for (sig, old) in SIGNALS.iter().zip(saved) {
                // SAFETY: restoring the disposition saved above.
                unsafe { libc::sigaction(*sig, &old, std::ptr::null_mut()) };
            }
        }
        let sig = SIGNALLED.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // What the guard protected is cleaned up (dropped before it): die of the signal as
            // the user asked.
            // SAFETY: plain libc calls.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// What the child reports through the pipe becomes what the gate says: isolated, or the
    /// reason it is not (the fallback where no namespace can be made).
    #[test]
    fn the_childs_report_says_whether_it_is_isolated() {
        let report = |bytes: &[u8]| {
            let (read, write) = linux::report_pipe().unwrap();
            // SAFETY: writing a local buffer to our own pipe, then closing that end.
            unsafe {
                libc::write(write, bytes.as_ptr().cast(), bytes.len());
                libc::close(write);
            }
            linux::read_report(read)
        };
        assert_eq!(report(b"n\0\0\0\0"), Network::Isolated);
        let mut denied = vec![b'e'];
        denied.extend(libc::EPERM.to_ne_bytes());
        match report(&denied) {
            Network::Reachable(why) => {
                assert!(
                    why.starts_with("no network namespace could be made here ("),
                    "{why}"
                )
            }
            Network::Isolated => panic!("reported isolated"),
        }
        assert!(matches!(report(b""), Network::Reachable(_)));
    }

    /// A confined child that reports isolation really is in another network namespace.
    #[test]
    fn an_isolated_child_has_a_network_namespace_of_its_own() {
        let mut command = Command::new("/usr/bin/readlink");
        command
            .arg("/proc/self/ns/net")
            .stdout(std::process::Stdio::piped());
        let confined = spawn_confined(command, 1 << 30).unwrap();
        let network = confined.network.clone();
        let out = confined.child.wait_with_output().unwrap();
        let theirs = String::from_utf8(out.stdout).unwrap();
        let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
        match network {
            Network::Isolated => assert_ne!(theirs.trim(), ours.to_str().unwrap()),
            Network::Reachable(_) => assert_eq!(theirs.trim(), ours.to_str().unwrap()),
        }
    }
}
