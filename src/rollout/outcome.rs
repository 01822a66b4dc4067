//! What a rollout does: each layer's step, what leaves an inventory, what is deleted and how bad
//! that is.

use crate::model::LayerRef;
use crate::model::ObjectKey;

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
