//! The repository's directories as a write holds them, and a file's content as the journal
//! sees it.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::emit::error::EmitError;
use crate::platform::dirfd::{self, Dir, Kind, Meta};
use crate::targets::TargetError;

use super::ops::{Hash, base, digest, parent};

/// The largest file whose content recovery reads to prove it (fixes touch YAML of at most
/// 8 MiB): a bigger one is not what the journal recorded.
pub(super) const MAX_PROVED: u64 = 64 << 20;

/// A file's content as far as the journal is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Absent,
    /// A regular file: its hash and identity.
    File(Hash, Option<(u64, u64)>),
    /// Anything else: a link, a directory, a FIFO, a file too large, a path through a link.
    Other,
}

impl State {
    pub(super) fn holds(&self, h: &Hash) -> bool {
        matches!(self, State::File(x, _) if x == h)
    }
}

/// The repository's directories as the write holds them: opened from the root component by
/// component, never through a link, and kept open.
pub(super) struct Tree {
    pub(super) root: PathBuf,
    pub(super) root_dir: Dir,
    held: HashMap<String, Dir>,
}

impl Tree {
    pub(super) fn open(root: &Path) -> Result<Tree, EmitError> {
        let root_dir =
            Dir::open_root(root).with_context(|| format!("opening {}", root.display()))?;
        Ok(Tree {
            root: root.to_path_buf(),
            root_dir,
            held: HashMap::new(),
        })
    }

    pub(super) fn show(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// `rel` (not the root) opened afresh from the root, never through a link; `None` when a
    /// component does not exist.
    pub(super) fn walk(&self, rel: &str) -> io::Result<Option<Dir>> {
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
    pub(super) fn dir(&mut self, rel: &str) -> io::Result<Option<&Dir>> {
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
    pub(super) fn existing(&mut self, rel: &str) -> Result<&Dir, EmitError> {
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
    pub(super) fn unmoved(&self, rel: &str) -> bool {
        let Some(held) = self.held.get(rel) else {
            return true;
        };
        match (self.walk(rel), held.id()) {
            (Ok(Some(now)), Ok(id)) => now.id().is_ok_and(|now| now == id),
            _ => false,
        }
    }

    pub(super) fn stat(&mut self, rel: &str) -> Result<Option<Meta>, EmitError> {
        let shown = self.show(rel);
        let dir = self.existing(parent(rel))?;
        Ok(dir
            .stat(base(rel))
            .with_context(|| format!("reading {shown}"))?)
    }

    /// What `rel` holds now, read without following a link.
    pub(super) fn state(&mut self, rel: &str) -> Result<State, EmitError> {
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
    pub(super) fn at(
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

    pub(super) fn link(&mut self, from: &str, to: &str) -> Result<(), EmitError> {
        let name = base(from).to_string();
        self.at(to, "creating", |d, to| d.link(&name, to))
    }

    pub(super) fn rename(&mut self, from: &str, to: &str) -> Result<(), EmitError> {
        let name = base(from).to_string();
        self.at(to, "replacing", |d, to| d.rename(&name, to))
    }

    pub(super) fn unlink(&mut self, rel: &str) -> Result<(), EmitError> {
        self.at(rel, "removing", crate::platform::dirfd::Dir::unlink)
    }

    /// Flush every directory held and the root.
    pub(super) fn sync(&self) {
        for d in self.held.values().chain([&self.root_dir]) {
            let _ = d.sync();
        }
    }
}
