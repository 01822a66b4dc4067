//! FM001 flux-instance-in-gated-layer: a FluxInstance health-gated by the layer that applies it
//! (devantler-tech/platform#3006). Documentation: `rules/FM001.md`.
//!
//! This module detects and reports; the fixes live beside it, each file importing only the
//! files listed after it: `plan` (which fix: drop the entries, `wait: false` in place, or the
//! move), `in_place` (`wait: false` on the instance's own layer), `split_out` (the move into a
//! layer of its own), `document` (the new layer's text), `own_layer` (whether the layer exists
//! for the instance), `health_checks` (the entries that gate it), `meta` (the rule's document).

mod document;
mod health_checks;
mod in_place;
mod meta;
mod own_layer;
mod plan;
mod split_out;

use crate::diagnostics::Severity;
use crate::model::{Layer, LayerId, Model, Rendered, Variant};

use super::disposable::Analysis;
use super::layer_split::entry_location;
use super::{Draft, Finding, Rule, RuleMeta};
use health_checks::naming_health_checks;
use meta::META;
use own_layer::own_layer;
use plan::plan_fix;

pub struct FluxInstanceInGatedLayer;

impl Rule for FluxInstanceInGatedLayer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        let mut analysis = Analysis::new(model);
        for (layer_id, layer) in model.live_layers() {
            let Some(_) = layer.object else { continue };
            let gated: Vec<(&Variant, &Rendered)> = layer
                .inventory()
                .filter(|(_, r)| {
                    model.is_flux_instance(r.object) && gates_instance(model, layer, r)
                })
                .collect();
            if gated.is_empty() {
                continue;
            }
            let own = own_layer(model, &mut analysis, layer_id);
            let fix = plan_fix(model, layer_id, &gated, &own);
            let found = gated
                .iter()
                .map(|(variant, r)| describe(model, layer_id, variant, r, own.is_ok()))
                .collect();
            findings.extend(Draft::share(found, (layer_id, 0), &fix));
        }
        findings
    }
}

/// `wait: true`, or `healthChecks` naming the instance, its root Kustomization or root source.
fn gates_instance(model: &Model, layer: &Layer, r: &Rendered) -> bool {
    layer.gates(&r.key) || !naming_health_checks(model, layer, r).is_empty()
}

/// The finding for one gated instance: its severity (an error when the layer is shared or the
/// chain reads the instance's own root source), what its failure blocks and masks, and where
/// the gate is written.
fn describe(
    model: &Model,
    layer_id: LayerId,
    variant: &Variant,
    r: &Rendered,
    own_layer: bool,
) -> Draft {
    let layer = model.layer(layer_id);
    let dependents = model.dependents(layer_id);
    let blocked: Vec<_> = dependents
        .iter()
        .map(|&d| model.layer(d).id.clone())
        .collect();
    // Objects whose health the instance's failure would hide behind the layer's red status:
    // everything with `wait: true`, only the other health-checked objects otherwise.
    let masked = variant
        .inventory
        .iter()
        .filter(|o| o.object != r.object && layer.gates(&o.key))
        .count();
    let source = model.instance_source(r.object);
    // An instance applied to another cluster (kubeConfig) owns that cluster's root source: a
    // bad change there never stops this cluster's delivery.
    let reads_own_source = !layer.remote
        && source.as_ref().is_some_and(|s| {
            *s == layer.source
                || model
                    .dependencies(layer_id)
                    .iter()
                    .any(|&d| model.layer(d).source == *s)
        });
    let shared = !own_layer || !dependents.is_empty();
    let severity = if shared || reads_own_source {
        Severity::Error
    } else {
        Severity::Warning
    };
    let how = if layer.wait {
        "wait: true".to_string()
    } else {
        "its healthChecks".to_string()
    };
    let bindings: Vec<String> = variant
        .bindings
        .iter()
        .map(|(p, n)| format!("{p}={n}"))
        .collect();
    let mut summary = format!("{} ({how}) health-gates {}", layer.id, r.key);
    if !bindings.is_empty() {
        summary.push_str(&format!(" [variant {}]", bindings.join(", ")));
    }
    if let Some(s) = &source {
        summary.push_str(&format!(", which owns the root source {s}"));
        if layer.remote {
            summary.push_str(
                " of the cluster the layer's kubeConfig reaches (not this one, whose delivery it \
                 cannot lock)",
            );
        }
        // Whether a correction could still arrive is the failure model's answer, the one
        // `simulate --fail` gives: a failing instance alone is corrected through the layer,
        // which applies before its health check; a broken root source is not.
        let locked = crate::rollout::failure::correction_of(
            model,
            layer.cluster,
            &crate::rollout::failure::Target::source(s),
        )
        .is_some_and(|c| !c.can_arrive);
        if reads_own_source && locked {
            summary.push_str(&format!(
                " that this chain reads: a bad instance change that breaks that source stops every new revision, the correcting one included (self-lock; `fluxmend simulate --fail {s}` shows it)"
            ));
        } else if reads_own_source {
            summary.push_str(" that this chain reads");
        }
    }
    let blocks = if blocked.is_empty() {
        "blocks no other layer".to_string()
    } else {
        format!(
            "would leave {} DependencyNotReady",
            blocked
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    summary.push('.');
    let details = vec![format!(
        "A failing instance {blocks} and masks the health of {masked} other object{}",
        if masked == 1 { "" } else { "s" }
    )];
    let (file, line) = match naming_health_checks(model, layer, r).first() {
        // With `wait: false` the gate is the healthChecks entry itself.
        Some(hc) if !layer.wait => {
            let f = model
                .repo
                .file(model.object(layer.object.expect("checked")).file);
            (
                f.path.clone(),
                f.yaml.line_of(f.yaml.node(hc.item).span.start),
            )
        }
        _ => entry_location(model, r),
    };
    Finding::draft(
        (META.id, severity),
        (file, line),
        (layer.id.clone(), layer.cluster),
        r.key.clone(),
    )
    .summary(summary)
    .details(details)
    .blast(blocked, masked)
}
