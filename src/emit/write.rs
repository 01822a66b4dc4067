//! Writing a changeset in place, all or nothing, even when the process is killed or another
//! program changes the same files meanwhile.
//!
//! A write is a small transaction with a journal (`.fluxmend-journal` in the repository root):
//!
//! 1. The journal is created exclusively (a second fluxmend writing the same tree is refused).
//! 2. Every directory on the way is opened from the root without following a link and held open
//!    ([`crate::platform::dirfd`]): a directory renamed or replaced by a link later does not redirect the
//!    write. Every new directory is journalled, then made. Every new content, and a copy of every
//!    file to edit or delete, is journalled (its temporary name and the SHA-256 of its content),
//!    then written to a temporary sibling of its target created exclusively under a random name
//!    (with the target's mode, owner and group) and flushed. Then the plan: which temporary goes
//!    where, with the hashes of each target's content before and after.
//! 3. Every target is checked again (its content, the directories on its way): a change another
//!    program made meanwhile is a lost race, and everything is rolled back.
//! 4. The line `commit` is appended: from here on the new tree is decided.
//! 5. New files are linked into place (never over an existing path), edited files renamed over
//!    their originals, deleted files removed, each right after its target is checked once more.
//!    A race lost here appends `abort` and puts back what was done, from the copies.
//! 6. The temporaries and the journal are removed.
//!
//! The journal proves what it did: recovery ([`recover`], run by the next `fix --write` or
//! `--commit`, never by a dry run) acts only on files whose content is what the journal
//! recorded, so a journal fluxmend did not write can make it do no more than its author could
//! by writing those files directly. It completes a decided write, rolls back one that was not
//! decided or that cannot complete without overwriting a later change, and leaves alone, saying
//! so, whatever it cannot prove. A journal tracked by git (it came with the repository), one
//! naming a path in `.git`, a target that is not YAML, or a temporary the journal did not
//! declare beside its target or that git tracks, is refused whole.
//!
//! The journal lives in the repository root, not under `.git`: it works the same outside git,
//! for any PATH below a work tree, and `git status` shows it to a user who never runs fluxmend
//! again.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest as _, Sha256};

use super::error::EmitError;
use crate::changes::FileChange;
use crate::platform::dirfd::{self, Dir, Kind, Meta};
use crate::targets::{TargetError, check_targets, plain_relative};

/// The journal's file name in the repository root.
pub const JOURNAL: &str = ".fluxmend-journal";

const HEADER: &str = "fluxmend-journal 2";

/// The largest journal recovery reads: a bigger one is not fluxmend's.
const MAX_JOURNAL: u64 = 16 << 20;

/// The largest file whose content recovery reads to prove it (fixes touch YAML of at most
/// 8 MiB): a bigger one is not what the journal recorded.
const MAX_PROVED: u64 = 64 << 20;

/// What a successful [`write`] made, so that it can be undone (a failed commit).
#[derive(Debug, Default)]
pub struct Written {
    /// Directories the write created (relative), parents first.
    pub dirs: Vec<String>,
}

/// A SHA-256 of a file's content: what the journal proves a file by.
type Hash = [u8; 32];

fn digest(bytes: &[u8]) -> Hash {
    let mut h = [0; 32];
    h.copy_from_slice(&Sha256::digest(bytes));
    h
}

fn hex(h: &Hash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Hash> {
    if s.len() != 64 {
        return None;
    }
    let mut h = [0; 32];
    for (i, byte) in h.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(h)
}

/// One line of the journal.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    /// A directory made for new files.
    Dir(String),
    /// A temporary file, created exclusively, holding the content of this hash.
    Temp(String, Hash),
    /// A temporary name that turned out to be taken: not ours.
    Void(String),
    /// Link `new` to the absent `target` (`new` keeps its name until the end: proof that the
    /// target is the file the write made).
    Create {
        target: String,
        new: String,
        after: Hash,
    },
    /// Rename `new` over `target`; `old` holds the target's content before.
    Edit {
        target: String,
        new: String,
        old: String,
        before: Hash,
        after: Hash,
    },
    /// Remove `target`; `old` holds its content.
    Delete {
        target: String,
        old: String,
        before: Hash,
    },
}

