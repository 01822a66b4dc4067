//! What a rule reports: a finding, built through [`Draft`] (what a rule knows) and completed by
//! [`super::run`] (what only the whole run knows: the column a rule leaves open, the clusters),
//! and its remedy: a fix, a ride on another finding's fix, no fix, a fix withheld, or one a gate
//! dropped.

use std::fmt;

use crate::diagnostics::{Location, Severity};
use crate::edit::Changeset;
use crate::model::{LayerRef, ObjectKey};

/// What a rule found: what is gated, by whom, where, and the blast radius.
#[derive(Clone, Debug)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    /// The headline: one sentence saying what is wrong.
    pub summary: String,
    /// The sentences that explain it (what a failure does, why the rule says so).
    pub details: Vec<String>,
    /// Where the object enters the layer (a `resources` entry or the document itself).
    pub location: Location,
    pub layer: LayerRef,
    /// The cluster that applies the layer, named as `simulate` names it (`ns/name (path P)`,
    /// its root layer and the path that syncs); `; `-separated when one layer file gives the
    /// same finding, blast radius included, in several clusters.
    pub cluster: String,
    /// The model's index of that cluster ([`crate::model::Layer::cluster`]).
    pub cluster_index: usize,
    pub object: ObjectKey,
    /// Layers a failure would leave `DependencyNotReady`.
    pub blocked_layers: Vec<LayerRef>,
    /// How many other objects' health the failing one would mask.
    pub masked_objects: usize,
    pub remedy: Remedy,
    /// Findings one fix resolves together share a group (the fix rides on the first of them):
    /// suppressing any one of them must withhold the fix from all, since it would change what
    /// the suppressed finding is about too. An identifier within the rule (FM002: the layer and
    /// its variant; FM001: the layer).
    pub fix_group: Option<(usize, usize)>,
}

