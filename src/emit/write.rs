//! Writing a changeset in place, all or nothing, even when the process is killed.
//!
//! A write is a small transaction with a journal (`.fluxmend-journal` in the repository root):
//!
//! 1. The journal is created exclusively (a second fluxmend writing the same tree is refused).
//! 2. Every new directory is journalled, then made; every new content is journalled under its
//!    temporary name, then written to that temporary sibling of its target — created exclusively
//!    (`O_CREAT|O_EXCL|O_NOFOLLOW`, random name) — and flushed to disk.
//! 3. The line `commit` is appended: from here on the new tree is decided.
//! 4. New files are linked into place (never over an existing path), then edited files are
//!    renamed over their originals, then deleted files are removed — so an observer in between
//!    never sees a reference to a file that is not there yet, nor a file still referenced gone.
//! 5. The journal is removed.
//!
//! The next run that finds a journal completes the write when it holds `commit` and rolls it
//! back (removes the temporary files and the directories it made) otherwise ([`recover`]).
//!
//! The journal lives in the repository root, not under `.git`: it works the same outside git,
//! for any PATH below a work tree, and `git status` shows it to a user who never runs fluxmend
//! again. Nothing it names is trusted: every path is checked like a path of a fix.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::apply::{EmitError, FileChange};

/// The journal's file name in the repository root.
pub const JOURNAL: &str = ".fluxmend-journal";

const HEADER: &str = "fluxmend-journal 1";

/// The longest file name Linux file systems take, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// Check that `rel` is a plain relative path whose existing components below `root` are real
/// directories (no symbolic link anywhere), and return the full path.
pub fn safe_path(root: &Path, rel: &str) -> Result<PathBuf, EmitError> {
    if rel.is_empty()
        || rel.starts_with('/')
        || rel
            .split('/')
            .any(|c| c == ".." || c == "." || c.is_empty() || c.contains('\0'))
    {
        return Err(EmitError::Unsafe(rel.into()));
    }
    if let Some(long) = rel.split('/').find(|c| c.len() > MAX_NAME_BYTES) {
        return Err(EmitError::NameTooLong {
            path: shorten(rel),
            bytes: long.len(),
        });
    }
    let mut at = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(EmitError::Unsafe(rel.into()));
            }
            Ok(meta) if i + 1 < parts.len() && !meta.is_dir() => {
                return Err(EmitError::Unsafe(rel.into()));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", at.display()))
                    .into());
            }
        }
    }
    Ok(root.join(rel))
}

/// A path for messages: at most 120 bytes of it.
fn shorten(rel: &str) -> String {
    if rel.len() <= 120 {
        return rel.to_string();
    }
    let mut end = 100;
    while !rel.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &rel[..end], rel.len())
}

/// Check, without writing, that every change can be written: its path is safe, a file it
/// creates does not exist on disk (whatever the ignore rules hide from the loader), a file it
/// edits or deletes is a regular file.
pub fn check_targets(root: &Path, files: &[FileChange]) -> Result<(), EmitError> {
    for f in files {
        let target = safe_path(root, &f.path)?;
        let meta = fs::symlink_metadata(&target);
        match (&f.before, meta) {
            (None, Ok(_)) => return Err(EmitError::Exists(f.path.clone())),
            (None, Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {}
            (Some(_), Ok(m)) if m.is_file() => {}
            (Some(_), Ok(_)) => return Err(EmitError::Unsafe(f.path.clone())),
            (_, Err(e)) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", target.display()))
                    .into());
            }
        }
    }
    Ok(())
}

/// What a successful [`write`] made, so that it can be undone (a failed commit).
#[derive(Debug, Default)]
pub struct Written {
    /// Directories the write created, parents first.
    pub dirs: Vec<PathBuf>,
}

/// One step of the transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    Dir(String),
    Create(String, String),
    Edit(String, String),
    Delete(String),
    /// A temporary name that turned out to be taken: not ours.
    Void(String),
}

/// The journal being written.
struct Journal {
    file: File,
    path: PathBuf,
    /// Test hook: stop the process (as a kill would) after this many more steps.
    abort_after: Option<usize>,
}

