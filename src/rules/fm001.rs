//! FM001 flux-instance-in-gated-layer: a FluxInstance health-gated by the layer that applies it
//! (devantler-tech/platform#3006). Documentation: `rules/FM001.md`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset, TextEdit};
use crate::load::{FileId, parent_of};
use crate::model::{Layer, LayerId, Model, Rendered, Renderer, SourceRef, Variant, display_dir};
use crate::parse::{NodeId, NodeKind, YamlFile};

use super::disposable::Analysis;
use super::layer_split::{
    CARRIED, bringing_entry, built_elsewhere, copy_entry_nodes, drop_spec_entries, entry_location,
    first_free, free_name, generated_cover, layer_document_head, needs_protection,
    not_carried_patches, path_text, prefix, protect_first, register, relative_below, remove_items,
    remove_resource_entry, second_phase, spec_indent,
};
use super::{Draft, Finding, Fix, Rule, RuleMeta, report_text};

pub struct FluxInstanceInGatedLayer;

static META: RuleMeta = RuleMeta {
    id: "FM001",
    name: "flux-instance-in-gated-layer",
    summary: "a FluxInstance is health-gated by the Flux Kustomization that applies it",
    doc: include_str!("../../rules/FM001.md"),
};

static TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "move"));

/// Name of the layer the instance moves to.
const NEW_LAYER: &str = "flux-instance";

impl Rule for FluxInstanceInGatedLayer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        let mut analysis = Analysis::new(model);
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
            let own = own_layer(model, &mut analysis, layer_id);
            let fix = plan_fix(model, layer_id, &gated, &own);
            let found = gated
                .iter()
                .map(|(variant, r)| describe(model, layer_id, variant, r, own.is_ok()))
                .collect();
            findings.extend(Draft::share(found, (layer_id, 0), &fix));
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

/// Why a `wait: true` layer exists for its FluxInstances (see `rules/FM001.md`, "The instance's
/// own layer"): every other object it applies serves them. It runs nothing of its own (no pod
/// template, no HelmRelease of another chart, no Flux Kustomization: what those deliver is not
/// in the repository), and no layer outside uses it except layers that depend on this one —
/// those get a `healthChecks` entry for it, so they wait for exactly what they use, as before.
struct OwnLayer {
    /// The objects its dependents use, with the layers that use them.
    checks: Vec<(Rendered, Vec<LayerId>)>,
    /// Every other object it applies, as `Kind/namespace/name`.
    companions: Vec<String>,
}

/// The layer as the instance's own, or why it is not (the reason names the object).
fn own_layer(
    model: &Model,
    analysis: &mut Analysis,
    layer_id: LayerId,
) -> Result<OwnLayer, String> {
    let layer = model.layer(layer_id);
    let dependents: BTreeSet<LayerId> = model.dependents(layer_id).into_iter().collect();
    let mut others: Vec<&Rendered> = Vec::new();
    for variant in &layer.variants {
        let products: Vec<SourceRef> = variant
            .inventory
            .iter()
            .filter(|r| model.is_flux_instance(r.object))
            .filter_map(|r| model.instance_source(r.object))
            .collect();
        others.extend(
            variant
                .inventory
                .iter()
                .filter(|r| !model.is_flux_instance(r.object) && !is_product(&products, r)),
        );
    }
    // What an object is reads its own document; who uses it searches the cluster: the cheap
    // question first.
    if let Some((r, what)) = others
        .iter()
        .find_map(|r| runs_its_own(model, r).map(|what| (r, what)))
    {
        return Err(format!("{} {what}", r.key));
    }
    let mut checks: Vec<(Rendered, Vec<LayerId>)> = Vec::new();
    let mut companions = BTreeSet::new();
    for r in others {
        let users = analysis.users(layer_id, r);
        if let Some(&other) = users.iter().find(|u| !dependents.contains(u)) {
            return Err(format!(
                "{} is used by {}, which does not depend on {}",
                r.key,
                model.layer(other).id,
                layer.id
            ));
        }
        companions.insert(r.key.to_string());
        if !users.is_empty() && !checks.iter().any(|(c, _)| c.key == r.key) {
            checks.push((r.clone(), users.into_iter().collect()));
        }
    }
    Ok(OwnLayer {
        checks,
        companions: companions.into_iter().collect(),
    })
}

