//! The `fluxmend` command line: parse it, run the command, map its [`ExitStatus`] to the
//! process exit code (a contract: README, "Exit codes"; `commands::status` documents each
//! value).
//!
//! `cli` is what clap parses; `commands` runs each command and prints its report.

// A repository must never make fluxmend panic: no `unwrap` (an `expect` states the invariant
// that rules the panic out). Unit tests may unwrap (clippy.toml).
#![deny(clippy::unwrap_used)]

mod cli;
mod commands;

use std::process::ExitCode;

use clap::Parser;

use cli::Cli;
use commands::ExitStatus;

/// mimalloc, and pages of their own for large blocks: see [`fluxmend::platform::Allocator`].
#[global_allocator]
static GLOBAL: fluxmend::platform::Allocator = fluxmend::platform::Allocator {};

fn main() -> ExitCode {
    fluxmend::platform::release_freed_memory_promptly();
    let status = match Cli::try_parse() {
        Ok(cli) => commands::run(cli.command),
        Err(e) => {
            // Help and version are printed to standard output and succeed.
            let _ = e.print();
            if e.use_stderr() {
                ExitStatus::Error
            } else {
                ExitStatus::Success
            }
        }
    };
    ExitCode::from(status)
}
