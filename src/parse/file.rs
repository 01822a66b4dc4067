//! A parsed file: its text, documents and node arena (kept in a storage it may share with the
//! files parsed beside it), and reading nodes from it.

use std::sync::Arc;

use rustc_hash::FxHashMap as HashMap;

use super::node::{
    ALIAS, COLLECTION_LEN_SHIFT, Children, DENSE, Entries, FLOW, HAS_DASH, HAS_TAG, HAS_VALUE,
    KIND_SHIFT, LEN_SHIFT, LINE_BLOCK, LONG, MAPPING, Node, NodeId, NodeKind, PAIRED, PAYLOAD,
    Packed, SCALAR, SCALAR_STYLES, SEQUENCE, STORED_END, ScalarStyle, Span, first_and_last,
    unstored_dash,
};

/// One document of a (possibly multi-document) file. Its offsets are 32-bit, as every offset
/// into a file's storage is (a parsed text is under [`MAX_TEXT`](super::node::MAX_TEXT)): a
/// fleet keeps a record per document (issue 26).
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    pub root: NodeId,
    /// The region ([`Document::region`]).
    region: (u32, u32),
    /// Byte of the explicit `---` marker, [`NO_MARKER`] when the document has none.
    marker: u32,
}

/// What [`Document::marker`] holds for a document without a `---`.
const NO_MARKER: u32 = u32::MAX;

impl Document {
    pub(super) fn new(root: NodeId, region: Span, start_marker: Option<usize>) -> Document {
        Document {
            root,
            region: (region.start as u32, region.end as u32),
            marker: start_marker.map_or(NO_MARKER, |at| at as u32),
        }
    }

    /// The document's region: from the start of its `---` line (or the end of the previous
    /// region, or the file start) to the start of the next document's region. Regions tile the file.
    pub fn region(&self) -> Span {
        Span::new(self.region.0 as usize, self.region.1 as usize)
    }

    /// Where the region ends, set once the next document (or the file's end) is known.
    pub(super) fn end_region_at(&mut self, end: usize) {
        self.region.1 = end as u32;
    }

    /// Byte of the explicit `---` marker, if the document has one.
    pub fn start_marker(&self) -> Option<usize> {
        (self.marker != NO_MARKER).then_some(self.marker as usize)
    }
}

/// A parsed YAML file: its text (BOM removed), line-ending style, nodes and documents.
#[derive(Clone, Debug)]
pub struct YamlFile {
    /// Holds the file's text, [`Arena`]s, documents and strings, shared with the files parsed
    /// beside it ([`YamlFile::share_storage`]).
    pub(super) storage: Arc<Storage>,
    /// Where the file's parts are in `storage`: (start, length) each.
    pub(super) text_at: (u32, u32),
    pub(super) words_at: (u32, u32),
    pub(super) docs_at: (u32, u32),
    pub(super) strings_at: (u32, u32),
    /// The file started with a UTF-8 BOM, which is put back on write.
    pub bom: bool,
    /// The file's dominant line ending, used for everything written into it.
    pub line_ending: LineEnding,
}

/// The arrays [`YamlFile::words`] holds after its header (which holds where each but the
/// nodes starts), in this order:
/// - `Nodes`: two words a node, its [`Packed`] record.
/// - `Entries`: mapping children: at a mapping's index its header, `len <<
///   COLLECTION_LEN_SHIFT` with [`FLOW`], [`STORED_END`], [`PAIRED`] and [`DENSE`] flags, then
///   its end if stored (else its children give it), then its `len` keys, or `len` (key, value)
///   pairs when paired, or nothing when dense (see [`Entries`]).
/// - `Items`: sequence children: at a sequence's index its header (the same, never paired), its
///   end if stored, then its `len` items.
/// - `Offsets`: (node id, offset) pairs: the dash byte of each block-sequence item that does not
///   start two bytes after its dash (`- x` is nearly every item), and the end of each node whose
///   record cannot hold it (an alias, a scalar of 16 MiB or more), by node id (ascending; a
///   node's dash before its end): both few, so one table.
/// - `Lines`: the start of every [`LINE_BLOCK`]-th line.
#[derive(Clone, Copy)]
pub(super) enum Arena {
    Nodes,
    Entries,
    Items,
    Offsets,
    Lines,
}

