//! Rollout: what Flux does on the cluster, step by step, when a change merges — the model of
//! Flux *in motion* that the transition gate and `fluxmend simulate` share. Rule-free: it reads
//! two models (the repository before and after) and plays the new revision through
//! kustomize-controller's reconcile of each layer (`internal/controller/kustomization_controller.go`):
//!
//! 1. **dependencies** — every `dependsOn` target must be Ready; when it reads the same source it
//!    must already have applied the new revision. Only such same-source chains order two layers;
//!    any other pair may go either way, and the worst order counts;
//! 2. **apply** — the new build is applied with server-side apply, which labels every object
//!    `kustomize.toolkit.fluxcd.io/name`/`namespace` with the applying layer (ownership moves to
//!    whichever layer applied an object last);
//! 3. **prune** (`prune: true`) — objects of the previous inventory missing from the new build are
//!    deleted, but only when the object in the cluster still carries *this* layer's labels and is
//!    not annotated `kustomize.toolkit.fluxcd.io/prune: disabled`,
//!    `kustomize.toolkit.fluxcd.io/reconcile: disabled` or `kustomize.toolkit.fluxcd.io/ssa:
//!    Ignore` (`deleteObjects`: `ssa.DeleteOptions` `Inclusions` are the owner labels,
//!    `Exclusions` those three, compared case-insensitively by fluxcd/pkg `ssa/utils`
//!    `AnyInMetadata`; `ssa: Ignore` since kustomize-controller v1.1.0);
//! 4. **health** — not modelled here; see [`failure`].
//!
//! A layer that leaves its parent's build is deleted by the parent's prune, and its own
//! inventory then follows its `deletionPolicy` (MirrorPrune: deleted when it prunes; Delete and
//! WaitForTermination: deleted; Orphan: kept). What a deletion means depends on the object:
//! a FluxInstance makes flux-operator uninstall Flux (`fluxinstance_uninstaller.go`), a
//! Namespace takes everything in it, a CRD every object of its kind, a PersistentVolumeClaim its
//! data; anything else applied again later is recreated.

pub mod failure;

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::model::{FLUX_KUSTOMIZE_GROUP, FLUX_OPERATOR_GROUP, Layer, LayerId, LayerRef, Model};
use crate::model::{ObjectKey, Rendered, display_dir};

/// The annotation that keeps kustomize-controller from pruning an object (the exemption a
/// phased move adds first).
pub const PRUNE_DISABLED: (&str, &str) = ("kustomize.toolkit.fluxcd.io/prune", "disabled");
/// The other annotation kustomize-controller's prune skips (it also stops the object being
/// applied).
const RECONCILE_DISABLED: (&str, &str) = ("kustomize.toolkit.fluxcd.io/reconcile", "disabled");
/// kustomize-controller neither applies nor prunes an object that carries this.
const SSA_IGNORE: (&str, &str) = ("kustomize.toolkit.fluxcd.io/ssa", "Ignore");
/// What kustomize-controller's prune skips (`deleteObjects`' exclusions).
const PRUNE_EXCLUSIONS: [(&str, &str); 3] = [PRUNE_DISABLED, RECONCILE_DISABLED, SSA_IGNORE];

/// Whether `annotations` hold one of `wanted`, the value compared as fluxcd/pkg's `ssa/utils`
/// `AnyInMetadata` does (case-insensitively).
fn carries(annotations: &[(String, String)], wanted: &[(&str, &str)]) -> bool {
    annotations.iter().any(|(k, v)| {
        wanted
            .iter()
            .any(|(wk, wv)| k == wk && v.eq_ignore_ascii_case(wv))
    })
}

/// flux-operator does not uninstall a FluxInstance that carries this when it is deleted.
const INSTANCE_RECONCILE_DISABLED: (&str, &str) = ("fluxcd.controlplane.io/reconcile", "disabled");

