//! FM006 root-source-trust-loop: the root source's trust settings are set by an object that a
//! layer reads from that same source, so a bad value rejects the revision that would correct
//! it (devantler-tech/platform#3006, #3014). Documentation: `rules/FM006.md`.

use crate::diagnostics::Severity;
use crate::load::FileId;
use crate::model::patch::{Labels, Selection};
use crate::model::{InstanceObjects, LayerId, LayerRef, Model, ObjectKey, SourceRef};
use crate::parse::Value;

use super::instances::{delivered, generated_instances, instance_finding, root_source};
use super::{Draft, Finding, Remedy, Rule, RuleMeta};

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

/// The fields of a source that decide whether it accepts an artifact at all, beyond the
/// credentials `secretRef` (and a FluxInstance's `pullSecret`): those are only a secret's name
/// in Git, the credential itself lives on the cluster and the documented bootstrap re-creates
/// it, so they are no finding on their own.
const TRUST_FIELDS: &[&str] = &["verify", "certSecretRef", "proxySecretRef"];

const SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
const SOURCE_KINDS: &[&str] = &["GitRepository", "OCIRepository", "Bucket"];

/// A concrete defect of a trust setting delivered through the source it governs: it raises the
/// finding from a note (the layout's risk) to what the defect costs.
#[derive(Debug)]
enum Defect {
    /// A `matchOIDCIdentity` list of more than one entry (FM003): cosign refuses it.
    MultipleIdentities(usize),
    /// An issuer or subject that Go's `regexp` does not compile.
    BadRegex {
        field: &'static str,
        pattern: String,
        error: String,
    },
    /// `verify.secretRef` names a Secret nothing in the repository provides.
    MissingSecret(String),
    /// The patch that sets `verify` selects no object when flux-operator applies it.
    SelectsNothing(String),
}

impl Defect {
    fn severity(&self) -> Severity {
        match self {
            Defect::MultipleIdentities(_) | Defect::BadRegex { .. } => Severity::Error,
            Defect::MissingSecret(_) | Defect::SelectsNothing(_) => Severity::Warning,
        }
    }

    fn describe(&self) -> String {
        match self {
            Defect::MultipleIdentities(n) => format!(
                "its verify.matchOIDCIdentity lists {n} identities, which cosign's bundle \
                 verification refuses (FM003): the source will reject every revision"
            ),
            Defect::BadRegex {
                field,
                pattern,
                error,
            } => format!(
                "its matchOIDCIdentity {field} `{pattern}` is not a regular expression Go \
                 compiles (cosign compiles it with Go's regexp; {error}): the source will reject \
                 every revision"
            ),
            Defect::MissingSecret(name) => format!(
                "its verify.secretRef names the Secret {name}, which nothing in the repository \
                 provides (no Secret, ExternalSecret or SealedSecret of that name, and no file \
                 names it): unless the bootstrap creates it, the source rejects every revision"
            ),
            Defect::SelectsNothing(target) => format!(
                "the patch's target {target} selects no object when flux-operator applies it \
                 (FM004): the root source runs without the verification the repository shows"
            ),
        }
    }
}

impl Rule for RootSourceTrustLoop {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        for instance in generated_instances(model) {
            for d in delivered(&instance).filter(|d| d.applied) {
                let generated = d.generated;
                let Some(source) = root_source(generated) else {
                    continue;
                };
                // An instance applied to another cluster (kubeConfig) generates that cluster's root
                // source: the source of the same name here is another object.
                if model.layer(d.layer).source != source || model.layer(d.layer).remote {
                    continue;
                }
                for setting in instance_settings(model, generated) {
                    let (summary, details) =
                        message(model, d.layer, &source, &setting.what, &setting.defects);
                    let finding = instance_finding(
                        model,
                        (META.id, setting.severity()),
                        summary,
                        (setting.file, setting.line),
                        d.layer,
                        generated.instance,
                    );
                    findings.push(
                        finding
                            .details(details)
                            .remedy(Remedy::NoFix(NO_FIX.into())),
                    );
                }
            }
        }
        findings.extend(written_sources(model));
        findings
    }
}

/// A trust setting found, where it is written and what is wrong with it.
struct Setting {
    file: FileId,
    line: usize,
    /// `the patch of … sets spec.verify of`, completed by the source in the message.
    what: String,
    defects: Vec<Defect>,
}

