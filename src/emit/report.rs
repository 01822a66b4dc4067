//! Reports of `check` and `fix`, as text or JSON. The JSON shapes are contracts documented in
//! the README.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::diagnostics::{Diagnostic, Severity};
use crate::emit::json::{self, v1};
use crate::emit::text::{self, FindingWriter, Shown};
use crate::model::{Model, NOTHING_ANALYSED};
use crate::rules::Finding;
use crate::rules::plural;
use crate::rules::suppress::Suppressed;

/// Counts a bot can gate on without walking the lists (JSON: [`v1::Summary`]).
#[derive(Debug)]
pub struct Summary {
    pub files: usize,
    pub objects: usize,
    pub layers: usize,
    pub live_layers: usize,
    pub findings: BTreeMap<Severity, usize>,
    pub diagnostics: BTreeMap<Severity, usize>,
    /// Findings held back by a suppression (not in `findings`).
    pub suppressed: usize,
    /// PATH holds no root, so every top layer was taken for one (the text report's hint).
    pub rootless: bool,
}

impl Summary {
    pub fn new(
        model: &Model,
        findings: &[Finding],
        suppressed: &[Suppressed],
        diagnostics: &[Diagnostic],
    ) -> Self {
        Summary {
            files: model.repo.parsed_files(),
            objects: model.objects.len(),
            layers: model.layers.len(),
            live_layers: model.live_layers().count(),
            findings: by_severity(findings.iter().map(|f| f.severity)),
            diagnostics: by_severity(diagnostics.iter().map(|d| d.severity)),
            suppressed: suppressed.len(),
            rootless: crate::model::rootless(model),
        }
    }
}

/// `check --format json`.
pub fn check_json(
    findings: &[Finding],
    suppressed: &[Suppressed],
    diagnostics: &[Diagnostic],
    summary: &Summary,
) -> String {
    json::to_string(&v1::Check::new(findings, suppressed, diagnostics, summary))
}

/// The path from the current directory to the repository root, ending in `/` (`""` when they
/// are the same): text output writes `base + file`, so that `path:line:col` opens in an editor
/// or terminal started where fluxmend ran.
pub fn path_base(root: &std::path::Path) -> String {
    let Ok(cwd) = std::env::current_dir().and_then(|d| d.canonicalize()) else {
        return String::new();
    };
    let root: Vec<_> = root.components().collect();
    let here: Vec<_> = cwd.components().collect();
    let common = root.iter().zip(&here).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); here.len() - common];
    parts.extend(
        root[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    if parts.is_empty() {
        String::new()
    } else {
        parts.join("/") + "/"
    }
}

/// `check --format text`: one block per finding, one line per diagnostic, then the summary.
/// Paths are written below `base` ([`path_base`]). Notes are counted but shown only when
/// `shown` says so; `--quiet` leaves the headlines alone.
pub fn check_text(
    findings: &[Finding],
    diagnostics: &[Diagnostic],
    summary: &Summary,
    base: &str,
    shown: Shown,
) -> String {
    let mut out = String::new();
    let mut writer = FindingWriter::new(shown);
    for f in findings.iter().filter(|f| shown.shows(f.severity)) {
        if writer.write(&mut out, f, base) && f.fix().is_some() {
            text::detail(&mut out, "fix", "available: `fluxmend fix` shows it");
        }
    }
    for d in diagnostics.iter().filter(|d| shown.shows(d.severity)) {
        diagnostic_line(&mut out, d, base);
    }
    if !shown.detail {
        return out;
    }
    let mut line = format!(
        "checked {}, {}, {} ({} live): findings: {}; diagnostics: {}",
        plural(summary.files, "file", "files"),
        plural(summary.objects, "object", "objects"),
        plural(summary.layers, "layer", "layers"),
        summary.live_layers,
        count(&summary.findings),
        count(&summary.diagnostics)
    );
    if summary.suppressed > 0 {
        let _ = write!(
            line,
            "; suppressed: {} (`--format json` lists them with their reasons)",
            plural(summary.suppressed, "finding", "findings")
        );
    }
    let severities = findings.iter().map(|f| f.severity);
    hidden_notes(&mut line, severities, diagnostics, shown);
    text::wrap(&mut out, "", text::CONTINUATION, &line);
    if summary.layers == 0 && !shown.shows(Severity::Note) {
        text::wrap(&mut out, "hint: ", text::CONTINUATION, NOTHING_ANALYSED);
    }
    if summary.rootless {
        no_root_hint(&mut out);
    }
    out
}

/// ` (N notes not shown: …)` when the report left notes out.
fn hidden_notes(
    out: &mut String,
    findings: impl Iterator<Item = Severity>,
    diagnostics: &[Diagnostic],
    shown: Shown,
) {
    let hidden = findings
        .chain(diagnostics.iter().map(|d| d.severity))
        .filter(|&s| !shown.shows(s))
        .count();
    if hidden > 0 {
        let _ = write!(
            out,
            " ({} not shown: `--show-notes` or `-v` shows {})",
            if hidden == 1 { "note" } else { "notes" },
            if hidden == 1 { "it" } else { "them" }
        );
    }
}

/// What to do when PATH holds no root: every top layer was taken for one, which is right for a
/// fleet's shared folder but usually means fluxmend ran one folder too deep.
fn no_root_hint(out: &mut String) {
    text::wrap(
        out,
        "hint: ",
        text::CONTINUATION,
        "PATH holds no root (no FluxInstance sync, no bootstrap flux-system Kustomization), so \
         every layer that no other layer applies is taken for one: run at the repository's top \
         level or pass --root",
    );
}

/// `file:line:column: severity: message` (the root itself for the repository), below `base`,
/// wrapped like a finding's headline.
fn diagnostic_line(out: &mut String, d: &Diagnostic, base: &str) {
    let place = match d.place.position() {
        Some((l, c)) => format!("{base}{}:{l}:{c}", d.file()),
        _ if d.file().is_empty() && base.is_empty() => ".".to_string(),
        _ if d.file().is_empty() => base.trim_end_matches('/').to_string(),
        _ => format!("{base}{}", d.file()),
    };
    text::headline(out, &place, None, d.severity, &d.message);
}

/// `2 errors, 1 warning`, most severe first, or `none`.
fn count(m: &BTreeMap<Severity, usize>) -> String {
    let parts: Vec<String> = m
        .iter()
        .rev()
        .map(|(s, n)| plural(*n, &s.to_string(), &format!("{s}s")))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        parts.join(", ")
    }
}

