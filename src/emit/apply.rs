//! One applier for a verified changeset: the new contents of every touched file, rendered as a
//! unified diff, written atomically in place, or committed with git.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::edit::{self, Changeset, FileOp};
use crate::emit::escape;
use crate::load::Repo;

/// A file's contents before and after (`None`: absent), BOM included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Why a change could not be emitted. Each message names the path and, where there is one, what
/// to do next.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("refusing to write {0}: it is outside the repository root or behind a symbolic link")]
    Unsafe(String),
    #[error(
        "refusing to create {0}: it already exists (perhaps hidden from fluxmend by .gitignore or \
         .sourceignore); move it away and run fix again"
    )]
    Exists(String),
    #[error(
        "refusing to create {path}: a file name of {bytes} bytes is longer than the 255 allowed"
    )]
    NameTooLong { path: String, bytes: usize },
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
    Edit(#[from] edit::EditError),
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
    Refused(#[from] super::commit::Refusal),
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

/// Compute every touched file's new contents.
pub fn contents(repo: &Repo, changes: &Changeset) -> Result<Vec<FileChange>, EmitError> {
    let mut out = Vec::new();
    for (path, op) in &changes.files {
        let before = original_text(repo, path);
        let after = match op {
            FileOp::Edit(edits) => {
                let f = repo.file(
                    repo.file_id(path)
                        .ok_or_else(|| EmitError::Unsafe(path.clone()))?,
                );
                Some(format!(
                    "{}{}",
                    if f.yaml.bom { "\u{feff}" } else { "" },
                    edit::apply(&f.yaml.text, edits)?
                ))
            }
            FileOp::Create(text) => Some(text.clone()),
            FileOp::Delete => None,
        };
        out.push(FileChange {
            path: path.clone(),
            before,
            after,
        });
    }
    Ok(out)
}

/// A loaded file's text as it is on disk (its BOM put back); `None` when `path` is not loaded.
pub fn original_text(repo: &Repo, path: &str) -> Option<String> {
    repo.file_id(path).map(|id| {
        let f = repo.file(id);
        format!(
            "{}{}",
            if f.yaml.bom { "\u{feff}" } else { "" },
            f.yaml.text
        )
    })
}

/// The changes as `path -> new text` (`None` = deleted), for re-modelling.
pub fn as_overlay(files: &[FileChange]) -> BTreeMap<String, Option<String>> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.after.clone()))
        .collect()
}

/// A unified diff with `a/` and `b/` paths relative to the repository root, which `git apply`
/// and `patch -p1` accept; a path is quoted as git quotes it ([`escape::git_path`]).
///
/// A file deleted and created elsewhere with the same bytes is shown as a git rename, so a
/// reviewer sees the move, not the whole file twice.
pub fn unified_diff(files: &[FileChange], prefix: &str) -> String {
    let mut out = String::new();
    // (from, to) pairs: a deletion and a creation with identical bytes, each used once.
    let mut renames: Vec<(&str, &str)> = Vec::new();
    for f in files {
        let (Some(text), None) = (&f.before, &f.after) else {
            continue;
        };
        let target = files.iter().find(|g| {
            g.before.is_none()
                && g.after.as_ref() == Some(text)
                && !renames.iter().any(|(_, to)| *to == g.path)
        });
        if let Some(g) = target {
            renames.push((&f.path, &g.path));
            let (from, to) = (format!("{prefix}{}", f.path), format!("{prefix}{}", g.path));
            out.push_str(&format!(
                "diff --git {} {}\nsimilarity index 100%\nrename from {}\nrename to {}\n",
                escape::git_path(&format!("a/{from}")),
                escape::git_path(&format!("b/{to}")),
                escape::git_path(&from),
                escape::git_path(&to),
            ));
        }
    }
    let renamed = |p: &str| renames.iter().any(|(from, to)| *from == p || *to == p);
    for f in files {
        if renamed(&f.path) {
            continue;
        }
        let old = f.before.as_deref().unwrap_or("");
        let new = f.after.as_deref().unwrap_or("");
        let path = format!("{prefix}{}", f.path);
        let (a_name, b_name) = (
            escape::git_path(&format!("a/{path}")).into_owned(),
            escape::git_path(&format!("b/{path}")).into_owned(),
        );
        let end = escape::git_path_end(&path);
        let a = if f.before.is_some() {
            format!("{a_name}{end}")
        } else {
            "/dev/null".into()
        };
        let b = if f.after.is_some() {
            format!("{b_name}{end}")
        } else {
            "/dev/null".into()
        };
        out.push_str(&format!("diff --git {a_name} {b_name}\n"));
        match (&f.before, &f.after) {
            (None, Some(_)) => out.push_str("new file mode 100644\n"),
            (Some(_), None) => out.push_str("deleted file mode 100644\n"),
            _ => {}
        }
        let diff = similar::TextDiff::from_lines(old, new);
        let body = diff
            .unified_diff()
            .context_radius(3)
            .header(&a, &b)
            .missing_newline_hint(true)
            .to_string();
        out.push_str(&body);
    }
    out
}

/// Where `root` lies in the git work tree that holds it (`k8s`, `""` at the top level), so that
/// the diff's paths are the ones `git apply` expects there; `None` outside a work tree (or when
/// the path cannot be written in a diff).
pub fn work_tree_prefix(root: &Path) -> Option<String> {
    let repo = git2::Repository::discover(root).ok()?;
    let top = repo.workdir()?.canonicalize().ok()?;
    let rel = root
        .canonicalize()
        .ok()?
        .strip_prefix(&top)
        .ok()?
        .to_path_buf();
    let parts: Option<Vec<&str>> = rel.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

/// Write every change in place, all or nothing (see [`super::write`]).
pub fn write(root: &Path, files: &[FileChange]) -> Result<(), EmitError> {
    super::write::write(root, files).map(|_| ())
}

/// Whether `name` is a branch name git itself would create (`git check-ref-format --branch`):
/// checked before anything is written.
pub fn valid_branch_name(name: &str) -> bool {
    name != "@"
        && name != "HEAD"
        && !name.starts_with('-')
        && !name.starts_with("refs/")
        && git2::Branch::name_is_valid(name).unwrap_or(false)
}

/// The branch HEAD is on in the repository holding `root` (`None` when detached or unreadable):
/// what `fix --commit` without `--branch` committed to.
pub fn head_branch(root: &Path) -> Option<String> {
    let repo = git2::Repository::discover(root).ok()?;
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().ok().map(str::to_string)
}
