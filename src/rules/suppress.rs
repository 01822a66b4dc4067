//! Suppressions with a reason: a finding the team has reviewed and accepts stays visible (JSON
//! `suppressed`, SARIF `suppressions`) but no longer fails the run and is not fixed.
//!
//! Two forms, each naming rules by id or name and requiring a reason:
//! * the annotation `fluxmend.io/ignore: "FM002: runners pinned, reviewed 2026-11"` (entries
//!   `;`-separated, rules comma-separated) on the object a finding names, or on its layer (the
//!   Flux Kustomization) for every finding of that layer;
//! * the comment `# fluxmend: ignore[FM002] reason` on the line a finding points at, or alone on
//!   the line above it.
//!
//! A suppression without a reason or naming no rule is an error diagnostic; one that suppresses
//! nothing among the rules that ran is a warning (like ruff's RUF100), so stale ones do not pile up.

use rustc_hash::FxHashSet as HashSet;

use super::{Finding, Remedy, by_id};
use crate::diagnostics::{Diagnostic, Location, Severity};
use crate::model::{Model, ObjectIdx};

/// The annotation key of the object and layer form.
pub const ANNOTATION: &str = "fluxmend.io/ignore";

/// The comment form's marker (`# fluxmend: ignore[FM002] reason`).
const COMMENT_MARKER: &str = "fluxmend:";

/// Where a suppression is written and which form it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    Annotation,
    Comment,
}

/// One suppression: the rules it names, why, and where it is written.
#[derive(Clone, Debug)]
pub struct Suppression {
    pub form: Form,
    pub rules: Vec<&'static str>,
    pub reason: String,
    pub location: Location,
    /// What it applies to: the annotated object, or the lines a comment covers.
    scope: Scope,
}

#[derive(Clone, Debug)]
enum Scope {
    Object(ObjectIdx),
    Lines { first: usize, last: usize },
}

/// A finding a suppression holds back, with the suppression (its reason included).
#[derive(Clone, Debug)]
pub struct Suppressed {
    pub finding: Finding,
    pub by: Suppression,
}

