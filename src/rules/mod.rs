//! Rules: each reads the model and returns findings; a finding may carry a fix, which is data
//! (file edits), never I/O. One file per rule; its document lives in `rules/<ID>.md`.

use serde::Serialize;

use crate::diagnostics::Severity;
use crate::model::{LayerRef, Model, ObjectKey};

/// A rule's catalogue entry; `doc` is the user documentation shown by `fluxmend explain`.
#[derive(Debug)]
pub struct RuleMeta {
    pub id: &'static str,
    pub name: &'static str,
    pub summary: &'static str,
    pub doc: &'static str,
}

/// A rule: pure function of the model.
pub trait Rule {
    fn meta(&self) -> &'static RuleMeta;
    fn check(&self, model: &Model) -> Vec<Finding>;
}

/// What a rule found: what is gated, by whom, where, and the blast radius.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    pub message: String,
    /// Where the object enters the layer (a `resources` entry or the document itself).
    pub file: String,
    pub line: usize,
    pub layer: LayerRef,
    pub object: ObjectKey,
    /// Layers a failure would leave `DependencyNotReady`.
    pub blocked_layers: Vec<LayerRef>,
    /// How many other objects' health the failing one would mask.
    pub masked_objects: usize,
}

/// Every rule fluxmend knows, in id order.
pub fn all() -> Vec<Box<dyn Rule>> {
    Vec::new()
}

/// Run `rules` (all when empty) and return their findings, sorted by file and line.
pub fn run(model: &Model, only: &[String]) -> Vec<Finding> {
    let mut findings: Vec<Finding> = all()
        .iter()
        .filter(|r| only.is_empty() || only.iter().any(|id| id.eq_ignore_ascii_case(r.meta().id)))
        .flat_map(|r| r.check(model))
        .collect();
    findings.sort_by(|a, b| (&a.file, a.line, a.rule).cmp(&(&b.file, b.line, b.rule)));
    findings
}
