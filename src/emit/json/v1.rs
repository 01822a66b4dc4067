//! Version 1 of the JSON output: the documents of `check`, `fix`, `simulate` and `graph` with
//! `--format json`. These types are the contract bots read (docs/reference.md); the model's and
//! the rollout's own types stay free to change. A field that changes meaning or goes away raises
//! [`VERSION`]; a new field does not. `docs/schema/fluxmend-v1.json` is generated from these
//! types (the schema test in this module keeps it so), and the integration tests validate real
//! outputs against it.
//!
//! Every type borrows what it shows from the report it is built from: building a document copies
//! no text.

use std::collections::BTreeMap;

use serde::Serialize;

use super::Sorted;
use crate::changes::FileChange;
use crate::diagnostics;
use crate::emit::report::Committed;
use crate::model::{self, LayerRef, Model, ObjectKey};
use crate::rollout::{self, failure};
use crate::rules::{self, suppress};

/// The version of this shape, written as `version` by `check` and `fix`.
pub const VERSION: u32 = 1;

/// The `version` field: always [`VERSION`] in this module's documents.
#[derive(Debug, Clone, Copy)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(VERSION)
    }
}

/// How bad a finding or diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl From<diagnostics::Severity> for Severity {
    fn from(s: diagnostics::Severity) -> Self {
        match s {
            diagnostics::Severity::Note => Severity::Note,
            diagnostics::Severity::Warning => Severity::Warning,
            diagnostics::Severity::Error => Severity::Error,
        }
    }
}

/// A Flux Kustomization (a layer) by identity.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Layer<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
}

impl<'a> From<&'a LayerRef> for Layer<'a> {
    fn from(l: &'a LayerRef) -> Self {
        Layer {
            name: &l.name,
            namespace: &l.namespace,
        }
    }
}

fn layers(refs: &[LayerRef]) -> Vec<Layer<'_>> {
    refs.iter().map(Layer::from).collect()
}

/// A Kubernetes object by identity; `namespace` is null for a cluster-scoped object (or one
/// whose namespace is left to the layer).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Object<'a> {
    #[serde(rename = "apiVersion")]
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> From<&'a ObjectKey> for Object<'a> {
    fn from(k: &'a ObjectKey) -> Self {
        Object {
            api_version: &k.api_version,
            kind: &k.kind,
            namespace: k.namespace.as_deref(),
            name: &k.name,
        }
    }
}

/// A problem in the repository itself (not a rule finding), with its place when known.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Diagnostic<'a> {
    pub severity: Severity,
    /// Relative to PATH; `""` for the repository itself.
    pub file: &'a str,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based, in characters.
    pub column: Option<usize>,
    pub message: &'a str,
}

impl<'a> From<&'a diagnostics::Diagnostic> for Diagnostic<'a> {
    fn from(d: &'a diagnostics::Diagnostic) -> Self {
        Diagnostic {
            severity: d.severity.into(),
            file: &d.file,
            line: d.line,
            column: d.column,
            message: &d.message,
        }
    }
}

fn diagnostics(ds: &[diagnostics::Diagnostic]) -> Vec<Diagnostic<'_>> {
    ds.iter().map(Diagnostic::from).collect()
}

/// What a rule found, as `check` reports it.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Finding<'a> {
    /// The rule's id (`FM001`).
    pub rule: &'a str,
    pub severity: Severity,
    pub message: &'a str,
    /// Where the object enters the layer, or the setting at fault; relative to PATH.
    pub file: &'a str,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    /// The layer that applies the object.
    pub layer: Layer<'a>,
    /// The cluster that applies the layer, named as `simulate` names it; `; `-separated when
    /// one finding stands for several clusters.
    pub cluster: &'a str,
    pub object: Object<'a>,
    /// Layers a failure of the object would leave `DependencyNotReady`.
    pub blocked_layers: Vec<Layer<'a>>,
    /// How many other objects' health the failing one would mask.
    pub masked_objects: usize,
    /// `check`: the rule offers a fix (which `fix` verifies); `fix`: a verified fix is part of
    /// this change.
    pub fixable: bool,
}

