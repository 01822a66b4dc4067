//! The roots the walk starts from (`--root`, each FluxInstance's sync, the `flux-system`
//! bootstrap Kustomization, or a bootstrap cycle), and the Flux Kustomizations no root reaches
//! (unreferenced, or every one a root when there is none).

use std::sync::Arc;

use rayon::prelude::*;
use rustc_hash::FxHashSet as HashSet;

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::is_within;
use crate::model::{Model, ModelOptions, Name, ObjectIdx, ObjectKey, normalize};

use super::build::Builder;
use super::depends::resolve_dependencies;
use super::layer::{Layer, LayerId};
use super::operator::{Sync, instance_sync};
use super::read::{is_flux_kustomization, layer_from_object, layer_from_sync};
use super::spec::share_apply_contexts;

/// Whether a `--root` value (`name` or `namespace/name`) names this Flux Kustomization.
fn root_matches(root: &str, key: &ObjectKey) -> bool {
    match root.split_once('/') {
        Some((ns, name)) => key.name == name && key.namespace.as_deref().unwrap_or("default") == ns,
        None => key.name == root,
    }
}

/// The `roots` values that name no Flux Kustomization of the model.
pub(in crate::model) fn unmatched_roots<'a>(model: &Model, roots: &'a [String]) -> Vec<&'a str> {
    roots
        .iter()
        .filter(|r| {
            !model
                .objects
                .indices()
                .any(|i| is_flux_kustomization(model, i) && root_matches(r, &model.object(i).key))
        })
        .map(String::as_str)
        .collect()
}

/// Build the model's layers: walk from the roots, then the Flux Kustomizations no root
/// reaches; then resolve `dependsOn`.
pub(in crate::model) fn build_layers(model: &mut Model, options: &ModelOptions) {
    let flux_ks: Vec<ObjectIdx> = model
        .objects
        .indices()
        .filter(|&i| is_flux_kustomization(model, i))
        .collect();
    let (mut layers, diagnostics) = {
        let mut b = Builder::new(model, options, &flux_ks);
        let roots = if options.roots.is_empty() {
            walk_found_roots(&mut b, &flux_ks)
        } else {
            walk_named_roots(&mut b, &flux_ks)
        };
        let no_roots = roots.is_empty() && options.roots.is_empty();
        walk_unreached(&mut b, &flux_ks, roots.len(), no_roots);
        (b.layers, b.diagnostics)
    };
    share_apply_contexts(&mut layers);
    model.layers = Arc::new(layers);
    model.diagnostics.extend(diagnostics);
    resolve_dependencies(model);
}

/// The `--root` layers, walked together; an error when none matches.
fn walk_named_roots(b: &mut Builder, flux_ks: &[ObjectIdx]) -> Vec<LayerId> {
    let model = b.renderer.model;
    let options = b.options;
    let mut roots = Vec::new();
    let named = |idx: ObjectIdx| {
        let key = &model.object(idx).key;
        options.roots.iter().any(|r| root_matches(r, key))
    };
    for &idx in flux_ks.iter().filter(|&&i| named(i)) {
        let mut layer = layer_from_object(
            model,
            idx,
            &model.object(idx).key.clone(),
            roots.len(),
            None,
        );
        layer.live = true;
        roots.push(b.add(layer));
    }
    if roots.is_empty() {
        b.diagnostics.push(Diagnostic::new(
            Severity::Error,
            "",
            format!(
                "no Flux Kustomization matches --root {}",
                options.roots.join(", ")
            ),
        ));
    }
    b.root_ids = roots
        .iter()
        .map(|&r| (b.layers[r].cluster, b.layers[r].id.clone()))
        .collect();
    b.walk(roots.clone());
    roots
}

