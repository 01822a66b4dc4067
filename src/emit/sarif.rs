//! `check --format sarif`: SARIF 2.1.0 for code-scanning services (GitHub's upload-sarif and
//! others). Paths are relative to the git work tree's top level when there is one, because
//! those services resolve them against the checkout.

use std::collections::BTreeMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::changes::FileChange;
use crate::diagnostics::{Diagnostic, Severity};
use crate::emit::json;
use crate::rules::Finding;
use crate::rules::suppress::Suppressed;

/// The parts of SARIF 2.1.0 fluxmend writes (names as the standard spells them; the vendored
/// schema in `tests/data` checks them). Written through [`json::to_string`], keys sorted.
#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    column_kind: &'static str,
    tool: Tool,
    invocations: [Invocation<'a>; 1],
    results: Vec<SarifResult<'a>>,
}

#[derive(Serialize)]
struct Tool {
    driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver {
    name: &'static str,
    version: &'static str,
    information_uri: &'static str,
    rules: Vec<ReportingDescriptor>,
}

/// A rule of the catalogue.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReportingDescriptor {
    id: &'static str,
    name: &'static str,
    short_description: Message<'static>,
    full_description: Message<'static>,
    help_uri: String,
    help: Help,
}

#[derive(Serialize)]
struct Help {
    /// The document as text: without the lines that mark the report's texts.
    text: String,
    markdown: &'static str,
}

#[derive(Serialize)]
struct Message<'a> {
    text: std::borrow::Cow<'a, str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation<'a> {
    execution_successful: bool,
    tool_execution_notifications: Vec<Notification<'a>>,
}

/// A diagnostic: about the input, not a rule violation.
#[derive(Serialize)]
struct Notification<'a> {
    level: &'static str,
    message: Message<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    locations: Option<[Location; 1]>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location {
    physical_location: PhysicalLocation,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    #[serde(skip_serializing_if = "Option::is_none")]
    region: Option<Region>,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    start_column: Option<usize>,
}

/// A finding (suppressed or not).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    /// The rule's index in the catalogue; null for a rule outside it.
    rule_index: Option<usize>,
    level: &'static str,
    message: Message<'a>,
    locations: [Location; 1],
    partial_fingerprints: BTreeMap<&'static str, String>,
    properties: Properties,
    #[serde(skip_serializing_if = "Option::is_none")]
    fixes: Option<[SarifFix<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suppressions: Option<[SarifSuppression<'a>; 1]>,
}

#[derive(Serialize)]
struct Properties {
    fixable: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifSuppression<'a> {
    kind: &'static str,
    justification: &'a str,
    location: Location,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifFix<'a> {
    description: Message<'a>,
    artifact_changes: Vec<ArtifactChange<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange<'a> {
    artifact_location: ArtifactLocation,
    replacements: [Replacement<'a>; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement<'a> {
    deleted_region: DeletedRegion,
    inserted_content: Message<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeletedRegion {
    start_line: usize,
    start_column: usize,
    end_line: usize,
    end_column: usize,
}

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

/// A SARIF location: `file` below `prefix`, and its line and column when known.
fn location(prefix: &str, file: &str, position: Option<(usize, usize)>) -> Location {
    Location {
        physical_location: PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: format!("{prefix}{file}"),
            },
            region: position.map(|(start_line, column)| Region {
                start_line,
                start_column: Some(column),
            }),
        },
    }
}

/// A finding's or a suppression's location.
fn placed(prefix: &str, at: &crate::diagnostics::Location) -> Location {
    location(prefix, &at.file, Some((at.line, at.column)))
}

/// A 1-based (line, column in characters) position of a byte offset.
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// One replacement turning `before` into `after`: the region between their common prefix and
/// suffix (on character boundaries), deleted, and what `after` has there, inserted.
fn replacement<'a>(before: &str, after: &'a str) -> Replacement<'a> {
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
    Replacement {
        deleted_region: DeletedRegion {
            start_line,
            start_column,
            end_line,
            end_column,
        },
        inserted_content: Message {
            text: after[prefix..after.len() - suffix].into(),
        },
    }
}