impl Journal {
    fn create(root: &Path) -> Result<Journal, EmitError> {
        let path = root.join(JOURNAL);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    EmitError::Journal(format!(
                        "{} exists: another fluxmend is writing this tree, or one was interrupted; \
                         run `fluxmend fix {}` to complete or roll it back",
                        path.display(),
                        root.display()
                    ))
                } else {
                    anyhow::Error::new(e)
                        .context(format!("creating {}", path.display()))
                        .into()
                }
            })?;
        let abort_after = std::env::var("FLUXMEND_TEST_ABORT_AFTER")
            .ok()
            .and_then(|s| s.parse().ok());
        let mut j = Journal {
            file,
            path,
            abort_after,
        };
        j.line(HEADER)?;
        Ok(j)
    }

    /// Append one line and flush it to disk.
    fn line(&mut self, text: &str) -> Result<(), EmitError> {
        self.file
            .write_all(format!("{text}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.step();
        Ok(())
    }

    fn op(&mut self, op: &Op) -> Result<(), EmitError> {
        let q = |s: &str| serde_json::to_string(s).expect("a string is JSON");
        let text = match op {
            Op::Dir(d) => format!("dir {}", q(d)),
            Op::Create(t, tmp) => format!("create {} {}", q(t), q(tmp)),
            Op::Edit(t, tmp) => format!("edit {} {}", q(t), q(tmp)),
            Op::Delete(t) => format!("delete {}", q(t)),
            Op::Void(tmp) => format!("void {}", q(tmp)),
        };
        self.line(&text)
    }

    /// Count one step; the test hook ends the process here without any clean-up, as SIGKILL
    /// would.
    fn step(&mut self) {
        if let Some(n) = &mut self.abort_after {
            if *n == 0 {
                // SAFETY: _exit ends the process at once; nothing is touched afterwards.
                unsafe { libc::_exit(86) };
            }
            *n -= 1;
        }
    }
}

/// Write every change, all or nothing (see the module documentation). Refuses, writing nothing,
/// when a path is unsafe, a file to create exists, or a file to edit changed since it was read.
pub fn write(root: &Path, files: &[FileChange]) -> Result<Written, EmitError> {
    check_targets(root, files)?;
    for f in files.iter().filter(|f| f.before.is_some()) {
        let target = root.join(&f.path);
        let now = fs::read(&target).with_context(|| format!("reading {}", target.display()))?;
        if Some(now.as_slice()) != f.before.as_deref().map(str::as_bytes) {
            return Err(EmitError::Changed(f.path.clone()));
        }
    }
    let mut journal = Journal::create(root)?;
    let mut ops: Vec<Op> = Vec::new();
    let mut temps: Vec<tempfile::TempPath> = Vec::new();
    let prepared = prepare(root, files, &mut journal, &mut ops, &mut temps);
    let mut committed = false;
    let result = prepared.and_then(|()| {
        journal.line("commit")?;
        committed = true;
        // From here the new tree is decided: the temporary files are the journal's to move.
        for t in temps.drain(..) {
            let _ = t.keep();
        }
        apply(root, &ops, Some(&mut journal))
    });
    match result {
        Ok(()) => {
            let dirs = ops
                .iter()
                .filter_map(|op| match op {
                    Op::Dir(d) => Some(root.join(d)),
                    _ => None,
                })
                .collect();
            finish(root, &journal.path)?;
            Ok(Written { dirs })
        }
        Err(e) if committed => Err(EmitError::Journal(format!(
            "{e}; the write is recorded in {} and the next `fluxmend fix {}` completes it",
            journal.path.display(),
            root.display()
        ))),
        Err(e) => {
            drop(temps);
            rollback(root, &ops);
            let _ = fs::remove_file(&journal.path);
            Err(e)
        }
    }
}

/// Steps 2 of the transaction: directories and temporary files, each journalled first.
fn prepare(
    root: &Path,
    files: &[FileChange],
    journal: &mut Journal,
    ops: &mut Vec<Op>,
    temps: &mut Vec<tempfile::TempPath>,
) -> Result<(), EmitError> {
    // New files first, then edits, deletions last: the order they are applied in.
    let rank = |f: &FileChange| match (&f.before, &f.after) {
        (None, _) => 0,
        (Some(_), Some(_)) => 1,
        (Some(_), None) => 2,
    };
    let mut ordered: Vec<&FileChange> = files.iter().collect();
    ordered.sort_by_key(|f| rank(f));
    for f in ordered {
        let Some(text) = &f.after else {
            let op = Op::Delete(f.path.clone());
            journal.op(&op)?;
            ops.push(op);
            continue;
        };
        let dir = parent(&f.path);
        make_dirs(root, dir, journal, ops)?;
        safe_path(root, &f.path)?;
        let mode = match &f.before {
            Some(_) => fs::symlink_metadata(root.join(&f.path))
                .map(|m| m.mode() & 0o7777)
                .with_context(|| format!("reading {}", root.join(&f.path).display()))?,
            None => 0o666,
        };
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let abs_dir = root.join(dir);
        let prefix = format!(".{}.fluxmend-", truncate(name, 180));
        let mut journal_err = None;
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .rand_bytes(10)
            .make_in(&abs_dir, |path| {
                let rel = relative(root, path);
                let intent = match &f.before {
                    Some(_) => Op::Edit(f.path.clone(), rel.clone()),
                    None => Op::Create(f.path.clone(), rel.clone()),
                };
                if let Err(e) = journal.op(&intent) {
                    journal_err = Some(e);
                    return Err(std::io::Error::other("journal"));
                }
                let opened = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(path);
                match opened {
                    Ok(file) => {
                        ops.push(intent);
                        Ok(file)
                    }
                    Err(e) => {
                        if e.kind() == std::io::ErrorKind::AlreadyExists
                            && let Err(j) = journal.op(&Op::Void(rel))
                        {
                            journal_err = Some(j);
                        }
                        Err(e)
                    }
                }
            });
        if let Some(e) = journal_err {
            return Err(e);
        }
        let mut tmp =
            tmp.with_context(|| format!("creating a temporary file in {}", abs_dir.display()))?;
        let shown = tmp.path().display().to_string();
        tmp.as_file_mut()
            .write_all(text.as_bytes())
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("writing {shown}"))?;
        if f.before.is_some() {
            // Keep the mode exactly, whatever the umask took away.
            fs::set_permissions(
                tmp.path(),
                std::os::unix::fs::PermissionsExt::from_mode(mode),
            )
            .with_context(|| format!("setting the mode of {shown}"))?;
        }
        temps.push(tmp.into_temp_path());
        journal.step();
    }
    Ok(())
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// Create the missing directories of `dir` (relative), journalling each before making it.
fn make_dirs(
    root: &Path,
    dir: &str,
    journal: &mut Journal,
    ops: &mut Vec<Op>,
) -> Result<(), EmitError> {
    if dir.is_empty() {
        return Ok(());
    }
    let mut rel = String::new();
    for part in dir.split('/') {
        if !rel.is_empty() {
            rel.push('/');
        }
        rel.push_str(part);
        let at = root.join(&rel);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => return Err(EmitError::Unsafe(rel)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {}", at.display()))
                    .into());
            }
        }
        let op = Op::Dir(rel.clone());
        journal.op(&op)?;
        fs::create_dir(&at).with_context(|| format!("creating {}", at.display()))?;
        ops.push(op);
    }
    Ok(())
}

