//! FM006 root-source-trust-loop: the root source's trust settings are set by an object that a
//! layer reads from that same source, so a bad value rejects the revision that would correct
//! it (devantler-tech/platform#3006, #3014). Documentation: `rules/FM006.md`.

use crate::diagnostics::Severity;
use crate::model::{LayerId, LayerRef, Model, SourceRef};
use crate::parse::NodeId;

use super::instances::{delivered, generated_instances, instance_finding, root_source};
use super::{Finding, Rule, RuleMeta};

pub struct RootSourceTrustLoop;

static META: RuleMeta = RuleMeta {
    id: "FM006",
    name: "root-source-trust-loop",
    summary: "the root source's trust settings are delivered through the root source itself",
    doc: include_str!("../../rules/FM006.md"),
};

const NO_FIX: &str = "no rewrite is safe: where trust settings should live is a decision \
(bootstrap-only, an out-of-band reassertion in the deploy path, or a second independently \
verified source); `fluxmend explain FM006` sets out each with its trade-off";

/// The fields of a source that decide whether it accepts an artifact at all.
const TRUST_FIELDS: &[&str] = &["verify", "secretRef", "certSecretRef", "proxySecretRef"];

const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
const SOURCE_KINDS: &[&str] = &["GitRepository", "OCIRepository", "Bucket"];

impl Rule for RootSourceTrustLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Finding> {
        let mut findings = Vec::new();
        let instances = generated_instances(model);
        for d in delivered(&instances).filter(|d| d.applied) {
            let generated = d.generated;
            let Some(source) = root_source(generated) else {
                continue;
            };
            if model.layer(d.layer).source != source {
                continue;
            }
            let instance = &model.object(generated.instance).key;
            let assumed = if generated.sync_assumed {
                " (its spec.sync is set at bootstrap, outside the repository; the root source is \
                 the one the applying layer reads)"
            } else {
                ""
            };
            let mut settings: Vec<(usize, usize, String)> = Vec::new();
            if let Some((file, node)) = pull_secret(model, generated.instance) {
                let yaml = &model.repo.file(file).yaml;
                settings.push((
                    file,
                    yaml.line_of(yaml.node(node).span.start),
                    format!("spec.sync.pullSecret of {instance} sets the secretRef of"),
                ));
            }
            let root = generated.root_source.unwrap_or_default();
            for patch in &generated.patches {
                if !patch.selected.contains(&root) {
                    continue;
                }
                let Ok(body) = &patch.body else { continue };
                let touched: Vec<&str> = TRUST_FIELDS
                    .iter()
                    .copied()
                    .filter(|field| {
                        body.fields()
                            .iter()
                            .any(|path| writes_trust_field(path, field))
                    })
                    .collect();
                if !touched.is_empty() {
                    settings.push((
                        patch.file,
                        patch.line,
                        format!(
                            "the patch of {instance}{assumed} at line {} sets {} of",
                            patch.line,
                            touched
                                .iter()
                                .map(|f| format!("spec.{f}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                }
            }
            for (file, line, what) in settings {
                let mut finding = instance_finding(
                    model,
                    (META.id, Severity::Warning),
                    message(model, d.layer, &source, &what),
                    (file, line),
                    d.layer,
                    generated.instance,
                );
                finding.no_fix_reason = Some(NO_FIX.into());
                findings.push(finding);
            }
        }
        findings.extend(written_sources(model));
        findings
    }
}

/// A source object written in the repository with trust settings, applied by a layer that
/// reads from that very source (a bootstrap `gotk-sync.yaml` with `spec.verify`, say).
fn written_sources(model: &Model) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (layer_id, layer) in model.live_layers() {
        for (_, r) in layer.inventory() {
            let key = &r.key;
            if key.group() != SOURCE_GROUP
                || !SOURCE_KINDS.contains(&key.kind.as_str())
                || key.kind != layer.source.kind
                || key.name != layer.source.name
                || key.namespace.as_deref() != Some(layer.source.namespace.as_str())
            {
                continue;
            }
            let object = model.object(r.object);
            let source_file = model.repo.file(object.file);
            let yaml = &source_file.yaml;
            // `flux bootstrap` writes gotk-sync.yaml and re-applies it with its credentials
            // secret whenever it runs: that is the out-of-band way back for `secretRef`.
            let by_bootstrap = source_file.path.ends_with("gotk-sync.yaml");
            for field in TRUST_FIELDS {
                if by_bootstrap && *field == "secretRef" {
                    continue;
                }
                let Some((k, _)) = yaml
                    .lookup(object.root, &["spec"])
                    .and_then(|spec| yaml.entry(spec, field))
                else {
                    continue;
                };
                let what = format!("spec.{field} is written in");
                findings.push(Finding {
                    rule: META.id,
                    severity: Severity::Warning,
                    message: message(model, layer_id, &layer.source, &what),
                    file: model.repo.file(object.file).path.clone(),
                    line: yaml.line_of(yaml.node(k).span.start),
                    column: 0,
                    layer: layer.id.clone(),
                    cluster: String::new(),
                    cluster_index: layer.cluster,
                    object: key.clone(),
                    blocked_layers: Vec::new(),
                    masked_objects: 0,
                    fix: None,
                    no_fix_reason: Some(NO_FIX.into()),
                    fix_group: None,
                });
            }
        }
    }
    findings
}

/// Whether a patch writing `path` (segments below the object) writes the trust field: inside
/// it, or a whole ancestor of it (`/spec`).
fn writes_trust_field(path: &[String], field: &str) -> bool {
    let trust = ["spec", field];
    path.iter().zip(trust.iter()).all(|(a, b)| a == b)
}

/// The `spec.sync.pullSecret` node of an instance.
fn pull_secret(model: &Model, instance: usize) -> Option<(usize, NodeId)> {
    let object = model.object(instance);
    let yaml = &model.repo.file(object.file).yaml;
    let spec = if object.key.kind == "HelmRelease" {
        yaml.lookup(object.root, &["spec", "values", "instance"])?
    } else {
        yaml.lookup(object.root, &["spec"])?
    };
    let node = yaml.lookup(spec, &["sync", "pullSecret"])?;
    Some((object.file, node))
}

/// Every live layer of the cluster that reads `source`: what stops updating when it rejects
/// every revision (not `DependencyNotReady`: frozen at its last revision).
fn readers(model: &Model, layer: LayerId, source: &SourceRef) -> Vec<LayerRef> {
    let cluster = model.layer(layer).cluster;
    model
        .live_layers()
        .filter(|(_, l)| l.cluster == cluster && l.source == *source)
        .map(|(_, l)| l.id.clone())
        .collect()
}

fn message(model: &Model, layer_id: LayerId, source: &SourceRef, what: &str) -> String {
    let layer = &model.layer(layer_id).id;
    let frozen: Vec<String> = readers(model, layer_id, source)
        .iter()
        .map(ToString::to_string)
        .collect();
    format!(
        "root-source trust loop: {what} the root source {source}, and {layer} delivers it \
         through that same source. A bad value (a verify identity cosign rejects, a wrong \
         secret) makes the source refuse every revision, the one that would correct it \
         included, and freezes {}: only a change outside Git recovers. See the chain with \
         `fluxmend simulate --fail {source}`",
        frozen.join(", ")
    )
}