/// Words before the first node: where each arena after the nodes starts.
pub(super) const HEADER: usize = 4;

/// The texts, node records ([`Arena`]s, a header then the arrays), documents and strings of
/// one or more files, each kind in one allocation: a file's own cost a size class's rounding
/// each, a tenth of them, and a fleet keeps them all for the whole run (issue 26).
#[derive(Clone, Debug, Default)]
pub(super) struct Storage {
    text: String,
    words: Vec<u32>,
    docs: Vec<Document>,
    /// Scalar values that differ from their text, and tags, by node id (ascending; a node's
    /// value before its tag): both rare, so one table, not two.
    strings: Vec<(NodeId, Box<str>)>,
}

/// Where `len` items start in a storage of one file: at its start.
fn whole(len: usize) -> (u32, u32) {
    (0, len as u32)
}

/// Words a collection's block takes for its children ([`Arena`]).
fn stored_children(header: u32) -> usize {
    let len = (header >> COLLECTION_LEN_SHIFT) as usize;
    if header & DENSE != 0 {
        0
    } else if header & PAIRED != 0 {
        2 * len
    } else {
        len
    }
}

/// The entries of mapping `id` from its arena block: `header`, and `ids` the children stored
/// after it ([`YamlFile::collection_at`]).
fn entries_of(id: NodeId, header: u32, ids: &[NodeId]) -> Entries<'_> {
    if header & DENSE != 0 {
        Entries::dense(id, header >> COLLECTION_LEN_SHIFT)
    } else {
        let paired = header & PAIRED != 0;
        Entries {
            ids,
            paired,
            dense: None,
        }
    }
}

/// A (start, length) place as a range.
fn range((at, len): (u32, u32)) -> std::ops::Range<usize> {
    at as usize..at as usize + len as usize
}

