//! The text of the instance's new layer: a Flux Kustomization that carries the old one's
//! settings, depends on it and does not wait.

use crate::edit;
use crate::model::Layer;
use crate::parse::{Entries, NodeId, NodeKind, YamlFile};
use crate::rules::layer_split::{CARRIED, copy_entry_nodes, layer_document_head, spec_indent};

/// The new Kustomization document, in the old document's indentation, line ending and
/// `apiVersion`: the old layer object's labels and annotations, and every setting of its spec
/// that decides how the instance is built and applied ([`CARRIED`]) copied verbatim in the old
/// order, with its own `path`, `dependsOn` the old layer and `wait: false`.
pub(super) fn new_layer_document(
    yaml: &YamlFile,
    root: NodeId,
    name: &str,
    path: &str,
    layer: &Layer,
) -> String {
    let eol = yaml.line_ending.as_str();
    let spec = yaml.lookup(root, &["spec"]);
    let indent = spec_indent(yaml, root);
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(eol);
    };
    let why = format!(
        "# Split out by fluxmend FM001: the FluxInstance must not be health-gated by {}.",
        layer.id.name
    );
    layer_document_head(yaml, root, name, &why, &mut line);
    let depends_on = |line: &mut dyn FnMut(&str)| {
        line(&format!("{indent}dependsOn:"));
        line(&format!(
            "{indent}{indent}- name: {}",
            edit::scalar_text(&layer.id.name)
        ));
        line(&format!("{indent}wait: false"));
    };
    let (mut done_path, mut done_wait) = (false, false);
    let entries = match spec.map(|s| yaml.node(s).kind) {
        Some(NodeKind::Mapping { entries, .. }) => entries,
        _ => Entries::default(),
    };
    for (k, v) in entries {
        match yaml.scalar(k).unwrap_or_default() {
            "path" => {
                line(&format!("{indent}path: {}", edit::scalar_text(path)));
                done_path = true;
            }
            "wait" => {
                depends_on(&mut line);
                done_wait = true;
            }
            key if CARRIED.contains(&key) => copy_entry_nodes(yaml, k, v, &indent, &mut line),
            _ => {}
        }
    }
    if !done_path {
        line(&format!("{indent}path: {}", edit::scalar_text(path)));
    }
    if !done_wait {
        depends_on(&mut line);
    }
    out
}