/// Whether `r` is what an instance's sync creates (its root source, its root Kustomization):
/// the layer applies the instance's own object, which the instance owns.
fn is_product(products: &[SourceRef], r: &Rendered) -> bool {
    let ns = r.key.namespace.as_deref().unwrap_or("default");
    products.iter().any(|s| {
        r.key.name.as_str() == s.name
            && ns == s.namespace
            && ((r.key.group() == "source.toolkit.fluxcd.io" && r.key.kind.as_str() == s.kind)
                || r.key.is_flux_kustomization())
    })
}

/// What an object delivers that the repository does not show, if anything: pods it runs (its
/// image serves whatever it serves, webhooks and APIs included), a chart it installs (CRDs,
/// Services), another tree it applies.
fn runs_its_own(model: &Model, r: &Rendered) -> Option<&'static str> {
    match (r.key.group(), r.key.kind.as_str()) {
        ("helm.toolkit.fluxcd.io", "HelmRelease") => {
            return Some("installs a chart that is not the instance's");
        }
        ("kustomize.toolkit.fluxcd.io", "Kustomization") => {
            return Some("applies a tree of its own");
        }
        _ => {}
    }
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let pods = [
        ["spec", "containers"].as_slice(),
        ["spec", "template", "spec", "containers"].as_slice(),
        [
            "spec",
            "jobTemplate",
            "spec",
            "template",
            "spec",
            "containers",
        ]
        .as_slice(),
    ];
    pods.iter()
        .any(|p| yaml.lookup(obj.root, p).is_some())
        .then_some("runs pods")
}