/// Step 4: put every temporary file in place and delete what goes. Each step is idempotent, so
/// that recovery can run it again after a crash.
fn apply(root: &Path, ops: &[Op], mut journal: Option<&mut Journal>) -> Result<(), EmitError> {
    for op in ops {
        match op {
            Op::Dir(_) | Op::Void(_) => continue,
            Op::Create(target, tmp) => {
                let (t, p) = (safe_path(root, target)?, safe_path(root, tmp)?);
                match (fs::symlink_metadata(&p), fs::symlink_metadata(&t)) {
                    (Ok(pm), Ok(tm)) if pm.ino() == tm.ino() && pm.dev() == tm.dev() => {
                        remove(&p)?;
                    }
                    (Ok(_), Ok(_)) => return Err(EmitError::Exists(target.clone())),
                    (Ok(pm), Err(_)) if pm.is_file() => {
                        // A hard link never replaces an existing path (nor follows a link there).
                        fs::hard_link(&p, &t).map_err(|e| {
                            if e.kind() == std::io::ErrorKind::AlreadyExists {
                                EmitError::Exists(target.clone())
                            } else {
                                anyhow::Error::new(e)
                                    .context(format!("creating {}", t.display()))
                                    .into()
                            }
                        })?;
                        remove(&p)?;
                    }
                    (Ok(_), Err(_)) => return Err(EmitError::Unsafe(tmp.clone())),
                    (Err(_), _) => {} // done before
                }
            }
            Op::Edit(target, tmp) => {
                let (t, p) = (safe_path(root, target)?, safe_path(root, tmp)?);
                match fs::symlink_metadata(&p) {
                    Ok(pm) if pm.is_file() => {
                        if !fs::symlink_metadata(&t).is_ok_and(|m| m.is_file()) {
                            return Err(EmitError::Unsafe(target.clone()));
                        }
                        fs::rename(&p, &t).with_context(|| format!("replacing {}", t.display()))?;
                    }
                    Ok(_) => return Err(EmitError::Unsafe(tmp.clone())),
                    Err(_) => {} // done before
                }
            }
            Op::Delete(target) => {
                let t = safe_path(root, target)?;
                match fs::symlink_metadata(&t) {
                    Ok(m) if m.is_file() => remove(&t)?,
                    Ok(_) => return Err(EmitError::Unsafe(target.clone())),
                    Err(_) => {}
                }
            }
        }
        if let Some(j) = journal.as_deref_mut() {
            j.step();
        }
    }
    Ok(())
}

