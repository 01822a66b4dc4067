//! `check --format sarif`: SARIF 2.1.0 for code-scanning services (GitHub's upload-sarif and
//! others). Paths are relative to the git work tree's top level when there is one, because
//! those services resolve them against the checkout.

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::changes::FileChange;
use crate::diagnostics::{Diagnostic, Severity};
use crate::rules::Finding;
use crate::rules::suppress::Suppressed;

/// Where each rule's document is published: the `helpUri` a reviewer follows from an alert.
fn help_uri(id: &str) -> String {
    format!(
        "{}/blob/main/rules/{id}.md",
        env!("CARGO_PKG_REPOSITORY").trim_end_matches('/')
    )
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Note => "note",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

/// A fingerprint that survives edits moving the finding to another line: the rule, the layer
/// and the object, hashed. Code-scanning services match alerts across runs by it.
pub fn fingerprint(f: &Finding) -> String {
    let key = format!("{}\0{}\0{}", f.rule, f.layer, f.object);
    let digest = Sha256::digest(key.as_bytes());
    digest.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn location(prefix: &str, file: &str, line: Option<usize>, column: Option<usize>) -> Value {
    let mut physical = json!({"artifactLocation": {"uri": format!("{prefix}{file}")}});
    if let Some(line) = line {
        let mut region = json!({"startLine": line});
        if let Some(column) = column {
            region["startColumn"] = json!(column);
        }
        physical["region"] = region;
    }
    json!({"physicalLocation": physical})
}

/// The SARIF log: the rule catalogue, one result per finding, and the diagnostics as tool
/// notifications (they are about the input, not rule violations). `prefix` is prepended to
/// every path (`k8s/` when PATH is `k8s` in the work tree).
/// A 1-based (line, column in characters) position of a byte offset.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// One replacement turning `before` into `after`: the region between their common prefix and
/// suffix (on character boundaries), deleted, and what `after` has there, inserted.
fn replacement(before: &str, after: &str) -> Value {
    let mut prefix = before
        .bytes()
        .zip(after.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(prefix) || !after.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let room = before.len().min(after.len()) - prefix;
    let mut suffix = before
        .bytes()
        .rev()
        .zip(after.bytes().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    while !before.is_char_boundary(before.len() - suffix)
        || !after.is_char_boundary(after.len() - suffix)
    {
        suffix -= 1;
    }
    let (start_line, start_column) = position(before, prefix);
    let (end_line, end_column) = position(before, before.len() - suffix);
    json!({
        "deletedRegion": {
            "startLine": start_line,
            "startColumn": start_column,
            "endLine": end_line,
            "endColumn": end_column,
        },
        "insertedContent": {"text": &after[prefix..after.len() - suffix]},
    })
}

/// A verified fix as SARIF `fixes`: one artifact change per file, each one replacement (a new
/// file: its whole content inserted; a deleted one: its whole content deleted).
pub fn fixes(description: &str, files: &[FileChange], prefix: &str) -> Value {
    let changes: Vec<Value> = files
        .iter()
        .map(|f| {
            let before = f.before.as_deref().unwrap_or("");
            let after = f.after.as_deref().unwrap_or("");
            json!({
                "artifactLocation": {"uri": format!("{prefix}{}", f.path)},
                "replacements": [replacement(before, after)],
            })
        })
        .collect();
    json!([{"description": {"text": description}, "artifactChanges": changes}])
}

/// Suppressed findings are results too, with an `inSource` suppression and its justification,
/// so that code scanning shows them as dismissed rather than losing them. `fix_of` gives a
/// finding's verified fix as file changes, when it has one.
pub fn check_sarif(
    findings: &[Finding],
    suppressed: &[Suppressed],
    diagnostics: &[Diagnostic],
    prefix: &str,
    fix_of: &dyn Fn(&Finding) -> Option<Vec<FileChange>>,
) -> String {
    let catalogue = crate::rules::all();
    let rules: Vec<Value> = catalogue
        .iter()
        .map(|r| {
            let m = r.meta();
            json!({
                "id": m.id,
                "name": m.name,
                "shortDescription": {"text": m.summary},
                "fullDescription": {"text": m.summary},
                "helpUri": help_uri(m.id),
                "help": {"text": m.doc_text(), "markdown": m.doc},
            })
        })
        .collect();
    let result = |f: &Finding| {
        let index = catalogue.iter().position(|r| r.meta().id == f.rule);
        json!({
                "ruleId": f.rule,
                "ruleIndex": index,
                "level": level(f.severity),
                "message": {"text": f.message},
                "locations": [location(prefix, &f.file, Some(f.line), Some(f.column))],
                "partialFingerprints": {"fluxmend/v1": fingerprint(f)},
                "properties": {"fixable": f.fix.is_some()},
        })
    };
    let mut results: Vec<Value> = findings
        .iter()
        .map(|f| {
            let mut r = result(f);
            if let (Some(fix), Some(files)) = (&f.fix, fix_of(f)) {
                r["fixes"] = fixes(&fix.description, &files, prefix);
            }
            r
        })
        .collect();
    results.extend(suppressed.iter().map(|s| {
        let mut r = result(&s.finding);
        r["suppressions"] = json!([{
            "kind": "inSource",
            "justification": s.by.reason,
            "location": location(prefix, &s.by.file, Some(s.by.line), Some(s.by.column)),
        }]);
        r
    }));
    let notifications: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let mut n = json!({"level": level(d.severity), "message": {"text": d.message}});
            if !d.file.is_empty() {
                n["locations"] = json!([location(prefix, &d.file, d.line, d.column)]);
            }
            n
        })
        .collect();
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "columnKind": "unicodeCodePoints",
            "tool": {"driver": {
                "name": "fluxmend",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": env!("CARGO_PKG_REPOSITORY"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    });
    serde_json::to_string_pretty(&log).expect("JSON of plain data") + "\n"
}