/// Where a scalar's value is: stored (it differs from its text), or a byte range of the text.
enum ScalarPlace<'a> {
    Stored(&'a str),
    Text(usize, usize),
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
    pub(super) fn from_line_starts(text: &str, line_starts: &[u32]) -> Self {
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

impl YamlFile {
    /// The file's text (BOM removed).
    pub fn text(&self) -> &str {
        &self.storage.text[range(self.text_at)]
    }

    /// The file's documents, in order.
    pub fn docs(&self) -> &[Document] {
        &self.storage.docs[range(self.docs_at)]
    }

    /// A file of its own storage, its documents still to come ([`YamlFile::set_docs`]).
    pub(super) fn stored(
        text: String,
        words: Vec<u32>,
        strings: Vec<(NodeId, Box<str>)>,
        bom: bool,
        line_ending: LineEnding,
    ) -> YamlFile {
        YamlFile {
            text_at: whole(text.len()),
            words_at: whole(words.len()),
            docs_at: whole(0),
            strings_at: whole(strings.len()),
            storage: Arc::new(Storage {
                text,
                words,
                docs: Vec::new(),
                strings,
            }),
            bom,
            line_ending,
        }
    }

    /// Set the documents of a file of its own storage.
    pub(super) fn set_docs(&mut self, docs: Vec<Document>) {
        self.docs_at = whole(docs.len());
        Arc::make_mut(&mut self.storage).docs = docs;
    }

    /// Keep the texts, node records, documents and strings of `files` together, one allocation
    /// for each kind (the loader's files, parsed a batch at a time): apart, each cost a size
    /// class's rounding, a tenth of a fleet's text and records (issue 26). Files whose storage
    /// would pass 4 GiB keep their own.
    pub fn share_storage(files: &mut [&mut YamlFile]) {
        let total = |at: fn(&YamlFile) -> (u32, u32)| -> usize {
            files.iter().map(|f| at(f).1 as usize).sum()
        };
        let (text, words) = (total(|f| f.text_at), total(|f| f.words_at));
        let (docs, strings) = (total(|f| f.docs_at), total(|f| f.strings_at));
        if u32::try_from(text.max(words).max(docs).max(strings)).is_err() {
            return;
        }
        let mut storage = Storage {
            text: String::with_capacity(text),
            words: Vec::with_capacity(words),
            docs: Vec::with_capacity(docs),
            strings: Vec::with_capacity(strings),
        };
        for file in files.iter_mut() {
            let at = |len: usize, part: (u32, u32)| (len as u32, part.1);
            let text_at = at(storage.text.len(), file.text_at);
            let words_at = at(storage.words.len(), file.words_at);
            let docs_at = at(storage.docs.len(), file.docs_at);
            let strings_at = at(storage.strings.len(), file.strings_at);
            storage.text.push_str(file.text());
            storage.words.extend_from_slice(file.words());
            storage.docs.extend_from_slice(file.docs());
            storage.strings.extend_from_slice(file.strings());
            (file.text_at, file.words_at) = (text_at, words_at);
            (file.docs_at, file.strings_at) = (docs_at, strings_at);
        }
        let storage = Arc::new(storage);
        for file in files {
            file.storage = storage.clone();
        }
    }

    /// The node `id`, unpacked.
    pub fn node(&self, id: NodeId) -> Node<'_> {
        let packed = self.packed(id);
        let start = packed.start as usize;
        let payload = packed.data & PAYLOAD;
        let (kind, end) = match packed.data >> KIND_SHIFT {
            SCALAR => {
                let kind = NodeKind::Scalar {
                    value: (payload & HAS_VALUE != 0).then(|| self.stored_value(id)),
                    style: SCALAR_STYLES[(payload & 0b111) as usize],
                    tag: (payload & HAS_TAG != 0).then(|| self.stored_tag(id)),
                };
                (kind, self.scalar_end(id, packed))
            }
            MAPPING => {
                let (entries, header) = self.mapping_at(id, payload as usize);
                let kind = NodeKind::Mapping {
                    entries,
                    flow: header & FLOW != 0,
                };
                (kind, self.end_of(id))
            }
            SEQUENCE => {
                let (items, header) = self.sequence_at(payload as usize);
                let kind = NodeKind::Sequence {
                    items,
                    flow: header & FLOW != 0,
                };
                (kind, self.end_of(id))
            }
            _ => {
                let kind = NodeKind::Alias {
                    target: payload.checked_sub(1),
                };
                (kind, self.stored_end(id))
            }
        };
        Node {
            kind,
            span: Span::new(start, end),
            dash: (packed.data & HAS_DASH != 0).then(|| self.dash(id, packed)),
        }
    }

    /// Every node id of the file, in source order of their starts (parents before children).
    pub fn node_ids(&self) -> std::ops::Range<NodeId> {
        0..(self.arena(Arena::Nodes).len() / 2) as NodeId
    }

    /// The source text of a span.
    pub fn slice(&self, span: Span) -> &str {
        &self.text()[span.start..span.end]
    }

    /// 1-based line of a byte offset: counted from the nearest indexed line start.
    #[allow(
        clippy::naive_bytecount,
        reason = "at most one indexed block of lines is counted: a crate for it would not pay"
    )]
    pub fn line_of(&self, offset: usize) -> usize {
        let offset = offset.min(self.text().len());
        let line_index = self.arena(Arena::Lines);
        let block = line_index.partition_point(|&s| s as usize <= offset) - 1;
        let from = line_index[block] as usize;
        let newlines = self.text().as_bytes()[from..offset]
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
            self.text()[start..offset.min(self.text().len())]
                .chars()
                .count()
                + 1,
        )
    }

    /// Byte offset of the start of the line holding `offset`.
    pub fn line_start(&self, offset: usize) -> usize {
        let offset = offset.min(self.text().len());
        self.text().as_bytes()[..offset]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
    }

    /// Follow aliases to the node they name (a bounded walk: anchors can only name earlier nodes).
    pub fn resolve(&self, mut id: NodeId) -> Option<NodeId> {
        loop {
            // Most nodes are no alias: their kind is read without unpacking them.
            if self.packed(id).data >> KIND_SHIFT != ALIAS {
                return Some(id);
            }
            match self.node(id).kind {
                NodeKind::Alias { target: Some(t) } => id = t,
                NodeKind::Alias { target: None } => return None,
                _ => return Some(id),
            }
        }
    }

    /// Entries of a mapping node, aliases followed (empty for anything else). Read from the
    /// node's record, not unpacked (its span and dash are not needed): every lookup of a key
    /// starts here.
    pub fn entries(&self, id: NodeId) -> Entries<'_> {
        let Some(id) = self.resolve(id) else {
            return Entries::default();
        };
        let data = self.packed(id).data;
        if data >> KIND_SHIFT == MAPPING {
            self.mapping_at(id, (data & PAYLOAD) as usize).0
        } else {
            Entries::default()
        }
    }

    /// The entry of mapping `map` whose key is the scalar `key` (an alias key followed, as
    /// go-yaml does): (key id, value id).
    pub fn entry(&self, map: NodeId, key: &str) -> Option<(NodeId, NodeId)> {
        self.entries(map)
            .iter()
            .find(|&(k, _)| self.scalar_is(k, key))
    }

    /// Whether node `id` (aliases followed) is the scalar `text`. The length is compared from
    /// the record first: a lookup passes over the keys before the one it wants, and reading
    /// each one's text from memory the cache no longer holds was most of a lookup's cost.
    fn scalar_is(&self, id: NodeId, text: &str) -> bool {
        let Some(id) = self.resolve(id) else {
            return false;
        };
        match self.scalar_place(id) {
            Some(ScalarPlace::Stored(value)) => value == text,
            Some(ScalarPlace::Text(start, end)) => {
                end - start == text.len() && &self.text()[start..end] == text
            }
            None => false,
        }
    }

    /// The node at a path of mapping keys below `from`.
    pub fn lookup(&self, from: NodeId, keys: &[&str]) -> Option<NodeId> {
        keys.iter()
            .try_fold(from, |id, key| self.entry(id, key).map(|(_, v)| v))
    }

    /// Items of a sequence node, aliases followed (empty for anything else); from the node's
    /// record, as [`Self::entries`].
    pub fn items(&self, id: NodeId) -> &[NodeId] {
        match self.resolve(id).map(|id| self.packed(id).data) {
            Some(data) if data >> KIND_SHIFT == SEQUENCE => {
                self.sequence_at((data & PAYLOAD) as usize).0
            }
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

    /// A scalar node's value, read from the source text when it is not stored. Straight from
    /// the node's record, not unpacked: the model and the rules read keys and values millions
    /// of times in a fleet, and unpacking each node was the largest cost of a lookup.
    pub(super) fn scalar_in(&self, id: NodeId) -> Option<&str> {
        Some(match self.scalar_place(id)? {
            ScalarPlace::Stored(value) => value,
            ScalarPlace::Text(start, end) => &self.text()[start..end],
        })
    }

    /// Where the value of scalar `id` is (`None`: no scalar), read from its record alone: the
    /// one place that knows which values are stored and what quotes leave out of the text.
    fn scalar_place(&self, id: NodeId) -> Option<ScalarPlace<'_>> {
        let packed = self.packed(id);
        if packed.data >> KIND_SHIFT != SCALAR {
            return None;
        }
        let payload = packed.data & PAYLOAD;
        if payload & HAS_VALUE != 0 {
            return Some(ScalarPlace::Stored(self.stored_value(id)));
        }
        let (start, end) = (packed.start as usize, self.scalar_end(id, packed));
        Some(match SCALAR_STYLES[(payload & 0b111) as usize] {
            ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted => {
                ScalarPlace::Text(start + 1, end - 1)
            }
            _ => ScalarPlace::Text(start, end),
        })
    }

    /// The end of scalar `id` (`packed` its record): its length is in the record, unless it is
    /// too long for it.
    fn scalar_end(&self, id: NodeId, packed: Packed) -> usize {
        let len = (packed.data & PAYLOAD) >> LEN_SHIFT;
        if len == LONG {
            self.stored_end(id)
        } else {
            packed.start as usize + len as usize
        }
    }
}

