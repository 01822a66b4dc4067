//! The YAML gate: every edited file must mean exactly what its edits intend — compared as data,
//! not "it still parses" (DESIGN.md §4: an append that lands before a trailing comment can
//! silently change a value).
//!
//! A fix states its intent through the byte ranges of its [`TextEdit`]s; nothing else is needed.
//! The gate derives the intended meaning structurally, document by document, from the span tree
//! of the original file:
//!
//! * **untouched** — a node no edit touches must still be a node of the edited file, at the same
//!   (shifted) text, with the same value (aliases resolved). This is what catches an edit that
//!   leaks into its neighbour: a key appended after a block scalar that becomes part of the
//!   scalar, an item that extends the plain scalar before it, an alias whose anchor changed.
//! * **replaced** — a node one edit covers entirely (`replace_node`, or the `key: []` that
//!   empties a list) must now mean what the edit's text means on its own, at that column.
//! * **collections** an edit cuts into keep, in order, every child (item, entry or document)
//!   that no edit covers — each checked again by these rules — and lose the covered ones
//!   (`remove_item`, `document_region`). Every child that is new must lie inside one edit's
//!   inserted text, and those children must be exactly what that text parses to on its own
//!   (`insert_item`, a new document).
//! * anything else — an edit that cuts a scalar partially, or turns a mapping into a sequence —
//!   fails.
//!
//! Created files must parse completely; deleted files need no check.

use std::fmt::Write as _;

use crate::edit::{self, Changeset, FileOp, TextEdit};
use crate::load::Repo;
use crate::parse::{Entries, NodeId, NodeKind, Span, Value, YamlFile};

/// Check every file a changeset edits or creates; `Err` names the file, the place and the change.
pub fn check_changes(repo: &Repo, changes: &Changeset) -> Result<(), String> {
    for (path, op) in &changes.files {
        match op {
            FileOp::Edit(edits) => {
                let id = repo
                    .file_id(path)
                    .ok_or_else(|| format!("{path}: edited but not loaded"))?;
                let file = repo.file(id);
                if let Some(e) = &file.error {
                    return Err(format!(
                        "{path} does not parse to its end ({}:{}); it must not be edited",
                        e.line, e.column
                    ));
                }
                check_edits(&file.yaml, edits).map_err(|e| format!("{path}: {e}"))?;
            }
            FileOp::Create(text) => {
                let (_, err) = YamlFile::parse(text);
                if let Some(e) = err {
                    return Err(format!(
                        "{path} (new) would not parse ({}:{}: {})",
                        e.line, e.column, e.message
                    ));
                }
            }
            FileOp::Delete => {}
        }
    }
    Ok(())
}

/// Check that applying `edits` to `before` (which parsed completely) changes its data exactly as
/// the edits' byte ranges intend (see the module documentation).
pub fn check_edits(before: &YamlFile, edits: &[TextEdit]) -> Result<(), String> {
    let mut edits = edits.to_vec();
    edits.sort();
    for e in &edits {
        if e.start > e.end
            || e.end > before.text().len()
            || !before.text().is_char_boundary(e.start)
            || !before.text().is_char_boundary(e.end)
        {
            return Err(format!(
                "edit {}..{} is not a valid range of the file",
                e.start, e.end
            ));
        }
    }
    let text = edit::apply(before.text(), &edits).map_err(|e| e.to_string())?;
    let (after, err) = YamlFile::parse(&text);
    if let Some(e) = err {
        return Err(format!(
            "would not parse after the change ({}:{}: {})",
            e.line, e.column, e.message
        ));
    }
    let mut inserted = Vec::with_capacity(edits.len());
    let mut shift = 0isize;
    for e in &edits {
        let start = (e.start as isize + shift) as usize;
        inserted.push(Span::new(start, start + e.text.len()));
        shift += e.text.len() as isize - (e.end - e.start) as isize;
    }
    let gate = Gate {
        b: before,
        a: &after,
        edits: &edits,
        inserted,
        consumed: std::cell::RefCell::new(vec![false; edits.len()]),
    };
    gate.documents()?;
    // Text that means something must have become data somewhere: an insertion that lands in a
    // comment (or inside a quoted scalar) silently disappears.
    for (i, e) in edits.iter().enumerate() {
        let has_content = e.text.lines().any(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        });
        if has_content && !gate.consumed.borrow()[i] {
            return Err(format!(
                "the text inserted at line {} ({:?}) does not become data where it lands (in a comment?)",
                before.line_of(e.start),
                e.text
            ));
        }
    }
    Ok(())
}

