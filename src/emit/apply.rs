//! One applier for a verified changeset: the new contents of every touched file, rendered as a
//! unified diff, written atomically in place, or committed with git.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::edit::{self, Changeset, FileOp};
use crate::load::Repo;

/// A file's contents before and after (`None`: absent), BOM included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Why a change could not be emitted.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("refusing to write {0}: it is outside the repository root or behind a symbolic link")]
    Unsafe(String),
    #[error("{0}")]
    Edit(#[from] edit::EditError),
    #[error("{0:#}")]
    Io(#[from] anyhow::Error),
    #[error("refusing to commit: {0} has uncommitted changes")]
    Dirty(String),
    #[error("{}", git_sentence(.0))]
    Git(#[from] git2::Error),
    #[error(
        "{} is not inside a git repository: use --write instead of --commit, or run `git init` \
         and commit first",
        .0.display()
    )]
    NotARepository(PathBuf),
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
        let before = repo.file_id(path).map(|id| {
            let f = repo.file(id);
            format!(
                "{}{}",
                if f.yaml.bom { "\u{feff}" } else { "" },
                f.yaml.text
            )
        });
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

/// The changes as `path -> new text` (`None` = deleted), for re-modelling.
pub fn as_overlay(files: &[FileChange]) -> BTreeMap<String, Option<String>> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.after.clone()))
        .collect()
}

/// A unified diff with `a/` and `b/` paths relative to the repository root, which `git apply`
/// and `patch -p1` accept.
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
            out.push_str(&format!(
                "diff --git a/{prefix}{from} b/{prefix}{to}\nsimilarity index 100%\nrename from {prefix}{from}\nrename to {prefix}{to}\n",
                from = f.path,
                to = g.path
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
        let a = if f.before.is_some() {
            format!("a/{prefix}{}", f.path)
        } else {
            "/dev/null".into()
        };
        let b = if f.after.is_some() {
            format!("b/{prefix}{}", f.path)
        } else {
            "/dev/null".into()
        };
        out.push_str(&format!(
            "diff --git a/{prefix}{p} b/{prefix}{p}\n",
            p = f.path
        ));
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

/// Check that `rel` stays inside `root` and that no existing component of it is a link.
fn safe_path(root: &Path, rel: &str) -> Result<PathBuf, EmitError> {
    if rel.is_empty()
        || rel.starts_with('/')
        || rel
            .split('/')
            .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return Err(EmitError::Unsafe(rel.into()));
    }
    let mut at = root.to_path_buf();
    for part in rel.split('/') {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return Err(EmitError::Unsafe(rel.into()));
        }
    }
    Ok(at)
}

/// Write every change, all or nothing: each new file goes to a temporary sibling first, then all
/// are renamed into place; if any step fails, what was already replaced is restored.
pub fn write(root: &Path, files: &[FileChange]) -> Result<(), EmitError> {
    let targets: Vec<PathBuf> = files
        .iter()
        .map(|f| safe_path(root, &f.path))
        .collect::<Result<_, _>>()?;
    let mut staged: Vec<(PathBuf, Option<PathBuf>)> = Vec::new();
    let cleanup = |staged: &[(PathBuf, Option<PathBuf>)]| {
        for (_, tmp) in staged {
            if let Some(tmp) = tmp {
                let _ = fs::remove_file(tmp);
            }
        }
    };
    for (f, target) in files.iter().zip(&targets) {
        let Some(text) = &f.after else {
            staged.push((target.clone(), None));
            continue;
        };
        let result = (|| -> anyhow::Result<PathBuf> {
            let dir = target.parent().context("no parent directory")?;
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let tmp = dir.join(format!(
                ".{}.fluxmend-tmp",
                target
                    .file_name()
                    .context("no file name")?
                    .to_string_lossy()
            ));
            fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
            if let Ok(meta) = fs::metadata(target) {
                fs::set_permissions(&tmp, meta.permissions())
                    .with_context(|| format!("keeping the mode of {}", target.display()))?;
            }
            Ok(tmp)
        })();
        match result {
            Ok(tmp) => staged.push((target.clone(), Some(tmp))),
            Err(e) => {
                cleanup(&staged);
                return Err(e.into());
            }
        }
    }
    // Commit: keep the originals until every rename has succeeded.
    let mut done: Vec<(PathBuf, Option<Vec<u8>>)> = Vec::new();
    for (target, tmp) in &staged {
        let original = fs::read(target).ok();
        let step = match tmp {
            Some(tmp) => fs::rename(tmp, target),
            None => fs::remove_file(target),
        };
        if let Err(e) = step {
            for (path, original) in done.iter().rev() {
                let _ = match original {
                    Some(bytes) => fs::write(path, bytes),
                    None => fs::remove_file(path),
                };
            }
            cleanup(&staged);
            return Err(anyhow::Error::new(e)
                .context(format!("replacing {}", target.display()))
                .into());
        }
        done.push((target.clone(), original));
    }
    Ok(())
}