impl Setting {
    fn severity(&self) -> Severity {
        self.defects
            .iter()
            .map(Defect::severity)
            .max()
            .unwrap_or(Severity::Note)
    }
}

/// The instance's patches that set the root source's trust fields (or mean to: a patch writing
/// `spec.verify` whose target is a source kind and selects nothing).
fn instance_settings(model: &Model, generated: &InstanceObjects) -> Vec<Setting> {
    let instance = &model.object(generated.instance).key;
    let assumed = if generated.sync_assumed {
        " (its spec.sync is set at bootstrap, outside the repository; the root source is the one \
         the applying layer reads)"
    } else {
        ""
    };
    let root = generated.root_source.unwrap_or_default();
    let namespace = generated.objects[root]
        .key
        .namespace
        .as_deref()
        .unwrap_or_default()
        .to_string();
    let mut out = Vec::new();
    for patch in &generated.patches {
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
        if touched.is_empty() {
            continue;
        }
        let fields = touched
            .iter()
            .map(|f| format!("spec.{f}"))
            .collect::<Vec<_>>()
            .join(", ");
        let what = format!(
            "the patch of {instance}{assumed} at line {} sets {fields} of",
            patch.line
        );
        let mut defects = Vec::new();
        if patch.selected.contains(&root) {
            if touched.contains(&"verify") {
                // What the patches leave on the root source, in list order.
                let content = &generated.objects[root].content;
                if let Some(verify) = content.path(&["spec", "verify"]) {
                    defects.extend(verify_defects(model, verify, &namespace));
                }
            }
        } else if touched.contains(&"verify")
            && patch.selected.is_empty()
            && patch.undecided == 0
            && let Some(selector) = patch.selector()
            && selector.kind.as_deref().is_none_or(|k| {
                SOURCE_KINDS.iter().any(|kind| {
                    let probe = crate::model::patch::Selector {
                        kind: Some(k.to_string()),
                        ..Default::default()
                    };
                    probe.selects(&source_key(kind), &Labels::new(), &Labels::new())
                        != Selection::No
                })
            })
        {
            defects.push(Defect::SelectsNothing(selector.describe()));
        } else {
            continue;
        }
        out.push(Setting {
            file: patch.file,
            line: patch.line,
            what,
            defects,
        });
    }
    out
}

/// A source of `kind`, to test a target's kind against.
fn source_key(kind: &str) -> ObjectKey {
    ObjectKey {
        api_version: format!("{SOURCE_GROUP}/v1").as_str().into(),
        kind: kind.into(),
        namespace: None,
        name: "".into(),
    }
}

/// The concrete defects of a `verify` block the source will run with.
fn verify_defects(model: &Model, verify: &Value, namespace: &str) -> Vec<Defect> {
    let mut out = Vec::new();
    let identities = verify
        .get("matchOIDCIdentity")
        .map(Value::seq)
        .unwrap_or_default();
    if identities.len() > 1 {
        out.push(Defect::MultipleIdentities(identities.len()));
    }
    for identity in identities {
        for field in ["issuer", "subject"] {
            let Some(pattern) = identity.str_at(&[field]) else {
                continue;
            };
            if let Some(error) = go_regexp_error(pattern) {
                out.push(Defect::BadRegex {
                    field,
                    pattern: pattern.to_string(),
                    error,
                });
            }
        }
    }
    if let Some(name) = verify.str_at(&["secretRef", "name"])
        && !secret_provided(model, name, namespace)
    {
        out.push(Defect::MissingSecret(format!("{namespace}/{name}")));
    }
    out
}

/// Why Go's `regexp` (RE2, which cosign compiles issuers and subjects with: sigstore/cosign
/// `pkg/cosign/verify.go`) refuses `pattern`, as far as the `regex` crate, which reads the same
/// syntax, can tell. A `${…}` placeholder is substituted later, and syntax only Go has (`\Q…\E`,
/// `\C`) is not judged.
fn go_regexp_error(pattern: &str) -> Option<String> {
    if pattern.contains("${") || pattern.contains("\\Q") || pattern.contains("\\C") {
        return None;
    }
    regex::Regex::new(pattern).err().map(|e| {
        e.to_string()
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .trim_start_matches("error: ")
            .to_string()
    })
}

/// Kinds whose object of a name makes (or is) a Secret of that name.
const SECRET_MAKERS: &[&str] = &[
    "Secret",
    "SealedSecret",
    "ExternalSecret",
    "OnePasswordItem",
    "VaultStaticSecret",
    "SopsSecret",
];

