//! A write: the journal, the temporaries, the plan and its steps (steps 1 to 6 of the module
//! documentation); and undoing a successful write when the commit that follows fails.

use std::io::{self, Write as _};
use std::path::Path;

use anyhow::Context as _;

use crate::changes::FileChange;
use crate::emit::error::EmitError;
use crate::platform::dirfd::{self, Meta};
use crate::targets::{TargetError, check_targets};

use super::hooks;
use super::journal::{JOURNAL, Journal};
use super::ops::{Op, base, digest, join, parent};
use super::steps::{Stop, clean, complete, finish, forward};
use super::tree::{State, Tree};

/// What a successful [`write`] made, so that it can be undone (a failed commit).
#[derive(Debug, Default)]
pub struct Written {
    /// Directories the write created (relative), parents first.
    pub dirs: Vec<String>,
}

/// Write every change, all or nothing (see the module documentation). Refuses, writing nothing,
/// when a path is unsafe, a file to create exists, a file to edit changed since it was read, or
/// another program changes a target while the write runs.
pub fn write(root: &Path, files: &[FileChange]) -> Result<Written, EmitError> {
    check_targets(root, files)?;
    let mut tree = Tree::open(root)?;
    for f in files {
        let now = tree.state(&f.path)?;
        match &f.before {
            None if now == State::Absent => {}
            None => return Err(TargetError::Exists(f.path.clone()).into()),
            Some(text) if now.holds(&digest(text.as_bytes())) => {}
            Some(_) => return Err(EmitError::Changed(f.path.clone())),
        }
    }
    let mut journal = Journal::create(&tree)?;
    let mut ops: Vec<Op> = Vec::new();
    let decided = prepare(&mut tree, files, &mut journal, &mut ops)
        .and_then(|()| {
            hooks::race(root, "prepared", "");
            // The last check before the write is decided: every target as it was read.
            for op in &ops {
                if let Err(stop) = forward(&mut tree, op, false) {
                    return Err(match stop {
                        Stop::Race(path) => EmitError::Raced { path, left: vec![] },
                        Stop::Io(e) => e,
                    });
                }
            }
            Ok(())
        })
        .and_then(|()| journal.line("commit"));
    if let Err(e) = decided {
        let _ = clean(&mut tree, &ops, false);
        let _ = tree.root_dir.unlink(JOURNAL);
        return Err(e);
    }
    match complete(&mut tree, &ops, &mut journal, true) {
        Ok(None) => {
            clean(&mut tree, &ops, true)?;
            finish(&tree)?;
            let dirs = ops
                .iter()
                .filter_map(|op| match op {
                    Op::Dir(d) => Some(d.clone()),
                    _ => None,
                })
                .collect();
            Ok(Written { dirs })
        }
        Ok(Some((path, mut left))) => {
            left.extend(clean(&mut tree, &ops, false)?);
            finish(&tree)?;
            Err(EmitError::Raced { path, left })
        }
        Err(e) => Err(EmitError::Journal(format!(
            "{e}; the write is recorded in {} and the next `fluxmend fix --write {}` completes \
             or rolls it back",
            journal.path.display(),
            root.display()
        ))),
    }
}

/// Step 2 of the transaction: directories, temporaries and the plan, each journalled first.
fn prepare(
    tree: &mut Tree,
    files: &[FileChange],
    journal: &mut Journal,
    ops: &mut Vec<Op>,
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
        let target = f.path.clone();
        let dir = parent(&f.path);
        make_dirs(tree, dir, journal, ops)?;
        // An edited or deleted file's mode, owner and group go to its new content and its copy;
        // a new file takes the owner and group of its directory (root writing a user's tree
        // leaves no root-owned file behind).
        let like = match &f.before {
            Some(_) => tree.stat(&f.path)?,
            None => None,
        };
        let owner = match like {
            Some(m) => m.owner,
            None => owner_of(tree, dir)?,
        };
        let mut temp = |bytes: &[u8]| make_temp(tree, &f.path, bytes, like, owner, journal, ops);
        let op = match (&f.before, &f.after) {
            (None, Some(after)) => Op::Create {
                new: temp(after.as_bytes())?,
                after: digest(after.as_bytes()),
                target,
            },
            (Some(before), Some(after)) => Op::Edit {
                new: temp(after.as_bytes())?,
                old: temp(before.as_bytes())?,
                before: digest(before.as_bytes()),
                after: digest(after.as_bytes()),
                target,
            },
            (Some(before), None) => Op::Delete {
                old: temp(before.as_bytes())?,
                before: digest(before.as_bytes()),
                target,
            },
            (None, None) => continue,
        };
        journal.op(&op)?;
        ops.push(op);
    }
    Ok(())
}

