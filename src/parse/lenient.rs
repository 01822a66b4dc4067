//! go-yaml's indentation leniency. Flux and kustomize parse with go-yaml (a libyaml port), whose
//! scanner ignores indentation inside flow collections and quoted scalars: a `]` at the parent
//! key's column, or the continuation line of a quoted string written at column 0, are accepted.
//! YAML 1.2 (and so saphyr-parser) rejects them. Rather than accept less than Flux, the parser
//! is run again on a shadow text where such lines are indented just enough; a line's added
//! spaces sit before its first token, so every position maps back by a per-line shift, and the
//! values do not change (leading blanks of a flow or quoted continuation line are not content).
//!
//! The same shadow reads go-yaml's alias names: they are `[A-Za-z0-9_-]`, so in `*app:` the `:`
//! ends the alias `app`, a mapping key (home-lab HelmRelease values use it). YAML 1.2 reads the
//! alias `app:`, which names no anchor; the shadow puts a space before that `:`.

use saphyr_parser::{Event, Marker, Parser};

/// The saphyr-parser error of an alias whose name runs on past go-yaml's alias characters.
const UNKNOWN_ANCHOR: &str = "while parsing node, found unknown anchor";

/// The saphyr-parser errors that go-yaml does not raise.
const FLOW_INDENTATION: &[&str] = &[
    "invalid indentation",
    "invalid indentation in flow construct",
];
const QUOTED_INDENTATION: &str = "invalid indentation in quoted scalar";

/// How many lines are re-indented at most, one parse each: real files need a handful.
const MAX_REPAIRS: usize = 256;

/// Whether a parse error may be one that go-yaml does not raise: YAML 1.2's indentation rules,
/// or an alias name that go-yaml ends earlier.
pub(super) fn is_repairable(message: &str) -> bool {
    FLOW_INDENTATION.contains(&message)
        || message == QUOTED_INDENTATION
        || message == UNKNOWN_ANCHOR
}

/// Spaces added at the start of each line (by 0-based line index) of a shadow text, and single
/// spaces added inside lines (before the `:` that ends an alias).
#[derive(Clone, Debug, Default)]
pub(super) struct Padding {
    pads: Vec<u32>,
    /// (0-based line, column in characters of the file's line) before which one space is
    /// added, sorted.
    inserts: Vec<(u32, u32)>,
}

impl Padding {
    /// The column (0-based, in characters) in the file's 1-based `line` of the shadow's column
    /// `col` on that line.
    pub(super) fn original_col(&self, line: usize, col: usize) -> usize {
        let Some(index) = line.checked_sub(1) else {
            return col;
        };
        let pad = self.pads.get(index).map_or(0, |&p| p as usize);
        let mut col = col.saturating_sub(pad);
        for &(_, at) in self.inserts_of(index) {
            // In the shadow, the added space sits at `at` and the file's column `at` after it.
            if col > at as usize {
                col -= 1;
            } else {
                break;
            }
        }
        col
    }

    fn inserts_of(&self, index: usize) -> &[(u32, u32)] {
        let start = self.inserts.partition_point(|&(l, _)| (l as usize) < index);
        let end = self
            .inserts
            .partition_point(|&(l, _)| (l as usize) <= index);
        &self.inserts[start..end]
    }

    /// `text` with the padding applied.
    pub(super) fn apply(&self, text: &str) -> String {
        let added = self.pads.iter().sum::<u32>() as usize + self.inserts.len();
        let mut out = String::with_capacity(text.len() + added);
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let pad = self.pads.get(i).copied().unwrap_or(0) as usize;
            out.extend(std::iter::repeat_n(' ', pad));
            let mut inserts = self.inserts_of(i).iter().peekable();
            for (col, c) in line.chars().enumerate() {
                if inserts.next_if(|&&(_, at)| at as usize == col).is_some() {
                    out.push(' ');
                }
                out.push(c);
            }
        }
        out
    }
}

