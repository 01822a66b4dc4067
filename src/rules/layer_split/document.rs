//! The text of a new Flux Kustomization written beside the old one: its head, entries copied
//! verbatim from the old document, in its indentation, with its modelines.

use crate::edit;
use crate::parse::{NodeId, NodeKind, YamlFile};

/// The indentation of the entries of the layer document's `spec` mapping.
pub(in crate::rules) fn spec_indent(yaml: &YamlFile, root: NodeId) -> String {
    yaml.lookup(root, &["spec"])
        .and_then(|s| match yaml.node(s).kind {
            NodeKind::Mapping {
                entries,
                flow: false,
            } => entries.first().map(|(k, _)| {
                let start = yaml.node(k).span.start;
                " ".repeat(start - yaml.line_start(start))
            }),
            _ => None,
        })
        .unwrap_or_else(|| "  ".into())
}

/// The text of one `key: value` entry, from its key to the end of its value, with aliases to
/// anchors outside it resolved (the copy lands in another document).
pub(in crate::rules) fn entry_text(yaml: &YamlFile, key: NodeId, value: NodeId) -> String {
    let start = yaml.node(key).span.start;
    let end = yaml.node(value).span.end.max(yaml.node(key).span.end);
    edit::resolved_text(yaml, start, end).replace("\r\n", "\n")
}

/// Copy `key: value` of a mapping verbatim (its lines keep their original indentation, which is
/// the new document's too): the first line is prefixed with `indent`.
pub(in crate::rules) fn copy_entry(
    yaml: &YamlFile,
    map: Option<NodeId>,
    key: &str,
    indent: &str,
    line: &mut impl FnMut(&str),
) {
    let Some((k, v)) = map.and_then(|s| yaml.entry(s, key)) else {
        return;
    };
    copy_entry_nodes(yaml, k, v, indent, line);
}

/// [`copy_entry`] for an entry already found.
pub(in crate::rules) fn copy_entry_nodes(
    yaml: &YamlFile,
    k: NodeId,
    v: NodeId,
    indent: &str,
    line: &mut impl FnMut(&str),
) {
    let body = entry_text(yaml, k, v);
    let mut lines = body.split('\n');
    if let Some(first) = lines.next() {
        line(&format!("{indent}{first}"));
    }
    for l in lines {
        line(l);
    }
}

/// `# yaml-language-server:` modelines of a document's preamble (between its `---` and its
/// content): a new document beside it gets them too.
pub(in crate::rules) fn modelines(yaml: &YamlFile, doc: usize) -> Vec<String> {
    let Some(d) = yaml.docs().get(doc) else {
        return Vec::new();
    };
    let content = yaml.node(d.root).span.start;
    let start = d.region().start.min(content);
    yaml.text()[start..content]
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| l.trim_start().starts_with("# yaml-language-server:"))
        .map(str::to_string)
        .collect()
}

/// The head of a new Flux Kustomization written beside the one at `root`: its `apiVersion`,
/// `kind`, `metadata` (the new name, the old namespace when it was written, and the old layer
/// object's own `labels` and `annotations` copied verbatim) and `spec:` with a comment line
/// saying why the layer exists — in the old document's indentation.
pub(in crate::rules) fn layer_document_head(
    yaml: &YamlFile,
    root: NodeId,
    name: &str,
    why: &str,
    line: &mut impl FnMut(&str),
) {
    let indent = spec_indent(yaml, root);
    let api = yaml
        .lookup(root, &["apiVersion"])
        .and_then(|n| yaml.scalar(n))
        .unwrap_or("kustomize.toolkit.fluxcd.io/v1");
    line(&format!("apiVersion: {api}"));
    line("kind: Kustomization");
    line("metadata:");
    line(&format!("{indent}name: {}", edit::scalar_text(name)));
    if let Some(ns) = yaml
        .lookup(root, &["metadata", "namespace"])
        .and_then(|n| yaml.scalar(n))
    {
        line(&format!("{indent}namespace: {}", edit::scalar_text(ns)));
    }
    // Copied lines keep their own indentation, so the first gets its key's column.
    let metadata = yaml.lookup(root, &["metadata"]);
    for key in ["labels", "annotations"] {
        if let Some((k, v)) = metadata.and_then(|m| yaml.entry(m, key)) {
            let start = yaml.node(k).span.start;
            let column = " ".repeat(start - yaml.line_start(start));
            copy_entry_nodes(yaml, k, v, &column, line);
        }
    }
    line("spec:");
    line(&format!("{indent}{why}"));
}
