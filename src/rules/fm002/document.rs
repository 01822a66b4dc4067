//! The texts an FM002 move writes: the new Flux Kustomization (a copy of the old one's
//! settings with its own path, `dependsOn` and `wait: true`) and a new folder's kustomization.

use crate::edit;
use crate::load::SourceFile;
use crate::model::{Layer, display_dir};
use crate::parse::{Entries, NodeId, NodeKind, YamlFile};
use crate::rules::layer_split::{
    CARRIED, copy_entry, copy_entry_nodes, layer_document_head, modelines, spec_indent,
};

/// What the new layer's `dependsOn` says.
pub(super) enum DependsOn {
    /// The old layer: the moved objects need objects that stay there.
    OldLayer,
    /// The old layer's own `dependsOn`, copied.
    CopyOld,
    Nothing,
}

impl DependsOn {
    /// What the new layer of a group that `needs` these objects of the old layer depends on.
    pub(super) fn of(layer: &Layer, needs: &[String]) -> DependsOn {
        if !needs.is_empty() {
            DependsOn::OldLayer
        } else if !layer.depends_on.is_empty() {
            DependsOn::CopyOld
        } else {
            DependsOn::Nothing
        }
    }

    /// The fix description's words for it.
    pub(super) fn says(&self, layer: &Layer, needs: &[String]) -> String {
        match self {
            DependsOn::OldLayer => {
                format!("dependsOn {}: it needs {}", layer.id.name, needs.join(", "))
            }
            DependsOn::CopyOld => format!("dependsOn what {} depends on", layer.id.name),
            DependsOn::Nothing => "no dependsOn".into(),
        }
    }
}

/// A new folder's kustomization: the listing kustomization's `---` and modelines, a comment,
/// the carried lines, the resources and the carried components.
pub(super) fn kustomization_text(
    eol: &str,
    lister: Option<&SourceFile>,
    from: &str,
    layer_name: &str,
    lines: &[String],
    resources: &[String],
    components: &[String],
) -> String {
    let mut out = String::new();
    let mut item_indent = "  ".to_string();
    if let Some(f) = lister {
        if f.yaml.text().starts_with("---") {
            out.push_str(&format!("---{eol}"));
        }
        for m in modelines(&f.yaml, 0) {
            out.push_str(&format!("{m}{eol}"));
        }
        let first_item = f
            .yaml
            .docs()
            .first()
            .and_then(|d| f.yaml.lookup(d.root, &["resources"]))
            .and_then(|l| f.yaml.items(l).first().copied());
        if let Some(dash) = first_item.and_then(|i| f.yaml.node(i).dash) {
            item_indent = f.yaml.text()[f.yaml.line_start(dash)..dash].to_string();
        }
    }
    out.push_str(&format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1{eol}kind: Kustomization{eol}"
    ));
    out.push_str(&format!(
        "# Split out of {} by fluxmend FM002; applied by the Flux Kustomization {layer_name}.{eol}",
        display_dir(from)
    ));
    for l in lines {
        out.push_str(&format!("{l}{eol}"));
    }
    out.push_str(&format!("resources:{eol}"));
    for r in resources {
        out.push_str(&format!("{item_indent}- {}{eol}", edit::scalar_text(r)));
    }
    if !components.is_empty() {
        out.push_str(&format!("components:{eol}"));
        for c in components {
            out.push_str(&format!("{item_indent}- {}{eol}", edit::scalar_text(c)));
        }
    }
    out
}

/// The new Flux Kustomization: the old one's settings in the old document's order, indentation
/// and line ending, with its own path, `dependsOn` and `wait: true`.
pub(super) fn new_layer_document(
    yaml: &YamlFile,
    root: NodeId,
    layer: &Layer,
    name: &str,
    path: &str,
    depends: &DependsOn,
) -> String {
    let eol = yaml.line_ending.as_str();
    let spec = yaml.lookup(root, &["spec"]);
    let indent = spec_indent(yaml, root);
    let dash_indent = spec
        .and_then(|s| yaml.lookup(s, &["dependsOn"]))
        .and_then(|l| yaml.items(l).first().copied())
        .and_then(|i| yaml.node(i).dash)
        .map_or_else(
            || format!("{indent}{indent}"),
            |d| yaml.text()[yaml.line_start(d)..d].to_string(),
        );
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(eol);
    };
    let why = format!(
        "# Split out by fluxmend FM002: the disposable workloads of {} report their health here and gate nothing.",
        layer.id.name
    );
    layer_document_head(yaml, root, name, &why, &mut line);
    let depends_on = |line: &mut dyn FnMut(&str)| match depends {
        DependsOn::OldLayer => {
            line(&format!("{indent}dependsOn:"));
            line(&format!(
                "{dash_indent}- name: {}",
                edit::scalar_text(&layer.id.name)
            ));
        }
        DependsOn::CopyOld => {
            let mut l = |s: &str| line(s);
            copy_entry(yaml, spec, "dependsOn", &indent, &mut l);
        }
        DependsOn::Nothing => {}
    };
    let (mut done_path, mut done_deps, mut done_wait) = (false, false, false);
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
            // Written once: where the old list was, or at `wait` when that came first.
            "dependsOn" if !done_deps => {
                depends_on(&mut line);
                done_deps = true;
            }
            "wait" => {
                if !done_deps {
                    depends_on(&mut line);
                    done_deps = true;
                }
                line(&format!("{indent}wait: true"));
                done_wait = true;
            }
            key if CARRIED.contains(&key) => copy_entry_nodes(yaml, k, v, &indent, &mut line),
            _ => {}
        }
    }
    if !done_path {
        line(&format!("{indent}path: {}", edit::scalar_text(path)));
    }
    if !done_deps {
        depends_on(&mut line);
    }
    if !done_wait {
        line(&format!("{indent}wait: true"));
    }
    out
}
