//! Span-accurate YAML: one node tree per document, every node with the exact byte range of its
//! text. Everything downstream (model, rules, edits) speaks these byte ranges, so they must be exact.
//!
//! yaml-rust2 gives only start markers (and in characters); [`ends`] re-reads the source to find
//! where each node really ends (DESIGN.md §4).

mod ends;

use std::collections::HashMap;
use std::fmt;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// A half-open byte range `[start, end)` into [`YamlFile::text`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Span { start, end }
    }
}

/// Index of a node in [`YamlFile::nodes`]; an arena keeps aliases cheap and bounded.
pub type NodeId = usize;

/// How a scalar was written, which decides how its text may be replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

/// What a node is; collections hold child ids in source order.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeKind {
    Scalar {
        /// The scalar's value when it differs from its source text; `None` (most scalars, no
        /// allocation) when the value is exactly the text of the node's span, quotes excluded.
        /// Read it with [`YamlFile::scalar_text`].
        value: Option<Box<str>>,
        style: ScalarStyle,
        /// The resolved tag (`tag:yaml.org,2002:str` for `!!str`), when one was written.
        tag: Option<Box<str>>,
    },
    Mapping {
        entries: Vec<(NodeId, NodeId)>,
        flow: bool,
    },
    Sequence {
        items: Vec<NodeId>,
        flow: bool,
    },
    /// An alias; `target` is the anchored node it names as defined *at this point* of the file
    /// (anchors may be redefined), `None` when the anchor is unknown.
    Alias {
        target: Option<NodeId>,
    },
}

/// One YAML node with the byte range of its own text (properties such as `&anchor` excluded).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
    /// Byte of the `- ` indicator when this node is an item of a block sequence.
    pub dash: Option<usize>,
}

/// One document of a (possibly multi-document) file.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub root: NodeId,
    /// The document's region: from the start of its `---` line (or the end of the previous
    /// region, or the file start) to the start of the next document's region. Regions tile the file.
    pub region: Span,
    /// Byte of the explicit `---` marker, if the document has one.
    pub start_marker: Option<usize>,
}

/// A parsed YAML file: its text (BOM removed), line-ending style, nodes and documents.
#[derive(Clone, Debug)]
pub struct YamlFile {
    pub text: String,
    /// The file started with a UTF-8 BOM, which is put back on write.
    pub bom: bool,
    /// The file's dominant line ending, used for everything written into it.
    pub line_ending: LineEnding,
    pub nodes: Vec<Node>,
    pub docs: Vec<Document>,
    line_starts: Vec<usize>,
}

/// A file's own line ending.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEnding {
    Lf,
    CrLf,
}

impl LineEnding {
    pub fn as_str(self) -> &'static str {
        match self {
            LineEnding::Lf => "\n",
            LineEnding::CrLf => "\r\n",
        }
    }

    /// The ending most lines of `text` use (LF when there are none), from its line starts.
    fn from_line_starts(text: &str, line_starts: &[usize]) -> Self {
        let lf = line_starts.len() - 1;
        let bytes = text.as_bytes();
        let crlf = line_starts[1..]
            .iter()
            .filter(|&&s| s >= 2 && bytes[s - 2] == b'\r')
            .count();
        if crlf * 2 > lf {
            LineEnding::CrLf
        } else {
            LineEnding::Lf
        }
    }
}

/// Why a file could not be (fully) parsed; line and column are 1-based.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// A plain data view of a node, aliases resolved under a budget, for the model and for comparing
/// meanings before and after an edit.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Value {
    Null,
    /// A scalar's text and whether it was quoted or tagged `!!str` (so `"true"` != `true`).
    Str(String, bool),
    Seq(Vec<Value>),
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// The string value of a scalar, whatever its quoting.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s, _) => Some(s),
            _ => None,
        }
    }

    /// The value under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Follow a path of mapping keys.
    pub fn path(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter().try_fold(self, |v, k| v.get(k))
    }

    pub fn str_at(&self, keys: &[&str]) -> Option<&str> {
        self.path(keys).and_then(Value::as_str)
    }

    pub fn seq(&self) -> &[Value] {
        match self {
            Value::Seq(items) => items,
            _ => &[],
        }
    }

    /// YAML booleans as Kubernetes reads them.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Str(s, false) if s == "true" || s == "True" || s == "TRUE" => Some(true),
            Value::Str(s, false) if s == "false" || s == "False" || s == "FALSE" => Some(false),
            _ => None,
        }
    }
}

