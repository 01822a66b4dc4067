//! Parsing: saphyr-parser's events streamed into the node arena, each node's span made exact.

use rustc_hash::FxHashMap as HashMap;
use saphyr_parser::{Event, Marker, Parser, ScalarStyle as TScalarStyle};

use super::file::{Document, HEADER, LineEnding, ParseError, YamlFile};
use super::node::{
    ALIAS, COLLECTION_LEN_SHIFT, Children, DENSE, Entries, FLOW, HAS_DASH, HAS_TAG, HAS_VALUE,
    KIND_SHIFT, LEN_SHIFT, LINE_BLOCK, LONG, MAPPING, MAX_TEXT, NodeId, PAIRED, PAYLOAD, SCALAR,
    SEQUENCE, STORED_END, ScalarStyle, Span, first_and_last, unstored_dash,
};
use super::{ends, lenient};

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
        // An exact-size copy: it lives as long as the repository, the scratch is reused.
        let words = scratch.pack();
        let line_ending = LineEnding::from_line_starts(text, &scratch.line_starts);
        // Exactly as many as there are (most files have none); the scratch keeps its room.
        let strings = scratch.strings.drain(..).collect();
        scratch.release();
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
        let mut file = YamlFile::stored(raw, words, strings, bom, line_ending);
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
            docs.retain(|d| d.region().end <= at);
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
            docs.retain(|d| d.region().end <= at);
        }
        if let (None, Some(last)) = (&error, docs.last_mut()) {
            last.end_region_at(file.text().len());
        }
        file.set_docs(docs);
        (file, error)
    }
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
    // Anchor ids of this document; 0 is saphyr's "no anchor", never an alias's target.
    let mut doc_anchors: rustc_hash::FxHashSet<usize> = rustc_hash::FxHashSet::default();
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
                if *anchor != 0 {
                    doc_anchors.insert(*anchor);
                }
            }
            Event::SequenceEnd | Event::MappingEnd => depth = depth.saturating_sub(1),
            Event::Scalar(_, _, anchor, _) if *anchor != 0 => {
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

/// A parse's working storage, kept per thread between files so that building a tree costs no
/// growth garbage; the file keeps exact-size copies.
#[derive(Default)]
struct Scratch {
    nodes: Vec<Open>,
    entries: Vec<NodeId>,
    items: Vec<NodeId>,
    dashes: Vec<[u32; 2]>,
    /// Stored values and tags, as [`YamlFile`] keeps them.
    strings: Vec<(NodeId, Box<str>)>,
    /// The offsets arena (see [`super::file::Arena`]) as [`Scratch::pack`] gathers it.
    offsets: Vec<[u32; 2]>,
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
        self.strings.clear();
        self.offsets.clear();
        self.line_starts.clear();
        self.stack.clear();
        self.children.clear();
        self.anchors.clear();
    }

    /// The file's [`YamlFile::words`]: the node records, each node's end moved to where
    /// [`Packed`](super::node::Packed) says (a collection's into its arena header, an alias's into the offsets),
    /// then the arenas.
    fn pack(&mut self) -> Vec<u32> {
        // A collection the parse stopped inside (its document is dropped) reads as empty.
        for frame in self.stack.drain(..) {
            let node = &mut self.nodes[frame.id as usize];
            let arena = if frame.mapping {
                &mut self.entries
            } else {
                &mut self.items
            };
            node.data |= arena.len() as u32;
            arena.extend([if frame.flow { FLOW } else { 0 }, 0]);
        }
        let mut dashes = self.dashes.iter().copied();
        let line_index = self.line_starts.iter().step_by(LINE_BLOCK).copied();
        // Exact unless a node's end is an offset too (aliases, very long scalars: rare).
        let size = HEADER
            + 2 * self.nodes.len()
            + self.entries.len()
            + self.items.len()
            + 2 * self.dashes.len()
            + line_index.len();
        let mut words = Vec::with_capacity(size);
        words.extend([0; HEADER]);
        // Each collection's block again, in node order, its end kept only where its children do
        // not give it (see `STORED_END`).
        let (mut entries, mut items) = (
            Vec::with_capacity(self.entries.len()),
            Vec::with_capacity(self.items.len()),
        );
        for (id, node) in (0..).zip(&self.nodes) {
            if node.data & HAS_DASH != 0 {
                // Kept only where the item does not start two bytes after it (`- x`).
                let dash = dashes
                    .next()
                    .filter(|d| unstored_dash(node.start) != Some(d[1]));
                self.offsets.extend(dash);
            }
            let index = (node.data & PAYLOAD) as usize;
            let mut data = node.data;
            match node.data >> KIND_SHIFT {
                SCALAR => match node.end.checked_sub(node.start) {
                    Some(len) if len < LONG => data |= len << LEN_SHIFT,
                    _ => {
                        data |= LONG << LEN_SHIFT;
                        self.offsets.push([id, node.end]);
                    }
                },
                MAPPING => {
                    let at = repack(
                        &self.entries,
                        (id, index),
                        true,
                        node,
                        &self.nodes,
                        &mut entries,
                    );
                    data = data & !PAYLOAD | at;
                }
                SEQUENCE => {
                    let at = repack(
                        &self.items,
                        (id, index),
                        false,
                        node,
                        &self.nodes,
                        &mut items,
                    );
                    data = data & !PAYLOAD | at;
                }
                _ => self.offsets.push([id, node.end]),
            }
            words.extend([node.start, data]);
        }
        let arena_start = |words: &mut Vec<u32>, slot: usize| words[slot] = words.len() as u32;
        arena_start(&mut words, 0);
        words.extend_from_slice(&entries);
        arena_start(&mut words, 1);
        words.extend_from_slice(&items);
        arena_start(&mut words, 2);
        words.extend(self.offsets.iter().flatten());
        arena_start(&mut words, 3);
        words.extend(line_index);
        words.shrink_to_fit();
        words
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

/// Copy the block of the collection `id` at `index` of `arena` as the builder left it (its
/// header, a word for its end, its children) to the end of `out`, its end kept unless its
/// children give it as [`STORED_END`] says, a mapping's keys unless [`DENSE`]; `node` is the
/// collection, `nodes` every node. Its index in `out`.
fn repack(
    arena: &[u32],
    (id, index): (NodeId, usize),
    mapping: bool,
    node: &Open,
    nodes: &[Open],
    out: &mut Vec<u32>,
) -> u32 {
    let mut header = arena[index];
    let len = (header >> COLLECTION_LEN_SHIFT) as usize;
    let paired = header & PAIRED != 0;
    let ids = &arena[index + 2..index + 2 + if paired { 2 * len } else { len }];
    let at = out.len() as u32;
    let leaf = |c: NodeId| matches!(nodes[c as usize].data >> KIND_SHIFT, SCALAR | ALIAS);
    let children = if mapping {
        Children::Entries(Entries {
            ids,
            paired,
            dense: None,
        })
    } else {
        Children::Items(ids)
    };
    let given = first_and_last(children)
        .filter(|&(first, last)| first == last || leaf(first))
        .map(|(first, last)| nodes[first as usize].end.max(nodes[last as usize].end));
    let dense = mapping
        && !paired
        && !ids.is_empty()
        && Entries::dense(id, len as u32)
            .iter()
            .map(|(key, _)| key)
            .eq(ids.iter().copied());
    if dense {
        header |= DENSE;
    }
    if given == Some(node.end) {
        out.push(header);
    } else {
        out.extend([header | STORED_END, node.end]);
    }
    if !dense {
        out.extend_from_slice(ids);
    }
    at
}

/// The dash byte of block-sequence item `id` (present: its flag said so) while the file is
/// built: the first offset of `id` in the builder's dashes, which holds every dash.
pub(super) fn dash_of(offsets: &[[u32; 2]], id: NodeId) -> usize {
    let i = offsets.partition_point(|[n, _]| *n < id);
    offsets.get(i).map_or(0, |&[_, d]| d as usize)
}

/// A node while the file is built: its end is still read and moved (a collection's is set
/// when it closes); [`Scratch::pack`] stores it as the file keeps it.
#[derive(Clone, Copy)]
struct Open {
    start: u32,
    end: u32,
    data: u32,
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
            scratch.dashes.push([id, dash as u32]);
        }
        scratch.nodes.push(Open {
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
            TScalarStyle::Plain => ScalarStyle::Plain,
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
            self.scratch.strings.push((id, value.into_boxed_str()));
        }
        if let Some(tag) = tag {
            self.scratch.strings.push((id, tag.into_boxed_str()));
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
            let pairs = children.chunks_exact(2);
            let len = pairs.len() as u32;
            // Keys alone when every value is the node after its key (see `Entries`).
            let paired = pairs.clone().any(|p| p[1] != p[0] + 1);
            let flow = if frame.flow { FLOW } else { 0 };
            // Its end, once packed.
            scratch.entries.extend([
                len << COLLECTION_LEN_SHIFT | flow | if paired { PAIRED } else { 0 },
                0,
            ]);
            if paired {
                scratch.entries.extend(pairs.flatten());
            } else {
                scratch.entries.extend(pairs.map(|p| p[0]));
            }
            index
        } else {
            let index = scratch.items.len();
            let flow = if frame.flow { FLOW } else { 0 };
            scratch
                .items
                .push((children.len() as u32) << COLLECTION_LEN_SHIFT | flow);
            // Its end, once packed.
            scratch.items.push(0);
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
                        prev.end_region_at(at);
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
                    self.docs.push(Document::new(
                        root,
                        Span::new(self.region_start, at.max(self.span(root).end)),
                        self.doc_start.take(),
                    ));
                }
                // An explicit `...` ends the region after its line.
                if self.text[at..].starts_with("...") {
                    let line_end = self.text[at..]
                        .find('\n')
                        .map_or(self.text.len(), |i| at + i + 1);
                    if let Some(doc) = self.docs.last_mut() {
                        doc.end_region_at(line_end);
                    }
                    self.region_start = line_end;
                } else {
                    self.region_start = self.docs.last().map_or(0, |d| d.region().end);
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
