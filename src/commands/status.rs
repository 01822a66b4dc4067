//! How a run ends: its exit status, a contract (README and docs/reference.md, "Exit codes"),
//! and a usage error said on standard error.

use std::process::ExitCode;

/// The exit status of a run. The values are a contract, tested in `tests/exit_codes.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ExitStatus {
    /// 0: `check`: no finding or diagnostic at or above `--fail-on`; `fix`: nothing to change
    /// and nothing standing at or above `--fail-on`; `simulate --from`: nothing harmful deleted;
    /// every other command (`simulate --fail` too): success, or help or version printed.
    Success,
    /// 1: `check`: a finding or diagnostic at or above `--fail-on`; `fix`: a change printed,
    /// written or committed, or what it cannot fix standing at or above `--fail-on`;
    /// `simulate --from`: the rollout deletes a live object with a consequence worse than pods
    /// restarting.
    Failure,
    /// 2: a usage error, a PATH or revision that cannot be read, a refused or failed write or
    /// commit (said on standard error).
    Error,
}

impl ExitStatus {
    /// `Failure` when `failing`, else `Success`.
    pub(crate) fn failure_if(failing: bool) -> Self {
        if failing {
            Self::Failure
        } else {
            Self::Success
        }
    }
}

impl From<ExitStatus> for ExitCode {
    fn from(status: ExitStatus) -> Self {
        ExitCode::from(match status {
            ExitStatus::Success => 0,
            ExitStatus::Failure => 1,
            ExitStatus::Error => 2,
        })
    }
}

/// A usage or I/O error, already said on standard error: the run ends with
/// [`ExitStatus::Error`].
#[derive(Debug)]
pub(crate) struct UsageError;

impl From<UsageError> for ExitStatus {
    fn from(_: UsageError) -> Self {
        ExitStatus::Error
    }
}

/// A usage error: said on stderr (a repository's control characters escaped).
pub(crate) fn usage(message: impl std::fmt::Display) -> UsageError {
    eprintln!(
        "fluxmend: {}",
        fluxmend::emit::escape::terminal_lines(&message.to_string())
    );
    UsageError
}
