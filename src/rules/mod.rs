//! Rules: each reads the model and returns findings; a finding may carry a fix, which is data
//! (file edits), never I/O. One file per rule; its document lives in `rules/<ID>.md`.

pub mod disposable;
mod finding;
mod fm001;
mod fm002;
mod fm003;
mod fm004;
mod fm005;
mod fm006;
mod fm007;
mod instances;
mod layer_split;
pub mod suppress;

use rayon::prelude::*;

use crate::model::Model;

pub use finding::{Draft, Dropped, Finding, Fix, Gate, GateFailure, Normalise, Phase, Remedy};

/// A rule's catalogue entry; `doc` is the user documentation shown by `fluxmend explain`.
#[derive(Debug)]
pub struct RuleMeta {
    pub id: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    pub doc: &'static str,
}

impl RuleMeta {
    /// The document as a person reads it in a terminal: without the `<!-- report: KEY -->`
    /// lines that mark the texts the report takes from it ([`report_text`]).
    pub fn doc_text(&self) -> String {
        self.doc
            .lines()
            .filter(|line| !line.trim_start().starts_with("<!-- report: "))
            .map(|line| format!("{line}\n"))
            .collect()
    }
}

/// A rule: pure function of the model.
/// `Sync`: the rules run side by side on one model.
pub trait Rule: Sync {
    fn meta(&self) -> &'static RuleMeta;
    fn check(&self, model: &Model) -> Vec<Draft>;
}

/// Which fix a rule offers where more than one is right and only the user can choose
/// (`fix --strategy`); each rule's document says what the choices do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strategy {
    /// Keep what the cluster does today (FM005: `wait: true` stays, the ignored list goes).
    #[default]
    Wait,
    /// Make the file's stated intent the behaviour (FM005: `wait: false`, the list becomes
    /// the gate).
    HealthChecks,
}

/// Every rule fluxmend knows, in id order.
pub fn all() -> Vec<Box<dyn Rule>> {
    all_with(Strategy::default())
}

/// Every rule, offering the fixes `strategy` chooses.
pub fn all_with(strategy: Strategy) -> Vec<Box<dyn Rule>> {
    vec![
        Box::new(fm001::FluxInstanceInGatedLayer),
        Box::new(fm002::DisposableWorkloadInGatedLayer),
        Box::new(fm003::MultiIdentityVerify),
        Box::new(fm004::PatchMatchesNothing),
        Box::new(fm005::HealthChecksIgnored { strategy }),
        Box::new(fm006::RootSourceTrustLoop),
        Box::new(fm007::OverlappingInstancePatches),
    ]
}

/// The rule with this id (`FM001`) or name (`flux-instance-in-gated-layer`), case-insensitive.
pub fn by_id(id: &str) -> Option<Box<dyn Rule>> {
    all().into_iter().find(|r| {
        let meta = r.meta();
        meta.id.eq_ignore_ascii_case(id) || meta.name.eq_ignore_ascii_case(id)
    })
}

/// A `--rule` value that names no rule: running nothing and reporting "no finding" would pass a
/// CI job that checked nothing.
#[derive(Debug, thiserror::Error)]
#[error("no rule {0:?}: give an id such as FM001 or a name such as {example}; `fluxmend rules` lists them", example = all()[0].meta().name)]
pub struct UnknownRule(pub String);

