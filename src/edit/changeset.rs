//! A fix as data: byte-range edits per file (`Changeset`), checked disjoint, applied to a text.

use std::collections::BTreeMap;

/// Replace `[start, end)` of a file's text (BOM excluded) with `text`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// What happens to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    Edit(Vec<TextEdit>),
    Create(String),
    Delete,
}

/// The changes of one fix, by repository-relative path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changeset {
    pub files: BTreeMap<String, FileOp>,
}

/// A changeset could not be planned or merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{path}: edits overlap")]
    Overlap { path: String },
    #[error("{path}: changed in two incompatible ways")]
    CreatedTwice { path: String },
    #[error("{0}")]
    Unsupported(String),
}

impl Changeset {
    pub fn edit(&mut self, path: &str, edit: TextEdit) {
        match self
            .files
            .entry(path.to_string())
            .or_insert_with(|| FileOp::Edit(Vec::new()))
        {
            FileOp::Edit(edits) => edits.push(edit),
            FileOp::Create(_) | FileOp::Delete => {
                unreachable!("only existing files are edited by span")
            }
        }
    }

    pub fn create(&mut self, path: &str, contents: String) {
        self.files
            .insert(path.to_string(), FileOp::Create(contents));
    }

    /// Merge another changeset; conflicting edits are refused, leaving `self` unchanged. Checked
    /// before anything changes, copying only the files both touch: a plan merges every fix into
    /// one changeset, and copying all of it per fix was quadratic in the fixes.
    pub fn merge(&mut self, other: &Changeset) -> Result<(), EditError> {
        let mut edited = Vec::new();
        for (path, op) in &other.files {
            match (self.files.get(path), op) {
                (None, _) => {}
                (Some(FileOp::Edit(mine)), FileOp::Edit(theirs)) => {
                    let mut all = mine.clone();
                    for e in theirs {
                        if !all.contains(e) {
                            all.push(e.clone());
                        }
                    }
                    check_disjoint(path, &mut all)?;
                    edited.push((path, all));
                }
                (Some(mine), theirs) if mine == theirs => {}
                _ => return Err(EditError::CreatedTwice { path: path.clone() }),
            }
        }
        for (path, op) in &other.files {
            if !self.files.contains_key(path) {
                self.files.insert(path.clone(), op.clone());
            }
        }
        for (path, all) in edited {
            self.files.insert(path.clone(), FileOp::Edit(all));
        }
        Ok(())
    }

    pub fn delete(&mut self, path: &str) {
        self.files.insert(path.to_string(), FileOp::Delete);
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn check_disjoint(path: &str, edits: &mut [TextEdit]) -> Result<(), EditError> {
    edits.sort();
    for pair in edits.windows(2) {
        if pair[1].start < pair[0].end {
            return Err(EditError::Overlap {
                path: path.to_string(),
            });
        }
    }
    Ok(())
}

/// Apply edits to a file's text (BOM excluded); edits must not overlap.
pub fn apply(text: &str, edits: &[TextEdit]) -> Result<String, EditError> {
    let mut sorted = edits.to_vec();
    check_disjoint("", &mut sorted)?;
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in &sorted {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}
