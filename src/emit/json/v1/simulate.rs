//! The documents of `simulate --fail` and `simulate --from`.

use serde::Serialize;

use super::{Layer, Object, layers};
use crate::rollout::{self, failure};

/// A layer's state while the targets fail.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Status<'a> {
    /// Ready=False, HealthCheckFailed: its health check includes a failing object.
    HealthCheckFailed {
        /// The failing objects it checks.
        failing: &'a [String],
        /// Other objects whose health its red status hides.
        masked: usize,
    },
    /// Not reconciled: a `dependsOn` target is not Ready.
    DependencyNotReady { waiting_for: Vec<Layer<'a>> },
}

/// One layer that is not Ready.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Affected<'a> {
    pub layer: Layer<'a>,
    #[serde(flatten)]
    pub status: Status<'a>,
}

/// Whether a corrective commit to a failing object reaches the cluster.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Correction<'a> {
    pub target: &'a str,
    /// The files a correction edits.
    pub files: &'a [String],
    /// The layer that would apply the correction.
    pub applied_by: Option<Layer<'a>>,
    pub can_arrive: bool,
    pub why: &'a str,
}

/// What the failing objects do to one cluster.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FailureCluster<'a> {
    /// The root layer and the path it syncs.
    pub root: &'a str,
    /// Layers that are not Ready, in layer order.
    pub affected: Vec<Affected<'a>>,
    /// Layers whose source rejects new revisions: they stay at the last one.
    pub frozen: Vec<Layer<'a>>,
    pub corrections: Vec<Correction<'a>>,
}

impl<'a> From<&'a failure::ClusterFailure> for FailureCluster<'a> {
    fn from(c: &'a failure::ClusterFailure) -> Self {
        FailureCluster {
            root: &c.root,
            affected: c
                .affected
                .iter()
                .map(|a| Affected {
                    layer: (&a.layer).into(),
                    status: match &a.status {
                        failure::Status::HealthCheckFailed { failing, masked } => {
                            Status::HealthCheckFailed {
                                failing,
                                masked: *masked,
                            }
                        }
                        failure::Status::DependencyNotReady { waiting_for } => {
                            Status::DependencyNotReady {
                                waiting_for: layers(waiting_for),
                            }
                        }
                    },
                })
                .collect(),
            frozen: layers(&c.frozen),
            corrections: c
                .corrections
                .iter()
                .map(|corr| Correction {
                    target: &corr.target,
                    files: &corr.files,
                    applied_by: corr.applied_by.as_ref().map(Layer::from),
                    can_arrive: corr.can_arrive,
                    why: &corr.why,
                })
                .collect(),
        }
    }
}

/// `simulate --fail --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Failure<'a> {
    pub before: Vec<FailureCluster<'a>>,
    /// After every phase of fluxmend's fixes; null when they change nothing about this failure.
    pub after_fixes: Option<Vec<FailureCluster<'a>>>,
}

impl<'a> Failure<'a> {
    pub fn new(
        before: &'a [failure::ClusterFailure],
        after: Option<&'a [failure::ClusterFailure]>,
    ) -> Self {
        let clusters = |cs: &'a [failure::ClusterFailure]| cs.iter().map(Into::into).collect();
        Failure {
            before: clusters(before),
            after_fixes: after.map(clusters),
        }
    }
}

/// How a layer changes with the revision.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum LayerChange {
    Added,
    Removed,
    Changed,
    Unchanged,
}

/// What the old layer's prune does with an object that left its inventory.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
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

/// How bad a deletion is, from least to worst.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum Consequence {
    /// A workload deleted and applied again: its pods restart.
    Restart,
    /// A configuration object deleted and applied again.
    Recreate,
    /// Deleted and not applied again by any layer.
    Removed,
    /// Its data is gone (a PersistentVolumeClaim or PersistentVolume).
    DataLoss,
    /// Deleting it deletes more (a Namespace's, a CRD's, a HelmRelease's, a Kustomization's).
    Cascade,
    /// flux-operator uninstalls Flux.
    Uninstall,
}