/// The rule ids that `--rule` values select: each value an id or a name, or a comma-separated
/// list of them. Empty when none is given (every rule runs).
pub fn select(values: &[String]) -> Result<Vec<String>, UnknownRule> {
    let mut ids = Vec::new();
    for value in values {
        for part in value.split(',').map(str::trim) {
            let rule = by_id(part).ok_or_else(|| UnknownRule(part.to_string()))?;
            let id = rule.meta().id.to_string();
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// Run `rules` (all when empty) and return their findings, sorted by file and line.
pub fn run(model: &Model, only: &[String]) -> Vec<Finding> {
    run_with(model, only, Strategy::default())
}

/// [`run`], with the fixes `strategy` chooses.
pub fn run_with(model: &Model, only: &[String], strategy: Strategy) -> Vec<Finding> {
    // Side by side (FM002 takes most of the time), collected in rule order.
    let mut drafts: Vec<Draft> = all_with(strategy)
        .par_iter()
        .filter(|r| only.is_empty() || only.iter().any(|id| id.eq_ignore_ascii_case(r.meta().id)))
        .flat_map_iter(|r| r.check(model))
        .collect();
    drafts.sort_by(|a, b| {
        (&a.file, a.line, a.rule, a.cluster_index()).cmp(&(
            &b.file,
            b.line,
            b.rule,
            b.cluster_index(),
        ))
    });
    // The same layer file reached from several clusters (roots) with the same blast radius is
    // one finding naming each cluster (and offering one fix); a different radius stays apart.
    let names = crate::model::cluster_keys(model);
    let mut first: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    let mut out: Vec<Finding> = Vec::with_capacity(drafts.len());
    for draft in drafts {
        let name = names
            .get(&draft.cluster_index())
            .cloned()
            .unwrap_or_default();
        match first.get(&draft.same_key()) {
            Some(&i) => {
                let kept: &mut Finding = &mut out[i];
                if !name.is_empty() && !kept.cluster.split("; ").any(|c| c == name) {
                    kept.cluster = if kept.cluster.is_empty() {
                        name
                    } else {
                        format!("{}; {name}", kept.cluster)
                    };
                }
            }
            None => {
                first.insert(draft.same_key(), out.len());
                out.push(draft.complete(|file, line| content_column(model, file, line), name));
            }
        }
    }
    out
}

/// The 1-based column where line `line` of `file` has its first non-blank character (1 when
/// the line is unknown).
fn content_column(model: &Model, file: &str, line: usize) -> usize {
    let Some(id) = model.repo.file_id(file) else {
        return 1;
    };
    let text = model.repo.file(id).yaml.text();
    text.lines().nth(line.saturating_sub(1)).map_or(1, |l| {
        l.chars().take_while(|c| c.is_whitespace()).count() + 1
    })
}

/// `1 layer`, `2 layers`: counts in messages and reports read as a person would write them.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The paragraph of a rule's document that follows the line `<!-- report: KEY -->`, its lines
/// joined: a text the report prints (a fix's trade-off) has its one source in the document that
/// explains it. Empty when the document has no such paragraph (the rule's snapshots show it).
pub(crate) fn report_text(doc: &str, key: &str) -> String {
    let marker = format!("<!-- report: {key} -->");
    doc.lines()
        .skip_while(|line| line.trim() != marker)
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod report_text_tests {
    use super::report_text;

    #[test]
    fn the_marked_paragraph_is_read_with_its_lines_joined() {
        let doc = "# FMX\n\n<!-- report: a -->\nfirst line\nsecond line\n\nnext paragraph\n<!-- report: b -->\nlast";
        assert_eq!(report_text(doc, "a"), "first line second line");
        assert_eq!(report_text(doc, "b"), "last");
        assert_eq!(report_text(doc, "missing"), "");
    }

    /// Every marker in the rule documents starts a paragraph: no report text is empty.
    #[test]
    fn every_marked_paragraph_of_the_rule_documents_has_text() {
        let mut markers = 0;
        for rule in super::all() {
            let doc = rule.meta().doc;
            for line in doc.lines() {
                if let Some(key) = line
                    .trim()
                    .strip_prefix("<!-- report: ")
                    .and_then(|k| k.strip_suffix(" -->"))
                {
                    markers += 1;
                    assert!(
                        !report_text(doc, key).is_empty(),
                        "{}: {key}",
                        rule.meta().id
                    );
                }
            }
        }
        assert!(markers >= 7, "{markers}");
    }
}