fn by_severity(severities: impl Iterator<Item = Severity>) -> BTreeMap<Severity, usize> {
    let mut m = BTreeMap::new();
    for s in severities {
        *m.entry(s).or_insert(0) += 1;
    }
    m
}

/// What stands when `fix` has nothing to change, at or above its `--fail-on`: findings without
/// a fix and diagnostics. Either keeps the exit code at 1, so that a bot never reads "nothing to
/// change" as "the repository is fine". With a change (exit 1 anyway) nothing is counted: a
/// finding without a fix of its own may be resolved by another's, which only a next run tells.
#[derive(Debug)]
pub struct Standing {
    threshold: Option<Severity>,
    /// Findings without a fix at or above the threshold.
    pub findings: usize,
    /// Diagnostics at or above the threshold.
    pub diagnostics: usize,
}

impl Standing {
    pub fn new(
        plan: &crate::verify::Plan,
        diagnostics: &[Diagnostic],
        threshold: Option<Severity>,
    ) -> Self {
        let fails = |s: Severity| plan.files.is_empty() && threshold.is_some_and(|t| s >= t);
        Standing {
            threshold,
            findings: plan
                .findings
                .iter()
                .filter(|f| f.fix().is_none() && fails(f.severity))
                .count(),
            diagnostics: diagnostics.iter().filter(|d| fails(d.severity)).count(),
        }
    }

    /// Whether what stands makes the exit code 1.
    pub fn fails(&self) -> bool {
        self.findings + self.diagnostics > 0
    }
}