/// The findings split into those that stand and those suppressed, and the diagnostics about the
/// suppressions themselves (malformed: error; unused: warning).
#[derive(Debug, Default)]
pub struct Outcome {
    pub findings: Vec<Finding>,
    pub suppressed: Vec<Suppressed>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Apply the repository's suppressions to `findings`. `ran` holds the ids of the rules that ran
/// (empty: all): a suppression of a rule that did not run is not reported unused.
pub fn apply(model: &Model, findings: Vec<Finding>, ran: &[String]) -> Outcome {
    let mut diagnostics = Vec::new();
    let mut suppressions = annotations(model, &mut diagnostics);
    suppressions.extend(comments(model, &mut diagnostics));
    let mut used: HashSet<(usize, &'static str)> = HashSet::default();
    let mut outcome = Outcome::default();
    for finding in findings {
        let objects = if suppressions
            .iter()
            .any(|s| matches!(s.scope, Scope::Object(_)))
        {
            objects_of(model, &finding)
        } else {
            Vec::new()
        };
        let hit = suppressions.iter().position(|s| {
            s.rules.contains(&finding.rule)
                && match s.scope {
                    Scope::Object(o) => objects.contains(&o),
                    Scope::Lines { first, last } => {
                        s.location.file == finding.location.file
                            && (first..=last).contains(&finding.location.line)
                    }
                }
        });
        match hit {
            Some(i) => {
                used.insert((i, finding.rule));
                outcome.suppressed.push(Suppressed {
                    finding,
                    by: suppressions[i].clone(),
                });
            }
            None => outcome.findings.push(finding),
        }
    }
    withhold_shared_fixes(&mut outcome);
    for (i, s) in suppressions.iter().enumerate() {
        for rule in &s.rules {
            let ran_rule = ran.is_empty() || ran.iter().any(|r| r.eq_ignore_ascii_case(rule));
            if ran_rule && !used.contains(&(i, *rule)) {
                let target = match s.form {
                    Form::Annotation => "on this object or the layer it annotates",
                    Form::Comment => "on this line or the next",
                };
                diagnostics.push(
                    Diagnostic::new(
                        Severity::Warning,
                        &s.location.file,
                        format!("unused suppression: no {rule} finding {target}; remove it"),
                    )
                    .at(s.location.line, s.location.column),
                );
            }
        }
    }
    outcome.diagnostics = diagnostics;
    outcome
}

/// A fix that several findings share changes what each of them is about: when one of them is
/// suppressed, the fix is withheld from all, and the rest say why.
fn withhold_shared_fixes(outcome: &mut Outcome) {
    for s in &mut outcome.suppressed {
        if s.finding.fix().is_some() {
            s.finding.remedy = Remedy::Withheld(format!("suppressed: {}", s.by.reason));
        }
    }
    for f in &mut outcome.findings {
        let Some(group) = f.fix_group else { continue };
        let Some(held) = outcome
            .suppressed
            .iter()
            .find(|s| s.finding.rule == f.rule && s.finding.fix_group == Some(group))
        else {
            continue;
        };
        f.remedy = Remedy::Withheld(format!(
            "not fixed: its fix would also change {} ({}:{}), whose {} finding is suppressed ({})",
            held.finding.object,
            held.finding.location.file,
            held.finding.location.line,
            held.finding.rule,
            held.by.reason
        ));
    }
}

/// The source objects a finding is about: its object as rendered in its layer, the same key
/// written anywhere, and the layer's own Flux Kustomization.
fn objects_of(model: &Model, finding: &Finding) -> Vec<ObjectIdx> {
    let mut out = Vec::new();
    for layer in model.layers.iter().filter(|l| l.id == finding.layer) {
        out.extend(layer.object);
        out.extend(
            layer
                .inventory()
                .filter(|(_, r)| r.key == finding.object)
                .map(|(_, r)| r.object),
        );
    }
    out.extend(
        model
            .objects
            .indices()
            .filter(|&i| model.object(i).key == finding.object),
    );
    out.sort_unstable();
    out.dedup();
    out
}

/// Every `fluxmend.io/ignore` annotation; malformed entries become error diagnostics.
fn annotations(model: &Model, diagnostics: &mut Vec<Diagnostic>) -> Vec<Suppression> {
    let mut out = Vec::new();
    for (idx, object) in model.objects.indices().zip(model.objects.iter()) {
        let file = model.repo.file(object.file);
        let yaml = &file.yaml;
        let Some(node) = yaml.lookup(object.root, &["metadata", "annotations", ANNOTATION]) else {
            continue;
        };
        let (line, column) = yaml.line_col(yaml.node(node).span.start);
        let error = |message: String| {
            Diagnostic::new(Severity::Error, &file.path, message).at(line, column)
        };
        let Some(value) = yaml.scalar(node) else {
            diagnostics.push(error(format!(
                "{ANNOTATION} must be a string such as \"FM002: why it is accepted\""
            )));
            continue;
        };
        for entry in value.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            match parse_entry(entry) {
                Ok((rules, reason)) => out.push(Suppression {
                    form: Form::Annotation,
                    rules,
                    reason,
                    location: Location {
                        file: file.path.clone(),
                        line,
                        column,
                    },
                    scope: Scope::Object(idx),
                }),
                Err(message) => diagnostics.push(error(format!("{ANNOTATION}: {message}"))),
            }
        }
    }
    out
}

/// `FM002, FM005: reason` → the rule ids and the reason.
fn parse_entry(entry: &str) -> Result<(Vec<&'static str>, String), String> {
    let Some((rules, reason)) = entry.split_once(':') else {
        return Err(format!(
            "{entry:?} gives no reason: write it as \"RULE: why it is accepted\""
        ));
    };
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(format!(
            "{entry:?} gives no reason: write it as \"RULE: why it is accepted\""
        ));
    }
    Ok((rule_ids(rules)?, reason.to_string()))
}