impl From<rollout::Consequence> for Consequence {
    fn from(c: rollout::Consequence) -> Self {
        match c {
            rollout::Consequence::Restart => Consequence::Restart,
            rollout::Consequence::Recreate => Consequence::Recreate,
            rollout::Consequence::Removed => Consequence::Removed,
            rollout::Consequence::DataLoss => Consequence::DataLoss,
            rollout::Consequence::Cascade => Consequence::Cascade,
            rollout::Consequence::Uninstall => Consequence::Uninstall,
        }
    }
}

impl Consequence {
    /// Its name in the JSON (`data-loss`), which the text report uses too.
    pub fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }
}

/// An object that leaves a layer's inventory.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Leaving<'a> {
    pub object: Object<'a>,
    pub outcome: LeaveOutcome,
}

/// What one layer does with the new revision.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Step<'a> {
    pub layer: Layer<'a>,
    pub change: LayerChange,
    /// Layers that must have applied this revision first.
    pub after: Vec<Layer<'a>>,
    /// How many objects it applies.
    pub applies: usize,
    /// Objects it takes over from another layer.
    pub takes_over: Vec<Object<'a>>,
    /// Objects that leave its inventory, and what happens to each.
    pub leaves: Vec<Leaving<'a>>,
}

/// One live object deleted during the rollout.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Deletion<'a> {
    pub object: Object<'a>,
    /// The layer whose prune (or whose removal) deletes it.
    pub deleted_by: Layer<'a>,
    /// The layer that applies it again afterwards.
    pub recreated_by: Option<Layer<'a>>,
    pub consequence: Consequence,
    /// What the consequence means for this object.
    pub effect: &'a str,
    /// Why it is deleted: which step, and why nothing protects it.
    pub cause: &'a str,
}

/// The rollout of one cluster (one root).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct RolloutCluster<'a> {
    /// The root layer and where it is defined.
    pub root: &'a str,
    /// Every layer of the cluster, in an order Flux may reconcile them.
    pub steps: Vec<Step<'a>>,
    pub deletions: Vec<Deletion<'a>>,
}

impl<'a> From<&'a rollout::ClusterRollout> for RolloutCluster<'a> {
    fn from(c: &'a rollout::ClusterRollout) -> Self {
        RolloutCluster {
            root: &c.root,
            steps: c
                .steps
                .iter()
                .map(|s| Step {
                    layer: (&s.layer).into(),
                    change: match s.change {
                        rollout::LayerChange::Added => LayerChange::Added,
                        rollout::LayerChange::Removed => LayerChange::Removed,
                        rollout::LayerChange::Changed => LayerChange::Changed,
                        rollout::LayerChange::Unchanged => LayerChange::Unchanged,
                    },
                    after: layers(&s.after),
                    applies: s.applies,
                    takes_over: s.takes_over.iter().map(Object::from).collect(),
                    leaves: s
                        .leaves
                        .iter()
                        .map(|l| Leaving {
                            object: (&l.object).into(),
                            outcome: match l.outcome {
                                rollout::LeaveOutcome::Deleted => LeaveOutcome::Deleted,
                                rollout::LeaveOutcome::Orphaned => LeaveOutcome::Orphaned,
                                rollout::LeaveOutcome::Protected => LeaveOutcome::Protected,
                                rollout::LeaveOutcome::HandedOver => LeaveOutcome::HandedOver,
                            },
                        })
                        .collect(),
                })
                .collect(),
            deletions: c
                .deletions
                .iter()
                .map(|d| Deletion {
                    object: (&d.object).into(),
                    deleted_by: (&d.deleted_by).into(),
                    recreated_by: d.recreated_by.as_ref().map(Layer::from),
                    consequence: d.consequence.into(),
                    effect: &d.effect,
                    cause: &d.cause,
                })
                .collect(),
        }
    }
}

/// The rollout of a change, per cluster.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Clusters<'a> {
    pub clusters: Vec<RolloutCluster<'a>>,
}

/// `simulate --from --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Rollout<'a> {
    pub rollout: Clusters<'a>,
}

impl<'a> From<&'a rollout::Rollout> for Rollout<'a> {
    fn from(r: &'a rollout::Rollout) -> Self {
        Rollout {
            rollout: Clusters {
                clusters: r.clusters.iter().map(Into::into).collect(),
            },
        }
    }
}
