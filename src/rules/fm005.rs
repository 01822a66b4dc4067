//! FM005 health-checks-ignored: `healthChecks` on a Flux Kustomization with `wait: true`. Flux
//! then health-checks every object the layer applied and ignores the list, so the file claims a
//! narrower gate than the one the cluster runs (the forgejo runner incident's layer had both).
//! Documentation: `rules/FM005.md`.

use std::collections::BTreeSet;

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset};
use crate::model::patch::{Labels, PatchBody, Selection, fields_overlap};
use crate::model::{HealthCheck, Layer, LayerId, Model, ObjectKey};
use crate::parse::Value;

use super::{Finding, Fix, Rule, RuleMeta, Strategy, plural};

/// The rule, with the fix the user chose (`fix --strategy`).
pub struct HealthChecksIgnored {
    pub strategy: Strategy,
}

static META: RuleMeta = RuleMeta {
    id: "FM005",
    name: "health-checks-ignored",
    summary: "a Flux Kustomization with wait: true lists healthChecks, which Flux ignores",
    doc: include_str!("../../rules/FM005.md"),
};

const DROP_TRADEOFF: &str = "None on the cluster: with wait: true Flux already ignores the \
list and waits on every object the layer applies, before and after. The file stops claiming a \
narrower gate than the one that runs. If the list is the gate you meant, run \
`fluxmend fix --strategy health-checks` instead.";

const GATE_TRADEOFF: &str = "Objects the list does not name are no longer waited on: the \
layers behind this one may start before those objects are ready, and when one of them fails, \
this layer stays Ready and the failure shows only in the object's own status. A listed object \
must exist for the layer to become Ready, including one this layer does not apply.";

impl Rule for HealthChecksIgnored {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (layer_id, layer) in model.live_layers() {
            if !layer.wait || layer.health_checks.is_empty() || patched(model, layer) {
                continue;
            }
            let Some(finding) = describe(model, layer_id, layer, self.strategy) else {
                continue;
            };
            findings.push(finding);
        }
        findings
    }
}

/// Whether a patch on the way this layer's Flux Kustomization is rendered (a kustomize patch in
/// its parent's build, or the parent's `spec.patches`) may set its `wait` or `healthChecks`:
/// the document then does not say what Flux runs, and the rule stays silent. A patch that does
/// not parse, or whose target the model cannot decide, may.
fn patched(model: &Model, layer: &Layer) -> bool {
    let (Some(object), Some(parent)) = (layer.object, layer.applied_by) else {
        return false;
    };
    let obj = model.object(object);
    let key = &obj.key;
    let metadata = |field: &str| -> Labels {
        let yaml = &model.repo.file(obj.file).yaml;
        let Some(Value::Map(entries)) = yaml
            .lookup(obj.root, &["metadata", field])
            .and_then(|n| yaml.value(n).ok())
        else {
            return Labels::new();
        };
        entries
            .into_iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str().map(str::to_string))))
            .collect()
    };
    let (labels, annotations) = (metadata("labels"), metadata("annotations"));
    let parent = model.layer(parent);
    let patches = parent
        .inventory()
        .filter(|(_, r)| r.object == object)
        .flat_map(|(_, r)| model.patches_on_the_way(r))
        .chain(model.layer_patches(parent));
    let gate: [&[String]; 2] = [
        &["spec".to_string(), "wait".to_string()],
        &["spec".to_string(), "healthChecks".to_string()],
    ];
    patches.into_iter().any(|p| {
        let Ok(body) = PatchBody::parse(&p.body) else {
            return true;
        };
        let selects = p
            .selector()
            .is_none_or(|s| s.selects(key, &labels, &annotations) != Selection::No);
        selects
            && body
                .fields()
                .iter()
                .any(|f| gate.iter().any(|g| fields_overlap(f, g)))
    })
}

