//! Property tests for the edit layer, through the public API: generated documents (block and
//! flow sequences, zero-indented lists, nested mappings, comments between and after items,
//! blank lines, quoting, CRLF, several documents) and generated edits (remove an item, insert an
//! item, replace a scalar, move a document). For each:
//!
//! * the output re-parses to exactly the expected data;
//! * every byte outside the edit is unchanged, and the edit stays inside the lines of the
//!   collection (or document) it changes;
//! * the YAML gate accepts it (no false alarm) — and, for the same edit with its byte range
//!   nudged by one, the gate accepts only if the data is still exactly what was intended.

use fluxmend::edit::{self, TextEdit};
use fluxmend::parse::{NodeId, Value, YamlFile};
use fluxmend::verify::yaml::check_edits;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Scalar {
    Plain(String),
    Double(String),
    Single(String),
}

impl Scalar {
    fn text(&self) -> String {
        match self {
            Scalar::Plain(s) => s.clone(),
            Scalar::Double(s) => format!("{s:?}"),
            Scalar::Single(s) => format!("'{s}'"),
        }
    }

    fn value(&self) -> Value {
        match self {
            Scalar::Plain(s) => Value::Str(s.clone(), false),
            Scalar::Double(s) | Scalar::Single(s) => Value::Str(s.clone(), true),
        }
    }
}

#[derive(Clone, Debug)]
enum Item {
    Scalar(Scalar),
    /// A small mapping as a block sequence item.
    Map(Vec<(String, Scalar)>),
}

#[derive(Clone, Debug)]
enum Node {
    Scalar(Scalar),
    Seq {
        items: Vec<Item>,
        flow: bool,
        /// `key:\n- a` rather than `key:\n  - a`.
        zero_indent: bool,
        /// A comment line after the last item, at the item indentation.
        trailing_comment: bool,
    },
    Map(Vec<(String, Scalar)>),
}

#[derive(Clone, Debug)]
struct Doc {
    entries: Vec<(String, Node)>,
    /// Comments after some item lines.
    comments: bool,
}

fn word() -> impl Strategy<Value = String> {
    // At least two characters: a range nudged by one byte then never covers a whole neighbour
    // (which the YAML gate must accept — covering whole items is what removing them looks like;
    // only the render gate can tell whether that was meant).
    "[a-z][a-z0-9-]{1,6}".prop_filter("not a YAML keyword", |s| {
        !matches!(
            s.as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        )
    })
}

fn scalar() -> impl Strategy<Value = Scalar> {
    prop_oneof![
        4 => word().prop_map(Scalar::Plain),
        1 => "[a-z #:]{2,8}".prop_map(Scalar::Double),
        1 => "[a-z #]{2,8}".prop_map(Scalar::Single),
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        3 => scalar().prop_map(Item::Scalar),
        1 => prop::collection::vec((word(), scalar()), 1..3).prop_map(|mut e| {
            dedup(&mut e);
            Item::Map(e)
        }),
    ]
}

fn dedup<T>(entries: &mut Vec<(String, T)>) {
    let mut seen = std::collections::HashSet::new();
    entries.retain(|(k, _)| seen.insert(k.clone()));
}

fn node() -> impl Strategy<Value = Node> {
    prop_oneof![
        1 => scalar().prop_map(Node::Scalar),
        3 => (prop::collection::vec(item(), 1..5), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(items, flow, zero_indent, trailing_comment)| {
                let flow = flow && items.iter().all(|i| matches!(i, Item::Scalar(_)));
                Node::Seq { items, flow, zero_indent, trailing_comment }
            }),
        1 => prop::collection::vec((word(), scalar()), 1..3).prop_map(|mut e| {
            dedup(&mut e);
            Node::Map(e)
        }),
    ]
}

fn doc() -> impl Strategy<Value = Doc> {
    (prop::collection::vec((word(), node()), 1..5), any::<bool>()).prop_map(
        |(mut entries, comments)| {
            dedup(&mut entries);
            Doc { entries, comments }
        },
    )
}

fn item_value(i: &Item) -> Value {
    match i {
        Item::Scalar(s) => s.value(),
        Item::Map(e) => map_value(e),
    }
}