fn describe(
    model: &Model,
    layer_id: LayerId,
    variant: &Variant,
    r: &Rendered,
    own_layer: bool,
) -> Draft {
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
    // An instance applied to another cluster (kubeConfig) owns that cluster's root source: a
    // bad change there never stops this cluster's delivery.
    let reads_own_source = !layer.remote
        && source.as_ref().is_some_and(|s| {
            *s == layer.source
                || model
                    .dependencies(layer_id)
                    .iter()
                    .any(|&d| model.layer(d).source == *s)
        });
    let shared = !own_layer || !dependents.is_empty();
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
    let mut summary = format!("{} ({how}) health-gates {}", layer.id, r.key);
    if !bindings.is_empty() {
        summary.push_str(&format!(" [variant {}]", bindings.join(", ")));
    }
    if let Some(s) = &source {
        summary.push_str(&format!(", which owns the root source {s}"));
        if layer.remote {
            summary.push_str(
                " of the cluster the layer's kubeConfig reaches (not this one, whose delivery it \
                 cannot lock)",
            );
        }
        // Whether a correction could still arrive is the failure model's answer, the one
        // `simulate --fail` gives: a failing instance alone is corrected through the layer,
        // which applies before its health check; a broken root source is not.
        let locked = crate::rollout::failure::correction_of(
            model,
            layer.cluster,
            &crate::rollout::failure::Target::source(s),
        )
        .is_some_and(|c| !c.can_arrive);
        if reads_own_source && locked {
            summary.push_str(&format!(
                " that this chain reads: a bad instance change that breaks that source stops every new revision, the correcting one included (self-lock; `fluxmend simulate --fail {s}` shows it)"
            ));
        } else if reads_own_source {
            summary.push_str(" that this chain reads");
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
    summary.push('.');
    let details = vec![format!(
        "A failing instance {blocks} and masks the health of {masked} other object{}",
        if masked == 1 { "" } else { "s" }
    )];
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
    Finding::draft(
        (META.id, severity),
        (file, line),
        (layer.id.clone(), layer.cluster),
        r.key.clone(),
    )
    .summary(summary)
    .details(details)
    .blast(blocked, masked)
}

fn plan_fix(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    own: &Result<OwnLayer, String>,
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
        drop_spec_entries(
            &file.yaml,
            obj.root,
            "healthChecks",
            &dropped,
            &file.path,
            &mut changes,
        )?;
        return Ok(Fix::titled(
            format!(
                "drop the FluxInstance's healthChecks entries from {}",
                layer.id.name
            ),
            format!(
                "drop the healthChecks entries of {} that gate the FluxInstance",
                layer.id
            ),
            TRADEOFF.as_str(),
            changes,
        ));
    }
    let not_own = match own {
        Ok(own) => return in_place(model, layer, own, &dropped, changes),
        Err(why) => why,
    };
    // Why the layer keeps `wait: true` and the instance moves instead: the reviewer's first
    // question.
    let why = |s: String| format!("{s} (not in place: {not_own})");
    split(model, layer_id, gated, changes)
        .map(|mut fix| {
            fix.description = why(fix.description);
            fix
        })
        .map_err(why)
}

/// Move the instance into a layer of its own, in two phases when the old layer prunes.
fn split(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    changes: Changeset,
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    // Moving the instance off a layer that prunes: the old layer reconciles the move first (the
    // new layer depends on it) and would prune the instance, and flux-operator would uninstall
    // Flux. So the instance is protected where it is first, and moved once that is applied.
    uncarried_settings(model, layer)?;
    let unprotected = needs_protection(model, layer, gated.iter().map(|(_, r)| *r), |_| false);
    if !unprotected.is_empty() {
        return protect_first(
            model,
            layer,
            &unprotected,
            "deleting a FluxInstance makes flux-operator uninstall Flux",
            TRADEOFF.as_str(),
            STAYS,
        );
    }
    let mut fix = split_out(model, layer_id, gated, changes)?;
    if layer.prune {
        second_phase(&mut fix, layer, STAYS);
    }
    Ok(fix)
}

/// `wait: false` on the instance's own layer, in place: nothing moves, nothing is pruned. The
/// `healthChecks` entries naming the instance go; the objects its dependents use get one each.
fn in_place(
    model: &Model,
    layer: &Layer,
    own: &OwnLayer,
    dropped: &BTreeSet<NodeId>,
    mut changes: Changeset,
) -> Result<Fix, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let spec = yaml.lookup(obj.root, &["spec"]).ok_or("spec not found")?;
    let wait = yaml
        .lookup(spec, &["wait"])
        .ok_or("wait: true is not written in the layer's own document (a patch sets it)")?;
    changes.edit(&file.path, edit::replace_node(yaml, wait, "false"));
    // Listed entries were ignored while `wait` was true; from now on Flux reads them.
    let kept = layer
        .health_checks
        .iter()
        .filter(|hc| !dropped.contains(&hc.item))
        .count();
    let new: Vec<&Rendered> = own
        .checks
        .iter()
        .map(|(r, _)| r)
        .filter(|r| {
            !layer
                .health_checks
                .iter()
                .any(|hc| !dropped.contains(&hc.item) && hc.matches(&r.key))
        })
        .collect();
    if let Some(r) = new.iter().find(|r| r.key.to_string().contains("${")) {
        return Err(format!(
            "{} is named through a postBuild variable; a healthChecks entry for it would not be substituted",
            r.key
        ));
    }
    match yaml.entry(spec, "healthChecks") {
        Some((_, list)) if !new.is_empty() => {
            if kept == 0 {
                return Err(
                    "the healthChecks list would be replaced as a whole; fluxmend does not rewrite it"
                        .into(),
                );
            }
            remove_items(yaml, list, dropped, &file.path, &mut changes)?;
            for r in &new {
                changes.edit(
                    &file.path,
                    edit::insert_item(yaml, list, None, &check_flow_text(r))
                        .map_err(|e| format!("{}: {e}", file.path))?,
                );
            }
        }
        Some(_) => drop_spec_entries(
            yaml,
            obj.root,
            "healthChecks",
            dropped,
            &file.path,
            &mut changes,
        )?,
        None if !new.is_empty() => {
            let lines = if matches!(yaml.node(spec).kind, NodeKind::Mapping { flow: true, .. }) {
                let items: Vec<String> = new.iter().map(|r| check_flow_text(r)).collect();
                vec![format!("healthChecks: [{}]", items.join(", "))]
            } else {
                let u = spec_indent(yaml, obj.root);
                let mut lines = vec!["healthChecks:".to_string()];
                for r in &new {
                    let mut first = true;
                    for (k, v) in check_fields(r) {
                        let lead = if first { "- " } else { "  " };
                        first = false;
                        lines.push(format!("{u}{lead}{k}: {}", edit::scalar_text(&v)));
                    }
                }
                lines
            };
            changes.edit(
                &file.path,
                edit::insert_entry(yaml, spec, &lines)
                    .map_err(|e| format!("{}: {e}", file.path))?,
            );
        }
        None => {}
    }
    let mut description = format!(
        "set wait: false on {}, which exists for the FluxInstance",
        layer.id
    );
    if !own.companions.is_empty() {
        description.push_str(&format!(
            " (nothing else it applies runs pods, installs a chart or is used by a layer that does not depend on it: {})",
            own.companions.join(", ")
        ));
    }
    if !own.checks.is_empty() {
        let used: Vec<String> = own
            .checks
            .iter()
            .map(|(r, users)| {
                let by: Vec<String> = users
                    .iter()
                    .map(|&u| model.layer(u).id.to_string())
                    .collect();
                format!("{} (used by {})", r.key, by.join(", "))
            })
            .collect();
        description.push_str(&format!(
            "; healthChecks for what the layers that depend on it use, so they still wait for it: {}",
            used.join(", ")
        ));
    }
    if kept > 0 {
        description.push_str(&format!(
            "; its other healthChecks entries ({kept}), ignored while wait was true, are read from now on"
        ));
    }
    Ok(Fix::titled(
        format!("set wait: false on {}", layer.id.name),
        description,
        OWN_LAYER_TRADEOFF.as_str(),
        changes,
    ))
}

