//! Recovery of an interrupted write: the journal read back and proved, the write completed or
//! rolled back, and what could not be proved left alone.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::Path;

use crate::emit::error::EmitError;
use crate::platform::dirfd;
use crate::targets::plain_relative;

use super::journal::{HEADER, JOURNAL, Journal, MAX_JOURNAL};
use super::ops::{Hash, Op, base, parent};
use super::steps::{Stop, clean, complete, finish, forward, undo_steps};
use super::tree::Tree;

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
                check_step(target, &[(new, after)], &temps, &mut used, &mut targets)?;
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
    let (outcome, mut left) = if recorded.committed {
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
    } else {
        (Outcome::RolledBack, Vec::new())
    };
    left.extend(clean(&mut tree, ops, outcome == Outcome::Completed)?);
    finish(&tree)?;
    Ok(Some(Recovery { outcome, left }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
