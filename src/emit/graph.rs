//! The report of `graph`: the Flux layers as fluxmend reads them, as text, JSON, DOT or
//! Mermaid. A file of its own because it reports the model, where `report` reports findings
//! and fixes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rustc_hash::FxHashSet as HashSet;
use serde::Serialize;

use crate::emit::escape;
use crate::emit::json::{Sorted, v1};
use crate::model::{Layer, LayerRef, Model};

fn gating(layer: &Layer) -> String {
    match (
        layer.wait,
        layer.health_checks.len(),
        layer.health_check_exprs,
    ) {
        (true, 0, _) => "wait: true (gates everything it applies)".into(),
        (true, n, _) => {
            format!("wait: true (gates everything it applies; its {n} healthChecks are ignored)")
        }
        (false, 0, _) => "no health gate".into(),
        (false, n, _) => format!("healthChecks: {n}"),
    }
}

fn kind_counts(layer: &Layer, variant: &crate::model::Variant) -> String {
    let _ = layer;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &variant.inventory {
        *counts.entry(r.key.kind.as_str()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(k, n)| format!("{k}×{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A layer's name, with its index when several layers share it (a fleet has one `flux-system`
/// per cluster). Counted once per report: counting per label was quadratic in the layers.
struct LayerLabels<'m> {
    model: &'m Model<'m>,
    shared: HashSet<&'m LayerRef>,
}

impl<'m> LayerLabels<'m> {
    fn new(model: &'m Model<'m>) -> Self {
        let mut seen = HashSet::default();
        let shared = model
            .layers
            .iter()
            .filter(|l| !seen.insert(&l.id))
            .map(|l| &l.id)
            .collect();
        LayerLabels { model, shared }
    }

    fn label(&self, id: usize) -> String {
        let l = self.model.layer(id);
        if self.shared.contains(&l.id) {
            format!("{} (#{id})", l.id)
        } else {
            l.id.to_string()
        }
    }
}

/// `graph --format text`, every control character of the repository's names escaped.
pub fn text(model: &Model) -> String {
    let labels = LayerLabels::new(model);
    let mut out = String::new();
    for (id, layer) in model.layers.iter().enumerate() {
        let origin = match (layer.object, layer.created_by_instance) {
            (Some(o), _) => {
                let obj = model.object(o);
                format!("{}:{}", model.repo.file(obj.file).path, obj.line())
            }
            (None, Some(i)) => {
                let obj = model.object(i);
                format!(
                    "created by FluxInstance {} ({}:{})",
                    obj.key,
                    model.repo.file(obj.file).path,
                    obj.line()
                )
            }
            _ => String::new(),
        };
        let status = if layer.live { "" } else { " [unreferenced]" };
        let _ = writeln!(out, "{}{status}  ({origin})", labels.label(id));
        let root = layer
            .source_root
            .as_deref()
            .map_or("?", |r| if r.is_empty() { "." } else { r });
        let _ = writeln!(out, "  source: {} (root {root})", layer.source);
        let _ = writeln!(
            out,
            "  path: {}",
            if layer.path.is_empty() {
                "./"
            } else {
                &layer.path
            }
        );
        let _ = writeln!(out, "  gating: {}", gating(layer));
        if let Some(by) = layer.applied_by {
            let _ = writeln!(out, "  applied by: {}", labels.label(by));
        }
        if !layer.depends_on_ids.is_empty() {
            let deps: Vec<String> = layer
                .depends_on_ids
                .iter()
                .map(|&d| labels.label(d))
                .collect();
            let _ = writeln!(out, "  dependsOn: {}", deps.join(", "));
        }
        for v in &layer.variants {
            let bindings: Vec<String> =
                v.bindings.iter().map(|(p, n)| format!("{p}={n}")).collect();
            let how = if v.generated {
                "generated kustomization"
            } else {
                "kustomization"
            };
            let _ = write!(
                out,
                "  variant {}",
                if v.dir.is_empty() { "." } else { &v.dir }
            );
            if !bindings.is_empty() {
                let _ = write!(out, " [{}]", bindings.join(", "));
            }
            let _ = writeln!(
                out,
                " ({how}): {} objects: {}",
                v.inventory.len(),
                kind_counts(layer, v)
            );
            if let Some(e) = &v.error {
                let _ = writeln!(out, "    error: {e}");
            }
        }
    }
    escape::terminal_lines(&out).into_owned()
}

/// `graph --format json`.
pub fn json(model: &Model) -> String {
    /// Every layer, built and sorted one at a time while it is written ([`v1::Graph`]).
    struct Layers<'a>(&'a Model<'a>);
    impl Serialize for Layers<'_> {
        fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let model = self.0;
            serializer.collect_seq(
                model
                    .layers
                    .iter()
                    .enumerate()
                    .map(|(id, l)| Sorted(v1::GraphLayer::new(model, id, l))),
            )
        }
    }
    let graph = v1::Graph::new(&model.diagnostics, Layers(model));
    serde_json::to_string_pretty(&graph).expect("JSON of plain data") + "\n"
}

fn node_name(id: usize) -> String {
    format!("l{id}")
}

/// `graph --format dot`: solid edges apply, dashed edges wait (`dependsOn`).
pub fn dot(model: &Model) -> String {
    let mut out = String::from("digraph fluxmend {\n  rankdir=LR;\n  node [shape=box];\n");
    for (id, l) in model.layers.iter().enumerate() {
        let style = if l.wait { ",penwidth=2" } else { "" };
        let dashed = if l.live { "" } else { ",style=dashed" };
        let _ = writeln!(
            out,
            "  {} [label=\"{}\\n{}\"{style}{dashed}];",
            node_name(id),
            escape::dot(&l.id.to_string()),
            escape::dot(&gating(l))
        );
        if let Some(by) = l.applied_by {
            let _ = writeln!(
                out,
                "  {} -> {} [label=\"applies\"];",
                node_name(by),
                node_name(id)
            );
        }
        for &d in &l.depends_on_ids {
            let _ = writeln!(
                out,
                "  {} -> {} [style=dashed,label=\"waits for\"];",
                node_name(id),
                node_name(d)
            );
        }
    }
    out.push_str("}\n");
    out
}

/// `graph --format mermaid`.
pub fn mermaid(model: &Model) -> String {
    let mut out = String::from("flowchart LR\n");
    for (id, l) in model.layers.iter().enumerate() {
        let gate = if l.wait { " (wait)" } else { "" };
        let _ = writeln!(
            out,
            "  {}[\"{}\"]",
            node_name(id),
            escape::mermaid(&format!("{}{gate}", l.id))
        );
        if let Some(by) = l.applied_by {
            let _ = writeln!(out, "  {} -->|applies| {}", node_name(by), node_name(id));
        }
        for &d in &l.depends_on_ids {
            let _ = writeln!(out, "  {} -.->|waits for| {}", node_name(id), node_name(d));
        }
    }
    out
}
