//! Test hooks, in debug builds only (release builds have neither): `FLUXMEND_TEST_ABORT_AFTER=N`
//! ends the process, as SIGKILL would, after N more steps; `FLUXMEND_TEST_RACE_HOOK=PROGRAM`
//! runs PROGRAM in the root, and waits for it, with `prepared` once the temporaries are written
//! and with `apply TARGET` right before each target is checked and put in place, so that a test
//! can race the write at a chosen moment.

use std::path::Path;

#[cfg(debug_assertions)]
pub fn abort_after() -> Option<usize> {
    std::env::var("FLUXMEND_TEST_ABORT_AFTER")
        .ok()
        .and_then(|s| s.parse().ok())
}

#[cfg(not(debug_assertions))]
pub fn abort_after() -> Option<usize> {
    None
}

#[cfg(debug_assertions)]
pub fn race(root: &Path, point: &str, target: &str) {
    if let Some(program) = std::env::var_os("FLUXMEND_TEST_RACE_HOOK") {
        let _ = std::process::Command::new(program)
            .args([point, target])
            .current_dir(root)
            .status();
    }
}

#[cfg(not(debug_assertions))]
pub fn race(_root: &Path, _point: &str, _target: &str) {}