fn map_value(e: &[(String, Scalar)]) -> Value {
    Value::Map(
        e.iter()
            .map(|(k, v)| (Value::Str(k.clone(), false), v.value()))
            .collect(),
    )
}

fn doc_value(d: &Doc) -> Value {
    Value::Map(
        d.entries
            .iter()
            .map(|(k, n)| {
                let v = match n {
                    Node::Scalar(s) => s.value(),
                    Node::Seq { items, .. } => Value::Seq(items.iter().map(item_value).collect()),
                    Node::Map(e) => map_value(e),
                };
                (Value::Str(k.clone(), false), v)
            })
            .collect(),
    )
}

fn render_doc(d: &Doc, out: &mut String) {
    let comment = |out: &mut String, i: usize| {
        if d.comments && i.is_multiple_of(2) {
            out.push_str("   # note");
        }
    };
    for (n, (k, node)) in d.entries.iter().enumerate() {
        match node {
            Node::Scalar(s) => {
                out.push_str(&format!("{k}: {}", s.text()));
                comment(out, n);
                out.push('\n');
            }
            Node::Map(e) => {
                out.push_str(&format!("{k}:\n"));
                for (i, (mk, mv)) in e.iter().enumerate() {
                    out.push_str(&format!("  {mk}: {}", mv.text()));
                    comment(out, i);
                    out.push('\n');
                }
            }
            Node::Seq {
                items, flow: true, ..
            } => {
                let texts: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        Item::Scalar(s) => s.text(),
                        Item::Map(_) => unreachable!("flow lists hold scalars"),
                    })
                    .collect();
                out.push_str(&format!("{k}: [{}]\n", texts.join(", ")));
            }
            Node::Seq {
                items,
                zero_indent,
                trailing_comment,
                ..
            } => {
                let indent = if *zero_indent { "" } else { "  " };
                out.push_str(&format!("{k}:\n"));
                for (i, item) in items.iter().enumerate() {
                    if d.comments && i == 1 {
                        out.push_str(&format!("{indent}# about the next item\n"));
                    }
                    match item {
                        Item::Scalar(s) => {
                            out.push_str(&format!("{indent}- {}", s.text()));
                            comment(out, i);
                            out.push('\n');
                        }
                        Item::Map(e) => {
                            for (j, (mk, mv)) in e.iter().enumerate() {
                                let lead = if j == 0 { "- " } else { "  " };
                                out.push_str(&format!("{indent}{lead}{mk}: {}\n", mv.text()));
                            }
                        }
                    }
                }
                if *trailing_comment {
                    out.push_str(&format!("{indent}# trailing comment\n"));
                }
            }
        }
        if d.comments && n == 0 {
            out.push('\n');
        }
    }
}

/// Render a stream: every document after the first starts with `---`; `crlf` line endings.
fn render(docs: &[Doc], first_marker: bool, crlf: bool) -> String {
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 || first_marker {
            out.push_str("---\n");
        }
        render_doc(d, &mut out);
    }
    if crlf { out.replace('\n', "\r\n") } else { out }
}

/// A generated edit, by position among the candidates it can apply to.
#[derive(Clone, Debug)]
enum Op {
    Remove {
        seq: usize,
        item: usize,
    },
    Insert {
        seq: usize,
        after: Option<usize>,
        value: Scalar,
    },
    Replace {
        scalar: usize,
        value: Scalar,
    },
    MoveDoc {
        from: usize,
        to: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (any::<usize>(), any::<usize>()).prop_map(|(seq, item)| Op::Remove { seq, item }),
        (any::<usize>(), prop::option::of(any::<usize>()), scalar())
            .prop_map(|(seq, after, value)| Op::Insert { seq, after, value }),
        (any::<usize>(), scalar()).prop_map(|(scalar, value)| Op::Replace { scalar, value }),
        (any::<usize>(), any::<usize>()).prop_map(|(from, to)| Op::MoveDoc { from, to }),
    ]
}

/// Where a value lives: document, top-level key, and (for sequences and mappings) the index.
#[derive(Clone, Debug)]
enum Place {
    Top(usize, usize),
    SeqItem(usize, usize, usize),
    MapValue(usize, usize, usize),
    SeqItemMapValue(usize, usize, usize, usize),
}