/// Commit the written files with git: refuses when any touched file has uncommitted changes,
/// stages only those files, runs no hooks. With `branch`, the commit goes on a new branch made
/// from HEAD, which becomes the current branch.
pub fn commit(
    root: &Path,
    files: &[FileChange],
    message: &str,
    branch: Option<&str>,
) -> Result<git2::Oid, EmitError> {
    let repo = git2::Repository::discover(root).map_err(|e| match e.code() {
        git2::ErrorCode::NotFound => EmitError::NotARepository(root.to_path_buf()),
        _ => e.into(),
    })?;
    let workdir = repo
        .workdir()
        .ok_or_else(|| {
            git2::Error::new(
                git2::ErrorCode::BareRepo,
                git2::ErrorClass::Repository,
                "the repository is bare",
            )
        })?
        .canonicalize()
        .context("resolving the work tree")?;
    let prefix = root
        .canonicalize()
        .context("resolving the root")?
        .strip_prefix(&workdir)
        .map(Path::to_path_buf)
        .map_err(|_| EmitError::Unsafe(root.display().to_string()))?;
    let rel = |p: &str| prefix.join(p);
    for f in files {
        let status = repo.status_file(&rel(&f.path));
        let clean = match status {
            Ok(s) => s.is_empty(),
            Err(e) if e.code() == git2::ErrorCode::NotFound => f.before.is_none(),
            Err(e) => return Err(e.into()),
        };
        if !clean {
            return Err(EmitError::Dirty(f.path.clone()));
        }
    }
    let head = repo.head()?.peel_to_commit()?;
    write(root, files)?;
    let result = (|| -> Result<git2::Oid, EmitError> {
        let mut index = repo.index()?;
        for f in files {
            let p = rel(&f.path);
            match f.after {
                Some(_) => index.add_path(&p)?,
                None => index.remove_path(&p)?,
            }
        }
        index.write()?;
        let tree = repo.find_tree(index.write_tree()?)?;
        let sig = repo
            .signature()
            .or_else(|_| git2::Signature::now("fluxmend", "fluxmend@localhost"))?;
        let update_ref = match branch {
            Some(name) => {
                repo.branch(name, &head, false)?;
                repo.set_head(&format!("refs/heads/{name}"))?;
                format!("refs/heads/{name}")
            }
            None => "HEAD".to_string(),
        };
        Ok(repo.commit(Some(&update_ref), &sig, &sig, message, &tree, &[&head])?)
    })();
    if result.is_err() {
        // Leave the index and the working tree as they were: the touched paths back to HEAD
        // (they were clean before), then the files.
        let paths: Vec<PathBuf> = files.iter().map(|f| rel(&f.path)).collect();
        let _ = repo.reset_default(Some(head.as_object()), paths.iter());
        let originals: Vec<FileChange> = files
            .iter()
            .map(|f| FileChange {
                path: f.path.clone(),
                before: f.after.clone(),
                after: f.before.clone(),
            })
            .collect();
        let _ = write(root, &originals);
    }
    result
}