/// A verified fix as SARIF `fixes`: one artifact change per file, each one replacement (a new
/// file: its whole content inserted; a deleted one: its whole content deleted).
fn fixes<'a>(description: &'a str, files: &'a [FileChange], prefix: &str) -> [SarifFix<'a>; 1] {
    let artifact_changes = files
        .iter()
        .map(|f| ArtifactChange {
            artifact_location: ArtifactLocation {
                uri: format!("{prefix}{}", f.path),
            },
            replacements: [replacement(
                f.before.as_deref().unwrap_or(""),
                f.after.as_deref().unwrap_or(""),
            )],
        })
        .collect();
    [SarifFix {
        description: Message {
            text: description.into(),
        },
        artifact_changes,
    }]
}

/// A finding as a result, without fixes or suppressions.
fn result<'a>(
    catalogue: &[Box<dyn crate::rules::Rule>],
    prefix: &str,
    f: &'a Finding,
) -> SarifResult<'a> {
    SarifResult {
        rule_id: f.rule,
        rule_index: catalogue.iter().position(|r| r.meta().id == f.rule),
        level: level(f.severity),
        message: Message {
            text: f.message().into(),
        },
        locations: [placed(prefix, &f.location)],
        partial_fingerprints: BTreeMap::from([("fluxmend/v1", fingerprint(f))]),
        properties: Properties {
            fixable: f.fix().is_some(),
        },
        fixes: None,
        suppressions: None,
    }
}

/// The SARIF log: the rule catalogue, one result per finding, and the diagnostics as tool
/// notifications (they are about the input, not rule violations). `prefix` is prepended to
/// every path (`k8s/` when PATH is `k8s` in the work tree).
///
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
    let rules = catalogue
        .iter()
        .map(|r| {
            let m = r.meta();
            ReportingDescriptor {
                id: m.id,
                name: m.name,
                short_description: Message {
                    text: m.summary.into(),
                },
                full_description: Message {
                    text: m.summary.into(),
                },
                help_uri: help_uri(m.id),
                help: Help {
                    text: m.doc_text(),
                    markdown: m.doc,
                },
            }
        })
        .collect();
    // The fixes' file changes, owned here: results borrow their inserted texts.
    let fix_files: Vec<Option<Vec<FileChange>>> = findings
        .iter()
        .map(|f| f.fix().and_then(|_| fix_of(f)))
        .collect();
    let mut results: Vec<SarifResult> = findings
        .iter()
        .zip(&fix_files)
        .map(|(f, files)| SarifResult {
            fixes: f
                .fix()
                .zip(files.as_deref())
                .map(|(fix, files)| fixes(&fix.description, files, prefix)),
            ..result(&catalogue, prefix, f)
        })
        .collect();
    results.extend(suppressed.iter().map(|s| SarifResult {
        suppressions: Some([SarifSuppression {
            kind: "inSource",
            justification: &s.by.reason,
            location: placed(prefix, &s.by.location),
        }]),
        ..result(&catalogue, prefix, &s.finding)
    }));
    let notifications = diagnostics
        .iter()
        .map(|d| Notification {
            level: level(d.severity),
            message: Message {
                text: d.message.as_str().into(),
            },
            locations: (!d.file().is_empty())
                .then(|| [location(prefix, d.file(), d.place.position())]),
        })
        .collect();
    json::to_string(&Log {
        schema: "https://json.schemastore.org/sarif-2.1.0.json",
        version: "2.1.0",
        runs: [Run {
            column_kind: "unicodeCodePoints",
            tool: Tool {
                driver: Driver {
                    name: "fluxmend",
                    version: env!("CARGO_PKG_VERSION"),
                    information_uri: env!("CARGO_PKG_REPOSITORY"),
                    rules,
                },
            },
            invocations: [Invocation {
                execution_successful: true,
                tool_execution_notifications: notifications,
            }],
            results,
        }],
    })
}
