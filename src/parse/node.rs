//! A node of the tree: its span, kind and scalar style, and how the arena packs it.

use std::fmt;

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

pub(super) const SCALAR_STYLES: [ScalarStyle; 5] = [
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
        entries: Entries<'a>,
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

/// A mapping's (key, value) pairs, in source order. The arena keeps most mappings' keys alone:
/// a value is the node right after its key, unless the key is a collection (which Flux refuses
/// anyway), and a fleet has millions of entries. Most of a fleet's mappings hold no collection
/// but in their last value (`metadata`, `labels`, a `dependsOn` item, a Kustomization's `spec`
/// ending with `sourceRef`): their keys are every other node after the mapping's own, and the
/// arena keeps none of them ([`DENSE`]).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Entries<'a> {
    /// The keys, or with `paired` each key followed by its value; none when `dense`.
    pub(super) ids: &'a [NodeId],
    pub(super) paired: bool,
    /// (first key, count) of a dense mapping: key `i` is node `first + 2i`, its value the next.
    pub(super) dense: Option<(NodeId, u32)>,
}

impl Entries<'_> {
    /// The entries of dense mapping `mapping` with `len` keys: its keys are every other node
    /// after its own ([`DENSE`]). The one definition the builder checks and the reader reads.
    pub(super) fn dense(mapping: NodeId, len: u32) -> Entries<'static> {
        Entries {
            ids: &[],
            paired: false,
            dense: Some((mapping + 1, len)),
        }
    }
}

