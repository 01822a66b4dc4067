//! FM002's fix for a layer that holds only runners and what they use: nothing to split out, so
//! its dependents stop waiting for it (their `dependsOn` entries on it go).

use std::collections::BTreeSet;
use std::sync::LazyLock;

use super::meta::META;
use crate::edit::Changeset;
use crate::model::LayerId;
use crate::parse::NodeId;
use crate::rules::disposable::Analysis;
use crate::rules::layer_split::drop_spec_entries;
use crate::rules::{Fix, report_text};

/// What happens on the cluster when a dependent's `dependsOn` edge on a runner layer goes.
static DROP_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "drop-edges"));

/// A layer of runners and what they use that other layers depend on: nothing to split out; the
/// fix drops the `dependsOn` entries on it, when no layer that would stop waiting for it (a
/// direct or transitive dependent) uses anything it applies.
pub(super) fn plan_drop_edges(an: &mut Analysis, layer_id: LayerId) -> Result<Fix, String> {
    let model = an.model;
    let layer = model.layer(layer_id);
    let only = format!(
        "{} holds only disposable workloads and what they use, so there is nothing to split out",
        layer.id
    );
    if layer.variants.len() > 1 {
        return Err(format!(
            "{only}; its path `{}` stands for {} folders (placeholders), and fluxmend decides a dependsOn edge for a layer of one folder only",
            layer.path,
            layer.variants.len()
        ));
    }
    let mut uses = Vec::new();
    for d in model.dependents(layer_id) {
        if !model.layer(d).live {
            continue;
        }
        let consumed = an.consumed(layer_id, d);
        if !consumed.is_empty() {
            uses.push(format!(
                "{} uses {}",
                model.layer(d).id,
                consumed.join(", ")
            ));
        }
    }
    if !uses.is_empty() {
        return Err(format!(
            "{only}, and what depends on it needs its objects ({}): keep the dependsOn, or move what is needed out of the runner layer",
            uses.join("; ")
        ));
    }
    let mut changes = Changeset::default();
    let mut dropped = Vec::new();
    for (_, dependent) in model.live_layers() {
        if !dependent.depends_on_ids.contains(&layer_id) {
            continue;
        }
        let items: BTreeSet<NodeId> = dependent
            .depends_on
            .iter()
            .filter(|(r, _)| *r == layer.id)
            .map(|&(_, item)| item)
            .collect();
        let obj = model.object(dependent.object.ok_or_else(|| {
            format!(
                "{only}; {} is created by the operator, fluxmend cannot edit its dependsOn",
                dependent.id
            )
        })?);
        let file = model.repo.file(obj.file);
        if file.error.is_some()
            || model.repo.generated_from(&file.path).is_some()
            || items.is_empty()
        {
            return Err(format!(
                "{only}; the dependsOn of {} ({}) is not written where fluxmend can edit it",
                dependent.id, file.path
            ));
        }
        drop_spec_entries(
            &file.yaml,
            obj.root,
            "dependsOn",
            &items,
            &file.path,
            &mut changes,
        )?;
        dropped.push(dependent.id.to_string());
    }
    Ok(Fix::new(
        format!(
            "{only}: drop the dependsOn entr{} on {} of {} ({} nothing it applies), so that a failing runner blocks no other layer",
            if dropped.len() == 1 { "y" } else { "ies" },
            layer.id.name,
            dropped.join(", "),
            if dropped.len() == 1 {
                "it uses"
            } else {
                "they use"
            }
        ),
        DROP_TRADEOFF.as_str(),
        changes,
    ))
}
