//! A revision's tree listed as a checkout of it would hold it: git's own rules for names (an
//! entry git would refuse to check out is skipped and reported), its depth limit, and the ignore
//! rules a checkout would have (its `.gitignore` and `.sourceignore` blobs, Flux's defaults, the
//! configuration's `exclude`).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use ignore::gitignore::Gitignore;

use super::ignore_files::{self, DirIgnores, ignored};
use super::ignores::Ignores;
use super::listing::{EntryKind, Listing, WalkedEntry, not_utf8};
use super::objects::{Unread, incomplete, read_blob};

/// Why git refuses to check out an entry of this name (`verify_path`, with the NTFS and HFS
/// protections git applies on the platforms that need them: they cost nothing elsewhere);
/// `None` when it is an ordinary name.
pub(super) fn refused_name(name: &[u8]) -> Option<&'static str> {
    if name.is_empty() {
        return Some("an empty name");
    }
    if name.contains(&b'/') || name.contains(&0) {
        return Some("a name holding `/` or NUL (a path, not a name)");
    }
    if name == b"." || name == b".." {
        return Some("`.` or `..`");
    }
    if is_ntfs_dotgit(name) || is_hfs_dotgit(name) {
        return Some(
            "a name git reserves for its own directory (`.git`, in any case or spelling a file system takes for it)",
        );
    }
    None
}

/// git's `is_ntfs_dotgit`: `.git` or its short name `git~1`, in any case, followed only by
/// spaces and dots (which NTFS drops) or an alternate data stream (`:`).
fn is_ntfs_dotgit(name: &[u8]) -> bool {
    let lower = name.to_ascii_lowercase();
    let rest = if let Some(rest) = lower.strip_prefix(b".git") {
        rest
    } else if let Some(rest) = lower.strip_prefix(b"git~1") {
        rest
    } else {
        return false;
    };
    let end = rest.iter().position(|&c| c == b':').unwrap_or(rest.len());
    rest[..end].iter().all(|&c| c == b' ' || c == b'.')
}

/// git's `is_hfs_dotgit`: `.git` in any case once the code points HFS+ ignores are removed.
fn is_hfs_dotgit(name: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(name) else {
        return false;
    };
    let ignorable =
        |c: char| matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff);
    let kept: String = text.chars().filter(|&c| !ignorable(c)).collect();
    kept.eq_ignore_ascii_case(".git")
}

/// How deep a tree may nest: git's own limit (`core.maxTreeDepth`, 4096 since git 2.45), past
/// which it refuses to read a tree. A crafted commit can nest trees without end (a checkout
/// cannot: paths have a length limit); 20,000 levels overflowed the stack.
const MAX_TREE_DEPTH: usize = 4096;

