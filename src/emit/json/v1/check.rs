//! The documents of `check` and `fix`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Diagnostic, Layer, Object, Severity, Version, diagnostics, layers};
use crate::changes::FileChange;
use crate::emit::report::Committed;
use crate::rules::{self, suppress};

/// What a rule found, as `check` reports it.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Finding<'a> {
    /// The rule's id (`FM001`).
    pub rule: &'a str,
    pub severity: Severity,
    pub message: String,
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
            message: f.message(),
            file: &f.location.file,
            line: f.location.line,
            column: f.location.column,
            layer: (&f.layer).into(),
            cluster: &f.cluster,
            object: (&f.object).into(),
            blocked_layers: layers(&f.blocked_layers),
            masked_objects: f.masked_objects,
            fixable: f.fix().is_some(),
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
            file: &s.location.file,
            line: s.location.line,
            column: s.location.column,
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
    pub no_fix_reason: Option<String>,
}

impl<'a> From<&'a rules::Finding> for FixFinding<'a> {
    fn from(f: &'a rules::Finding) -> Self {
        FixFinding {
            finding: f.into(),
            fix: f.fix().map(Fix::from),
            no_fix_reason: f.remedy.reason(),
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
    pub verified_by: Vec<&'static str>,
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
            verified_by: plan.verifier_names(),
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
