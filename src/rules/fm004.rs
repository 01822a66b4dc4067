//! FM004 patch-matches-nothing: a FluxInstance patch whose `target` selects none of the
//! objects the operator generates; kustomize drops it without a word (flux-operator#2996).
//! Documentation: `rules/FM004.md`.

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset};
use crate::load::FileId;
use crate::model::patch::{Labels, Selection, Selector};
use crate::model::{
    GeneratedObject, InstanceObjects, InstancePatch, KustomizeDir, Layer, Model, Name, ObjectKey,
    RefTarget, Rendered, Renderer, component_of, display_dir, distribution_source,
};
use crate::parse::{NodeId, Value, YamlFile};
use std::sync::LazyLock;

use super::instances::{delivered, generated_instances, instance_finding};
use super::{Draft, Finding, Fix, Remedy, Rule, RuleMeta, report_text};

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

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        for instance in generated_instances(model) {
            for d in delivered(&instance) {
                let generated = d.generated;
                if !generated.complete {
                    continue;
                }
                for patch in &generated.patches {
                    let Some((selector, node)) = &patch.target else {
                        continue;
                    };
                    let Some(judged) = judge(model, generated, patch, selector) else {
                        continue;
                    };
                    let file = model.repo.file(patch.file);
                    let line = file.yaml.line_of(file.yaml.node(*node).span.start);
                    let finding = instance_finding(
                        model,
                        (META.id, judged.severity),
                        judged.message,
                        (patch.file, line),
                        d.layer,
                        generated.instance,
                    );
                    findings.push(if judged.namespace_too_early {
                        finding.planned(drop_target_namespace(&file.path, &file.yaml, *node))
                    } else {
                        finding.remedy(Remedy::NoFix(NO_FIX.into()))
                    });
                }
            }
        }
        findings.extend(layer_patches(model));
        findings.extend(kustomization_patches(model));
        findings
    }
}

/// What a FluxInstance patch deserves.
struct Judged {
    severity: Severity,
    message: String,
    /// The target selects its objects once its `namespace:` is gone: the intent is plain.
    namespace_too_early: bool,
}

/// The finding a FluxInstance patch deserves, if any: an error when its target selects none of
/// the objects the operator generates as the patches see them (before the operator's namespace
/// and label transformers), a note when it targets a component the instance does not install
/// (harmless, often kept on purpose for a later install).
fn judge(
    model: &Model,
    generated: &InstanceObjects,
    patch: &InstancePatch,
    selector: &Selector,
) -> Option<Judged> {
    let component = |&i: &usize| generated.objects[i].component.is_some();
    let late: Vec<&GeneratedObject> = patch
        .selected_too_late
        .iter()
        .filter(|i| component(i))
        .map(|&i| &generated.objects[i])
        .collect();
    if !late.is_empty() && !patch.selected.iter().any(component) {
        let (message, namespace_too_early) = too_late(model, generated, patch, selector, &late);
        return Some(Judged {
            severity: Severity::Error,
            message,
            namespace_too_early,
        });
    }
    if !patch.selected.is_empty() || patch.undecided > 0 {
        return None;
    }
    let missing_component = selector
        .kind
        .as_deref()
        .zip(selector.name.as_deref())
        .and_then(|(kind, name)| component_of(kind, name));
    let severity = if missing_component.is_some() {
        Severity::Note
    } else {
        Severity::Error
    };
    Some(Judged {
        severity,
        message: message(model, generated, patch, selector, missing_component),
        namespace_too_early: false,
    })
}