/// How many nodes one alias-resolving conversion may produce: an alias bomb stops here.
pub const VALUE_NODE_BUDGET: usize = 100_000;

/// The conversion of a node to a [`Value`] hit the alias budget.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("aliases expand to more than {VALUE_NODE_BUDGET} nodes (alias bomb?)")]
pub struct AliasBudgetExceeded;

impl YamlFile {
    /// Parse `raw` (a BOM is accepted and remembered). On a syntax error the documents completed
    /// before it are kept, and the error is returned beside them.
    pub fn parse(raw: &str) -> (YamlFile, Option<ParseError>) {
        Self::parse_owned(raw.to_string())
    }

    /// [`YamlFile::parse`] taking the text by value, so that it is kept without a copy.
    pub fn parse_owned(mut raw: String) -> (YamlFile, Option<ParseError>) {
        let bom = raw.starts_with('\u{feff}');
        if bom {
            raw.drain(..'\u{feff}'.len_utf8());
        }
        let text = raw.as_str();
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let mut builder = Builder {
            text,
            line_starts: &line_starts,
            nodes: Vec::new(),
            docs: Vec::new(),
            stack: Vec::new(),
            anchors: HashMap::new(),
            doc_start: None,
            root: None,
            cursor: 0,
            region_start: 0,
        };
        let lone_cr = text
            .match_indices('\r')
            .find(|(i, _)| text.as_bytes().get(i + 1) != Some(&b'\n'))
            .map(|(i, _)| i);
        let mut error = match lone_cr {
            // yaml-rust2 counts a lone CR as a line break, the span tree's line table does not:
            // refuse the file rather than misplace every byte after it.
            Some(at) => {
                let line = line_starts.partition_point(|&s| s <= at);
                let column = text[line_starts[line - 1]..at].chars().count() + 1;
                Some(ParseError {
                    line,
                    column,
                    message: "a carriage return that is not part of CRLF (old Mac line endings) is not supported".into(),
                })
            }
            None => stream_events(text, &mut builder).err(),
        };
        let nodes = builder.nodes;
        let mut docs = builder.docs;
        if error.is_none()
            && let Some((key, first)) = first_duplicate_key(text, &nodes)
        {
            // Go's YAML (what Flux and kustomize use) rejects the file; so does fluxmend, keeping
            // the documents before the one with the duplicate.
            let at = nodes[key].span.start;
            let line = line_starts.partition_point(|&s| s <= at);
            let first_line = line_starts.partition_point(|&s| s <= nodes[first].span.start);
            let column = text[line_starts[line - 1]..at].chars().count() + 1;
            let name = scalar_in(text, &nodes[key]).unwrap_or_default().to_string();
            error = Some(ParseError {
                line,
                column,
                message: format!(
                    "mapping key `{name}` already defined at line {first_line} (duplicate keys are an error for Flux and kustomize)"
                ),
            });
            docs.retain(|d| d.region.end <= at);
        }
        if let (None, Some(last)) = (&error, docs.last_mut()) {
            last.region.end = text.len();
        }
        let file = YamlFile {
            line_ending: LineEnding::from_line_starts(text, &line_starts),
            text: raw,
            bom,
            nodes,
            docs,
            line_starts,
        };
        (file, error)
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The source text of a span.
    pub fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset)
    }

    /// 1-based (line, column in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let line = self.line_of(offset);
        let start = self.line_starts[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }

    /// Byte offset of the start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        self.line_starts[self.line_of(offset) - 1]
    }

    /// Follow aliases to the node they name (a bounded walk: anchors can only name earlier nodes).
    pub fn resolve(&self, mut id: NodeId) -> Option<NodeId> {
        loop {
            match self.nodes[id].kind {
                NodeKind::Alias { target: Some(t) } => id = t,
                NodeKind::Alias { target: None } => return None,
                _ => return Some(id),
            }
        }
    }

    /// The entry of mapping `map` whose key is the scalar `key`: (key id, value id).
    pub fn entry(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        let map = self.resolve(map)?;
        match &self.nodes[map].kind {
            NodeKind::Mapping { entries, .. } => entries
                .iter()
                .copied()
                .find(|&(k, _)| scalar_in(&self.text, &self.nodes[k]) == Some(key)),
            _ => None,
        }
    }

    /// The node at a path of mapping keys below `from`.
    pub fn lookup(&self, from: NodeId, keys: &[&str]) -> Option<NodeId> {
        keys.iter()
            .try_fold(from, |id, key| self.entry(id, key).map(|(_, v)| v))
    }

    /// Items of a sequence node (empty for anything else).
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match self.resolve(id).map(|id| &self.nodes[id].kind) {
            Some(NodeKind::Sequence { items, .. }) => items,
            _ => &[],
        }
    }

    /// A node's scalar text, aliases followed.
    pub fn scalar(&self, id: NodeId) -> Option<&str> {
        scalar_in(&self.text, &self.nodes[self.resolve(id)?])
    }

    /// A scalar node's value as written there (aliases not followed; `""` for other nodes).
    pub fn scalar_text(&self, id: NodeId) -> &str {
        scalar_in(&self.text, &self.nodes[id]).unwrap_or_default()
    }

    /// Convert a node to data, expanding aliases within [`VALUE_NODE_BUDGET`].
    pub fn value(&self, id: NodeId) -> Result<Value, AliasBudgetExceeded> {
        let mut budget = VALUE_NODE_BUDGET;
        self.value_within(id, &mut budget)
    }

    /// One level of the conversion. Kept small, with plain loops, because it recurses once per
    /// nesting level (up to [`MAX_NESTING`]) and must fit small thread stacks even unoptimised.
    fn value_within(&self, id: NodeId, budget: &mut usize) -> Result<Value, AliasBudgetExceeded> {
        *budget = budget.checked_sub(1).ok_or(AliasBudgetExceeded)?;
        Ok(match &self.nodes[id].kind {
            NodeKind::Scalar { .. } => self.scalar_value(id),
            NodeKind::Alias { target: Some(t) } => self.value_within(*t, budget)?,
            NodeKind::Alias { target: None } => Value::Null,
            NodeKind::Sequence { items, .. } => self.seq_value(items, budget)?,
            NodeKind::Mapping { entries, .. } => self.map_value(entries, budget)?,
        })
    }

    #[inline(never)]
    fn seq_value(
        &self,
        items: &[NodeId],
        budget: &mut usize,
    ) -> Result<Value, AliasBudgetExceeded> {
        let mut out = Vec::with_capacity(items.len());
        for &item in items {
            out.push(self.value_within(item, budget)?);
        }
        Ok(Value::Seq(out))
    }

    #[inline(never)]
    fn map_value(
        &self,
        entries: &[(NodeId, NodeId)],
        budget: &mut usize,
    ) -> Result<Value, AliasBudgetExceeded> {
        let mut out = Vec::with_capacity(entries.len());
        for &(k, v) in entries {
            let key = self.value_within(k, budget)?;
            let value = self.value_within(v, budget)?;
            // `<<: *base` merge keys: the merged entries come first, explicit ones win.
            if key == Value::Str("<<".into(), false) {
                merge_into(&mut out, value);
            } else {
                out.retain(|(existing, _)| existing != &key);
                out.push((key, value));
            }
        }
        Ok(Value::Map(out))
    }

    /// A scalar's data: null, or its text and whether it is a string by quoting or `!!str`.
    #[inline(never)]
    fn scalar_value(&self, id: NodeId) -> Value {
        let NodeKind::Scalar { style, tag, .. } = &self.nodes[id].kind else {
            return Value::Null;
        };
        let value = self.scalar_text(id);
        let is_str = tag.as_deref() == Some("tag:yaml.org,2002:str");
        match style {
            ScalarStyle::Plain if !is_str && is_null(value) => Value::Null,
            ScalarStyle::Plain => Value::Str(value.to_string(), is_str),
            _ => Value::Str(value.to_string(), true),
        }
    }
}