impl Op {
    fn line(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).expect("a string is JSON");
        let h = |h: &Hash| q(&hex(h));
        match self {
            Op::Dir(d) => format!("dir {}", q(d)),
            Op::Temp(t, x) => format!("temp {} {}", q(t), h(x)),
            Op::Void(t) => format!("void {}", q(t)),
            Op::Create { target, new, after } => {
                format!("create {} {} {}", q(target), q(new), h(after))
            }
            Op::Edit {
                target,
                new,
                old,
                before,
                after,
            } => format!(
                "edit {} {} {} {} {}",
                q(target),
                q(new),
                q(old),
                h(before),
                h(after)
            ),
            Op::Delete {
                target,
                old,
                before,
            } => format!("delete {} {} {}", q(target), q(old), h(before)),
        }
    }

    /// Read a line back: `None` when it is not one [`Op::line`] writes.
    fn parse(line: &str) -> Option<Op> {
        let (word, rest) = line.split_once(' ')?;
        let args: Vec<String> = serde_json::Deserializer::from_str(rest)
            .into_iter::<String>()
            .collect::<Result<_, _>>()
            .ok()?;
        let hash = |i: usize| unhex(args.get(i)?);
        let s = |i: usize| args.get(i).cloned();
        let (op, count) = match word {
            "dir" => (Op::Dir(s(0)?), 1),
            "temp" => (Op::Temp(s(0)?, hash(1)?), 2),
            "void" => (Op::Void(s(0)?), 1),
            "create" => (
                Op::Create {
                    target: s(0)?,
                    new: s(1)?,
                    after: hash(2)?,
                },
                3,
            ),
            "edit" => (
                Op::Edit {
                    target: s(0)?,
                    new: s(1)?,
                    old: s(2)?,
                    before: hash(3)?,
                    after: hash(4)?,
                },
                5,
            ),
            "delete" => (
                Op::Delete {
                    target: s(0)?,
                    old: s(1)?,
                    before: hash(2)?,
                },
                3,
            ),
            _ => return None,
        };
        (args.len() == count).then_some(op)
    }

    /// The target of a step of the plan.
    fn target(&self) -> Option<&str> {
        match self {
            Op::Create { target, .. } | Op::Edit { target, .. } | Op::Delete { target, .. } => {
                Some(target)
            }
            _ => None,
        }
    }

    /// Every path the line names.
    fn paths(&self) -> Vec<&str> {
        match self {
            Op::Dir(p) | Op::Temp(p, _) | Op::Void(p) => vec![p],
            Op::Create { target, new, .. } => vec![target, new],
            Op::Edit {
                target, new, old, ..
            } => vec![target, new, old],
            Op::Delete { target, old, .. } => vec![target, old],
        }
    }
}

fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

fn base(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// A file's content as far as the journal is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Absent,
    /// A regular file: its hash and identity.
    File(Hash, Option<(u64, u64)>),
    /// Anything else: a link, a directory, a FIFO, a file too large, a path through a link.
    Other,
}

impl State {
    fn holds(&self, h: &Hash) -> bool {
        matches!(self, State::File(x, _) if x == h)
    }
}

/// The repository's directories as the write holds them: opened from the root component by
/// component, never through a link, and kept open.
struct Tree {
    root: PathBuf,
    root_dir: Dir,
    held: HashMap<String, Dir>,
}

impl Tree {
    fn open(root: &Path) -> Result<Tree, EmitError> {
        let root_dir =
            Dir::open_root(root).with_context(|| format!("opening {}", root.display()))?;
        Ok(Tree {
            root: root.to_path_buf(),
            root_dir,
            held: HashMap::new(),
        })
    }

