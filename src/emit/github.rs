//! `check --format github`: GitHub Actions workflow commands, which the runner turns into
//! annotations on the pull request's changed lines. Paths are relative to the work tree's top
//! level (the checkout), as the runner expects.

use std::fmt::Write as _;

use crate::diagnostics::{Diagnostic, Severity};
use crate::rules::Finding;

/// GitHub's command names for the three levels.
fn command(s: Severity) -> &'static str {
    match s {
        Severity::Note => "notice",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// Escape a message as the runner decodes it (`%`, CR, LF), after every other control,
/// bidirectional or line-separator character is written visibly (the log and the pull request
/// show the decoded text).
fn data(text: &str) -> String {
    super::escape::terminal_lines(text)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value: also `:` and `,`, which end a property.
fn property(text: &str) -> String {
    data(text).replace(':', "%3A").replace(',', "%2C")
}

/// One line per finding and per diagnostic at warning and above (notes are only listed by the
/// other formats: an annotation for every skipped file would bury the findings).
pub fn check_github(findings: &[Finding], diagnostics: &[Diagnostic], prefix: &str) -> String {
    let mut out = String::new();
    for f in findings {
        let fixable = if f.fix().is_some() {
            " (fixable: `fluxmend fix`)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "::{} file={},line={},col={},title={}::{}{}",
            command(f.severity),
            property(&format!("{prefix}{}", f.location.file)),
            f.location.line,
            f.location.column,
            property(&format!("fluxmend {}", f.rule)),
            data(&f.message()),
            data(fixable)
        );
    }
    for d in diagnostics
        .iter()
        .filter(|d| d.severity >= Severity::Warning)
    {
        let mut place = String::new();
        if d.file().is_empty() {
            place.push(' ');
        } else {
            let _ = write!(
                place,
                " file={}",
                property(&format!("{prefix}{}", d.file()))
            );
            if let Some((line, _)) = d.place.position() {
                let _ = write!(place, ",line={line}");
            }
            if let Some((_, column)) = d.place.position() {
                let _ = write!(place, ",col={column}");
            }
            place.push(',');
        }
        let _ = writeln!(
            out,
            "::{}{}title=fluxmend::{}",
            command(d.severity),
            place,
            data(&d.message)
        );
    }
    out
}