/// The first (by position) scalar key that repeats an earlier key of its mapping: (duplicate,
/// first). Merge keys (`<<`) may repeat.
/// A scalar node's value, read from the source `text` when it is not stored.
fn scalar_in<'a>(text: &'a str, node: &'a Node) -> Option<&'a str> {
    let NodeKind::Scalar { value, style, .. } = &node.kind else {
        return None;
    };
    let span = node.span;
    Some(match (value, style) {
        (Some(v), _) => v,
        (None, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) => {
            &text[span.start + 1..span.end - 1]
        }
        (None, _) => &text[span.start..span.end],
    })
}

fn first_duplicate_key(text: &str, nodes: &[Node]) -> Option<(NodeId, NodeId)> {
    let mut best: Option<(NodeId, NodeId)> = None;
    for node in nodes {
        let NodeKind::Mapping { entries, .. } = &node.kind else {
            continue;
        };
        if entries.len() < 2 {
            continue;
        }
        let mut seen: HashMap<&str, NodeId> = HashMap::new();
        for &(k, _) in entries {
            let Some(value) = scalar_in(text, &nodes[k]) else {
                continue;
            };
            if value == "<<" {
                continue;
            }
            if let Some(&first) = seen.get(value) {
                if best.is_none_or(|(b, _)| nodes[k].span.start < nodes[b].span.start) {
                    best = Some((k, first));
                }
                break;
            }
            seen.insert(value, k);
        }
    }
    best
}