/// How bad a deletion is, from least to worst.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Consequence {
    /// A workload deleted and applied again: its pods restart.
    Restart,
    /// A configuration object (Secret, ConfigMap, ServiceAccount, Service, RBAC…) deleted and
    /// applied again: what uses it fails until it is back, a Service gets a new address.
    Recreate,
    /// Deleted and not applied again by any layer.
    Removed,
    /// Its data is gone (a PersistentVolumeClaim or PersistentVolume).
    DataLoss,
    /// Deleting it deletes more: a Namespace's objects, a CRD's objects, a HelmRelease's
    /// release, a Flux Kustomization's inventory.
    Cascade,
    /// flux-operator uninstalls Flux: the controllers and everything the instance manages.
    Uninstall,
}

impl Consequence {
    /// Worse than pods restarting: what `simulate` exits 1 for.
    pub fn is_harmful(self) -> bool {
        self > Consequence::Restart
    }
}

/// One live object deleted during the rollout.
#[derive(Clone, Debug)]
pub struct Deletion {
    /// Index of the cluster (root) in the model after the change.
    pub cluster: usize,
    pub object: ObjectKey,
    /// The layer whose prune (or whose removal) deletes it.
    pub deleted_by: LayerRef,
    /// The layer that applies it again afterwards, if any.
    pub recreated_by: Option<LayerRef>,
    pub consequence: Consequence,
    /// What the consequence means for this object, in a sentence.
    pub effect: String,
    /// Why it is deleted: which step, and why nothing protects it.
    pub cause: String,
}

/// What one layer does with the new revision.
#[derive(Clone, Debug)]
pub struct Step {
    pub layer: LayerRef,
    pub change: LayerChange,
    /// Layers that must have applied this revision first (same source, `dependsOn`).
    pub after: Vec<LayerRef>,
    /// Objects it applies.
    pub applies: usize,
    /// Objects it takes over from another layer (kept: applied before the old layer prunes).
    pub takes_over: Vec<ObjectKey>,
    /// Objects that leave its inventory and what happens to each in the cluster.
    pub leaves: Vec<Leaving>,
}

/// An object that leaves a layer's inventory.
#[derive(Clone, Debug)]
pub struct Leaving {
    pub object: ObjectKey,
    pub outcome: LeaveOutcome,
}

/// What the old layer's prune does with an object that left its inventory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaveOutcome {
    /// Deleted (see the cluster's deletions).
    Deleted,
    /// The layer does not prune: the object stays, still labelled as this layer's.
    Orphaned,
    /// Annotated `prune: disabled` (or `reconcile: disabled`) in the cluster: kept.
    Protected,
    /// Another layer applied it first and took the ownership labels: kept.
    HandedOver,
}

/// How a layer changes with the revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LayerChange {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// The rollout of one cluster (one root).
#[derive(Clone, Debug)]
pub struct ClusterRollout {
    /// The root layer, as `namespace/name` and where it is defined.
    pub root: String,
    /// Every layer of the cluster in an order Flux may reconcile them.
    pub steps: Vec<Step>,
    pub deletions: Vec<Deletion>,
}

/// The rollout of a change, per cluster.
#[derive(Clone, Debug)]
pub struct Rollout {
    pub clusters: Vec<ClusterRollout>,
}

impl Rollout {
    /// Every deletion of every cluster.
    pub fn deletions(&self) -> impl Iterator<Item = &Deletion> {
        self.clusters.iter().flat_map(|c| c.deletions.iter())
    }
}

/// An object as one layer applies it: its identity, the placeholder bindings of the variant it
/// comes from (objects of different variants never meet on one cluster), and whether it is
/// exempt from prune.
#[derive(Clone, Debug)]
struct Applied {
    key: ObjectKey,
    bindings: Bindings,
    exempt: bool,
    /// flux-operator leaves Flux installed when this FluxInstance is deleted.
    instance_disabled: bool,
    is_instance: bool,
    /// For a name holding a `${VAR}` that the layer's `postBuild` substitutes: that
    /// `postBuild`. The same text under two different substitutions (one shared component
    /// in every app's layer) names two objects; under the same one (a layer split off with its
    /// settings), one.
    scope: Option<crate::parse::Value>,
    /// Applied to another cluster (the layer's `spec.kubeConfig`).
    remote: bool,
}

/// Whether an object's name or namespace holds a `${VAR}` left for `postBuild` to substitute.
fn named_by_post_build(key: &ObjectKey) -> bool {
    key.name.contains("${") || key.namespace.as_deref().is_some_and(|ns| ns.contains("${"))
}