/// List the tree `id` as the walk of its checkout at `root` would (the work tree's walk): the
/// ignore files of each directory apply to what lies below it, the nearest match wins, a
/// `.sourceignore` match before a `.gitignore` one, and an ignored directory is not entered.
/// Every regular file seen goes into `blobs`.
pub(super) fn list(
    git: &git2::Repository,
    id: git2::Oid,
    root: &Path,
    ignores: &Ignores,
    blobs: &mut BTreeMap<String, git2::Oid>,
) -> Result<Listing, String> {
    let mut listing = Listing::default();
    listing.entries.push(WalkedEntry {
        rel: String::new(),
        kind: EntryKind::Dir,
        default_ignored: false,
    });
    // (directory relative to the root, its tree, the ignore files from the root down to it;
    // its depth is the chain's length)
    let mut pending: Vec<(String, git2::Oid, Vec<Arc<DirIgnores>>)> =
        vec![(String::new(), id, Vec::new())];
    while let Some((dir, id, mut chain)) = pending.pop() {
        if chain.len() >= MAX_TREE_DEPTH {
            listing.problems.push((
                dir,
                format!(
                    "skipped with everything below it: deeper than {MAX_TREE_DEPTH} directories, \
                     which git refuses (core.maxTreeDepth), so no checkout has it"
                ),
            ));
            continue;
        }
        let tree = git
            .find_tree(id)
            .map_err(|e| incomplete(&format!("{dir}/ ({})", e.message()), 1))?;
        let dir_path = if dir.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&dir)
        };
        let own = |name: &str| {
            let entry = tree.get_name(name)?;
            (entry.kind() == Some(git2::ObjectType::Blob) && entry.filemode() != 0o120_000)
                .then(|| entry.id())
        };
        let ignore_file = |name: &str| {
            ignore_file(git, &dir_path, own(name)).map_err(|why| {
                let path = if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                };
                incomplete(&format!("{path} ({why})"), 1)
            })
        };
        chain.push(Arc::new(DirIgnores {
            gitignore: ignore_file(ignore_files::NAMES[0])?,
            sourceignore: ignore_file(ignore_files::NAMES[1])?,
        }));
        for entry in &tree {
            let name = entry.name_bytes();
            let kind = match (entry.kind(), entry.filemode()) {
                (Some(git2::ObjectType::Tree), _) => EntryKind::Dir,
                (Some(git2::ObjectType::Blob), 0o120_000) => EntryKind::Symlink,
                (Some(git2::ObjectType::Blob), _) => EntryKind::File,
                // A submodule: its commit is not in this repository.
                _ => continue,
            };
            let is_dir = kind == EntryKind::Dir;
            let shown = String::from_utf8_lossy(name);
            let rel_of = |name: &str| {
                if dir.is_empty() {
                    name.to_string()
                } else {
                    format!("{dir}/{name}")
                }
            };
            if let Some(why) = refused_name(name) {
                listing.problems.push((
                    rel_of(&shown.escape_debug().to_string()),
                    format!(
                        "skipped{}: git refuses a tree entry named {:?} ({why}), so no checkout has it",
                        if is_dir { " with everything below it" } else { "" },
                        shown
                    ),
                ));
                continue;
            }
            let Ok(name) = std::str::from_utf8(name) else {
                listing.problems.push((rel_of(&shown), not_utf8(is_dir)));
                continue;
            };
            let rel = rel_of(name);
            let path = root.join(&rel);
            if kind == EntryKind::File {
                blobs.insert(rel.clone(), entry.id());
            }
            if ignores.leaves_out(&path, is_dir) || ignored(&chain, &path, is_dir) {
                continue;
            }
            listing.entries.push(WalkedEntry {
                default_ignored: ignores.default_ignored(&path, is_dir),
                rel: rel.clone(),
                kind,
            });
            if is_dir {
                pending.push((rel, entry.id(), chain.clone()));
            }
        }
    }
    Ok(listing)
}

/// The matcher of one ignore file at `dir` (see [`ignore_files::matcher`]). A blob over the
/// size limit ignores nothing; one the object store lacks is an error.
fn ignore_file(
    git: &git2::Repository,
    dir: &Path,
    blob: Option<git2::Oid>,
) -> Result<Gitignore, String> {
    match blob.map(|id| read_blob(git, id)) {
        None | Some(Err(Unread::Skipped(_))) => Ok(Gitignore::empty()),
        Some(Err(Unread::Missing(why))) => Err(why),
        Some(Ok(bytes)) => Ok(ignore_files::matcher(dir, &bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_refuses_the_names_it_reserves() {
        for name in [
            "",
            ".",
            "..",
            ".git",
            ".GIT",
            ".Git",
            ".git.",
            ".git ",
            ".git . ",
            ".git:x",
            "git~1",
            "GIT~1",
            "a/b",
            "../x",
            "/abs",
            ".g\u{200c}it",
            "\u{feff}.GIT",
        ] {
            assert!(refused_name(name.as_bytes()).is_some(), "{name:?}");
        }
        for name in [
            ".gitignore",
            ".github",
            "git",
            ".git-crypt",
            "x.git",
            "git~2",
            "...",
            ".sourceignore",
        ] {
            assert_eq!(refused_name(name.as_bytes()), None, "{name:?}");
        }
    }
}