/// Collections nested deeper than this are refused: Kubernetes objects are never this deep, and
/// a bound keeps every recursive walk over nodes and values (conversion, comparison, drop) far
/// from the end of the stack.
pub const MAX_NESTING: usize = 512;

/// Feed the parser's events to `builder` one at a time. yaml-rust2's own `Parser::load` recurses
/// once per nesting level (and bounds only flow nesting), so a deeply nested block document would
/// overflow the stack; this loop is iterative and stops at [`MAX_NESTING`]. Like `load`, it scopes
/// anchors to their document: an alias naming an anchor of an earlier document is an error.
fn stream_events(text: &str, builder: &mut Builder) -> Result<(), ParseError> {
    let error = |mark: &Marker, message: &str| ParseError {
        line: mark.line(),
        column: mark.col() + 1,
        message: message.to_string(),
    };
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    let mut doc_anchors: std::collections::HashSet<usize> = std::collections::HashSet::new();
    loop {
        let (ev, mark) = parser
            .next_token()
            .map_err(|e| error(e.marker(), e.info()))?;
        match &ev {
            Event::StreamEnd => {
                builder.on_event(ev, mark);
                return Ok(());
            }
            Event::DocumentStart => doc_anchors.clear(),
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(error(
                        &mark,
                        &format!("collections nested deeper than {MAX_NESTING} levels"),
                    ));
                }
                doc_anchors.insert(*anchor);
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::Scalar(_, _, anchor, _) => {
                doc_anchors.insert(*anchor);
            }
            Event::Alias(anchor) if !doc_anchors.contains(anchor) => {
                return Err(error(&mark, "while parsing node, found unknown anchor"));
            }
            _ => {}
        }
        builder.on_event(ev, mark);
    }
}

fn merge_into(out: &mut Vec<(Value, Value)>, merged: Value) {
    match merged {
        Value::Map(entries) => {
            for (k, v) in entries {
                if !out.iter().any(|(existing, _)| existing == &k) {
                    out.push((k, v));
                }
            }
        }
        Value::Seq(maps) => maps.into_iter().for_each(|m| merge_into(out, m)),
        _ => {}
    }
}

fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// An open collection while events stream in.
struct Frame {
    id: NodeId,
    /// A key seen, its value not yet (mappings only).
    pending_key: Option<NodeId>,
    anchor: usize,
}