/// A random hexadecimal name part (the standard library's per-process random hash keys).
fn random_part() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:016x}", h.finish())
}

/// The owner and group of the directory `dir` (relative).
fn owner_of(tree: &mut Tree, dir: &str) -> Result<Option<(u32, u32)>, EmitError> {
    let shown = tree.show(dir);
    Ok(tree
        .existing(dir)?
        .owner()
        .with_context(|| format!("reading the owner of {shown}"))?)
}

/// Write `bytes` to a new temporary sibling of `target`, journalled first, created exclusively
/// (a name found taken is journalled void and another is drawn), with `like`'s mode, `owner`
/// and group, and flushed. Returns its relative path.
fn make_temp(
    tree: &mut Tree,
    target: &str,
    bytes: &[u8],
    like: Option<Meta>,
    owner: Option<(u32, u32)>,
    journal: &mut Journal,
    ops: &mut Vec<Op>,
) -> Result<String, EmitError> {
    let dir = parent(target);
    let stem = truncate(base(target), 180).to_string();
    let mode = like.map_or(0o666, |m| m.mode);
    for _ in 0..16 {
        let name = format!(".{stem}.fluxmend-{}.tmp", random_part());
        let rel = join(dir, &name);
        let intent = Op::Temp(rel.clone(), digest(bytes));
        journal.op(&intent)?;
        ops.push(intent);
        let shown = tree.show(&rel);
        // Filled before it is named (see `dirfd::create_filled`): a kill leaves the temporary
        // whole or absent, and recovery removes only what holds the content it journalled.
        let fill = |file: &mut std::fs::File| {
            file.write_all(bytes)
                .and_then(|()| dirfd::chown_like(file, owner))
                .and_then(|()| match like {
                    // Keep the mode exactly, whatever the umask (or chown) took away.
                    Some(m) => dirfd::set_mode(file, m.mode),
                    None => Ok(()),
                })
                .and_then(|()| file.sync_all())
        };
        match dirfd::create_filled(tree.existing(dir)?, &name, mode, fill) {
            Ok(()) => {
                journal.step();
                return Ok(rel);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let void = Op::Void(rel);
                journal.op(&void)?;
                ops.push(void);
            }
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("creating a temporary file {shown}"))
                    .into());
            }
        }
    }
    Err(EmitError::Journal(format!(
        "every temporary name tried beside {target} was taken"
    )))
}

fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Create the missing directories of `dir` (relative), journalling each before making it.
fn make_dirs(
    tree: &mut Tree,
    dir: &str,
    journal: &mut Journal,
    ops: &mut Vec<Op>,
) -> Result<(), EmitError> {
    if dir.is_empty() {
        return Ok(());
    }
    let mut rel = String::new();
    for part in dir.split('/') {
        let up = rel.clone();
        rel = join(&up, part);
        match tree.dir(&rel) {
            Ok(Some(_)) => continue,
            Ok(None) => {}
            Err(_) => return Err(EmitError::from(TargetError::Unsafe(rel))),
        }
        let op = Op::Dir(rel.clone());
        journal.op(&op)?;
        let owner = owner_of(tree, &up)?;
        tree.at(&rel, "creating", crate::platform::dirfd::Dir::mkdir)?;
        ops.push(op);
        // Owned as its parent is (see `prepare`).
        let shown = tree.show(&rel);
        tree.existing(&rel)?
            .chown_like(owner)
            .with_context(|| format!("creating {shown}"))?;
    }
    Ok(())
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
    let mut tree = Tree::open(root)?;
    for d in written.dirs.iter().rev() {
        if let Ok(Some(up)) = tree.dir(parent(d)) {
            let _ = up.rmdir(base(d));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    fn change(path: &str, before: Option<&str>, after: Option<&str>) -> FileChange {
        FileChange {
            path: path.into(),
            before: before.map(Into::into),
            after: after.map(Into::into),
        }
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
            matches!(err, EmitError::Target(TargetError::Exists(ref p)) if p == "secret.yaml"),
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
            matches!(
                err,
                EmitError::Target(TargetError::NameTooLong { bytes: 305, .. })
            ),
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

    #[cfg(unix)]
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