impl<'a> From<&'a rules::Finding> for Finding<'a> {
    fn from(f: &'a rules::Finding) -> Self {
        Finding {
            rule: f.rule,
            severity: f.severity.into(),
            message: &f.message,
            file: &f.file,
            line: f.line,
            column: f.column,
            layer: (&f.layer).into(),
            cluster: &f.cluster,
            object: (&f.object).into(),
            blocked_layers: layers(&f.blocked_layers),
            masked_objects: f.masked_objects,
            fixable: f.fix.is_some(),
        }
    }
}

/// Where a suppression is written.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SuppressionForm {
    /// The `fluxmend.io/ignore` annotation on the object or its layer.
    Annotation,
    /// A `# fluxmend: ignore[…] reason` comment.
    Comment,
}

/// The suppression that holds a finding back, with its reason.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Suppression<'a> {
    pub form: SuppressionForm,
    /// The rules it names, by id.
    pub rules: &'a [&'a str],
    pub reason: &'a str,
    pub file: &'a str,
    pub line: usize,
    pub column: usize,
}

impl<'a> From<&'a suppress::Suppression> for Suppression<'a> {
    fn from(s: &'a suppress::Suppression) -> Self {
        Suppression {
            form: match s.form {
                suppress::Form::Annotation => SuppressionForm::Annotation,
                suppress::Form::Comment => SuppressionForm::Comment,
            },
            rules: &s.rules,
            reason: &s.reason,
            file: &s.file,
            line: s.line,
            column: s.column,
        }
    }
}

/// A finding a suppression holds back: the finding as in `findings`, and the suppression.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Suppressed<'a> {
    #[serde(flatten)]
    pub finding: Finding<'a>,
    pub suppression: Suppression<'a>,
}

impl<'a> From<&'a suppress::Suppressed> for Suppressed<'a> {
    fn from(s: &'a suppress::Suppressed) -> Self {
        Suppressed {
            finding: (&s.finding).into(),
            suppression: (&s.by).into(),
        }
    }
}

fn suppressed(ss: &[suppress::Suppressed]) -> Vec<Suppressed<'_>> {
    ss.iter().map(Suppressed::from).collect()
}

/// Counts a bot can gate on without walking the lists.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Summary {
    /// YAML files read.
    pub files: usize,
    pub objects: usize,
    pub layers: usize,
    /// Layers a root applies (the others are unreferenced).
    pub live_layers: usize,
    /// Findings per severity; a severity without any is left out.
    pub findings: BTreeMap<Severity, usize>,
    /// Diagnostics per severity; a severity without any is left out.
    pub diagnostics: BTreeMap<Severity, usize>,
    /// Findings held back by a suppression (not in `findings`).
    pub suppressed: usize,
}

impl From<&crate::emit::report::Summary> for Summary {
    fn from(s: &crate::emit::report::Summary) -> Self {
        let counts = |m: &BTreeMap<diagnostics::Severity, usize>| {
            m.iter().map(|(&s, &n)| (s.into(), n)).collect()
        };
        Summary {
            files: s.files,
            objects: s.objects,
            layers: s.layers,
            live_layers: s.live_layers,
            findings: counts(&s.findings),
            diagnostics: counts(&s.diagnostics),
            suppressed: s.suppressed,
        }
    }
}

/// `check --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Check<'a> {
    pub version: Version,
    pub findings: Vec<Finding<'a>>,
    pub suppressed: Vec<Suppressed<'a>>,
    pub diagnostics: Vec<Diagnostic<'a>>,
    pub summary: Summary,
}

impl<'a> Check<'a> {
    pub fn new(
        findings: &'a [rules::Finding],
        suppressed_findings: &'a [suppress::Suppressed],
        diags: &'a [diagnostics::Diagnostic],
        summary: &crate::emit::report::Summary,
    ) -> Self {
        Check {
            version: Version,
            findings: findings.iter().map(Finding::from).collect(),
            suppressed: suppressed(suppressed_findings),
            diagnostics: diagnostics(diags),
            summary: summary.into(),
        }
    }
}

