//! FM001 flux-instance-in-gated-layer: a FluxInstance health-gated by the layer that applies it
//! (seed 000). Documentation: `rules/FM001.md`.

use std::collections::BTreeSet;

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset, FileOp, TextEdit};
use crate::load::parent_of;
use crate::model::{Layer, LayerId, Model, RefTarget, Rendered, Renderer, Variant};
use crate::parse::{NodeKind, YamlFile};

use super::{Finding, Fix, Rule, RuleMeta};

pub struct FluxInstanceInGatedLayer;

static META: RuleMeta = RuleMeta {
    id: "FM001",
    name: "flux-instance-in-gated-layer",
    summary: "a FluxInstance is health-gated by the Flux Kustomization that applies it",
    doc: include_str!("../../rules/FM001.md"),
};

const TRADEOFF: &str = "Health gating is lost for an object nobody consumes (the controllers \
and CRDs dependents need stay gated by the old layer); a bad FluxInstance now stalls only itself, \
and a corrective commit can always arrive.";

/// Name of the layer the instance moves to.
const NEW_LAYER: &str = "flux-instance";

impl Rule for FluxInstanceInGatedLayer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (layer_id, layer) in model.live_layers() {
            let Some(_) = layer.object else { continue };
            let gated: Vec<(&Variant, &Rendered)> = layer
                .inventory()
                .filter(|(_, r)| {
                    model.is_flux_instance(r.object) && gates_instance(model, layer, r)
                })
                .collect();
            if gated.is_empty() {
                continue;
            }
            let fix = plan_fix(model, layer_id, &gated);
            for (i, (variant, r)) in gated.iter().enumerate() {
                let mut finding = describe(model, layer_id, variant, r);
                match (&fix, i) {
                    (Ok(f), 0) => finding.fix = Some(f.clone()),
                    (Ok(_), _) => {
                        finding.no_fix_reason =
                            Some("fixed by the fix of this layer's first finding".into())
                    }
                    (Err(reason), _) => finding.no_fix_reason = Some(reason.clone()),
                }
                findings.push(finding);
            }
        }
        findings
    }
}

/// `wait: true`, or `healthChecks` naming the instance, its root Kustomization or root source.
fn gates_instance(model: &Model, layer: &Layer, r: &Rendered) -> bool {
    layer.gates(&r.key) || !naming_health_checks(model, layer, r).is_empty()
}

/// The `healthChecks` entries that gate on the instance or what it creates.
fn naming_health_checks<'l>(
    model: &Model,
    layer: &'l Layer,
    r: &Rendered,
) -> Vec<&'l crate::model::HealthCheck> {
    let source = model.instance_source(r.object);
    layer
        .health_checks
        .iter()
        .filter(|hc| {
            hc.matches(&r.key)
                || source.as_ref().is_some_and(|s| {
                    (hc.kind == "Kustomization" || hc.kind == s.kind)
                        && hc.name == s.name
                        && hc.namespace.as_ref().is_none_or(|ns| *ns == s.namespace)
                })
        })
        .collect()
}

fn is_dedicated(variant: &Variant, model: &Model) -> bool {
    variant
        .inventory
        .iter()
        .all(|r| model.is_flux_instance(r.object) || r.key.kind == "Namespace")
}

