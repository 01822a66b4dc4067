//! `fix --commit`: the written files committed as `git add` and `git commit` would commit them,
//! or a refusal, with the reason, before anything is written.
//!
//! What git does to a file on its way into a commit depends on the repository's settings, not
//! only on the bytes: clean filters (git-crypt, git-lfs), line-ending conversion
//! (`core.autocrlf`, `text`/`eol` attributes), signing (`commit.gpgsign`). Blobs are made through
//! those filters: libgit2 applies the built-in ones (CRLF, `ident`) from the path's attributes;
//! a path with a `filter` attribute goes through `git hash-object --path`, because filter
//! drivers are commands of the user's git configuration that only git itself runs. A signed
//! commit is made by `git commit-tree -S` (git knows every `gpg.format` and its agent). Every
//! other step is libgit2.
//!
//! Refused before writing: a lock git holds (`index.lock`, `HEAD.lock`, the branch's), a merge,
//! rebase, cherry-pick, revert, bisect or `am` in progress, a touched path git hides
//! (`skip-worktree`, `assume-unchanged`: what git shows of it is not what is on disk), a touched
//! file with uncommitted changes, an existing `--branch`, a signature that cannot be made.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::Context as _;

use super::error::{EmitError, Refusal};
use crate::changes::FileChange;
use crate::targets::TargetError;

/// The operation a repository is in the middle of, if any.
fn in_progress(state: git2::RepositoryState) -> Option<&'static str> {
    use git2::RepositoryState as S;
    match state {
        S::Clean => None,
        S::Merge => Some("merge"),
        S::Revert | S::RevertSequence => Some("revert"),
        S::CherryPick | S::CherryPickSequence => Some("cherry-pick"),
        S::Bisect => Some("bisect"),
        S::Rebase | S::RebaseInteractive | S::RebaseMerge => Some("rebase"),
        S::ApplyMailbox | S::ApplyMailboxOrRebase => Some("git am"),
    }
}

/// The locks a commit takes: the index, HEAD and the branch it moves (`refname`).
fn check_locks(repo: &git2::Repository, refname: Option<&str>) -> Result<(), Refusal> {
    let mut locks = vec![
        repo.path().join("index.lock"),
        repo.path().join("HEAD.lock"),
    ];
    if let Some(name) = refname {
        locks.push(repo.commondir().join(format!("{name}.lock")));
    }
    match locks.into_iter().find(|l| l.symlink_metadata().is_ok()) {
        Some(lock) => Err(Refusal::Locked(lock.display().to_string())),
        None => Ok(()),
    }
}

/// `path`'s index entry hides it from git's view of the work tree.
fn hidden(entry: &git2::IndexEntry) -> Option<&'static str> {
    if entry.flags_extended & libgit2_flag::SKIP_WORKTREE != 0 {
        Some("skip-worktree")
    } else if entry.flags & libgit2_flag::VALID != 0 {
        Some("assume-unchanged")
    } else {
        None
    }
}

/// Index entry flags (libgit2's `GIT_INDEX_ENTRY_*`, git's `CE_*`).
mod libgit2_flag {
    /// `git update-index --assume-unchanged`.
    pub const VALID: u16 = 0x8000;
    /// `git update-index --skip-worktree`, and paths outside a sparse checkout.
    pub const SKIP_WORKTREE: u16 = 1 << 14;
}

/// `git ARGS` on `repo` with `input` on stdin: its stdout, or its stderr as the reason.
fn run_git(
    repo: &git2::Repository,
    args: &[&str],
    input: &[u8],
    env: &[(&str, &str)],
) -> Result<String, String> {
    let workdir = repo.workdir().unwrap_or_else(|| repo.path());
    // Found before it runs in the work tree, and never there (see `find_program`).
    let git = crate::platform::find_program("git")
        .ok_or("git: not found on PATH (its absolute entries)")?;
    let mut child = Command::new(git)
        .arg("--git-dir")
        .arg(repo.path())
        .arg("--work-tree")
        .arg(workdir)
        .args(args)
        .current_dir(workdir)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("git: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped");
    // Written on a thread: a filter may answer before it has read everything.
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().map_err(|e| format!("git: {e}"))?;
    let _ = feeder.join();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        Err(if why.is_empty() {
            format!("git {} failed ({})", args[0], out.status)
        } else {
            why
        })
    }
}