/// Why a patch that would select component objects on the cluster selects none when the
/// operator applies it, and whether its `namespace:` is the reason.
fn too_late(
    model: &Model,
    generated: &InstanceObjects,
    patch: &InstancePatch,
    selector: &Selector,
    late: &[&GeneratedObject],
) -> (String, bool) {
    let instance = &model.object(generated.instance).key;
    let without_namespace = Selector {
        namespace: None,
        ..selector.clone()
    };
    let by_namespace = late.iter().any(|o| {
        let w = &o.at_patch_time;
        without_namespace.selects(&w.key, &w.labels, &w.annotations) == Selection::Yes
    });
    let names: Vec<String> = late.iter().take(3).map(|o| o.key.to_string()).collect();
    let more = late.len().saturating_sub(names.len());
    let (why, instead) = if by_namespace {
        (
            "flux-operator applies the instance's patches before it sets the namespace \
             (internal/builder/templates.go: the patches are its kustomization's own, and \
             kustomize runs `namespace:` after them), and its documentation says a patch target \
             \"must not contain a namespace\" (docs/guides/instance/instance-customization.md)",
            "remove `namespace:` from the target",
        )
    } else {
        (
            "flux-operator adds the labels app.kubernetes.io/managed-by, instance and version \
             (and its ssa and prune annotations) with transformers that run after the \
             instance's patches (internal/builder/templates.go: labels.yaml and annotations.yaml \
             under `transformers:`)",
            "select by app.kubernetes.io/part-of=flux or app.kubernetes.io/component (written \
             in the manifests), or by kind and name",
        )
    };
    let message = format!(
        "the patch of {instance} at line {} targets {}, which would select {}{} on the cluster \
         but selects nothing when the patch runs: {why}. kustomize drops the patch without an \
         error and the change never reaches the cluster; {instead}",
        patch.line,
        selector.describe(),
        names.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
    );
    (message, by_namespace)
}

/// The trade-off of [`drop_target_namespace`] (rules/FM004.md, Fix).
static NAMESPACE_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "namespace"));

/// The fix of a target whose `namespace:` keeps it from selecting: remove that entry, nothing
/// else (the gates compare the instance with every patch target's namespace left out).
fn drop_target_namespace(path: &str, yaml: &YamlFile, target: NodeId) -> Result<Fix, String> {
    let (key, _) = yaml
        .entry(target, "namespace")
        .ok_or("the target's `namespace:` is not written in it (an alias or a merge key?)")?;
    let edit = edit::remove_entry(yaml, target, key).map_err(|e| e.to_string())?;
    let mut changes = Changeset::default();
    changes.edit(path, edit);
    let mut fix = Fix::titled(
        "remove namespace from a FluxInstance patch target".into(),
        "remove `namespace:` from the patch's target, so that it selects the component objects \
         when flux-operator runs it"
            .into(),
        NAMESPACE_TRADEOFF.as_str(),
        changes,
    );
    fix.normalise = Some(without_target_namespaces);
    Ok(fix)
}

/// An object's content with `namespace` left out of the target of every `kustomize.patches`
/// entry (a FluxInstance's spec, or the flux-instance chart's values).
fn without_target_namespaces(value: Value) -> Value {
    let strip_patches = |kustomize: Value| match kustomize {
        Value::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    (Some("patches"), Value::Seq(items)) => (
                        k,
                        Value::Seq(items.into_iter().map(without_namespace).collect()),
                    ),
                    (_, v) => (k, v),
                })
                .collect(),
        ),
        other => other,
    };
    match value {
        Value::Map(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| match k.as_str() {
                    Some("kustomize") => (k, strip_patches(v)),
                    _ => (k, without_target_namespaces(v)),
                })
                .collect(),
        ),
        Value::Seq(items) => Value::Seq(items.into_iter().map(without_target_namespaces).collect()),
        other => other,
    }
}

/// A patch entry without its target's `namespace`.
fn without_namespace(item: Value) -> Value {
    let Value::Map(entries) = item else {
        return item;
    };
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| match (k.as_str(), v) {
                (Some("target"), Value::Map(target)) => (
                    k,
                    Value::Map(
                        target
                            .into_iter()
                            .filter(|(tk, _)| tk.as_str() != Some("namespace"))
                            .collect(),
                    ),
                ),
                (_, v) => (k, v),
            })
            .collect(),
    )
}

fn message(
    model: &Model,
    generated: &InstanceObjects,
    patch: &InstancePatch,
    selector: &Selector,
    missing_component: Option<&str>,
) -> String {
    let instance = &model.object(generated.instance).key;
    let target = selector.describe();
    if let Some(component) = missing_component {
        return format!(
            "the patch of {instance} at line {} targets {target}, an object of {component}, \
             which the instance does not install (spec.components): the patch selects nothing \
             and changes nothing until the component is added (harmless, and often kept on \
             purpose)",
            patch.line,
        );
    }
    let mut text = format!(
        "the patch of {instance} at line {} targets {target}, which selects none of the {} \
         objects flux-operator generates for it (read from {}): the operator drops the patch \
         without an error and the change never reaches the cluster",
        patch.line,
        generated.objects.len(),
        distribution_source(),
    );
    if let Some(nearest) = generated
        .objects
        .iter()
        .min_by_key(|o| selector.distance(&o.key))
    {
        text.push_str(&format!("; did you mean {}?", nearest.key));
    }
    text
}