/// Placeholder bindings of a variant: (placeholder, the directory name it matched).
type Bindings = Vec<(String, String)>;

/// For each object (and, for a name `postBuild` substitutes, the layer it belongs to), the layers
/// that apply it and the bindings of the variant it comes from.
type Appliers = HashMap<(ObjectKey, Option<crate::parse::Value>), Vec<(LayerRef, Bindings)>>;

/// One side of a cluster: its live layers by identity.
struct Side<'m, 'r> {
    model: &'m Model<'r>,
    layers: BTreeMap<LayerRef, LayerId>,
}

impl<'m, 'r> Side<'m, 'r> {
    fn inventory(&self, id: &LayerRef) -> Vec<Applied> {
        let Some(&l) = self.layers.get(id) else {
            return Vec::new();
        };
        let layer = self.model.layer(l);
        let post_build = layer.object.map(|o| self.model.object(o)).and_then(|o| {
            let yaml = &self.model.repo.file(o.file).yaml;
            yaml.lookup(o.root, &["spec", "postBuild"])
                .and_then(|n| yaml.value(n).ok())
        });
        layer
            .variants
            .iter()
            .flat_map(|v| {
                v.inventory.iter().map(|r| {
                    let annotations = annotations(self.model, layer, r);
                    Applied {
                        key: r.key.clone(),
                        bindings: v.bindings.clone(),
                        exempt: carries(&annotations, &PRUNE_EXCLUSIONS),
                        instance_disabled: carries(&annotations, &[INSTANCE_RECONCILE_DISABLED]),
                        is_instance: self.model.is_flux_instance(r.object),
                        scope: post_build.clone().filter(|_| named_by_post_build(&r.key)),
                        remote: layer.remote,
                    }
                })
            })
            .collect()
    }

    fn layer(&self, id: &LayerRef) -> Option<&'m Layer> {
        self.layers.get(id).map(|&l| self.model.layer(l))
    }
}

/// The annotations an object carries once applied: its own, its kustomizations'
/// `commonAnnotations`, and the layer's `commonMetadata.annotations` (what kustomize-controller
/// sets on every object it applies). Patches that add annotations are not modelled, which only
/// makes an object look less protected than it is.
pub fn annotations(model: &Model, layer: &Layer, r: &Rendered) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut read = |file: usize, node: Option<crate::parse::NodeId>| {
        let yaml = &model.repo.file(file).yaml;
        if let Some(map) = node {
            for &(k, v) in yaml.entries(map) {
                if let (Some(k), Some(v)) = (yaml.scalar(k), yaml.scalar(v)) {
                    out.push((k.to_string(), v.to_string()));
                }
            }
        }
    };
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    read(
        obj.file,
        yaml.lookup(obj.root, &["metadata", "annotations"]),
    );
    for &k in &r.chain {
        let kyaml = &model.repo.file(k).yaml;
        let node = kyaml
            .docs
            .first()
            .and_then(|d| kyaml.lookup(d.root, &["commonAnnotations"]));
        read(k, node);
    }
    if let Some(lo) = layer.object.map(|o| model.object(o)) {
        let lyaml = &model.repo.file(lo.file).yaml;
        read(
            lo.file,
            lyaml.lookup(lo.root, &["spec", "commonMetadata", "annotations"]),
        );
    }
    out
}

/// Whether kustomize-controller's prune skips this object once applied (annotated
/// `prune: disabled`, `reconcile: disabled` or `ssa: Ignore`).
pub fn prune_exempt(model: &Model, layer: &Layer, r: &Rendered) -> bool {
    carries(&annotations(model, layer, r), &PRUNE_EXCLUSIONS)
}

/// Two variants' bindings can meet on one cluster when no placeholder is bound differently.
fn compatible(a: &[(String, String)], b: &[(String, String)]) -> bool {
    a.iter()
        .all(|(p, v)| b.iter().all(|(q, w)| p != q || v == w))
}