    fn show(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// `rel` (not the root) opened afresh from the root, never through a link; `None` when a
    /// component does not exist.
    fn walk(&self, rel: &str) -> io::Result<Option<Dir>> {
        let mut parts = rel.split('/');
        let mut dir = None;
        for part in parts.by_ref() {
            let from = dir.as_ref().unwrap_or(&self.root_dir);
            match from.open_dir(part) {
                Ok(d) => dir = Some(d),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(dir)
    }

    /// The directory `rel` (`""`: the root), held open from its first use; `None` when it does
    /// not exist.
    fn dir(&mut self, rel: &str) -> io::Result<Option<&Dir>> {
        if rel.is_empty() {
            return Ok(Some(&self.root_dir));
        }
        if !self.held.contains_key(rel) {
            match self.walk(rel)? {
                Some(d) => {
                    self.held.insert(rel.to_string(), d);
                }
                None => return Ok(None),
            }
        }
        Ok(self.held.get(rel))
    }

    /// The directory `rel`, which must exist and be reachable without a link.
    fn existing(&mut self, rel: &str) -> Result<&Dir, EmitError> {
        let shown = self.show(rel);
        match self.dir(rel) {
            Ok(Some(d)) => Ok(d),
            Ok(None) => Err(EmitError::from(TargetError::Unsafe(rel.to_string()))),
            Err(e) if e.kind() == io::ErrorKind::Other => {
                Err(EmitError::from(TargetError::Unsafe(rel.to_string())))
            }
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("opening {shown}"))
                .into()),
        }
    }

    /// Whether `rel` still leads from the root, without a link, to the directory the write
    /// holds (true for one it does not hold).
    fn unmoved(&self, rel: &str) -> bool {
        let Some(held) = self.held.get(rel) else {
            return true;
        };
        match (self.walk(rel), held.id()) {
            (Ok(Some(now)), Ok(id)) => now.id().is_ok_and(|now| now == id),
            _ => false,
        }
    }

    fn stat(&mut self, rel: &str) -> Result<Option<Meta>, EmitError> {
        let shown = self.show(rel);
        let dir = self.existing(parent(rel))?;
        Ok(dir
            .stat(base(rel))
            .with_context(|| format!("reading {shown}"))?)
    }

    /// What `rel` holds now, read without following a link.
    fn state(&mut self, rel: &str) -> Result<State, EmitError> {
        let shown = self.show(rel);
        let dir = match self.dir(parent(rel)) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(State::Absent),
            Err(_) => return Ok(State::Other),
        };
        let meta = match dir.stat(base(rel)) {
            Ok(None) => return Ok(State::Absent),
            Ok(Some(m)) => m,
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("reading {shown}"))
                    .into());
            }
        };
        if meta.kind != Kind::File || meta.len > MAX_PROVED {
            return Ok(State::Other);
        }
        match dirfd::read_at(dir, base(rel), MAX_PROVED) {
            Ok(Some(bytes)) => Ok(State::File(digest(&bytes), meta.id)),
            Ok(None) => Ok(State::Other),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(State::Absent),
            Err(e) if e.kind() == io::ErrorKind::Other => Ok(State::Other),
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("reading {shown}"))
                .into()),
        }
    }

    /// Run `f` on the directory holding `rel` with `rel`'s name; an error names `what` and `rel`.
    fn at(
        &mut self,
        rel: &str,
        what: &str,
        f: impl FnOnce(&Dir, &str) -> io::Result<()>,
    ) -> Result<(), EmitError> {
        let shown = self.show(rel);
        let dir = self.existing(parent(rel))?;
        f(dir, base(rel)).with_context(|| format!("{what} {shown}"))?;
        Ok(())
    }

    fn link(&mut self, from: &str, to: &str) -> Result<(), EmitError> {
        let name = base(from).to_string();
        self.at(to, "creating", |d, to| d.link(&name, to))
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<(), EmitError> {
        let name = base(from).to_string();
        self.at(to, "replacing", |d, to| d.rename(&name, to))
    }

    fn unlink(&mut self, rel: &str) -> Result<(), EmitError> {
        self.at(rel, "removing", |d, name| d.unlink(name))
    }

    /// Flush every directory held and the root.
    fn sync(&self) {
        for d in self.held.values().chain([&self.root_dir]) {
            let _ = d.sync();
        }
    }
}

/// Test hooks, in debug builds only (release builds have neither): `FLUXMEND_TEST_ABORT_AFTER=N`
/// ends the process, as SIGKILL would, after N more steps; `FLUXMEND_TEST_RACE_HOOK=PROGRAM`
/// runs PROGRAM in the root, and waits for it, with `prepared` once the temporaries are written
/// and with `apply TARGET` right before each target is checked and put in place, so that a test
/// can race the write at a chosen moment.
mod hooks {
    use std::path::Path;

