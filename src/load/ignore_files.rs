//! The repository's own ignore files (`.gitignore`, `.sourceignore`) applied as the `ignore`
//! crate's walk applies them, from bytes fluxmend read itself: in the work tree through the safe
//! reader (no link followed, regular files only, within the size limit), at a revision from
//! git's objects. The crate would open them itself, following links and reading without a limit:
//! a `.gitignore` linked to `/dev/zero` exhausted memory, a FIFO named `.sourceignore` hung.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustc_hash::FxHashMap as HashMap;

use super::read::{self, ReadError};
use crate::platform::Beneath;

/// The ignore file names Flux reads (source-controller: `.sourceignore`; the `.gitignore` of a
/// checkout, which a Git source's artifact leaves out).
pub const NAMES: [&str; 2] = [".gitignore", ".sourceignore"];

/// One directory's own ignore files.
pub struct DirIgnores {
    pub gitignore: Gitignore,
    pub sourceignore: Gitignore,
}

/// The matcher of one ignore file at `dir`, read as the `ignore` crate reads one from disk: line
/// by line, a leading BOM dropped, up to the first line that is not UTF-8; a line that is not
/// a valid pattern is left out.
pub fn matcher(dir: &Path, bytes: &[u8]) -> Gitignore {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = &bytes[..e.valid_up_to()];
            let whole_lines = valid.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1);
            std::str::from_utf8(&valid[..whole_lines]).unwrap_or_default()
        }
    };
    let mut builder = GitignoreBuilder::new(dir);
    for (i, line) in text.lines().enumerate() {
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// Whether the ignore files of `chain` (root first) ignore `path`: the `ignore` crate's rule —
/// the nearest directory with a match decides, and a `.sourceignore` match (a custom ignore
/// file) wins over a `.gitignore` one.
pub fn ignored(chain: &[Arc<DirIgnores>], path: &Path, is_dir: bool) -> bool {
    let nearest = |pick: fn(&DirIgnores) -> &Gitignore| {
        chain
            .iter()
            .rev()
            .map(|d| pick(d).matched(path, is_dir))
            .find(|m| !m.is_none())
    };
    let decided = nearest(|d| &d.sourceignore).or_else(|| nearest(|d| &d.gitignore));
    matches!(decided, Some(Match::Ignore(_)))
}

/// The ignore files of a work tree, each directory's read once (through the safe reader) when
/// the parallel walk first asks about something below it.
pub struct WorkTree {
    root: PathBuf,
    /// The root held open: every directory's two ignore files are looked for below it.
    beneath: Beneath,
    dirs: RwLock<HashMap<String, Arc<DirIgnores>>>,
    /// Ignore files that could not be read, and why: they ignore nothing.
    problems: Mutex<Vec<(String, String)>>,
}

impl WorkTree {
    pub fn new(root: &Path) -> WorkTree {
        WorkTree {
            root: root.to_path_buf(),
            beneath: Beneath::new(root),
            dirs: RwLock::default(),
            problems: Mutex::default(),
        }
    }

    /// Whether the ignore files of the directories from the root down to `path`'s parent
    /// ignore `path`.
    pub fn ignores(&self, path: &Path, is_dir: bool) -> bool {
        let Some(parent) = path.parent().and_then(|p| p.strip_prefix(&self.root).ok()) else {
            return false;
        };
        let mut chain = vec![self.dir("")];
        let mut rel = String::new();
        for c in parent.components() {
            // (A name that is not UTF-8 is skipped by the walk with what lies below it.)
            let Some(c) = c.as_os_str().to_str() else {
                return false;
            };
            if !rel.is_empty() {
                rel.push('/');
            }
            rel.push_str(c);
            chain.push(self.dir(&rel));
        }
        ignored(&chain, path, is_dir)
    }

    /// The ignore files of the directory `rel` (`""`: the root).
    fn dir(&self, rel: &str) -> Arc<DirIgnores> {
        if let Some(d) = self
            .dirs
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(rel)
        {
            return d.clone();
        }
        let mut problems = Vec::new();
        let mut read = |name: &str| {
            let file = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            match read::read_beneath(&self.beneath, &file) {
                Ok(bytes) => matcher(&self.root.join(rel), &bytes),
                Err(e) if e.is_missing() => Gitignore::empty(),
                Err(e) => {
                    problems.push((file, unread(&e)));
                    Gitignore::empty()
                }
            }
        };
        let built = Arc::new(DirIgnores {
            gitignore: read(NAMES[0]),
            sourceignore: read(NAMES[1]),
        });
        let mut dirs = self
            .dirs
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Another walker thread may have read it meanwhile: the first one counts (its problems
        // are said once).
        if let Some(d) = dirs.get(rel) {
            return d.clone();
        }
        dirs.insert(rel.to_string(), built.clone());
        self.problems
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend(problems);
        built
    }

    /// The ignore files that could not be read, with why (once the walk is over).
    pub fn take_problems(&self) -> Vec<(String, String)> {
        std::mem::take(
            &mut *self
                .problems
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }
}

fn unread(e: &ReadError) -> String {
    format!("skipped: {e}; it ignores nothing")
}
