//! FM002 disposable-workload-in-gated-layer: a CI runner (or another disposable workload)
//! health-gates a Flux Kustomization that also applies other objects or has dependents
//! (a forgejo runner incident that held an `apps` layer red). Documentation: `rules/FM002.md`;
//! the catalogue: `rules/disposable.yaml`.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset, TextEdit};
use crate::load::{FileId, parent_of};
use crate::model::{
    KUSTOMIZATION_FILE_NAMES, Layer, LayerId, LayerRef, Model, ObjectIdx, RefTarget, Rendered,
    Renderer, Variant, display_dir, join,
};
use crate::parse::{NodeId, NodeKind, Value, YamlFile};

use super::disposable::{Analysis, Bundle};
use super::layer_split::{
    CARRIED, bringing_entry, built_elsewhere, copy_entry, copy_entry_nodes, drop_spec_entries,
    entry_text, free_name, generated_cover, layer_document_head, modelines, needs_protection,
    not_carried_patches, path_text, prefix, protect_first, register, relative_below, remove_items,
    resources_list, second_phase, spec_indent,
};
use super::{Finding, Fix, Rule, RuleMeta, plural};
use crate::rollout::failure::masked;
use crate::rollout::restarts_only;

pub struct DisposableWorkloadInGatedLayer;

static META: RuleMeta = RuleMeta {
    id: "FM002",
    name: "disposable-workload-in-gated-layer",
    summary: "a disposable workload (a CI runner) health-gates a Flux Kustomization that holds other objects or has dependents",
    doc: include_str!("../../rules/FM002.md"),
};

const TRADEOFF: &str = "Runner changes now wait on their own layer's ordering (after the old \
layer when they need its objects); a red runners layer is the new, precise signal of a broken \
runner, and the old layer reports only its own objects again. On the cluster (kustomize-controller \
reconciles dependsOn, then apply, prune, health): the old layer applies what stays and prunes \
only what left it unprotected, the runner workloads, whose pods restart once when the new layer \
applies them again; when the old layer prunes, what they use is protected first (phase 1 only \
adds kustomize.toolkit.fluxcd.io/prune: disabled). The new layer, applied by the old one's parent, \
waits for it when it needs its objects, then applies the moved objects as its own and checks their \
health.";

impl Rule for DisposableWorkloadInGatedLayer {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Finding> {
        let mut analysis = Analysis::new(model);
        let mut findings = Vec::new();
        for (layer_id, layer) in model.live_layers() {
            if layer.object.is_none() || (!layer.wait && layer.health_checks.is_empty()) {
                continue;
            }
            for vi in 0..layer.variants.len() {
                let bundle = analysis.bundle(layer_id, vi);
                if bundle.gated.is_empty() {
                    continue;
                }
                let blocked: Vec<LayerRef> = model
                    .dependents(layer_id)
                    .iter()
                    .filter(|&&d| model.layer(d).live)
                    .map(|&d| model.layer(d).id.clone())
                    .collect();
                // What a failing runner hides: the other objects the layer health-checks, the
                // runners' own world aside (`simulate` counts the same way).
                let masked = masked(layer, &layer.variants[vi].inventory, |r: &Rendered| {
                    bundle.disposable.contains(&r.object)
                        || bundle.moved.contains(&r.object)
                        || bundle.own_namespaces.contains(&r.object)
                });
                // A layer whose runners' failure blocks no layer and hides no other object's
                // health (it holds only runners and what they use, or checks only them) is the
                // safe end state.
                if blocked.is_empty() && masked == 0 {
                    continue;
                }
                let fix = if bundle.staying.is_empty() {
                    plan_drop_edges(&mut analysis, layer_id)
                } else {
                    plan_fix(&mut analysis, layer_id, vi, &bundle)
                };
                let variant = &layer.variants[vi];
                let mut found: Vec<Finding> = bundle
                    .gated
                    .iter()
                    .map(|(inv, reason)| {
                        describe(
                            &analysis,
                            layer,
                            variant,
                            &variant.inventory[*inv],
                            reason,
                            &blocked,
                            masked,
                        )
                    })
                    .collect();
                // The fix rides on the finding reported first.
                found.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
                let first = found
                    .first()
                    .map(|f| format!("{}:{}", f.file, f.line))
                    .unwrap_or_default();
                let group = Some((layer_id, vi));
                for (i, mut finding) in found.into_iter().enumerate() {
                    finding.fix_group = group;
                    match (&fix, i) {
                        (Ok(f), 0) => finding.fix = Some(f.clone()),
                        (Ok(_), _) => {
                            finding.no_fix_reason = Some(super::fixed_together_with(&first))
                        }
                        (Err(reason), _) => finding.no_fix_reason = Some(reason.clone()),
                    }
                    findings.push(finding);
                }
            }
        }
        findings
    }
}

/// What happens on the cluster when a dependent's `dependsOn` edge on a runner layer goes.
const DROP_TRADEOFF: &str = "kustomize-controller checks only the Kustomizations a layer lists in \
dependsOn (checkDependencies: Ready, observed generation current, and the same revision applied \
when both read the same source); without the entry the dependent is reconciled on its own \
interval and source events, whatever the runners' health, and on a fresh cluster both layers are \
applied concurrently, in no guaranteed order. Nothing is applied, pruned or deleted by this \
change: both inventories stay as they are, and the runner layer keeps reporting its runners' \
health.";

/// A layer of runners and what they use that other layers depend on: nothing to split out; the
/// fix drops the `dependsOn` entries on it, when no layer that would stop waiting for it (a
/// direct or transitive dependent) uses anything it applies.
fn plan_drop_edges(an: &mut Analysis, layer_id: LayerId) -> Result<Fix, String> {
    let model = an.model;
    let layer = model.layer(layer_id);
    let only = format!(
        "{} holds only disposable workloads and what they use, so there is nothing to split out",
        layer.id
    );
    if layer.variants.len() > 1 {
        return Err(format!(
            "{only}; its path `{}` stands for {} folders (placeholders), and fluxmend decides a dependsOn edge for a layer of one folder only",
            layer.path,
            layer.variants.len()
        ));
    }
    let mut uses = Vec::new();
    for d in model.dependents(layer_id) {
        if !model.layer(d).live {
            continue;
        }
        let consumed = an.consumed(layer_id, d);
        if !consumed.is_empty() {
            uses.push(format!(
                "{} uses {}",
                model.layer(d).id,
                consumed.join(", ")
            ));
        }
    }
    if !uses.is_empty() {
        return Err(format!(
            "{only}, and what depends on it needs its objects ({}): keep the dependsOn, or move what is needed out of the runner layer",
            uses.join("; ")
        ));
    }
    let mut changes = Changeset::default();
    let mut dropped = Vec::new();
    for (_, dependent) in model.live_layers() {
        if !dependent.depends_on_ids.contains(&layer_id) {
            continue;
        }
        let items: BTreeSet<NodeId> = dependent
            .depends_on
            .iter()
            .filter(|(r, _)| *r == layer.id)
            .map(|&(_, item)| item)
            .collect();
        let obj = model.object(dependent.object.ok_or_else(|| {
            format!(
                "{only}; {} is created by the operator, fluxmend cannot edit its dependsOn",
                dependent.id
            )
        })?);
        let file = model.repo.file(obj.file);
        if file.error.is_some()
            || model.repo.generated_from(&file.path).is_some()
            || items.is_empty()
        {
            return Err(format!(
                "{only}; the dependsOn of {} ({}) is not written where fluxmend can edit it",
                dependent.id, file.path
            ));
        }
        drop_spec_entries(
            &file.yaml,
            obj.root,
            "dependsOn",
            &items,
            &file.path,
            &mut changes,
        )?;
        dropped.push(dependent.id.to_string());
    }
    Ok(Fix::new(
        format!(
            "{only}: drop the dependsOn entr{} on {} of {} ({} nothing it applies), so that a failing runner blocks no other layer",
            if dropped.len() == 1 { "y" } else { "ies" },
            layer.id.name,
            dropped.join(", "),
            if dropped.len() == 1 {
                "it uses"
            } else {
                "they use"
            }
        ),
        DROP_TRADEOFF,
        changes,
    ))
}