/// Whether the selector, without its label and annotation selectors (labels only narrow,
/// and transformers the model does not follow may add them), may select the rendered object:
/// by its key after the build, or as written, or by a name the build only prefixed or
/// suffixed, in any namespace a kustomization on the way sets.
fn may_select(model: &Model, selector: &Selector, r: &Rendered) -> bool {
    let loose = Selector {
        name: None,
        namespace: None,
        label_selector: None,
        annotation_selector: None,
        ..selector.clone()
    };
    let none = Labels::new();
    if loose.selects(&r.key, &none, &none) == Selection::No {
        return false;
    }
    let written = &model.object(r.object).key;
    let name_ok = match selector.name.as_deref() {
        None | Some("") => true,
        Some(name) => {
            let exact = Selector {
                name: Some(name.to_string()),
                ..Selector::default()
            };
            exact.selects(&r.key, &none, &none) != Selection::No
                || exact.selects(written, &none, &none) != Selection::No
                || r.key.name.contains(name)
        }
    };
    let namespace_ok = match selector.namespace.as_deref() {
        None | Some("") => true,
        Some(ns) => {
            r.key.namespace.as_deref() == Some(ns)
                || written.namespace.as_deref() == Some(ns)
                || r.chain.iter().any(|&f| {
                    let dir = crate::load::parent_of(&model.repo.file(f).path);
                    model
                        .kustomize_dirs
                        .get(dir)
                        .is_some_and(|k| k.namespace.as_deref() == Some(ns))
                })
                || ns.contains(|c: char| "*+?[](){}|^$\\".contains(c))
        }
    };
    name_ok && namespace_ok
}

/// The `target` selectors of a `patches` list, with their nodes.
fn targets(yaml: &YamlFile, list: NodeId) -> Vec<(Selector, NodeId)> {
    yaml.items(list)
        .iter()
        .filter_map(|&item| {
            let node = yaml.lookup(item, &["target"])?;
            let value = yaml.value(node).ok()?;
            Some((Selector::from_value(&value), node))
        })
        .collect()
}

/// A finding about a kustomize-level patch that selects nothing of `rendered`.
fn kustomize_finding(
    model: &Model,
    (file, node): (FileId, NodeId),
    selector: &Selector,
    what: &str,
    rendered: &[&Rendered],
    layer: &Layer,
    patcher: ObjectKey,
) -> Draft {
    let yaml = &model.repo.file(file).yaml;
    let line = yaml.line_of(yaml.node(node).span.start);
    let mut message = format!(
        "the patch of {what} targets {}, which selects none of the {} objects the build renders: \
         kustomize drops the patch without an error and the change never reaches the cluster",
        selector.describe(),
        rendered.len(),
    );
    if let Some(nearest) = rendered.iter().min_by_key(|r| selector.distance(&r.key)) {
        message.push_str(&format!("; did you mean {}?", nearest.key));
        if nearest.key.name.contains("${") {
            message.push_str(
                " (a Flux Kustomization's postBuild substitutes `${…}` only after the build, so \
                 patches see the name as written)",
            );
        }
    }
    if rendered.iter().any(|r| r.key.is_helm_release()) {
        message.push_str(
            " (what a HelmRelease installs is not part of this build: patch it with the \
             HelmRelease's spec.postRenderers)",
        );
    }
    Finding::draft(
        (META.id, Severity::Warning),
        (model.repo.file(file).path.clone(), line),
        (layer.id.clone(), layer.cluster),
        patcher,
    )
    .summary(message)
    .remedy(Remedy::NoFix(NO_FIX.into()))
}

/// A kustomization file as the object of a finding: `Kustomization/<its directory>` of
/// `kustomize.config.k8s.io`.
fn kustomization_key(k: &KustomizeDir) -> ObjectKey {
    ObjectKey {
        api_version: Name::from("kustomize.config.k8s.io/v1beta1"),
        kind: Name::from("Kustomization"),
        namespace: None,
        name: Name::from(display_dir(&k.dir)),
    }
}

