//! FM002's move planner: the disposable workloads of a layer and what only they use go to a
//! layer of their own, one per place they come from (an existing folder, or files moved to a new
//! one), in two phases when the old layer prunes. Where the files go is `folders`; what the
//! kustomizations they leave did to them is `carry`.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use crate::edit::Changeset;
use crate::load::{FileId, SourceFile, parent_of};
use crate::model::{
    Layer, LayerId, Model, Object, ObjectIdx, Rendered, Renderer, Variant, display_dir,
};
use crate::parse::NodeId;
use crate::rollout::restarts_only;
use crate::rules::disposable::{Analysis, Bundle};
use crate::rules::layer_split::{
    built_elsewhere, drop_spec_entries, free_name, needs_protection, not_carried_patches,
    path_text, protect_first, register, second_phase,
};
use crate::rules::{Fix, plural, report_text};

use super::document::{DependsOn, new_layer_document};
use super::folders::{Ctx, Touched};
use super::meta::META;
use super::overlays::flux_overlays;

/// What a move does on the cluster.
static TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "move"));

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

impl Source {
    /// The folder the group comes from, for messages.
    fn from(&self, model: &Model, variant: &Variant) -> String {
        match self {
            Source::Folder { dir, .. } => dir.clone(),
            Source::Files { chain } => chain.last().map_or_else(
                || display_dir(&variant.dir).to_string(),
                |&f| display_dir(parent_of(&model.repo.file(f).path)).to_string(),
            ),
        }
    }
}

/// The move of the workloads and what only they use into a layer of their own — in two phases
/// when the old layer prunes: the moved objects would be deleted before their new layer applies
/// them (it runs after the old one, or in no guaranteed order), so phase 1 protects them where
/// they are and the move comes once that is applied. A disposable workload of a kind that only
/// restarts (its pods) may be recreated; what carries data, identity or a release may not.
pub(super) fn plan_fix(
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
            TRADEOFF.as_str(),
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

/// Plan the move of the workloads and what only they use (see [`plan_fix`]): one new layer per
/// place they come from.
fn plan_move(
    an: &mut Analysis,
    layer_id: LayerId,
    vi: usize,
    bundle: &Bundle,
) -> Result<Fix, String> {
    let model = an.model;
    let layer = model.layer(layer_id);
    let (obj, lfile) = layer_object(model, layer)?;
    let variant = single_variant(layer, vi)?;
    let inventory = &variant.inventory;
    let moved = rendered_once(layer, inventory, bundle)?;
    let flux = flux_overlays(model, layer)?;
    let groups = group_by_source(model, variant, &moved, bundle);
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
        let name = free_name(
            model,
            layer,
            &format!("{}-runners", layer.id.name),
            &planned_names,
        );
        planned_names.push(name.clone());
        let crossing = renamed_reference(an, &ctx, layer_id, vi, bundle, source, members);
        let dir = place(an, &mut ctx, source, members, &name, crossing).map_err(|e| {
            if groups.len() > 1 {
                format!(
                    "the workloads of {} cannot move ({e}); fluxmend moves all of a layer's disposable workloads or none",
                    source.from(model, variant)
                )
            } else {
                e
            }
        })?;
        let path = path_text(layer, &dir)?;
        let group: BTreeSet<ObjectIdx> = members.iter().map(|&i| inventory[i].object).collect();
        let needs = an.needs(layer_id, vi, &group, &bundle.moved);
        let depends = DependsOn::of(layer, &needs);
        docs.push((
            name.clone(),
            new_layer_document(&lfile.yaml, obj.root, layer, &name, &path, &depends),
        ));
        paths.push(format!(
            "a new Kustomization {name} (path {path}, wait: true, {})",
            depends.says(layer, &needs)
        ));
    }
    if let Some(reason) = used_elsewhere(model, layer_id, vi, &ctx.touched) {
        return Err(reason);
    }
    let mut changes = ctx.changes;
    register(model, layer, &docs, &mut changes)?;
    let dropped = drop_health_checks(model, layer, inventory, &moved, &mut changes)?;
    let workloads = bundle.gated.len();
    let new_names: Vec<&str> = docs.iter().map(|(n, _)| n.as_str()).collect();
    let description = format!(
        "{}{}",
        move_description(layer, workloads, moved.len() - workloads, &paths, dropped),
        not_carried_patches(model, layer, &new_names.join(" and "))
    );
    let title = format!(
        "move {} out of {}",
        plural(workloads, "disposable workload", "disposable workloads"),
        layer.id.name
    );
    Ok(Fix::titled(title, description, TRADEOFF.as_str(), changes))
}