fn remove(path: &Path) -> Result<(), EmitError> {
    fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    Ok(())
}

/// Flush the directories and remove the journal: the write is complete.
fn finish(root: &Path, journal: &Path) -> Result<(), EmitError> {
    fs::remove_file(journal).with_context(|| format!("removing {}", journal.display()))?;
    if let Ok(d) = File::open(root) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Undo a write that was not committed: remove the temporary files and the directories it made
/// (deepest first, only when empty).
fn rollback(root: &Path, ops: &[Op]) {
    for op in ops.iter().rev() {
        match op {
            Op::Create(_, tmp) | Op::Edit(_, tmp) => {
                if let Ok(p) = safe_path(root, tmp)
                    && fs::symlink_metadata(&p).is_ok_and(|m| m.is_file())
                {
                    let _ = fs::remove_file(p);
                }
            }
            Op::Dir(d) => {
                if let Ok(p) = safe_path(root, d) {
                    let _ = fs::remove_dir(p);
                }
            }
            Op::Delete(_) | Op::Void(_) => {}
        }
    }
}

/// Restore the tree a successful [`write`] replaced (`files` as given to it), and remove the
/// directories it created — used when the commit that follows fails.
pub fn undo(root: &Path, files: &[FileChange], written: &Written) -> Result<(), EmitError> {
    let inverse: Vec<FileChange> = files
        .iter()
        .map(|f| FileChange {
            path: f.path.clone(),
            before: f.after.clone(),
            after: f.before.clone(),
        })
        .collect();
    write(root, &inverse)?;
    for d in written.dirs.iter().rev() {
        let _ = fs::remove_dir(d);
    }
    Ok(())
}

/// What [`recover`] did with an interrupted write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The write had been decided: it was completed.
    Completed,
    /// It had not: its temporary files and new directories were removed.
    RolledBack,
}