/// `fix` report for people (stderr; the diff alone goes to stdout): each finding with its fix or
/// the reason there is none (a trade-off said once per rule and fix kind), the diagnostics at
/// warning and above (notes too when `shown` says so; all counted), the change, and what still
/// stands at `--fail-on`.
pub fn fix_text(
    plan: &crate::verify::Plan,
    suppressed: &[Suppressed],
    diagnostics: &[Diagnostic],
    standing: &Standing,
    action: &str,
    base: &str,
    shown: Shown,
) -> String {
    let mut out = String::new();
    let mut writer = FindingWriter::new(shown);
    let mut tradeoffs_said = std::collections::HashSet::new();
    // A note whose fix is in the diff is shown: every changed line needs its reason.
    for f in plan
        .findings
        .iter()
        .filter(|f| shown.shows(f.severity) || (shown.detail && f.fix().is_some()))
    {
        if !writer.write(&mut out, f, base) {
            continue;
        }
        match (f.fix(), f.remedy.reason()) {
            (Some(fix), _) => {
                text::detail(&mut out, "fix", &fix.description);
                // The same rule's same kind of fix costs the same: said once.
                if tradeoffs_said.insert((f.rule, fix.tradeoff)) {
                    text::detail(&mut out, "trade-off", fix.tradeoff);
                } else {
                    text::detail(&mut out, "trade-off", "as above");
                }
                if let Some(p) = &fix.phase {
                    if p.phase < p.phases {
                        text::detail(
                            &mut out,
                            &format!("before phase {}", p.phase + 1),
                            &format!("confirm {}", p.confirm),
                        );
                    } else {
                        text::detail(&mut out, "precondition", &p.confirm);
                    }
                    text::detail(&mut out, "afterwards", &p.stays);
                }
            }
            (None, Some(reason)) => text::detail(&mut out, "no fix", &reason),
            (None, None) => {}
        }
    }
    for d in diagnostics.iter().filter(|d| shown.shows(d.severity)) {
        diagnostic_line(&mut out, d, base);
    }
    if !diagnostics.is_empty() && shown.detail {
        let mut line = format!(
            "diagnostics: {} (`fluxmend check` lists them all)",
            count(&by_severity(diagnostics.iter().map(|d| d.severity)))
        );
        // Fixed notes were shown above, with their fix.
        let unfixed = plan.findings.iter().filter(|f| f.fix().is_none());
        hidden_notes(&mut line, unfixed.map(|f| f.severity), diagnostics, shown);
        text::wrap(&mut out, "", text::CONTINUATION, &line);
    }
    if !suppressed.is_empty() && shown.detail {
        let _ = writeln!(
            out,
            "suppressed: {} (not fixed; `--format json` lists them with their reasons)",
            plural(suppressed.len(), "finding", "findings")
        );
    }
    let files = plan.files.len();
    let verified = verified_text(plan);
    let _ = match (files, action) {
        (0, _) => writeln!(out, "nothing to change"),
        (n, "") => writeln!(out, "{} to change; {verified}", plural(n, "file", "files")),
        (n, a) => writeln!(out, "{} {a}; {verified}", plural(n, "file", "files")),
    };
    if files > 0 {
        for note in &plan.not_verified {
            text::wrap(&mut out, "  not verified: ", text::CONTINUATION, note);
        }
        for note in &plan.rollout_notes {
            text::wrap(&mut out, "  ", text::CONTINUATION, note);
        }
    }
    if let (true, Some(threshold)) = (standing.fails(), standing.threshold) {
        let mut parts = Vec::new();
        if standing.findings > 0 {
            parts.push(format!(
                "{} without a fix",
                plural(standing.findings, "finding", "findings")
            ));
        }
        if standing.diagnostics > 0 {
            parts.push(plural(standing.diagnostics, "diagnostic", "diagnostics"));
        }
        let _ = writeln!(
            out,
            "still standing at --fail-on {threshold}: {} (exit 1; `--fail-on never` accepts them)",
            parts.join(" and ")
        );
    }
    out
}

/// `verified: builtin + kustomize (3 of 5 layers built)`, or a loud `NOT VERIFIED` when no
/// gate ran: the line claims kustomize only for the layers it really built.
fn verified_text(plan: &crate::verify::Plan) -> String {
    if plan.verified_by.is_empty() {
        return "NOT VERIFIED (--verify off)".to_string();
    }
    let gates = plan.verifier_names().join(" + ");
    match plan.kustomize_layers {
        Some((built, affected)) => format!(
            "verified: {gates} ({built} of {} built)",
            plural(affected, "layer", "layers")
        ),
        None => format!("verified: {gates}"),
    }
}

/// `fix --format json`: findings (with their fix or the reason there is none), the diagnostics,
/// the planned changes per file, and the diff.
pub fn fix_json(
    plan: &crate::verify::Plan,
    suppressed: &[Suppressed],
    diagnostics: &[Diagnostic],
    diff: &str,
    action: &str,
    commit: Option<&Committed>,
) -> String {
    json::to_string(&v1::FixReport::new(
        plan,
        suppressed,
        diagnostics,
        diff,
        action,
        commit,
    ))
}

/// What `fix --commit` made, for a bot to push and open a pull request from.
#[derive(Debug)]
pub struct Committed {
    /// The new commit's id (40 hex digits).
    pub id: String,
    /// The branch it is on (`--branch`, or the branch HEAD was on); `None` on a detached HEAD.
    pub branch: Option<String>,
}
