//! Reports of `simulate`: a change's rollout timeline, and what failing objects stall — as
//! text for people and JSON for bots (a contract documented in the README).

use std::fmt::Write as _;

use crate::emit::escape;
use crate::emit::json::{self, v1};
use crate::rollout::failure::{ClusterFailure, Status};
use crate::rollout::{LayerChange, LeaveOutcome, Rollout};

/// The rollout of a change, cluster by cluster: each layer's step in an order Flux may take,
/// then every deletion with its cause and consequence.
pub fn rollout_text(rollout: &Rollout) -> String {
    let mut out = String::new();
    for c in &rollout.clusters {
        let _ = writeln!(out, "cluster {}", c.root);
        let mut n = 0;
        for s in &c.steps {
            if s.change == LayerChange::Unchanged {
                continue;
            }
            n += 1;
            let change = match s.change {
                LayerChange::Added => "added",
                LayerChange::Removed => "removed",
                LayerChange::Changed => "changed",
                LayerChange::Unchanged => "unchanged",
            };
            let after = if s.after.is_empty() {
                String::new()
            } else {
                let names: Vec<String> = s.after.iter().map(ToString::to_string).collect();
                format!(", after {}", names.join(", "))
            };
            let _ = writeln!(
                out,
                "  {n}. {} ({change}{after}): applies {} object{}",
                s.layer,
                s.applies,
                if s.applies == 1 { "" } else { "s" }
            );
            for k in &s.takes_over {
                let _ = writeln!(out, "       takes over {k}");
            }
            for l in &s.leaves {
                let what = match l.outcome {
                    LeaveOutcome::Deleted => "DELETED",
                    LeaveOutcome::Orphaned => "left in the cluster (the layer does not prune)",
                    LeaveOutcome::Protected => "kept (prune: disabled)",
                    LeaveOutcome::HandedOver => "kept (its new layer applied it first)",
                };
                let _ = writeln!(out, "       drops {}: {what}", l.object);
            }
        }
        if n == 0 {
            let _ = writeln!(out, "  no layer changes");
        }
        if c.deletions.is_empty() {
            let _ = writeln!(out, "  nothing live is deleted");
        }
        for d in &c.deletions {
            let again = d
                .recreated_by
                .as_ref()
                .map_or(String::new(), |l| format!("; {l} creates it again"));
            let _ = writeln!(
                out,
                "  deletes {} [{}]: {}{again}\n    why: {}",
                d.object,
                v1::Consequence::from(d.consequence).name(),
                d.effect,
                d.cause
            );
        }
    }
    escape::terminal_lines(&out).into_owned()
}

/// `simulate --from --format json`.
pub fn rollout_json(rollout: &Rollout) -> String {
    json::to_string(&v1::Rollout::from(rollout))
}

/// What failing objects stall, before (and after, when given) the pending fixes.
pub fn failure_text(before: &[ClusterFailure], after: Option<&[ClusterFailure]>) -> String {
    let mut out = String::new();
    write_failure(&mut out, before);
    if let Some(after) = after {
        let _ = writeln!(
            out,
            "\nafter fluxmend's fixes (`fluxmend fix`, every phase applied):"
        );
        write_failure(&mut out, after);
    }
    escape::terminal_lines(&out).into_owned()
}

fn write_failure(out: &mut String, clusters: &[ClusterFailure]) {
    if clusters.is_empty() {
        let _ = writeln!(out, "  no live layer applies or reads the failing objects");
    }
    for c in clusters {
        let _ = writeln!(out, "cluster {}", c.root);
        if c.affected.is_empty() {
            let _ = writeln!(out, "  every layer stays Ready");
        }
        for a in &c.affected {
            match &a.status {
                Status::HealthCheckFailed { failing, masked } => {
                    let _ = writeln!(
                        out,
                        "  {}: Ready=False (HealthCheckFailed on {}); masks the health of {masked} other object{}",
                        a.layer,
                        failing.join(", "),
                        if *masked == 1 { "" } else { "s" }
                    );
                }
                Status::DependencyNotReady { waiting_for } => {
                    let names: Vec<String> = waiting_for.iter().map(ToString::to_string).collect();
                    let _ = writeln!(
                        out,
                        "  {}: DependencyNotReady (waits for {}); not reconciled, its objects' status is not reported",
                        a.layer,
                        names.join(", ")
                    );
                }
            }
        }
        if !c.frozen.is_empty() {
            let names: Vec<String> = c.frozen.iter().map(ToString::to_string).collect();
            let _ = writeln!(
                out,
                "  frozen at their last revision (their source rejects new ones): {}",
                names.join(", ")
            );
        }
        for corr in &c.corrections {
            let _ = writeln!(
                out,
                "  a corrective commit to {}{} {}: {}",
                corr.target,
                if corr.files.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", corr.files.join(" or "))
                },
                if corr.can_arrive {
                    "can arrive"
                } else {
                    "CANNOT arrive"
                },
                corr.why
            );
        }
    }
}

/// `simulate --fail --format json`.
pub fn failure_json(before: &[ClusterFailure], after: Option<&[ClusterFailure]>) -> String {
    json::to_string(&v1::Failure::new(before, after))
}