/// The fields of a `healthChecks` entry for `r` as it is applied (namespace after
/// `targetNamespace`: Flux reads the entry as written, with no default).
fn check_fields(r: &Rendered) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("apiVersion", r.key.api_version.to_string()),
        ("kind", r.key.kind.to_string()),
        ("name", r.key.name.to_string()),
    ];
    if let Some(ns) = &r.key.namespace {
        out.push(("namespace", ns.to_string()));
    }
    out
}

/// A `healthChecks` entry as one flow mapping.
fn check_flow_text(r: &Rendered) -> String {
    let fields: Vec<String> = check_fields(r)
        .into_iter()
        .map(|(k, v)| format!("{k}: {}", edit::scalar_text(&v)))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

static OWN_LAYER_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "own-layer"));

/// What stays after the move.
const STAYS: &str = "the instance keeps kustomize.toolkit.fluxcd.io/prune: disabled for good: removing it from Git, or deleting the layer that applies it, must never make flux-operator uninstall Flux";

/// Move the instance into a layer of its own (the fix designed in devantler-tech/platform#3006).
fn split_out(
    model: &Model,
    layer_id: LayerId,
    gated: &[(&Variant, &Rendered)],
    mut changes: Changeset,
) -> Result<Fix, String> {
    let layer = model.layer(layer_id);
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let mut folders = Vec::new();
    let mut renderer = Renderer::new(model);
    for &(variant, r) in gated {
        let vi = layer
            .variants
            .iter()
            .position(|v| std::ptr::eq(v, variant))
            .expect("a variant of this layer");
        let folder = isolate_instance(model, &mut renderer, layer_id, vi, r, &mut changes)?;
        folders.push((variant, folder));
    }
    let name = free_name(model, layer, NEW_LAYER, &[]);
    let path_text = new_layer_path(layer, &folders)?;
    let doc = new_layer_document(&file.yaml, obj.root, &name, &path_text, layer);
    register(model, layer, &[(name.clone(), doc)], &mut changes)?;
    let not_carried = not_carried_patches(model, layer, &name);
    Ok(Fix::titled(
        format!("move FluxInstance out of {}", layer.id.name),
        format!(
            "move the FluxInstance out of {} into its own Kustomization {name} (path {path_text}, dependsOn {}, wait: false){not_carried}",
            layer.id, layer.id.name
        ),
        TRADEOFF.as_str(),
        changes,
    ))
}