fn names(layers: &[LayerRef]) -> String {
    layers
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(
    analysis: &Analysis,
    layer: &Layer,
    variant: &Variant,
    r: &Rendered,
    reason: &str,
    blocked: &[LayerRef],
    masked: usize,
) -> Finding {
    let how = if layer.wait {
        "wait: true"
    } else {
        "its healthChecks"
    };
    let model = analysis.model;
    let mut message = format!(
        "{} ({how}) health-gates {}, a disposable workload ({reason})",
        layer.id,
        analysis.key_text(&r.key)
    );
    let bindings: Vec<String> = variant
        .bindings
        .iter()
        .map(|(p, n)| format!("{p}={n}"))
        .collect();
    if !bindings.is_empty() {
        message.push_str(&format!(" [variant {}]", bindings.join(", ")));
    }
    let blocks = if blocked.is_empty() {
        "blocks no other layer".to_string()
    } else {
        format!("would leave {} DependencyNotReady", names(blocked))
    };
    message.push_str(&format!(
        ". When it fails, the layer turns Ready=False: it {blocks} and masks the status of {} it applies",
        plural(masked, "other object", "other objects")
    ));
    if layer.wait && !layer.health_checks.is_empty() {
        let listed = layer.health_checks.iter().any(|hc| hc.matches(&r.key));
        message.push_str(&format!(
            ". Its {} ignored because wait is true: Flux checks every object it applies, not only the listed ones ({})",
            plural(layer.health_checks.len(), "healthChecks entry is", "healthChecks entries are"),
            if listed {
                "this one is listed"
            } else {
                "this one is not even listed"
            }
        ));
    }
    let obj = model.object(r.object);
    Finding {
        rule: META.id,
        severity: if blocked.is_empty() {
            Severity::Warning
        } else {
            Severity::Error
        },
        message,
        file: model.repo.file(obj.file).path.clone(),
        line: obj.line,
        column: 0,
        layer: layer.id.clone(),
        cluster: String::new(),
        cluster_index: layer.cluster,
        object: r.key.clone(),
        blocked_layers: blocked.to_vec(),
        masked_objects: masked,
        fix: None,
        no_fix_reason: None,
        fix_group: None,
    }
}

/// Where the moved objects of one new layer come from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    /// An existing folder, `chain[k]`'s, renders exactly moved objects: it becomes the new
    /// layer's path and the entry that listed it goes.
    Folder { k: usize, dir: String },
    /// Files (or documents of files) listed by the last kustomization of `chain`, or found by
    /// Flux's generated walk when the chain is empty: they move to a new folder.
    Files { chain: Vec<FileId> },
}

/// What the new layer's `dependsOn` says.
enum DependsOn {
    /// The old layer: the moved objects need objects that stay there.
    OldLayer,
    /// The old layer's own `dependsOn`, copied.
    CopyOld,
    Nothing,
}

/// Everything a plan touches, for the exclusivity check.
#[derive(Default)]
struct Touched {
    /// Files whose documents move (deleted or split).
    objects: BTreeSet<FileId>,
    /// Kustomization files edited.
    kustomizations: BTreeSet<FileId>,
}

/// The move of the workloads and what only they use into a layer of their own — in two phases
/// when the old layer prunes: the moved objects would be deleted before their new layer applies
/// them (it runs after the old one, or in no guaranteed order), so phase 1 protects them where
/// they are and the move comes once that is applied. A disposable workload of a kind that only
/// restarts (its pods) may be recreated; what carries data, identity or a release may not.
fn plan_fix(
    an: &mut Analysis,
    layer_id: LayerId,
    vi: usize,
    bundle: &Bundle,
) -> Result<Fix, String> {
    let mut fix = plan_move(an, layer_id, vi, bundle)?;
    let model = an.model;
    let layer = model.layer(layer_id);
    let inventory = &layer.variants[vi].inventory;
    let gated: BTreeSet<ObjectIdx> = bundle
        .gated
        .iter()
        .map(|&(i, _)| inventory[i].object)
        .collect();
    let restarts = |r: &Rendered| gated.contains(&r.object) && restarts_only(&r.key);
    let moved: Vec<&Rendered> = inventory
        .iter()
        .filter(|r| bundle.moved.contains(&r.object))
        .collect();
    let unprotected = needs_protection(model, layer, moved.iter().copied(), restarts);
    if !unprotected.is_empty() {
        return protect_first(
            model,
            layer,
            &unprotected,
            "deleting what moves loses what it holds (a volume's data, a Secret, a ServiceAccount's tokens, a Helm release) until the new layer applies it again",
            TRADEOFF,
            STAYS,
        );
    }
    fix.may_restart = moved
        .iter()
        .filter(|r| restarts(r))
        .map(|r| r.key.clone())
        .collect();
    if layer.prune && moved.iter().any(|r| !restarts(r)) {
        second_phase(&mut fix, layer, STAYS);
    }
    Ok(fix)
}

/// What stays after a phased move.
const STAYS: &str = "the moved objects keep kustomize.toolkit.fluxcd.io/prune: disabled; once the new layer has applied them, a later commit may remove the annotation (the new layer then owns them, and removing it deletes nothing)";