/// The blob of `text` as `git add` would store it at `rel` (relative to the work tree).
fn blob(repo: &git2::Repository, rel: &Path, text: &str) -> Result<git2::Oid, EmitError> {
    let filter = repo.get_attr(rel, "filter", git2::AttrCheckFlags::FILE_THEN_INDEX)?;
    if let git2::AttrValue::String(name) = git2::AttrValue::from_string(filter) {
        let path = git_path(rel);
        let oid = run_git(
            repo,
            &["hash-object", "-w", "--stdin", &format!("--path={path}")],
            text.as_bytes(),
            &[],
        )
        .map_err(|why| Refusal::Filter {
            path: path.clone(),
            filter: name.to_string(),
            why,
        })?;
        return Ok(git2::Oid::from_str(&oid)?);
    }
    // libgit2's own filters (CRLF, ident) from the path's attributes and the configuration.
    let mut writer = repo.blob_writer(Some(rel))?;
    writer
        .write_all(text.as_bytes())
        .context("writing a blob")?;
    Ok(writer.commit()?)
}

/// A repository-relative path as git spells it (`/`-separated).
fn git_path(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// The commit object (on no branch yet): signed through `git commit-tree` when
/// `commit.gpgsign` is set, else made by libgit2.
fn make_commit(
    repo: &git2::Repository,
    tree: &git2::Tree,
    parents: &[&git2::Commit],
    message: &str,
    sig: &git2::Signature,
) -> Result<git2::Oid, EmitError> {
    let sign = repo
        .config()
        .and_then(|c| c.get_bool("commit.gpgsign"))
        .unwrap_or(false);
    if !sign {
        return Ok(repo.commit(None, sig, sig, message, tree, parents)?);
    }
    let tree_id = tree.id().to_string();
    let parent_ids: Vec<String> = parents.iter().map(|p| p.id().to_string()).collect();
    let mut args = vec!["commit-tree", "-S", tree_id.as_str(), "-F", "-"];
    for p in &parent_ids {
        args.extend(["-p", p.as_str()]);
    }
    let (name, email) = (
        sig.name().unwrap_or("fluxmend").to_string(),
        sig.email().unwrap_or("fluxmend@localhost").to_string(),
    );
    let env = [
        ("GIT_AUTHOR_NAME", name.as_str()),
        ("GIT_AUTHOR_EMAIL", email.as_str()),
        ("GIT_COMMITTER_NAME", name.as_str()),
        ("GIT_COMMITTER_EMAIL", email.as_str()),
    ];
    let oid = run_git(repo, &args, message.as_bytes(), &env).map_err(Refusal::Sign)?;
    Ok(git2::Oid::from_str(&oid)?)
}

/// The stat data git keeps in an index entry to tell an unchanged file without reading it.
struct StatData {
    ctime: git2::IndexTime,
    mtime: git2::IndexTime,
    dev: u32,
    ino: u32,
    uid: u32,
    gid: u32,
}

/// From the file's metadata where the system has it; elsewhere none (git reads the file again
/// to tell).
fn stat_data(m: &std::fs::Metadata) -> StatData {
    let s = crate::platform::index_stat(m).unwrap_or_default();
    // The index keeps 32 bits of each (git truncates the same way).
    let time = |(secs, ns): (i64, i64)| git2::IndexTime::new(secs as i32, ns as u32);
    StatData {
        ctime: time(s.ctime),
        mtime: time(s.mtime),
        dev: s.dev as u32,
        ino: s.ino as u32,
        uid: s.uid,
        gid: s.gid,
    }
}

/// The index entry of the written file at `rel` with the committed `blob`: its stat data from
/// the disk, so that git sees the file unchanged without reading it again.
fn index_entry(
    workdir: &Path,
    rel: &Path,
    blob: git2::Oid,
    mode: git2::FileMode,
) -> Result<git2::IndexEntry, EmitError> {
    let full = workdir.join(rel);
    let m =
        std::fs::symlink_metadata(&full).with_context(|| format!("reading {}", full.display()))?;
    let stat = stat_data(&m);
    Ok(git2::IndexEntry {
        ctime: stat.ctime,
        mtime: stat.mtime,
        dev: stat.dev,
        ino: stat.ino,
        mode: u32::try_from(i32::from(mode)).unwrap_or(0o100_644),
        uid: stat.uid,
        gid: stat.gid,
        // The index keeps 32 bits of each (git truncates the same way).
        file_size: m.len() as u32,
        id: blob,
        flags: 0,
        flags_extended: 0,
        path: git_path(rel).into_bytes(),
    })
}

/// Commit exactly the touched files on top of HEAD (or as the first commit of a repository that
/// has none): the commit's tree is HEAD's tree with those paths replaced, whatever else is staged,
/// each blob as `git add` would make it. Refuses, writing nothing, for the reasons of the module
/// documentation; runs no hooks. The index keeps everything it had, with the touched paths
/// updated to what was committed. With `branch`, the commit goes on a new branch made from HEAD,
/// which becomes the current branch. If anything fails after the files were written, they are
/// put back (new directories removed) and the index restored.
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
        .with_context(|| format!("resolving {}", root.display()))?
        .strip_prefix(&workdir)
        .map(Path::to_path_buf)
        .map_err(|_| TargetError::Unsafe(root.display().to_string()))?;
    if let Some(operation) = in_progress(repo.state()) {
        return Err(Refusal::InProgress(operation).into());
    }
    // The ref the commit moves: the new branch, or the one HEAD names (`None`: detached).
    let head_ref = repo.find_reference("HEAD")?;
    let moved: Option<String> = match branch {
        Some(name) => Some(format!("refs/heads/{name}")),
        None => head_ref.symbolic_target()?.map(str::to_string),
    };
    check_locks(&repo, moved.as_deref())?;
    // HEAD's commit, or none in a repository without commits (an unborn branch).
    let head = match repo.head() {
        Ok(r) => Some(r.peel_to_commit()?),
        Err(e) if e.code() == git2::ErrorCode::UnbornBranch => None,
        Err(e) => return Err(e.into()),
    };
    let head_tree = match &head {
        Some(c) => c.tree()?,
        None => repo.find_tree(repo.treebuilder(None)?.write()?)?,
    };
    check_clean(&repo, prefix.as_path(), files, head.is_none())?;
    if let Some(name) = branch
        && repo.find_branch(name, git2::BranchType::Local).is_ok()
    {
        return Err(EmitError::BranchExists(name.to_string()));
    }
    // The tree: HEAD's, with exactly the touched paths replaced, each blob through git's filters.
    let (tree, staged) = updated_tree(&repo, &head_tree, prefix.as_path(), files)?;
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now("fluxmend", "fluxmend@localhost"))?;
    let parents: Vec<&git2::Commit> = head.iter().collect();
    // Made (and signed) before anything is written: on no branch until the end.
    let oid = make_commit(&repo, &tree, &parents, message, &sig)?;
    let written = super::write::write(root, files)?;
    let mut index = repo.index()?;
    let saved: Vec<(PathBuf, Option<git2::IndexEntry>)> = staged
        .iter()
        .map(|(p, _)| (p.clone(), index.get_path(p, 0)))
        .collect();
    let result = (|| -> Result<(), EmitError> {
        // The index first: only the touched paths change, to what is committed.
        for (p, entry) in &staged {
            match entry {
                Some((blob, mode)) => index.add(&index_entry(&workdir, p, *blob, *mode)?)?,
                None => {
                    if index.get_path(p, 0).is_some() {
                        index.remove_path(p)?;
                    }
                }
            }
        }
        index.write()?;
        // Then the branch, from where HEAD was.
        move_ref(&repo, branch, moved.as_deref(), head.as_ref(), oid, message)
    })();
    if let Err(e) = result {
        let mut index = repo.index()?;
        for (p, entry) in saved {
            let _ = match entry {
                Some(entry) => index.add(&entry),
                None => index.remove_path(&p),
            };
        }
        let _ = index.write();
        let _ = super::write::undo(root, files, &written);
        return Err(e);
    }
    Ok(oid)
}

