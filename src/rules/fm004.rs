//! FM004 patch-matches-nothing: a FluxInstance patch whose `target` selects none of the
//! objects the operator generates; kustomize drops it without a word (flux-operator#2996).
//! Documentation: `rules/FM004.md`.

use crate::diagnostics::Severity;
use crate::model::{InstanceObjects, InstancePatch, Model, distribution_source};

use super::instances::{delivered, generated_instances, instance_finding};
use super::{Finding, Rule, RuleMeta};

pub struct PatchMatchesNothing;

static META: RuleMeta = RuleMeta {
    id: "FM004",
    name: "patch-matches-nothing",
    summary: "a patch's target selects no object of what it patches, so the patch is silently dropped",
    doc: include_str!("../../rules/FM004.md"),
};

const NO_FIX: &str = "the intent is unknown: correct the target (the message names the nearest \
object that exists) or remove the patch";

impl Rule for PatchMatchesNothing {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Finding> {
        let instances = generated_instances(model);
        let mut findings = Vec::new();
        for d in delivered(&instances) {
            let generated = d.generated;
            if !generated.complete {
                continue;
            }
            for patch in &generated.patches {
                let Some((selector, node)) = &patch.target else {
                    continue;
                };
                if !patch.selected.is_empty() || patch.undecided > 0 {
                    continue;
                }
                let yaml = &model.repo.file(patch.file).yaml;
                let line = yaml.line_of(yaml.node(*node).span.start);
                let mut finding = instance_finding(
                    model,
                    (META.id, Severity::Error),
                    message(model, generated, patch, &selector.describe()),
                    (patch.file, line),
                    d.layer,
                    generated.instance,
                );
                finding.no_fix_reason = Some(NO_FIX.into());
                findings.push(finding);
            }
        }
        findings
    }
}

fn message(
    model: &Model,
    generated: &InstanceObjects,
    patch: &InstancePatch,
    target: &str,
) -> String {
    let instance = &model.object(generated.instance).key;
    let mut text = format!(
        "the patch of {instance} at line {} targets {target}, which selects none of the {} \
         objects flux-operator generates for it (read from {}): the operator drops the patch \
         without an error and the change never reaches the cluster",
        patch.line,
        generated.objects.len(),
        distribution_source(),
    );
    let selector = patch.selector().unwrap_or_default();
    if let Some(nearest) = generated
        .objects
        .iter()
        .min_by_key(|o| selector.distance(&o.key))
    {
        text.push_str(&format!("; did you mean {}?", nearest.key));
    }
    text
}
