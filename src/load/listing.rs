//! What a walk of a repository found: the entries Flux would ship and what could not be walked.
//! The work tree's walk and a revision's tree listing both make one; assembling the repository
//! reads it.

/// A path the walk found (relative to the root) and whether Flux's default ignores match it.
pub(super) struct WalkedEntry {
    pub(super) rel: String,
    pub(super) kind: EntryKind,
    pub(super) default_ignored: bool,
}

/// What a walked entry is (a link is never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EntryKind {
    Dir,
    File,
    Symlink,
}

/// What a walk of a repository found, from the root down with Flux's ignore rules: every entry
/// Flux would ship, and what could not be walked (a warning each: path and message).
#[derive(Default)]
pub(super) struct Listing {
    pub(super) entries: Vec<WalkedEntry>,
    pub(super) problems: Vec<(String, String)>,
}

/// Why an entry whose name is not UTF-8 is skipped.
pub(super) fn not_utf8(is_dir: bool) -> String {
    let what = if is_dir {
        "skipped with everything below it: directory name is not UTF-8"
    } else {
        "skipped: file name is not UTF-8"
    };
    format!(
        "{what} (its invalid bytes are shown as U+FFFD); fluxmend can neither read nor write such \
         a path: rename it to have it analysed"
    )
}