/// The new layer's `spec.path`: the old path and the folder's place below it when every variant
/// keeps the instance below its directory (placeholders stay), else the one folder itself.
fn new_layer_path(layer: &Layer, folders: &[(&Variant, String)]) -> Result<String, String> {
    let below: BTreeSet<Option<String>> = folders
        .iter()
        .map(|(v, folder)| relative_below(&v.dir, folder).filter(|sub| !sub.is_empty()))
        .collect();
    match (below.into_iter().collect::<Vec<_>>().as_slice(), folders) {
        ([Some(sub)], _) => Ok(format!("{}/{sub}", layer.path.trim_end_matches('/'))),
        (_, [(_, folder)]) => path_text(layer, folder),
        _ => Err(format!(
            "the instance sits in different folders per variant ({}); one path cannot cover them",
            folders
                .iter()
                .map(|(_, f)| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Make sure the instance has a folder of its own, and stop the old layer from applying it;
/// returns that folder. It is the outermost folder on the way that renders the instance alone,
/// else a new one: beside the file that listed the instance, or, where Flux generated the
/// layer's kustomization and would pick up any folder below it, beside the layer's directory.
fn isolate_instance(
    model: &Model,
    renderer: &mut Renderer,
    layer_id: LayerId,
    vi: usize,
    r: &Rendered,
    changes: &mut Changeset,
) -> Result<String, String> {
    let variant = &model.layer(layer_id).variants[vi];
    // Editing a file another layer builds from would change that layer too.
    let shared = |files: &[FileId]| match built_elsewhere(
        model,
        layer_id,
        vi,
        files.iter().copied(),
    ) {
        Some((f, lid, i)) => Err(format!(
            "{} is also built by {} ({}): moving the instance out of it would change that layer too",
            model.repo.file(f).path,
            model.layer(lid).id,
            display_dir(&model.layer(lid).variants[i].dir)
        )),
        None => Ok(()),
    };
    let only_instance = |renderer: &mut Renderer, dir: &str| {
        renderer
            .render_dir(dir)
            .as_ref()
            .as_ref()
            .is_ok_and(|objs| objs.len() == 1 && objs[0].object == r.object)
    };
    for k in 1..r.chain.len() {
        let dir = parent_of(&model.repo.file(r.chain[k]).path).to_string();
        if only_instance(renderer, &dir) {
            let (file, item) = bringing_entry(model, r, k - 1)
                .ok_or("cannot find the resources entry that lists the instance")?;
            shared(&[file])?;
            remove_resource_entry(model, file, item, changes)?;
            return Ok(dir);
        }
    }
    let source = model.object(r.object).file;
    shared(&[source])?;
    if r.chain.is_empty() && variant.generated {
        let folder = beside_generated(model, &variant.dir)?;
        move_instance(model, r, &folder, None, changes)?;
        return Ok(folder);
    }
    // The instance is a file (or a document of one) listed directly: give it a folder.
    let (list_file, item) = bringing_entry(model, r, r.chain.len().saturating_sub(1))
        .ok_or("the instance is not listed by a kustomization")?;
    shared(&[list_file])?;
    let folder = format!(
        "{}{NEW_LAYER}",
        prefix(parent_of(&model.repo.file(list_file).path))
    );
    if model.repo.is_dir(&folder) || model.repo.is_file(&folder) {
        return Err(format!("{folder} already exists"));
    }
    move_instance(model, r, &folder, Some((list_file, item)), changes)?;
    Ok(folder)
}

/// A new folder for the instance beside `dir`, whose kustomization Flux generates: anything
/// below `dir` would still be applied by the old layer.
fn beside_generated(model: &Model, dir: &str) -> Result<String, String> {
    if dir.is_empty() {
        return Err(
            "the layer's path is its source's root and has no kustomization file (Flux generates one): every folder of the source is applied by it".into(),
        );
    }
    let folder = first_free(&format!("{}{NEW_LAYER}", prefix(parent_of(dir))), |d| {
        model.repo.is_dir(d) || model.repo.is_file(d)
    });
    if let Some(by) = generated_cover(model, &folder) {
        return Err(format!(
            "{} has no kustomization file (Flux generates one), and a new folder {folder} beside it would be picked up by the generated kustomization of {by}",
            display_dir(dir)
        ));
    }
    Ok(folder)
}

/// Move the instance's document (its whole file when it is alone there) into `folder` with a
/// kustomization listing it; `entry` is the `resources` entry that listed the file, if any.
fn move_instance(
    model: &Model,
    r: &Rendered,
    folder: &str,
    entry: Option<(FileId, NodeId)>,
    changes: &mut Changeset,
) -> Result<(), String> {
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
    let instance_text;
    if src.yaml.docs.len() == 1 {
        instance_text = format!(
            "{}{}",
            if src.yaml.bom { "\u{feff}" } else { "" },
            src.yaml.text
        );
        changes.delete(&src.path);
        if let Some((list_file, item)) = entry {
            remove_resource_entry(model, list_file, item, changes)?;
        }
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
    changes.create(&format!("{folder}/{name}"), instance_text);
    changes.create(
        &format!("{folder}/kustomization.yaml"),
        format!("apiVersion: kustomize.config.k8s.io/v1beta1{eol}kind: Kustomization{eol}resources:{eol}  - {name}{eol}"),
    );
    Ok(())
}

/// The new Kustomization document, in the old document's indentation, line ending and
/// `apiVersion`: the old layer object's labels and annotations, and every setting of its spec
/// that decides how the instance is built and applied ([`CARRIED`]) copied verbatim in the old
/// order, with its own `path`, `dependsOn` the old layer and `wait: false`.
fn new_layer_document(
    yaml: &YamlFile,
    root: NodeId,
    name: &str,
    path: &str,
    layer: &Layer,
) -> String {
    let eol = yaml.line_ending.as_str();
    let spec = yaml.lookup(root, &["spec"]);
    let indent = spec_indent(yaml, root);
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(eol);
    };
    let why = format!(
        "# Split out by fluxmend FM001: the FluxInstance must not be health-gated by {}.",
        layer.id.name
    );
    layer_document_head(yaml, root, name, &why, &mut line);
    let depends_on = |line: &mut dyn FnMut(&str)| {
        line(&format!("{indent}dependsOn:"));
        line(&format!(
            "{indent}{indent}- name: {}",
            edit::scalar_text(&layer.id.name)
        ));
        line(&format!("{indent}wait: false"));
    };
    let (mut done_path, mut done_wait) = (false, false);
    let entries = match spec.map(|s| yaml.node(s).kind) {
        Some(NodeKind::Mapping { entries, .. }) => entries,
        _ => &[],
    };
    for &(k, v) in entries {
        match yaml.scalar(k).unwrap_or_default() {
            "path" => {
                line(&format!("{indent}path: {}", edit::scalar_text(path)));
                done_path = true;
            }
            "wait" => {
                depends_on(&mut line);
                done_wait = true;
            }
            key if CARRIED.contains(&key) => copy_entry_nodes(yaml, k, v, &indent, &mut line),
            _ => {}
        }
    }
    if !done_path {
        line(&format!("{indent}path: {}", edit::scalar_text(path)));
    }
    if !done_wait {
        depends_on(&mut line);
    }
    out
}

/// Settings of the old layer a move cannot carry as they are: `components` (paths relative to
/// the old path, and they may patch the instance) and `patches` without a `target` (they would
/// fail in a layer that does not hold what they patch).
fn uncarried_settings(model: &Model, layer: &Layer) -> Result<(), String> {
    let obj = model.object(layer.object.ok_or("the layer has no object to edit")?);
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let at = |n: NodeId| format!("{}:{}", file.path, yaml.line_of(yaml.node(n).span.start));
    if let Some(list) = layer.spec.components_list
        && !yaml.items(list).is_empty()
    {
        return Err(format!(
            "{}: spec.components of {} may patch the instance and name paths relative to its path; fluxmend does not carry components into the new layer",
            at(list),
            layer.id
        ));
    }
    if let Some(p) = layer.spec.patches.iter().find(|p| p.target.is_none()) {
        return Err(format!(
            "{}: a spec.patches entry without a target would fail in the new layer, which holds only the instance",
            at(p.item)
        ));
    }
    Ok(())
}
