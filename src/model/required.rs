//! Flux objects a layer applies that miss fields their CRDs require: the API server rejects them,
//! so the layer that applies them fails. fluxmend still models them (with Flux's defaults), and says so.

use crate::diagnostics::{Diagnostic, Severity};

use super::Model;

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

/// One warning per object that lacks required fields.
pub(super) fn check(model: &mut Model) {
    // Only what some layer applies: a strategic-merge patch file looks like a partial object.
    let applied: std::collections::HashSet<usize> = model
        .layers
        .iter()
        .flat_map(|l| l.inventory().map(|(_, r)| r.object))
        .collect();
    let mut out = Vec::new();
    for (idx, obj) in model.objects.iter().enumerate() {
        if obj.encrypted || !applied.contains(&idx) {
            continue;
        }
        let Some((_, _, paths)) = REQUIRED
            .iter()
            .find(|(g, k, _)| obj.key.group() == *g && obj.key.kind == *k)
        else {
            continue;
        };
        let file = model.repo.file(obj.file);
        let yaml = &file.yaml;
        let mut missing: Vec<String> = paths
            .iter()
            .filter(|p| yaml.lookup(obj.root, p).is_none())
            .map(|p| p.join("."))
            .collect();
        if obj.key.kind == "HelmRelease"
            && yaml.lookup(obj.root, &["spec", "chart"]).is_none()
            && yaml.lookup(obj.root, &["spec", "chartRef"]).is_none()
        {
            missing.push("spec.chart or spec.chartRef".into());
        }
        if yaml.lookup(obj.root, &["spec"]).is_none() {
            missing = vec!["spec".into()];
        }
        if missing.is_empty() {
            continue;
        }
        out.push(
            Diagnostic::new(
                Severity::Warning,
                &file.path,
                format!(
                    "{} is missing required field{} {}: the API server rejects it, so the layer that applies it fails",
                    obj.key,
                    if missing.len() == 1 { "" } else { "s" },
                    missing.join(", ")
                ),
            )
            .at(obj.line, 1),
        );
    }
    model.diagnostics.extend(out);
}