/// Refuse a touched file that git hides (`assume-unchanged`, `skip-worktree`) or that has
/// uncommitted changes (`unborn`: the repository has no commit yet).
fn check_clean(
    repo: &git2::Repository,
    prefix: &Path,
    files: &[FileChange],
    unborn: bool,
) -> Result<(), EmitError> {
    let index = repo.index()?;
    for f in files {
        let p = prefix.join(&f.path);
        if let Some(flag) = index.get_path(&p, 0).as_ref().and_then(hidden) {
            return Err(Refusal::Hidden {
                path: git_path(&p),
                flag,
            }
            .into());
        }
        let clean = match repo.status_file(&p) {
            // Without a commit, a file is at best staged as new: only a difference between the
            // index and the work tree is an uncommitted change.
            Ok(s) if unborn => !s.intersects(
                git2::Status::WT_MODIFIED | git2::Status::WT_DELETED | git2::Status::WT_TYPECHANGE,
            ),
            Ok(s) => s.is_empty() || (f.before.is_none() && s == git2::Status::WT_NEW),
            Err(e) if e.code() == git2::ErrorCode::NotFound => f.before.is_none(),
            Err(e) => return Err(e.into()),
        };
        if !clean {
            return Err(EmitError::Dirty(f.path.clone()));
        }
    }
    Ok(())
}

