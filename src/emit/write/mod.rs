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
//!    (with the target's mode, owner and group) and flushed; on Linux it is written unnamed and
//!    given that name only once whole, so that a kill never leaves a temporary half written,
//!    which recovery could not prove its own and would leave behind. Then the plan: which
//!    temporary goes where, with the hashes of each target's content before and after.
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
//!
//! Each file has one job and imports only the files listed after it: `recover` (an interrupted
//! write completed or rolled back), `transaction` (a write, and its undoing), `steps` (the
//! plan's steps taken, put back, cleaned up), `journal` (the journal file written), `tree` (the
//! directories held open, a file's state), `ops` (a journal line, hashes, relative paths),
//! `hooks` (test hooks, debug builds only).

mod hooks;
mod journal;
mod ops;
mod recover;
mod steps;
mod transaction;
mod tree;

pub use journal::JOURNAL;
pub use recover::{Outcome, Recovery, journal_tracked, recover};
pub use transaction::{Written, undo, write};