fn describe(
    model: &Model,
    layer_id: LayerId,
    layer: &Layer,
    strategy: Strategy,
) -> Option<Finding> {
    let object = model.object(layer.object?);
    let file = model.repo.file(object.file);
    let spec = file.yaml.lookup(object.root, &["spec"])?;
    let (key, _) = file.yaml.entry(spec, "healthChecks")?;
    let waited: BTreeSet<&ObjectKey> = layer
        .inventory()
        .map(|(_, r)| &r.key)
        .filter(|k| **k != object.key)
        .collect();
    let unlisted = waited
        .iter()
        .filter(|k| !layer.health_checks.iter().any(|hc| hc.matches(k)))
        .count();
    let outside: Vec<&HealthCheck> = layer
        .health_checks
        .iter()
        .filter(|hc| !waited.iter().any(|k| hc.matches(k)))
        .collect();
    let blocked: Vec<_> = model
        .dependents(layer_id)
        .iter()
        .map(|&d| model.layer(d).id.clone())
        .collect();
    let mut message = format!(
        "{} has wait: true, so Flux ignores its {} ({}) and health-checks all {} it applies",
        layer.id,
        entry_count(layer),
        entries_text(&layer.health_checks.iter().collect::<Vec<_>>()),
        plural(waited.len(), "object", "objects"),
    );
    if unlisted > 0 {
        message.push_str(&format!(", {unlisted} of them not listed"));
    }
    if !outside.is_empty() {
        let verb = if outside.len() == 1 { "is" } else { "are" };
        message.push_str(&format!(
            "; {} {verb} not applied by this layer and so never checked",
            entries_text(&outside)
        ));
    }
    if !blocked.is_empty() {
        message.push_str(&format!(
            ". {} {} on all of them, not only the listed ones",
            blocked
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if blocked.len() == 1 { "waits" } else { "wait" },
        ));
    }
    let (fix, no_fix_reason) = match plan_fix(model, layer, strategy, &outside) {
        Ok(fix) => (Some(fix), None),
        Err(reason) => (None, Some(reason)),
    };
    let (line, column) = file.yaml.line_col(file.yaml.node(key).span.start);
    Some(Finding {
        rule: META.id,
        severity: Severity::Warning,
        message,
        file: file.path.clone(),
        line,
        column,
        layer: layer.id.clone(),
        cluster: String::new(),
        cluster_index: layer.cluster,
        object: object.key.clone(),
        blocked_layers: blocked,
        masked_objects: unlisted,
        fix,
        no_fix_reason,
        fix_group: None,
    })
}

/// The objects of the layer that its `healthChecks` name and that FM002's catalogue calls
/// disposable: a gate made of them is the trap FM002 reports.
fn listed_disposables(model: &Model, layer: &Layer) -> Vec<String> {
    let mut analysis = super::disposable::Analysis::new(model);
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

/// `1 healthChecks entry`, `2 healthChecks entries`.
fn entry_count(layer: &Layer) -> String {
    plural(
        layer.health_checks.len(),
        "healthChecks entry",
        "healthChecks entries",
    )
}

/// `Kind/namespace/name` (or `Kind/name`) of each `healthChecks` entry, as written.
fn entries_text(entries: &[&HealthCheck]) -> String {
    entries
        .iter()
        .map(|hc| match &hc.namespace {
            Some(ns) => format!("{}/{ns}/{}", hc.kind, hc.name),
            None => format!("{}/{}", hc.kind, hc.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn plan_fix(
    model: &Model,
    layer: &Layer,
    strategy: Strategy,
    outside: &[&HealthCheck],
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
            crate::rollout::cluster_keys(model)
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
                DROP_TRADEOFF,
                changes,
            ))
        }
        Strategy::HealthChecks => {
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
            if !outside.is_empty() {
                description.push_str(&format!(
                    " (it then also waits on {}, which it does not apply: made by a chart, an \
                     operator or another layer, it must exist)",
                    entries_text(outside)
                ));
            }
            Ok(Fix::titled(
                format!("set wait: false on {}", layer.id.name),
                description,
                GATE_TRADEOFF,
                changes,
            ))
        }
    }
}
