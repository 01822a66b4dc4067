//! Flux objects a layer applies that miss fields their CRDs require: the API server rejects them,
//! so the layer that applies them fails. fluxmend still models them (with Flux's defaults), and says so.

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Severity};

use super::Model;
use crate::parse::Value;

/// (API group, kind, required paths below the object). Only the fields without which the object
/// means nothing (where it reads from); `interval` and `prune` are required too, but minimal
/// example layouts leave them out and fluxmend's analysis does not depend on them.
const REQUIRED: &[(&str, &str, &[&[&str]])] = &[
    (
        "kustomize.toolkit.fluxcd.io",
        "Kustomization",
        &[
            &["spec", "sourceRef", "kind"],
            &["spec", "sourceRef", "name"],
        ],
    ),
    (
        "source.toolkit.fluxcd.io",
        "GitRepository",
        &[&["spec", "url"]],
    ),
    (
        "source.toolkit.fluxcd.io",
        "OCIRepository",
        &[&["spec", "url"]],
    ),
    ("helm.toolkit.fluxcd.io", "HelmRelease", &[]),
];

/// The required fields `value` (an object of `kind` in `group`) misses.
fn missing(value: &Value, group: &str, kind: &str) -> Vec<String> {
    let Some((_, _, paths)) = REQUIRED.iter().find(|(g, k, _)| group == *g && kind == *k) else {
        return Vec::new();
    };
    if value.get("spec").is_none() {
        return vec!["spec".into()];
    }
    let mut out: Vec<String> = paths
        .iter()
        .filter(|p| value.path(p).is_none())
        .map(|p| p.join("."))
        .collect();
    if kind == "HelmRelease"
        && value.path(&["spec", "chart"]).is_none()
        && value.path(&["spec", "chartRef"]).is_none()
    {
        out.push("spec.chart or spec.chartRef".into());
    }
    out
}

/// One warning per object that lacks required fields in every rendering a layer makes of it
/// (its document with the patches on its way: a patch may add the field, a `chartRef` say).
pub(super) fn check(model: &mut Model) {
    // The objects as written that miss a required field, found in parallel (a fleet has a
    // hundred thousand objects, and most are of no kind with required fields: no data of
    // theirs is read). Usually there is none, and the layers need not be looked at.
    let incomplete: Vec<bool> = model
        .objects
        .par_iter()
        .map(|obj| {
            let (group, kind) = (obj.key.group(), obj.key.kind.as_str());
            !obj.encrypted()
                && REQUIRED.iter().any(|(g, k, _)| group == *g && kind == *k)
                && model
                    .repo
                    .file(obj.file)
                    .yaml
                    .value(obj.root)
                    .is_ok_and(|written| !missing(&written, group, kind).is_empty())
        })
        .collect();
    if !incomplete.contains(&true) {
        return;
    }
    let mut out = Vec::new();
    let mut done = std::collections::HashSet::new();
    for layer in model.layers.iter() {
        for (_, r) in layer.inventory() {
            if !incomplete[r.object as usize] || done.contains(&r.object) {
                continue;
            }
            let obj = model.object(r.object);
            let (group, kind) = (obj.key.group(), obj.key.kind.as_str());
            // Only what the patches leave missing (a strategic-merge patch file looks like a
            // partial object, and is not applied as one).
            let Ok(content) = model.content(Some(layer), r) else {
                continue;
            };
            let lacks = missing(&content, group, kind);
            if lacks.is_empty() {
                continue;
            }
            done.insert(r.object);
            let file = model.repo.file(obj.file);
            out.push(
                Diagnostic::new(
                    Severity::Warning,
                    &file.path,
                    format!(
                        "{} is missing required field{} {}: the API server rejects it, so the layer that applies it fails",
                        obj.key,
                        if lacks.len() == 1 { "" } else { "s" },
                        lacks.join(", ")
                    ),
                )
                .at(obj.line(), 1),
            );
        }
    }
    model.diagnostics.extend(out);
}
