//! Pull-request text for `fix --commit` and `--pr-body`: a subject a reviewer can read in a
//! list of pull requests, and a Markdown body that says what changed, what it costs, what to do
//! on the cluster and how to review it. Deterministic (sorted, deduplicated) so that a bot
//! re-running on the same repository proposes the same text.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::emit::escape::{md_code, md_text};
use crate::emit::text::wrap_at;
use crate::rules::Finding;
use crate::verify::Plan;

/// Body lines are wrapped here: what git and most review tools show without scrolling.
const WIDTH: usize = 72;

/// A subject longer than this names the rules instead of every move (GitHub shows about this
/// much of a pull request's title in its lists).
const SUBJECT_MAX: usize = 90;

/// What one fixed finding does, in the imperative, named by its fix's title with its phase:
/// `move FluxInstance out of infrastructure-controllers (phase 2 of 2)`,
/// `remove ignored healthChecks from apps`.
fn action(f: &Finding) -> Option<String> {
    let fix = f.fix()?;
    let phase = fix
        .phase
        .as_ref()
        .map(|p| format!(" (phase {} of {})", p.phase, p.phases))
        .unwrap_or_default();
    Some(format!("{}{phase}", md_text(&fix.title)))
}

/// The commit subject: every distinct fix, sorted; when they do not fit one line, the count
/// of fixes and their rules.
pub fn subject(plan: &Plan) -> String {
    let actions: BTreeSet<String> = plan.findings.iter().filter_map(action).collect();
    let named = format!(
        "fluxmend: {}",
        actions.iter().cloned().collect::<Vec<_>>().join("; ")
    );
    if named.len() <= SUBJECT_MAX {
        return named;
    }
    let rules: BTreeSet<&str> = plan
        .findings
        .iter()
        .filter(|f| f.fix().is_some())
        .map(|f| f.rule)
        .collect();
    let fixed = plan.findings.iter().filter(|f| f.fix().is_some()).count();
    format!(
        "fluxmend: fix {fixed} finding{} ({})",
        if fixed == 1 { "" } else { "s" },
        rules.into_iter().collect::<Vec<_>>().join(", ")
    )
}

/// Append `text` wrapped at [`WIDTH`], the first line after `first`, the others after `rest`.
fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
    wrap_at(out, WIDTH, first, rest, text);
}

/// The Markdown body: findings and their fixes, the files, rollout notes, verification and how
/// to review.
pub fn body(plan: &Plan) -> String {
    let mut out = String::new();
    out.push_str("## Findings\n\n");
    let mut tradeoffs_said = BTreeSet::new();
    for f in plan.findings.iter().filter(|f| f.fix().is_some()) {
        let fix = f.fix().expect("filtered");
        wrap(
            &mut out,
            "- ",
            "  ",
            &format!(
                "**{}** {} in layer {} ({}): {}",
                f.rule,
                md_code(&f.object.to_string()),
                md_code(&f.layer.to_string()),
                md_code(&format!("{}:{}", f.location.file, f.location.line)),
                md_text(&f.message())
            ),
        );
        wrap(
            &mut out,
            "  - ",
            "    ",
            &format!("Fix: {}", md_text(&fix.description)),
        );
        // The same rule's same kind of fix costs the same: said once.
        let tradeoff = if tradeoffs_said.insert((f.rule, fix.tradeoff)) {
            fix.tradeoff
        } else {
            "as above."
        };
        wrap(
            &mut out,
            "  - ",
            "    ",
            &format!("Trade-off: {}", md_text(tradeoff)),
        );
        if let Some(p) = &fix.phase {
            let step = if p.phase < p.phases {
                format!(
                    "Phase {} of {}: a move that cannot roll out safely in one step. Before \
                     running `fluxmend fix` for phase {}, confirm {}",
                    p.phase,
                    p.phases,
                    p.phase + 1,
                    md_text(&p.confirm)
                )
            } else {
                format!(
                    "Phase {} of {}. Precondition: {}",
                    p.phase,
                    p.phases,
                    md_text(&p.confirm)
                )
            };
            wrap(&mut out, "  - ", "    ", &step);
            wrap(
                &mut out,
                "  - ",
                "    ",
                &format!("Afterwards: {}", md_text(&p.stays)),
            );
        }
    }
    let unfixed = plan.findings.iter().filter(|f| f.fix().is_none()).count();
    if unfixed > 0 {
        out.push('\n');
        wrap(
            &mut out,
            "",
            "",
            &format!(
                "{unfixed} other finding{} {} no fix here; `fluxmend check` lists {}.",
                if unfixed == 1 { "" } else { "s" },
                if unfixed == 1 { "has" } else { "have" },
                if unfixed == 1 { "it" } else { "them" }
            ),
        );
    }
    out.push_str("\n## Files\n\n");
    for file in &plan.files {
        let change = match (&file.before, &file.after) {
            (None, Some(_)) => "created",
            (Some(_), None) => "deleted",
            _ => "edited",
        };
        let _ = writeln!(out, "- {change} {}", md_code(&file.path));
    }
    if !plan.rollout_notes.is_empty() {
        out.push_str("\n## Rollout\n\n");
        for note in &plan.rollout_notes {
            wrap(&mut out, "- ", "  ", &md_text(note));
        }
    }
    out.push_str("\n## Verification\n\n");
    if plan.verified_by.is_empty() {
        out.push_str("- NOT verified before writing (`--verify off`).\n");
    } else {
        wrap(
            &mut out,
            "- ",
            "  ",
            &format!(
                "Verified before writing: {} (the repository renders the same objects, and \
                 the rollout deletes nothing live).",
                plan.verifier_names().join(" + ")
            ),
        );
    }
    for note in &plan.not_verified {
        wrap(
            &mut out,
            "- ",
            "  ",
            &format!("Not verified: {}", md_text(note)),
        );
    }
    out.push_str("\n## How to review\n\n");
    let rules: BTreeSet<&str> = plan
        .findings
        .iter()
        .filter(|f| f.fix().is_some())
        .map(|f| f.rule)
        .collect();
    let explain: Vec<String> = rules
        .iter()
        .map(|id| format!("`fluxmend explain {id}`"))
        .collect();
    let explain = format!(
        "{} gives the reasoning and the trade-off of the fix.",
        explain.join(", ")
    );
    for step in [
        "Read the diff: only the files above change, and in them only the bytes the move needs \
         (comments, quoting and order are kept).",
        "`fluxmend simulate --from HEAD~1` plays this change through Flux's reconcile order and \
         lists every live object deleted on the way (none, or only runners that restart).",
        &explain,
    ] {
        wrap(&mut out, "- ", "  ", step);
    }
    out
}

/// The commit message: subject, blank line, body.
pub fn commit_message(plan: &Plan) -> String {
    format!("{}\n\n{}", subject(plan), body(plan))
}