/// A comma-separated list of rule ids or names → the ids.
fn rule_ids(list: &str) -> Result<Vec<&'static str>, String> {
    let mut ids = Vec::new();
    for part in list.split(',').map(str::trim) {
        let Some(rule) = by_id(part) else {
            return Err(format!(
                "no rule {part:?}: give an id such as FM002 or a name; `fluxmend rules` lists them"
            ));
        };
        let id = rule.meta().id;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Every `# fluxmend: ignore[RULES] reason` comment; malformed ones become error diagnostics.
fn comments(model: &Model, diagnostics: &mut Vec<Diagnostic>) -> Vec<Suppression> {
    let mut out = Vec::new();
    for file in &model.repo.files {
        let text = file.yaml.text();
        if !text.contains(COMMENT_MARKER) {
            continue;
        }
        for (index, raw) in text.lines().enumerate() {
            let Some((hash, body)) = directive(raw) else {
                continue;
            };
            let line = index + 1;
            let column = raw[..hash].chars().count() + 1;
            let own_line = raw[..hash].trim().is_empty();
            match parse_comment(body) {
                Ok((rules, reason)) => out.push(Suppression {
                    form: Form::Comment,
                    rules,
                    reason,
                    location: Location {
                        file: file.path.clone(),
                        line,
                        column,
                    },
                    scope: Scope::Lines {
                        first: line,
                        last: if own_line { line + 1 } else { line },
                    },
                }),
                Err(message) => diagnostics
                    .push(Diagnostic::new(Severity::Error, &file.path, message).at(line, column)),
            }
        }
    }
    out
}

/// The byte offset of a `# fluxmend: ignore…` comment in a line and what follows `ignore`.
/// The `#` must start the line or follow a blank, as a YAML comment does.
fn directive(line: &str) -> Option<(usize, &str)> {
    let mut from = 0;
    while let Some(at) = line[from..].find('#').map(|i| from + i) {
        let starts_comment = at == 0 || line[..at].ends_with([' ', '\t']);
        let rest = line[at + 1..].trim_start();
        if starts_comment
            && let Some(body) = rest.strip_prefix(COMMENT_MARKER)
            && let Some(body) = body.trim_start().strip_prefix("ignore")
        {
            return Some((at, body.trim_end_matches('\r')));
        }
        from = at + 1;
    }
    None
}

/// `[FM002, FM005] reason` → the rule ids and the reason.
fn parse_comment(body: &str) -> Result<(Vec<&'static str>, String), String> {
    const SHAPE: &str = "write it as `# fluxmend: ignore[RULE] why it is accepted`";
    let Some((rules, reason)) = body.strip_prefix('[').and_then(|rest| rest.split_once(']')) else {
        return Err(format!("fluxmend: ignore names no rule: {SHAPE}"));
    };
    let reason = reason.trim();
    if reason.is_empty() {
        return Err(format!(
            "fluxmend: ignore[{rules}] gives no reason: {SHAPE}"
        ));
    }
    Ok((
        rule_ids(rules).map_err(|e| format!("fluxmend: ignore: {e}"))?,
        reason.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_need_a_reason_and_known_rules() {
        assert_eq!(
            parse_entry("FM002, flux-instance-in-gated-layer: reviewed").unwrap(),
            (vec!["FM002", "FM001"], "reviewed".to_string())
        );
        assert!(parse_entry("FM002").unwrap_err().contains("no reason"));
        assert!(parse_entry("FM002:  ").unwrap_err().contains("no reason"));
        assert!(
            parse_entry("FM999: x")
                .unwrap_err()
                .contains("no rule \"FM999\"")
        );
    }

    #[test]
    fn comments_are_found_only_as_comments() {
        assert_eq!(
            directive("  - runners/ # fluxmend: ignore[FM002] pinned"),
            Some((13, "[FM002] pinned"))
        );
        assert_eq!(
            directive("#fluxmend: ignore[FM002] x\r"),
            Some((0, "[FM002] x"))
        );
        assert_eq!(directive("url: https://x#fluxmend: ignore[FM002] x"), None);
        assert_eq!(directive("# fluxmend is great"), None);
        assert!(parse_comment("[FM002]").unwrap_err().contains("no reason"));
        assert!(
            parse_comment(" FM002 x")
                .unwrap_err()
                .contains("names no rule")
        );
        assert_eq!(
            parse_comment("[FM002,FM005] both reviewed").unwrap(),
            (vec!["FM002", "FM005"], "both reviewed".to_string())
        );
    }
}
