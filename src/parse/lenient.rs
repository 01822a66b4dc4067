//! go-yaml's indentation leniency. Flux and kustomize parse with go-yaml (a libyaml port), whose
//! scanner ignores indentation inside flow collections and quoted scalars: a `]` at the parent
//! key's column, or the continuation line of a quoted string written at column 0, are accepted.
//! YAML 1.2 (and so saphyr-parser) rejects them. Rather than accept less than Flux, the parser
//! is run again on a shadow text where such lines are indented just enough; a line's added
//! spaces sit before its first token, so every position maps back by a per-line shift, and the
//! values do not change (leading blanks of a flow or quoted continuation line are not content).

use saphyr_parser::{Event, Marker, Parser};

/// The saphyr-parser errors that go-yaml does not raise.
const FLOW_INDENTATION: &[&str] = &[
    "invalid indentation",
    "invalid indentation in flow construct",
];
const QUOTED_INDENTATION: &str = "invalid indentation in quoted scalar";

/// How many lines are re-indented at most, one parse each: real files need a handful.
const MAX_REPAIRS: usize = 256;

/// Whether a parse error is one that only YAML 1.2's indentation rules raise.
pub(super) fn is_indentation_error(message: &str) -> bool {
    FLOW_INDENTATION.contains(&message) || message == QUOTED_INDENTATION
}

/// Spaces added at the start of each line (by 0-based line index) of a shadow text.
#[derive(Clone, Debug, Default)]
pub(super) struct Padding {
    pads: Vec<u32>,
}

impl Padding {
    /// Spaces added before the 1-based `line`.
    pub(super) fn of_line(&self, line: usize) -> usize {
        line.checked_sub(1)
            .and_then(|i| self.pads.get(i))
            .map_or(0, |&p| p as usize)
    }

    /// `text` with the padding applied.
    pub(super) fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + self.pads.iter().sum::<u32>() as usize);
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let pad = self.pads.get(i).copied().unwrap_or(0) as usize;
            out.extend(std::iter::repeat_n(' ', pad));
            out.push_str(line);
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