    #[cfg(debug_assertions)]
    pub fn abort_after() -> Option<usize> {
        std::env::var("FLUXMEND_TEST_ABORT_AFTER")
            .ok()
            .and_then(|s| s.parse().ok())
    }

    #[cfg(not(debug_assertions))]
    pub fn abort_after() -> Option<usize> {
        None
    }

    #[cfg(debug_assertions)]
    pub fn race(root: &Path, point: &str, target: &str) {
        if let Some(program) = std::env::var_os("FLUXMEND_TEST_RACE_HOOK") {
            let _ = std::process::Command::new(program)
                .args([point, target])
                .current_dir(root)
                .status();
        }
    }

    #[cfg(not(debug_assertions))]
    pub fn race(_root: &Path, _point: &str, _target: &str) {}
}

/// The journal being written.
struct Journal {
    file: File,
    path: PathBuf,
    /// Test hook: stop the process (as a kill would) after this many more steps.
    abort_after: Option<usize>,
}

impl Journal {
    fn create(tree: &Tree) -> Result<Journal, EmitError> {
        let path = tree.root.join(JOURNAL);
        let file = tree.root_dir.create(JOURNAL, 0o600).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                EmitError::Journal(format!(
                    "{} exists: another fluxmend is writing this tree, or one was interrupted; \
                     run `fluxmend fix --write {}` to complete or roll it back",
                    path.display(),
                    tree.root.display()
                ))
            } else {
                anyhow::Error::new(e)
                    .context(format!("creating {}", path.display()))
                    .into()
            }
        })?;
        let mut j = Journal {
            file,
            path,
            abort_after: hooks::abort_after(),
        };
        j.line(HEADER)?;
        Ok(j)
    }

    /// The journal of an interrupted write, to append `abort` to.
    fn reopen(tree: &Tree) -> Result<Journal, EmitError> {
        let path = tree.root.join(JOURNAL);
        let file = tree
            .root_dir
            .append(JOURNAL)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Journal {
            file,
            path,
            abort_after: hooks::abort_after(),
        })
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
        self.line(&op.line())
    }

    /// Count one step; the test hook ends the process here without any clean-up, as SIGKILL
    /// would.
    fn step(&mut self) {
        if let Some(n) = &mut self.abort_after {
            if *n == 0 {
                crate::platform::exit_at_once(86);
            }
            *n -= 1;
        }
    }
}

/// Why a step stopped: a race lost at a target, or an I/O error.
enum Stop {
    Race(String),
    Io(EmitError),
}