struct Gate<'a> {
    b: &'a YamlFile,
    a: &'a YamlFile,
    edits: &'a [TextEdit],
    /// Where each edit's text sits in the edited file.
    inserted: Vec<Span>,
    /// Edits whose text became data (a replaced node, new children).
    consumed: std::cell::RefCell<Vec<bool>>,
}

/// One child of a collection (a sequence item, a mapping entry or a document): from the item's
/// dash (or the entry's key) to the end of its content.
#[derive(Clone, Copy)]
struct Unit {
    extent: Span,
}

impl Gate<'_> {
    fn documents(&self) -> Result<(), String> {
        let unit = |f: &YamlFile, d: usize| Unit {
            extent: f.node(f.docs()[d].root).span,
        };
        let before: Vec<Unit> = (0..self.b.docs().len()).map(|d| unit(self.b, d)).collect();
        let after: Vec<Unit> = (0..self.a.docs().len()).map(|d| unit(self.a, d)).collect();
        let (kept, survivors, new) = self.align(&before, &after, "the file", |i| {
            format!("document {}", i + 1)
        })?;
        for (bi, ai) in kept.into_iter().zip(survivors) {
            self.node(self.b.docs()[bi].root, self.a.docs()[ai].root, "")
                .map_err(|e| format!("document {}: {e}", bi + 1))?;
        }
        for (edit, units) in new {
            self.consumed.borrow_mut()[edit] = true;
            let got: Vec<Value> = units
                .iter()
                .map(|&u| self.value_a(self.a.docs()[u].root))
                .collect::<Result<_, _>>()?;
            let text = &self.edits[edit].text;
            let (frag, err) = YamlFile::parse(&self.pad(edit, text));
            if let Some(e) = err {
                return Err(format!(
                    "the text inserted at line {} does not parse on its own ({})",
                    self.b.line_of(self.edits[edit].start),
                    e.message
                ));
            }
            let mut want: Vec<Value> = frag
                .docs()
                .iter()
                .map(|d| frag.value(d.root).map_err(|e| e.to_string()))
                .collect::<Result<_, _>>()?;
            // A `---` closing the inserted text starts the document that follows it (one that had
            // no marker of its own); on its own it reads as an empty document.
            if want.len() > got.len()
                && want.last() == Some(&Value::Null)
                && frag.docs().last().is_some_and(|d| {
                    d.start_marker().is_some() && frag.text()[d.region().start..].trim() == "---"
                })
            {
                want.pop();
            }
            if got != want {
                return Err(format!(
                    "the documents inserted at line {} mean {} in place, but {} on their own",
                    self.b.line_of(self.edits[edit].start),
                    show_list(&got),
                    show_list(&want)
                ));
            }
        }
        Ok(())
    }

    /// Compare a node of the original file with its counterpart in the edited one.
    fn node(&self, bn: NodeId, an: NodeId, path: &str) -> Result<(), String> {
        let span = self.b.node(bn).span;
        let sub = path;
        let path = if path.is_empty() {
            "the document"
        } else {
            path
        };
        let touching: Vec<usize> = (0..self.edits.len())
            .filter(|&i| self.touches(i, span, bn))
            .collect();
        if touching.is_empty() {
            let want = self.mapped(span);
            let got = self.a.node(an).span;
            let (vb, va) = (self.value_b(bn)?, self.value_a(an)?);
            if vb != va {
                return Err(format!(
                    "{path} changed from {} to {} although no edit touches it",
                    show(&vb),
                    show(&va)
                ));
            }
            if got != want {
                return Err(format!(
                    "{path} (line {}) is no longer the same text after the change",
                    self.b.line_of(span.start)
                ));
            }
            return Ok(());
        }
        if let [i] = touching[..]
            && self.covers(i, span)
        {
            let e = &self.edits[i];
            if e.text.trim().is_empty() && span.start < span.end {
                // Deleting a value's text but not its key or dash leaves a null behind: no edit
                // helper means that.
                return Err(format!(
                    "{path} (line {}): an edit deletes its text but leaves its key or dash, so it would read null",
                    self.b.line_of(span.start)
                ));
            }
            self.consumed.borrow_mut()[i] = true;
            let (frag, err) = YamlFile::parse(&self.pad(i, &e.text));
            let want = match (err, frag.docs()) {
                (None, [doc]) => frag.value(doc.root).map_err(|e| e.to_string())?,
                (None, []) => Value::Null,
                _ => {
                    return Err(format!(
                        "{path}: the replacement text {:?} is not one YAML value",
                        e.text
                    ));
                }
            };
            let got = self.value_a(an)?;
            if got != want {
                return Err(format!(
                    "{path} should become {} but reads {} in place",
                    show(&want),
                    show(&got)
                ));
            }
            return Ok(());
        }
        match (self.b.node(bn).kind, self.a.node(an).kind) {
            (
                NodeKind::Sequence {
                    items: bi,
                    flow: bf,
                },
                NodeKind::Sequence {
                    items: ai,
                    flow: af,
                },
            ) if bf == af => self.sequence(bi, ai, bf, sub),
            (
                NodeKind::Mapping {
                    entries: be,
                    flow: bf,
                },
                NodeKind::Mapping {
                    entries: ae,
                    flow: af,
                },
            ) if bf == af => self.mapping(be, ae, bf, sub),
            (NodeKind::Sequence { .. } | NodeKind::Mapping { .. }, _) => Err(format!(
                "{path} (line {}) changes its kind or style",
                self.b.line_of(span.start)
            )),
            _ => Err(format!(
                "{path} (line {}): an edit cuts into {} without replacing it",
                self.b.line_of(span.start),
                show(&self.value_b(bn)?)
            )),
        }
    }

    fn sequence(&self, bi: &[NodeId], ai: &[NodeId], flow: bool, path: &str) -> Result<(), String> {
        let item = |f: &YamlFile, id: NodeId| Unit {
            extent: Span::new(
                f.node(id).dash.unwrap_or(f.node(id).span.start),
                f.node(id).span.end,
            ),
        };
        let before: Vec<Unit> = bi.iter().map(|&i| item(self.b, i)).collect();
        let after: Vec<Unit> = ai.iter().map(|&i| item(self.a, i)).collect();
        let (kept, survivors, new) =
            self.align(&before, &after, path, |i| format!("{path}[{i}]"))?;
        for (b, a) in kept.into_iter().zip(survivors) {
            self.node(bi[b], ai[a], &format!("{path}[{b}]"))?;
        }
        for (edit, units) in new {
            self.consumed.borrow_mut()[edit] = true;
            let got: Vec<Value> = units
                .iter()
                .map(|&u| self.value_a(ai[u]))
                .collect::<Result<_, _>>()?;
            let want = self.fragment_items(edit, flow, false, path)?;
            let want: Vec<Value> = match want {
                Value::Seq(items) => items,
                other => vec![other],
            };
            if got != want {
                return Err(format!(
                    "{path}: the items inserted at line {} read {} in place, but the inserted text means {}",
                    self.b.line_of(self.edits[edit].start),
                    show_list(&got),
                    show_list(&want)
                ));
            }
        }
        Ok(())
    }

    fn mapping(
        &self,
        be: Entries<'_>,
        ae: Entries<'_>,
        flow: bool,
        path: &str,
    ) -> Result<(), String> {
        let entry = |f: &YamlFile, (k, v): (NodeId, NodeId)| Unit {
            extent: Span::new(
                f.node(k).span.start,
                f.node(k).span.end.max(f.node(v).span.end),
            ),
        };
        let (be, ae): (Vec<_>, Vec<_>) = (be.iter().collect(), ae.iter().collect());
        let before: Vec<Unit> = be.iter().map(|&e| entry(self.b, e)).collect();
        let after: Vec<Unit> = ae.iter().map(|&e| entry(self.a, e)).collect();
        let key_path = |f: &YamlFile, k: NodeId| {
            let key = f.scalar(k).unwrap_or("?");
            if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            }
        };
        let (kept, survivors, new) =
            self.align(&before, &after, path, |i| key_path(self.b, be[i].0))?;
        for (b, a) in kept.into_iter().zip(survivors) {
            let p = key_path(self.b, be[b].0);
            self.node(be[b].0, ae[a].0, &format!("{p} (key)"))?;
            self.node(be[b].1, ae[a].1, &p)?;
        }
        for (edit, units) in new {
            self.consumed.borrow_mut()[edit] = true;
            let got: Vec<Value> = units
                .iter()
                .map(|&u| {
                    Ok(Value::Map(vec![(
                        self.value_a(ae[u].0)?,
                        self.value_a(ae[u].1)?,
                    )]))
                })
                .collect::<Result<_, String>>()?;
            let want: Vec<Value> = match self.fragment_items(edit, flow, true, path)? {
                Value::Map(entries) => entries.into_iter().map(|e| Value::Map(vec![e])).collect(),
                other => vec![other],
            };
            if got != want {
                return Err(format!(
                    "{path}: the entries inserted at line {} read {} in place, but the inserted text means {}",
                    self.b.line_of(self.edits[edit].start),
                    show_list(&got),
                    show_list(&want)
                ));
            }
        }
        Ok(())
    }

    /// Split the children of a collection: which original children survive (not covered by an
    /// edit), which children of the edited collection correspond to them (in order), and which
    /// are new (inside an edit's inserted text), grouped by edit.
    #[allow(clippy::type_complexity)]
    fn align(
        &self,
        before: &[Unit],
        after: &[Unit],
        path: &str,
        name: impl Fn(usize) -> String,
    ) -> Result<(Vec<usize>, Vec<usize>, Vec<(usize, Vec<usize>)>), String> {
        let kept: Vec<usize> = (0..before.len())
            .filter(|&i| !(0..self.edits.len()).any(|e| self.covers(e, before[i].extent)))
            .collect();
        let mut survivors = Vec::new();
        let mut new: Vec<(usize, Vec<usize>)> = Vec::new();
        for (j, u) in after.iter().enumerate() {
            match self.inserted.iter().position(|ins| {
                ins.start <= u.extent.start && u.extent.end <= ins.end && ins.start < ins.end
            }) {
                Some(e) => match new.last_mut() {
                    Some((last, units)) if *last == e => units.push(j),
                    _ => new.push((e, vec![j])),
                },
                None => survivors.push(j),
            }
        }
        if kept.len() != survivors.len() {
            let removed: Vec<String> = (0..before.len())
                .filter(|i| !kept.contains(i))
                .map(&name)
                .collect();
            let place = if path.is_empty() {
                "the top level"
            } else {
                path
            };
            return Err(format!(
                "{place}: {} of {} children should remain{}, but {} do in place (an edit landed in the wrong collection?)",
                kept.len(),
                before.len(),
                if removed.is_empty() {
                    String::new()
                } else {
                    format!(" (removed: {})", removed.join(", "))
                },
                survivors.len()
            ));
        }
        Ok((kept, survivors, new))
    }

    /// What an edit's text means on its own as children of a collection: a sequence of items or
    /// a mapping of entries (flow text is wrapped in brackets).
    fn fragment_items(
        &self,
        edit: usize,
        flow: bool,
        mapping: bool,
        path: &str,
    ) -> Result<Value, String> {
        let text = &self.edits[edit].text;
        let source = if flow {
            let inner = text.trim_matches(|c: char| c.is_whitespace() || c == ',');
            if mapping {
                format!("{{{inner}}}")
            } else {
                format!("[{inner}]")
            }
        } else {
            self.pad(edit, text)
        };
        let (frag, err) = YamlFile::parse(&source);
        match (err, frag.docs()) {
            (None, [doc]) => frag.value(doc.root).map_err(|e| e.to_string()),
            _ => Err(format!(
                "{path}: the text inserted at line {} ({:?}) is not YAML on its own",
                self.b.line_of(self.edits[edit].start),
                text
            )),
        }
    }

    /// The edit's text, preceded by spaces up to the column where it starts (so that its lines
    /// keep their indentation relative to the first).
    fn pad(&self, edit: usize, text: &str) -> String {
        let start = self.edits[edit].start;
        let col = self.b.text()[self.b.line_start(start)..start]
            .chars()
            .count();
        format!("{}{text}", " ".repeat(col))
    }

    /// Whether edit `i` touches the text `span` (of node `id`, whose kind decides how far a block
    /// collection reaches: to the end of its last line, where appends land).
    fn touches(&self, i: usize, span: Span, id: NodeId) -> bool {
        let e = &self.edits[i];
        if span.start == span.end {
            return e.start <= span.start && span.start <= e.end;
        }
        if e.start < e.end {
            return e.start < span.end && e.end > span.start;
        }
        let block = matches!(
            self.b.node(id).kind,
            NodeKind::Sequence { flow: false, .. } | NodeKind::Mapping { flow: false, .. }
        );
        if block {
            // An append lands at the start of the line after the last child; an insertion
            // before the first child lands at the collection's start.
            span.start <= e.start && e.start <= edit::after_line(self.b.text(), span.end)
        } else {
            span.start < e.start && e.start < span.end
        }
    }

    /// Whether edit `i` covers the whole of `span` (an empty span only by an edit at its place).
    fn covers(&self, i: usize, span: Span) -> bool {
        let e = &self.edits[i];
        e.start <= span.start && span.end <= e.end && (e.start < e.end || span.start == span.end)
    }

    /// Where an untouched span of the original sits in the edited file.
    fn mapped(&self, span: Span) -> Span {
        let shift: isize = self
            .edits
            .iter()
            .filter(|e| e.end <= span.start)
            .map(|e| e.text.len() as isize - (e.end - e.start) as isize)
            .sum();
        let start = (span.start as isize + shift) as usize;
        Span::new(start, start + (span.end - span.start))
    }

    fn value_b(&self, id: NodeId) -> Result<Value, String> {
        self.b.value(id).map_err(|e| format!("cannot compare: {e}"))
    }

    fn value_a(&self, id: NodeId) -> Result<Value, String> {
        self.a.value(id).map_err(|e| format!("cannot compare: {e}"))
    }
}