/// The old layer's object and its file, which the move edits.
fn layer_object<'m>(
    model: &'m Model,
    layer: &Layer,
) -> Result<(&'m Object, &'m SourceFile), String> {
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
    Ok((obj, lfile))
}

/// The layer's one variant, completely rendered: FM002 splits layers of one folder only.
fn single_variant(layer: &Layer, vi: usize) -> Result<&Variant, String> {
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
    Ok(variant)
}

/// The inventory indices of the moved objects, each of which the layer renders once.
fn rendered_once(
    layer: &Layer,
    inventory: &[Rendered],
    bundle: &Bundle,
) -> Result<Vec<usize>, String> {
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
    Ok(moved)
}

/// The moved objects grouped by where they come from: one new layer per group.
fn group_by_source(
    model: &Model,
    variant: &Variant,
    moved: &[usize],
    bundle: &Bundle,
) -> Vec<(Source, Vec<usize>)> {
    let mut renderer = Renderer::new(model);
    let mut groups: Vec<(Source, Vec<usize>)> = Vec::new();
    for &i in moved {
        let source = source_of(model, &mut renderer, variant, &variant.inventory[i], bundle);
        match groups.iter_mut().find(|(s, _)| *s == source) {
            Some((_, members)) => members.push(i),
            None => groups.push((source, vec![i])),
        }
    }
    groups
}

/// Where a group carries a name prefix or suffix (from a kustomization it leaves or the old
/// layer's spec), a reference from one side of the split to the other (kustomize rewrites it
/// only within one build).
fn renamed_reference(
    an: &mut Analysis,
    ctx: &Ctx,
    layer_id: LayerId,
    vi: usize,
    bundle: &Bundle,
    source: &Source,
    members: &[usize],
) -> Option<(String, String)> {
    let model = ctx.model;
    let inventory = &ctx.variant.inventory;
    let levels = match source {
        Source::Folder { k, .. } => inventory[members[0]].chain[..*k].to_vec(),
        Source::Files { chain } => chain.clone(),
    };
    let carried_prefix = levels.iter().any(|&f| {
        model
            .kustomize_dirs
            .get(parent_of(&model.repo.file(f).path))
            .is_some_and(|d| !d.name_prefix.is_empty() || !d.name_suffix.is_empty())
    }) || ctx.flux.prefix_or_suffix;
    if !carried_prefix {
        return None;
    }
    let mut only_group = bundle.clone();
    only_group.moved = members.iter().map(|&i| inventory[i].object).collect();
    an.cross_references(layer_id, vi, &only_group)
        .into_iter()
        .next()
}

/// Plan where one group goes; returns the new layer's folder.
fn place(
    an: &mut Analysis,
    ctx: &mut Ctx,
    source: &Source,
    members: &[usize],
    name: &str,
    crossing: Option<(String, String)>,
) -> Result<String, String> {
    match (source, crossing) {
        (_, Some((a, b))) => Err(format!(
            "namePrefix/nameSuffix rename references, and {a} names {b} across the split: kustomize would no longer rewrite that reference"
        )),
        (Source::Folder { k: 0, dir }, None) => ctx.plan_move_folder(dir),
        (Source::Folder { k, dir }, None) => ctx.plan_folder(an, *k, dir, members, name),
        (Source::Files { chain }, None) => ctx.plan_files(an, chain, members, name),
    }
}

/// The fix's description: what moves where, and the `healthChecks` entries that go.
fn move_description(
    layer: &Layer,
    workloads: usize,
    companions: usize,
    paths: &[String],
    dropped: usize,
) -> String {
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
    description
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
        chain: r.chain.to_vec(),
    }
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