/// Plan the move of the workloads and what only they use (see [`plan_fix`]).
fn plan_move(
    an: &mut Analysis,
    layer_id: LayerId,
    vi: usize,
    bundle: &Bundle,
) -> Result<Fix, String> {
    let model = an.model;
    let layer = model.layer(layer_id);
    let obj = model.object(
        layer
            .object
            .ok_or("the layer is created by the operator; nothing to edit")?,
    );
    let lfile = model.repo.file(obj.file);
    if lfile.error.is_some() {
        return Err(format!(
            "{} does not parse to its end; fluxmend does not edit it",
            lfile.path
        ));
    }
    if layer.variants.len() != 1 {
        return Err(format!(
            "the path `{}` stands for {} folders (placeholders); FM002 splits layers of one folder only",
            layer.path,
            layer.variants.len()
        ));
    }
    let variant = &layer.variants[vi];
    if let Some(e) = &variant.error {
        return Err(format!(
            "{} does not render completely ({e})",
            display_dir(&variant.dir)
        ));
    }
    let inventory = &variant.inventory;
    let moved: Vec<usize> = (0..inventory.len())
        .filter(|&i| bundle.moved.contains(&inventory[i].object))
        .collect();
    for &i in &moved {
        let o = inventory[i].object;
        if inventory.iter().filter(|r| r.object == o).count() > 1 {
            return Err(format!(
                "{} is rendered more than once in {}",
                inventory[i].key, layer.id
            ));
        }
    }
    let flux = flux_overlays(model, layer)?;
    // Group the moved objects by where they come from: one new layer per group.
    let mut renderer = Renderer::new(model);
    let mut groups: Vec<(Source, Vec<usize>)> = Vec::new();
    for &i in &moved {
        let source = source_of(model, &mut renderer, variant, &inventory[i], bundle);
        match groups.iter_mut().find(|(s, _)| *s == source) {
            Some((_, members)) => members.push(i),
            None => groups.push((source, vec![i])),
        }
    }
    let moved_bindings = moved.iter().any(|&i| {
        let k = &inventory[i].key;
        k.group() == "rbac.authorization.k8s.io"
            && (k.kind == "RoleBinding" || k.kind == "ClusterRoleBinding")
    });
    let mut ctx = Ctx {
        model,
        variant,
        changes: Changeset::default(),
        touched: Touched::default(),
        planned_dirs: Vec::new(),
        flux,
        moved_bindings,
    };
    let mut docs = Vec::new();
    let mut planned_names = Vec::new();
    let mut paths = Vec::new();
    for (source, members) in &groups {
        let carried_prefix = {
            let levels = match source {
                Source::Folder { k, .. } => inventory[members[0]].chain[..*k].to_vec(),
                Source::Files { chain } => chain.clone(),
            };
            levels.iter().any(|&f| {
                model
                    .kustomize_dirs
                    .get(parent_of(&model.repo.file(f).path))
                    .is_some_and(|d| !d.name_prefix.is_empty() || !d.name_suffix.is_empty())
            }) || ctx.flux.prefix_or_suffix
        };
        let crossing = if carried_prefix {
            let mut only_group = bundle.clone();
            only_group.moved = members.iter().map(|&i| inventory[i].object).collect();
            an.cross_references(layer_id, vi, &only_group)
                .into_iter()
                .next()
        } else {
            None
        };
        let name = free_name(
            model,
            layer,
            &format!("{}-runners", layer.id.name),
            &planned_names,
        );
        planned_names.push(name.clone());
        let planned = match (source, crossing) {
            (_, Some((a, b))) => Err(format!(
                "namePrefix/nameSuffix rename references, and {a} names {b} across the split: kustomize would no longer rewrite that reference"
            )),
            (Source::Folder { k: 0, dir }, None) => ctx.plan_move_folder(dir),
            (Source::Folder { k, dir }, None) => ctx.plan_folder(an, *k, dir, members, &name),
            (Source::Files { chain }, None) => ctx.plan_files(an, chain, members, &name),
        };
        let dir = planned.map_err(|e| {
            let from = match source {
                Source::Folder { dir, .. } => dir.clone(),
                Source::Files { chain } => chain.last().map_or_else(
                    || display_dir(&variant.dir).to_string(),
                    |&f| display_dir(parent_of(&model.repo.file(f).path)).to_string(),
                ),
            };
            if groups.len() > 1 {
                format!("the workloads of {from} cannot move ({e}); fluxmend moves all of a layer's disposable workloads or none")
            } else {
                e
            }
        })?;
        let path = path_text(layer, &dir)?;
        let group: BTreeSet<ObjectIdx> = members.iter().map(|&i| inventory[i].object).collect();
        let needs = an.needs(layer_id, vi, &group, &bundle.moved);
        let depends = if !needs.is_empty() {
            DependsOn::OldLayer
        } else if !layer.depends_on.is_empty() {
            DependsOn::CopyOld
        } else {
            DependsOn::Nothing
        };
        docs.push((
            name.clone(),
            new_layer_document(&lfile.yaml, obj.root, layer, &name, &path, &depends),
        ));
        let deps = match depends {
            DependsOn::OldLayer => {
                format!("dependsOn {}: it needs {}", layer.id.name, needs.join(", "))
            }
            DependsOn::CopyOld => format!("dependsOn what {} depends on", layer.id.name),
            DependsOn::Nothing => "no dependsOn".into(),
        };
        paths.push(format!(
            "a new Kustomization {name} (path {path}, wait: true, {deps})"
        ));
    }
    if let Some(reason) = used_elsewhere(model, layer_id, vi, &ctx.touched) {
        return Err(reason);
    }
    let mut changes = ctx.changes;
    register(model, layer, &docs, &mut changes)?;
    let dropped = drop_health_checks(model, layer, inventory, &moved, &mut changes)?;
    let workloads = bundle.gated.len();
    let companions = moved.len() - workloads;
    let mut description = format!(
        "move {}{} out of {} into {}; nothing depends on {}",
        plural(workloads, "disposable workload", "disposable workloads"),
        if companions > 0 {
            format!(
                " and {} only {} use{}",
                plural(companions, "object", "objects"),
                if workloads == 1 { "it" } else { "they" },
                if workloads == 1 { "s" } else { "" }
            )
        } else {
            String::new()
        },
        layer.id,
        paths.join(" and "),
        if paths.len() == 1 { "it" } else { "them" }
    );
    if dropped > 0 {
        description.push_str(&format!(
            "; drop the {} of {} naming them",
            plural(dropped, "healthChecks entry", "healthChecks entries"),
            layer.id.name
        ));
    }
    let new_names: Vec<&str> = docs.iter().map(|(n, _)| n.as_str()).collect();
    description.push_str(&not_carried_patches(model, layer, &new_names.join(" and ")));
    let title = format!(
        "move {} out of {}",
        plural(workloads, "disposable workload", "disposable workloads"),
        layer.id.name
    );
    Ok(Fix::titled(title, description, TRADEOFF, changes))
}

/// The outermost folder of the chain that renders moved objects only, or the files.
fn source_of(
    model: &Model,
    renderer: &mut Renderer,
    variant: &Variant,
    r: &Rendered,
    bundle: &Bundle,
) -> Source {
    let first = usize::from(!variant.generated);
    for k in first..r.chain.len() {
        let dir = parent_of(&model.repo.file(r.chain[k]).path).to_string();
        let only_moved = renderer
            .render_dir(&dir)
            .as_ref()
            .as_ref()
            .is_ok_and(|objs| {
                !objs.is_empty() && objs.iter().all(|o| bundle.moved.contains(&o.object))
            });
        if only_moved {
            return Source::Folder { k, dir };
        }
    }
    Source::Files {
        chain: r.chain.clone(),
    }
}

/// What the old layer's spec layers on top of the build, as far as a split cares.
struct FluxOverlays {
    /// `spec.namePrefix` or `spec.nameSuffix` is set.
    prefix_or_suffix: bool,
    /// `spec.targetNamespace`.
    target_namespace: Option<String>,
}

fn flux_overlays(model: &Model, layer: &Layer) -> Result<FluxOverlays, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let yaml = &file.yaml;
    let scalar = |k: &str| {
        yaml.lookup(obj.root, &["spec", k])
            .and_then(|n| yaml.scalar(n))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if let Some(list) = yaml.lookup(obj.root, &["spec", "patches"]) {
        for &item in yaml.items(list) {
            if yaml.lookup(item, &["target"]).is_none() {
                return Err(format!(
                    "{}:{}: a spec.patches entry without a target would fail in the layer that no longer holds its object",
                    file.path,
                    yaml.line_of(yaml.node(item).span.start)
                ));
            }
        }
    }
    if let Some(list) = yaml.lookup(obj.root, &["spec", "components"]) {
        let dir = layer.variants.first().map_or("", |v| v.dir.as_str());
        for &item in yaml.items(list) {
            let text = yaml.scalar(item).unwrap_or_default();
            let comp = join(dir, text).and_then(|d| model.kustomize_dirs.get(&d));
            match comp {
                Some(c) if only_resources(model, c.file) => {}
                _ => {
                    return Err(format!(
                        "{}:{}: component `{text}` may change the moved objects; fluxmend does not carry components over",
                        file.path,
                        yaml.line_of(yaml.node(item).span.start)
                    ));
                }
            }
        }
    }
    Ok(FluxOverlays {
        prefix_or_suffix: scalar("namePrefix").is_some() || scalar("nameSuffix").is_some(),
        target_namespace: scalar("targetNamespace"),
    })
}

/// A kustomization (or component) that only lists resources: it transforms nothing.
fn only_resources(model: &Model, file: FileId) -> bool {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs.first() else {
        return true;
    };
    match f.yaml.node(doc.root).kind {
        NodeKind::Mapping { entries, .. } => entries.iter().all(|&(k, _)| {
            matches!(
                f.yaml.scalar(k),
                Some("apiVersion" | "kind" | "metadata" | "resources")
            )
        }),
        _ => false,
    }
}

struct Ctx<'a, 'm, 'r> {
    model: &'m Model<'r>,
    variant: &'a Variant,
    changes: Changeset,
    touched: Touched,
    planned_dirs: Vec<String>,
    flux: FluxOverlays,
    moved_bindings: bool,
}

