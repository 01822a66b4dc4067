//! Span-accurate YAML: one node tree per document, every node with the exact byte range of its
//! text. Everything downstream (model, rules, edits) speaks these byte ranges, so they must be exact.
//!
//! saphyr-parser gives start markers (in characters); [`ends`] re-reads the source to find
//! where each node really ends (DESIGN.md §4).

mod ends;
mod lenient;

use rustc_hash::FxHashMap as HashMap;
use std::fmt;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle as TScalarStyle};

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

/// Index of a node of a [`YamlFile`]; an arena keeps aliases cheap and bounded. 32 bits: a
/// fleet holds millions of nodes, and every id is stored in its parent.
pub type NodeId = u32;

/// How a scalar was written, which decides how its text may be replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarStyle {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
    Folded,
}

const SCALAR_STYLES: [ScalarStyle; 5] = [
    ScalarStyle::Plain,
    ScalarStyle::SingleQuoted,
    ScalarStyle::DoubleQuoted,
    ScalarStyle::Literal,
    ScalarStyle::Folded,
];

/// What a node is; collections hold child ids in source order. A view into the file's arenas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NodeKind<'a> {
    Scalar {
        /// The scalar's value when it differs from its source text; `None` (most scalars) when
        /// the value is exactly the text of the node's span, quotes excluded.
        /// Read it with [`YamlFile::scalar_text`].
        value: Option<&'a str>,
        style: ScalarStyle,
        /// The resolved tag (`tag:yaml.org,2002:str` for `!!str`), when one was written.
        tag: Option<&'a str>,
    },
    Mapping {
        entries: &'a [(NodeId, NodeId)],
        flow: bool,
    },
    Sequence {
        items: &'a [NodeId],
        flow: bool,
    },
    /// An alias; `target` is the anchored node it names as defined *at this point* of the file
    /// (anchors may be redefined), `None` when the anchor is unknown.
    Alias {
        target: Option<NodeId>,
    },
}

/// One YAML node with the byte range of its own text (properties such as `&anchor` excluded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node<'a> {
    pub kind: NodeKind<'a>,
    pub span: Span,
    /// Byte of the `- ` indicator when this node is an item of a block sequence.
    pub dash: Option<usize>,
}

/// How a node is stored: 12 bytes, because a 100,000-file fleet has five million of them and
/// their size is most of fluxmend's memory. [`YamlFile::node`] unpacks it into a [`Node`].
#[derive(Clone, Copy, Debug)]
struct Packed {
    start: u32,
    end: u32,
    /// The kind in the top two bits, then [`HAS_DASH`]; below them a scalar's style and flags,
    /// a collection's index in its arena, or an alias's target + 1 (0: unknown anchor).
    data: u32,
}

const _: () = assert!(std::mem::size_of::<Packed>() == 12);

const KIND_SHIFT: u32 = 30;
/// The node is an item of a block sequence; its dash is in [`YamlFile::dashes`].
const HAS_DASH: u32 = 1 << 29;
const PAYLOAD: u32 = HAS_DASH - 1;
const SCALAR: u32 = 0;
const MAPPING: u32 = 1;
const SEQUENCE: u32 = 2;
const ALIAS: u32 = 3;
/// Scalar flags beside the style (bits 0..3): a stored value, a tag.
const HAS_VALUE: u32 = 1 << 3;
const HAS_TAG: u32 = 1 << 4;

/// Files this large are refused: offsets are 32 bits and ids and arena indexes 29. The loader
/// skips files over 8 MiB long before this.
const MAX_TEXT: usize = 1 << 28;