/// A short, one-line rendering of a value for messages.
pub fn show(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    if out.chars().count() > 80 {
        let cut: String = out.chars().take(77).collect();
        format!("`{cut}…`")
    } else {
        format!("`{out}`")
    }
}

fn show_list(vs: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, v) in vs.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&show(v));
    }
    out.push(']');
    out
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Str(s, true) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Str(s, false) => out.push_str(s),
        Value::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, k);
                out.push_str(": ");
                write_value(out, v);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> YamlFile {
        let (f, e) = YamlFile::parse(text);
        assert_eq!(e, None);
        f
    }

    fn at(text: &str, needle: &str) -> usize {
        text.find(needle).expect(needle)
    }

    #[test]
    fn the_edit_helpers_pass() {
        let text =
            "a: 1\nlist:\n  - x\n  # about y\n  - y\n  - z\nspec:\n  wait: true\n  hc: [p, q]\n";
        let f = parse(text);
        let root = f.docs()[0].root;
        let list = f.lookup(root, &["list"]).unwrap();
        let items = f.items(list).to_vec();
        for &item in &items {
            let e = edit::remove_item(&f, list, item).unwrap();
            check_edits(&f, &[e]).unwrap();
        }
        let e = edit::insert_item(&f, list, None, "w").unwrap();
        check_edits(&f, &[e]).unwrap();
        let e = edit::insert_item(&f, list, Some(items[0]), "{k: v}").unwrap();
        check_edits(&f, &[e]).unwrap();
        let wait = f.lookup(root, &["spec", "wait"]).unwrap();
        check_edits(&f, &[edit::replace_node(&f, wait, "false")]).unwrap();
        let hc = f.lookup(root, &["spec", "hc"]).unwrap();
        for &item in f.items(hc) {
            check_edits(&f, &[edit::remove_item(&f, hc, item).unwrap()]).unwrap();
        }
        check_edits(&f, &[edit::insert_item(&f, hc, None, "r").unwrap()]).unwrap();
    }

    #[test]
    fn an_append_that_joins_a_block_scalar_is_caught() {
        // Appending a key after a block scalar, indented like the scalar's content: it parses,
        // but the "key" becomes text of the scalar.
        let text = "data:\n  script: |\n    echo hi\n";
        let f = parse(text);
        let e = TextEdit {
            start: text.len(),
            end: text.len(),
            text: "    extra: 1\n".into(),
        };
        let err = check_edits(&f, &[e]).unwrap_err();
        assert!(err.contains("data.script changed"), "{err}");
    }

    #[test]
    fn an_item_that_extends_the_scalar_before_it_is_caught() {
        let text = "list:\n  - a\n# trailing comment\n";
        let f = parse(text);
        // Meant as a new item, written without its dash: it continues the plain scalar `a`.
        let p = at(text, "# trailing");
        let e = TextEdit {
            start: p,
            end: p,
            text: "    b\n".into(),
        };
        let err = check_edits(&f, &[e]).unwrap_err();
        assert!(err.contains("list[0] changed from `a` to `a b`"), "{err}");
    }

    #[test]
    fn a_bad_byte_range_is_caught() {
        let text = "spec:\n  wait: true\n  prune: true\n";
        let f = parse(text);
        let p = at(text, "true");
        let e = TextEdit {
            start: p + 1,
            end: p + 4,
            text: "false".into(),
        };
        let err = check_edits(&f, &[e]).unwrap_err();
        assert!(err.contains("spec.wait"), "{err}");
    }

    #[test]
    fn removing_a_neighbour_too_is_caught() {
        let text = "resources:\n  - a.yaml\n  - b.yaml\n  - c.yaml\n";
        let f = parse(text);
        // Meant to remove b, but the range runs into c's line.
        // Meant to remove b, but the range runs into c's line: `.yaml` of c is left behind.
        let e = TextEdit {
            start: at(text, "  - b"),
            end: at(text, "  - c") + "  - c".len(),
            text: String::new(),
        };
        assert!(check_edits(&f, &[e]).is_err());
        // Both whole items: that is what the range says, and the gate accepts it (the render
        // gate is what notices objects going missing).
        let e = TextEdit {
            start: at(text, "  - b"),
            end: text.len(),
            text: String::new(),
        };
        check_edits(&f, &[e]).unwrap();
    }

    #[test]
    fn documents_removed_and_inserted() {
        let text = "a: 1\n---\nb: 2\n---\nc: 3\n";
        let f = parse(text);
        let (s, e) = edit::document_region(&f, 1);
        check_edits(
            &f,
            &[TextEdit {
                start: s,
                end: e,
                text: String::new(),
            }],
        )
        .unwrap();
        let (_, end) = edit::document_region(&f, 0);
        check_edits(
            &f,
            &[TextEdit {
                start: end,
                end,
                text: "---\nnew: doc\n".into(),
            }],
        )
        .unwrap();
        // A new document inserted in the middle of another splits it: `x` leaves document 1.
        let text = "a: 1\nx: 2\n---\nb: 2\n";
        let f = parse(text);
        let p = at(text, "x: 2");
        let err = check_edits(
            &f,
            &[TextEdit {
                start: p,
                end: p,
                text: "---\nnew: doc\n".into(),
            }],
        )
        .unwrap_err();
        assert!(
            err.contains("the file: 2 of 2 children should remain"),
            "{err}"
        );
    }
}
