//! Text for people: a finding as a short headline (`path:line:col: FM002 error: summary`) and
//! indented, wrapped detail, the explanation a layer's findings share given once, and styles
//! (ANSI, stripped by `anstream` where colour is off: `--color`, `NO_COLOR`, not a terminal).

use std::collections::HashSet;
use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};

use crate::diagnostics::Severity;
use crate::emit::escape;
use crate::rules::Finding;

/// Width text is wrapped to.
const WIDTH: usize = 100;

/// Indent of detail lines below a headline.
const INDENT: &str = "    ";

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

/// A finding's message split into a one-line summary and the sentences of its detail; the first
/// detail is the rest of the headline's sentence when the headline was cut there.
pub fn split_message(message: &str) -> (String, Vec<String>, bool) {
    let mut sentences = sentences(message);
    let mut headline = if sentences.is_empty() {
        String::new()
    } else {
        sentences.remove(0)
    };
    let mut cut_here = false;
    if headline.chars().count() > HEADLINE_MAX
        && let Some(cut) = clause_cut(&headline)
    {
        cut_here = true;
        let rest = headline[cut..]
            .trim_start_matches([',', ':'])
            .trim()
            .to_string();
        headline.truncate(cut);
        sentences.insert(0, rest);
    }
    (headline, sentences, cut_here)
}

/// The sentences of a message: split after `. ` when a capital letter follows.
fn sentences(message: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = message.as_bytes();
    for (i, _) in message.match_indices(". ") {
        if bytes.get(i + 2).is_some_and(u8::is_ascii_uppercase) {
            out.push(message[start..=i].trim().to_string());
            start = i + 2;
        }
    }
    let last = message[start..].trim();
    if !last.is_empty() {
        out.push(last.to_string());
    }
    out
}

/// Where to cut a long headline: the first `, ` or `: ` at least 40 bytes in, outside brackets.
fn clause_cut(headline: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in headline.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | ':' if depth == 0 && i >= 40 && headline[i + 1..].starts_with(' ') => {
                return Some(i);
            }
            _ => {}
        }
    }
    None
}

/// `text` wrapped to [`WIDTH`]: the first line after `first`, the others after `rest`.
pub fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if !empty && len + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
}

/// A detail line `label: text` below a headline (no label: the text alone), wrapped.
pub fn detail(out: &mut String, label: &str, text: &str) {
    let (label, text) = (&*escape::terminal(label), &*escape::terminal(text));
    let label_text = if label.is_empty() {
        String::new()
    } else {
        format!("{label}: ")
    };
    let mut wrapped = String::new();
    wrap(
        &mut wrapped,
        &format!("{INDENT}{label_text}"),
        &format!("{INDENT}  "),
        text,
    );
    if !label.is_empty() {
        // Styled after wrapping, so that the width counts only what is visible.
        let bold = styled(Style::new().bold(), &format!("{label}:"));
        wrapped = wrapped.replacen(&format!("{INDENT}{label}:"), &format!("{INDENT}{bold}"), 1);
    }
    out.push_str(&wrapped);
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
    /// (layer, sentence) pairs already written.
    said: HashSet<(String, String)>,
}

impl FindingWriter {
    /// The headline and the message's detail of `f`, paths below `base`.
    pub fn write(&mut self, out: &mut String, f: &Finding, base: &str) {
        let (headline, details, cut) = split_message(&f.message);
        let headline = escape::terminal(&headline);
        let place =
            escape::terminal(&format!("{base}{}:{}:{}:", f.file, f.line, f.column)).into_owned();
        let _ = writeln!(
            out,
            "{} {} {}: {headline}",
            styled(place_style(), &place),
            styled(Style::new().bold(), f.rule),
            styled(severity_style(f.severity), &f.severity.to_string()),
        );
        let layer = f.layer.to_string();
        let mut repeated = false;
        for (i, sentence) in details.into_iter().enumerate() {
            // The rest of the headline is about this finding's object: always said.
            if (cut && i == 0) || self.said.insert((layer.clone(), sentence.clone())) {
                detail(out, "", &sentence);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_splits_into_headline_and_sentences() {
        let (h, d, _) = split_message("a (wait: true) gates b. When it fails, c. Its d are e");
        assert_eq!(h, "a (wait: true) gates b.");
        assert_eq!(d, ["When it fails, c.", "Its d are e"]);
        let long = format!(
            "OCIRepository/apps/podinfo: spec.verify has 2 entries, and {}",
            "x ".repeat(60)
        );
        let (h, d, cut) = split_message(&long);
        assert!(cut);
        assert_eq!(h, "OCIRepository/apps/podinfo: spec.verify has 2 entries");
        assert!(d[0].starts_with("and x"));
        // No cut inside brackets, nor in the first 40 bytes.
        assert_eq!(clause_cut("short: x, y"), None);
        assert_eq!(
            clause_cut("flux-system/apps (wait: true) health-gates StatefulSet/x, a disposable"),
            Some(56)
        );
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