/// Every sequence (doc, entry) and every scalar place of the generated stream.
fn sequences(docs: &[Doc]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        for (e, (_, n)) in doc.entries.iter().enumerate() {
            if matches!(n, Node::Seq { .. }) {
                out.push((d, e));
            }
        }
    }
    out
}

fn scalars(docs: &[Doc]) -> Vec<Place> {
    let mut out = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        for (e, (_, n)) in doc.entries.iter().enumerate() {
            match n {
                Node::Scalar(_) => out.push(Place::Top(d, e)),
                Node::Map(m) => out.extend((0..m.len()).map(|i| Place::MapValue(d, e, i))),
                Node::Seq { items, .. } => {
                    for (i, item) in items.iter().enumerate() {
                        match item {
                            Item::Scalar(_) => out.push(Place::SeqItem(d, e, i)),
                            Item::Map(m) => {
                                out.extend(
                                    (0..m.len()).map(|j| Place::SeqItemMapValue(d, e, i, j)),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The node of entry `e` (its value) in document `d`.
fn entry_value(file: &YamlFile, d: usize, e: usize) -> NodeId {
    let root = file.docs()[d].root;
    match file.node(root).kind {
        fluxmend::parse::NodeKind::Mapping { entries, .. } => entries.get(e).unwrap().1,
        _ => panic!("documents are mappings"),
    }
}

fn map_entry_value(file: &YamlFile, map: NodeId, i: usize) -> NodeId {
    match file.node(map).kind {
        fluxmend::parse::NodeKind::Mapping { entries, .. } => entries.get(i).unwrap().1,
        _ => panic!("not a mapping"),
    }
}

/// The edits of an op, the expected documents, and the byte range the edits must stay inside.
type Planned = (Vec<TextEdit>, Vec<Value>, (usize, usize));

/// Apply `op` to the generated stream.
fn plan(file: &YamlFile, docs: &[Doc], op: &Op) -> Option<Planned> {
    let mut expected: Vec<Value> = docs.iter().map(doc_value).collect();
    let set = |expected: &mut Vec<Value>, d: usize, e: usize, f: &mut dyn FnMut(&mut Value)| {
        if let Value::Map(entries) = &mut expected[d] {
            f(&mut entries[e].1);
        }
    };
    let text = file.text();
    match op {
        Op::Remove { seq, item } => {
            let seqs = sequences(docs);
            let &(d, e) = seqs.get(seq % seqs.len().max(1))?;
            let s = entry_value(file, d, e);
            let items = file.items(s).to_vec();
            let i = item % items.len();
            let edit = edit::remove_item(file, s, items[i]).ok()?;
            set(&mut expected, d, e, &mut |v| {
                if let Value::Seq(list) = v {
                    list.remove(i);
                }
            });
            let key_end = file.node(entry_key(file, d, e)).span.end;
            let region = (key_end, edit::after_line(text, file.node(s).span.end));
            Some((vec![edit], expected, region))
        }
        Op::Insert { seq, after, value } => {
            let seqs = sequences(docs);
            let &(d, e) = seqs.get(seq % seqs.len().max(1))?;
            let s = entry_value(file, d, e);
            let items = file.items(s).to_vec();
            let after_idx = after.map(|a| a % items.len());
            let yaml = edit::scalar_text(&scalar_string(value));
            let edit = edit::insert_item(file, s, after_idx.map(|a| items[a]), &yaml).ok()?;
            let quoted = yaml.starts_with('"');
            set(&mut expected, d, e, &mut |v| {
                if let Value::Seq(list) = v {
                    let at = after_idx.map_or(list.len(), |a| a + 1);
                    list.insert(at, Value::Str(scalar_string(value), quoted));
                }
            });
            let key_end = file.node(entry_key(file, d, e)).span.end;
            let region = (key_end, edit::after_line(text, file.node(s).span.end));
            Some((vec![edit], expected, region))
        }
        Op::Replace { scalar, value } => {
            let places = scalars(docs);
            let place = places.get(scalar % places.len().max(1))?.clone();
            let node = match place {
                Place::Top(d, e) => entry_value(file, d, e),
                Place::SeqItem(d, e, i) => file.items(entry_value(file, d, e))[i],
                Place::MapValue(d, e, i) => map_entry_value(file, entry_value(file, d, e), i),
                Place::SeqItemMapValue(d, e, i, j) => {
                    map_entry_value(file, file.items(entry_value(file, d, e))[i], j)
                }
            };
            let yaml = edit::scalar_text(&scalar_string(value));
            let new = Value::Str(scalar_string(value), yaml.starts_with('"'));
            let edit = edit::replace_node(file, node, &yaml);
            let region = (edit.start, edit.end);
            match place {
                Place::Top(d, e) => set(&mut expected, d, e, &mut |v| *v = new.clone()),
                Place::SeqItem(d, e, i) => set(&mut expected, d, e, &mut |v| {
                    if let Value::Seq(l) = v {
                        l[i] = new.clone();
                    }
                }),
                Place::MapValue(d, e, i) => set(&mut expected, d, e, &mut |v| {
                    if let Value::Map(m) = v {
                        m[i].1 = new.clone();
                    }
                }),
                Place::SeqItemMapValue(d, e, i, j) => set(&mut expected, d, e, &mut |v| {
                    if let Value::Seq(l) = v
                        && let Value::Map(m) = &mut l[i]
                    {
                        m[j].1 = new.clone();
                    }
                }),
            }
            Some((vec![edit], expected, region))
        }
        Op::MoveDoc { from, to } => {
            let n = docs.len();
            if n < 2 {
                return None;
            }
            let from = from % n;
            // Insert before document `to` (or at the end when `to == n`), never next to itself.
            let to = to % (n + 1);
            if to == from || to == from + 1 {
                return None;
            }
            let (start, end) = edit::document_region(file, from);
            let region = &text[start..end];
            let eol = file.line_ending.as_str();
            let body = region
                .strip_prefix("---")
                .map_or(region, |b| b.trim_start_matches(['\r', '\n']));
            let at = if to == n {
                text.len()
            } else {
                edit::document_region(file, to).0
            };
            let edits = vec![
                TextEdit {
                    start,
                    end,
                    text: String::new(),
                },
                TextEdit {
                    start: at,
                    end: at,
                    // Before a document without its own `---`, close the moved one with a marker.
                    text: if to < n && file.docs()[to].start_marker().is_none() {
                        format!("---{eol}{body}---{eol}")
                    } else {
                        format!("---{eol}{body}")
                    },
                },
            ];
            let moved = expected.remove(from);
            let insert_at = if to > from { to - 1 } else { to };
            expected.insert(insert_at, moved);
            Some((edits, expected, (0, text.len())))
        }
    }
}

fn entry_key(file: &YamlFile, d: usize, e: usize) -> NodeId {
    match file.node(file.docs()[d].root).kind {
        fluxmend::parse::NodeKind::Mapping { entries, .. } => entries.get(e).unwrap().0,
        _ => panic!("documents are mappings"),
    }
}

fn scalar_string(s: &Scalar) -> String {
    match s {
        Scalar::Plain(v) | Scalar::Double(v) | Scalar::Single(v) => v.clone(),
    }
}

fn values(file: &YamlFile) -> Vec<Value> {
    file.docs()
        .iter()
        .map(|d| file.value(d.root).unwrap())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn edits_mean_exactly_what_they_intend(
        docs in prop::collection::vec(doc(), 1..4),
        first_marker in any::<bool>(),
        crlf in any::<bool>(),
        op in op(),
        nudge in prop::sample::select(vec![-1isize, 1]),
        nudge_end in any::<bool>(),
    ) {
        let text = render(&docs, first_marker, crlf);
        let (file, err) = YamlFile::parse(&text);
        prop_assert_eq!(err, None, "generated text parses:\n{}", text);
        prop_assert_eq!(values(&file), docs.iter().map(doc_value).collect::<Vec<_>>());
        let Some((edits, expected, (lo, hi))) = plan(&file, &docs, &op) else {
            return Ok(());
        };
        let out = edit::apply(&text, &edits).unwrap();
        let (after, err) = YamlFile::parse(&out);
        prop_assert_eq!(err, None, "output parses:\n{}\n--- from ---\n{}", out, text);
        prop_assert_eq!(values(&after), expected.clone(), "output:\n{}\n--- from ---\n{}", out, text);
        // Bytes outside the edits are unchanged, and the edits stay inside the collection's lines.
        let mut sorted = edits.clone();
        sorted.sort();
        let (first, last) = (&sorted[0], &sorted[sorted.len() - 1]);
        let tail = text.len() - last.end;
        prop_assert_eq!(&out[..first.start], &text[..first.start]);
        prop_assert_eq!(&out[out.len() - tail..], &text[last.end..]);
        prop_assert!(lo <= first.start && last.end <= hi, "edit {:?} outside {}..{}", sorted, lo, hi);
        if crlf {
            prop_assert!(!out.replace("\r\n", "").contains('\n'), "CRLF kept: {:?}", out);
        }
        // The YAML gate accepts the real edit...
        let verdict = check_edits(&file, &edits);
        prop_assert!(verdict.is_ok(), "gate refused a correct edit: {:?}\n{}", verdict, text);
        // ...and a nudged one only when the data is still exactly the intended data.
        if edits.len() == 1 {
            let mut bad = edits[0].clone();
            let moved = if nudge_end { &mut bad.end } else { &mut bad.start };
            let target = *moved as isize + nudge;
            if target < 0 || target as usize > text.len() || !text.is_char_boundary(target as usize) {
                return Ok(());
            }
            *moved = target as usize;
            if bad.start > bad.end || (bad.start == bad.end && bad.text.is_empty()) {
                // Inverted, or nudged into a no-op (which the gate rightly accepts).
                return Ok(());
            }
            if check_edits(&file, std::slice::from_ref(&bad)).is_ok() {
                let out = edit::apply(&text, &[bad.clone()]).unwrap();
                let (after, _) = YamlFile::parse(&out);
                prop_assert_eq!(
                    values(&after), expected,
                    "the gate accepted a nudged edit {:?} that changes the data:\n{}\n--- from ---\n{}",
                    bad, out, text
                );
            }
        }
    }
}

/// Strings that YAML resolves to something other than themselves when written plain, or that
/// need an escape when quoted.
const AWKWARD: &[&str] = &[
    "",
    "true",
    "False",
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "null",
    "~",
    "0x1F",
    "0o17",
    "017",
    "1_000",
    "1e3",
    ".5",
    "1.",
    ".inf",
    "-.inf",
    ".NaN",
    "inf",
    "2001-12-14",
    "1:20",
    "-a",
    "@a",
    " a",
    "a ",
    "a: b",
    "a #b",
    "#a",
    "'a",
    "\"a",
    "a\\b",
    "é",
    "e\u{302}",
    "Ξ",
    "\u{1F600}",
    "\u{85}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{fffe}",
    "\u{ffff}",
    "\u{7f}",
    "\u{9f}",
    "\u{a0}",
    "\t",
    "\r",
    "\r\n",
    "\0",
    "\u{1b}",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any string written by `scalar_text` reads back as exactly that string, in fluxmend's
    /// parser and in yaml-rust2's resolution of plain scalars (`0x1F` would be a number).
    #[test]
    fn scalar_text_reads_back_as_the_same_string(
        value in prop_oneof![
            any::<String>(),
            "[a-zA-Z0-9._/@ :#'\"-]{0,8}",
            prop::sample::select(AWKWARD).prop_map(str::to_string),
            (prop::sample::select(AWKWARD), "[a-z0-9.]{0,3}").prop_map(|(a, b)| format!("{a}{b}")),
        ]
    ) {
        let text = format!("key: {}\n", edit::scalar_text(&value));
        let (file, err) = YamlFile::parse(&text);
        prop_assert_eq!(err, None, "{:?} does not parse", text);
        let parsed = values(&file);
        let Value::Map(entries) = &parsed[0] else {
            panic!("a mapping: {parsed:?}");
        };
        prop_assert_eq!(entries[0].1.as_str(), Some(value.as_str()), "{:?}", text);
        let docs = yaml_rust2::YamlLoader::load_from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(
            &docs[0]["key"],
            &yaml_rust2::Yaml::String(value.clone()),
            "{:?}",
            text
        );
    }
}