/// One phase of a move done in steps.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Phase<'a> {
    /// This phase's number, from 1.
    pub phase: u8,
    /// How many phases the move takes.
    pub phases: u8,
    /// What to confirm on the cluster before running `fix` for the next phase.
    pub confirm: &'a str,
    /// What stays in the repository after the last phase.
    pub stays: &'a str,
}

/// A verified fix.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Fix<'a> {
    pub description: &'a str,
    pub tradeoff: &'a str,
    /// Set for a move done in phases.
    #[serde(flatten)]
    pub phase: Option<Phase<'a>>,
}

impl<'a> From<&'a rules::Fix> for Fix<'a> {
    fn from(f: &'a rules::Fix) -> Self {
        Fix {
            description: &f.description,
            tradeoff: f.tradeoff,
            phase: f.phase.as_ref().map(|p| Phase {
                phase: p.phase,
                phases: p.phases,
                confirm: &p.confirm,
                stays: &p.stays,
            }),
        }
    }
}

/// A finding as `fix` reports it: with its fix, or the reason there is none.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FixFinding<'a> {
    #[serde(flatten)]
    pub finding: Finding<'a>,
    pub fix: Option<Fix<'a>>,
    /// Why no fix is offered, or why verification dropped it.
    pub no_fix_reason: Option<&'a str>,
}

impl<'a> From<&'a rules::Finding> for FixFinding<'a> {
    fn from(f: &'a rules::Finding) -> Self {
        FixFinding {
            finding: f.into(),
            fix: f.fix.as_ref().map(Fix::from),
            no_fix_reason: f.no_fix_reason.as_deref(),
        }
    }
}

/// How a file changes.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Create,
    Delete,
    Edit,
}

/// A file the change touches.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct File<'a> {
    /// Relative to PATH.
    pub path: &'a str,
    pub change: Change,
}

impl<'a> From<&'a FileChange> for File<'a> {
    fn from(f: &'a FileChange) -> Self {
        File {
            path: &f.path,
            change: match (&f.before, &f.after) {
                (None, Some(_)) => Change::Create,
                (Some(_), None) => Change::Delete,
                _ => Change::Edit,
            },
        }
    }
}

/// One layer the change can alter, and whether the kustomize gate built it.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct KustomizeLayer<'a> {
    /// `namespace/name`.
    pub layer: &'a str,
    pub built: bool,
    /// Why it could not be built.
    pub why: Option<&'a str>,
}

/// What the kustomize gate checked.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct KustomizeLayers<'a> {
    /// Layers it built and compared.
    pub built: usize,
    /// Layers the change can alter.
    pub affected: usize,
    pub layers: Vec<KustomizeLayer<'a>>,
}

/// `fix --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct FixReport<'a> {
    pub version: Version,
    pub findings: Vec<FixFinding<'a>>,
    pub suppressed: Vec<Suppressed<'a>>,
    pub diagnostics: Vec<Diagnostic<'a>>,
    pub files: Vec<File<'a>>,
    /// The unified diff (paths as `--diff-prefix` says).
    pub diff: &'a str,
    /// `written` or `committed`; null when the change was only printed.
    pub applied: Option<&'a str>,
    /// The gates that checked the change (empty with `--verify off`).
    pub verified_by: &'a [&'a str],
    /// Null when the kustomize gate did not run.
    pub kustomize_layers: Option<KustomizeLayers<'a>>,
    /// What a gate could not check, and why.
    pub not_verified: &'a [String],
    /// What the rollout does that a fix accepts.
    pub rollout_notes: &'a [String],
    /// The commit `--commit` made (40 hex digits).
    pub commit: Option<&'a str>,
    /// The branch it is on; null on a detached HEAD.
    pub branch: Option<&'a str>,
}

