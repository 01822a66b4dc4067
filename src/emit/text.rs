//! Text for people: a finding as a short headline (`path:line:col: FM002 error: summary`) and
//! indented, wrapped detail, the explanation a layer's findings share given once, and styles
//! (ANSI, stripped by `anstream` where colour is off: `--color`, `NO_COLOR`, not a terminal).

use std::collections::HashSet;

use anstyle::{AnsiColor, Style};

use crate::diagnostics::Severity;
use crate::emit::escape;
use crate::rules::Finding;

/// Width text is wrapped to.
const WIDTH: usize = 100;

/// Indent of detail lines below a headline.
const INDENT: &str = "    ";

/// Indent of the lines a wrapped headline, detail line or summary continues on.
pub const CONTINUATION: &str = "      ";

/// A headline longer than this is cut at a clause boundary, the rest going to the detail.
const HEADLINE_MAX: usize = 120;

/// `text` in `style`.
pub fn styled(style: Style, text: &str) -> String {
    format!("{}{text}{}", style.render(), style.render_reset())
}

/// The style of a severity's name.
pub fn severity_style(severity: Severity) -> Style {
    let colour = match severity {
        Severity::Error => AnsiColor::Red,
        Severity::Warning => AnsiColor::Yellow,
        Severity::Note => AnsiColor::Cyan,
    };
    Style::new().fg_color(Some(colour.into())).bold()
}

/// The style of a place (`path:line:col`).
pub fn place_style() -> Style {
    Style::new().bold()
}

/// A finding's summary as a headline: one line, unless it is longer than [`HEADLINE_MAX`],
/// then cut at a clause boundary, the rest of its sentence returned to go first in the detail.
pub fn cut_summary(summary: &str) -> (String, Option<String>) {
    if summary.chars().count() <= HEADLINE_MAX {
        return (summary.to_string(), None);
    }
    match clause_cut(summary) {
        Some(cut) => {
            let rest = summary[cut..]
                .trim_start_matches([',', ':', ';', '—', ' '])
                .trim()
                .to_string();
            (summary[..cut].to_string(), Some(rest))
        }
        None => (summary.to_string(), None),
    }
}

/// Where to cut a long headline: the first clause boundary at least 40 bytes in — `, `, `; `,
/// ` — `, or a `: ` that opens a clause — outside brackets, braces and code spans, and never the
/// colon of a `key: value` (`wait: true`), which would split the setting from its value.
fn clause_cut(headline: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut code = false;
    for (i, c) in headline.char_indices() {
        let rest = &headline[i + c.len_utf8()..];
        match c {
            '`' => code = !code,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ if depth > 0 || code || i < 40 => {}
            ',' | ';' if rest.starts_with(' ') => return Some(i),
            '—' if headline[..i].ends_with(' ') && rest.starts_with(' ') => {
                return Some(i - 1);
            }
            ':' if rest.starts_with(' ') && opens_clause(&rest[1..]) => return Some(i),
            _ => {}
        }
    }
    None
}

/// Whether the text after a `: ` is a clause (several words before the next punctuation) rather
/// than the value of a `key: value` (`true, so…`, `disabled where…`, `2 entries`).
fn opens_clause(after: &str) -> bool {
    let phrase = after
        .split([',', ';', ':', '(', ')', '[', ']', '{', '}'])
        .next()
        .unwrap_or("");
    phrase.split_whitespace().count() >= 4
}

/// The width of `text` on a terminal: its characters without ANSI styles.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut escape = false;
    for c in text.chars() {
        match c {
            '\u{1b}' => escape = true,
            'm' if escape => escape = false,
            _ if escape => {}
            _ => width += 1,
        }
    }
    width
}

/// `text` wrapped to [`WIDTH`]: the first line after `first`, the others after `rest`. Words
/// are never split (a long path stays whole, and clickable); styles do not count as width.
pub fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
    // The text comes from the repository: inert on a terminal (`first` and `rest` are ours).
    wrap_at(out, WIDTH, first, rest, &escape::terminal(text));
}