/// The padding under which `text` has no indentation error that go-yaml does not raise (its
/// parse may still fail on another error, at the place go-yaml reports it); `None` when an
/// indentation error cannot be repaired (the original error stands).
pub(super) fn repair(text: &str) -> Option<Padding> {
    let lines = text.split_inclusive('\n').count().max(1);
    let mut padding = Padding {
        pads: vec![0; lines],
        inserts: Vec::new(),
    };
    for _ in 0..MAX_REPAIRS {
        let shadow = padding.apply(text);
        let starts = line_starts(&shadow);
        let Some((mark, message)) = first_error(&shadow) else {
            return Some(padding);
        };
        let line = mark.line().checked_sub(1)?;
        let (first, last, column) = if message == QUOTED_INDENTATION {
            // The mark is the opening quote: its continuation lines go right of it.
            let at = byte_of(&shadow, &starts, &mark)?;
            let end = super::ends::quoted_end(&shadow, at, *shadow.as_bytes().get(at)?);
            let last = starts.partition_point(|&s| s < end).saturating_sub(1);
            (line + 1, last, mark.col() + 1)
        } else if message == UNKNOWN_ANCHOR {
            // `*name:` where go-yaml's alias ends before the `:`: a space in between.
            // Any other unknown anchor is one for go-yaml too: reported at its place.
            let Some(colon) =
                byte_of(&shadow, &starts, &mark).and_then(|at| go_alias_colon(&shadow, at))
            else {
                return Some(padding);
            };
            let col = padding.original_col(line + 1, shadow[starts[line]..colon].chars().count());
            let insert = (line as u32, col as u32);
            if padding.inserts.contains(&insert) {
                return Some(padding);
            }
            let place = padding.inserts.partition_point(|&i| i < insert);
            padding.inserts.insert(place, insert);
            continue;
        } else if FLOW_INDENTATION.contains(&message.as_str()) {
            // Inside a flow collection: right of the bracket that opened the outermost one.
            let bracket = outermost_open_flow(&shadow[..*starts.get(line)?])?;
            (line, line, bracket + 1)
        } else {
            // Another error, which go-yaml raises too: the parse under this padding reports it.
            return Some(padding);
        };
        let mut changed = false;
        for l in first..=last.min(lines - 1) {
            let rest = &shadow[starts[l]..];
            let indent = rest
                .bytes()
                .take_while(|b| matches!(b, b' ' | b'\t'))
                .count();
            let blank = matches!(rest.as_bytes().get(indent), None | Some(b'\n' | b'\r'));
            if !blank && indent < column {
                padding.pads[l] += (column - indent) as u32;
                changed = true;
            }
        }
        if !changed {
            return None;
        }
    }
    None
}

/// For an alias token at `at` (`*`), the byte of a `:` right after go-yaml's alias name
/// (`[A-Za-z0-9_-]+`) that YAML 1.2 reads as part of the name: followed by a blank or the end of
/// the line, it is the mapping's value indicator for go-yaml.
fn go_alias_colon(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'*') {
        return None;
    }
    let end = super::ends::go_alias_end(text, at);
    let after = bytes.get(end + 1);
    (end > at + 1
        && bytes.get(end) == Some(&b':')
        && matches!(after, None | Some(b' ' | b'\t' | b'\r' | b'\n')))
    .then_some(end)
}

/// The first error of a parse of `text`, with its position and message.
fn first_error(text: &str) -> Option<(Marker, String)> {
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next_event()? {
            Ok((Event::StreamEnd, _)) => return None,
            Ok(_) => {}
            Err(e) => return Some((*e.marker(), e.info().to_string())),
        }
    }
}

/// The column (in characters) of the bracket opening the outermost flow collection still open
/// at the end of `prefix`.
fn outermost_open_flow(prefix: &str) -> Option<usize> {
    let starts = line_starts(prefix);
    let mut open: Vec<Option<usize>> = Vec::new();
    let mut parser = Parser::new_from_str(prefix);
    while let Some(Ok((event, span))) = parser.next_event() {
        match event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                let at = byte_of(prefix, &starts, &span.start)
                    .map(|b| super::ends::past_properties(prefix, b));
                let bracket = at.filter(|&b| matches!(prefix.as_bytes().get(b), Some(b'[' | b'{')));
                open.push(bracket.map(|b| {
                    let line_start = starts[starts.partition_point(|&s| s <= b) - 1];
                    prefix[line_start..b].chars().count()
                }));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                open.pop();
            }
            Event::StreamEnd => break,
            _ => {}
        }
    }
    open.into_iter().flatten().next()
}

fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The byte offset of a marker (1-based line, column in characters).
fn byte_of(text: &str, starts: &[usize], mark: &Marker) -> Option<usize> {
    let start = *starts.get(mark.line().checked_sub(1)?)?;
    let line = &text[start..];
    line.char_indices()
        .nth(mark.col())
        .map(|(i, _)| start + i)
        .or(Some(text.len()))
}
