//! YAML text: a scalar written so that it reads back as the same string, a value written in
//! flow or block style, a node's or range's text with its aliases resolved, where lines and
//! documents end.

use crate::parse::{NodeId, NodeKind, ScalarStyle, Value, YamlFile};

use super::changeset::{TextEdit, apply};

/// Byte after the line break that ends the line holding `offset` (or the text end).
pub fn after_line(text: &str, offset: usize) -> usize {
    text[offset..]
        .find('\n')
        .map_or(text.len(), |i| offset + i + 1)
}

/// A plain scalar when YAML (1.1, as Go's YAML in Flux, and 1.2) reads it back as the same
/// string, else a YAML double-quoted scalar.
pub fn scalar_text(value: &str) -> String {
    if plain_safe(value) {
        value.to_string()
    } else {
        double_quoted(value)
    }
}

/// Whether `value` written plain reads back as this string: only word characters and `-_./@`,
/// and nothing YAML resolves to a boolean, null, number or timestamp.
fn plain_safe(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    // Numbers in any YAML 1.1 or 1.2 form (`0x1F`, `0o17`, `1_000`, dates), and `.inf`/`.nan`.
    let numeric_like = value.starts_with(|c: char| c.is_ascii_digit())
        && value
            .chars()
            .all(|c| c.is_ascii_hexdigit() || "_.:+-xXoObB".contains(c));
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_alphanumeric() || "-_./@".contains(c))
        && !value.starts_with(['-', '@'])
        && !matches!(
            lower.as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        )
        && !matches!(lower.as_str(), ".inf" | ".nan")
        && !numeric_like
        && value.parse::<f64>().is_err()
}

/// `value` as a YAML double-quoted scalar: `\\` and `\"`, `\t`, `\n` and `\r`, `\xXX` for
/// the other C0 and C1 controls, and `\uXXXX` for the characters YAML reads as line breaks or
/// does not allow (U+0085, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF). Every other character,
/// non-ASCII included, is printable and written as it is (Rust's `{:?}` escapes are not YAML).
pub fn double_quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{84}' | '\u{86}'..='\u{9f}' => {
                out.push_str(&format!("\\x{:02X}", u32::from(c)));
            }
            '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}' => {
                out.push_str(&format!("\\u{:04X}", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The region of document `doc` trimmed of trailing blank and comment-only lines that belong
/// to what follows; removing it keeps the rest of the file a valid stream.
pub fn document_region(file: &YamlFile, doc: usize) -> (usize, usize) {
    let d = &file.docs()[doc];
    let start = d.region().start;
    let end = if doc + 1 < file.docs().len() {
        file.docs()[doc + 1].region().start
    } else {
        file.text().len()
    };
    (start, end)
}

/// The source text of `[start, end)` with every alias whose anchor is defined outside that
/// range replaced by the text of the node it names: copied into another document, the text
/// means what it meant here even though the anchor does not exist there.
pub fn resolved_text(file: &YamlFile, start: usize, end: usize) -> String {
    let mut edits = Vec::new();
    for node in file.node_ids().map(|id| file.node(id)) {
        let NodeKind::Alias { target: Some(t) } = node.kind else {
            continue;
        };
        if node.span.start < start || node.span.end > end {
            continue;
        }
        let target = file.node(t).span;
        if target.start >= start && target.end <= end {
            continue;
        }
        edits.push(TextEdit {
            start: node.span.start - start,
            end: node.span.end - start,
            text: inline_text(file, t),
        });
    }
    apply(&file.text()[start..end], &edits).unwrap_or_else(|_| file.text()[start..end].to_string())
}

/// A node's meaning as YAML text that fits on one line (in block or flow context): a one-line
/// plain or quoted scalar as written, anything else as JSON (which YAML reads the same).
pub fn inline_text(file: &YamlFile, node: NodeId) -> String {
    let Some(id) = file.resolve(node) else {
        return "null".into();
    };
    let n = file.node(id);
    if let NodeKind::Scalar { style, .. } = &n.kind {
        let written = file.slice(n.span);
        let simple = matches!(
            style,
            ScalarStyle::Plain | ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted
        );
        let flow_safe = !matches!(style, ScalarStyle::Plain)
            || !written.contains([',', '[', ']', '{', '}', '#']);
        if simple && flow_safe && !written.contains('\n') {
            return written.to_string();
        }
    }
    match file.value(id) {
        Ok(v) => value_flow_text(&v),
        Err(_) => "null".into(),
    }
}

/// A [`Value`] as one line of flow YAML (JSON-compatible where quoting is needed).
pub fn value_flow_text(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Str(s, quoted) => {
            let plain_ok = !quoted
                && !s.is_empty()
                && !s.contains([',', '[', ']', '{', '}', '#', '\n', '"', '\''])
                && !s.contains(": ")
                && !s.starts_with([' ', '&', '*', '!', '|', '>', '%', '@', '`', '-', '?', ':']);
            if plain_ok || (!quoted && !s.is_empty() && s.parse::<f64>().is_ok()) {
                s.clone()
            } else {
                serde_json::to_string(s).expect("a string is JSON")
            }
        }
        Value::Seq(items) => format!(
            "[{}]",
            items
                .iter()
                .map(value_flow_text)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", value_flow_text(k), value_flow_text(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// A [`Value`] as block YAML lines at `indent` spaces (no line endings): what a planned file
/// writes when it cannot copy text. Scalars keep their type: plain ones stay plain, quoted ones
/// are double-quoted.
pub fn value_block_lines(value: &Value, indent: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    let is_collection = |v: &Value| match v {
        Value::Map(e) => !e.is_empty(),
        Value::Seq(i) => !i.is_empty(),
        _ => false,
    };
    match value {
        Value::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                let key = value_flow_text(k);
                if is_collection(v) {
                    out.push(format!("{pad}{key}:"));
                    out.extend(value_block_lines(v, indent + 2));
                } else {
                    out.push(format!("{pad}{key}: {}", value_flow_text(v)));
                }
            }
        }
        Value::Seq(items) if !items.is_empty() => {
            for item in items {
                if is_collection(item) {
                    let mut lines = value_block_lines(item, indent + 2);
                    if let Some(first) = lines.first_mut() {
                        *first = format!("{pad}- {}", &first[indent + 2..]);
                    }
                    out.extend(lines);
                } else {
                    out.push(format!("{pad}- {}", value_flow_text(item)));
                }
            }
        }
        other => out.push(format!("{pad}{}", value_flow_text(other))),
    }
    out
}