impl Ctx<'_, '_, '_> {
    /// An existing folder renders the moved objects only: the entry listing it goes. With
    /// nothing to carry over it becomes the new layer's path as it is; otherwise a new `runners`
    /// folder beside the entry wraps it with what the levels above it did (the folder itself,
    /// perhaps shared, is not edited).
    fn plan_folder(
        &mut self,
        an: &mut Analysis,
        k: usize,
        dir: &str,
        members: &[usize],
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let r = &self.variant.inventory[members[0]];
        let (kfile, item) = bringing_entry(model, r, k - 1)
            .ok_or_else(|| format!("cannot find the resources entry that lists {dir}"))?;
        self.remove_entries(kfile, &[item])?;
        let carried = self.carry(an, &r.chain[..k], members)?;
        if carried.is_empty() {
            return Ok(dir.to_string());
        }
        let lister = model.repo.file(kfile);
        let listing_dir = parent_of(&lister.path);
        let folder = self.free_folder(&format!("{}runners", prefix(listing_dir)))?;
        let rel = relative_path(&folder, dir);
        let text = kustomization_text(
            lister.yaml.line_ending.as_str(),
            Some(lister),
            listing_dir,
            layer_name,
            &carried.lines_for(&folder),
            &[rel],
            &carried.components_from(&folder),
        );
        self.changes
            .create(&format!("{folder}/kustomization.yaml"), text);
        Ok(folder)
    }

    /// A folder with a kustomization of its own inside a generated path renders the moved
    /// objects only: the generated walk picks it up as a whole, so it moves whole, out of that
    /// path, to the same depth (`<path>-runners/<folder>`), where its relative references
    /// still resolve.
    fn plan_move_folder(&mut self, dir: &str) -> Result<String, String> {
        let model = self.model;
        let base = &self.variant.dir;
        let rel = relative_below(base, dir)
            .filter(|r| !r.is_empty() && !base.is_empty())
            .ok_or_else(|| format!("{dir} is not below {}", display_dir(base)))?;
        if let Some(other) = model
            .repo
            .other_files()
            .find(|p| relative_below(dir, parent_of(p)).is_some())
        {
            return Err(format!(
                "{dir} holds {other}, which is not YAML: fluxmend moves only what it has read"
            ));
        }
        // References that climb out of the folder must land outside the generated path.
        for (kdir, k) in &model.kustomize_dirs {
            if relative_below(dir, kdir).is_none() {
                continue;
            }
            let f = model.repo.file(k.file);
            let mut texts = Vec::new();
            if let Ok(v) = f.yaml.value(k.root) {
                collect_strings(&v, &mut texts);
            }
            for t in texts.iter().filter(|t| t.starts_with("../")) {
                let lands = join(kdir, t).unwrap_or_default();
                if relative_below(dir, &lands).is_none() && relative_below(base, &lands).is_some() {
                    return Err(format!(
                        "{} refers to `{t}` inside {}; moving the folder out would break it",
                        f.path,
                        display_dir(base)
                    ));
                }
            }
        }
        let root = (1..)
            .map(|i| {
                if i == 1 {
                    format!("{base}-runners")
                } else {
                    format!("{base}-runners-{i}")
                }
            })
            .find(|d| {
                !model.repo.is_dir(d) && !model.repo.is_file(d) && !self.planned_dirs.contains(d)
            })
            .expect("an unbounded sequence has a free name");
        self.planned_dirs.push(root.clone());
        let target = format!("{root}/{rel}");
        if let Some(by) = generated_cover(model, &target) {
            return Err(format!(
                "a new folder {target} would also be picked up by the generated kustomization of {by}"
            ));
        }
        for (id, f) in model.repo.files.iter().enumerate() {
            let Some(inner) = relative_below(dir, &f.path) else {
                continue;
            };
            if f.error.is_some() {
                return Err(format!("{} does not parse to its end", f.path));
            }
            self.changes.delete(&f.path);
            self.changes.create(
                &format!("{target}/{inner}"),
                format!(
                    "{}{}",
                    if f.yaml.bom { "\u{feff}" } else { "" },
                    f.yaml.text
                ),
            );
            self.touched.objects.insert(id);
            self.touched.kustomizations.insert(id);
        }
        Ok(target)
    }

    /// A free folder name: `base`, `base-2`, …
    fn free_folder(&mut self, base: &str) -> Result<String, String> {
        let model = self.model;
        let folder = std::iter::once(base.to_string())
            .chain((2..).map(|i| format!("{base}-{i}")))
            .find(|d| {
                !model.repo.is_dir(d) && !model.repo.is_file(d) && !self.planned_dirs.contains(d)
            })
            .expect("an unbounded sequence has a free name");
        self.planned_dirs.push(folder.clone());
        if let Some(by) = generated_cover(model, &folder) {
            return Err(format!(
                "a new folder {folder} would also be picked up by the generated kustomization of {by}"
            ));
        }
        Ok(folder)
    }

    /// Files listed by a kustomization (or picked up by a generated walk) move to a new folder
    /// with its own kustomization, which carries what the chain did to them.
    fn plan_files(
        &mut self,
        an: &mut Analysis,
        chain: &[FileId],
        members: &[usize],
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let inventory = &self.variant.inventory;
        let listing = chain.last().copied();
        let base = match listing {
            Some(f) => format!("{}runners", prefix(parent_of(&model.repo.file(f).path))),
            None if self.variant.dir.is_empty() => {
                return Err(
                    "the layer's path is the repository root and has no kustomization file; there is no folder outside it to move the workloads to".into(),
                );
            }
            None => format!("{}-runners", self.variant.dir),
        };
        // The files, in the order the layer renders them.
        let mut files: Vec<(FileId, Vec<usize>)> = Vec::new();
        for &i in members {
            let file = model.object(inventory[i].object).file;
            match files.iter_mut().find(|(f, _)| *f == file) {
                Some((_, docs)) => docs.push(i),
                None => files.push((file, vec![i])),
            }
        }
        let carried = self.carry(an, chain, members)?;
        if let Some(dir) = self.own_folder(listing, &files) {
            return self.plan_own_folder(dir, chain, &files, &carried, layer_name);
        }
        let folder = self.free_folder(&base)?;
        let lister = listing.map(|f| model.repo.file(f));
        let eol = lister
            .map_or(model.repo.file(files[0].0).yaml.line_ending, |f| {
                f.yaml.line_ending
            })
            .as_str();
        let mut names: Vec<String> = Vec::new();
        let mut removed: BTreeMap<FileId, Vec<NodeId>> = BTreeMap::new();
        let mut dot_slash = false;
        for (file, docs) in &files {
            let src = model.repo.file(*file);
            if src.error.is_some() {
                return Err(format!(
                    "{} does not parse to its end; fluxmend does not edit it",
                    src.path
                ));
            }
            let basename = src.path.rsplit('/').next().unwrap_or("runners.yaml");
            let name = free_file_name(basename, &names);
            let objects = model.objects_in(*file);
            if whole_file(model, *file, docs, inventory) {
                self.changes.delete(&src.path);
                self.changes.create(
                    &format!("{folder}/{name}"),
                    format!(
                        "{}{}",
                        if src.yaml.bom { "\u{feff}" } else { "" },
                        src.yaml.text
                    ),
                );
                if listing.is_some() {
                    let (kfile, item) = bringing_entry(model, &inventory[docs[0]], chain.len() - 1)
                        .ok_or_else(|| {
                            format!("cannot find the resources entry that lists {}", src.path)
                        })?;
                    let kf = model.repo.file(kfile);
                    dot_slash |= kf.yaml.scalar(item).is_some_and(|t| t.starts_with("./"));
                    removed.entry(kfile).or_default().push(item);
                }
            } else {
                if objects.clone().any(|o| model.object(o).encrypted) {
                    return Err(format!(
                        "{} is SOPS-encrypted and holds objects that stay; splitting it would break its MAC",
                        src.path
                    ));
                }
                let mut moved_docs: Vec<usize> = docs
                    .iter()
                    .map(|&i| model.object(inventory[i].object).doc)
                    .collect();
                moved_docs.sort_unstable();
                let text = &src.yaml.text;
                let feol = src.yaml.line_ending.as_str();
                let mut out = String::new();
                // The file's header comment (before its first `---`) describes both halves.
                if let Some(first) = src.yaml.docs.first() {
                    let header = &text[..first.region.start];
                    if header.lines().all(|l| {
                        let t = l.trim();
                        t.is_empty() || t.starts_with('#')
                    }) {
                        out.push_str(header);
                    }
                }
                for &d in &moved_docs {
                    let (start, end) = edit::document_region(&src.yaml, d);
                    let region = &text[start..end];
                    let body = match region.strip_prefix("---") {
                        Some(rest) => rest.find('\n').map_or("", |i| &rest[i + 1..]),
                        None => region,
                    };
                    out.push_str(&format!("---{feol}{body}"));
                    if !out.ends_with('\n') {
                        out.push_str(feol);
                    }
                    self.changes.edit(
                        &src.path,
                        TextEdit {
                            start,
                            end,
                            text: String::new(),
                        },
                    );
                }
                self.changes.create(
                    &format!("{folder}/{name}"),
                    format!("{}{out}", if src.yaml.bom { "\u{feff}" } else { "" }),
                );
            }
            self.touched.objects.insert(*file);
            names.push(name);
        }
        for (kfile, items) in &removed {
            self.remove_entries(*kfile, items)?;
        }
        // The new folder's kustomization.
        let from = match lister {
            Some(f) => parent_of(&f.path).to_string(),
            None => self.variant.dir.clone(),
        };
        let entries: Vec<String> = names
            .iter()
            .map(|n| format!("{}{n}", if dot_slash { "./" } else { "" }))
            .collect();
        let out = kustomization_text(
            eol,
            lister,
            &from,
            layer_name,
            &carried.lines_for(&folder),
            &entries,
            &carried.components_from(&folder),
        );
        self.changes
            .create(&format!("{folder}/kustomization.yaml"), out);
        Ok(folder)
    }

    /// The folder below the listing kustomization's that already holds exactly the moved files
    /// (whole), with no kustomization file of its own and no other YAML: the runners are in a
    /// folder of their own, listed file by file, and need not move.
    fn own_folder(
        &self,
        listing: Option<FileId>,
        files: &[(FileId, Vec<usize>)],
    ) -> Option<String> {
        let model = self.model;
        let listing_dir = parent_of(&model.repo.file(listing?).path);
        let dir = parent_of(&model.repo.file(files.first()?.0).path);
        let below = relative_below(listing_dir, dir).is_some_and(|r| !r.is_empty());
        let has_kustomization = model.kustomize_dirs.contains_key(dir)
            || KUSTOMIZATION_FILE_NAMES
                .iter()
                .any(|n| join(dir, n).is_some_and(|p| model.repo.is_file(&p)));
        if !below || has_kustomization || generated_cover(model, dir).is_some() {
            return None;
        }
        let whole = files.iter().all(|(file, docs)| {
            let src = model.repo.file(*file);
            parent_of(&src.path) == dir
                && src.error.is_none()
                && whole_file(model, *file, docs, &self.variant.inventory)
        });
        let only_these = model
            .repo
            .files_in(dir)
            .iter()
            .all(|f| files.iter().any(|(m, _)| m == f));
        (whole && only_these && model.repo.skipped_yaml_in(dir).next().is_none())
            .then(|| dir.to_string())
    }

    /// The runners' own folder gets a kustomization listing its files (carrying what the chain
    /// did to them) and becomes the new layer's path; the entries that listed them go.
    fn plan_own_folder(
        &mut self,
        dir: String,
        chain: &[FileId],
        files: &[(FileId, Vec<usize>)],
        carried: &Carried,
        layer_name: &str,
    ) -> Result<String, String> {
        let model = self.model;
        let inventory = &self.variant.inventory;
        let lister = model
            .repo
            .file(*chain.last().ok_or("no listing kustomization")?);
        let mut removed: BTreeMap<FileId, Vec<NodeId>> = BTreeMap::new();
        let mut entries = Vec::new();
        for (file, docs) in files {
            let (kfile, item) = bringing_entry(model, &inventory[docs[0]], chain.len() - 1)
                .ok_or_else(|| {
                    format!(
                        "cannot find the resources entry that lists {}",
                        model.repo.file(*file).path
                    )
                })?;
            let dot_slash = model
                .repo
                .file(kfile)
                .yaml
                .scalar(item)
                .is_some_and(|t| t.starts_with("./"));
            let base = model.repo.file(*file).path.rsplit('/').next().unwrap_or("");
            entries.push(format!("{}{base}", if dot_slash { "./" } else { "" }));
            removed.entry(kfile).or_default().push(item);
            self.touched.objects.insert(*file);
        }
        for (kfile, items) in &removed {
            self.remove_entries(*kfile, items)?;
        }
        let text = kustomization_text(
            lister.yaml.line_ending.as_str(),
            Some(lister),
            parent_of(&lister.path),
            layer_name,
            &carried.lines_for(&dir),
            &entries,
            &carried.components_from(&dir),
        );
        self.changes
            .create(&format!("{dir}/kustomization.yaml"), text);
        Ok(dir)
    }

    fn remove_entries(&mut self, kfile: FileId, items: &[NodeId]) -> Result<(), String> {
        let model = self.model;
        let f = model.repo.file(kfile);
        if f.error.is_some() {
            return Err(format!("{} does not parse to its end", f.path));
        }
        let mut by_list: BTreeMap<NodeId, BTreeSet<NodeId>> = BTreeMap::new();
        for &item in items {
            let list = resources_list(model, kfile, item)
                .ok_or_else(|| format!("entry not found in the resources of {}", f.path))?;
            by_list.entry(list).or_default().insert(item);
        }
        for (list, items) in by_list {
            remove_items(&f.yaml, list, &items, &f.path, &mut self.changes)?;
        }
        self.touched.kustomizations.insert(kfile);
        Ok(())
    }

    /// What makes the new kustomization do to the moved objects what `levels` (outermost
    /// first) did: namespace, name prefix/suffix, labels, annotations, images, targeted patches
    /// and transforming components. Carried into one kustomization, the operations of several
    /// levels keep their order only when no level inside another runs a later [`Stage`] than
    /// it on the moved objects; anything that cannot be carried over exactly is an error
    /// naming it.
    fn carry(
        &mut self,
        an: &mut Analysis,
        levels: &[FileId],
        members: &[usize],
    ) -> Result<Carried, String> {
        let model = self.model;
        let moved: Vec<&Rendered> = members
            .iter()
            .map(|&i| &self.variant.inventory[i])
            .collect();
        let mut namespaces: Vec<(usize, NodeId, NodeId, String)> = Vec::new();
        let mut prefixes: Vec<(usize, NodeId, NodeId, String)> = Vec::new();
        let mut suffixes: Vec<(usize, NodeId, NodeId, String)> = Vec::new();
        let mut plain: BTreeMap<&str, Vec<(usize, NodeId, NodeId)>> = BTreeMap::new();
        let mut patches: Vec<(usize, CarriedPatch)> = Vec::new();
        let mut json6902: Vec<(usize, CarriedPatch)> = Vec::new();
        let mut components: Vec<(usize, String)> = Vec::new();
        // (level, stage, where, what) of every operation on the moved objects.
        let mut ops: Vec<(usize, Stage, String, &str)> = Vec::new();
        for (level, &file) in levels.iter().enumerate() {
            let f = model.repo.file(file);
            let yaml = &f.yaml;
            let Some(k) = model.kustomize_dirs.get(parent_of(&f.path)) else {
                continue;
            };
            let NodeKind::Mapping { entries, .. } = yaml.node(k.root).kind else {
                continue;
            };
            let at = |n: NodeId| format!("{}:{}", f.path, yaml.line_of(yaml.node(n).span.start));
            for &(key, value) in entries {
                let name = yaml.scalar(key).unwrap_or_default();
                let text = yaml.scalar(value).unwrap_or_default().to_string();
                match name {
                    "apiVersion" | "kind" | "metadata" | "resources" | "bases" | "sortOptions"
                    | "generatorOptions" | "openapi" | "crds" => {}
                    "namespace" | "namePrefix" | "nameSuffix" if text.is_empty() => {}
                    "namespace" | "namePrefix" | "nameSuffix" | "commonLabels" | "labels"
                    | "commonAnnotations" | "images" => {
                        let (stage, what) = if name == "images" {
                            (Stage::Images, "`images`")
                        } else {
                            (Stage::Metadata, "a namespace, name or label transformer")
                        };
                        ops.push((level, stage, at(key), what));
                        match name {
                            "namespace" => namespaces.push((level, key, value, text)),
                            "namePrefix" => prefixes.push((level, key, value, text)),
                            "nameSuffix" => suffixes.push((level, key, value, text)),
                            _ => plain.entry(name).or_default().push((level, key, value)),
                        }
                    }
                    "patches" | "patchesStrategicMerge" | "patchesJson6902" => {
                        for &item in yaml.items(value) {
                            if !patch_may_touch(model, f.path.as_str(), yaml, item, &moved) {
                                continue;
                            }
                            let targeted = name != "patchesStrategicMerge"
                                && yaml.lookup(item, &["target"]).is_some();
                            if !targeted {
                                return Err(format!(
                                    "{}: a patch without a target names a moved object; it would fail in the kustomization the object leaves, and fluxmend does not move patch entries",
                                    at(item)
                                ));
                            }
                            let patch = CarriedPatch::read(yaml, &f.path, item)?;
                            if name == "patches" {
                                ops.push((
                                    level,
                                    Stage::Patch,
                                    at(item),
                                    "a patch that may target the moved objects",
                                ));
                                patches.push((level, patch));
                            } else {
                                ops.push((
                                    level,
                                    Stage::Json6902,
                                    at(item),
                                    "a JSON6902 patch that may target the moved objects",
                                ));
                                json6902.push((level, patch));
                            }
                        }
                    }
                    "replicas" => {
                        for &item in yaml.items(value) {
                            let n = yaml.lookup(item, &["name"]).and_then(|n| yaml.scalar(n));
                            if moved
                                .iter()
                                .any(|m| Some(model.object(m.object).key.name.as_str()) == n)
                            {
                                return Err(format!(
                                    "{}: `replicas` names a moved object; fluxmend does not carry it over",
                                    at(item)
                                ));
                            }
                        }
                    }
                    "configMapGenerator" | "secretGenerator" => {
                        for &item in yaml.items(value) {
                            let Some(n) = yaml.lookup(item, &["name"]).and_then(|n| yaml.scalar(n))
                            else {
                                continue;
                            };
                            for m in &moved {
                                if an.mentions(m.object, n) {
                                    return Err(format!(
                                        "{}: {} names the generated {n}, whose hashed name the new folder would not know",
                                        at(item),
                                        m.key
                                    ));
                                }
                            }
                        }
                    }
                    "components" => {
                        // A component that adds objects would add them to both layers; one that
                        // transforms the moved objects is carried (and stays for the others).
                        for c in &k.components {
                            let comp = match &c.target {
                                RefTarget::Dir(d) => model.kustomize_dirs.get(d).map(|k| (d, k)),
                                _ => None,
                            };
                            match comp {
                                Some((_, comp)) if only_resources(model, comp.file) => {}
                                Some((d, comp)) if transforms_only(model, comp.file) => {
                                    if component_touches(model, comp.file, &moved)? {
                                        ops.push((
                                            level,
                                            Stage::Component,
                                            at(c.item),
                                            "a component",
                                        ));
                                        components.push((level, d.clone()));
                                    }
                                }
                                _ => {
                                    return Err(format!(
                                        "{}: a component of this kustomization may change the moved objects and cannot be carried over as it is (it adds objects)",
                                        at(c.item)
                                    ));
                                }
                            }
                        }
                    }
                    other => {
                        return Err(format!(
                            "{}: `{other}` may change the moved objects; fluxmend does not carry it over",
                            at(key)
                        ));
                    }
                }
            }
        }
        // kustomize runs a level's operations after those of every level inside it; the new
        // kustomization runs them by stage. Namespace, name and label transformers and image
        // tags change different fields: their order does not matter.
        for (inner, a_stage, a_at, a_what) in &ops {
            for (outer, b_stage, b_at, b_what) in &ops {
                let commute = matches!((a_stage, b_stage), (Stage::Images, Stage::Metadata));
                if inner > outer && a_stage > b_stage && !commute {
                    return Err(format!(
                        "{b_at}: {b_what} runs after {a_what} at {a_at}, in a kustomization inside it; one new kustomization would run it first, so it cannot be carried over as it is"
                    ));
                }
            }
        }
        let level_yaml = |level: usize| &model.repo.file(levels[level]).yaml;
        let mut lines: Vec<String> = Vec::new();
        let verbatim = |lines: &mut Vec<String>, level: usize, k: NodeId, v: NodeId| {
            let yaml = level_yaml(level);
            let indent =
                &yaml.text[yaml.line_start(yaml.node(k).span.start)..yaml.node(k).span.start];
            for l in entry_text(yaml, k, v).split('\n') {
                lines.push(l.strip_prefix(indent).unwrap_or(l).to_string());
            }
        };
        // namespace: the outermost wins.
        let mut distinct: BTreeSet<&str> = namespaces.iter().map(|n| n.3.as_str()).collect();
        if let Some(t) = &self.flux.target_namespace {
            distinct.insert(t.as_str());
        }
        if distinct.len() > 1 && self.moved_bindings {
            return Err(
                "several namespace transformers apply to moved RoleBindings; kustomize sets their subjects' namespaces level by level, which one kustomization cannot reproduce".into(),
            );
        }
        if let Some((level, k, v, ns)) = namespaces.first() {
            if namespaces.len() == 1 {
                verbatim(&mut lines, *level, *k, *v);
            } else {
                lines.push(format!("namespace: {}", edit::scalar_text(ns)));
            }
        }
        for (key, list, outer_first) in [
            ("namePrefix", &prefixes, true),
            ("nameSuffix", &suffixes, false),
        ] {
            match list.len() {
                0 => {}
                1 => verbatim(&mut lines, list[0].0, list[0].1, list[0].2),
                _ => {
                    let mut parts: Vec<&str> = list.iter().map(|p| p.3.as_str()).collect();
                    if !outer_first {
                        parts.reverse();
                    }
                    lines.push(format!("{key}: {}", edit::scalar_text(&parts.concat())));
                }
            }
        }
        // Labels and annotations: order-independent only when no key gets two values.
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for field in ["commonLabels", "labels"] {
            for &(level, _, v) in plain.get(field).map_or(&[][..], Vec::as_slice) {
                let value = level_yaml(level).value(v).unwrap_or(Value::Null);
                let maps: Vec<Value> = if field == "labels" {
                    value
                        .seq()
                        .iter()
                        .filter_map(|l| l.get("pairs").cloned())
                        .collect()
                } else {
                    vec![value]
                };
                for m in maps {
                    if let Value::Map(pairs) = m {
                        for (k, v) in pairs {
                            let (k, v) = (edit::value_flow_text(&k), edit::value_flow_text(&v));
                            if let Some(old) = seen.insert(k.clone(), v.clone())
                                && old != v
                            {
                                return Err(format!(
                                    "label {k} is set to {old} and {v} by different kustomizations; fluxmend does not merge them"
                                ));
                            }
                        }
                    }
                }
            }
        }
        for field in ["commonLabels", "labels", "commonAnnotations", "images"] {
            let list = plain.get(field).map_or(&[][..], Vec::as_slice);
            match list.len() {
                0 => {}
                1 => verbatim(&mut lines, list[0].0, list[0].1, list[0].2),
                _ if field == "images" => {
                    return Err(
                        "several kustomizations set `images`; fluxmend does not merge them".into(),
                    );
                }
                _ => {
                    let mut merged: Vec<(Value, Value)> = Vec::new();
                    let mut items: Vec<Value> = Vec::new();
                    for &(level, _, v) in list {
                        match level_yaml(level).value(v).unwrap_or(Value::Null) {
                            Value::Map(pairs) => {
                                for (k, v) in pairs {
                                    if let Some(e) = merged.iter_mut().find(|(mk, _)| *mk == k) {
                                        if e.1 != v && field == "commonAnnotations" {
                                            return Err(format!(
                                                "annotation {} is set twice with different values; fluxmend does not merge them",
                                                edit::value_flow_text(&k)
                                            ));
                                        }
                                    } else {
                                        merged.push((k, v));
                                    }
                                }
                            }
                            Value::Seq(s) => items.extend(s),
                            _ => {}
                        }
                    }
                    lines.push(format!("{field}:"));
                    if field == "labels" {
                        lines.extend(edit::value_block_lines(&Value::Seq(items), 2));
                    } else {
                        lines.extend(edit::value_block_lines(&Value::Map(merged), 2));
                    }
                }
            }
        }
        // Inner levels first: their operations ran first.
        let inner_first = |mut v: Vec<(usize, CarriedPatch)>| {
            v.sort_by_key(|(level, _)| std::cmp::Reverse(*level));
            v.into_iter().map(|(_, p)| p).collect::<Vec<_>>()
        };
        components.sort_by_key(|(level, _)| std::cmp::Reverse(*level));
        Ok(Carried {
            lines,
            patches: inner_first(patches),
            json6902: inner_first(json6902),
            components: components.into_iter().map(|(_, d)| d).collect(),
        })
    }
}

