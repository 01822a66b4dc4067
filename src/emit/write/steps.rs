//! The plan's steps taken, put back and cleaned up: what a write and a recovery both do once
//! the journal is decided.

use std::collections::HashSet;

use anyhow::Context as _;

use crate::emit::error::EmitError;

use super::hooks;
use super::journal::{JOURNAL, Journal};
use super::ops::{Op, base, digest, parent};
use super::tree::{State, Tree};

/// Why a step stopped: a race lost at a target, or an I/O error.
pub(super) enum Stop {
    Race(String),
    Io(EmitError),
}

impl From<EmitError> for Stop {
    fn from(e: EmitError) -> Stop {
        Stop::Io(e)
    }
}

/// Take one step of the plan (`act`), or only check that it can be taken: the directory on its
/// way is the one held, and its target holds what the journal recorded before (or already what
/// it recorded after: done). Anything else is a race lost at that target.
pub(super) fn forward(tree: &mut Tree, op: &Op, act: bool) -> Result<(), Stop> {
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
pub(super) fn backward(tree: &mut Tree, op: &Op) -> Result<(), Stop> {
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
pub(super) fn complete(
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
pub(super) fn undo_steps(tree: &mut Tree, ops: &[Op]) -> Result<Vec<String>, EmitError> {
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
pub(super) fn clean(tree: &mut Tree, ops: &[Op], done: bool) -> Result<Vec<String>, EmitError> {
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
pub(super) fn finish(tree: &Tree) -> Result<(), EmitError> {
    tree.sync();
    tree.root_dir
        .unlink(JOURNAL)
        .with_context(|| format!("removing {}", tree.show(JOURNAL)))?;
    let _ = tree.root_dir.sync();
    Ok(())
}