struct Builder<'a> {
    text: &'a str,
    line_starts: &'a [usize],
    nodes: Vec<Node>,
    docs: Vec<Document>,
    stack: Vec<Frame>,
    /// Anchor id (from the parser; redefinitions get new ids) to the node it names.
    anchors: HashMap<usize, NodeId>,
    doc_start: Option<usize>,
    root: Option<NodeId>,
    /// Position after the last structure consumed; the next node's indicators are searched from here.
    cursor: usize,
    region_start: usize,
}

impl Builder<'_> {
    fn offset(&self, mark: &Marker) -> usize {
        let Some(&start) = self.line_starts.get(mark.line().saturating_sub(1)) else {
            return self.text.len();
        };
        let line = &self.text[start..];
        let col = mark.col();
        let line_bytes = line.find('\n').unwrap_or(line.len());
        if line.as_bytes()[..line_bytes].is_ascii() {
            return start + col.min(line_bytes);
        }
        start + line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
    }

    fn in_flow(&self) -> bool {
        self.stack.iter().any(|f| match &self.nodes[f.id].kind {
            NodeKind::Mapping { flow, .. } | NodeKind::Sequence { flow, .. } => *flow,
            _ => false,
        })
    }

    /// Where the next node starts its indicators: past the `:` of a mapping value, or the `-` of a
    /// block sequence item (recorded as the node's dash).
    fn prepare_slot(&mut self) -> Option<usize> {
        let frame = self.stack.last()?;
        match &self.nodes[frame.id].kind {
            NodeKind::Mapping { .. } if frame.pending_key.is_some() => {
                if let Some(colon) = ends::find_indicator(self.text, self.cursor, b':') {
                    self.cursor = colon + 1;
                }
                None
            }
            NodeKind::Sequence { flow: false, .. } => {
                let dash = ends::find_indicator(self.text, self.cursor, b'-');
                if let Some(d) = dash {
                    self.cursor = d + 1;
                }
                dash
            }
            _ => None,
        }
    }

    fn attach(&mut self, id: NodeId) {
        match self.stack.last_mut() {
            None => self.root = Some(id),
            Some(frame) => match &mut self.nodes[frame.id].kind {
                NodeKind::Mapping { entries, .. } => match frame.pending_key.take() {
                    Some(k) => entries.push((k, id)),
                    None => frame.pending_key = Some(id),
                },
                NodeKind::Sequence { items, .. } => items.push(id),
                _ => unreachable!("only collections are pushed"),
            },
        }
        self.cursor = self.cursor.max(self.nodes[id].span.end);
    }

    fn add(&mut self, kind: NodeKind, span: Span, dash: Option<usize>, anchor: usize) -> NodeId {
        let id = self.nodes.len();
        self.nodes.push(Node { kind, span, dash });
        if anchor != 0 {
            self.anchors.insert(anchor, id);
        }
        id
    }

    fn scalar(
        &mut self,
        value: String,
        style: TScalarStyle,
        anchor: usize,
        tag: Option<String>,
        mark: &Marker,
    ) {
        let dash = self.prepare_slot();
        let at = self.offset(mark);
        let style = match style {
            TScalarStyle::SingleQuoted => ScalarStyle::SingleQuoted,
            TScalarStyle::DoubleQuoted => ScalarStyle::DoubleQuoted,
            TScalarStyle::Literal => ScalarStyle::Literal,
            TScalarStyle::Folded => ScalarStyle::Folded,
            _ => ScalarStyle::Plain,
        };
        let flow = self.in_flow();
        let span = ends::scalar_span(self.text, self.cursor, at, &value, style, flow);
        // Store the value only when the source text does not already spell it.
        let written = match style {
            ScalarStyle::Plain => self.text.get(span.start..span.end),
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted if span.end >= span.start + 2 => {
                self.text.get(span.start + 1..span.end - 1)
            }
            _ => None,
        };
        let value = (written != Some(value.as_str())).then(|| value.into_boxed_str());
        let tag = tag.map(String::into_boxed_str);
        let id = self.add(NodeKind::Scalar { value, style, tag }, span, dash, anchor);
        self.attach(id);
    }

    fn open(&mut self, mapping: bool, anchor: usize, mark: &Marker) {
        let dash = self.prepare_slot();
        let at = self.offset(mark);
        let flow = matches!(self.text.as_bytes().get(at), Some(b'[' | b'{'));
        let kind = if mapping {
            NodeKind::Mapping {
                entries: Vec::new(),
                flow,
            }
        } else {
            NodeKind::Sequence {
                items: Vec::new(),
                flow,
            }
        };
        let start = if flow {
            at
        } else {
            self.cursor.max(dash.unwrap_or(0))
        };
        let id = self.add(kind, Span::new(start, start), dash, 0);
        if flow {
            self.cursor = at + 1;
        }
        self.stack.push(Frame {
            id,
            pending_key: None,
            anchor,
        });
    }

    fn close(&mut self, mark: &Marker) {
        let Some(frame) = self.stack.pop() else {
            return;
        };
        let at = self.offset(mark);
        // Children are final now: trim the vectors' spare capacity (there are millions of them).
        let (flow, first, last) = match &mut self.nodes[frame.id].kind {
            NodeKind::Mapping { entries, flow } => {
                entries.shrink_to_fit();
                (
                    *flow,
                    entries.first().map(|e| e.0),
                    entries.last().map(|e| e.1),
                )
            }
            NodeKind::Sequence { items, flow } => {
                items.shrink_to_fit();
                (*flow, items.first().copied(), items.last().copied())
            }
            _ => unreachable!("only collections are pushed"),
        };
        let node = &self.nodes[frame.id];
        let span = if flow {
            Span::new(node.span.start, (at + 1).min(self.text.len()))
        } else {
            // A block collection runs from its first child (or its dash) to the end of its last
            // child; an empty value's span sits before it, so take the larger end.
            let start = first.map_or(node.span.start, |c| {
                let n = &self.nodes[c];
                n.dash.unwrap_or(n.span.start)
            });
            let end = match (first, last) {
                (Some(f), Some(l)) => self.nodes[l].span.end.max(self.nodes[f].span.end),
                _ => node.span.start,
            };
            Span::new(start, end)
        };
        self.nodes[frame.id].span = span;
        if frame.anchor != 0 {
            self.anchors.insert(frame.anchor, frame.id);
        }
        self.attach(frame.id);
    }
}