/// What a new folder's kustomization does to the moved objects: the carried fields (lines
/// without line endings), the patches it applies, and the components (repository
/// directories), whose paths are written relative to the new folder.
struct Carried {
    lines: Vec<String>,
    patches: Vec<CarriedPatch>,
    json6902: Vec<CarriedPatch>,
    components: Vec<String>,
}

impl Carried {
    fn is_empty(&self) -> bool {
        self.lines.is_empty()
            && self.patches.is_empty()
            && self.json6902.is_empty()
            && self.components.is_empty()
    }

    /// The kustomization lines of the new folder `folder`: the carried fields, then the
    /// patches with their files re-rooted.
    fn lines_for(&self, folder: &str) -> Vec<String> {
        let mut lines = self.lines.clone();
        for (key, list) in [
            ("patches", &self.patches),
            ("patchesJson6902", &self.json6902),
        ] {
            if !list.is_empty() {
                lines.push(format!("{key}:"));
                for p in list {
                    lines.extend(p.text_for(folder).split('\n').map(str::to_string));
                }
            }
        }
        lines
    }

    /// The component directories relative to `folder`.
    fn components_from(&self, folder: &str) -> Vec<String> {
        self.components
            .iter()
            .map(|c| relative_path(folder, c))
            .collect()
    }
}