/// A stable name for each cluster: its root layer and the path it syncs (what tells a fleet's
/// clusters apart, and stays put when a change moves the file that defines the root).
pub fn cluster_keys(model: &Model) -> BTreeMap<usize, String> {
    let mut out: BTreeMap<usize, String> = BTreeMap::new();
    for (cluster, layers) in top_layers(model) {
        let mut key = match layers.as_slice() {
            [root] => format!("{} (path {})", root.id, display_dir(&root.path)),
            // No FluxInstance sync or bootstrap Kustomization: every layer is its own root.
            _ => "every layer (no root found: no FluxInstance sync, no bootstrap flux-system Kustomization)".to_string(),
        };
        let taken = out.values().filter(|k| k.starts_with(&key)).count();
        if taken > 0 {
            key = format!("{key} #{}", taken + 1);
        }
        out.insert(cluster, key);
    }
    out
}

/// The live layers no other layer applies, per cluster: a cluster's root, or — when the
/// repository holds no root — every such layer, in one shared cluster.
fn top_layers<'m>(model: &'m Model) -> BTreeMap<usize, Vec<&'m Layer>> {
    let mut roots: BTreeMap<usize, Vec<&Layer>> = BTreeMap::new();
    for (_, layer) in model.live_layers() {
        if layer.applied_by.is_none() {
            roots.entry(layer.cluster).or_default().push(layer);
        }
    }
    roots
}

/// Whether PATH holds no root (no FluxInstance sync, no bootstrap Kustomization, no `--root`)
/// and several top layers were taken for roots instead.
pub fn rootless(model: &Model) -> bool {
    top_layers(model).values().any(|layers| layers.len() > 1)
}

fn side<'m, 'r>(model: &'m Model<'r>, cluster: Option<usize>) -> Side<'m, 'r> {
    let layers = model
        .live_layers()
        .filter(|(_, l)| Some(l.cluster) == cluster)
        .map(|(id, l)| (l.id.clone(), id))
        .collect();
    Side { model, layers }
}

/// Play the change from `before` to `after` through Flux's reconcile, cluster by cluster.
pub fn play(before: &Model, after: &Model) -> Rollout {
    let before_keys = cluster_keys(before);
    let after_keys = cluster_keys(after);
    let mut names: BTreeMap<&String, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (&c, k) in &before_keys {
        names.entry(k).or_default().0 = Some(c);
    }
    for (&c, k) in &after_keys {
        names.entry(k).or_default().1 = Some(c);
    }
    let clusters = names
        .into_iter()
        .map(|(root, (b, a))| play_cluster(root, side(before, b), side(after, a), a.or(b)))
        .collect();
    Rollout { clusters }
}

/// The layers `id` is guaranteed to run after: its `dependsOn` targets that read the same
/// source (they must have applied this revision), transitively.
fn ordered_before(side: &Side, id: &LayerRef) -> BTreeSet<LayerRef> {
    let mut out = BTreeSet::new();
    let mut frontier = vec![id.clone()];
    while let Some(current) = frontier.pop() {
        let Some(layer) = side.layer(&current) else {
            continue;
        };
        for &dep in &layer.depends_on_ids {
            let d = side.model.layer(dep);
            if d.live && d.source == layer.source && out.insert(d.id.clone()) {
                frontier.push(d.id.clone());
            }
        }
    }
    out
}