/// Finish a write that was interrupted (the journal exists): complete it when it had reached
/// `commit`, roll it back otherwise. `None` when there was nothing to do.
pub fn recover(root: &Path) -> Result<Option<Recovery>, EmitError> {
    let path = root.join(JOURNAL);
    let meta = match fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("reading {}", path.display()))
                .into());
        }
    };
    let unreadable = |why: &str| {
        EmitError::Journal(format!(
            "{} is not a journal fluxmend can use ({why}); check the files it names and remove it",
            path.display()
        ))
    };
    if !meta.is_file() || meta.len() > 16 << 20 {
        return Err(unreadable("not a regular file of at most 16 MiB"));
    }
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    // The last line may be cut short by the crash: only complete lines were acted on.
    let complete = text.rfind('\n').map_or("", |i| &text[..=i]);
    let mut lines = complete.lines();
    match lines.next() {
        Some(HEADER) => {}
        // Killed while writing the header: nothing had been done yet.
        None if HEADER.starts_with(text.as_str()) => {
            finish(root, &path)?;
            return Ok(Some(Recovery::RolledBack));
        }
        _ => return Err(unreadable("unknown header")),
    }
    let mut ops = Vec::new();
    let mut committed = false;
    for line in lines {
        if line == "commit" {
            committed = true;
            continue;
        }
        let (word, rest) = line.split_once(' ').ok_or_else(|| unreadable(line))?;
        let mut args = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let mut next = || -> Result<String, EmitError> {
            args.next()
                .and_then(Result::ok)
                .ok_or_else(|| unreadable(line))
        };
        let op = match word {
            "dir" => Op::Dir(next()?),
            "create" => Op::Create(next()?, next()?),
            "edit" => Op::Edit(next()?, next()?),
            "delete" => Op::Delete(next()?),
            "void" => Op::Void(next()?),
            _ => return Err(unreadable(line)),
        };
        // A temporary file must be a fluxmend temporary beside its target.
        if let Op::Create(t, tmp) | Op::Edit(t, tmp) = &op {
            let name = tmp.rsplit('/').next().unwrap_or(tmp);
            if parent(t) != parent(tmp)
                || !name.starts_with('.')
                || !name.contains(".fluxmend-")
                || !name.ends_with(".tmp")
            {
                return Err(unreadable(line));
            }
        }
        ops.push(op);
    }
    let outcome = if committed {
        apply(root, &ops, None)?;
        Recovery::Completed
    } else {
        rollback(root, &ops);
        Recovery::RolledBack
    };
    finish(root, &path)?;
    Ok(Some(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str, before: Option<&str>, after: Option<&str>) -> FileChange {
        FileChange {
            path: path.into(),
            before: before.map(Into::into),
            after: after.map(Into::into),
        }
    }

    /// A kill while the journal's header or its last line is being written leaves it cut short:
    /// only complete lines count, and a cut header means nothing had been done.
    #[test]
    fn a_journal_cut_short_by_a_kill_is_rolled_back() {
        for text in ["", "fluxmend-jour", "fluxmend-journal 1\ndir \"new-d"] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(JOURNAL), text).unwrap();
            let outcome = recover(dir.path()).unwrap();
            assert!(matches!(outcome, Some(Recovery::RolledBack)), "{text:?}");
            assert!(!dir.path().join(JOURNAL).exists(), "{text:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(JOURNAL), "not a journal\n").unwrap();
        assert!(recover(dir.path()).is_err());
    }

    #[test]
    fn refuses_to_create_an_existing_file_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.yaml"), "a: 1\n").unwrap();
        fs::write(dir.path().join("secret.yaml"), "mine\n").unwrap();
        let files = [
            change("a.yaml", Some("a: 1\n"), Some("a: 2\n")),
            change("secret.yaml", None, Some("new\n")),
            change("new/dir/x.yaml", None, Some("x\n")),
        ];
        let err = write(dir.path(), &files).unwrap_err();
        assert!(
            matches!(err, EmitError::Exists(ref p) if p == "secret.yaml"),
            "{err}"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("a.yaml")).unwrap(),
            "a: 1\n"
        );
        assert_eq!(
            fs::read_to_string(dir.path().join("secret.yaml")).unwrap(),
            "mine\n"
        );
        assert!(!dir.path().join("new").exists());
        assert!(!dir.path().join(JOURNAL).exists());
    }

    #[test]
    fn refuses_a_file_name_over_255_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let long = format!("d/{}.yaml", "n".repeat(300));
        let err = write(dir.path(), &[change(&long, None, Some("x\n"))]).unwrap_err();
        assert!(
            matches!(err, EmitError::NameTooLong { bytes: 305, .. }),
            "{err}"
        );
        assert!(err.to_string().len() < 300, "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_write_refused_for_a_changed_file_makes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.yaml"), "a: 1\n").unwrap();
        // The edit's `before` no longer matches the disk: refused before anything is made.
        let files = [
            change("new/x.yaml", None, Some("x\n")),
            change("a.yaml", Some("a: 0\n"), Some("a: 2\n")),
        ];
        let err = write(dir.path(), &files).unwrap_err();
        assert!(matches!(err, EmitError::Changed(_)), "{err}");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.yaml"]);
    }

    #[test]
    fn io_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        // A file where a directory must be: the message names it.
        fs::write(dir.path().join("blocker"), "").unwrap();
        let err = write(dir.path(), &[change("blocker/x.yaml", None, Some("x\n"))]).unwrap_err();
        assert!(err.to_string().contains("blocker/x.yaml"), "{err}");
    }

    #[test]
    fn keeps_the_mode_of_an_edited_file() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.sh");
        fs::write(&p, "a\n").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o751)).unwrap();
        write(dir.path(), &[change("run.sh", Some("a\n"), Some("b\n"))]).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o751
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), "b\n");
    }
}