impl From<EmitError> for Stop {
    fn from(e: EmitError) -> Stop {
        Stop::Io(e)
    }
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
        match tree.existing(dir)?.create(&name, mode) {
            Ok(mut file) => {
                file.write_all(bytes)
                    .and_then(|()| dirfd::chown_like(&file, owner))
                    .and_then(|()| match like {
                        // Keep the mode exactly, whatever the umask (or chown) took away.
                        Some(m) => dirfd::set_mode(&file, m.mode),
                        None => Ok(()),
                    })
                    .and_then(|()| file.sync_all())
                    .with_context(|| format!("writing {shown}"))?;
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
        tree.at(&rel, "creating", |d, name| d.mkdir(name))?;
        ops.push(op);
        // Owned as its parent is (see `prepare`).
        let shown = tree.show(&rel);
        tree.existing(&rel)?
            .chown_like(owner)
            .with_context(|| format!("creating {shown}"))?;
    }
    Ok(())
}

/// Take one step of the plan (`act`), or only check that it can be taken: the directory on its
/// way is the one held, and its target holds what the journal recorded before (or already what
/// it recorded after: done). Anything else is a race lost at that target.
fn forward(tree: &mut Tree, op: &Op, act: bool) -> Result<(), Stop> {
    let Some(target) = op.target() else {
        return Ok(());
    };
    let race = || Stop::Race(target.to_string());
    if !tree.unmoved(parent(target)) {
        return Err(race());
    }
    let now = tree.state(target)?;
    match op {
        Op::Create { new, after, .. } => match (now, tree.state(new)?) {
            (State::Absent, n) if n.holds(after) => {
                if act {
                    tree.link(new, target)?;
                }
            }
            (State::File(h, id), State::File(_, new_id)) if h == *after && id == new_id => {}
            (State::File(h, _), State::Absent) if h == *after => {}
            _ => return Err(race()),
        },
        Op::Edit {
            new, before, after, ..
        } => match (now, tree.state(new)?) {
            (t, n) if t.holds(before) && n.holds(after) => {
                if act {
                    tree.rename(new, target)?;
                }
            }
            (t, State::Absent) if t.holds(after) => {}
            _ => return Err(race()),
        },
        Op::Delete { before, .. } => match now {
            t if t.holds(before) => {
                if act {
                    tree.unlink(target)?;
                }
            }
            State::Absent => {}
            _ => return Err(race()),
        },
        _ => {}
    }
    if act && !tree.unmoved(parent(target)) {
        return Err(race());
    }
    Ok(())
}

/// Put back one step of the plan: a created file that is still the one the write made (the same
/// file as its temporary) is removed; an edited or deleted file that holds what the write left
/// gets its copy back. A step not taken is left; a target holding anything else is a race lost
/// at it. Works on the directories held, wherever they are now.
fn backward(tree: &mut Tree, op: &Op) -> Result<(), Stop> {
    let Some(target) = op.target() else {
        return Ok(());
    };
    let race = || Stop::Race(target.to_string());
    let now = tree.state(target)?;
    match op {
        Op::Create { new, after, .. } => match (now, tree.state(new)?) {
            (State::File(h, Some(id)), State::File(_, Some(new_id)))
                if h == *after && id == new_id =>
            {
                tree.unlink(target)?;
            }
            (State::Absent, _) => {}
            _ => return Err(race()),
        },
        Op::Edit {
            old, before, after, ..
        } => match (now, tree.state(old)?) {
            (t, o) if t.holds(after) && o.holds(before) => tree.rename(old, target)?,
            (t, _) if t.holds(before) => {}
            _ => return Err(race()),
        },
        Op::Delete { old, before, .. } => match (now, tree.state(old)?) {
            (State::Absent, o) if o.holds(before) => tree.link(old, target)?,
            (t, _) if t.holds(before) => {}
            _ => return Err(race()),
        },
        _ => {}
    }
    Ok(())
}

/// Steps 5: take every step in order, each checked right before it is taken (`hook`: the test
/// hook runs first). A race lost on the way: `abort` is journalled and every step put back.
/// `Ok(None)` when complete; `Ok(Some((target, left)))` when undone because of `target`, with
/// the targets that could not be put back (they hold something else now: left as they are).
fn complete(
    tree: &mut Tree,
    ops: &[Op],
    journal: &mut Journal,
    hook: bool,
) -> Result<Option<(String, Vec<String>)>, EmitError> {
    for op in ops {
        if let (true, Some(target)) = (hook, op.target()) {
            hooks::race(&tree.root, "apply", target);
        }
        match forward(tree, op, true) {
            Ok(()) => journal.step(),
            Err(Stop::Race(path)) => {
                // Without the line, the next run finds the same race and decides the same.
                let _ = journal.line("abort");
                let left = undo_steps(tree, ops)?;
                return Ok(Some((
                    path.clone(),
                    left.into_iter().filter(|p| *p != path).collect(),
                )));
            }
            Err(Stop::Io(e)) => return Err(e),
        }
    }
    Ok(None)
}

/// Put back every step, last first; returns the targets that hold something else now.
fn undo_steps(tree: &mut Tree, ops: &[Op]) -> Result<Vec<String>, EmitError> {
    let mut left = Vec::new();
    for op in ops.iter().rev() {
        match backward(tree, op) {
            Ok(()) => {}
            Err(Stop::Race(path)) => left.push(path),
            Err(Stop::Io(e)) => return Err(e),
        }
    }
    Ok(left)
}

/// Step 6, or the end of a roll-back: remove every temporary that holds what the journal
/// recorded (or nothing: cut before it was written), and after a roll-back (`!done`) every
/// directory the write made, when empty. Returns the temporaries left because they hold
/// something else (not fluxmend's to remove).
fn clean(tree: &mut Tree, ops: &[Op], done: bool) -> Result<Vec<String>, EmitError> {
    let void: HashSet<&str> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Void(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let empty = digest(b"");
    let mut left = Vec::new();
    // A created file's temporary is the file itself under a second name while the write runs:
    // it goes, whatever the file holds by now.
    for op in ops {
        if let Op::Create { target, new, .. } = op
            && let (State::File(_, Some(a)), State::File(_, Some(b))) =
                (tree.state(target)?, tree.state(new)?)
            && a == b
        {
            tree.unlink(new)?;
        }
    }
    for op in ops {
        let Op::Temp(temp, hash) = op else { continue };
        if void.contains(temp.as_str()) {
            continue;
        }
        match tree.state(temp)? {
            State::Absent => {}
            s if s.holds(hash) || s.holds(&empty) => tree.unlink(temp)?,
            _ => left.push(temp.clone()),
        }
    }
    if !done {
        for op in ops.iter().rev() {
            if let Op::Dir(d) = op {
                let name = base(d).to_string();
                if let Ok(Some(up)) = tree.dir(parent(d)) {
                    let _ = up.rmdir(&name);
                }
            }
        }
    }
    Ok(left)
}

/// Flush the directories and remove the journal: the write is over.
fn finish(tree: &Tree) -> Result<(), EmitError> {
    tree.sync();
    tree.root_dir
        .unlink(JOURNAL)
        .with_context(|| format!("removing {}", tree.show(JOURNAL)))?;
    let _ = tree.root_dir.sync();
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

/// What [`recover`] did with an interrupted write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The write had been decided: it was completed.
    Completed,
    /// It had not been decided: its temporaries and new directories were removed.
    RolledBack,
    /// It had been decided, but this target holds neither what it held before the write nor
    /// what the write put there (another program changed it): completing would overwrite that,
    /// so the write was put back, and the target left as it is.
    Undone(String),
}

/// What [`recover`] did, and what it left because it could not prove it was the write's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub outcome: Outcome,
    /// Paths the journal names that hold something else than it recorded: left as they are.
    pub left: Vec<String>,
}

/// Whether `root`'s journal is tracked by git (in the index or in HEAD's tree): then it came
/// with the repository, and is not an interrupted write of fluxmend.
pub fn journal_tracked(root: &Path) -> bool {
    !tracked(root, &[JOURNAL]).is_empty()
}

/// The paths among `rels` (relative to `root`) that git tracks in the repository holding
/// `root`: in its index or in HEAD's tree.
fn tracked<'a>(root: &Path, rels: &[&'a str]) -> Vec<&'a str> {
    let Ok(repo) = git2::Repository::discover(root) else {
        return Vec::new();
    };
    let (Some(top), Ok(here)) = (
        repo.workdir().and_then(|w| w.canonicalize().ok()),
        root.canonicalize(),
    ) else {
        return Vec::new();
    };
    let Ok(prefix) = here.strip_prefix(&top) else {
        return Vec::new();
    };
    let index = repo.index().ok();
    let head = repo.head().ok().and_then(|h| h.peel_to_tree().ok());
    rels.iter()
        .copied()
        .filter(|rel| {
            let p = prefix.join(rel);
            index.as_ref().is_some_and(|i| i.get_path(&p, 0).is_some())
                || head.as_ref().is_some_and(|t| t.get_path(&p).is_ok())
        })
        .collect()
}

