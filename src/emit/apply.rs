//! One applier for a verified changeset: the new contents of every touched file, rendered as a
//! unified diff, written atomically in place, or committed with git.

use std::path::Path;

use super::error::EmitError;
use crate::changes::FileChange;
use crate::emit::escape;

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