/// Every this many lines the line index keeps a line start; a line number is counted from the
/// nearest one (a full table would cost 4 bytes a line for every file of a fleet).
const LINE_BLOCK: usize = 64;

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
    pub docs: Vec<Document>,
    nodes: Box<[Packed]>,
    /// Mapping children: at a mapping's index `(len, flow)`, then its `len` (key, value) pairs.
    entries: Box<[(NodeId, NodeId)]>,
    /// Sequence children: at a sequence's index `len << 1 | flow`, then its `len` items.
    items: Box<[NodeId]>,
    /// The dash byte of each block-sequence item, by node id (ascending).
    dashes: Box<[(NodeId, u32)]>,
    /// Scalar values that differ from their text, and tags, by node id (ascending): both rare.
    values: Box<[(NodeId, Box<str>)]>,
    tags: Box<[(NodeId, Box<str>)]>,
    /// The start of every [`LINE_BLOCK`]-th line.
    line_index: Box<[u32]>,
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
    fn from_line_starts(text: &str, line_starts: &[u32]) -> Self {
        let lf = line_starts.len() - 1;
        let bytes = text.as_bytes();
        let crlf = line_starts[1..]
            .iter()
            .filter(|&&s| s >= 2 && bytes[s as usize - 2] == b'\r')
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
        if raw.len() >= MAX_TEXT {
            let mut file = Self::parse_owned(String::new()).0;
            file.bom = bom;
            let error = ParseError {
                line: 1,
                column: 1,
                message: "files of 256 MiB or more are not supported".into(),
            };
            return (file, Some(error));
        }
        let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        scratch.clear();
        let text = raw.as_str();
        scratch.line_starts.push(0);
        scratch
            .line_starts
            .extend(text.match_indices('\n').map(|(i, _)| i as u32 + 1));
        let mut builder = Builder {
            text,
            ascii: text.is_ascii(),
            scratch,
            docs: Vec::new(),
            doc_start: None,
            root: None,
            cursor: 0,
            region_start: 0,
            padding: lenient::Padding::default(),
        };
        let lone_cr = text
            .match_indices('\r')
            .find(|(i, _)| text.as_bytes().get(i + 1) != Some(&b'\n'))
            .map(|(i, _)| i);
        let mut error = match lone_cr {
            // saphyr-parser counts a lone CR as a line break, the span tree's line table does not:
            // refuse the file rather than misplace every byte after it.
            Some(at) => {
                let line_starts = &builder.scratch.line_starts;
                let line = line_starts.partition_point(|&s| s as usize <= at);
                let start = line_starts[line - 1] as usize;
                Some(ParseError {
                    line,
                    column: text[start..at].chars().count() + 1,
                    message: "a carriage return that is not part of CRLF (old Mac line endings) is not supported".into(),
                })
            }
            None => match stream_events(text, &mut builder) {
                // go-yaml ignores indentation inside flow collections and quoted scalars, and ends
                // an alias name before a `:`: parse again with those lines indented and that
                // `:` set apart, when that is the only trouble.
                Err(e) if lenient::is_repairable(&e.message) => match lenient::repair(text) {
                    Some(padding) => {
                        let shadow = padding.apply(text);
                        builder.restart(padding);
                        stream_events(&shadow, &mut builder).err()
                    }
                    None => Some(e),
                },
                parsed => parsed.err(),
            },
        };
        let mut docs = builder.docs;
        let mut scratch = builder.scratch;
        // Exact-size copies: these live as long as the repository, the scratch is reused.
        let mut file = YamlFile {
            line_ending: LineEnding::from_line_starts(text, &scratch.line_starts),
            text: String::new(),
            bom,
            docs: Vec::new(),
            nodes: scratch.nodes.as_slice().into(),
            entries: scratch.entries.as_slice().into(),
            items: scratch.items.as_slice().into(),
            dashes: scratch.dashes.as_slice().into(),
            values: std::mem::take(&mut scratch.values).into_boxed_slice(),
            tags: std::mem::take(&mut scratch.tags).into_boxed_slice(),
            line_index: scratch
                .line_starts
                .iter()
                .step_by(LINE_BLOCK)
                .copied()
                .collect(),
        };
        scratch.release();
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        file.text = raw;
        if error.is_none()
            && let Some((key, first)) = file.first_duplicate_key()
        {
            // Go's YAML (what Flux and kustomize use) rejects the file; so does fluxmend, keeping
            // the documents before the one with the duplicate.
            let at = file.node(key).span.start;
            let (line, column) = file.line_col(at);
            let first_line = file.line_of(file.node(first).span.start);
            let name = file.scalar_text(key);
            error = Some(ParseError {
                line,
                column,
                message: format!(
                    "mapping key `{name}` already defined at line {first_line} (duplicate keys are an error for Flux and kustomize)"
                ),
            });
            docs.retain(|d| d.region.end <= at);
        }
        if error.is_none()
            && let Some(key) = file.first_collection_key()
        {
            // Flux and kustomize turn YAML into JSON, whose keys are strings: a mapping or
            // sequence as a key (what an unquoted `{{ name }}` placeholder parses to) fails there.
            let at = file.node(key).span.start;
            let (line, column) = file.line_col(at);
            error = Some(ParseError {
                line,
                column,
                message: "a mapping or sequence used as a mapping key (Flux and kustomize accept only scalar keys)".into(),
            });
            docs.retain(|d| d.region.end <= at);
        }
        if let (None, Some(last)) = (&error, docs.last_mut()) {
            last.region.end = file.text.len();
        }
        docs.shrink_to_fit();
        file.docs = docs;
        (file, error)
    }

    /// The node `id`, unpacked.
    pub fn node(&self, id: NodeId) -> Node<'_> {
        let packed = self.nodes[id as usize];
        let payload = packed.data & PAYLOAD;
        let kind = match packed.data >> KIND_SHIFT {
            SCALAR => NodeKind::Scalar {
                value: (payload & HAS_VALUE != 0).then(|| side(&self.values, id)),
                style: SCALAR_STYLES[(payload & 0b111) as usize],
                tag: (payload & HAS_TAG != 0).then(|| side(&self.tags, id)),
            },
            MAPPING => {
                let (len, flow) = self.entries[payload as usize];
                let first = payload as usize + 1;
                NodeKind::Mapping {
                    entries: &self.entries[first..first + len as usize],
                    flow: flow != 0,
                }
            }
            SEQUENCE => {
                let header = self.items[payload as usize];
                let first = payload as usize + 1;
                NodeKind::Sequence {
                    items: &self.items[first..first + (header >> 1) as usize],
                    flow: header & 1 != 0,
                }
            }
            _ => NodeKind::Alias {
                target: payload.checked_sub(1),
            },
        };
        Node {
            kind,
            span: Span::new(packed.start as usize, packed.end as usize),
            dash: (packed.data & HAS_DASH != 0).then(|| dash_of(&self.dashes, id)),
        }
    }

    /// Every node id of the file, in source order of their starts (parents before children).
    pub fn node_ids(&self) -> std::ops::Range<NodeId> {
        0..self.nodes.len() as NodeId
    }

    /// The source text of a span.
    pub fn slice(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    /// 1-based line of a byte offset: counted from the nearest indexed line start.
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        let block = self.line_index.partition_point(|&s| s as usize <= offset) - 1;
        let from = self.line_index[block] as usize;
        let newlines = self.text.as_bytes()[from..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        block * LINE_BLOCK + newlines + 1
    }

    /// 1-based (line, column in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let start = self.line_start(offset);
        (
            self.line_of(offset),
            self.text[start..offset.min(self.text.len())]
                .chars()
                .count()
                + 1,
        )
    }

    /// Byte offset of the start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    }

    /// Follow aliases to the node they name (a bounded walk: anchors can only name earlier nodes).
    pub fn resolve(&self, mut id: NodeId) -> Option<NodeId> {
        loop {
            match self.node(id).kind {
                NodeKind::Alias { target: Some(t) } => id = t,
                NodeKind::Alias { target: None } => return None,
                _ => return Some(id),
            }
        }
    }

    /// Entries of a mapping node, aliases followed (empty for anything else).
    pub fn entries(&self, id: NodeId) -> &[(NodeId, NodeId)] {
        match self.resolve(id).map(|id| self.node(id).kind) {
            Some(NodeKind::Mapping { entries, .. }) => entries,
            _ => &[],
        }
    }

    /// The entry of mapping `map` whose key is the scalar `key` (an alias key followed, as
    /// go-yaml does): (key id, value id).
    pub fn entry(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        self.entries(map)
            .iter()
            .copied()
            .find(|&(k, _)| self.scalar(k) == Some(key))
    }

    /// The node at a path of mapping keys below `from`.
    pub fn lookup(&self, from: NodeId, keys: &[&str]) -> Option<NodeId> {
        keys.iter()
            .try_fold(from, |id, key| self.entry(id, key).map(|(_, v)| v))
    }

    /// Items of a sequence node, aliases followed (empty for anything else).
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match self.resolve(id).map(|id| self.node(id).kind) {
            Some(NodeKind::Sequence { items, .. }) => items,
            _ => &[],
        }
    }

    /// A node's scalar text, aliases followed.
    pub fn scalar(&self, id: NodeId) -> Option<&str> {
        self.scalar_in(self.resolve(id)?)
    }

    /// A scalar node's value as written there (aliases not followed; `""` for other nodes).
    pub fn scalar_text(&self, id: NodeId) -> &str {
        self.scalar_in(id).unwrap_or_default()
    }

    /// A scalar node's value, read from the source text when it is not stored.
    fn scalar_in(&self, id: NodeId) -> Option<&str> {
        let node = self.node(id);
        let NodeKind::Scalar { value, style, .. } = node.kind else {
            return None;
        };
        let span = node.span;
        Some(match (value, style) {
            (Some(v), _) => v,
            (None, ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted) => {
                &self.text[span.start + 1..span.end - 1]
            }
            (None, _) => &self.text[span.start..span.end],
        })
    }

    /// Convert a node to data, expanding aliases within [`VALUE_NODE_BUDGET`].
    pub fn value(&self, id: NodeId) -> Result<Value, AliasBudgetExceeded> {
        self.value_with_budget(id, VALUE_NODE_BUDGET)
    }

    /// [`YamlFile::value`] allowing `budget` nodes: for a document that is large by nature (a
    /// ResourceSet with thousands of inputs), which the alias-bomb budget would refuse.
    pub fn value_with_budget(
        &self,
        id: NodeId,
        budget: usize,
    ) -> Result<Value, AliasBudgetExceeded> {
        let mut budget = budget;
        self.value_within(id, &mut budget)
    }

    /// One level of the conversion. Kept small, with plain loops, because it recurses once per
    /// nesting level (up to [`MAX_NESTING`]) and must fit small thread stacks even unoptimised.
    fn value_within(&self, id: NodeId, budget: &mut usize) -> Result<Value, AliasBudgetExceeded> {
        *budget = budget.checked_sub(1).ok_or(AliasBudgetExceeded)?;
        Ok(match self.node(id).kind {
            NodeKind::Scalar { .. } => self.scalar_value(id),
            NodeKind::Alias { target: Some(t) } => self.value_within(t, budget)?,
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
        let mut out = MapBuilder::with_capacity(entries.len());
        for &(k, v) in entries {
            let key = self.value_within(k, budget)?;
            let value = self.value_within(v, budget)?;
            // `<<: *base` merge keys: the merged entries come first, explicit ones win.
            if key == Value::Str("<<".into(), false) {
                out.merge(value);
            } else {
                out.replace(key, value);
            }
        }
        Ok(Value::Map(out.finish()))
    }

    /// A scalar's data: null, or its text and whether it is a string by quoting or `!!str`.
    #[inline(never)]
    fn scalar_value(&self, id: NodeId) -> Value {
        let NodeKind::Scalar { style, tag, .. } = self.node(id).kind else {
            return Value::Null;
        };
        let value = self.scalar_text(id);
        let is_str = tag == Some("tag:yaml.org,2002:str");
        match style {
            ScalarStyle::Plain if !is_str && is_null(value) => Value::Null,
            ScalarStyle::Plain => Value::Str(value.to_string(), is_str),
            _ => Value::Str(value.to_string(), true),
        }
    }

    /// The first (by position) scalar key that repeats an earlier key of its mapping: (duplicate,
    /// first). Merge keys (`<<`) may repeat.
    /// The first mapping key (in file order) that is a mapping or a sequence.
    fn first_collection_key(&self) -> Option<NodeId> {
        let mut best: Option<NodeId> = None;
        let mut at = 0;
        while let Some(&(len, _)) = self.entries.get(at) {
            let entries = &self.entries[at + 1..at + 1 + len as usize];
            at += 1 + len as usize;
            for &(k, _) in entries {
                let kind = self.nodes[k as usize].data >> KIND_SHIFT;
                let start = |n: NodeId| self.nodes[n as usize].start;
                if (kind == MAPPING || kind == SEQUENCE) && best.is_none_or(|b| start(k) < start(b))
                {
                    best = Some(k);
                }
            }
        }
        best
    }

    fn first_duplicate_key(&self) -> Option<(NodeId, NodeId)> {
        let mut best: Option<(NodeId, NodeId)> = None;
        let mut seen: HashMap<&str, NodeId> = HashMap::default();
        let mut keys: Vec<(&str, NodeId)> = Vec::new();
        // Every mapping's entries, straight from the arena: a header, then its pairs.
        let mut at = 0;
        while let Some(&(len, _)) = self.entries.get(at) {
            let entries = &self.entries[at + 1..at + 1 + len as usize];
            at += 1 + len as usize;
            if entries.len() < 2 {
                continue;
            }
            keys.clear();
            keys.extend(
                entries
                    .iter()
                    .filter_map(|&(k, _)| self.scalar_in(k).filter(|v| *v != "<<").map(|v| (v, k))),
            );
            // Most mappings are small: comparing pairs is cheaper than hashing.
            let duplicate = if keys.len() <= 16 {
                (1..keys.len()).find_map(|i| {
                    let (value, k) = keys[i];
                    keys[..i]
                        .iter()
                        .find(|(v, _)| *v == value)
                        .map(|&(_, first)| (k, first))
                })
            } else {
                seen.clear();
                keys.iter()
                    .find_map(|&(value, k)| seen.insert(value, k).map(|first| (k, first)))
            };
            if let Some((k, first)) = duplicate {
                let start = |n: NodeId| self.nodes[n as usize].start;
                if best.is_none_or(|(b, _)| start(k) < start(b)) {
                    best = Some((k, first));
                }
            }
        }
        best
    }
}

/// The stored side value of node `id` (present: its flag said so).
fn side(table: &[(NodeId, Box<str>)], id: NodeId) -> &str {
    table
        .binary_search_by_key(&id, |(n, _)| *n)
        .map_or("", |i| &table[i].1)
}

/// The dash byte of block-sequence item `id` (present: its flag said so).
fn dash_of(dashes: &[(NodeId, u32)], id: NodeId) -> usize {
    dashes
        .binary_search_by_key(&id, |(n, _)| *n)
        .map_or(0, |i| dashes[i].1 as usize)
}

/// Collections nested deeper than this are refused: Kubernetes objects are never this deep, and
/// a bound keeps every recursive walk over nodes and values (conversion, comparison, drop) far
/// from the end of the stack.
pub const MAX_NESTING: usize = 512;

/// Feed the parser's events for `text` (the file's text, or its shadow under the builder's
/// padding) to `builder` one at a time. saphyr-parser's own `Parser::load` recurses
/// once per nesting level (and bounds only flow nesting), so a deeply nested block document would
/// overflow the stack; this loop is iterative and stops at [`MAX_NESTING`]. Like `load`, it scopes
/// anchors to their document: an alias naming an anchor of an earlier document is an error.
fn stream_events(text: &str, builder: &mut Builder) -> Result<(), ParseError> {
    let padding = builder.padding.clone();
    let error = |mark: &Marker, message: &str| ParseError {
        line: mark.line(),
        column: padding.original_col(mark.line(), mark.col()) + 1,
        message: message.to_string(),
    };
    let mut parser = Parser::new_from_str(text);
    let mut depth = 0usize;
    let mut doc_anchors: std::collections::HashSet<usize> = std::collections::HashSet::default();
    loop {
        let Some(next) = parser.next_event() else {
            return Ok(());
        };
        let (ev, span) = next.map_err(|e| error(e.marker(), e.info()))?;
        let mark = span.start;
        match &ev {
            Event::StreamEnd => {
                builder.on_event(ev, mark);
                return Ok(());
            }
            Event::DocumentStart(_) => doc_anchors.clear(),
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

/// The entries of a mapping being converted, in order, each key once: linear in the number of
/// entries (a mapping of 200,000 keys was quadratic), a hash index built only once a mapping is
/// larger than a few entries.
struct MapBuilder {
    entries: Vec<Option<(Value, Value)>>,
    index: Option<HashMap<Value, usize>>,
}

/// Below this many entries a linear search is cheaper than hashing.
const MAP_INDEX_FROM: usize = 16;

impl MapBuilder {
    fn with_capacity(n: usize) -> MapBuilder {
        MapBuilder {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    fn position(&mut self, key: &Value) -> Option<usize> {
        if self.index.is_none() && self.entries.len() > MAP_INDEX_FROM {
            let mut index = HashMap::default();
            for (i, e) in self.entries.iter().enumerate() {
                if let Some((k, _)) = e {
                    index.insert(k.clone(), i);
                }
            }
            self.index = Some(index);
        }
        match &self.index {
            Some(index) => index.get(key).copied(),
            None => self
                .entries
                .iter()
                .position(|e| e.as_ref().is_some_and(|(k, _)| k == key)),
        }
    }

    fn push(&mut self, key: Value, value: Value) {
        if let Some(index) = &mut self.index {
            index.insert(key.clone(), self.entries.len());
        }
        self.entries.push(Some((key, value)));
    }

    /// An explicit entry: it replaces an earlier one of the same key, and comes last.
    fn replace(&mut self, key: Value, value: Value) {
        if let Some(i) = self.position(&key) {
            self.entries[i] = None;
        }
        self.push(key, value);
    }

    /// A merge key's value: the entries of its mapping (or mappings) whose keys are not there.
    fn merge(&mut self, merged: Value) {
        match merged {
            Value::Map(entries) => {
                for (k, v) in entries {
                    if self.position(&k).is_none() {
                        self.push(k, v);
                    }
                }
            }
            Value::Seq(maps) => maps.into_iter().for_each(|m| self.merge(m)),
            _ => {}
        }
    }

    fn finish(self) -> Vec<(Value, Value)> {
        self.entries.into_iter().flatten().collect()
    }
}

pub(crate) fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}

/// A parse's working storage, kept per thread between files so that building a tree costs no
/// growth garbage; the file keeps exact-size copies.
#[derive(Default)]
struct Scratch {
    nodes: Vec<Packed>,
    entries: Vec<(NodeId, NodeId)>,
    items: Vec<NodeId>,
    dashes: Vec<(NodeId, u32)>,
    values: Vec<(NodeId, Box<str>)>,
    tags: Vec<(NodeId, Box<str>)>,
    line_starts: Vec<u32>,
    stack: Vec<Frame>,
    /// Children of the open collections, innermost last; a collection's are moved to its arena
    /// when it closes.
    children: Vec<NodeId>,
    /// Anchor id (from the parser; redefinitions get new ids) to the node it names.
    anchors: HashMap<usize, NodeId>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Above this many nodes a scratch is not kept for the next file (one huge file must not pin
/// its working memory to a thread for the rest of the run).
const SCRATCH_KEEP: usize = 1 << 16;

impl Scratch {
    fn clear(&mut self) {
        self.nodes.clear();
        self.entries.clear();
        self.items.clear();
        self.dashes.clear();
        self.values.clear();
        self.tags.clear();
        self.line_starts.clear();
        self.stack.clear();
        self.children.clear();
        self.anchors.clear();
    }

    /// Forget the storage of an unusually large file.
    fn release(&mut self) {
        if self.nodes.capacity() > SCRATCH_KEEP
            || self.line_starts.capacity() > SCRATCH_KEEP
            || self.entries.capacity() > SCRATCH_KEEP
        {
            *self = Scratch::default();
        }
    }
}

/// An open collection while events stream in.
struct Frame {
    id: NodeId,
    mapping: bool,
    flow: bool,
    /// Where its children start in [`Scratch::children`].
    children: usize,
    anchor: usize,
}

struct Builder<'a> {
    text: &'a str,
    /// The whole text is ASCII, so a marker's column is a byte offset in its line.
    ascii: bool,
    scratch: Scratch,
    docs: Vec<Document>,
    doc_start: Option<usize>,
    root: Option<NodeId>,
    /// Position after the last structure consumed; the next node's indicators are searched from here.
    cursor: usize,
    region_start: usize,
    /// Spaces the parsed text has at line starts that the file does not.
    padding: lenient::Padding,
}

impl Builder<'_> {
    /// Forget what a failed parse built, to read the text again as shadowed by `padding`.
    fn restart(&mut self, padding: lenient::Padding) {
        let line_starts = std::mem::take(&mut self.scratch.line_starts);
        self.scratch.clear();
        self.scratch.line_starts = line_starts;
        self.docs.clear();
        self.doc_start = None;
        self.root = None;
        self.cursor = 0;
        self.region_start = 0;
        self.padding = padding;
    }

    fn offset(&self, mark: &Marker) -> usize {
        let line_starts = &self.scratch.line_starts;
        let line_index = mark.line().saturating_sub(1);
        let Some(&start) = line_starts.get(line_index) else {
            return self.text.len();
        };
        let start = start as usize;
        let col = self.padding.original_col(mark.line(), mark.col());
        if self.ascii {
            // Columns are bytes: no need to look at the line.
            let end = line_starts
                .get(line_index + 1)
                .map_or(self.text.len(), |&next| next as usize - 1);
            return start + col.min(end - start);
        }
        let line = &self.text[start..];
        let line_bytes = line.find('\n').unwrap_or(line.len());
        if line.as_bytes()[..line_bytes].is_ascii() {
            return start + col.min(line_bytes);
        }
        start + line.char_indices().nth(col).map_or(line.len(), |(i, _)| i)
    }

    fn in_flow(&self) -> bool {
        self.scratch.stack.iter().any(|f| f.flow)
    }

    fn span(&self, id: NodeId) -> Span {
        let n = &self.scratch.nodes[id as usize];
        Span::new(n.start as usize, n.end as usize)
    }

    /// Where the next node starts its indicators: past the `:` of a mapping value, or the `-` of a
    /// block sequence item (recorded as the node's dash).
    fn prepare_slot(&mut self) -> Option<usize> {
        let frame = self.scratch.stack.last()?;
        let pending_key = (self.scratch.children.len() - frame.children) % 2 == 1;
        if frame.mapping && pending_key {
            if let Some(colon) = ends::find_indicator(self.text, self.cursor, b':') {
                self.cursor = colon + 1;
            }
            None
        } else if !frame.mapping && !frame.flow {
            let dash = ends::find_indicator(self.text, self.cursor, b'-');
            if let Some(d) = dash {
                self.cursor = d + 1;
            }
            dash
        } else {
            None
        }
    }

    fn attach(&mut self, id: NodeId) {
        if self.scratch.stack.is_empty() {
            self.root = Some(id);
        } else {
            self.scratch.children.push(id);
        }
        self.cursor = self.cursor.max(self.span(id).end);
    }

    fn add(
        &mut self,
        kind: u32,
        payload: u32,
        span: Span,
        dash: Option<usize>,
        anchor: usize,
    ) -> NodeId {
        let scratch = &mut self.scratch;
        let id = scratch.nodes.len() as NodeId;
        let mut data = kind << KIND_SHIFT | payload;
        if let Some(dash) = dash {
            data |= HAS_DASH;
            scratch.dashes.push((id, dash as u32));
        }
        scratch.nodes.push(Packed {
            start: span.start as u32,
            end: span.end as u32,
            data,
        });
        if anchor != 0 {
            scratch.anchors.insert(anchor, id);
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
        let at = ends::past_properties(self.text, self.offset(mark));
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
        let stored = written != Some(value.as_str());
        let mut payload = style as u32;
        if stored {
            payload |= HAS_VALUE;
        }
        if tag.is_some() {
            payload |= HAS_TAG;
        }
        let id = self.add(SCALAR, payload, span, dash, anchor);
        if stored {
            self.scratch.values.push((id, value.into_boxed_str()));
        }
        if let Some(tag) = tag {
            self.scratch.tags.push((id, tag.into_boxed_str()));
        }
        self.attach(id);
    }

    fn open(&mut self, mapping: bool, anchor: usize, mark: &Marker) {
        let dash = self.prepare_slot();
        let at = ends::past_properties(self.text, self.offset(mark));
        let flow = matches!(self.text.as_bytes().get(at), Some(b'[' | b'{'));
        let start = if flow {
            at
        } else {
            self.cursor.max(dash.unwrap_or(0))
        };
        // The arena index is set when the collection closes and its children are known.
        let kind = if mapping { MAPPING } else { SEQUENCE };
        let id = self.add(kind, 0, Span::new(start, start), dash, 0);
        if flow {
            self.cursor = at + 1;
        }
        let children = self.scratch.children.len();
        self.scratch.stack.push(Frame {
            id,
            mapping,
            flow,
            children,
            anchor,
        });
    }

    fn close(&mut self, mark: &Marker) {
        let Some(frame) = self.scratch.stack.pop() else {
            return;
        };
        let at = self.offset(mark);
        let scratch = &mut self.scratch;
        let children = &scratch.children[frame.children..];
        let (first, last) = (children.first().copied(), children.last().copied());
        let index = if frame.mapping {
            let index = scratch.entries.len();
            let pairs = children.chunks_exact(2).map(|p| (p[0], p[1]));
            scratch.entries.push((0, frame.flow as u32));
            scratch.entries.extend(pairs);
            scratch.entries[index].0 = (scratch.entries.len() - index - 1) as u32;
            index
        } else {
            let index = scratch.items.len();
            scratch
                .items
                .push((children.len() as u32) << 1 | frame.flow as u32);
            scratch.items.extend_from_slice(children);
            index
        };
        scratch.children.truncate(frame.children);
        let own = self.span(frame.id);
        let span = if frame.flow {
            // After a trailing comma (`{a: 1,\n}`) the end marker sits on the comma; the
            // closing bracket is the next token.
            let close = if frame.mapping { b'}' } else { b']' };
            let at = match self.text.as_bytes().get(at) {
                Some(&b',') => ends::find_indicator(self.text, at + 1, close).unwrap_or(at),
                _ => at,
            };
            Span::new(own.start, (at + 1).min(self.text.len()))
        } else {
            // A block collection runs from its first child (or its dash) to the end of its last
            // child; an empty value's span sits before it, so take the larger end.
            let start = first.map_or(own.start, |c| {
                let n = self.scratch.nodes[c as usize];
                if n.data & HAS_DASH != 0 {
                    dash_of(&self.scratch.dashes, c)
                } else {
                    n.start as usize
                }
            });
            let end = match (first, last) {
                (Some(f), Some(l)) => self.span(l).end.max(self.span(f).end),
                _ => own.start,
            };
            Span::new(start, end)
        };
        let node = &mut self.scratch.nodes[frame.id as usize];
        node.start = span.start as u32;
        node.end = span.end as u32;
        node.data |= index as u32;
        if frame.anchor != 0 {
            self.scratch.anchors.insert(frame.anchor, frame.id);
        }
        self.attach(frame.id);
    }
}

impl Builder<'_> {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::DocumentStart(_) => {
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
                        region: Span::new(self.region_start, at.max(self.span(root).end)),
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
                self.scalar(value.into_owned(), style, anchor, tag, &mark);
            }
            Event::Alias(anchor) => {
                let dash = self.prepare_slot();
                let at = self.offset(&mark);
                let end = ends::go_alias_end(self.text, at);
                let target = self.scratch.anchors.get(&anchor).map_or(0, |&t| t + 1);
                let id = self.add(ALIAS, target, Span::new(at, end), dash, 0);
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