/// Whether `rel` names a file fluxmend writes: YAML, or kustomize's `Kustomization`.
fn yaml_name(rel: &str) -> bool {
    let name = base(rel).to_ascii_lowercase();
    name.ends_with(".yaml") || name.ends_with(".yml") || base(rel) == "Kustomization"
}

/// Whether `rel` names a temporary of fluxmend beside `target`.
fn temp_of(rel: &str, target: &str) -> bool {
    let name = base(rel);
    parent(rel) == parent(target)
        && name.starts_with('.')
        && name.contains(".fluxmend-")
        && name.ends_with(".tmp")
}

/// A journal read back and checked: its lines, whether it was decided and aborted.
struct Recorded {
    ops: Vec<Op>,
    committed: bool,
    aborted: bool,
}

/// Read a journal's complete lines and check that they are what [`write`] writes; the reason
/// otherwise.
fn read_journal(complete: &str) -> Result<Recorded, String> {
    let mut lines = complete.lines();
    match lines.next() {
        Some(HEADER) => {}
        Some("fluxmend-journal 1") => {
            return Err(
                "it was written by an older fluxmend (journal version 1), which \
                 records no content hashes to prove what it made"
                    .into(),
            );
        }
        _ => return Err("unknown header".into()),
    }
    let mut recorded = Recorded {
        ops: Vec::new(),
        committed: false,
        aborted: false,
    };
    // Temporaries declared (not void), with their hashes, and those a step uses.
    let mut temps: HashMap<String, Hash> = HashMap::new();
    let mut used: HashSet<String> = HashSet::new();
    let mut targets: HashSet<String> = HashSet::new();
    for line in lines {
        if recorded.aborted {
            return Err(format!("a line after abort: {line}"));
        }
        match line {
            "commit" if !recorded.committed => {
                recorded.committed = true;
                continue;
            }
            "abort" if recorded.committed => {
                recorded.aborted = true;
                continue;
            }
            _ if recorded.committed => return Err(format!("a line after commit: {line}")),
            _ => {}
        }
        let op = Op::parse(line).ok_or_else(|| format!("not a journal line: {line}"))?;
        for p in op.paths() {
            if !plain_relative(p) {
                return Err(format!("it names {p}, which is not a path below the root"));
            }
            if p.split('/').any(|c| c.eq_ignore_ascii_case(".git")) {
                return Err(format!(
                    "it names {p}, inside .git, which fluxmend never writes"
                ));
            }
        }
        match &op {
            Op::Dir(_) => {}
            Op::Temp(t, h) => {
                if !temp_of(t, t) || temps.insert(t.clone(), *h).is_some() {
                    return Err(format!("{t} is not a fluxmend temporary name"));
                }
            }
            Op::Void(t) => {
                if temps.remove(t).is_none() {
                    return Err(format!("{t} is void but was not declared"));
                }
            }
            Op::Create { target, new, after } => {
                check_step(target, &[(new, after)], &temps, &mut used, &mut targets)?
            }
            Op::Edit {
                target,
                new,
                old,
                before,
                after,
            } => check_step(
                target,
                &[(new, after), (old, before)],
                &temps,
                &mut used,
                &mut targets,
            )?,
            Op::Delete {
                target,
                old,
                before,
            } => check_step(target, &[(old, before)], &temps, &mut used, &mut targets)?,
        }
        recorded.ops.push(op);
    }
    if let Some(t) = temps.keys().find(|t| targets.contains(*t)) {
        return Err(format!("{t} is both a temporary and a target"));
    }
    Ok(recorded)
}