impl Finding {
    /// A finding of `rule` about `object` in `layer` (of cluster `cluster_index`), at `file`
    /// and `line`; the rest is set on the [`Draft`].
    pub fn draft(
        (rule, severity): (&'static str, Severity),
        (file, line): (String, usize),
        (layer, cluster_index): (LayerRef, usize),
        object: ObjectKey,
    ) -> Draft {
        Draft {
            rule,
            severity,
            summary: String::new(),
            details: Vec::new(),
            file,
            line,
            column: None,
            layer,
            cluster_index,
            object,
            blocked_layers: Vec::new(),
            masked_objects: 0,
            remedy: None,
            fix_group: None,
        }
    }

    /// The whole text, summary then details, as JSON, SARIF and annotations give it.
    pub fn message(&self) -> String {
        compose(&self.summary, &self.details)
    }

    /// The fix this finding carries, if any.
    pub fn fix(&self) -> Option<&Fix> {
        match &self.remedy {
            Remedy::Fix(fix) => Some(fix),
            _ => None,
        }
    }
}

/// `summary` and `details` as one text, a space between sentences.
fn compose(summary: &str, details: &[String]) -> String {
    std::iter::once(summary)
        .chain(details.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A finding as a rule reports it, before [`super::run`] completes it (the column, when the
/// rule leaves it to the line's content, and the clusters' names).
#[derive(Clone, Debug)]
pub struct Draft {
    pub(crate) rule: &'static str,
    severity: Severity,
    summary: String,
    details: Vec<String>,
    pub(crate) file: String,
    pub(crate) line: usize,
    /// 1-based, in characters; `None`: where the line's content starts.
    column: Option<usize>,
    layer: LayerRef,
    cluster_index: usize,
    object: ObjectKey,
    blocked_layers: Vec<LayerRef>,
    masked_objects: usize,
    /// Set by the rule, always: [`Draft::remedy`].
    remedy: Option<Remedy>,
    fix_group: Option<(usize, usize)>,
}

impl Draft {
    /// The headline.
    #[must_use]
    pub fn summary(mut self, summary: String) -> Self {
        self.summary = summary;
        self
    }

    /// The sentences below the headline.
    #[must_use]
    pub fn details(mut self, details: Vec<String>) -> Self {
        self.details = details;
        self
    }

    /// The 1-based column (in characters), when the rule points inside the line.
    #[must_use]
    pub fn column(mut self, column: usize) -> Self {
        self.column = Some(column);
        self
    }

    /// What a failure of the object does: the layers it blocks, the objects it masks.
    #[must_use]
    pub fn blast(mut self, blocked_layers: Vec<LayerRef>, masked_objects: usize) -> Self {
        self.blocked_layers = blocked_layers;
        self.masked_objects = masked_objects;
        self
    }

    /// What is done about it.
    #[must_use]
    pub fn remedy(mut self, remedy: Remedy) -> Self {
        self.remedy = Some(remedy);
        self
    }

    /// The fix when the rule planned one, else why it could not.
    #[must_use]
    pub fn planned(self, fix: Result<Fix, String>) -> Self {
        self.remedy(fix.map_or_else(Remedy::NoFix, Remedy::Fix))
    }

    /// Findings one fix resolves together (`group`, an identifier within the rule): the first
    /// carries `fix`, the others ride on it; `Err`: why none of them has one.
    pub fn share(
        drafts: Vec<Draft>,
        group: (usize, usize),
        fix: &Result<Fix, String>,
    ) -> impl Iterator<Item = Draft> {
        let first = drafts.first().map(Draft::place).unwrap_or_default();
        drafts.into_iter().enumerate().map(move |(i, mut draft)| {
            draft.fix_group = Some(group);
            draft.remedy(match fix {
                Ok(fix) if i == 0 => Remedy::Fix(fix.clone()),
                Ok(_) => Remedy::RidesOn {
                    place: first.clone(),
                },
                Err(reason) => Remedy::NoFix(reason.clone()),
            })
        })
    }

    /// `file:line`, as a finding that rides on this one's fix names it.
    fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// What two drafts must share to be one finding in several clusters.
    pub(super) fn same_key(&self) -> impl Eq + std::hash::Hash + use<> {
        (
            self.rule,
            self.file.clone(),
            self.line,
            self.layer.clone(),
            self.object.clone(),
            self.summary.clone(),
            self.details.clone(),
            self.blocked_layers.clone(),
        )
    }

    pub(super) fn cluster_index(&self) -> usize {
        self.cluster_index
    }

    /// The finding, in `cluster`; where the rule left the column open, `content_column` of
    /// its file and line gives it.
    pub(super) fn complete(
        self,
        content_column: impl FnOnce(&str, usize) -> usize,
        cluster: String,
    ) -> Finding {
        let column = self
            .column
            .unwrap_or_else(|| content_column(&self.file, self.line));
        Finding {
            rule: self.rule,
            severity: self.severity,
            summary: self.summary,
            details: self.details,
            location: Location {
                file: self.file,
                line: self.line,
                column,
            },
            layer: self.layer,
            cluster,
            cluster_index: self.cluster_index,
            object: self.object,
            blocked_layers: self.blocked_layers,
            masked_objects: self.masked_objects,
            remedy: self.remedy.expect("every rule gives each finding a remedy"),
            fix_group: self.fix_group,
        }
    }
}

/// What is done about a finding.
#[derive(Clone, Debug)]
pub enum Remedy {
    /// The rule's fix (verified by the gates before anything is shown).
    Fix(Fix),
    /// Another finding's fix resolves this one too: it rides on the finding at `place`
    /// (`file:line`), which carries it.
    RidesOn { place: String },
    /// The rule offers no fix, for this reason.
    NoFix(String),
    /// The rule's fix is not offered this time: its edits conflict with an earlier fix, a
    /// finding it would also change is suppressed, or this finding itself is.
    Withheld(String),
    /// A gate refused the fix.
    Dropped(Dropped),
}

impl Remedy {
    /// Why there is no fix, as the reports say it; `None` for a fix.
    pub fn reason(&self) -> Option<String> {
        match self {
            Remedy::Fix(_) => None,
            Remedy::RidesOn { place } => Some(format!(
                "fixed together with the finding at {place} (one change fixes both)"
            )),
            Remedy::NoFix(reason) | Remedy::Withheld(reason) => Some(reason.clone()),
            Remedy::Dropped(dropped) => Some(format!("fix dropped: {dropped}")),
        }
    }
}

/// A fix a gate refused: alone, or as part of the combined change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub failure: GateFailure,
    /// The fix passed alone; the change combining it with the others failed.
    pub combined: bool,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.combined {
            f.write_str("the combined change fails: ")?;
        }
        fmt::Display::fmt(&self.failure, f)
    }
}

/// One verification gate (see [`crate::verify::gates`] for their order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// The fix applies to the files as read and can be written (no generated file, no path
    /// hidden on disk).
    Writable,
    /// A first phase: the rest of its move passes every gate too.
    Move,
    /// Every edited file means exactly what its edits intend.
    Yaml,
    /// The built-in model renders the same objects, and no new error appears.
    Render,
    /// Every object is applied in the same context (cluster, identity, substitution, …).
    ApplyContext,
    /// The rule no longer reports the finding.
    Convergence,
    /// A real kustomize renders the same objects.
    Kustomize,
    /// As Flux rolls the change out, no live object is deleted.
    Transition,
}

impl Gate {
    /// A failure of this gate: its name, then `detail`.
    pub fn fails(self, detail: impl fmt::Display) -> GateFailure {
        GateFailure {
            gate: self,
            reason: format!("{self}: {detail}"),
        }
    }