/// A patch entry carried into a new kustomization: its text as written (from its dash to its
/// end, aliases resolved, LF line endings), with the file it names (`path:`) re-rooted.
struct CarriedPatch {
    before: String,
    /// The repository path of the patch file, and the entry's text after its `path` value.
    file: Option<(String, String)>,
}

impl CarriedPatch {
    fn read(yaml: &YamlFile, kfile_path: &str, item: NodeId) -> Result<CarriedPatch, String> {
        let dash = yaml.node(item).dash.ok_or("patch item without a dash")?;
        let start = yaml.line_start(dash);
        let end = edit::after_line(&yaml.text, yaml.node(item).span.end);
        let text = |a: usize, b: usize| {
            edit::resolved_text(yaml, a, b)
                .replace("\r\n", "\n")
                .to_string()
        };
        let path = yaml
            .lookup(item, &["path"])
            .and_then(|n| yaml.scalar(n).map(|p| (n, p)));
        Ok(match path {
            Some((node, p)) => {
                let span = yaml.node(node).span;
                let file = join(parent_of(kfile_path), p).ok_or_else(|| {
                    format!("{kfile_path}: patch path `{p}` leaves the repository")
                })?;
                CarriedPatch {
                    before: text(start, span.start),
                    file: Some((file, text(span.end, end).trim_end_matches('\n').to_string())),
                }
            }
            None => CarriedPatch {
                before: text(start, end).trim_end_matches('\n').to_string(),
                file: None,
            },
        })
    }

