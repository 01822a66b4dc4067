//! Finding where nodes end by re-reading the source: the parser's markers only mark starts.

use super::node::{ScalarStyle, Span};

/// From `from`, skip blanks, line breaks, comments and node properties (`&anchor`, `!tag`);
/// return the position of `indicator` if it is the next token.
pub(super) fn find_indicator(text: &str, from: usize, indicator: u8) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'#' => i = line_end(text, i),
            b'&' | b'!' if indicator != b'&' && indicator != b'!' => {
                while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                    i += 1;
                }
            }
            b if b == indicator => {
                // `-` and `:` are indicators only when followed by a blank (or the end).
                let next = bytes.get(i + 1).copied();
                let blank_follows = matches!(next, None | Some(b' ' | b'\t' | b'\r' | b'\n'));
                return (blank_follows || indicator != b'-').then_some(i);
            }
            _ => return None,
        }
    }
    None
}

/// Byte position of the line break ending the line holding `at` (or the text end).
fn line_end(text: &str, at: usize) -> usize {
    text[at..].find('\n').map_or(text.len(), |i| at + i)
}

/// The byte after the last content byte of the line holding `at`, before any `\r`.
fn content_line_end(text: &str, at: usize) -> usize {
    let end = line_end(text, at);
    if end > at && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

/// The span of a scalar whose start marker is at byte `at`; `cursor` is where its indicators
/// (`:`/`-`, properties, a block scalar header) begin.
pub(super) fn scalar_span(
    text: &str,
    cursor: usize,
    at: usize,
    value: &str,
    style: ScalarStyle,
    flow: bool,
) -> Span {
    match style {
        ScalarStyle::Plain if value.is_empty() => {
            // An empty (null) scalar: the marker points at the next token; it sits at the cursor.
            let at = cursor.min(text.len());
            Span::new(at, at)
        }
        ScalarStyle::Plain => Span::new(at, plain_end(text, at, value, flow)),
        ScalarStyle::DoubleQuoted => Span::new(at, quoted_end(text, at, b'"')),
        ScalarStyle::SingleQuoted => Span::new(at, quoted_end(text, at, b'\'')),
        ScalarStyle::Literal | ScalarStyle::Folded => block_span(text, cursor, at, value),
    }
}

fn plain_terminates(bytes: &[u8], i: usize, flow: bool) -> bool {
    let next_blank = matches!(bytes.get(i + 1), None | Some(b' ' | b'\t' | b'\r' | b'\n'));
    match bytes[i] {
        b'\n' | b'\r' => true,
        b':' if next_blank => true,
        b':' if flow && matches!(bytes.get(i + 1), Some(b',' | b'[' | b']' | b'{' | b'}')) => true,
        b'#' if i > 0 && matches!(bytes[i - 1], b' ' | b'\t') => true,
        b',' | b'[' | b']' | b'{' | b'}' if flow => true,
        _ => false,
    }
}

/// End of the plain-scalar text of one line starting at `from`, trailing blanks trimmed.
fn plain_line_end(bytes: &[u8], from: usize, flow: bool) -> usize {
    let mut i = from;
    while i < bytes.len() && !plain_terminates(bytes, i, flow) {
        i += 1;
    }
    while i > from && matches!(bytes[i - 1], b' ' | b'\t') {
        i -= 1;
    }
    i
}

fn plain_end(text: &str, at: usize, value: &str, flow: bool) -> usize {
    let bytes = text.as_bytes();
    let first_end = plain_line_end(bytes, at, flow);
    if &text[at..first_end] == value {
        return first_end;
    }
    // A multi-line plain scalar: fold following lines until the folded text is the value.
    let mut folded = text[at..first_end].to_string();
    let mut blank_lines = 0;
    let mut line = line_end(text, at) + 1;
    while line < text.len() && folded.len() <= value.len() {
        let content =
            line + text[line..].len() - text[line..].trim_start_matches([' ', '\t']).len();
        let end = plain_line_end(bytes, content, flow);
        if end == content {
            if bytes.get(content) == Some(&b'#')
                || !matches!(bytes.get(content), None | Some(b'\r' | b'\n'))
            {
                break;
            }
            blank_lines += 1;
        } else {
            if blank_lines == 0 {
                folded.push(' ');
            } else {
                folded.extend(std::iter::repeat_n('\n', blank_lines));
            }
            blank_lines = 0;
            folded.push_str(&text[content..end]);
            if folded == value {
                return end;
            }
        }
        line = line_end(text, line) + 1;
    }
    first_end
}

pub(super) fn quoted_end(text: &str, at: usize, quote: u8) -> usize {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if quote == b'"' => i += 2,
            b'\'' if quote == b'\'' && bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b if b == quote => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

/// A literal or folded block scalar: from its `|`/`>` header to its last non-blank content line.
fn block_span(text: &str, cursor: usize, at: usize, value: &str) -> Span {
    let header = find_indicator(text, cursor, b'|')
        .or_else(|| find_indicator(text, cursor, b'>'))
        .unwrap_or(at);
    let bytes = text.as_bytes();
    let mut header_end = header + 1;
    while header_end < bytes.len() && matches!(bytes[header_end], b'+' | b'-' | b'0'..=b'9') {
        header_end += 1;
    }
    if value.trim().is_empty() {
        return Span::new(header, header_end);
    }
    let content_indent = at - (text[..at].rfind('\n').map_or(0, |i| i + 1));
    let mut end = header_end;
    let mut line = line_end(text, header) + 1;
    while line < text.len() {
        let content_end = content_line_end(text, line);
        let body = &text[line..content_end];
        let indent = body.len() - body.trim_start_matches(' ').len();
        if !body.trim().is_empty() {
            if indent < content_indent {
                break;
            }
            end = content_end;
        }
        line = line_end(text, line) + 1;
    }
    Span::new(header, end)
}

/// End of an alias token `*name`: go-yaml's alias names are `[A-Za-z0-9_-]` (the `:` of
/// `*app:` is the value indicator).
pub(super) fn go_alias_end(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b'-')) {
        i += 1;
    }
    i
}

/// The first byte of a node's own text at or after `at`, past its properties (`&anchor`,
/// `!tag`) and the blanks and comments after them: saphyr-parser starts a node's span at its
/// properties, the span tree at the node's text.
pub(super) fn past_properties(text: &str, at: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = at;
    while matches!(bytes.get(i), Some(b'&' | b'!')) {
        while i < bytes.len()
            && !matches!(
                bytes[i],
                b' ' | b'\t' | b'\r' | b'\n' | b',' | b'[' | b']' | b'{' | b'}'
            )
        {
            i += 1;
        }
        loop {
            match bytes.get(i) {
                Some(b' ' | b'\t' | b'\r' | b'\n') => i += 1,
                Some(b'#') => i = line_end(text, i),
                _ => break,
            }
        }
    }
    i
}