/// The one line breaker of every output: `text`'s words in lines of at most `width` columns
/// (a longer word alone on its line), the first after `first`, the others after `rest`.
pub(super) fn wrap_at(out: &mut String, width: usize, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    let mut used = visible_width(first);
    let mut empty = true;
    for word in text.split_whitespace() {
        let word_width = visible_width(word);
        if !empty && used + 1 + word_width > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            used = visible_width(rest);
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        line.push_str(word);
        used += word_width;
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// A detail line `label: text` below a headline (no label: the text alone), wrapped.
pub fn detail(out: &mut String, label: &str, text: &str) {
    let first = if label.is_empty() {
        INDENT.to_string()
    } else {
        format!(
            "{INDENT}{} ",
            styled(
                Style::new().bold(),
                &format!("{}:", escape::terminal(label))
            )
        )
    };
    wrap(out, &first, CONTINUATION, text);
}

/// A headline, `place rule severity: text` (`place severity: text` for a diagnostic), wrapped:
/// its continuation lines are indented like detail that continues, so that only headlines start
/// at the margin.
pub fn headline(out: &mut String, place: &str, rule: Option<&str>, severity: Severity, text: &str) {
    let rule = rule.map_or(String::new(), |r| {
        format!(" {}", styled(Style::new().bold(), r))
    });
    let first = format!(
        "{}{rule} {}: ",
        styled(place_style(), &format!("{}:", escape::terminal(place))),
        styled(severity_style(severity), &severity.to_string()),
    );
    wrap(out, &first, CONTINUATION, text);
}

/// How much of a text report to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shown {
    /// Notes (findings and diagnostics of severity note): `--show-notes`/`-v`, or `--fail-on
    /// note`, where they decide the exit code. JSON and SARIF always keep them.
    pub notes: bool,
    /// The detail lines below a headline and the closing summary: off with `--quiet`.
    pub detail: bool,
}

impl Default for Shown {
    fn default() -> Self {
        Shown {
            notes: false,
            detail: true,
        }
    }
}

impl Shown {
    /// Whether something of `severity` is shown.
    pub fn shows(&self, severity: Severity) -> bool {
        self.notes || severity > Severity::Note
    }
}

/// A unified diff coloured for a terminal: removed lines red, added green, hunk headers cyan.
pub fn diff(diff: &str) -> String {
    let mut out = String::with_capacity(diff.len());
    for line in diff.split_inclusive('\n') {
        let style = if line.starts_with("+++") || line.starts_with("---") {
            Style::new().bold()
        } else if line.starts_with('+') {
            Style::new().fg_color(Some(AnsiColor::Green.into()))
        } else if line.starts_with('-') {
            Style::new().fg_color(Some(AnsiColor::Red.into()))
        } else if line.starts_with("@@") {
            Style::new().fg_color(Some(AnsiColor::Cyan.into()))
        } else {
            Style::new()
        };
        let body = line.strip_suffix('\n').unwrap_or(line);
        out.push_str(&styled(style, body));
        if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Writes findings as headline and detail, each layer's shared explanation once.
#[derive(Default)]
pub struct FindingWriter {
    shown: Shown,
    /// (layer, sentence) pairs already written.
    said: HashSet<(String, String)>,
}

impl FindingWriter {
    pub fn new(shown: Shown) -> Self {
        FindingWriter {
            shown,
            said: HashSet::new(),
        }
    }

    /// The headline (the summary) and the details of `f`, paths below `base`; with `--quiet`,
    /// the headline alone. Returns whether detail lines may follow (not `--quiet`).
    pub fn write(&mut self, out: &mut String, f: &Finding, base: &str) -> bool {
        let (summary, rest) = cut_summary(&f.summary);
        let place = format!("{base}{}", f.location);
        headline(out, &place, Some(f.rule), f.severity, &summary);
        if !self.shown.detail {
            return false;
        }
        // The rest of the headline is about this finding's object: always said.
        if let Some(rest) = rest {
            detail(out, "", &rest);
        }
        let layer = f.layer.to_string();
        let mut repeated = false;
        for sentence in &f.details {
            if self.said.insert((layer.clone(), sentence.clone())) {
                detail(out, "", sentence);
            } else {
                repeated = true;
            }
        }
        if repeated {
            detail(
                out,
                "",
                &format!("(what a failure does to {layer} is said above)"),
            );
        }
        if !f.cluster.is_empty() {
            detail(out, "cluster", &f.cluster);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_summary_is_cut_at_a_clause() {
        let short = "a (wait: true) gates b.";
        assert_eq!(cut_summary(short), (short.to_string(), None));
        let long = format!(
            "OCIRepository/apps/podinfo: spec.verify has 2 entries, and {}",
            "x ".repeat(60)
        );
        let (h, rest) = cut_summary(&long);
        assert_eq!(h, "OCIRepository/apps/podinfo: spec.verify has 2 entries");
        assert!(rest.is_some_and(|r| r.starts_with("and x")));
        // No cut inside brackets, nor in the first 40 bytes.
        assert_eq!(clause_cut("short: x, y"), None);
        assert_eq!(
            clause_cut("flux-system/apps (wait: true) health-gates StatefulSet/x, a disposable"),
            Some(56)
        );
    }

    #[test]
    fn a_headline_is_never_cut_inside_braces_or_a_setting() {
        // The colon of `wait: true` and the commas inside a patch target are not clause ends.
        let target = "FluxInstance/flux-system/flux: the patch at line 12 targets {kind: \
                      Deployment, name: kustomize-controller}, which selects nothing";
        let cut = clause_cut(target).expect("a clause");
        assert!(
            target[..cut].ends_with("kustomize-controller}"),
            "{}",
            &target[..cut]
        );
        let setting = "flux-system/infrastructure-controllers has wait: true, so Flux ignores it";
        let cut = clause_cut(setting).expect("a clause");
        assert!(
            setting[..cut].ends_with("has wait: true"),
            "{}",
            &setting[..cut]
        );
        // A colon that opens a clause is one; code spans are not cut.
        let clause =
            "root-source trust loop of flux-system/apps: the patch of FluxInstance/x sets it";
        assert!(clause[..clause_cut(clause).unwrap()].ends_with("flux-system/apps"));
        assert_eq!(
            clause_cut("a sentence long enough to reach forty bytes `a, b: c d e f` ends"),
            None
        );
    }

    #[test]
    fn styles_do_not_count_as_width() {
        let mut plain = String::new();
        let mut coloured = String::new();
        let text = "word ".repeat(40);
        wrap(&mut plain, "place: ", "  ", &text);
        let first = format!("{} ", styled(place_style(), "place:"));
        wrap(&mut coloured, &first, "  ", &text);
        let strip = |s: &str| s.replace("\u{1b}[1m", "").replace("\u{1b}[0m", "");
        assert_eq!(strip(&coloured), plain);
    }

    #[test]
    fn wrapping_keeps_words_and_width() {
        let mut out = String::new();
        wrap(&mut out, "    ", "      ", &"word ".repeat(50));
        assert!(out.lines().all(|l| l.chars().count() <= WIDTH));
        assert!(out.lines().skip(1).all(|l| l.starts_with("      word")));
        assert_eq!(out.split_whitespace().count(), 50);
    }
}