/// `spec.patches` of a Flux Kustomization against what the layer renders, in every variant.
fn layer_patches(model: &Model) -> Vec<Draft> {
    let mut findings = Vec::new();
    for (_, layer) in model.live_layers() {
        let Some(idx) = layer.object else { continue };
        let object = model.object(idx);
        let yaml = &model.repo.file(object.file).yaml;
        let Some(list) = yaml.lookup(object.root, &["spec", "patches"]) else {
            continue;
        };
        let known = !layer.variants.is_empty()
            && layer.variants.iter().all(|v| {
                v.error.is_none()
                    && v.unmodelled.is_empty()
                    && model.fully_known(&v.dir)
                    && model
                        .flux_components(layer, &v.dir)
                        .is_ok_and(|components| {
                            components.iter().all(|c| match &c.target {
                                RefTarget::Dir(d) => model.fully_known(d),
                                _ => false,
                            })
                        })
            });
        if !known {
            continue;
        }
        let rendered: Vec<&Rendered> = layer.inventory().map(|(_, r)| r).collect();
        for (selector, node) in targets(yaml, list) {
            if rendered.iter().any(|r| may_select(model, &selector, r)) {
                continue;
            }
            findings.push(kustomize_finding(
                model,
                (object.file, node),
                &selector,
                &format!("Flux Kustomization {}", layer.id),
                &rendered,
                layer,
                object.key.clone(),
            ));
        }
    }
    findings
}

/// `patches` of each kustomization file a live layer renders against that directory's build:
/// every build it takes part in, a Flux Kustomization's `spec.components` included when the
/// directory is that layer's path (Flux appends them to this kustomization, so its patches see
/// their objects). A patch is reported when it selects nothing in any of them.
fn kustomization_patches(model: &Model) -> Vec<Draft> {
    let mut findings = Vec::new();
    let mut renderer = Renderer::new(model);
    let mut dirs: Vec<&KustomizeDir> = model.kustomize_dirs.values().map(Box::as_ref).collect();
    dirs.sort_by(|a, b| a.dir.cmp(&b.dir));
    for k in dirs {
        let Some((layer_id, _)) = model.users_of_file(k.file).next() else {
            continue;
        };
        let yaml = &model.repo.file(k.file).yaml;
        let Some(list) = yaml.lookup(k.root, &["patches"]) else {
            continue;
        };
        if k.component || !model.fully_known(&k.dir) {
            continue;
        }
        // The component lists this directory is built with: none when a layer's path is
        // elsewhere (the directory is a resource of another build), its spec.components when
        // it is the layer's path.
        let mut builds: Vec<Vec<crate::model::ResourceRef>> = Vec::new();
        let mut known = true;
        for (layer, variant) in model.users_of_file(k.file) {
            let layer = model.layer(layer);
            let at_path = layer.variants[variant].dir == k.dir;
            let components = if at_path {
                match model.flux_components(layer, &k.dir) {
                    Ok(c) => c,
                    Err(_) => {
                        known = false;
                        break;
                    }
                }
            } else {
                Vec::new()
            };
            known &= components.iter().all(|c| match &c.target {
                RefTarget::Dir(d) => model.fully_known(d),
                _ => false,
            });
            let texts = |b: &[crate::model::ResourceRef]| {
                b.iter().map(|c| c.target.clone()).collect::<Vec<_>>()
            };
            if !builds.iter().any(|b| texts(b) == texts(&components)) {
                builds.push(components);
            }
        }
        if !known {
            continue;
        }
        let mut renders: Vec<Vec<Rendered>> = Vec::new();
        for components in &builds {
            match renderer.render_dir_with(&k.dir, components) {
                Ok(objects) => renders.push(objects),
                Err(_) => {
                    known = false;
                    break;
                }
            }
        }
        if !known || renders.is_empty() {
            continue;
        }
        for (selector, node) in targets(yaml, list) {
            if renders
                .iter()
                .any(|objects| objects.iter().any(|r| may_select(model, &selector, r)))
            {
                continue;
            }
            let rendered: Vec<&Rendered> = renders.iter().flatten().collect();
            findings.push(kustomize_finding(
                model,
                (k.file, node),
                &selector,
                &model.repo.file(k.file).path,
                &rendered,
                model.layer(layer_id),
                kustomization_key(k),
            ));
        }
    }
    findings
}