impl YamlFile {
    /// Every mapping of the file, in node order, with its entries: from the node records, read
    /// without unpacking a node.
    fn mappings(&self) -> impl Iterator<Item = (NodeId, Entries<'_>)> {
        self.node_ids().filter_map(|id| {
            let data = self.packed(id).data;
            (data >> KIND_SHIFT == MAPPING)
                .then(|| (id, self.mapping_at(id, (data & PAYLOAD) as usize).0))
        })
    }

    /// The first mapping key (in file order) that is a mapping or a sequence.
    pub(super) fn first_collection_key(&self) -> Option<NodeId> {
        let mut best: Option<NodeId> = None;
        for (_, entries) in self.mappings() {
            for (k, _) in entries {
                let kind = self.packed(k).data >> KIND_SHIFT;
                let start = |n: NodeId| self.packed(n).start;
                if (kind == MAPPING || kind == SEQUENCE) && best.is_none_or(|b| start(k) < start(b))
                {
                    best = Some(k);
                }
            }
        }
        best
    }

    /// The first (by position) scalar key that repeats an earlier key of its mapping: (duplicate,
    /// first). Merge keys (`<<`) may repeat.
    pub(super) fn first_duplicate_key(&self) -> Option<(NodeId, NodeId)> {
        let mut best: Option<(NodeId, NodeId)> = None;
        let mut seen: HashMap<&str, NodeId> = HashMap::default();
        let mut keys: Vec<(&str, NodeId)> = Vec::new();
        for (_, entries) in self.mappings() {
            if entries.len() < 2 {
                continue;
            }
            keys.clear();
            keys.extend(
                entries
                    .iter()
                    .filter_map(|(k, _)| self.scalar_in(k).filter(|v| *v != "<<").map(|v| (v, k))),
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
                let start = |n: NodeId| self.packed(n).start;
                if best.is_none_or(|(b, _)| start(k) < start(b)) {
                    best = Some((k, first));
                }
            }
        }
        best
    }
}

