//! FM007 overlapping-instance-patches: two FluxInstance patches that write the same field of
//! the same generated object. flux-operator appends the instance's patches after its own in one
//! kustomization and kustomize applies them in order, so the later one decides: a note that
//! the earlier write is overridden. Documentation: `rules/FM007.md`.

use std::collections::BTreeMap;

use crate::diagnostics::Severity;
use crate::model::Model;
use crate::model::patch::fields_overlap;

use super::instances::{delivered, generated_instances, instance_finding};
use super::{Draft, Remedy, Rule, RuleMeta, plural};

pub struct OverlappingInstancePatches;

static META: RuleMeta = RuleMeta {
    id: "FM007",
    name: "overlapping-instance-patches",
    summary: "two FluxInstance patches write the same field of the same generated object",
    doc: include_str!("../../rules/FM007.md"),
};

const NO_FIX: &str = "which value is meant is unknown: keep the field in one patch (the more \
specific target) and remove it from the other, or leave both if the later one is meant to win";

impl Rule for OverlappingInstancePatches {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        for instance in generated_instances(model) {
            for d in delivered(&instance) {
                let generated = d.generated;
                let fields: Vec<Vec<Vec<String>>> = generated
                    .patches
                    .iter()
                    .map(|p| {
                        p.body
                            .as_ref()
                            .map(crate::model::patch::PatchBody::fields)
                            .unwrap_or_default()
                    })
                    .collect();
                // (first patch, second patch, field) → the objects both reach.
                let mut overlaps: BTreeMap<(usize, usize, String), Vec<String>> = BTreeMap::new();
                for object in &generated.objects {
                    for (i, &a) in object.patched_by.iter().enumerate() {
                        for &b in &object.patched_by[i + 1..] {
                            let shared = fields[a].iter().find_map(|fa| {
                                fields[b]
                                    .iter()
                                    .find(|fb| fields_overlap(fa, fb))
                                    .map(|fb| if fa.len() <= fb.len() { fa } else { fb })
                            });
                            if let Some(field) = shared {
                                overlaps
                                    .entry((a, b, pointer(field)))
                                    .or_default()
                                    .push(object.key.to_string());
                            }
                        }
                    }
                }
                let instance = &model.object(generated.instance).key;
                for ((a, b), (field, objects)) in overlaps
                    .into_iter()
                    .map(|((a, b, field), objects)| ((a, b), (field, objects)))
                {
                    let (first, second) = (&generated.patches[a], &generated.patches[b]);
                    let file = &model.repo.file(second.file).path;
                    let reached = match objects.as_slice() {
                        [one] => one.clone(),
                        [one, rest @ ..] => {
                            format!(
                                "{one} (and {} more)",
                                plural(rest.len(), "object", "objects")
                            )
                        }
                        [] => continue,
                    };
                    let message = format!(
                        "the patches of {instance} at {file}:{} and {file}:{} both write {field} of \
                     {reached}: flux-operator appends the instance's patches after its own and \
                     kustomize applies them in list order, so the later one ({file}:{}) is \
                     applied last and decides the value on the cluster, as `flux-operator build \
                     instance` shows",
                        first.line, second.line, second.line,
                    );
                    let finding = instance_finding(
                        model,
                        (META.id, Severity::Note),
                        message,
                        (second.file, second.line),
                        d.layer,
                        generated.instance,
                    );
                    findings.push(finding.remedy(Remedy::NoFix(NO_FIX.into())));
                }
            }
        }
        findings
    }
}

/// A field path as written in messages: `/spec/template/spec/containers[name=manager]/args`.
fn pointer(field: &[String]) -> String {
    field
        .iter()
        .map(|s| {
            if s.starts_with('[') {
                s.clone()
            } else {
                format!("/{s}")
            }
        })
        .collect()
}