impl<'a> FixReport<'a> {
    pub fn new(
        plan: &'a crate::verify::Plan,
        suppressed_findings: &'a [suppress::Suppressed],
        diags: &'a [diagnostics::Diagnostic],
        diff: &'a str,
        action: &'a str,
        commit: Option<&'a Committed>,
    ) -> Self {
        FixReport {
            version: Version,
            findings: plan.findings.iter().map(FixFinding::from).collect(),
            suppressed: suppressed(suppressed_findings),
            diagnostics: diagnostics(diags),
            files: plan.files.iter().map(File::from).collect(),
            diff,
            applied: Some(action).filter(|a| !a.is_empty()),
            verified_by: &plan.verified_by,
            kustomize_layers: plan
                .kustomize_layers
                .map(|(built, affected)| KustomizeLayers {
                    built,
                    affected,
                    layers: plan
                        .kustomize_per_layer
                        .iter()
                        .map(|(layer, why)| KustomizeLayer {
                            layer,
                            built: why.is_none(),
                            why: why.as_deref(),
                        })
                        .collect(),
                }),
            not_verified: &plan.not_verified,
            rollout_notes: &plan.rollout_notes,
            commit: commit.map(|c| c.id.as_str()),
            branch: commit.and_then(|c| c.branch.as_deref()),
        }
    }
}

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

/// The source a layer reads (`spec.sourceRef`).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Source<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
}

/// One `spec.healthChecks` entry.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct HealthCheck<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
}

/// An object a variant applies.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GraphObject<'a> {
    pub object: Object<'a>,
    /// The file that defines it, relative to PATH.
    pub file: &'a str,
    /// 1-based line of its document.
    pub line: usize,
    /// Whether the layer's health check includes it.
    pub gated: bool,
    /// The kustomization files that bring it in, outermost first.
    pub via: Vec<&'a str>,
}

/// One directory a layer's path stands for (a path with placeholders has one per match).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Variant<'a> {
    pub dir: &'a str,
    /// `[placeholder, directory name]` pairs.
    pub bindings: &'a [(String, String)],
    /// Flux generates its kustomization (there is no kustomization file).
    pub generated: bool,
    /// Why it could not be read fully.
    pub error: Option<&'a str>,
    pub objects: Vec<GraphObject<'a>>,
}

/// One layer of `graph --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GraphLayer<'a> {
    /// Its index, which `applied_by` and `depends_on` refer to.
    pub id: usize,
    pub name: &'a str,
    pub namespace: &'a str,
    /// Whether a root applies it.
    pub live: bool,
    /// The file that defines it; null for one a FluxInstance creates.
    pub file: Option<&'a str>,
    /// The FluxInstance that creates it.
    pub created_by_instance: Option<Object<'a>>,
    pub applied_by: Option<usize>,
    pub source: Source<'a>,
    /// Where the source's root is in this repository, when known.
    pub source_root: Option<&'a str>,
    pub path: &'a str,
    pub wait: bool,
    pub health_checks: Vec<HealthCheck<'a>>,
    pub depends_on: &'a [usize],
    pub variants: Vec<Variant<'a>>,
}