impl YamlFile {
    /// The words of one arena (see [`Arena`]).
    fn arena(&self, arena: Arena) -> &[u32] {
        let words = self.words();
        let at = arena as usize;
        let start = at.checked_sub(1).map_or(HEADER, |i| words[i] as usize);
        let end = if at < HEADER {
            words[at] as usize
        } else {
            words.len()
        };
        &words[start..end]
    }

    /// The file's words: the header, then the arenas.
    fn words(&self) -> &[u32] {
        &self.storage.words[range(self.words_at)]
    }

    /// The file's stored values and tags.
    fn strings(&self) -> &[(NodeId, Box<str>)] {
        &self.storage.strings[range(self.strings_at)]
    }

    /// The record of node `id`.
    fn packed(&self, id: NodeId) -> Packed {
        let nodes = self.arena(Arena::Nodes);
        let at = 2 * id as usize;
        Packed {
            start: nodes[at],
            data: nodes[at + 1],
        }
    }

    /// The (node id, offset) pairs of [`Arena::Offsets`].
    fn offsets(&self) -> &[[u32; 2]] {
        self.arena(Arena::Offsets).as_chunks().0
    }

    /// The collection whose header is at `index` of `arena`: its header, its end when stored,
    /// and its children as stored (a mapping's keys alone unless paired, none when dense; see
    /// [`Arena`]).
    fn collection_at(&self, arena: Arena, index: usize) -> (u32, Option<u32>, &[NodeId]) {
        let words = self.arena(arena);
        let header = words[index];
        let len = stored_children(header);
        let (end, first) = if header & STORED_END != 0 {
            (Some(words[index + 1]), index + 2)
        } else {
            (None, index + 1)
        };
        (header, end, &words[first..first + len])
    }

    /// Mapping `id`, whose header is at `index` of the entries arena: its entries, and its
    /// header.
    fn mapping_at(&self, id: NodeId, index: usize) -> (Entries<'_>, u32) {
        let (header, _, ids) = self.collection_at(Arena::Entries, index);
        (entries_of(id, header, ids), header)
    }

