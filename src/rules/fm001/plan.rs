//! Which fix FM001 plans: with `wait: false` the `healthChecks` entries naming the instance go;
//! on the instance's own layer `wait: false` in place (`in_place`); else the instance moves into
//! a layer of its own (`split_out`), in two phases when the old layer prunes.

use std::collections::BTreeSet;

use crate::edit::Changeset;
use crate::model::{LayerId, Model, Rendered, Variant};
use crate::rules::Fix;
use crate::rules::layer_split::{drop_spec_entries, needs_protection, protect_first, second_phase};

use super::health_checks::naming_health_checks;
use super::in_place::in_place;
use super::meta::TRADEOFF;
use super::own_layer::OwnLayer;
use super::split_out::{split_out, uncarried_settings};

/// What stays after the move.
const STAYS: &str = "the instance keeps kustomize.toolkit.fluxcd.io/prune: disabled for good: removing it from Git, or deleting the layer that applies it, must never make flux-operator uninstall Flux";

/// The fix for a layer's gated instances, or why there is none.
pub(super) fn plan_fix(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    own: &Result<OwnLayer, String>,
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    let obj_idx = layer
        .object
        .ok_or("the layer is created by the operator; nothing to edit")?;
    let obj = model.object(obj_idx);
    let file = model.repo.file(obj.file);
    if file.error.is_some() {
        return Err(format!(
            "{} does not parse to its end; fluxmend does not edit it",
            file.path
        ));
    }
    let mut changes = Changeset::default();
    // healthChecks entries naming the instance go in every case.
    let mut dropped = BTreeSet::new();
    for (_, r) in gated {
        for hc in naming_health_checks(model, layer, r) {
            dropped.insert(hc.item);
        }
    }
    if !layer.wait {
        drop_spec_entries(
            &file.yaml,
            obj.root,
            "healthChecks",
            &dropped,
            &file.path,
            &mut changes,
        )?;
        return Ok(Fix::titled(
            format!(
                "drop the FluxInstance's healthChecks entries from {}",
                layer.id.name
            ),
            format!(
                "drop the healthChecks entries of {} that gate the FluxInstance",
                layer.id
            ),
            TRADEOFF.as_str(),
            changes,
        ));
    }
    let not_own = match own {
        Ok(own) => return in_place(model, layer, own, &dropped, changes),
        Err(why) => why,
    };
    // Why the layer keeps `wait: true` and the instance moves instead: the reviewer's first
    // question.
    let why = |s: String| format!("{s} (not in place: {not_own})");
    split(model, layer_id, gated, changes)
        .map(|mut fix| {
            fix.description = why(fix.description);
            fix
        })
        .map_err(why)
}

/// Move the instance into a layer of its own, in two phases when the old layer prunes.
fn split(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    changes: Changeset,
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    // Moving the instance off a layer that prunes: the old layer reconciles the move first (the
    // new layer depends on it) and would prune the instance, and flux-operator would uninstall
    // Flux. So the instance is protected where it is first, and moved once that is applied.
    uncarried_settings(model, layer)?;
    let unprotected = needs_protection(model, layer, gated.iter().map(|(_, r)| *r), |_| false);
    if !unprotected.is_empty() {
        return protect_first(
            model,
            layer,
            &unprotected,
            "deleting a FluxInstance makes flux-operator uninstall Flux",
            TRADEOFF.as_str(),
            STAYS,
        );
    }
    let mut fix = split_out(model, layer_id, gated, changes)?;
    if layer.prune {
        second_phase(&mut fix, layer, STAYS);
    }
    Ok(fix)
}
