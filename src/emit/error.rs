//! Why a change could not be emitted (written or committed), as sentences that name the path
//! and the next step.

use std::path::PathBuf;

use crate::changes::ChangeError;
use crate::targets::TargetError;

/// Why a change could not be emitted. Each message names the path and, where there is one, what
/// to do next.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("{0}")]
    Target(#[from] TargetError),
    #[error("refusing to write {0}: it changed since fluxmend read it; run fix again")]
    Changed(String),
    #[error(
        "refusing to write {path}: it changed while fluxmend was writing (another program wrote \
         it, or a directory on its way was replaced); nothing was written, and the change is \
         not overwritten{}; run fix again",
        left_as_it_is(.left)
    )]
    Raced { path: String, left: Vec<String> },
    #[error(
        "{0} is tracked by git: it came with the repository and is not an interrupted write of \
         fluxmend, so fluxmend ignores it and does not write beside it; remove it from the \
         repository (`git rm`) and run fix again"
    )]
    TrackedJournal(String),
    #[error("{0}")]
    Journal(String),
    #[error("{0}")]
    Change(#[from] ChangeError),
    #[error("{0:#}")]
    Io(#[from] anyhow::Error),
    #[error("refusing to commit: {0} has uncommitted changes; commit or stash them first")]
    Dirty(String),
    #[error("refusing to commit: a branch named {0} exists already; choose another --branch name")]
    BranchExists(String),
    #[error("{}", git_sentence(.0))]
    Git(#[from] git2::Error),
    #[error(
        "{} is not inside a git repository: use --write instead of --commit, or run `git init` \
         and commit first",
        .0.display()
    )]
    NotARepository(PathBuf),
    #[error("refusing to commit: {0}; nothing was written")]
    Refused(#[from] Refusal),
}

/// `; left as it is: a, b` for the files a rolled-back write could not put back (they hold what
/// another program wrote), or nothing.
fn left_as_it_is(left: &[String]) -> String {
    if left.is_empty() {
        String::new()
    } else {
        format!(
            "; these changed too and are left as they are: {}",
            left.join(", ")
        )
    }
}

/// A libgit2 error as a sentence with the next step, without libgit2's class and code.
fn git_sentence(e: &git2::Error) -> String {
    use git2::{ErrorClass, ErrorCode};
    let message = e.message().trim_end_matches('.');
    match (e.class(), e.code()) {
        (_, ErrorCode::UnbornBranch) => {
            "git: the current branch has no commit yet: make a first commit, or use --write"
                .to_string()
        }
        (ErrorClass::Reference, ErrorCode::Exists) => {
            format!("git: {message}: choose another --branch name, or delete that branch first")
        }
        (ErrorClass::Reference, ErrorCode::InvalidSpec) => {
            format!("git: {message}: give --branch a valid branch name")
        }
        (_, ErrorCode::Locked) => format!(
            "git: {message}: another git process is running in this repository; retry when it is \
             done"
        ),
        (_, ErrorCode::BareRepo) => {
            format!("git: {message}: --commit needs a work tree; use --write in a checkout")
        }
        _ => format!("git: {message}"),
    }
}

/// Why git would not take the commit as fluxmend would make it.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error(
        "{0} exists: another git process is running in this repository (or one crashed: \
         remove the lock when none is running)"
    )]
    Locked(String),
    #[error("a {0} is in progress; finish or abort it first (`fix --write` works meanwhile)")]
    InProgress(&'static str),
    #[error(
        "{path} is marked {flag} in the index, so git does not show its changes on disk and the \
         commit would not be what git shows; clear it (`git update-index --no-{flag} {path}`) \
         and run fix again"
    )]
    Hidden { path: String, flag: &'static str },
    #[error(
        "{path} has a filter ({filter}) in .gitattributes, which only git runs, and git could \
         not be run: {why}"
    )]
    Filter {
        path: String,
        filter: String,
        why: String,
    },
    #[error("commit.gpgsign is set and the commit could not be signed: {0}")]
    Sign(String),
}