/// The roots found in the repository, each walked as one cluster: every FluxInstance's sync,
/// then every `flux-system/flux-system` bootstrap Kustomization none of them reached, then,
/// with neither, a bootstrap cycle. Each root's walk is independent of the others' (a root is a
/// cluster of its own), so they run side by side, a fleet having thousands, and are taken in
/// root order: the syncs first, then the bootstraps they did not reach (a migration to the
/// operator); a bootstrap an earlier bootstrap reached is walked for nothing.
fn walk_found_roots(b: &mut Builder, flux_ks: &[ObjectIdx]) -> Vec<LayerId> {
    let model = b.renderer.model;
    // Each FluxInstance's sync is the root of one cluster; walk those first, so that a
    // bootstrap Kustomization they apply (a migration to the operator) is the same root.
    let syncs: Vec<(Option<ObjectIdx>, Layer)> = model
        .objects
        .indices()
        .filter_map(|i| instance_sync(model, i))
        .map(|sync: Sync| (None, layer_from_sync(&sync, 0)))
        .collect();
    let mut walked = walk_side_by_side(b, syncs);
    let reached: HashSet<ObjectIdx> = walked
        .iter()
        .flat_map(|(_, alone)| alone.reached.iter().copied())
        .collect();
    let bootstraps: Vec<(Option<ObjectIdx>, Layer)> = flux_ks
        .iter()
        .filter_map(|&idx| {
            let key = &model.object(idx).key;
            if key.name != "flux-system"
                || key.namespace.as_deref() != Some("flux-system")
                || reached.contains(&idx)
            {
                return None;
            }
            let mut layer = layer_from_object(model, idx, key, 0, None);
            layer.live = true;
            Some((Some(idx), layer))
        })
        .collect();
    walked.extend(walk_side_by_side(b, bootstraps));
    // The kept renders were for the roots' walks (bases many clusters include): megabytes at
    // 142k files that need not last while the layers are taken in.
    b.renderer.forget_kept();
    // Room for every walk's layers at once: grown by doubling, the vector held up to twice
    // their records, and each growth copied them beside the old ones (a fleet has 9,000 layers
    // of half a kilobyte; the largest part of the model's peak, issue 26).
    b.layers
        .reserve_exact(walked.iter().map(|(_, alone)| alone.layers.len()).sum());
    let mut roots = Vec::new();
    for (bootstrap, alone) in walked {
        if bootstrap.is_some_and(|idx| b.reached.contains(&idx)) {
            continue;
        }
        roots.push(b.absorb(alone, roots.len()));
    }
    if roots.is_empty()
        && let Some(layer) = b.bootstrap_cycle(flux_ks)
    {
        let alone = b.walk_alone(layer);
        roots.push(b.absorb(alone, 0));
    }
    roots
}

/// Walk from each of `candidates` (a bootstrap's object, or none; its root layer) side by side.
fn walk_side_by_side<'m, 'r>(
    b: &Builder<'m, 'r>,
    candidates: Vec<(Option<ObjectIdx>, Layer)>,
) -> Vec<(Option<ObjectIdx>, Builder<'m, 'r>)> {
    candidates
        .into_par_iter()
        .map(|(bootstrap, root)| (bootstrap, b.walk_alone(root)))
        .collect()
}

/// Flux Kustomizations no root reaches: with no root at all, every one is a root (one shared
/// cluster); otherwise each is unreferenced (modelled in a cluster of its own, not live).
/// With no root, a Flux Kustomization whose file lies below another one's `spec.path` is no
/// root either: that directory is synced, and when its build does not take this file (a
/// commented-out entry, a folder left behind), Flux never applies it. Those are walked last,
/// so that the layers that do apply them come first.
fn walk_unreached(b: &mut Builder, flux_ks: &[ObjectIdx], clusters: usize, no_roots: bool) {
    let model = b.renderer.model;
    let synced_dirs: Vec<(ObjectIdx, String)> = if no_roots {
        flux_ks
            .iter()
            .filter_map(|&idx| {
                let key = model.object(idx).key.clone();
                let dir = normalize(&layer_from_object(model, idx, &key, 0, None).path)?;
                (!dir.is_empty()).then_some((idx, dir))
            })
            .collect()
    } else {
        Vec::new()
    };
    let below_a_synced_dir = |idx: ObjectIdx| {
        let path = &model.repo.file(model.object(idx).file).path;
        synced_dirs
            .iter()
            .filter(|(other, _)| *other != idx)
            .find(|(_, dir)| path != dir && is_within(path, dir))
    };
    let (tops, below): (Vec<ObjectIdx>, Vec<ObjectIdx>) = flux_ks
        .iter()
        .partition(|&&idx| below_a_synced_dir(idx).is_none());
    let mut next_cluster = clusters;
    for idx in tops.into_iter().chain(below) {
        if b.reached.contains(&idx) {
            continue;
        }
        let obj = model.object(idx);
        let cluster = if no_roots { 0 } else { next_cluster };
        next_cluster += 1;
        let mut layer = layer_from_object(model, idx, &obj.key.clone(), cluster, None);
        let synced_dir = below_a_synced_dir(idx);
        layer.live = no_roots && synced_dir.is_none();
        if !layer.live {
            let (severity, why) = not_live(b, &layer, synced_dir, no_roots);
            b.diagnostics.push(
                Diagnostic::new(severity, &model.repo.file(obj.file).path, why).at(obj.line(), 1),
            );
        }
        let id = b.add(layer);
        b.walk(vec![id]);
    }
}