impl<'a> Entries<'a> {
    pub fn len(&self) -> usize {
        match self.dense {
            Some((_, len)) => len as usize,
            None if self.paired => self.ids.len() / 2,
            None => self.ids.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`th (key, value) pair.
    pub fn get(&self, i: usize) -> Option<(NodeId, NodeId)> {
        match self.dense {
            Some((first, len)) => (i < len as usize).then(|| {
                let key = first + 2 * i as NodeId;
                (key, key + 1)
            }),
            None if self.paired => Some((*self.ids.get(2 * i)?, *self.ids.get(2 * i + 1)?)),
            None => self.ids.get(i).map(|&k| (k, k + 1)),
        }
    }

    pub fn first(&self) -> Option<(NodeId, NodeId)> {
        self.get(0)
    }

    pub fn last(&self) -> Option<(NodeId, NodeId)> {
        self.len().checked_sub(1).and_then(|i| self.get(i))
    }

    pub fn iter(self) -> EntriesIter<'a> {
        EntriesIter {
            entries: self,
            range: 0..self.len(),
        }
    }
}

impl<'a> IntoIterator for Entries<'a> {
    type Item = (NodeId, NodeId);
    type IntoIter = EntriesIter<'a>;

    fn into_iter(self) -> EntriesIter<'a> {
        self.iter()
    }
}

/// The pairs of [`Entries`], by value.
#[derive(Clone, Debug)]
pub struct EntriesIter<'a> {
    entries: Entries<'a>,
    range: std::ops::Range<usize>,
}

impl Iterator for EntriesIter<'_> {
    type Item = (NodeId, NodeId);

    fn next(&mut self) -> Option<(NodeId, NodeId)> {
        self.range.next().and_then(|i| self.entries.get(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }
}

impl DoubleEndedIterator for EntriesIter<'_> {
    fn next_back(&mut self) -> Option<(NodeId, NodeId)> {
        self.range.next_back().and_then(|i| self.entries.get(i))
    }
}

impl ExactSizeIterator for EntriesIter<'_> {}

/// One YAML node with the byte range of its own text (properties such as `&anchor` excluded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Node<'a> {
    pub kind: NodeKind<'a>,
    pub span: Span,
    /// Byte of the `- ` indicator when this node is an item of a block sequence.
    pub dash: Option<usize>,
}

/// How a node is stored: 8 bytes, because a 100,000-file fleet has five million of them and
/// their size is most of fluxmend's memory. Its end is kept where it costs least: a scalar's
/// length in its record, a collection's in its arena header, an alias's (and a scalar's too
/// long for its record) in [`YamlFile::offsets`]. [`YamlFile::node`] unpacks it into a [`Node`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Packed {
    pub(super) start: u32,
    /// The kind in the top two bits, then [`HAS_DASH`]; below them a scalar's style and flags
    /// and its length from [`LEN_SHIFT`], a collection's index in its arena, or an alias's
    /// target + 1 (0: unknown anchor).
    pub(super) data: u32,
}

const _: () = assert!(std::mem::size_of::<Packed>() == 8);

pub(super) const KIND_SHIFT: u32 = 30;
/// The node is an item of a block sequence; its dash is in [`YamlFile::offsets`].
pub(super) const HAS_DASH: u32 = 1 << 29;
pub(super) const PAYLOAD: u32 = HAS_DASH - 1;
pub(super) const SCALAR: u32 = 0;
pub(super) const MAPPING: u32 = 1;
pub(super) const SEQUENCE: u32 = 2;
pub(super) const ALIAS: u32 = 3;
/// Scalar flags beside the style (bits 0..3): a stored value, a tag.
pub(super) const HAS_VALUE: u32 = 1 << 3;
pub(super) const HAS_TAG: u32 = 1 << 4;
/// Where a scalar's length starts in its payload.
pub(super) const LEN_SHIFT: u32 = 5;
/// The length field of a scalar whose end is in [`YamlFile::offsets`] instead (16 MiB or more).
pub(super) const LONG: u32 = PAYLOAD >> LEN_SHIFT;
/// In a mapping's arena header: its entries are stored as (key, value) pairs, not keys alone.
pub(super) const PAIRED: u32 = 1;
/// In a collection's arena header: its end follows the header. Otherwise it ends where its
/// children do, the larger end of its first and last child (an empty value's span sits before
/// its key's end), and its first child is a scalar, an alias or its last: read by following last
/// children down ([`YamlFile::end_of`]), never both ways. Nearly every block collection is one:
/// a word less for each of the millions a fleet has (issue 26).
pub(super) const STORED_END: u32 = 1 << 1;
/// In a collection's arena header: a flow collection (`{…}`, `[…]`).
pub(super) const FLOW: u32 = 1 << 2;
/// In a mapping's arena header: its keys are not stored, as they are every other node from the
/// one after the mapping's own (no key has a child, nor any value but the last): see
/// [`Entries`].
pub(super) const DENSE: u32 = 1 << 3;
/// Where a collection's length starts in its arena header.
pub(super) const COLLECTION_LEN_SHIFT: u32 = 4;

/// Where a block-sequence item's dash is when the file does not store it: two bytes before the
/// item starts (`- x`, nearly every item); stored wherever it is elsewhere.
pub(super) fn unstored_dash(item_start: u32) -> Option<u32> {
    item_start.checked_sub(2)
}

/// A collection's children, as [`first_and_last`] reads them.
#[derive(Clone, Copy)]
pub(super) enum Children<'a> {
    Entries(Entries<'a>),
    Items(&'a [NodeId]),
}

/// A collection's first and last child (a mapping's first key and last value); `None` without
/// children.
pub(super) fn first_and_last(children: Children<'_>) -> Option<(NodeId, NodeId)> {
    match children {
        Children::Entries(entries) => Some((entries.first()?.0, entries.last()?.1)),
        Children::Items(items) => Some((*items.first()?, *items.last()?)),
    }
}

/// Files this large are refused: offsets are 32 bits and ids and arena indexes 29. The loader
/// skips files over 8 MiB long before this.
pub(super) const MAX_TEXT: usize = 1 << 28;

/// Every this many lines the line index keeps a line start; a line number is counted from the
/// nearest one (a full table would cost 4 bytes a line for every file of a fleet).
pub(super) const LINE_BLOCK: usize = 64;

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}
