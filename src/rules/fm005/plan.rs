//! FM005's fix, as `--strategy` asks: the ignored list removed (the default), or `wait: false`
//! so that the list becomes the gate, refused where that gate could never pass or would hold
//! disposable workloads.

use std::sync::LazyLock;

use crate::edit::{self, Changeset};
use crate::model::{HealthCheck, Layer, Model};
use crate::rules::disposable::Analysis;
use crate::rules::{Fix, Strategy, report_text};

use super::meta::META;
use super::patched::patched;
use super::place::Place;
use super::text::{entries_text, entry_count, entry_text};

static DROP_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "drop"));

static GATE_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "health-checks"));

/// The objects of the layer that its `healthChecks` name and that FM002's catalogue calls
/// disposable: a gate made of them is the trap FM002 reports.
fn listed_disposables(model: &Model, layer: &Layer) -> Vec<String> {
    let mut analysis = Analysis::new(model);
    let mut out: Vec<String> = layer
        .inventory()
        .filter(|(_, r)| layer.health_checks.iter().any(|hc| hc.matches(&r.key)))
        .filter(|(_, r)| analysis.disposable(r.object).is_some())
        .map(|(_, r)| r.key.to_string())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The fix for the layer's ignored list, or why there is none.
pub(super) fn plan_fix(
    model: &Model,
    layer: &Layer,
    strategy: Strategy,
    places: &[(&HealthCheck, Place)],
) -> Result<Fix, String> {
    let object = model.object(layer.object.ok_or("the layer has no object to edit")?);
    let file = model.repo.file(object.file);
    if file.error.is_some() {
        return Err(format!(
            "{} does not parse to its end; fluxmend does not edit it",
            file.path
        ));
    }
    // The document is the same layer in every cluster that applies it: where a patch sets its
    // wait or healthChecks, removing the list (or the wait) here would change that cluster's gate.
    if let Some((_, other)) = model
        .live_layers()
        .find(|(_, l)| l.object == layer.object && patched(model, l))
    {
        return Err(format!(
            "{} is also the layer {} of cluster {}, where a patch sets its wait or \
             healthChecks: editing the shared document would change that cluster's gate; fix \
             it by hand in each cluster",
            file.path,
            other.id,
            crate::model::cluster_keys(model)
                .get(&other.cluster)
                .cloned()
                .unwrap_or_default()
        ));
    }
    let yaml = &file.yaml;
    let spec = yaml.lookup(object.root, &["spec"]).ok_or("no spec")?;
    let mut changes = Changeset::default();
    match strategy {
        Strategy::Wait => {
            let (key, _) = yaml.entry(spec, "healthChecks").ok_or("no healthChecks")?;
            let edit = edit::remove_entry(yaml, spec, key)
                .map_err(|e| format!("cannot remove the healthChecks list: {e}"))?;
            changes.edit(&file.path, edit);
            Ok(Fix::titled(
                format!("remove ignored healthChecks from {}", layer.id.name),
                format!(
                    "remove the healthChecks list of {}, which Flux ignores while wait is true",
                    layer.id
                ),
                DROP_TRADEOFF.as_str(),
                changes,
            ))
        }
        Strategy::HealthChecks => {
            // The list becomes the gate: every entry must come to exist and be ready without
            // waiting for this layer (fluxmend's transition gate does not play health).
            for (hc, p) in places {
                match p {
                    Place::Elsewhere {
                        layer: other,
                        after: true,
                    } => {
                        return Err(format!(
                            "--strategy health-checks would make {} wait for {}, which only {} \
                             applies, and {} depends on {}: a fresh cluster would deadlock. \
                             Keep the default strategy, or list an object this layer applies",
                            layer.id,
                            entry_text(hc),
                            model.layer(*other).id,
                            model.layer(*other).id,
                            layer.id
                        ));
                    }
                    Place::Nowhere => {
                        return Err(format!(
                            "--strategy health-checks would make {} wait for {}, which nothing \
                             in this repository applies: the layer would never become Ready. \
                             Correct or remove the entry first, or keep the default strategy",
                            layer.id,
                            entry_text(hc)
                        ));
                    }
                    _ => {}
                }
            }
            let runners = listed_disposables(model, layer);
            if !runners.is_empty() {
                return Err(format!(
                    "--strategy health-checks would make {} the gate of {}: disposable \
                     workloads whose failure would hold the layer red (FM002); take them out \
                     of the list first, or keep the default strategy",
                    runners.join(", "),
                    layer.id
                ));
            }
            let wait = yaml.lookup(spec, &["wait"]).ok_or("spec.wait not found")?;
            changes.edit(&file.path, edit::replace_node(yaml, wait, "false"));
            let mut description = format!(
                "set wait: false on {}, so that its {} become its health gate",
                layer.id,
                entry_count(layer)
            );
            let outside: Vec<&HealthCheck> = places
                .iter()
                .filter(|(_, p)| !matches!(p, Place::Here))
                .map(|(hc, _)| *hc)
                .collect();
            if !outside.is_empty() {
                description.push_str(&format!(
                    " (it then also waits on {}, which it does not apply: made by a chart, an \
                     operator or another layer, it must exist)",
                    entries_text(&outside)
                ));
            }
            Ok(Fix::titled(
                format!("set wait: false on {}", layer.id.name),
                description,
                GATE_TRADEOFF.as_str(),
                changes,
            ))
        }
    }
}