    /// The sequence whose header is at `index` of the items arena: its items, and its header.
    fn sequence_at(&self, index: usize) -> (&[NodeId], u32) {
        let (header, _, items) = self.collection_at(Arena::Items, index);
        (items, header)
    }

    /// The end of node `id`, from its record: a scalar's length, an alias's stored end, a
    /// collection's stored end or, when its children give it ([`STORED_END`]), the end of its
    /// last child (or of its first, a scalar or an alias, when that is later), its last child's
    /// in turn: a loop down last children, as deep as the nesting and no wider.
    fn end_of(&self, mut id: NodeId) -> usize {
        let mut at_least = 0;
        loop {
            let packed = self.packed(id);
            let index = (packed.data & PAYLOAD) as usize;
            let arena = match packed.data >> KIND_SHIFT {
                SCALAR => return at_least.max(self.scalar_end(id, packed)),
                MAPPING => Arena::Entries,
                SEQUENCE => Arena::Items,
                _ => return at_least.max(self.stored_end(id)),
            };
            let (header, end, ids) = self.collection_at(arena, index);
            let children = match arena {
                Arena::Entries => Children::Entries(entries_of(id, header, ids)),
                _ => Children::Items(ids),
            };
            let (Some((first, last)), None) = (first_and_last(children), end) else {
                // Stored (a collection without children always stores its end).
                return at_least.max(end.unwrap_or_default() as usize);
            };
            if first != last {
                at_least = at_least.max(self.end_of(first));
            }
            id = last;
        }
    }

    /// The stored value of scalar `id` (present: its flag said so): the first string of `id`.
    fn stored_value(&self, id: NodeId) -> &str {
        let strings = self.strings();
        let i = strings.partition_point(|(n, _)| *n < id);
        strings.get(i).map_or("", |(_, s)| s)
    }

    /// The dash byte of block-sequence item `id` (`packed` its record, whose flag says it has
    /// one): its first offset, unless all `id` has is its end (an alias's, a long scalar's);
    /// else two bytes before it starts.
    fn dash(&self, id: NodeId, packed: Packed) -> usize {
        let offsets = self.offsets();
        let at = offsets.partition_point(|[n, _]| *n < id);
        let stored = offsets[at..].iter().take_while(|[n, _]| *n == id).count();
        let end_stored = match packed.data >> KIND_SHIFT {
            SCALAR => (packed.data & PAYLOAD) >> LEN_SHIFT == LONG,
            MAPPING | SEQUENCE => false,
            _ => true,
        };
        if stored > usize::from(end_stored) {
            offsets[at][1] as usize
        } else {
            unstored_dash(packed.start).map_or(0, |d| d as usize)
        }
    }

    /// The end of node `id` when its record cannot hold it: the last offset of `id`.
    fn stored_end(&self, id: NodeId) -> usize {
        let offsets = self.offsets();
        let i = offsets.partition_point(|[n, _]| *n <= id);
        i.checked_sub(1)
            .and_then(|i| offsets.get(i))
            .map_or(0, |&[_, end]| end as usize)
    }

    /// The tag of node `id` (present: its flag said so): the last string of `id`.
    fn stored_tag(&self, id: NodeId) -> &str {
        let strings = self.strings();
        let i = strings.partition_point(|(n, _)| *n <= id);
        i.checked_sub(1)
            .and_then(|i| strings.get(i))
            .map_or("", |(_, s)| s)
    }
}

#[cfg(test)]
mod tests {
    use super::{Arena, NodeId, YamlFile};

    /// `text` parsed without an error, and its first document's root.
    fn parsed(text: &str) -> (YamlFile, NodeId) {
        let (file, error) = YamlFile::parse(text);
        assert!(error.is_none(), "{error:?}");
        let root = file.docs()[0].root;
        (file, root)
    }

