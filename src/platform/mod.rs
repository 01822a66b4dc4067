//! What differs between operating systems, in one place, each with a portable fallback:
//! opening a file of the repository without following links, owner-only temporary files, files
//! named relative to an open directory ([`dirfd`], for the journalled write), the stat data git
//! keeps in its index, finding a program, ending the process at once, and confining a child
//! process (its own process group, a memory limit, death with fluxmend, no network). Linux gets
//! every protection; other Unix systems all but the network namespace and the death signal;
//! elsewhere the fallbacks check what can be checked and say what they could not do. No other
//! module calls the operating system directly (`libc` is a dependency on Unix only).
//!
//! Each file has one job: `allocator` (the global allocator and how it gives memory back),
//! `confine` (a confined child), `signals` (interrupts held off),
//! `process` (finding a program, a child's environment and end, ending at once), `index_stat`
//! (git's index metadata), `private` (owner-only files), `open` (a regular file opened beneath
//! a root), `dirfd` (files named relative to an open directory). None imports another.

mod allocator;
mod confine;
pub mod dirfd;
mod index_stat;
mod open;
mod private;
mod process;
mod signals;

pub use allocator::{Allocator, release_freed_memory_promptly};
pub use confine::{Confined, Network, spawn_confined};
pub use index_stat::{IndexStat, index_stat};
pub use open::{Beneath, OpenError};
pub use private::{private_dirs, private_temp_dir, private_write};
pub use process::{ESSENTIAL_ENV, exit_at_once, exit_signal, find_program};
pub use signals::{SignalGuard, interrupted};