impl<'a> GraphLayer<'a> {
    pub fn new(model: &'a Model, id: usize, l: &'a model::Layer) -> Self {
        let path = |f| model.repo.file(f).path.as_str();
        GraphLayer {
            id,
            name: &l.id.name,
            namespace: &l.id.namespace,
            live: l.live,
            file: l.object.map(|o| path(model.object(o).file)),
            created_by_instance: l.created_by_instance.map(|o| (&model.object(o).key).into()),
            applied_by: l.applied_by,
            source: Source {
                kind: &l.source.kind,
                name: &l.source.name,
                namespace: &l.source.namespace,
            },
            source_root: l.source_root.as_deref(),
            path: &l.path,
            wait: l.wait,
            health_checks: l
                .health_checks
                .iter()
                .map(|h| HealthCheck {
                    kind: &h.kind,
                    name: &h.name,
                    namespace: h.namespace.as_deref(),
                })
                .collect(),
            depends_on: &l.depends_on_ids,
            variants: l
                .variants
                .iter()
                .map(|v| Variant {
                    dir: &v.dir,
                    bindings: &v.bindings,
                    generated: v.generated,
                    error: v.error.as_deref(),
                    objects: v
                        .inventory
                        .iter()
                        .map(|r| GraphObject {
                            object: (&r.key).into(),
                            file: path(model.object(r.object).file),
                            line: model.object(r.object).line,
                            gated: l.gates(&r.key),
                            via: r.chain.iter().map(|&f| path(f)).collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// `graph --format json`.
// `layers` is written a layer at a time, each layer `Sorted` on its own: a fleet's graph is tens
// of megabytes of text, and held whole as one `serde_json::Value` it took ten times that.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Graph<'a, L> {
    #[cfg_attr(test, schemars(with = "Vec<Diagnostic<'static>>"))]
    pub diagnostics: Sorted<Vec<Diagnostic<'a>>>,
    /// Every layer, in model order.
    #[cfg_attr(test, schemars(with = "Vec<GraphLayer<'static>>"))]
    pub layers: L,
}

impl<'a, L: Serialize> Graph<'a, L> {
    pub fn new(diags: &'a [diagnostics::Diagnostic], layers: L) -> Self {
        Graph {
            diagnostics: Sorted(diagnostics(diags)),
            layers,
        }
    }
}

/// The `version` field's schema: the constant [`VERSION`].
#[cfg(test)]
impl schemars::JsonSchema for Version {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Version".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The version of the shape: raised when a field changes meaning or goes away, not for a new field.",
            "const": VERSION,
        })
    }
}

#[cfg(test)]
mod schema {
    use super::*;

    /// Every document of version 1 (untagged: the schema accepts any of them).
    #[derive(schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Document<'a> {
        Check(Check<'a>),
        Fix(FixReport<'a>),
        Failure(Failure<'a>),
        Rollout(Rollout<'a>),
        Graph(Graph<'a, Vec<GraphLayer<'a>>>),
    }

    /// The schema of every version 1 document, as `docs/schema/fluxmend-v1.json` holds it.
    pub fn generate() -> String {
        let mut schema = schemars::schema_for!(Document);
        if let Some(defs) = schema.get_mut("$defs").and_then(|d| d.as_object_mut()) {
            defs.values_mut().for_each(require_nullable);
        }
        schema.insert(
            "$id".into(),
            format!(
                "{}/blob/main/docs/schema/fluxmend-v1.json",
                env!("CARGO_PKG_REPOSITORY")
            )
            .into(),
        );
        schema.insert("title".into(), "fluxmend JSON output, version 1".into());
        serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n"
    }

    /// Mark every nullable property of an object `schema` required: an `Option` field is written
    /// as `null` when unset, never left out (schemars takes it for optional). The fields a
    /// document really leaves out (a fix's phase) are not nullable.
    fn require_nullable(schema: &mut serde_json::Value) {
        let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
            return;
        };
        let is_null = |s: &serde_json::Value| s.get("type").is_some_and(|t| t == "null");
        let nullable: Vec<serde_json::Value> = properties
            .iter()
            .filter(|(_, p)| {
                p.get("type")
                    .and_then(|t| t.as_array())
                    .is_some_and(|types| types.iter().any(|t| t == "null"))
                    || p.get("anyOf")
                        .and_then(|a| a.as_array())
                        .is_some_and(|a| a.iter().any(is_null))
            })
            .map(|(name, _)| name.as_str().into())
            .collect();
        let required = schema
            .as_object_mut()
            .expect("an object schema")
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(required) = required.as_array_mut() {
            for name in nullable {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }

    /// The committed schema is the one these types generate: `FLUXMEND_UPDATE_SCHEMA=1 cargo
    /// test --lib schema` rewrites it after a deliberate change of the types.
    #[test]
    fn committed_schema_is_generated_from_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema/fluxmend-v1.json");
        let generated = generate();
        if std::env::var_os("FLUXMEND_UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "{path} is not the schema of the v1 types: a change of the JSON output changes the \
             schema; after reading the change, `FLUXMEND_UPDATE_SCHEMA=1 cargo test --lib schema` \
             writes it"
        );
    }
}