/// Whether anything in the repository may provide the Secret `name`: an object of a
/// secret-making kind of that name, an ExternalSecret whose target names it, or any other file
/// that names it (a bootstrap task, a generator). A name holding a `${…}` placeholder may.
fn secret_provided(model: &Model, name: &str, namespace: &str) -> bool {
    if name.contains("${") {
        return true;
    }
    let in_namespace =
        |o: &crate::model::Object| o.key.namespace.as_deref().is_none_or(|n| n == namespace);
    let made = model.objects.iter().any(|o| {
        SECRET_MAKERS.contains(&o.key.kind.as_str()) && o.key.name == name && in_namespace(o)
    });
    if made {
        return true;
    }
    let word = |text: &str| {
        text.match_indices(name).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            let boundary =
                |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
            boundary(before) && boundary(after)
        })
    };
    // The name written in more than the setting itself: another file, or another document.
    let mentions: usize = model
        .repo
        .files
        .iter()
        .map(|f| {
            let text = f.yaml.text();
            if word(text) {
                text.matches(name).count()
            } else {
                0
            }
        })
        .sum();
    mentions > 1
}

/// A source object written in the repository with trust settings, applied by a layer that
/// reads from that very source (a bootstrap `gotk-sync.yaml` with `spec.verify`, say).
fn written_sources(model: &Model) -> Vec<Draft> {
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
            let Some(spec) = yaml.lookup(object.root, &["spec"]) else {
                continue;
            };
            for field in TRUST_FIELDS {
                let Some((k, v)) = yaml.entry(spec, field) else {
                    continue;
                };
                let defects = match (*field, yaml.value(v)) {
                    ("verify", Ok(verify)) => {
                        verify_defects(model, &verify, &layer.source.namespace)
                    }
                    _ => Vec::new(),
                };
                let setting = Setting {
                    file: object.file,
                    line: yaml.line_of(yaml.node(k).span.start),
                    what: format!("spec.{field} is written in"),
                    defects,
                };
                let (summary, details) = message(
                    model,
                    layer_id,
                    &layer.source,
                    &setting.what,
                    &setting.defects,
                );
                findings.push(
                    Finding::draft(
                        (META.id, setting.severity()),
                        (source_file.path.clone(), setting.line),
                        (layer.id.clone(), layer.cluster),
                        key.clone(),
                    )
                    .summary(summary)
                    .details(details)
                    .remedy(Remedy::NoFix(NO_FIX.into())),
                );
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

/// The summary and details of a finding about a trust setting (`what` the source).
fn message(
    model: &Model,
    layer_id: LayerId,
    source: &SourceRef,
    what: &str,
    defects: &[Defect],
) -> (String, Vec<String>) {
    let layer = &model.layer(layer_id).id;
    let frozen: Vec<String> = readers(model, layer_id, source)
        .iter()
        .map(ToString::to_string)
        .collect();
    let summary = format!(
        "root-source trust loop: {what} the root source {source}, and {layer} delivers it \
         through that same source"
    );
    let see = format!("See the chain with `fluxmend simulate --fail {source}`");
    if defects.is_empty() {
        return (
            format!("{summary}."),
            vec![
                format!(
                    "This works while the value is right (Flux Operator's reference fleets \
                     manage the instance through Git this way); a wrong value makes the source \
                     refuse every revision, the correcting one included, and freezes {}.",
                    frozen.join(", ")
                ),
                "Recovery: re-apply the corrected object outside Git (`kubectl apply -f`) and \
                 reconcile the source at once (`flux reconcile source`), so that it accepts the \
                 correcting revision."
                    .to_string(),
                "To avoid the loop: set the trust settings at bootstrap only, reassert them out \
                 of band in the deploy path, or deliver the instance from a second, \
                 independently verified source (`fluxmend explain FM006`)."
                    .to_string(),
                see,
            ],
        );
    }
    let described: Vec<String> = defects.iter().map(Defect::describe).collect();
    (
        format!("{summary}, and {}.", described.join("; ")),
        vec![
            format!(
                "The correcting commit has to arrive through that source, so {} stay frozen \
                 until the corrected object is re-applied outside Git (`kubectl apply -f`, then \
                 `flux reconcile source`).",
                frozen.join(", ")
            ),
            see,
        ],
    )
}