/// The `deletionPolicy` of a layer's Kustomization object (`MirrorPrune` when unset).
fn deletion_policy(model: &Model, layer: &Layer) -> String {
    layer
        .object
        .map(|o| model.object(o))
        .and_then(|o| {
            let yaml = &model.repo.file(o.file).yaml;
            yaml.lookup(o.root, &["spec", "deletionPolicy"])
                .and_then(|n| yaml.scalar(n))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "MirrorPrune".into())
}

/// Whether a layer's inventory is deleted when the layer itself is.
fn deletes_inventory(model: &Model, layer: &Layer) -> bool {
    match deletion_policy(model, layer).as_str() {
        "Orphan" => false,
        "Delete" | "WaitForTermination" => true,
        _ => layer.prune,
    }
}

fn play_cluster(root: &str, before: Side, after: Side, cluster: Option<usize>) -> ClusterRollout {
    let cluster = cluster.unwrap_or(0);
    let ids: BTreeSet<LayerRef> = before
        .layers
        .keys()
        .chain(after.layers.keys())
        .cloned()
        .collect();
    let inv_before: BTreeMap<&LayerRef, Vec<Applied>> =
        ids.iter().map(|id| (id, before.inventory(id))).collect();
    let inv_after: BTreeMap<&LayerRef, Vec<Applied>> =
        ids.iter().map(|id| (id, after.inventory(id))).collect();
    // Which layers apply each object, before and after: what the steps ask of every object.
    let index = |inv: &BTreeMap<&LayerRef, Vec<Applied>>| {
        let mut by_key: Appliers = HashMap::default();
        for (id, objects) in inv {
            for o in objects {
                by_key
                    .entry((o.key.clone(), o.scope.clone()))
                    .or_default()
                    .push(((*id).clone(), o.bindings.clone()));
            }
        }
        by_key
    };
    let (applied_before, applied_after) = (index(&inv_before), index(&inv_after));
    // The layers applying `x` (in a variant it can meet), as one side says.
    let appliers = |side: &Appliers, x: &Applied| -> Vec<LayerRef> {
        side.get(&(x.key.clone(), x.scope.clone()))
            .map(|v| {
                v.iter()
                    .filter(|(_, b)| compatible(b, &x.bindings))
                    .map(|(l, _)| l.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    let order = topological(&before, &after, &ids);
    let mut steps = Vec::new();
    let mut deletions = Vec::new();
    for id in &order {
        let (b, a) = (before.layer(id), after.layer(id));
        let change = match (b, a) {
            (None, Some(_)) => LayerChange::Added,
            (Some(_), None) => LayerChange::Removed,
            _ if same_layer(&before, &after, id, &inv_before[id], &inv_after[id]) => {
                LayerChange::Unchanged
            }
            _ => LayerChange::Changed,
        };
        // The prune that deletes what left this layer's inventory: its own (the old or the new
        // spec may be the one in force when the revision arrives), or, for a removed layer, its
        // deletion policy run when the parent prunes its Kustomization object. Which layers are
        // sure to have applied the revision first is asked only when something leaves.
        let (prunes, runs_after): (bool, Box<dyn Fn() -> BTreeSet<LayerRef>>) = match (b, a) {
            (Some(b), Some(a)) => (b.prune || a.prune, Box::new(|| ordered_before(&after, id))),
            (Some(b), None) => {
                let parent = b.applied_by.map(|p| before.model.layer(p).id.clone());
                let parent_prunes = parent
                    .as_ref()
                    .and_then(|p| after.layer(p).or(before.layer(p)))
                    .is_some_and(|p| p.prune);
                let after = &after;
                (
                    parent_prunes && deletes_inventory(before.model, b),
                    Box::new(move || {
                        let mut runs = parent
                            .as_ref()
                            .map(|p| ordered_before(after, p))
                            .unwrap_or_default();
                        runs.extend(parent.clone());
                        runs
                    }),
                )
            }
            _ => (false, Box::new(BTreeSet::new)),
        };
        let mut takes_over = Vec::new();
        let mut seen: HashSet<&ObjectKey> = HashSet::default();
        for x in &inv_after[id] {
            let before_by = appliers(&applied_before, x);
            let elsewhere = before_by.iter().any(|l| l != id);
            let here = before_by.iter().any(|l| l == id);
            if elsewhere && !here && seen.insert(&x.key) {
                takes_over.push(x.key.clone());
            }
        }
        let mut leaves: Vec<Leaving> = Vec::new();
        let mut left: HashSet<&ObjectKey> = HashSet::default();
        let mut first_before: Option<BTreeSet<LayerRef>> = None;
        for x in &inv_before[id] {
            let mut applied_by = appliers(&applied_after, x);
            if applied_by.contains(id) || !left.insert(&x.key) {
                continue;
            }
            applied_by.retain(|l| l != id);
            let outcome = if !prunes {
                LeaveOutcome::Orphaned
            } else if x.exempt {
                LeaveOutcome::Protected
            } else if applied_by
                .iter()
                .any(|m| first_before.get_or_insert_with(&runs_after).contains(m))
            {
                LeaveOutcome::HandedOver
            } else {
                LeaveOutcome::Deleted
            };
            if outcome == LeaveOutcome::Deleted {
                let recreated_by = applied_by.first().cloned();
                let (mut consequence, mut effect) = consequence(x, recreated_by.is_some());
                // A removed layer's Kustomization: what goes with it is its own step's business.
                let removed_layer = before.layers.keys().find(|l| {
                    x.key.group() == FLUX_KUSTOMIZE_GROUP
                        && x.key.kind == "Kustomization"
                        && l.name == x.key.name.as_str()
                        && x.key
                            .namespace
                            .as_deref()
                            .is_some_and(|ns| ns == l.namespace)
                        && !after.layers.contains_key(*l)
                });
                if let Some(l) = removed_layer.and_then(|l| before.layer(l))
                    && recreated_by.is_none()
                    && !deletes_inventory(before.model, l)
                {
                    consequence = Consequence::Removed;
                    effect = format!(
                        "Flux Kustomization {} is deleted; its deletionPolicy ({}, prune: {}) leaves what it applied in the cluster, unmanaged",
                        l.id,
                        deletion_policy(before.model, l),
                        l.prune
                    );
                }
                let mut cause = match (&recreated_by, a) {
                    (Some(m), Some(_)) if ordered_before(&after, m).contains(id) => format!(
                        "it leaves {id}'s inventory, and {m} depends on {id}: {id} prunes it before {m} applies it"
                    ),
                    (Some(m), Some(_)) => format!(
                        "it leaves {id}'s inventory and {id} may prune it before {m} applies it: nothing orders {m} first"
                    ),
                    (None, Some(_)) => format!("it leaves {id}'s inventory and {id} prunes it"),
                    (_, None) => format!(
                        "{id} is removed and its deletionPolicy ({}) deletes its inventory",
                        b.map_or_else(String::new, |b| deletion_policy(before.model, b))
                    ),
                };
                if x.scope.is_some() {
                    cause.push_str(&format!(
                        "; its name depends on postBuild: {id} substitutes the ${{…}} in it, so a layer that substitutes other values applies another object of the same text"
                    ));
                }
                deletions.push(Deletion {
                    cluster,
                    object: x.key.clone(),
                    deleted_by: id.clone(),
                    recreated_by,
                    consequence,
                    effect,
                    cause,
                });
            }
            leaves.push(Leaving {
                object: x.key.clone(),
                outcome,
            });
        }
        steps.push(Step {
            layer: id.clone(),
            change,
            after: a
                .map(|a| {
                    a.depends_on_ids
                        .iter()
                        .map(|&d| after.model.layer(d).id.clone())
                        .collect()
                })
                .unwrap_or_default(),
            applies: inv_after[id].len(),
            takes_over,
            leaves,
        });
    }
    ClusterRollout {
        root: root.to_string(),
        steps,
        deletions,
    }
}

/// Whether a layer reads the same and applies the same before and after (its Kustomization
/// object's content included).
fn same_layer(before: &Side, after: &Side, id: &LayerRef, b: &[Applied], a: &[Applied]) -> bool {
    let keys = |v: &[Applied]| v.iter().map(|x| x.key.clone()).collect::<BTreeSet<_>>();
    let spec = |s: &Side| {
        s.layer(id)
            .and_then(|l| l.object)
            .map(|o| s.model.object(o))
            .and_then(|o| s.model.repo.file(o.file).yaml.value(o.root).ok())
    };
    keys(b) == keys(a) && spec(before) == spec(after)
}

/// The layers in an order Flux may reconcile them: `dependsOn` first, then by name; a removed
/// layer goes with its parent, whose prune deletes it.
fn topological(before: &Side, after: &Side, ids: &BTreeSet<LayerRef>) -> Vec<LayerRef> {
    // What each layer waits for: its dependsOn targets, or (removed) the parent that deletes it.
    let waits_for = |id: &LayerRef| -> Vec<LayerRef> {
        match after.layer(id) {
            Some(l) => l
                .depends_on_ids
                .iter()
                .map(|&d| after.model.layer(d).id.clone())
                .filter(|d| ids.contains(d) && d != id)
                .collect(),
            None => before
                .layer(id)
                .and_then(|l| l.applied_by)
                .map(|p| before.model.layer(p).id.clone())
                .filter(|p| ids.contains(p) && p != id)
                .into_iter()
                .collect(),
        }
    };
    let mut missing: BTreeMap<&LayerRef, usize> = BTreeMap::new();
    let mut unblocks: BTreeMap<LayerRef, Vec<&LayerRef>> = BTreeMap::new();
    for id in ids {
        let w = waits_for(id);
        missing.insert(id, w.len());
        for d in w {
            unblocks.entry(d).or_default().push(id);
        }
    }
    let mut ready: BTreeSet<&LayerRef> = missing
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut placed = Vec::with_capacity(ids.len());
    let mut done: HashSet<&LayerRef> = HashSet::default();
    while placed.len() < ids.len() {
        // A cycle (reported as a diagnostic by the model): place the rest by name.
        let next = match ready.pop_first() {
            Some(id) => id,
            None => *missing
                .keys()
                .find(|id| !done.contains(*id))
                .expect("fewer placed than layers"),
        };
        if !done.insert(next) {
            continue;
        }
        placed.push(next.clone());
        for &u in unblocks.get(next).map_or(&[][..], Vec::as_slice) {
            let n = missing.get_mut(u).expect("every layer counted");
            *n = n.saturating_sub(1);
            if *n == 0 && !done.contains(u) {
                ready.insert(u);
            }
        }
    }
    placed
}

/// Workloads whose deletion and re-creation only restarts their pods.
pub fn restarts_only(key: &ObjectKey) -> bool {
    matches!(
        (key.group(), key.kind.as_str()),
        (
            "apps" | "batch" | "",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "CronJob" | "Pod"
        )
    )
}

/// What deleting `x` means, and in a sentence.
fn consequence(x: &Applied, recreated: bool) -> (Consequence, String) {
    let key = &x.key;
    let kind = key.kind.as_str();
    if x.is_instance {
        if x.instance_disabled {
            return (
                if recreated {
                    Consequence::Recreate
                } else {
                    Consequence::Removed
                },
                "the FluxInstance is deleted; it carries fluxcd.controlplane.io/reconcile: disabled, so flux-operator leaves Flux installed".into(),
            );
        }
        if x.remote {
            // Another cluster's Flux: this cluster keeps reconciling the repository.
            return (
                Consequence::Cascade,
                "flux-operator uninstalls Flux from the cluster the layer's kubeConfig reaches (not this one): its controllers and what its instance manages are removed there".into(),
            );
        }
        return (
            Consequence::Uninstall,
            "flux-operator uninstalls Flux when its FluxInstance is deleted: the Flux controllers and every object the instance manages are removed, and nothing reconciles the repository any more".into(),
        );
    }
    let group = key.group();
    match (group, kind) {
        ("", "Namespace") => (
            Consequence::Cascade,
            format!("deleting Namespace {} deletes every object in it", key.name),
        ),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => (
            Consequence::Cascade,
            format!(
                "deleting CRD {} deletes every object of that kind in the cluster",
                key.name
            ),
        ),
        ("", "PersistentVolumeClaim") | ("", "PersistentVolume") => (
            Consequence::DataLoss,
            format!("{kind} {} is deleted with its data", key.name),
        ),
        ("helm.toolkit.fluxcd.io", "HelmRelease") => (
            Consequence::Cascade,
            format!(
                "helm-controller uninstalls release {}: every object of the release is deleted",
                key.name
            ),
        ),
        (FLUX_KUSTOMIZE_GROUP, "Kustomization") => (
            Consequence::Cascade,
            format!(
                "Flux Kustomization {} is deleted: its deletionPolicy decides what happens to everything it applied",
                key.name
            ),
        ),
        (FLUX_OPERATOR_GROUP, _) => (
            Consequence::Cascade,
            format!("flux-operator tears down what {kind} {} manages", key.name),
        ),
        _ if !recreated => (
            Consequence::Removed,
            format!(
                "{kind} {} is deleted and no layer applies it again",
                key.name
            ),
        ),
        _ if restarts_only(key) => (
            Consequence::Restart,
            format!(
                "{kind} {} is deleted and created again: its pods restart",
                key.name
            ),
        ),
        _ => (
            Consequence::Recreate,
            format!(
                "{kind} {} is deleted and created again: what uses it fails until it is back",
                key.name
            ),
        ),
    }
}