/// Why a Flux Kustomization no root reaches is not live. Below a live layer whose build fails,
/// what Flux applies is unknown (it applies nothing new until the build is repaired): a
/// consequence of the error reported at that layer, not a second defect.
fn not_live(
    b: &Builder,
    layer: &Layer,
    synced_dir: Option<&(ObjectIdx, String)>,
    no_roots: bool,
) -> (Severity, String) {
    let failed_syncer = synced_dir.and_then(|(other, _)| {
        b.layers.iter().find(|l| {
            l.live && l.object == Some(*other) && l.variants.iter().any(|v| v.error.is_some())
        })
    });
    match (synced_dir, failed_syncer) {
        (Some((_, dir)), Some(syncer)) if no_roots => (
            Severity::Note,
            format!(
                "Flux Kustomization {} is below {dir}, which {} syncs, but that layer's build fails (reported there), so whether Flux applies it is unknown: not treated as live",
                layer.id, syncer.id
            ),
        ),
        (Some((_, dir)), None) if no_roots => (
            Severity::Warning,
            format!(
                "Flux Kustomization {} is below {dir}, which a layer syncs, but no layer's build takes it (unreferenced): not treated as live",
                layer.id
            ),
        ),
        _ => (
            Severity::Warning,
            format!(
                "Flux Kustomization {} is not applied by any root (unreferenced): not treated as live",
                layer.id
            ),
        ),
    }
}

impl Builder<'_, '_> {
    /// The root of a tree that applies its own root: the namespace-less bootstrap `flux-system`
    /// Kustomization (the name `flux bootstrap` and flux-operator give the root) shipped inside
    /// the tree it syncs, taking its namespace from the layer that applies it
    /// (`targetNamespace`). With no FluxInstance sync and no namespaced bootstrap Kustomization
    /// to start from, every layer of such a tree lies below another one's path, yet once a
    /// bootstrap script applied the root, Flux keeps the whole cycle reconciled: it is live.
    /// Found by walking from the candidate in a throwaway builder: the cycle closes when the walk
    /// reaches the candidate's own object, and gives the root the identity Flux gives it.
    pub(super) fn bootstrap_cycle(&self, flux_ks: &[ObjectIdx]) -> Option<Layer> {
        let model = self.renderer.model;
        flux_ks.iter().find_map(|&idx| {
            let key = &model.object(idx).key;
            if key.name != "flux-system" || key.namespace.is_some() || self.reached.contains(&idx) {
                return None;
            }
            let mut trial = Builder::new(model, self.options, flux_ks);
            // Tried in the namespace bootstrap gives it: its sourceRef (namespace-less too) then
            // names the bootstrap source; the walk says which namespace the cycle gives it.
            let bootstrap = ObjectKey {
                namespace: Some(Name::from("flux-system")),
                ..key.clone()
            };
            let start = trial.add(layer_from_object(model, idx, &bootstrap, 0, None));
            trial.reached.clear();
            trial.root_ids.insert((0, trial.layers[start].id.clone()));
            trial.walk(vec![start]);
            let mut root = match trial.layers.iter().skip(1).find(|l| l.object == Some(idx)) {
                Some(closing) => closing.clone(),
                None if trial.reached.contains(&idx) => trial.layers[start].clone(),
                None => return None,
            };
            root.applied_by = None;
            root.live = true;
            root.variants = Vec::new();
            root.source_root = None;
            Some(root)
        })
    }
}
