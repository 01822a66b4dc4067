//! One line of the journal (`Op`), the hashes it proves files by, and the relative paths it
//! names.

use sha2::{Digest as _, Sha256};

/// A SHA-256 of a file's content: what the journal proves a file by.
pub(super) type Hash = [u8; 32];

pub(super) fn digest(bytes: &[u8]) -> Hash {
    let mut h = [0; 32];
    h.copy_from_slice(&Sha256::digest(bytes));
    h
}

pub(super) fn hex(h: &Hash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(s: &str) -> Option<Hash> {
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
pub(super) enum Op {
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
    pub(super) fn line(&self) -> String {
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
    pub(super) fn parse(line: &str) -> Option<Op> {
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
    pub(super) fn target(&self) -> Option<&str> {
        match self {
            Op::Create { target, .. } | Op::Edit { target, .. } | Op::Delete { target, .. } => {
                Some(target)
            }
            _ => None,
        }
    }

    /// Every path the line names.
    pub(super) fn paths(&self) -> Vec<&str> {
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

pub(super) fn parent(rel: &str) -> &str {
    rel.rfind('/').map_or("", |i| &rel[..i])
}

pub(super) fn base(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

pub(super) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn journal_lines_read_back() {
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
}
