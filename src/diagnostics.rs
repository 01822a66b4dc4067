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

/// A problem or a skip in the repository, with its place.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    /// Path relative to the repository root (`""` for the repository itself).
    pub file: String,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub message: String,
}

impl Diagnostic {
    pub fn new(severity: Severity, file: &str, message: String) -> Self {
        Diagnostic {
            severity,
            file: file.to_string(),
            line: None,
            column: None,
            message,
        }
    }

    /// Place the diagnostic at a 1-based line and column.
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line);
        self.column = Some(column);
        self
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
