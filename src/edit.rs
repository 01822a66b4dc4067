//! Lossless edits: byte-range replacements planned on the span tree, in each file's own line
//! ending and indentation, so that every byte outside an edit stays exactly as it was.

use std::collections::BTreeMap;

use crate::parse::{NodeId, NodeKind, ScalarStyle, Value, YamlFile};

/// Replace `[start, end)` of a file's text (BOM excluded) with `text`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TextEdit {
    pub start: usize,
    pub end: usize,
    pub text: String,
}

/// What happens to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    Edit(Vec<TextEdit>),
    Create(String),
    Delete,
}

/// The changes of one fix, by repository-relative path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changeset {
    pub files: BTreeMap<String, FileOp>,
}

/// A changeset could not be planned or merged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("{path}: edits overlap")]
    Overlap { path: String },
    #[error("{path}: changed in two incompatible ways")]
    CreatedTwice { path: String },
    #[error("{0}")]
    Unsupported(String),
}

impl Changeset {
    pub fn edit(&mut self, path: &str, edit: TextEdit) {
        match self
            .files
            .entry(path.to_string())
            .or_insert_with(|| FileOp::Edit(Vec::new()))
        {
            FileOp::Edit(edits) => edits.push(edit),
            FileOp::Create(_) | FileOp::Delete => {
                unreachable!("only existing files are edited by span")
            }
        }
    }

    pub fn create(&mut self, path: &str, contents: String) {
        self.files
            .insert(path.to_string(), FileOp::Create(contents));
    }

    /// Merge another changeset; conflicting edits are refused, leaving `self` unchanged. Checked
    /// before anything changes, copying only the files both touch: a plan merges every fix into
    /// one changeset, and copying all of it per fix was quadratic in the fixes.
    pub fn merge(&mut self, other: &Changeset) -> Result<(), EditError> {
        let mut edited = Vec::new();
        for (path, op) in &other.files {
            match (self.files.get(path), op) {
                (None, _) => {}
                (Some(FileOp::Edit(mine)), FileOp::Edit(theirs)) => {
                    let mut all = mine.clone();
                    for e in theirs {
                        if !all.contains(e) {
                            all.push(e.clone());
                        }
                    }
                    check_disjoint(path, &mut all)?;
                    edited.push((path, all));
                }
                (Some(mine), theirs) if mine == theirs => {}
                _ => return Err(EditError::CreatedTwice { path: path.clone() }),
            }
        }
        for (path, op) in &other.files {
            if !self.files.contains_key(path) {
                self.files.insert(path.clone(), op.clone());
            }
        }
        for (path, all) in edited {
            self.files.insert(path.clone(), FileOp::Edit(all));
        }
        Ok(())
    }