    /// A failure of this gate whose `reason` says it in full (the gate's own wording).
    pub fn refuses(self, reason: String) -> GateFailure {
        GateFailure { gate: self, reason }
    }
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gate::Writable => "write check",
            Gate::Move => "the whole move",
            Gate::Yaml => "YAML gate",
            Gate::Render => "render gate",
            Gate::ApplyContext => "apply-context gate",
            Gate::Convergence => "convergence",
            Gate::Kustomize => "kustomize gate",
            Gate::Transition => "transition gate",
        })
    }
}

/// A gate refused a fix: which, and why (the text the reports print).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateFailure {
    pub gate: Gate,
    pub reason: String,
}

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// A fix is data: what it does, its trade-off, and the file changes.
#[derive(Clone, Debug)]
pub struct Fix {
    /// What the fix does, in a few imperative words (`remove ignored healthChecks from apps`,
    /// `move FluxInstance out of infrastructure-controllers`): a commit subject names fixes by it.
    pub title: String,
    /// What the fix does, in full.
    pub description: String,
    pub tradeoff: &'static str,
    pub changes: Changeset,
    /// Set when the fix is one phase of a move that cannot be rolled out safely in one step.
    pub phase: Option<Phase>,
    /// Objects this fix annotates `kustomize.toolkit.fluxcd.io/prune: disabled` where they are:
    /// the render gates accept exactly that change of their content.
    pub protects: Vec<ObjectKey>,
    /// Disposable workloads whose deletion and re-creation during the rollout (pods restart)
    /// the fix accepts and says so; the transition gate refuses any other deletion.
    pub may_restart: Vec<ObjectKey>,
    /// For a fix whose purpose is a change of content: the canonical form the gates put the
    /// content before and after in. They then pass the fix when the two are equal in it, that
    /// is when the fix made that change and no other.
    pub normalise: Option<Normalise>,
}

/// A canonical form of an object's content (see [`Fix::normalise`]).
pub type Normalise = fn(crate::parse::Value) -> crate::parse::Value;

impl Fix {
    /// A one-step fix that protects nothing and accepts no restart, named by `title`.
    pub fn titled(
        title: String,
        description: String,
        tradeoff: &'static str,
        changes: Changeset,
    ) -> Fix {
        Fix {
            title,
            description,
            tradeoff,
            changes,
            phase: None,
            protects: Vec::new(),
            may_restart: Vec::new(),
            normalise: None,
        }
    }

    /// A one-step fix whose description is its title too.
    pub fn new(description: String, tradeoff: &'static str, changes: Changeset) -> Fix {
        Fix::titled(description.clone(), description, tradeoff, changes)
    }
}

/// One phase of a move done in steps (expand, then contract): the first protects what will move
/// from the old layer's prune, the next moves it once the cluster runs the first.
#[derive(Clone, Debug)]
pub struct Phase {
    /// This phase's number, from 1.
    pub phase: u8,
    /// How many phases the move takes.
    pub phases: u8,
    /// What to confirm on the cluster before running `fix` for the next phase.
    pub confirm: String,
    /// What stays in the repository after the last phase.
    pub stays: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reports print a remedy's reason; these texts are part of the JSON contract.
    #[test]
    fn a_remedy_says_why_there_is_no_fix() {
        let rides = Remedy::RidesOn {
            place: "apps/a.yaml:3".into(),
        };
        assert_eq!(
            rides.reason().as_deref(),
            Some("fixed together with the finding at apps/a.yaml:3 (one change fixes both)")
        );
        let failure = Gate::Render.fails("the objects rendered would change");
        assert_eq!(failure.gate, Gate::Render);
        let alone = Remedy::Dropped(Dropped {
            failure: failure.clone(),
            combined: false,
        });
        assert_eq!(
            alone.reason().as_deref(),
            Some("fix dropped: render gate: the objects rendered would change")
        );
        let combined = Remedy::Dropped(Dropped {
            failure: Gate::Kustomize.refuses("kustomize gate (kubectl): x".into()),
            combined: true,
        });
        assert_eq!(
            combined.reason().as_deref(),
            Some("fix dropped: the combined change fails: kustomize gate (kubectl): x")
        );
        assert_eq!(Remedy::NoFix("why".into()).reason().as_deref(), Some("why"));
    }

    #[test]
    fn the_message_is_the_summary_then_the_details() {
        assert_eq!(compose("A b.", &[]), "A b.");
        assert_eq!(
            compose("A b.", &["C d.".to_string(), "E f".to_string()]),
            "A b. C d. E f"
        );
    }
}