impl MarkedEventReceiver for Builder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::DocumentStart => {
                let at = self.offset(&mark);
                let explicit = self.text[at..].starts_with("---");
                self.doc_start = explicit.then_some(at);
                if explicit {
                    // The region of the previous document ends where this `---` line starts.
                    if let Some(prev) = self.docs.last_mut() {
                        prev.region.end = at;
                    }
                    self.region_start = at;
                    self.cursor = at + 3;
                } else {
                    self.cursor = self.region_start;
                }
            }
            Event::DocumentEnd => {
                let at = self.offset(&mark);
                if let Some(root) = self.root.take() {
                    self.docs.push(Document {
                        root,
                        region: Span::new(self.region_start, at.max(self.nodes[root].span.end)),
                        start_marker: self.doc_start.take(),
                    });
                }
                // An explicit `...` ends the region after its line.
                if self.text[at..].starts_with("...") {
                    let line_end = self.text[at..]
                        .find('\n')
                        .map_or(self.text.len(), |i| at + i + 1);
                    if let Some(doc) = self.docs.last_mut() {
                        doc.region.end = line_end;
                    }
                    self.region_start = line_end;
                } else {
                    self.region_start = self.docs.last().map_or(0, |d| d.region.end);
                }
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                self.scalar(value, style, anchor, tag, &mark);
            }
            Event::Alias(anchor) => {
                let dash = self.prepare_slot();
                let at = self.offset(&mark);
                let end = ends::alias_end(self.text, at);
                let target = self.anchors.get(&anchor).copied();
                let id = self.add(NodeKind::Alias { target }, Span::new(at, end), dash, 0);
                self.attach(id);
            }
            Event::SequenceStart(anchor, _) => self.open(false, anchor, &mark),
            Event::MappingStart(anchor, _) => self.open(true, anchor, &mark),
            Event::SequenceEnd | Event::MappingEnd => self.close(&mark),
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
        }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

#[cfg(test)]
mod tests;
