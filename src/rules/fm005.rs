//! FM005 health-checks-ignored: `healthChecks` on a Flux Kustomization with `wait: true`. Flux
//! then health-checks every object the layer applied and ignores the list, so the file claims a
//! narrower gate than the one the cluster runs (the forgejo runner incident's layer had both).
//! Documentation: `rules/FM005.md`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset};
use crate::model::patch::{Labels, PatchBody, Selection, fields_overlap};
use crate::model::{
    FLUX_OPERATOR_GROUP, HealthCheck, Layer, LayerId, Model, ObjectKey, display_dir,
};
use crate::parse::Value;

use super::{Draft, Finding, Fix, Rule, RuleMeta, Strategy, plural, report_text};

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

static DROP_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "drop"));

static GATE_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "health-checks"));

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

/// Where an entry of the ignored list is, as far as the model can tell.
#[derive(Debug)]
enum Place {
    /// Applied by this layer: with wait: true it is checked anyway.
    Here,
    /// Not applied by any layer, but this layer applies what may make it (a HelmRelease's
    /// chart, a ResourceSet, a FluxInstance), and waits on that.
    MadeHere(Vec<String>),
    /// The model cannot tell: this layer's build (or the way it is rendered) is not fully known
    /// (see [`uncertainty`]).
    Unknown,
    /// Applied by another layer; `after` when that layer depends on this one.
    Elsewhere { layer: LayerId, after: bool },
    /// Nothing in the repository applies or makes it.
    Nowhere,
}

/// The kinds Flux's own controllers define: a chart does not make those (a HelmRelease entry
/// that nothing applies is a stale entry, not a chart's object).
const FLUX_KINDS: &[&str] = &[
    "HelmRelease",
    "Kustomization",
    "GitRepository",
    "OCIRepository",
    "HelmRepository",
    "HelmChart",
    "Bucket",
];

/// Why the model cannot claim that an entry is not applied by this layer, if it cannot: its
/// build holds remote or unmodelled entries, or the parent that renders its Flux Kustomization
/// has transformers or replacements whose effect is unknown.
fn uncertainty(model: &Model, layer: &Layer) -> Option<String> {
    for v in &layer.variants {
        if v.error.is_some() {
            return Some(format!("the build of {} fails", display_dir(&v.dir)));
        }
        if !v.unmodelled.is_empty() {
            return Some(format!("{} is not fully modelled", display_dir(&v.dir)));
        }
        if !model.fully_known(&v.dir) {
            return Some(format!(
                "the build of {} holds remote or unmodelled entries",
                display_dir(&v.dir)
            ));
        }
    }
    let parent = model.layer(layer.applied_by?);
    parent
        .variants
        .iter()
        .filter(|v| v.inventory.iter().any(|r| Some(r.object) == layer.object))
        .find(|v| !v.unmodelled.is_empty())
        .map(|v| {
            format!(
                "{} renders this layer with transformers or replacements that may rename or \
                 re-namespace ({})",
                parent.id,
                v.unmodelled.join(", ")
            )
        })
}

/// Where the entry `hc` of `layer`'s list is.
fn place(
    model: &Model,
    layer_id: LayerId,
    layer: &Layer,
    hc: &HealthCheck,
    unsure: &Option<String>,
) -> Place {
    if layer.inventory().any(|(_, r)| hc.matches(&r.key)) {
        return Place::Here;
    }
    if unsure.is_some() {
        return Place::Unknown;
    }
    let dependents = model.dependents(layer_id);
    let elsewhere = model
        .live_layers()
        .filter(|(id, l)| *id != layer_id && l.cluster == layer.cluster)
        .find(|(_, l)| l.inventory().any(|(_, r)| hc.matches(&r.key)));
    if let Some((other, _)) = elsewhere {
        return Place::Elsewhere {
            layer: other,
            after: dependents.contains(&other),
        };
    }
    let makers: Vec<String> = layer
        .inventory()
        .filter(|(_, r)| {
            r.key.is_helm_release()
                || model.is_flux_instance(r.object)
                || r.key.is(FLUX_OPERATOR_GROUP, "ResourceSet")
        })
        .map(|(_, r)| r.key.to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !makers.is_empty() && !FLUX_KINDS.contains(&hc.kind.as_str()) {
        return Place::MadeHere(makers);
    }
    Place::Nowhere
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
        .map(|hc| (hc, place(model, layer_id, layer, hc, &unsure)))
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
                .map(|b| b.to_string())
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

/// `Kind/namespace/name` (or `Kind/name`) of a `healthChecks` entry, as written.
fn entry_text(hc: &HealthCheck) -> String {
    match &hc.namespace {
        Some(ns) => format!("{}/{ns}/{}", hc.kind, hc.name),
        None => format!("{}/{}", hc.kind, hc.name),
    }
}

/// [`entry_text`] of each entry, comma-separated.
fn entries_text(entries: &[&HealthCheck]) -> String {
    entries
        .iter()
        .map(|hc| entry_text(hc))
        .collect::<Vec<_>>()
        .join(", ")
}

fn plan_fix(
    model: &Model,
    layer: &Layer,
    strategy: Strategy,
    places: &[(&HealthCheck, Place)],
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
                DROP_TRADEOFF.as_str(),
                changes,
            ))
        }
        Strategy::HealthChecks => {
            // The list becomes the gate: every entry must come to exist and be ready without
            // waiting for this layer (fluxmend's transition gate does not play health).
            for (hc, p) in places {
                match p {
                    Place::Elsewhere {
                        layer: other,
                        after: true,
                    } => {
                        return Err(format!(
                            "--strategy health-checks would make {} wait for {}, which only {} \
                             applies, and {} depends on {}: a fresh cluster would deadlock. \
                             Keep the default strategy, or list an object this layer applies",
                            layer.id,
                            entry_text(hc),
                            model.layer(*other).id,
                            model.layer(*other).id,
                            layer.id
                        ));
                    }
                    Place::Nowhere => {
                        return Err(format!(
                            "--strategy health-checks would make {} wait for {}, which nothing \
                             in this repository applies: the layer would never become Ready. \
                             Correct or remove the entry first, or keep the default strategy",
                            layer.id,
                            entry_text(hc)
                        ));
                    }
                    _ => {}
                }
            }
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
            let outside: Vec<&HealthCheck> = places
                .iter()
                .filter(|(_, p)| !matches!(p, Place::Here))
                .map(|(hc, _)| *hc)
                .collect();
            if !outside.is_empty() {
                description.push_str(&format!(
                    " (it then also waits on {}, which it does not apply: made by a chart, an \
                     operator or another layer, it must exist)",
                    entries_text(&outside)
                ));
            }
            Ok(Fix::titled(
                format!("set wait: false on {}", layer.id.name),
                description,
                GATE_TRADEOFF.as_str(),
                changes,
            ))
        }
    }
}
