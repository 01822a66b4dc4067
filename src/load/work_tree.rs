//! A repository as its work tree holds it: walked the way Flux packages it (Flux's ignore rules
//! and the repository's own, no link followed, in parallel), its files read through the safe
//! reader.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::WalkBuilder;

use super::assemble::Contents;
use super::ignore_files;
use super::ignores::Ignores;
use super::listing::{EntryKind, Listing, WalkedEntry, not_utf8};
use super::read::{self, decode_text};
use super::repo::{Origin, Repo};
use crate::platform::Beneath;

/// The repository root could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {path}: {source}")]
    Root {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
}

impl Repo {
    /// Walk and parse the repository at `root`.
    pub fn load(root: &Path) -> Result<Repo, LoadError> {
        Repo::load_excluding(root, &[])
    }

    /// [`Repo::load`], leaving out the files and directories that `exclude` (gitignore patterns
    /// relative to `root`, the configuration's `exclude`) matches: they are not loaded at all.
    pub fn load_excluding(root: &Path, exclude: &[String]) -> Result<Repo, LoadError> {
        let meta = std::fs::metadata(root).map_err(|source| LoadError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(LoadError::NotADirectory {
                path: root.to_path_buf(),
            });
        }
        let root = root.canonicalize().map_err(|source| LoadError::Root {
            path: root.to_path_buf(),
            source,
        })?;
        let listing = walk(&root, &Arc::new(Ignores::new(&root, exclude)));
        Ok(Repo::assemble(
            root.clone(),
            listing,
            &WorkTree {
                root: &root,
                beneath: Beneath::new(&root),
            },
            Origin::WorkTree,
        ))
    }
}

/// The files of a work tree.
struct WorkTree<'a> {
    root: &'a Path,
    /// The root held open: each file is opened below it.
    beneath: Beneath,
}

impl Contents for WorkTree<'_> {
    fn read(&self, rel: &str) -> Result<String, String> {
        decode_text(read::read_beneath(&self.beneath, rel).map_err(|e| e.to_string())?)
    }

    fn is_file(&self, rel: &str) -> bool {
        self.root.join(rel).is_file()
    }
}

/// What the walk met.
enum Walked {
    Entry(WalkedEntry),
    /// An entry whose path relative to the root is not UTF-8 (shown lossily).
    NotUtf8 {
        rel: String,
        is_dir: bool,
    },
    /// The walk could not read something.
    Error(String),
}

/// Walk the work tree at `root` (canonical) with Flux's ignore rules.
fn walk(root: &Path, ignores: &Arc<Ignores>) -> Listing {
    // Only what Flux reads: `.gitignore` and `.sourceignore` files from the root down, with
    // or without a `.git` directory. Not `.ignore` files, not ignore files above the root,
    // not the user's global excludes nor `.git/info/exclude`: none of them reach Flux.
    let own = Arc::new(ignore_files::WorkTree::new(root));
    let walker = WalkBuilder::new(root)
        .hidden(false)
        .follow_links(false)
        .parents(false)
        .ignore(false)
        // The repository's ignore files are read by fluxmend (see `ignore_files`), not by the
        // walker, which would follow links and read without a limit.
        .git_ignore(false)
        .git_global(false)
        .git_exclude(false)
        .require_git(false)
        .filter_entry({
            let ignores = ignores.clone();
            let own = own.clone();
            move |e| {
                let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                !ignores.leaves_out(e.path(), is_dir) && !own.ignores(e.path(), is_dir)
            }
        })
        .build_parallel();
    // Walk in parallel (a fleet has 100,000 files to stat), then order by path. Whether
    // Flux's default ignores match is decided here too, in parallel; whether they apply is
    // known only once every `.sourceignore` has been seen.
    let found = std::sync::Mutex::<Vec<Walked>>::default();
    walker.run(|| {
        let found = &found;
        let ignores = &ignores;
        Box::new(move |entry| {
            let mut state = ignore::WalkState::Continue;
            let item = match entry {
                Err(err) => Some(Walked::Error(format!("skipped while walking: {err}"))),
                Ok(e) => match (e.path().strip_prefix(root), e.file_type()) {
                    (Ok(rel), Some(kind)) if rel.to_str().is_none() => {
                        // Its path cannot be written in YAML nor compared with one: say
                        // which entry it is, and skip what lies below it.
                        if kind.is_dir() {
                            state = ignore::WalkState::Skip;
                        }
                        Some(Walked::NotUtf8 {
                            rel: rel_string(rel),
                            is_dir: kind.is_dir(),
                        })
                    }
                    (Ok(rel), Some(kind)) => Some(Walked::Entry(WalkedEntry {
                        rel: rel_string(rel),
                        default_ignored: ignores.default_ignored(e.path(), kind.is_dir()),
                        kind: if kind.is_symlink() {
                            EntryKind::Symlink
                        } else if kind.is_dir() {
                            EntryKind::Dir
                        } else {
                            EntryKind::File
                        },
                    })),
                    _ => None,
                },
            };
            if let Some(item) = item {
                found.lock().expect("no walker thread panics").push(item);
            }
            state
        })
    });
    let mut listing = Listing::default();
    listing.problems.extend(own.take_problems());
    for item in found.into_inner().expect("no walker thread panics") {
        match item {
            Walked::Entry(entry) => listing.entries.push(entry),
            Walked::Error(message) => listing.problems.push((String::new(), message)),
            Walked::NotUtf8 { rel, is_dir } => {
                listing.problems.push((rel, not_utf8(is_dir)));
            }
        }
    }
    listing
}

fn rel_string(rel: &Path) -> String {
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::load::write_test_file as write;

    #[test]
    fn flux_default_ignores_apply_until_a_sourceignore_exists() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), ".github/workflows/ci.yaml", "on: push\n");
        write(
            tmp.path(),
            "apps/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        );
        let paths = |repo: &Repo| {
            repo.files
                .iter()
                .map(|f| f.path.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(paths(&Repo::load(tmp.path()).unwrap()), ["apps/cm.yaml"]);
        // source-controller keeps only the VCS defaults once any .sourceignore exists.
        write(tmp.path(), "apps/.sourceignore", "*.txt\n");
        assert_eq!(
            paths(&Repo::load(tmp.path()).unwrap()),
            [".github/workflows/ci.yaml", "apps/cm.yaml"]
        );
    }
}