    fn text_for(&self, folder: &str) -> String {
        match &self.file {
            Some((file, after)) => format!(
                "{}{}{after}",
                self.before,
                edit::scalar_text(&relative_path(folder, file))
            ),
            None => self.before.clone(),
        }
    }
}

/// Where an operation on the moved objects runs within one kustomization: its components
/// after its resources and generators, then kustomize's builtin transformers in their fixed
/// order (`configureBuiltinTransformers`: strategic-merge patches, patches, namespace,
/// prefix, suffix, labels, annotations, JSON6902 patches, replicas, images).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Component,
    Patch,
    /// namespace, namePrefix/nameSuffix, labels, annotations.
    Metadata,
    Json6902,
    Images,
}

/// Whether a transforming component may change the moved objects: any transformer but a
/// patch that targets none of them. A patch without a target that names one would fail in the
/// kustomization the object leaves (the component stays there for the others).
fn component_touches(model: &Model, file: FileId, moved: &[&Rendered]) -> Result<bool, String> {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs.first() else {
        return Ok(false);
    };
    let NodeKind::Mapping { entries, .. } = f.yaml.node(doc.root).kind else {
        return Ok(true);
    };
    let mut touches = false;
    for &(key, value) in entries {
        match f.yaml.scalar(key).unwrap_or_default() {
            "apiVersion" | "kind" | "metadata" => {}
            field @ ("patches" | "patchesStrategicMerge" | "patchesJson6902") => {
                for &item in f.yaml.items(value) {
                    if !patch_may_touch(model, &f.path, &f.yaml, item, moved) {
                        continue;
                    }
                    if field == "patchesStrategicMerge"
                        || f.yaml.lookup(item, &["target"]).is_none()
                    {
                        return Err(format!(
                            "{}:{}: a patch without a target names a moved object; it would fail in the kustomization the object leaves, and fluxmend does not move patch entries",
                            f.path,
                            f.yaml.line_of(f.yaml.node(item).span.start)
                        ));
                    }
                    touches = true;
                }
            }
            _ => touches = true,
        }
    }
    Ok(touches)
}

/// A component that only transforms what it is applied to: no resources, generators or
/// components of its own (they would add objects to both layers).
fn transforms_only(model: &Model, file: FileId) -> bool {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs.first() else {
        return false;
    };
    f.yaml
        .lookup(doc.root, &["kind"])
        .and_then(|n| f.yaml.scalar(n))
        == Some("Component")
        && [
            "resources",
            "bases",
            "components",
            "configMapGenerator",
            "secretGenerator",
            "generators",
            "helmCharts",
        ]
        .iter()
        .all(|k| f.yaml.lookup(doc.root, &[k]).is_none())
}

/// A new folder's kustomization: the listing kustomization's `---` and modelines, a comment,
/// the carried lines, the resources and the carried components.
fn kustomization_text(
    eol: &str,
    lister: Option<&crate::load::SourceFile>,
    from: &str,
    layer_name: &str,
    lines: &[String],
    resources: &[String],
    components: &[String],
) -> String {
    let mut out = String::new();
    let mut item_indent = "  ".to_string();
    if let Some(f) = lister {
        if f.yaml.text.starts_with("---") {
            out.push_str(&format!("---{eol}"));
        }
        for m in modelines(&f.yaml, 0) {
            out.push_str(&format!("{m}{eol}"));
        }
        let first_item = f
            .yaml
            .docs
            .first()
            .and_then(|d| f.yaml.lookup(d.root, &["resources"]))
            .and_then(|l| f.yaml.items(l).first().copied());
        if let Some(dash) = first_item.and_then(|i| f.yaml.node(i).dash) {
            item_indent = f.yaml.text[f.yaml.line_start(dash)..dash].to_string();
        }
    }
    out.push_str(&format!(
        "apiVersion: kustomize.config.k8s.io/v1beta1{eol}kind: Kustomization{eol}"
    ));
    out.push_str(&format!(
        "# Split out of {} by fluxmend FM002; applied by the Flux Kustomization {layer_name}.{eol}",
        display_dir(from)
    ));
    for l in lines {
        out.push_str(&format!("{l}{eol}"));
    }
    out.push_str(&format!("resources:{eol}"));
    for r in resources {
        out.push_str(&format!("{item_indent}- {}{eol}", edit::scalar_text(r)));
    }
    if !components.is_empty() {
        out.push_str(&format!("components:{eol}"));
        for c in components {
            out.push_str(&format!("{item_indent}- {}{eol}", edit::scalar_text(c)));
        }
    }
    out
}

/// Whether every document with content in `file` is one of the moved `docs` (inventory
/// indices): the file moves whole.
fn whole_file(model: &Model, file: FileId, docs: &[usize], inventory: &[Rendered]) -> bool {
    let src = model.repo.file(file);
    let objects = model.objects_in(file);
    let content_docs = src
        .yaml
        .docs
        .iter()
        .filter(|d| src.yaml.value(d.root).is_ok_and(|v| v != Value::Null))
        .count();
    content_docs == objects.len()
        && objects
            .clone()
            .all(|o| docs.iter().any(|&i| inventory[i].object == o))
}

/// The relative path from directory `from` to directory `to` (both repository-relative).
fn relative_path(from: &str, to: &str) -> String {
    let a: Vec<&str> = from.split('/').filter(|s| !s.is_empty()).collect();
    let b: Vec<&str> = to.split('/').filter(|s| !s.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<&str> = vec![".."; a.len() - common];
    parts.extend(&b[common..]);
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Str(s, _) => out.push(s.clone()),
        Value::Seq(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| collect_strings(v, out)),
        Value::Null => {}
    }
}

