//! Inserting an item or an entry in the list's or mapping's own indentation, and replacing a
//! node's text.

use crate::parse::{NodeId, NodeKind, YamlFile};

use super::changeset::{EditError, TextEdit};

use super::text::after_line;

/// Insert a new item holding `value` (already valid YAML for the position) after item `after`
/// of a block sequence — or at its end when `after` is `None` — in the list's own indentation.
pub fn insert_item(
    file: &YamlFile,
    seq: NodeId,
    after: Option<NodeId>,
    value: &str,
) -> Result<TextEdit, EditError> {
    let NodeKind::Sequence { items, flow } = file.node(seq).kind else {
        return Err(EditError::Unsupported("not a sequence".into()));
    };
    let anchor = after
        .or_else(|| items.last().copied())
        .ok_or_else(|| EditError::Unsupported("empty sequence".into()))?;
    let text = file.text();
    if flow {
        let end = file.node(anchor).span.end;
        return Ok(TextEdit {
            start: end,
            end,
            text: format!(", {value}"),
        });
    }
    let dash = file
        .node(anchor)
        .dash
        .ok_or_else(|| EditError::Unsupported("block item without a dash".into()))?;
    let indent = &text[file.line_start(dash)..dash];
    let at = after_line(text, file.node(anchor).span.end);
    let eol = file.line_ending.as_str();
    let lead = if at == text.len() && !text.ends_with('\n') {
        eol
    } else {
        ""
    };
    Ok(TextEdit {
        start: at,
        end: at,
        text: format!("{lead}{indent}- {value}{eol}"),
    })
}

/// Insert an entry at the end of mapping `map`. `lines` is the entry as YAML at column 0: its
/// first line `key: value` (or `key:`), nested lines indented relative to it. In a block mapping
/// each line is put at the mapping's indentation, after the line that ends its last entry, in
/// the file's line ending; in a flow mapping the entry (one line) follows the last one.
pub fn insert_entry(file: &YamlFile, map: NodeId, lines: &[String]) -> Result<TextEdit, EditError> {
    let NodeKind::Mapping { entries, flow } = file.node(map).kind else {
        return Err(EditError::Unsupported("not a mapping".into()));
    };
    let (first_key, _) = entries
        .first()
        .ok_or_else(|| EditError::Unsupported("empty mapping".into()))?;
    let (last_key, last_value) = entries.last().expect("not empty");
    let end = file
        .node(last_value)
        .span
        .end
        .max(file.node(last_key).span.end);
    let text = file.text();
    if flow {
        if lines.len() != 1 {
            return Err(EditError::Unsupported(
                "a multi-line entry in a flow mapping".into(),
            ));
        }
        return Ok(TextEdit {
            start: end,
            end,
            text: format!(", {}", lines[0]),
        });
    }
    let key_start = file.node(first_key).span.start;
    let indent = &text[file.line_start(key_start)..key_start];
    if !indent.trim().is_empty() {
        return Err(EditError::Unsupported(
            "the mapping's first key shares its line with other content".into(),
        ));
    }
    let at = after_line(text, end);
    let eol = file.line_ending.as_str();
    let lead = if at == text.len() && !text.ends_with('\n') {
        eol
    } else {
        ""
    };
    let body: String = lines.iter().map(|l| format!("{indent}{l}{eol}")).collect();
    Ok(TextEdit {
        start: at,
        end: at,
        text: format!("{lead}{body}"),
    })
}

/// Replace a node's text with `yaml` (already valid YAML for the position, e.g. `false`).
pub fn replace_node(file: &YamlFile, node: NodeId, yaml: &str) -> TextEdit {
    let span = file.node(node).span;
    TextEdit {
        start: span.start,
        end: span.end,
        text: yaml.to_string(),
    }
}