    /// A block collection whose first child is a scalar (or its only child) keeps no end word:
    /// its children give it. A flow collection keeps its end (past its bracket), as does a block
    /// sequence of several collections; every span reads as before either way.
    #[test]
    fn block_collections_keep_no_end_word() {
        let (file, root) = parsed("a: 1\nb: {x: 1}\nc:\n  - [y]\n  - z: 2\n");
        // The root mapping (3 keys, `b`'s value a collection): a header and its keys, no end;
        // `z: 2`: a header alone (dense); `{x: 1}`: a header and its end (dense, flow).
        assert_eq!(file.arena(Arena::Entries).len(), (1 + 3) + 1 + 2);
        // `c`'s sequence starts with a collection and has two items: header, end, items; `[y]`
        // is flow: header, end, item.
        assert_eq!(file.arena(Arena::Items).len(), (2 + 2) + (2 + 1));
        let span = |keys: &[&str]| file.slice(file.node(file.lookup(root, keys).unwrap()).span);
        assert_eq!(span(&["b"]), "{x: 1}");
        assert_eq!(span(&["c"]), "- [y]\n  - z: 2");
        assert_eq!(file.slice(file.node(root).span), file.text().trim_end());
    }

    /// A mapping whose keys and values have no children (but its last value) keeps no key: each
    /// is read from the node after the one before, values and spans as with listed keys,
    /// whatever the values are (empty, aliases, quoted), at any depth.
    #[test]
    fn mappings_without_nested_collections_keep_no_keys() {
        let text = "a: &x 1\nb:\nc: *x\nf:\n  - {g: 1, h: [2]}\n  - i: 3\n    j: k\n\"d\": 'e'\n";
        let (file, root) = parsed(text);
        let value = |keys: &[&str]| file.scalar(file.lookup(root, keys).unwrap());
        assert_eq!(file.entries(root).len(), 5);
        assert_eq!(value(&["a"]), Some("1"));
        assert_eq!(value(&["b"]), Some(""));
        assert_eq!(value(&["c"]), Some("1"));
        assert_eq!(value(&["d"]), Some("e"));
        let items = file.items(file.lookup(root, &["f"]).unwrap());
        let second = file.entries(items[1]);
        assert_eq!(second.len(), 2);
        assert_eq!(file.scalar(second.last().unwrap().1), Some("k"));
        assert_eq!(file.scalar(file.entry(items[1], "i").unwrap().1), Some("3"));
        assert_eq!(file.slice(file.node(items[1]).span), "i: 3\n    j: k");
        assert_eq!(file.entries(items[0]).len(), 2);
        assert_eq!(file.slice(file.node(items[0]).span), "{g: 1, h: [2]}");
        // Stored keys: the root's 5 (`f`, not last, holds a sequence); `{g: 1, h: [2]}` keeps a
        // header and its end (its last value may hold anything) and `i: 3 …` a header alone.
        assert_eq!(file.arena(Arena::Entries).len(), (1 + 5) + 2 + 1);
        let keys: Vec<_> = second.iter().map(|(k, _)| file.scalar(k)).collect();
        assert_eq!(keys, [Some("i"), Some("j")]);
        assert_eq!(second.get(2), None);
    }

    /// A dash two bytes before its item is not stored; any other is, beside an alias's end:
    /// every dash reads where it is.
    #[test]
    fn only_dashes_not_right_before_their_item_are_stored() {
        let text = "a: &x 1\nl:\n- p\n-   q\n-\n  r\n- &y s\n- *x\n-  *x\n- t: 1\n  u: 2\n- - v\n";
        let (file, root) = parsed(text);
        let items = file.items(file.lookup(root, &["l"]).unwrap());
        let dashes: Vec<usize> = items.iter().map(|&i| file.node(i).dash.unwrap()).collect();
        let lines: Vec<usize> = text.match_indices("\n-").map(|(at, _)| at + 1).collect();
        assert_eq!(dashes, lines);
        let inner = file.items(items[7]);
        assert_eq!(file.node(inner[0]).dash, Some(lines[7] + 2));
        // Stored: `-   q`, `-\n  r`, `- &y s`, `-  *x` (and both aliases' ends).
        assert_eq!(file.offsets().len(), 4 + 2);
        assert_eq!(file.slice(file.node(items[5]).span), "*x");
    }
}