    pub fn delete(&mut self, path: &str) {
        self.files.insert(path.to_string(), FileOp::Delete);
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn check_disjoint(path: &str, edits: &mut [TextEdit]) -> Result<(), EditError> {
    edits.sort();
    for pair in edits.windows(2) {
        if pair[1].start < pair[0].end {
            return Err(EditError::Overlap {
                path: path.to_string(),
            });
        }
    }
    Ok(())
}

/// Apply edits to a file's text (BOM excluded); edits must not overlap.
pub fn apply(text: &str, edits: &[TextEdit]) -> Result<String, EditError> {
    let mut sorted = edits.to_vec();
    check_disjoint("", &mut sorted)?;
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for e in &sorted {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// Byte after the line break that ends the line holding `offset` (or the text end).
pub fn after_line(text: &str, offset: usize) -> usize {
    text[offset..]
        .find('\n')
        .map_or(text.len(), |i| offset + i + 1)
}

/// Remove one item of a sequence: for a block sequence its whole lines (trailing comment
/// included); for a flow sequence the item and one adjacent comma.
pub fn remove_item(file: &YamlFile, seq: NodeId, item: NodeId) -> Result<TextEdit, EditError> {
    let NodeKind::Sequence { items, flow } = file.node(seq).kind else {
        return Err(EditError::Unsupported("not a sequence".into()));
    };
    let idx = items
        .iter()
        .position(|&i| i == item)
        .ok_or_else(|| EditError::Unsupported("not an item of this sequence".into()))?;
    let text = &file.text;
    let node = file.node(item);
    if flow {
        let (start, end) = if idx + 1 < items.len() {
            (node.span.start, file.node(items[idx + 1]).span.start)
        } else if idx > 0 {
            (file.node(items[idx - 1]).span.end, node.span.end)
        } else {
            (node.span.start, node.span.end)
        };
        return Ok(TextEdit {
            start,
            end,
            text: String::new(),
        });
    }
    let dash = node
        .dash
        .ok_or_else(|| EditError::Unsupported("block item without a dash".into()))?;
    let line_start = file.line_start(dash);
    if !text[line_start..dash].trim().is_empty() {
        return Err(EditError::Unsupported(
            "item shares its line with other content".into(),
        ));
    }
    if items.len() == 1 {
        // The list would be empty: make it an explicit empty flow sequence.
        return clear_sequence(file, seq);
    }
    let start = if idx > 0 {
        let others: Vec<String> = items
            .iter()
            .filter(|&&i| i != item)
            .filter_map(|&i| item_name(file, i))
            .collect();
        comment_about(
            text,
            attached_comments_start(text, line_start, &text[line_start..dash]),
            line_start,
            item_name(file, item).as_deref(),
            &others,
        )
    } else {
        line_start
    };
    Ok(TextEdit {
        start,
        end: after_line(text, node.span.end),
        text: String::new(),
    })
}

/// Empty a sequence that is a mapping value in one edit: `key: []`, every item (and the
/// comments between them) gone.
pub fn clear_sequence(file: &YamlFile, seq: NodeId) -> Result<TextEdit, EditError> {
    let NodeKind::Sequence { items, flow } = file.node(seq).kind else {
        return Err(EditError::Unsupported("not a sequence".into()));
    };
    let span = file.node(seq).span;
    if flow {
        return Ok(TextEdit {
            start: span.start,
            end: span.end,
            text: "[]".into(),
        });
    }
    let last = *items
        .last()
        .ok_or_else(|| EditError::Unsupported("empty sequence".into()))?;
    let text = &file.text;
    let colon = text[..span.start]
        .rfind(':')
        .ok_or_else(|| EditError::Unsupported("sequence is not a mapping value".into()))?;
    Ok(TextEdit {
        start: colon + 1,
        end: line_end_excluding_break(text, file.node(last).span.end),
        text: " []".into(),
    })
}

/// Comment lines right above an item, at its indentation and with no blank line between, are
/// about that item: they go with it. (Comments above the first item head the whole list.)
fn attached_comments_start(text: &str, line_start: usize, indent: &str) -> usize {
    let mut start = line_start;
    while start > 0 {
        let prev_start = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        let line = text[prev_start..start].trim_end_matches(['\r', '\n']);
        let is_attached_comment = line.starts_with(indent) && line[indent.len()..].starts_with('#');
        if !is_attached_comment {
            break;
        }
        start = prev_start;
    }
    start
}

/// The name an item goes by in comments: for a path (`./flux-instance/ks.yaml`,
/// `flux-instance/`) its last segment that says what it is (not `ks`, `kustomization`, `app`),
/// without extension; for a mapping its `name`. Lowercase letters and digits only, so that
/// `FluxInstance` names `flux-instance/`.
fn item_name(file: &YamlFile, item: NodeId) -> Option<String> {
    let text = file
        .scalar(item)
        .or_else(|| file.lookup(item, &["name"]).and_then(|n| file.scalar(n)))?;
    let segment = text
        .split('/')
        .map(|s| {
            s.strip_suffix(".yaml")
                .or_else(|| s.strip_suffix(".yml"))
                .unwrap_or(s)
        })
        .rfind(|s| !matches!(*s, "" | "." | ".." | "ks" | "kustomization" | "app"))?;
    let name = squash(segment);
    (name.len() >= 3).then_some(name)
}

/// Lowercase letters and digits of `s`.
fn squash(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Where the comment that goes with an item starts within the comment block
/// `[block, item_line)` attached to it (same indentation, no blank line between). The block is
/// about the item when it names it (see [`item_name`]): it goes from its first line that does.
/// A block that names another entry of the list and not this one is about that entry, or the
/// list: it stays whole (returns `item_line`). A one-line block that names no entry is a heading
/// of what follows it and goes with it; a longer one is an explanation of something else (a
/// note about an entry that left, a warning about the list) and stays.
fn comment_about(
    text: &str,
    block: usize,
    item_line: usize,
    name: Option<&str>,
    others: &[String],
) -> usize {
    let lines = || {
        let mut at = block;
        std::iter::from_fn(move || {
            (at < item_line).then(|| {
                let start = at;
                at = after_line(text, at).min(item_line);
                (start, squash(&text[start..at]))
            })
        })
    };
    if let Some(name) = name
        && let Some((start, _)) = lines().find(|(_, l)| l.contains(name))
    {
        return start;
    }
    let names_other = lines().any(|(_, l)| others.iter().any(|o| l.contains(o.as_str())));
    if names_other || lines().nth(1).is_some() {
        item_line
    } else {
        block
    }
}

/// End of the line holding `offset`, before its line break.
fn line_end_excluding_break(text: &str, offset: usize) -> usize {
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    if end > offset && text.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

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
    let text = &file.text;
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
    let &(first_key, _) = entries
        .first()
        .ok_or_else(|| EditError::Unsupported("empty mapping".into()))?;
    let &(last_key, last_value) = entries.last().expect("not empty");
    let end = file
        .node(last_value)
        .span
        .end
        .max(file.node(last_key).span.end);
    let text = &file.text;
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
    let d = &file.docs[doc];
    let start = d.region.start;
    let end = if doc + 1 < file.docs.len() {
        file.docs[doc + 1].region.start
    } else {
        file.text.len()
    };
    (start, end)
}

/// Remove the entry whose key is `key` from mapping `map`. In a block mapping: the key's line
/// through the end of its value, with the comment lines right above it at its indentation (they
/// are about it). In a flow mapping (`{a: 1, b: 2}`, or a whole document written as JSON): the
/// entry and one adjacent comma, as [`remove_item`] does in a flow sequence — through the next
/// key when one follows, else from the end of the previous entry, so a trailing comma stays
/// where it was.
pub fn remove_entry(file: &YamlFile, map: NodeId, key: NodeId) -> Result<TextEdit, EditError> {
    let NodeKind::Mapping { entries, flow } = file.node(map).kind else {
        return Err(EditError::Unsupported("not a mapping".into()));
    };
    let idx = entries
        .iter()
        .position(|&(k, _)| k == key)
        .ok_or_else(|| EditError::Unsupported("not a key of this mapping".into()))?;
    if entries.len() == 1 {
        return Err(EditError::Unsupported(
            "the mapping would be left empty".into(),
        ));
    }
    let entry_end = |(k, v): (NodeId, NodeId)| file.node(v).span.end.max(file.node(k).span.end);
    if flow {
        let (start, end) = if idx + 1 < entries.len() {
            (
                file.node(key).span.start,
                file.node(entries[idx + 1].0).span.start,
            )
        } else {
            (entry_end(entries[idx - 1]), entry_end(entries[idx]))
        };
        return Ok(TextEdit {
            start,
            end,
            text: String::new(),
        });
    }
    let text = &file.text;
    let key_start = file.node(key).span.start;
    let line_start = file.line_start(key_start);
    let indent = &text[line_start..key_start];
    if !indent.trim().is_empty() {
        return Err(EditError::Unsupported(
            "key shares its line with other content".into(),
        ));
    }
    Ok(TextEdit {
        start: attached_comments_start(text, line_start, indent),
        end: after_line(text, entry_end(entries[idx])),
        text: String::new(),
    })
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
    apply(&file.text[start..end], &edits).unwrap_or_else(|_| file.text[start..end].to_string())
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

/// A YAML document written as a literal block scalar of another file (a `patch: |`), with the
/// map from its bytes back to the file's: every content line is the file's line less a fixed
/// indentation. An edit of the inner document becomes an edit of the file with [`Self::lift`].
pub struct BlockDocument {
    pub yaml: YamlFile,
    /// The block scalar in the outer file.
    scalar: NodeId,
    /// Where each content line starts in the outer file.
    outer_lines: Vec<usize>,
    indent: usize,
    /// The outer `patch` key's line (1-based).
    pub line: usize,
}

impl BlockDocument {
    /// `None` when the scalar's lines do not map back byte for byte (a fix there is refused by
    /// the site having no `Embedded`; such patches are still checked through their value).
    pub fn of(outer: &YamlFile, scalar: NodeId) -> Option<BlockDocument> {
        let content = outer.scalar(scalar)?;
        let span = outer.node(scalar).span;
        let text = &outer.text;
        // The content starts on the line after the `|` indicator.
        let first = text[span.start..].find('\n').map(|i| span.start + i + 1)?;
        let body = &text[first..span.end.max(first)];
        let indent = body
            .lines()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.len() - l.trim_start_matches(' ').len())?;
        let mut outer_lines = Vec::new();
        let mut at = first;
        for line in content.strip_suffix('\n').unwrap_or(content).split('\n') {
            if at > text.len() {
                return None;
            }
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
            let raw = text[at..end].strip_suffix('\r').unwrap_or(&text[at..end]);
            let same = if line.is_empty() {
                raw.trim().is_empty()
            } else {
                raw.len() >= indent && raw[..indent].trim().is_empty() && &raw[indent..] == line
            };
            if !same {
                return None;
            }
            outer_lines.push(at);
            at = end + 1;
        }
        let (yaml, error) = YamlFile::parse(content);
        if error.is_some() {
            return None;
        }
        Some(BlockDocument {
            yaml,
            scalar,
            outer_lines,
            indent,
            line: outer.line_of(span.start),
        })
    }

    /// The outer byte of an inner byte (on a content line: edits never end past the content).
    fn outer(&self, inner: usize) -> Option<usize> {
        let line = self.yaml.line_of(inner) - 1;
        let column = inner - self.yaml.line_start(inner);
        Some(self.outer_lines.get(line)? + self.indent + column)
    }

    /// An edit of the inner text as an edit of the outer file: the whole block scalar replaced
    /// by its text with the edit made in it (offsets mapped, every new line indented like the
    /// block), so that the YAML gate checks the scalar's new value as a replacement.
    pub fn lift(&self, outer: &YamlFile, edit: TextEdit) -> Result<TextEdit, String> {
        let pad = format!("\n{}", " ".repeat(self.indent));
        let outside = || "the edit falls outside the patch text".to_string();
        let span = outer.node(self.scalar).span;
        let start = self.outer(edit.start).ok_or_else(outside)?;
        let end = self.outer(edit.end).ok_or_else(outside)?;
        if start < span.start || end > span.end {
            return Err(outside());
        }
        let text = &outer.text;
        Ok(TextEdit {
            start: span.start,
            end: span.end,
            text: format!(
                "{}{}{}",
                &text[span.start..start],
                edit.text.replace('\n', &pad),
                &text[end..span.end]
            ),
        })
    }
}

#[cfg(test)]
mod comment_tests {
    use super::*;

    /// `text` after removing the `resources` item whose value is `value`.
    fn without(text: &str, value: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let root = file.docs[0].root;
        let list = file.lookup(root, &["resources"]).expect("resources");
        let item = *file
            .items(list)
            .iter()
            .find(|&&i| file.scalar(i) == Some(value))
            .expect("the item");
        apply(text, &[remove_item(&file, list, item).expect("removable")]).expect("applies")
    }

    const HEAD: &str = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cert-manager/\n  - flux-operator/\n";

    #[test]
    fn a_comment_naming_the_item_goes_with_it_even_when_it_mentions_others() {
        let text = format!(
            "{HEAD}  # The FluxInstance that owns Flux. It is reconciled by flux-operator\n  # (listed above), so it must come with the controllers.\n  - flux-instance/\n  - hcloud-ccm/\n"
        );
        assert_eq!(
            without(&text, "flux-instance/"),
            format!("{HEAD}  - hcloud-ccm/\n")
        );
    }

    #[test]
    fn lines_above_the_first_naming_the_item_stay() {
        let text = format!(
            "{HEAD}  # Keep this list in step with the docker provider.\n  # flux-instance: the FluxInstance.\n  - flux-instance/\n"
        );
        assert_eq!(
            without(&text, "flux-instance/"),
            format!("{HEAD}  # Keep this list in step with the docker provider.\n")
        );
    }

    #[test]
    fn a_comment_about_another_entry_stays() {
        let text = format!(
            "{HEAD}  # Prod-only: a policy on top of cert-manager (listed above).\n  - flux-instance/\n  - hcloud-ccm/\n"
        );
        assert_eq!(
            without(&text, "flux-instance/"),
            format!(
                "{HEAD}  # Prod-only: a policy on top of cert-manager (listed above).\n  - hcloud-ccm/\n"
            )
        );
    }

    #[test]
    fn a_comment_separated_by_a_blank_line_stays() {
        let text = format!(
            "{HEAD}  # Controllers of this provider.\n\n  - flux-instance/\n  - hcloud-ccm/\n"
        );
        assert_eq!(
            without(&text, "flux-instance/"),
            format!("{HEAD}  # Controllers of this provider.\n\n  - hcloud-ccm/\n")
        );
    }

    #[test]
    fn a_heading_that_names_no_entry_goes_with_the_item_below_it() {
        let text = format!("{HEAD}  # Actions runners.\n  - runner-a.yaml\n  - hcloud-ccm/\n");
        assert_eq!(
            without(&text, "runner-a.yaml"),
            format!("{HEAD}  - hcloud-ccm/\n")
        );
    }

    #[test]
    fn a_note_of_several_lines_about_something_else_stays() {
        let note = "  # NB: external-dns moved to ../external-dns/ (the `infrastructure` layer):\n  # in this wait-gated layer its missing Secret would deadlock the chain.\n";
        let text = format!("{HEAD}  - descheduler/\n{note}  - flux-instance/\n  - hcloud-ccm/\n");
        assert_eq!(
            without(&text, "flux-instance/"),
            format!("{HEAD}  - descheduler/\n{note}  - hcloud-ccm/\n")
        );
    }

    #[test]
    fn item_names_skip_what_does_not_say_what_it_is() {
        let (file, _) = YamlFile::parse(
            "- ./flux-instance/ks.yaml\n- ../../bases/cilium/app/\n- a/\n- name: FluxInstance\n",
        );
        let items = file.items(file.docs[0].root).to_vec();
        let names: Vec<_> = items.iter().map(|&i| item_name(&file, i)).collect();
        assert_eq!(
            names,
            [
                Some("fluxinstance".to_string()),
                Some("cilium".to_string()),
                None,
                Some("fluxinstance".to_string())
            ]
        );
    }
}

#[cfg(test)]
mod block_document_tests {
    use super::*;

    /// An edit of the document inside a `patch: |` block lands on the right bytes of the file,
    /// indented like the block, and the file's other bytes stay.
    #[test]
    fn an_inner_edit_is_lifted_into_the_block() {
        let text = "patches:\n  - patch: |\n      - op: add\n        value:\n          n: 1\n    target:\n      kind: X\n";
        let (outer, e) = YamlFile::parse(text);
        assert!(e.is_none());
        let scalar = outer.lookup(outer.docs[0].root, &["patches"]).unwrap();
        let scalar = outer.lookup(outer.items(scalar)[0], &["patch"]).unwrap();
        let block = BlockDocument::of(&outer, scalar).expect("a literal block maps back");
        assert_eq!(block.line, 2);
        let inner = &block.yaml;
        let value = inner
            .lookup(inner.items(inner.docs[0].root)[0], &["value"])
            .unwrap();
        let lifted = block
            .lift(&outer, replace_node(inner, value, "n: 2\n    m: 3"))
            .unwrap();
        let after = apply(text, &[lifted]).unwrap();
        assert_eq!(
            after,
            "patches:\n  - patch: |\n      - op: add\n        value:\n          n: 2\n          m: 3\n    target:\n      kind: X\n"
        );
    }
}

#[cfg(test)]
mod flow_entry_tests {
    use super::*;

    /// `text` after removing the entry `key` of the mapping at `path` (the document root when
    /// empty).
    fn without(text: &str, path: &[&str], key: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let root = file.docs[0].root;
        let map = if path.is_empty() {
            root
        } else {
            file.lookup(root, path).expect("mapping")
        };
        let (k, _) = file.entry(map, key).expect("the key");
        let after = apply(text, &[remove_entry(&file, map, k).expect("removable")]).unwrap();
        let (reparsed, err) = YamlFile::parse(&after);
        assert!(err.is_none(), "{after}: {err:?}");
        assert!(
            reparsed
                .lookup(reparsed.docs[0].root, &[path, &[key]].concat())
                .is_none(),
            "{after}"
        );
        after
    }

    /// A document written as JSON (the d4rkfella/home-ops shape): an entry in the middle, the
    /// last one with its trailing comma, and the last one without.
    #[test]
    fn an_entry_of_a_multi_line_flow_mapping_goes_with_one_comma() {
        let text = "{\n  spec: {\n    healthChecks: [{\n      kind: \"HelmRelease\",\n      name: \"x\",\n    }],\n    path: \"./a\",\n    wait: true,\n  },\n}\n";
        assert_eq!(
            without(text, &["spec"], "healthChecks"),
            "{\n  spec: {\n    path: \"./a\",\n    wait: true,\n  },\n}\n"
        );
        assert_eq!(
            without(text, &["spec"], "wait"),
            "{\n  spec: {\n    healthChecks: [{\n      kind: \"HelmRelease\",\n      name: \"x\",\n    }],\n    path: \"./a\",\n  },\n}\n"
        );
        assert_eq!(
            without("spec: {a: 1, b: [2, 3]}\n", &["spec"], "b"),
            "spec: {a: 1}\n"
        );
        assert_eq!(
            without("spec: {a: 1, b: [2, 3]}\n", &["spec"], "a"),
            "spec: {b: [2, 3]}\n"
        );
    }

    #[test]
    fn the_only_entry_of_a_flow_mapping_stays() {
        let (file, _) = YamlFile::parse("spec: {a: 1}\n");
        let map = file.lookup(file.docs[0].root, &["spec"]).unwrap();
        let (k, _) = file.entry(map, "a").unwrap();
        assert!(remove_entry(&file, map, k).is_err());
    }
}

#[cfg(test)]
mod clear_tests {
    use super::*;

    fn cleared(text: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let list = file.lookup(file.docs[0].root, &["resources"]).unwrap();
        apply(text, &[clear_sequence(&file, list).unwrap()]).unwrap()
    }

    #[test]
    fn every_item_goes_in_one_edit() {
        assert_eq!(
            cleared("resources:\n  - a.yaml\n  # b\n  - b.yaml # last\nnext: 1\n"),
            "resources: []\nnext: 1\n"
        );
        assert_eq!(
            cleared("resources: [a.yaml, b.yaml]\nnext: 1\n"),
            "resources: []\nnext: 1\n"
        );
    }
}

#[cfg(test)]
mod flow_item_tests {
    use super::*;

    /// The only item of a multi-line flow sequence, a flow mapping with a trailing comma: the
    /// list is left `[]` (its closing brace went with it).
    #[test]
    fn the_only_flow_item_goes_whole() {
        let text = "hc: [{\n  a: 1,\n}]\nnext: 1\n";
        let (file, _) = YamlFile::parse(text);
        let list = file.lookup(file.docs[0].root, &["hc"]).unwrap();
        let item = file.items(list)[0];
        let e = remove_item(&file, list, item).unwrap();
        assert_eq!(apply(text, &[e]).unwrap(), "hc: []\nnext: 1\n");
    }
}