/// HEAD's tree with exactly the touched paths replaced, each blob through git's filters; and
/// what each touched path is staged as (`None`: removed).
fn updated_tree<'r>(
    repo: &'r git2::Repository,
    head_tree: &git2::Tree,
    prefix: &Path,
    files: &[FileChange],
) -> Result<(git2::Tree<'r>, Staged), EmitError> {
    let mut update = git2::build::TreeUpdateBuilder::new();
    let mut staged: Staged = Vec::new();
    for f in files {
        let p = prefix.join(&f.path);
        match &f.after {
            Some(text) => {
                let mode = match head_tree.get_path(&p) {
                    Ok(e) if e.filemode() == i32::from(git2::FileMode::BlobExecutable) => {
                        git2::FileMode::BlobExecutable
                    }
                    _ => git2::FileMode::Blob,
                };
                let oid = blob(repo, &p, text)?;
                update.upsert(git_path(&p), oid, mode);
                staged.push((p, Some((oid, mode))));
            }
            None => {
                update.remove(git_path(&p));
                staged.push((p, None));
            }
        }
    }
    let tree = repo.find_tree(update.create_updated(repo, head_tree)?)?;
    Ok((tree, staged))
}

/// Move the branch to the commit `oid`: a new `branch` made current, or the branch HEAD names
/// (`moved`), or a detached HEAD, each from where HEAD was.
fn move_ref(
    repo: &git2::Repository,
    branch: Option<&str>,
    moved: Option<&str>,
    head: Option<&git2::Commit>,
    oid: git2::Oid,
    message: &str,
) -> Result<(), EmitError> {
    let subject = message.lines().next().unwrap_or_default();
    let reflog = match &head {
        Some(_) => format!("commit: {subject}"),
        None => format!("commit (initial): {subject}"),
    };
    match (branch, moved, head) {
        (Some(_), Some(refname), _) => {
            repo.reference(refname, oid, false, &reflog)?;
            if let Err(e) = repo.set_head(refname) {
                if let Ok(mut r) = repo.find_reference(refname) {
                    let _ = r.delete();
                }
                return Err(e.into());
            }
        }
        (None, Some(refname), Some(parent)) => {
            repo.reference_matching(refname, oid, true, parent.id(), &reflog)?;
        }
        (None, Some(refname), None) => {
            repo.reference(refname, oid, false, &reflog)?;
        }
        (None, None, Some(parent)) => {
            repo.reference_matching("HEAD", oid, true, parent.id(), &reflog)?;
        }
        _ => {
            return Err(git2::Error::from_str("HEAD names no branch and no commit").into());
        }
    }
    Ok(())
}

/// Each touched path and what it is staged as: a blob and its mode, or `None` (removed).
type Staged = Vec<(PathBuf, Option<(git2::Oid, git2::FileMode)>)>;
