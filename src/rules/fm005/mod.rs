//! FM005 health-checks-ignored: `healthChecks` on a Flux Kustomization with `wait: true`. Flux
//! then health-checks every object the layer applied and ignores the list, so the file claims a
//! narrower gate than the one the cluster runs (the forgejo runner incident's layer had both).
//! Documentation: `rules/FM005.md`.
//!
//! This module detects and reports; beside it, each file importing only the files listed after
//! it: `plan` (the fix the strategy asks for), `patched` (whether a patch may set the layer's
//! gate), `place` (where each entry of the list is), `text` (how messages name the entries),
//! `meta` (the rule's document).

mod meta;
mod patched;
mod place;
mod plan;
mod text;

use std::collections::BTreeSet;

use crate::diagnostics::Severity;
use crate::model::{HealthCheck, Layer, LayerId, Model, ObjectKey};

use super::{Draft, Finding, Rule, RuleMeta, Strategy, plural};
use meta::META;
use patched::patched;
use place::{Place, place, uncertainty};
use plan::plan_fix;
use text::{entries_text, entry_count, entry_text};

/// The rule, with the fix the user chose (`fix --strategy`).
pub struct HealthChecksIgnored {
    pub strategy: Strategy,
}

impl Rule for HealthChecksIgnored {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
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

/// The `healthCheckExprs` kinds (`apiVersion`, `kind`) of the layer that it applies no object
/// of: with wait: true, kustomize-controller evaluates an expression only on the objects it
/// applied and health-checks, so these are never evaluated.
fn unevaluated_exprs(model: &Model, layer: &Layer) -> Vec<String> {
    let Some(object) = layer.object.map(|o| model.object(o)) else {
        return Vec::new();
    };
    let yaml = &model.repo.file(object.file).yaml;
    let Some(list) = yaml.lookup(object.root, &["spec", "healthCheckExprs"]) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &item in yaml.items(list) {
        let get = |k: &str| yaml.lookup(item, &[k]).and_then(|n| yaml.scalar(n));
        let Some(kind) = get("kind") else { continue };
        let group = get("apiVersion")
            .map(|a| a.rsplit_once('/').map_or("", |(g, _)| g))
            .unwrap_or_default();
        let applied = layer
            .inventory()
            .any(|(_, r)| r.key.kind == kind && (group.is_empty() || r.key.group() == group));
        let text = match get("apiVersion") {
            Some(api) => format!("{kind} ({api})"),
            None => kind.to_string(),
        };
        if !applied && !out.contains(&text) {
            out.push(text);
        }
    }
    out
}

/// The finding for a `wait: true` layer that lists `healthChecks`: what Flux checks instead, a
/// warning for what is wrong with the list ([`problems`]) or a note that it is redundant
/// ([`redundancy`]), and who waits on the layer.
fn describe(model: &Model, layer_id: LayerId, layer: &Layer, strategy: Strategy) -> Option<Draft> {
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
    let unsure = uncertainty(model, layer);
    let places: Vec<(&HealthCheck, Place)> = layer
        .health_checks
        .iter()
        .map(|hc| (hc, place(model, layer_id, layer, hc, unsure.as_ref())))
        .collect();
    let exprs = if unsure.is_none() {
        unevaluated_exprs(model, layer)
    } else {
        Vec::new()
    };
    let blocked: Vec<_> = model
        .dependents(layer_id)
        .iter()
        .map(|&d| model.layer(d).id.clone())
        .collect();
    let mut message = headline(layer, waited.len(), unlisted);
    let problems = problems(model, &places, &exprs);
    let severity = if problems.is_empty() {
        message.push_str(&redundancy(&places, unsure.as_deref()));
        Severity::Note
    } else {
        message.push_str(&problems.concat());
        Severity::Warning
    };
    if !blocked.is_empty() {
        message.push_str(&format!(
            ". {} {} on all of them, not only the listed ones",
            blocked
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            if blocked.len() == 1 { "waits" } else { "wait" },
        ));
    }
    let (line, column) = file.yaml.line_col(file.yaml.node(key).span.start);
    Some(
        Finding::draft(
            (META.id, severity),
            (file.path.clone(), line),
            (layer.id.clone(), layer.cluster),
            object.key.clone(),
        )
        .column(column)
        .summary(message)
        .blast(blocked, unlisted)
        .planned(plan_fix(model, layer, strategy, &places)),
    )
}

/// The finding's first clause: the list Flux ignores and how many objects it checks instead,
/// `unlisted` of them not in the list.
fn headline(layer: &Layer, waited: usize, unlisted: usize) -> String {
    let mut message = format!(
        "{} has wait: true, so Flux ignores its {} ({}) and health-checks all {} it applies",
        layer.id,
        entry_count(layer),
        entries_text(&layer.health_checks.iter().collect::<Vec<_>>()),
        plural(waited, "object", "objects"),
    );
    if unlisted > 0 {
        message.push_str(&format!(", {unlisted} of them not listed"));
    }
    message
}

/// What is wrong with the list besides being ignored, each a clause of the finding: entries
/// another layer applies (a deadlock when that layer depends on this one), entries nothing
/// applies, `healthCheckExprs` never evaluated. Any of them makes the finding a warning.
fn problems(model: &Model, places: &[(&HealthCheck, Place)], exprs: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (hc, p) in places {
        let Place::Elsewhere {
            layer: other,
            after,
        } = p
        else {
            continue;
        };
        let mut clause = format!(
            "; {} is applied by {}, not by this layer, so it is never checked here",
            entry_text(hc),
            model.layer(*other).id
        );
        if *after {
            clause.push_str(&format!(
                ", and {} depends on this layer: with wait: false (the list as the gate) a \
                 fresh cluster would deadlock, this layer waiting for an object that only \
                 appears after it is Ready",
                model.layer(*other).id
            ));
        }
        out.push(clause);
    }
    let nowhere = entries_where(places, |p| matches!(p, Place::Nowhere));
    if !nowhere.is_empty() {
        out.push(format!(
            "; nothing in this repository applies {}: a stale entry, with which the layer would \
             never become Ready under wait: false",
            entries_text(&nowhere)
        ));
    }
    if !exprs.is_empty() {
        out.push(format!(
            "; its healthCheckExprs for {} are never evaluated: kustomize-controller evaluates \
             them only on objects this layer applies and health-checks, and it applies none of \
             that kind",
            exprs.join(", ")
        ));
    }
    out
}

/// Why a list with no [`problems`] is redundant: every entry is applied (or made) by this
/// layer; or, when the model cannot place some entries (`unsure` says why), that it makes no
/// claim about them.
fn redundancy(places: &[(&HealthCheck, Place)], unsure: Option<&str>) -> String {
    let made: Vec<String> = places
        .iter()
        .filter_map(|(_, p)| match p {
            Place::MadeHere(makers) => Some(makers.clone()),
            _ => None,
        })
        .flatten()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let unknown = entries_where(places, |p| matches!(p, Place::Unknown));
    let made = if made.is_empty() {
        String::new()
    } else {
        format!(
            " or made by {}, which it applies and waits on",
            made.join(", ")
        )
    };
    match unsure {
        Some(why) if !unknown.is_empty() => format!(
            ": the list is redundant as far as fluxmend can tell, but it cannot place {} \
             ({why}), so it makes no claim about {}",
            entries_text(&unknown),
            if unknown.len() == 1 { "it" } else { "them" },
        ),
        _ => format!(
            ": the list is redundant, every entry is applied by this layer{made}; removing \
             it changes nothing on the cluster"
        ),
    }
}

/// The entries whose place is one `want` accepts.
fn entries_where<'h>(
    places: &[(&'h HealthCheck, Place)],
    want: fn(&Place) -> bool,
) -> Vec<&'h HealthCheck> {
    places
        .iter()
        .filter(|(_, p)| want(p))
        .map(|(hc, _)| *hc)
        .collect()
}
