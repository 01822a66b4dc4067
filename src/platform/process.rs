//! Programs and processes: the program to run found on `PATH` (never in the current directory),
//! what a child's environment cannot lose, the signal that ended a child, and this process ended
//! at once.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

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