fn describe(model: &Model, layer_id: LayerId, variant: &Variant, r: &Rendered) -> Finding {
    let layer = model.layer(layer_id);
    let dependents = model.dependents(layer_id);
    let blocked: Vec<_> = dependents
        .iter()
        .map(|&d| model.layer(d).id.clone())
        .collect();
    // Objects whose health the instance's failure would hide behind the layer's red status:
    // everything with `wait: true`, only the other health-checked objects otherwise.
    let masked = variant
        .inventory
        .iter()
        .filter(|o| o.object != r.object && layer.gates(&o.key))
        .count();
    let source = model.instance_source(r.object);
    let reads_own_source = source.as_ref().is_some_and(|s| {
        *s == layer.source
            || model
                .dependencies(layer_id)
                .iter()
                .any(|&d| model.layer(d).source == *s)
    });
    let shared = !is_dedicated(variant, model) || !dependents.is_empty();
    let severity = if shared || reads_own_source {
        Severity::Error
    } else {
        Severity::Warning
    };
    let how = if layer.wait {
        "wait: true".to_string()
    } else {
        "its healthChecks".to_string()
    };
    let bindings: Vec<String> = variant
        .bindings
        .iter()
        .map(|(p, n)| format!("{p}={n}"))
        .collect();
    let mut message = format!("{} ({how}) health-gates {} {}", layer.id, r.key.kind, r.key);
    if !bindings.is_empty() {
        message.push_str(&format!(" [variant {}]", bindings.join(", ")));
    }
    if let Some(s) = &source {
        message.push_str(&format!(", which owns the root source {s}"));
        if reads_own_source {
            message.push_str(" that this chain reads: a bad instance change freezes delivery and the corrective commit cannot arrive (self-lock)");
        }
    }
    let blocks = if blocked.is_empty() {
        "blocks no other layer".to_string()
    } else {
        format!(
            "would leave {} DependencyNotReady",
            blocked
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    message.push_str(&format!(
        ". A failing instance {blocks} and masks the health of {masked} other object{}",
        if masked == 1 { "" } else { "s" }
    ));
    let (file, line) = match naming_health_checks(model, layer, r).first() {
        // With `wait: false` the gate is the healthChecks entry itself.
        Some(hc) if !layer.wait => {
            let f = model
                .repo
                .file(model.object(layer.object.expect("checked")).file);
            (
                f.path.clone(),
                f.yaml.line_of(f.yaml.node(hc.item).span.start),
            )
        }
        _ => entry_location(model, r),
    };
    Finding {
        rule: META.id,
        severity,
        message,
        file,
        line,
        layer: layer.id.clone(),
        object: r.key.clone(),
        blocked_layers: blocked,
        masked_objects: masked,
        fix: None,
        no_fix_reason: None,
    }
}

/// The `resources` entry that put the object in the layer, or the document itself.
fn entry_location(model: &Model, r: &Rendered) -> (String, usize) {
    if let Some((file, item)) = bringing_entry(model, r, 0) {
        let f = model.repo.file(file);
        return (f.path.clone(), f.yaml.line_of(f.yaml.node(item).span.start));
    }
    let obj = model.object(r.object);
    (model.repo.file(obj.file).path.clone(), obj.line)
}

/// The entry in kustomization `r.chain[k]` that leads to the object: (file, item node).
fn bringing_entry(model: &Model, r: &Rendered, k: usize) -> Option<(usize, usize)> {
    let file = *r.chain.get(k)?;
    let dir = model
        .kustomize_dirs
        .get(parent_of(&model.repo.file(file).path))?;
    let next_dir = r
        .chain
        .get(k + 1)
        .map(|&f| parent_of(&model.repo.file(f).path).to_string());
    let obj_file = &model.repo.file(model.object(r.object).file).path;
    dir.resources
        .iter()
        .find_map(|res| match (&res.target, &next_dir) {
            (RefTarget::Dir(d), Some(next)) if d == next => Some((file, res.item)),
            (RefTarget::File(p), None) if p == obj_file => Some((file, res.item)),
            _ => None,
        })
}

fn plan_fix(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    let obj_idx = layer
        .object
        .ok_or("the layer is created by the operator; nothing to edit")?;
    let obj = model.object(obj_idx);
    let file = model.repo.file(obj.file);
    if file.error.is_some() {
        return Err(format!(
            "{} does not parse to its end; fluxmend does not edit it",
            file.path
        ));
    }
    let mut changes = Changeset::default();
    // healthChecks entries naming the instance go in every case.
    let mut dropped = BTreeSet::new();
    for (_, r) in gated {
        for hc in naming_health_checks(model, layer, r) {
            dropped.insert(hc.item);
        }
    }
    if !layer.wait {
        let list = file
            .yaml
            .lookup(obj.root, &["spec", "healthChecks"])
            .ok_or("healthChecks not found")?;
        remove_items(&file.yaml, list, &dropped, &file.path, &mut changes)?;
        return Ok(Fix {
            description: format!(
                "drop the healthChecks entries of {} that gate the FluxInstance",
                layer.id
            ),
            tradeoff: TRADEOFF,
            changes,
        });
    }
    let dedicated =
        gated.iter().all(|(v, _)| is_dedicated(v, model)) && model.dependents(layer_id).is_empty();
    if dedicated {
        let wait = file
            .yaml
            .lookup(obj.root, &["spec", "wait"])
            .ok_or("spec.wait not found")?;
        changes.edit(&file.path, edit::replace_node(&file.yaml, wait, "false"));
        if let Some(list) = file.yaml.lookup(obj.root, &["spec", "healthChecks"]) {
            remove_items(&file.yaml, list, &dropped, &file.path, &mut changes)?;
        }
        return Ok(Fix {
            description: format!(
                "set wait: false on {}, which is dedicated to the FluxInstance",
                layer.id
            ),
            tradeoff: TRADEOFF,
            changes,
        });
    }
    split_out(model, layer, gated, changes)
}

fn remove_items(
    yaml: &YamlFile,
    list: usize,
    items: &BTreeSet<usize>,
    path: &str,
    changes: &mut Changeset,
) -> Result<(), String> {
    if !items.is_empty() && items.len() == yaml.items(list).len() {
        // Every entry goes: the list itself is removed by emptying it.
        let first = *items.iter().next().expect("non-empty");
        let e = edit::remove_item(yaml, list, first).map_err(|e| e.to_string())?;
        changes.edit(path, e);
        return Ok(());
    }
    for &item in items {
        changes.edit(
            path,
            edit::remove_item(yaml, list, item).map_err(|e| e.to_string())?,
        );
    }
    Ok(())
}

/// Move the instance into a layer of its own (the seed's designed fix).
fn split_out(
    model: &Model,
    layer: &Layer,
    gated: &[(&Variant, &Rendered)],
    mut changes: Changeset,
) -> Result<Fix, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let mut subpaths = BTreeSet::new();
    let mut renderer = Renderer::new(model);
    for (variant, r) in gated {
        if variant.generated {
            return Err(format!(
                "{} has no kustomization file (Flux generates one): a new folder there would be applied by both layers",
                display(&variant.dir)
            ));
        }
        subpaths.insert(isolate_instance(
            model,
            &mut renderer,
            variant,
            r,
            &mut changes,
        )?);
    }
    if subpaths.len() != 1 {
        return Err(format!(
            "the instance sits in different folders per variant ({}); one path cannot cover them",
            subpaths.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let subpath = subpaths.into_iter().next().expect("one");
    let name = free_name(model, layer);
    let path_text = format!("{}/{}", layer.path.trim_end_matches('/'), subpath);
    let doc = new_layer_document(&file.yaml, obj.root, &name, &path_text, layer);
    register(model, layer, &name, &doc, &mut changes)?;
    Ok(Fix {
        description: format!(
            "move the FluxInstance out of {} into its own Kustomization {name} (path {path_text}, dependsOn {}, wait: false)",
            layer.id, layer.id.name
        ),
        tradeoff: TRADEOFF,
        changes,
    })
}

/// Make sure the instance has a folder of its own below the variant directory, and stop the old
/// layer from applying it; returns that folder relative to the variant directory.
fn isolate_instance(
    model: &Model,
    renderer: &mut Renderer,
    variant: &Variant,
    r: &Rendered,
    changes: &mut Changeset,
) -> Result<String, String> {
    let only_instance = |renderer: &mut Renderer, dir: &str| {
        renderer
            .render_dir(dir)
            .as_ref()
            .as_ref()
            .is_ok_and(|objs| objs.len() == 1 && objs[0].object == r.object)
    };
    // The outermost folder in the chain that renders to the instance alone.
    for k in 1..r.chain.len() {
        let dir = parent_of(&model.repo.file(r.chain[k]).path).to_string();
        if only_instance(renderer, &dir) {
            let (file, item) = bringing_entry(model, r, k - 1)
                .ok_or("cannot find the resources entry that lists the instance")?;
            let sub = relative_below(&variant.dir, &dir).ok_or_else(|| {
                format!(
                    "{dir} is not below the layer path {}",
                    display(&variant.dir)
                )
            })?;
            remove_entry(model, file, item, changes)?;
            return Ok(sub);
        }
    }
    // The instance is a file (or a document of one) listed directly: give it a folder.
    let (list_file, item) = bringing_entry(model, r, r.chain.len().saturating_sub(1))
        .ok_or("the instance is not listed by a kustomization")?;
    let lister_dir = parent_of(&model.repo.file(list_file).path).to_string();
    let sub_of_lister = relative_below(&variant.dir, &lister_dir)
        .ok_or("the listing kustomization is not below the layer path")?;
    let folder = if sub_of_lister.is_empty() {
        NEW_LAYER.to_string()
    } else {
        format!("{sub_of_lister}/{NEW_LAYER}")
    };
    let folder_path = format!("{}{folder}", prefix(&variant.dir));
    if model.repo.is_dir(&folder_path) || model.repo.is_file(&folder_path) {
        return Err(format!("{folder_path} already exists"));
    }
    let obj = model.object(r.object);
    let src = model.repo.file(obj.file);
    if src.error.is_some() {
        return Err(format!("{} does not parse to its end", src.path));
    }
    let name = src
        .path
        .rsplit('/')
        .next()
        .unwrap_or("flux-instance.yaml")
        .to_string();
    let eol = src.yaml.line_ending.as_str();
    let docs_with_content = src.yaml.docs.len();
    let instance_text;
    if docs_with_content == 1 {
        instance_text = format!(
            "{}{}",
            if src.yaml.bom { "\u{feff}" } else { "" },
            src.yaml.text
        );
        changes.delete(&src.path);
        remove_entry(model, list_file, item, changes)?;
    } else {
        let (start, end) = edit::document_region(&src.yaml, obj.doc);
        let region = &src.yaml.text[start..end];
        let body = region
            .strip_prefix("---")
            .map(|b| b.trim_start_matches(['\r', '\n']))
            .unwrap_or(region);
        instance_text = format!("---{eol}{body}");
        changes.edit(
            &src.path,
            TextEdit {
                start,
                end,
                text: String::new(),
            },
        );
    }
    changes.create(&format!("{folder_path}/{name}"), instance_text);
    changes.create(
        &format!("{folder_path}/kustomization.yaml"),
        format!("apiVersion: kustomize.config.k8s.io/v1beta1{eol}kind: Kustomization{eol}resources:{eol}  - {name}{eol}"),
    );
    Ok(folder)
}

fn remove_entry(
    model: &Model,
    file: usize,
    item: usize,
    changes: &mut Changeset,
) -> Result<(), String> {
    let f = model.repo.file(file);
    if f.error.is_some() {
        return Err(format!("{} does not parse to its end", f.path));
    }
    let k = model
        .kustomize_dirs
        .get(parent_of(&f.path))
        .ok_or("not a kustomization")?;
    let list = ["resources", "bases"]
        .iter()
        .find_map(|key| {
            f.yaml
                .lookup(k.root, &[key])
                .filter(|&l| f.yaml.items(l).contains(&item))
        })
        .ok_or("entry not found in resources")?;
    changes.edit(
        &f.path,
        edit::remove_item(&f.yaml, list, item).map_err(|e| e.to_string())?,
    );
    Ok(())
}

fn relative_below(base: &str, dir: &str) -> Option<String> {
    if base.is_empty() {
        return Some(dir.to_string());
    }
    if dir == base {
        return Some(String::new());
    }
    dir.strip_prefix(base)?
        .strip_prefix('/')
        .map(str::to_string)
}

fn prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

fn display(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}

/// `flux-instance`, or `flux-instance-2`, … when a layer of that name exists in the namespace.
fn free_name(model: &Model, layer: &Layer) -> String {
    let taken = |n: &str| {
        model.layers.iter().any(|l| {
            l.cluster == layer.cluster && l.id.namespace == layer.id.namespace && l.id.name == n
        })
    };
    std::iter::once(NEW_LAYER.to_string())
        .chain((2..).map(|i| format!("{NEW_LAYER}-{i}")))
        .find(|n| !taken(n))
        .expect("an unbounded sequence has a free name")
}

/// The new Kustomization document, in the old document's indentation, line ending and
/// `apiVersion`, with the old layer's settings copied verbatim.
fn new_layer_document(
    yaml: &YamlFile,
    root: usize,
    name: &str,
    path: &str,
    layer: &Layer,
) -> String {
    let eol = yaml.line_ending.as_str();
    let text = &yaml.text;
    let spec = yaml.lookup(root, &["spec"]);
    let indent = spec
        .and_then(|s| match &yaml.node(s).kind {
            NodeKind::Mapping {
                entries,
                flow: false,
            } => entries.first().map(|&(k, _)| {
                let start = yaml.node(k).span.start;
                " ".repeat(start - yaml.line_start(start))
            }),
            _ => None,
        })
        .unwrap_or_else(|| "  ".into());
    let api = yaml
        .lookup(root, &["apiVersion"])
        .and_then(|n| yaml.scalar(n))
        .unwrap_or("kustomize.toolkit.fluxcd.io/v1");
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(eol);
    };
    line(&format!("apiVersion: {api}"));
    line("kind: Kustomization");
    line("metadata:");
    line(&format!("{indent}name: {}", edit::scalar_text(name)));
    if let Some(ns) = yaml
        .lookup(root, &["metadata", "namespace"])
        .and_then(|n| yaml.scalar(n))
    {
        line(&format!("{indent}namespace: {}", edit::scalar_text(ns)));
    }
    line("spec:");
    line(&format!(
        "{indent}# Split out by fluxmend FM001: the FluxInstance must not be health-gated by {}.",
        layer.id.name
    ));
    let copied = [
        "interval",
        "retryInterval",
        "timeout",
        "sourceRef",
        "decryption",
        "postBuild",
    ];
    for key in ["interval", "retryInterval", "timeout"] {
        copy_entry(yaml, spec, key, &indent, &mut line, text);
    }
    line(&format!("{indent}path: {}", edit::scalar_text(path)));
    for key in &copied[3..] {
        copy_entry(yaml, spec, key, &indent, &mut line, text);
    }
    line(&format!("{indent}dependsOn:"));
    line(&format!(
        "{indent}{indent}- name: {}",
        edit::scalar_text(&layer.id.name)
    ));
    line(&format!("{indent}wait: false"));
    line(&format!("{indent}prune: true"));
    out
}

/// Copy `key: value` of the spec mapping verbatim (its lines keep their original indentation,
/// which is the new document's too).
fn copy_entry(
    yaml: &YamlFile,
    spec: Option<usize>,
    key: &str,
    indent: &str,
    line: &mut impl FnMut(&str),
    text: &str,
) {
    let Some((k, v)) = spec.and_then(|s| yaml.entry(s, key)) else {
        return;
    };
    let body = &text[yaml.node(k).span.start..yaml.node(v).span.end.max(yaml.node(k).span.end)];
    let body = body.replace("\r\n", "\n");
    let mut lines = body.split('\n');
    if let Some(first) = lines.next() {
        line(&format!("{indent}{first}"));
    }
    for l in lines {
        line(l);
    }
}

/// Register the new layer beside the old one, in the same style.
fn register(
    model: &Model,
    layer: &Layer,
    name: &str,
    doc: &str,
    changes: &mut Changeset,
) -> Result<(), String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let eol = file.yaml.line_ending.as_str();
    if file.yaml.docs.len() > 1 {
        // A new document right after the old layer's.
        let (_, end) = edit::document_region(&file.yaml, obj.doc);
        let lead = if file.yaml.text[..end].ends_with('\n') {
            ""
        } else {
            eol
        };
        changes.edit(
            &file.path,
            TextEdit {
                start: end,
                end,
                text: format!("{lead}---{eol}{doc}"),
            },
        );
        return Ok(());
    }
    let dir = parent_of(&file.path);
    let base = file.path.rsplit('/').next().unwrap_or("");
    let new_base = if base.contains(&layer.id.name) {
        base.replacen(&layer.id.name, name, 1)
    } else {
        format!("{name}.yaml")
    };
    let new_path = format!("{}{new_base}", prefix(dir));
    if model.repo.is_file(&new_path) || changes.files.contains_key(&new_path) {
        return Err(format!("{new_path} already exists"));
    }
    let starts_with_marker = file.yaml.text.starts_with("---");
    changes.create(
        &new_path,
        format!(
            "{}{doc}",
            if starts_with_marker {
                format!("---{eol}")
            } else {
                String::new()
            }
        ),
    );
    if let Some(k) = model.kustomize_dirs.get(dir) {
        let kfile = model.repo.file(k.file);
        let entry = k
            .resources
            .iter()
            .find(|r| r.target == RefTarget::File(file.path.clone()))
            .ok_or_else(|| {
                format!(
                    "{} does not list {} in resources; cannot register the new layer beside it",
                    kfile.path, base
                )
            })?;
        let list = ["resources", "bases"]
            .iter()
            .find_map(|key| {
                kfile
                    .yaml
                    .lookup(k.root, &[key])
                    .filter(|&l| kfile.yaml.items(l).contains(&entry.item))
            })
            .ok_or("resources list not found")?;
        let e = edit::insert_item(
            &kfile.yaml,
            list,
            Some(entry.item),
            &edit::scalar_text(&new_base),
        )
        .map_err(|e| e.to_string())?;
        if matches!(
            changes.files.get(&kfile.path),
            Some(FileOp::Create(_) | FileOp::Delete)
        ) {
            return Err(format!("{} is already replaced by this fix", kfile.path));
        }
        changes.edit(&kfile.path, e);
    }
    Ok(())
}