/// A step of the plan is one [`write`] journals: a YAML target named once, each temporary
/// declared beside it with the hash the step expects, used by this step only.
fn check_step(
    target: &str,
    temps_used: &[(&String, &Hash)],
    temps: &HashMap<String, Hash>,
    used: &mut HashSet<String>,
    targets: &mut HashSet<String>,
) -> Result<(), String> {
    if !yaml_name(target) {
        return Err(format!("it names {target}, which is not a YAML file"));
    }
    if !targets.insert(target.to_string()) {
        return Err(format!("it names {target} twice"));
    }
    for (temp, hash) in temps_used {
        if temps.get(*temp) != Some(*hash) || !temp_of(temp, target) {
            return Err(format!(
                "{temp} is not a temporary it declared beside {target} with that content"
            ));
        }
        if !used.insert((*temp).clone()) {
            return Err(format!("{temp} is used twice"));
        }
    }
    Ok(())
}

/// Finish a write that was interrupted (the journal exists): complete it when it had reached
/// `commit` and every step can still be taken, roll it back otherwise. `None` when there was
/// nothing to do. Only for a run that writes (`fix --write`, `--commit`): a dry run never acts.
pub fn recover(root: &Path) -> Result<Option<Recovery>, EmitError> {
    let path = root.join(JOURNAL);
    match fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context(format!("reading {}", path.display()))
                .into());
        }
    }
    if journal_tracked(root) {
        return Err(EmitError::TrackedJournal(path.display().to_string()));
    }
    let unusable = |why: &str| {
        EmitError::Journal(format!(
            "{} is not a journal fluxmend can use ({why}); nothing was done: check the files it \
             names and remove it",
            path.display()
        ))
    };
    let mut tree = Tree::open(root)?;
    let bytes = match dirfd::read_at(&tree.root_dir, JOURNAL, MAX_JOURNAL) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(unusable("larger than 16 MiB")),
        Err(_) => return Err(unusable("not a regular file")),
    };
    let text = String::from_utf8(bytes).map_err(|_| unusable("not UTF-8"))?;
    // The last line may be cut short by the crash: only complete lines were acted on.
    let complete_lines = text.rfind('\n').map_or("", |i| &text[..=i]);
    if complete_lines.is_empty() && HEADER.starts_with(text.as_str()) {
        // Killed while writing the header: nothing had been done yet.
        finish(&tree)?;
        return Ok(Some(Recovery {
            outcome: Outcome::RolledBack,
            left: vec![],
        }));
    }
    let recorded = read_journal(complete_lines).map_err(|why| unusable(&why))?;
    let temps: Vec<&str> = recorded
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Temp(t, _) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    if let Some(t) = tracked(root, &temps).first() {
        return Err(unusable(&format!(
            "{t} is tracked by git, so it is not a temporary fluxmend made"
        )));
    }
    let ops = &recorded.ops;
    let (outcome, mut left) = if !recorded.committed {
        (Outcome::RolledBack, Vec::new())
    } else {
        let blocked = if recorded.aborted {
            None
        } else {
            // Complete only when every step can still be taken.
            let mut blocked = None;
            for op in ops {
                match forward(&mut tree, op, false) {
                    Ok(()) => {}
                    Err(Stop::Race(p)) => {
                        blocked = Some(p);
                        break;
                    }
                    Err(Stop::Io(e)) => return Err(e),
                }
            }
            blocked
        };
        let mut journal = Journal::reopen(&tree)?;
        match (recorded.aborted, blocked) {
            (false, None) => match complete(&mut tree, ops, &mut journal, false)? {
                None => (Outcome::Completed, Vec::new()),
                Some((p, left)) => (Outcome::Undone(p), left),
            },
            (aborted, blocked) => {
                if !aborted {
                    let _ = journal.line("abort");
                }
                let left = undo_steps(&mut tree, ops)?;
                match blocked {
                    Some(p) => {
                        let left = left.into_iter().filter(|l| *l != p).collect();
                        (Outcome::Undone(p), left)
                    }
                    None => (Outcome::RolledBack, left),
                }
            }
        }
    };
    left.extend(clean(&mut tree, ops, outcome == Outcome::Completed)?);
    finish(&tree)?;
    Ok(Some(Recovery { outcome, left }))
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
        for text in ["", "fluxmend-jour", "fluxmend-journal 2\ndir \"new-d"] {
            let dir = tempfile::tempdir().unwrap();
            fs::write(dir.path().join(JOURNAL), text).unwrap();
            let outcome = recover(dir.path()).unwrap().unwrap();
            assert_eq!(outcome.outcome, Outcome::RolledBack, "{text:?}");
            assert!(!dir.path().join(JOURNAL).exists(), "{text:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(JOURNAL), "not a journal\n").unwrap();
        assert!(recover(dir.path()).is_err());
    }

    #[test]
    fn journal_lines_read_back() {
        let h = digest(b"x");
        for op in [
            Op::Dir("a b".into()),
            Op::Temp("a/.x.fluxmend-1.tmp".into(), h),
            Op::Void("\"q\"".into()),
            Op::Create {
                target: "t".into(),
                new: "n".into(),
                after: h,
            },
            Op::Edit {
                target: "t".into(),
                new: "n".into(),
                old: "o".into(),
                before: digest(b""),
                after: h,
            },
            Op::Delete {
                target: "t".into(),
                old: "o".into(),
                before: h,
            },
        ] {
            assert_eq!(Op::parse(&op.line()), Some(op.clone()), "{}", op.line());
        }
        assert_eq!(Op::parse("temp \"a\" \"zz\""), None);
        assert_eq!(Op::parse("delete \"t\" \"o\""), None);
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
