//! FM002 disposable-workload-in-gated-layer: a CI runner (or another disposable workload)
//! health-gates a Flux Kustomization that also applies other objects or has dependents
//! (a forgejo runner incident that held an `apps` layer red). Documentation: `rules/FM002.md`;
//! the catalogue: `rules/disposable.yaml`.
//!
//! This module detects and reports; the fixes live beside it: `plan` (the move of the workloads
//! and what only they use into a layer of their own), `folders` (where the moved files go),
//! `carry` (what the kustomizations they leave did to them, carried into the new folder),
//! `overlays` (what the old layer's spec does to them), `touches` (whether a patch or component
//! may change them), `document` (the texts a move writes), `drop_edges` (a layer of runners
//! only: its dependents stop waiting for it) and `meta` (the rule's document).

mod carry;
mod document;
mod drop_edges;
mod folders;
mod meta;
mod overlays;
mod plan;
mod touches;

use crate::diagnostics::Severity;
use rayon::prelude::*;

use crate::model::{Layer, LayerId, LayerRef, Model, Rendered, Variant};
use crate::rollout::failure::masked;

use super::disposable::{Analysis, Shared};
use super::{Draft, Finding, Rule, RuleMeta, plural};
use drop_edges::plan_drop_edges;
use meta::META;
use plan::plan_fix;

pub struct DisposableWorkloadInGatedLayer;

impl Rule for DisposableWorkloadInGatedLayer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    /// Clusters are analysed in parallel, each with a memo of its own (what one cluster's
    /// layers apply is all its index holds); the findings are taken in layer order.
    fn check(&self, model: &Model) -> Vec<Draft> {
        let shared = Shared::of(model);
        let mut found: Vec<(LayerId, Vec<Draft>)> = shared
            .live_by_cluster(model)
            .par_iter()
            .flat_map_iter(|layers| {
                let mut analysis = Analysis::sharing(model, shared.clone());
                layers
                    .iter()
                    .filter(|&&id| {
                        let layer = model.layer(id);
                        layer.object.is_some() && (layer.wait || !layer.health_checks.is_empty())
                    })
                    .map(|&id| (id, check_layer(&mut analysis, id)))
                    .collect::<Vec<_>>()
            })
            .collect();
        found.sort_by_key(|(id, _)| *id);
        found.into_iter().flat_map(|(_, drafts)| drafts).collect()
    }
}

/// The findings of one gating live layer, each variant's.
fn check_layer(analysis: &mut Analysis, layer_id: LayerId) -> Vec<Draft> {
    let model = analysis.model;
    let layer = model.layer(layer_id);
    let mut findings = Vec::new();
    for vi in 0..layer.variants.len() {
        let bundle = analysis.bundle(layer_id, vi);
        if bundle.gated.is_empty() {
            continue;
        }
        let blocked: Vec<LayerRef> = model
            .dependents(layer_id)
            .iter()
            .filter(|&&d| model.layer(d).live)
            .map(|&d| model.layer(d).id.clone())
            .collect();
        // What a failing runner hides: the other objects the layer health-checks, the
        // runners' own world aside (`simulate` counts the same way).
        let masked = masked(layer, &layer.variants[vi].inventory, |r: &Rendered| {
            bundle.disposable.contains(&r.object)
                || bundle.moved.contains(&r.object)
                || bundle.own_namespaces.contains(&r.object)
        });
        // A layer whose runners' failure blocks no layer and hides no other object's
        // health (it holds only runners and what they use, or checks only them) is the
        // safe end state.
        if blocked.is_empty() && masked == 0 {
            continue;
        }
        let fix = if bundle.staying.is_empty() {
            plan_drop_edges(analysis, layer_id)
        } else {
            plan_fix(analysis, layer_id, vi, &bundle)
        };
        let variant = &layer.variants[vi];
        let mut found: Vec<Draft> = bundle
            .gated
            .iter()
            .map(|(inv, reason)| {
                describe(
                    analysis,
                    layer,
                    variant,
                    &variant.inventory[*inv],
                    reason,
                    &blocked,
                    masked,
                )
            })
            .collect();
        // The fix rides on the finding reported first.
        found.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        findings.extend(Draft::share(found, (layer_id, vi), &fix));
    }
    findings
}

fn names(layers: &[LayerRef]) -> String {
    layers
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(
    analysis: &Analysis,
    layer: &Layer,
    variant: &Variant,
    r: &Rendered,
    reason: &str,
    blocked: &[LayerRef],
    masked: usize,
) -> Draft {
    let how = if layer.wait {
        "wait: true"
    } else {
        "its healthChecks"
    };
    let model = analysis.model;
    let mut summary = format!(
        "{} ({how}) health-gates {}, a disposable workload ({reason})",
        layer.id,
        analysis.key_text(&r.key)
    );
    let bindings: Vec<String> = variant
        .bindings
        .iter()
        .map(|(p, n)| format!("{p}={n}"))
        .collect();
    if !bindings.is_empty() {
        summary.push_str(&format!(" [variant {}]", bindings.join(", ")));
    }
    summary.push('.');
    let blocks = if blocked.is_empty() {
        "blocks no other layer".to_string()
    } else {
        format!("would leave {} DependencyNotReady", names(blocked))
    };
    let mut details = vec![format!(
        "When it fails, the layer turns Ready=False: it {blocks} and masks the status of {} it applies",
        plural(masked, "other object", "other objects")
    )];
    if layer.wait && !layer.health_checks.is_empty() {
        let listed = layer.health_checks.iter().any(|hc| hc.matches(&r.key));
        details.last_mut().expect("one sentence").push('.');
        details.push(format!(
            "Its {} ignored because wait is true: Flux checks every object it applies, not only the listed ones ({})",
            plural(layer.health_checks.len(), "healthChecks entry is", "healthChecks entries are"),
            if listed {
                "this one is listed"
            } else {
                "this one is not even listed"
            }
        ));
    }
    let obj = model.object(r.object);
    let severity = if blocked.is_empty() {
        Severity::Warning
    } else {
        Severity::Error
    };
    Finding::draft(
        (META.id, severity),
        (model.repo.file(obj.file).path.clone(), obj.line()),
        (layer.id.clone(), layer.cluster),
        r.key.clone(),
    )
    .summary(summary)
    .details(details)
    .blast(blocked.to_vec(), masked)
}
