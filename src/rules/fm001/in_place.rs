//! `wait: false` on the instance's own layer, in place: the `healthChecks` entries naming the
//! instance go, and what the layers that depend on it use gets an entry each.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::edit::{self, Changeset};
use crate::model::{Layer, Model, Rendered};
use crate::parse::{NodeId, NodeKind};
use crate::rules::layer_split::{drop_spec_entries, remove_items, spec_indent};
use crate::rules::{Fix, report_text};

use super::meta::META;
use super::own_layer::OwnLayer;

static OWN_LAYER_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "own-layer"));

/// `wait: false` on the instance's own layer, in place: nothing moves, nothing is pruned. The
/// `healthChecks` entries naming the instance go; the objects its dependents use get one each.
pub(super) fn in_place(
    model: &Model,
    layer: &Layer,
    own: &OwnLayer,
    dropped: &BTreeSet<NodeId>,
    mut changes: Changeset,
) -> Result<Fix, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let spec = yaml.lookup(obj.root, &["spec"]).ok_or("spec not found")?;
    let wait = yaml
        .lookup(spec, &["wait"])
        .ok_or("wait: true is not written in the layer's own document (a patch sets it)")?;
    changes.edit(&file.path, edit::replace_node(yaml, wait, "false"));
    // Listed entries were ignored while `wait` was true; from now on Flux reads them.
    let kept = layer
        .health_checks
        .iter()
        .filter(|hc| !dropped.contains(&hc.item))
        .count();
    let new: Vec<&Rendered> = own
        .checks
        .iter()
        .map(|(r, _)| r)
        .filter(|r| {
            !layer
                .health_checks
                .iter()
                .any(|hc| !dropped.contains(&hc.item) && hc.matches(&r.key))
        })
        .collect();
    if let Some(r) = new.iter().find(|r| r.key.to_string().contains("${")) {
        return Err(format!(
            "{} is named through a postBuild variable; a healthChecks entry for it would not be substituted",
            r.key
        ));
    }
    match yaml.entry(spec, "healthChecks") {
        Some((_, list)) if !new.is_empty() => {
            if kept == 0 {
                return Err(
                    "the healthChecks list would be replaced as a whole; fluxmend does not rewrite it"
                        .into(),
                );
            }
            remove_items(yaml, list, dropped, &file.path, &mut changes)?;
            for r in &new {
                changes.edit(
                    &file.path,
                    edit::insert_item(yaml, list, None, &check_flow_text(r))
                        .map_err(|e| format!("{}: {e}", file.path))?,
                );
            }
        }
        Some(_) => drop_spec_entries(
            yaml,
            obj.root,
            "healthChecks",
            dropped,
            &file.path,
            &mut changes,
        )?,
        None if !new.is_empty() => {
            let lines = if matches!(yaml.node(spec).kind, NodeKind::Mapping { flow: true, .. }) {
                let items: Vec<String> = new.iter().map(|r| check_flow_text(r)).collect();
                vec![format!("healthChecks: [{}]", items.join(", "))]
            } else {
                let u = spec_indent(yaml, obj.root);
                let mut lines = vec!["healthChecks:".to_string()];
                for r in &new {
                    let mut first = true;
                    for (k, v) in check_fields(r) {
                        let lead = if first { "- " } else { "  " };
                        first = false;
                        lines.push(format!("{u}{lead}{k}: {}", edit::scalar_text(&v)));
                    }
                }
                lines
            };
            changes.edit(
                &file.path,
                edit::insert_entry(yaml, spec, &lines)
                    .map_err(|e| format!("{}: {e}", file.path))?,
            );
        }
        None => {}
    }
    let mut description = format!(
        "set wait: false on {}, which exists for the FluxInstance",
        layer.id
    );
    if !own.companions.is_empty() {
        description.push_str(&format!(
            " (nothing else it applies runs pods, installs a chart or is used by a layer that does not depend on it: {})",
            own.companions.join(", ")
        ));
    }
    if !own.checks.is_empty() {
        let used: Vec<String> = own
            .checks
            .iter()
            .map(|(r, users)| {
                let by: Vec<String> = users
                    .iter()
                    .map(|&u| model.layer(u).id.to_string())
                    .collect();
                format!("{} (used by {})", r.key, by.join(", "))
            })
            .collect();
        description.push_str(&format!(
            "; healthChecks for what the layers that depend on it use, so they still wait for it: {}",
            used.join(", ")
        ));
    }
    if kept > 0 {
        description.push_str(&format!(
            "; its other healthChecks entries ({kept}), ignored while wait was true, are read from now on"
        ));
    }
    Ok(Fix::titled(
        format!("set wait: false on {}", layer.id.name),
        description,
        OWN_LAYER_TRADEOFF.as_str(),
        changes,
    ))
}

/// The fields of a `healthChecks` entry for `r` as it is applied (namespace after
/// `targetNamespace`: Flux reads the entry as written, with no default).
fn check_fields(r: &Rendered) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("apiVersion", r.key.api_version.to_string()),
        ("kind", r.key.kind.to_string()),
        ("name", r.key.name.to_string()),
    ];
    if let Some(ns) = &r.key.namespace {
        out.push(("namespace", ns.to_string()));
    }
    out
}

/// A `healthChecks` entry as one flow mapping.
fn check_flow_text(r: &Rendered) -> String {
    let fields: Vec<String> = check_fields(r)
        .into_iter()
        .map(|(k, v)| format!("{k}: {}", edit::scalar_text(&v)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}
