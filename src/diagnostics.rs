//! Diagnostics: problems in the repository itself (not rule findings), each pointing at a file
//! and, where known, a line and column.

/// How bad a diagnostic or finding is; ordered so `--fail-on` can compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A place in the repository: a file (relative to the root) and a 1-based line and column (in
/// characters), as findings and suppressions point at it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for Location {
    /// `file:line:column`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Where a diagnostic points: the repository itself, a whole file, or a location in a file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Repository,
    File(String),
    At(Location),
}

impl Place {
    /// The file, relative to the repository root (`""` for the repository itself).
    pub fn file(&self) -> &str {
        match self {
            Place::Repository => "",
            Place::File(file) => file,
            Place::At(location) => &location.file,
        }
    }

    /// The file, to rename it (`None` for the repository itself).
    pub fn file_mut(&mut self) -> Option<&mut String> {
        match self {
            Place::Repository => None,
            Place::File(file) => Some(file),
            Place::At(location) => Some(&mut location.file),
        }
        .filter(|file| !file.is_empty())
    }

    /// The 1-based line and column, where known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            Place::At(location) => Some((location.line, location.column)),
            _ => None,
        }
    }
}

/// A problem or a skip in the repository, with its place.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub place: Place,
    pub message: String,
}

impl Diagnostic {
    /// A diagnostic about `file` (`""`: the repository itself).
    pub fn new(severity: Severity, file: &str, message: String) -> Self {
        let place = if file.is_empty() {
            Place::Repository
        } else {
            Place::File(file.to_string())
        };
        Diagnostic {
            severity,
            place,
            message,
        }
    }

    /// Place the diagnostic at a 1-based line and column.
    #[must_use]
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.place = Place::At(Location {
            file: self.place.file().to_string(),
            line,
            column,
        });
        self
    }

    /// The file it is about, relative to the repository root (`""` for the repository itself).
    pub fn file(&self) -> &str {
        self.place.file()
    }
}

/// `diagnostics` without exact repeats, in their first order: a file that several layers,
/// variants or clusters read has each of its problems reported once, not once per reader.
pub fn dedup(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    diagnostics
        .into_iter()
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_reported_once_in_their_first_order() {
        let d = |file: &str, line| Diagnostic::new(Severity::Note, file, "m".into()).at(line, 1);
        let out = dedup(vec![d("b", 1), d("a", 2), d("b", 1), d("a", 3), d("a", 2)]);
        assert_eq!(out, vec![d("b", 1), d("a", 2), d("a", 3)]);
    }
}