/// A file name not yet used in the new folder: `name`, or `stem-2.ext`, …
fn free_file_name(name: &str, used: &[String]) -> String {
    if !used.iter().any(|u| u == name) {
        return name.to_string();
    }
    let (stem, ext) = name.rsplit_once('.').unwrap_or((name, ""));
    (2..)
        .map(|i| {
            if ext.is_empty() {
                format!("{stem}-{i}")
            } else {
                format!("{stem}-{i}.{ext}")
            }
        })
        .find(|n| !used.contains(n))
        .expect("an unbounded sequence has a free name")
}

/// Whether a patch of a kustomization may change one of the moved objects. Targets are
/// regular expressions to kustomize: plain names and `(a|b)` alternations are decided, anything
/// else may match.
fn patch_may_touch(
    model: &Model,
    kfile_path: &str,
    yaml: &YamlFile,
    item: NodeId,
    moved: &[&Rendered],
) -> bool {
    let target = yaml
        .lookup(item, &["target"])
        .and_then(|t| yaml.value(t).ok());
    if let Some(t) = target {
        return moved.iter().any(|m| {
            let raw = &model.object(m.object).key;
            let version = m.key.api_version.rsplit('/').next().unwrap_or_default();
            let field = |k: &str, candidates: &[&str]| {
                t.str_at(&[k])
                    .is_none_or(|p| candidates.iter().any(|c| pattern_may_match(p, c)))
            };
            field("kind", &[&m.key.kind])
                && field("name", &[&raw.name, &m.key.name])
                && field(
                    "namespace",
                    &[
                        m.key.namespace.as_deref().unwrap_or_default(),
                        raw.namespace.as_deref().unwrap_or_default(),
                    ],
                )
                && field("group", &[m.key.group()])
                && field("version", &[version])
        });
    }
    // Without a target the patch names its object: an inline patch, or a file.
    let body = yaml
        .lookup(item, &["patch"])
        .or_else(|| yaml.scalar(item).filter(|s| s.contains('\n')).map(|_| item))
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string);
    let path = yaml
        .lookup(item, &["path"])
        .and_then(|n| yaml.scalar(n))
        .or_else(|| yaml.scalar(item).filter(|s| !s.contains('\n')));
    let text = match (body, path) {
        (Some(b), _) => b,
        (None, Some(p)) => {
            let Some(file) = join(parent_of(kfile_path), p).and_then(|p| model.repo.file_id(&p))
            else {
                return true;
            };
            model.repo.file(file).yaml.text.clone()
        }
        _ => return true,
    };
    let (patch, err) = YamlFile::parse(&text);
    if err.is_some() || patch.docs.is_empty() {
        return true;
    }
    patch.docs.iter().any(|d| {
        let get = |keys: &[&str]| patch.lookup(d.root, keys).and_then(|n| patch.scalar(n));
        let (Some(kind), Some(name)) = (get(&["kind"]), get(&["metadata", "name"])) else {
            return true;
        };
        moved.iter().any(|m| {
            m.key.kind == kind && (model.object(m.object).key.name == name || m.key.name == name)
        })
    })
}

/// Whether a kustomize target pattern (an anchored regular expression) may match `text`.
fn pattern_may_match(pattern: &str, text: &str) -> bool {
    let meta = |s: &str| {
        s.contains([
            '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$', '\\',
        ])
    };
    if !meta(pattern) {
        return pattern == text;
    }
    let inner = pattern
        .strip_prefix('(')
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(pattern);
    let alternatives: Vec<&str> = inner.split('|').collect();
    if alternatives.iter().all(|a| !meta(a)) {
        return alternatives.contains(&text);
    }
    true
}

/// Another live layer (not this one, as modelled for another cluster) renders from a file the
/// plan moves or a kustomization it edits.
fn used_elsewhere(
    model: &Model,
    layer_id: LayerId,
    vi: usize,
    touched: &Touched,
) -> Option<String> {
    let files = touched
        .objects
        .iter()
        .chain(&touched.kustomizations)
        .copied();
    let (f, lid, i) = built_elsewhere(model, layer_id, vi, files)?;
    Some(format!(
        "{} is also built by {} ({}): moving the workloads out of it would change that layer too",
        model.repo.file(f).path,
        model.layer(lid).id,
        display_dir(&model.layer(lid).variants[i].dir)
    ))
}

/// Drop the old layer's `healthChecks` entries that name moved objects (the whole list when
/// all of them go); returns how many.
fn drop_health_checks(
    model: &Model,
    layer: &Layer,
    inventory: &[Rendered],
    moved: &[usize],
    changes: &mut Changeset,
) -> Result<usize, String> {
    let obj = model.object(layer.object.expect("checked"));
    let file = model.repo.file(obj.file);
    let items: BTreeSet<NodeId> = layer
        .health_checks
        .iter()
        .filter(|hc| moved.iter().any(|&i| hc.matches(&inventory[i].key)))
        .map(|hc| hc.item)
        .collect();
    drop_spec_entries(
        &file.yaml,
        obj.root,
        "healthChecks",
        &items,
        &file.path,
        changes,
    )?;
    Ok(items.len())
}

/// The new Flux Kustomization: the old one's settings in the old document's order, indentation
/// and line ending, with its own path, `dependsOn` and `wait: true`.
fn new_layer_document(
    yaml: &YamlFile,
    root: NodeId,
    layer: &Layer,
    name: &str,
    path: &str,
    depends: &DependsOn,
) -> String {
    let eol = yaml.line_ending.as_str();
    let spec = yaml.lookup(root, &["spec"]);
    let indent = spec_indent(yaml, root);
    let dash_indent = spec
        .and_then(|s| yaml.lookup(s, &["dependsOn"]))
        .and_then(|l| yaml.items(l).first().copied())
        .and_then(|i| yaml.node(i).dash)
        .map_or_else(
            || format!("{indent}{indent}"),
            |d| yaml.text[yaml.line_start(d)..d].to_string(),
        );
    let mut out = String::new();
    let mut line = |s: &str| {
        out.push_str(s);
        out.push_str(eol);
    };
    let why = format!(
        "# Split out by fluxmend FM002: the disposable workloads of {} report their health here and gate nothing.",
        layer.id.name
    );
    // The head, with the old layer object's own labels and annotations before its `spec:`.
    // Copied lines keep their own indentation, so the first one gets its key's column (the
    // new `name:` is written at the spec's).
    let metadata = yaml.lookup(root, &["metadata"]);
    let mut head = |s: &str| {
        if s == "spec:" {
            for key in ["labels", "annotations"] {
                if let Some((k, v)) = metadata.and_then(|m| yaml.entry(m, key)) {
                    let start = yaml.node(k).span.start;
                    let column = " ".repeat(start - yaml.line_start(start));
                    let mut l = |t: &str| line(t);
                    copy_entry_nodes(yaml, k, v, &column, &mut l);
                }
            }
        }
        line(s);
    };
    layer_document_head(yaml, root, name, &why, &mut head);
    let depends_on = |line: &mut dyn FnMut(&str)| match depends {
        DependsOn::OldLayer => {
            line(&format!("{indent}dependsOn:"));
            line(&format!(
                "{dash_indent}- name: {}",
                edit::scalar_text(&layer.id.name)
            ));
        }
        DependsOn::CopyOld => {
            let mut l = |s: &str| line(s);
            copy_entry(yaml, spec, "dependsOn", &indent, &mut l);
        }
        DependsOn::Nothing => {}
    };
    let (mut done_path, mut done_deps, mut done_wait) = (false, false, false);
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
            // Written once: where the old list was, or at `wait` when that came first.
            "dependsOn" if !done_deps => {
                depends_on(&mut line);
                done_deps = true;
            }
            "wait" => {
                if !done_deps {
                    depends_on(&mut line);
                    done_deps = true;
                }
                line(&format!("{indent}wait: true"));
                done_wait = true;
            }
            key if CARRIED.contains(&key) => copy_entry_nodes(yaml, k, v, &indent, &mut line),
            _ => {}
        }
    }
    if !done_path {
        line(&format!("{indent}path: {}", edit::scalar_text(path)));
    }
    if !done_deps {
        depends_on(&mut line);
    }
    if !done_wait {
        line(&format!("{indent}wait: true"));
    }
    out
}
