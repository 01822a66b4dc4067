use super::node::{LINE_BLOCK, MAX_TEXT};
use super::*;
use proptest::prelude::*;

fn parse_ok(text: &str) -> YamlFile {
    let (file, err) = YamlFile::parse(text);
    assert_eq!(err, None, "parse error in {text:?}");
    file
}

/// Every node's text, re-parsed on its own (indented to its column), means the node's value.
fn assert_spans_reparse(file: &YamlFile) {
    for (id, node) in file.node_ids().map(|id| (id, file.node(id))) {
        if contains_alias(file, id) {
            continue;
        }
        let expected = file.value(id).unwrap();
        let slice = file.slice(node.span);
        if slice.is_empty() {
            assert_eq!(expected, Value::Null, "empty span for non-null node {id}");
            continue;
        }
        let col = node.span.start - file.line_start(node.span.start);
        let reparsed_text = format!("{}{}\n", " ".repeat(col), slice);
        let (again, err) = YamlFile::parse(&reparsed_text);
        assert_eq!(err, None, "node {id} slice {slice:?} does not re-parse");
        let got = again.value(again.docs()[0].root).unwrap();
        // A span excludes the node's properties, so a `!!str` tag is not in it.
        let tagged = matches!(node.kind, NodeKind::Scalar { tag: Some(_), .. });
        if tagged {
            assert_eq!(
                unquote(got),
                unquote(expected),
                "node {id}: slice {slice:?}"
            );
        } else {
            assert_eq!(got, expected, "node {id}: slice {slice:?}");
        }
    }
}

fn contains_alias(file: &YamlFile, id: NodeId) -> bool {
    match file.node(id).kind {
        NodeKind::Alias { .. } => true,
        NodeKind::Scalar { .. } => false,
        NodeKind::Sequence { items, .. } => items.iter().any(|&i| contains_alias(file, i)),
        NodeKind::Mapping { entries, .. } => entries
            .iter()
            .any(|(k, v)| contains_alias(file, k) || contains_alias(file, v)),
    }
}

const SAMPLE: &str = "# head
apiVersion: v1   # c
kind: ConfigMap
metadata:
  name: &n é-name
  labels: {a: \"x\", b: 'y'}
data:
  k: |
    line1
    ünï

  list:
  - a
  - &x b
  -   - nested
  seq2:
    - key: v
      other: *n
  empty: []
  ? complex
  : val
  folded: >-
    one
    two
  multi: plain text
    continued here
  nothing:
  tagged: !!str 12
---
- x
...
";

#[test]
fn spans_cover_exactly_the_node_text() {
    let file = parse_ok(SAMPLE);
    assert_eq!(file.docs().len(), 2);
    let root = file.docs()[0].root;
    let text_of = |keys: &[&str]| file.slice(file.node(file.lookup(root, keys).unwrap()).span);
    assert_eq!(text_of(&["apiVersion"]), "v1");
    assert_eq!(text_of(&["metadata", "name"]), "é-name");
    assert_eq!(text_of(&["metadata", "labels"]), "{a: \"x\", b: 'y'}");
    assert_eq!(text_of(&["data", "k"]), "|\n    line1\n    ünï");
    assert_eq!(text_of(&["data", "list"]), "- a\n  - &x b\n  -   - nested");
    assert_eq!(text_of(&["data", "empty"]), "[]");
    assert_eq!(text_of(&["data", "folded"]), ">-\n    one\n    two");
    assert_eq!(
        text_of(&["data", "multi"]),
        "plain text\n    continued here"
    );
    assert_eq!(text_of(&["data", "nothing"]), "");
    assert_eq!(text_of(&["data", "tagged"]), "12");
    assert_eq!(text_of(&["data", "seq2"]), "- key: v\n      other: *n");
    let other = file.lookup(root, &["data", "seq2"]).unwrap();
    let item = file.items(other)[0];
    assert_eq!(
        file.slice(file.node(file.lookup(item, &["other"]).unwrap()).span),
        "*n"
    );
    assert_eq!(
        file.scalar(file.lookup(item, &["other"]).unwrap()),
        Some("é-name")
    );
    // Block sequence items know their dash.
    let list = file.lookup(root, &["data", "list"]).unwrap();
    let dashes: Vec<_> = file
        .items(list)
        .iter()
        .map(|&i| file.node(i).dash.map(|d| &file.text()[d..d + 2]))
        .collect();
    assert_eq!(dashes, vec![Some("- "); 3]);
    // Regions tile the file; the second starts at its `---`.
    assert_eq!(file.docs()[0].region().start, 0);
    assert_eq!(file.docs()[0].region().end, file.docs()[1].region().start);
    assert!(file.text()[file.docs()[1].region().start..].starts_with("---"));
    assert_eq!(file.docs()[1].region().end, file.text().len());
    assert_spans_reparse(&file);
}

#[test]
fn crlf_bom_and_line_columns() {
    let text = "\u{feff}a: 1\r\nb:\r\n  - x\r\n  - \"y\"\r\nc: |\r\n  ü line\r\n  two\r\n";
    let file = parse_ok(text);
    assert!(file.bom);
    assert_eq!(file.line_ending, LineEnding::CrLf);
    let root = file.docs()[0].root;
    assert_eq!(
        file.slice(file.node(file.lookup(root, &["c"]).unwrap()).span),
        "|\r\n  ü line\r\n  two"
    );
    assert_eq!(
        file.slice(file.node(file.lookup(root, &["b"]).unwrap()).span),
        "- x\r\n  - \"y\""
    );
    let y = file.items(file.lookup(root, &["b"]).unwrap())[1];
    assert_eq!(file.line_col(file.node(y).span.start), (4, 5));
}

#[test]
fn redefined_anchors_resolve_to_the_latest_definition() {
    let file = parse_ok("a: &x one\nb: *x\nc: &x two\nd: *x\n");
    let root = file.docs()[0].root;
    assert_eq!(file.scalar(file.lookup(root, &["b"]).unwrap()), Some("one"));
    assert_eq!(file.scalar(file.lookup(root, &["d"]).unwrap()), Some("two"));
}

#[test]
fn alias_bombs_hit_the_budget_instead_of_memory() {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let p = i - 1;
        text.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    let file = parse_ok(&text);
    assert_eq!(file.value(file.docs()[0].root), Err(AliasBudgetExceeded));
}

#[test]
fn merge_keys_merge() {
    let file = parse_ok("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3\n");
    let v = file.value(file.docs()[0].root).unwrap();
    assert_eq!(v.str_at(&["d", "x"]), Some("1"));
    assert_eq!(v.str_at(&["d", "y"]), Some("3"));
}

#[test]
fn syntax_errors_keep_earlier_documents() {
    let (file, err) = YamlFile::parse("a: 1\n---\nb: [1, 2\n");
    let err = err.expect("an error");
    assert_eq!(file.docs().len(), 1);
    assert!(err.line >= 3, "{err}");
}

#[test]
fn collections_a_syntax_error_left_open_read_as_empty() {
    let (file, err) = YamlFile::parse("a: 1\n---\nb:\n  c: [1, 2\n");
    assert!(err.is_some());
    for id in file.node_ids() {
        let node = file.node(id);
        if node.span.start >= file.docs()[0].region().end {
            match node.kind {
                NodeKind::Mapping { entries, .. } => assert!(entries.is_empty(), "{id}"),
                NodeKind::Sequence { items, .. } => assert!(items.is_empty(), "{id}"),
                _ => {}
            }
        }
    }
}

#[test]
fn ends_beyond_a_records_length_field_are_kept() {
    // A scalar of 16 MiB or more, and aliases: their ends are stored beside the records.
    let long = "x".repeat(1 << 24);
    let text = format!("- &a {long}\n- *a\n- [*a, b]\n");
    let file = parse_ok(&text);
    let items = file.items(file.docs()[0].root);
    let span = |id: NodeId| file.node(id).span;
    assert_eq!(span(items[0]), Span::new(5, 5 + long.len()));
    let alias = text.find("*a").unwrap();
    assert_eq!(span(items[1]), Span::new(alias, alias + 2));
    assert_eq!(file.node(items[1]).dash, Some(alias - 2));
    let flow = file.items(items[2]);
    assert_eq!(file.slice(span(flow[0])), "*a");
    assert_eq!(file.slice(span(flow[1])), "b");
    assert_eq!(file.slice(span(items[2])), "[*a, b]");
}

#[test]
fn a_mapping_with_a_collection_key_keeps_its_pairs() {
    // Its values do not follow their keys, so its entries are stored as pairs.
    let (file, err) = YamlFile::parse("? [a, b]\n: 1\nc: 2\n");
    assert!(err.is_some());
    let map = file
        .node_ids()
        .find(|&id| matches!(file.node(id).kind, NodeKind::Mapping { .. }))
        .unwrap();
    let entries = file.entries(map);
    assert_eq!(entries.len(), 2);
    let texts: Vec<(&str, &str)> = entries
        .iter()
        .map(|(k, v)| (file.slice(file.node(k).span), file.scalar_text(v)))
        .collect();
    assert_eq!(texts, [("[a, b]", "1"), ("c", "2")]);
    assert_eq!(entries.last(), entries.iter().next_back());
}

// ---- property test: random documents, every span re-parses to its node's value ----

#[derive(Clone, Debug)]
enum Gen {
    Scalar(String),
    Map(Vec<(String, Gen)>),
    Seq(Vec<Gen>),
}

fn gen_tree() -> impl Strategy<Value = Gen> {
    let word = "[a-zA-Z0-9é☃ ._/-]{1,12}"
        .prop_map(|s| s.trim().to_string())
        .prop_filter("non-empty", |s| !s.is_empty());
    let leaf = prop_oneof![
        word.clone().prop_map(Gen::Scalar),
        "[a-z ü]{1,10}\n[a-z ]{0,10}".prop_map(Gen::Scalar),
    ];
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(("[a-z][a-z0-9-]{0,8}", inner.clone()), 1..5).prop_map(
                |entries| {
                    let mut seen = std::collections::HashSet::new();
                    Gen::Map(
                        entries
                            .into_iter()
                            .filter(|(k, _)| seen.insert(k.clone()))
                            .collect(),
                    )
                }
            ),
            prop::collection::vec(inner, 1..5).prop_map(Gen::Seq),
        ]
    })
}

/// Styles chosen per node from a stream of random choices.
struct Emitter<'a> {
    out: String,
    choices: &'a [u8],
    n: usize,
    eol: &'static str,
}

impl Emitter<'_> {
    fn pick(&mut self, k: u8) -> u8 {
        let c = self.choices[self.n % self.choices.len()] % k;
        self.n += 1;
        c
    }

    fn scalar_inline(&mut self, s: &str) -> String {
        let plain_ok = !s.contains('\n')
            && s.chars()
                .all(|c| c.is_alphanumeric() || " ._/é☃".contains(c))
            && !s.starts_with(['-', '.', ' '])
            && !["null", "true", "false", "~", "yes", "no"]
                .contains(&s.to_ascii_lowercase().as_str())
            && s.parse::<f64>().is_err();
        match self.pick(3) {
            0 if plain_ok => s.to_string(),
            1 if !s.contains('\n') => format!("'{}'", s.replace('\'', "''")),
            _ => format!("{s:?}").replace("\\u{e9}", "é"),
        }
    }

    fn comment(&mut self) -> &'static str {
        if self.pick(4) == 0 {
            "  # note: - x"
        } else {
            ""
        }
    }

    fn flow(&mut self, g: &Gen) -> String {
        match g {
            Gen::Scalar(s) => self.scalar_inline(s),
            Gen::Seq(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|i| self.flow(i))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Gen::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", self.flow(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Emit `g` as the value after `key:` or `- ` at `indent`.
    fn value(&mut self, g: &Gen, indent: usize) {
        let eol = self.eol;
        match g {
            Gen::Scalar(s) if s.contains('\n') && !s.ends_with('\n') && self.pick(2) == 0 => {
                let pad = " ".repeat(indent + 2);
                let body: Vec<_> = s.lines().collect();
                if body
                    .iter()
                    .any(|l| l.trim().is_empty() || l.starts_with(' ') || l.ends_with(' '))
                {
                    let text = self.scalar_inline(s);
                    self.out.push_str(&format!(" {text}{eol}"));
                    return;
                }
                let c = self.comment();
                self.out.push_str(&format!(" |-{c}{eol}"));
                for l in body {
                    self.out.push_str(&format!("{pad}{l}{eol}"));
                }
            }
            Gen::Scalar(_) => {
                let text = self.flow(g);
                let c = self.comment();
                self.out.push_str(&format!(" {text}{c}{eol}"));
            }
            _ if self.pick(4) == 0 => {
                let text = self.flow(g);
                self.out.push_str(&format!(" {text}{eol}"));
            }
            _ => {
                let c = self.comment();
                self.out.push_str(&format!("{c}{eol}"));
                self.block(g, indent + 2);
            }
        }
    }

    fn block(&mut self, g: &Gen, indent: usize) {
        let pad = " ".repeat(indent);
        match g {
            Gen::Map(entries) => {
                for (k, v) in entries {
                    self.out.push_str(&format!("{pad}{k}:"));
                    self.value(v, indent);
                }
            }
            Gen::Seq(items) => {
                for item in items {
                    self.out.push_str(&format!("{pad}-"));
                    self.value(item, indent);
                }
            }
            Gen::Scalar(_) => self.value(g, indent),
        }
    }
}

fn gen_value(g: &Gen) -> Value {
    match g {
        Gen::Scalar(s) => Value::Str(s.clone(), true),
        Gen::Seq(items) => Value::Seq(items.iter().map(gen_value).collect()),
        Gen::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| (Value::Str(k.clone(), false), gen_value(v)))
                .collect(),
        ),
    }
}

/// Quoting is not part of the meaning compared here.
fn unquote(v: Value) -> Value {
    match v {
        Value::Str(s, _) => Value::Str(s, true),
        Value::Seq(items) => Value::Seq(items.into_iter().map(unquote).collect()),
        Value::Map(entries) => {
            Value::Map(entries.into_iter().map(|(k, v)| (k, unquote(v))).collect())
        }
        Value::Null => Value::Null,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]
    #[test]
    fn every_span_reparses_to_its_value(
        docs in prop::collection::vec(gen_tree(), 1..3),
        choices in prop::collection::vec(any::<u8>(), 1..64),
        crlf in any::<bool>(),
    ) {
        let mut e = Emitter { out: String::new(), choices: &choices, n: 0, eol: if crlf { "\r\n" } else { "\n" } };
        for (i, d) in docs.iter().enumerate() {
            if i > 0 || e.pick(2) == 0 {
                e.out.push_str(&format!("---{}", e.eol));
            }
            let d = match d { Gen::Scalar(_) => Gen::Map(vec![("k".into(), d.clone())]), other => other.clone() };
            e.block(&d, 0);
        }
        let (file, err) = YamlFile::parse(&e.out);
        prop_assert_eq!(err, None, "{}", e.out);
        prop_assert_eq!(file.docs().len(), docs.len());
        for (doc, g) in file.docs().iter().zip(&docs) {
            let g = match g { Gen::Scalar(_) => Gen::Map(vec![("k".into(), g.clone())]), other => other.clone() };
            let key_unquoted = |v: Value| unquote(v);
            prop_assert_eq!(key_unquoted(file.value(doc.root).unwrap()), unquote(gen_value(&g)));
        }
        assert_spans_reparse(&file);
    }
}

/// Lines are counted from a sparse index: every offset, across several index blocks, CRLF and
/// multi-byte characters included, gets the line, column and line start a full scan gives.
#[test]
fn line_numbers_match_a_full_scan() {
    let mut text = String::new();
    for i in 0..(3 * LINE_BLOCK + 7) {
        let ending = if i % 3 == 0 { "\r\n" } else { "\n" };
        let line = match i % 4 {
            0 => format!("k{i}: v{i}"),
            1 => format!("é{i}: \"ü\""),
            2 => String::new(),
            _ => format!("# comment {i}"),
        };
        text.push_str(&line);
        text.push_str(ending);
    }
    text.push_str("last: line");
    let file = parse_ok(&text);
    let (mut line, mut start) = (1, 0);
    for offset in 0..=text.len() {
        if !text.is_char_boundary(offset) {
            continue;
        }
        if offset > 0 && text.as_bytes()[offset - 1] == b'\n' {
            line += 1;
            start = offset;
        }
        let column = text[start..offset].chars().count() + 1;
        assert_eq!(file.line_of(offset), line, "line of {offset}");
        assert_eq!(file.line_start(offset), start, "line start of {offset}");
        assert_eq!(
            file.line_col(offset),
            (line, column),
            "line/col of {offset}"
        );
    }
    assert_eq!(file.line_of(text.len() + 10), line);
}

/// Duplicate keys are refused in small and large mappings alike (pairwise and hashed paths),
/// the first duplicate by position is the one reported, and merge keys may repeat.
#[test]
fn duplicate_keys_are_found_in_small_and_large_mappings() {
    let error_of = |text: &str| YamlFile::parse(text).1.map(|e| (e.line, e.message));
    let small = "a: 1\nb: 2\na: 3\n";
    let (line, message) = error_of(small).unwrap();
    assert_eq!(line, 3);
    assert!(
        message.contains("`a` already defined at line 1"),
        "{message}"
    );

    let mut large: String = (0..30).map(|i| format!("k{i}: {i}\n")).collect();
    large.push_str("k7: again\nk3: again\n");
    let (line, message) = error_of(&large).unwrap();
    assert_eq!(line, 31);
    assert!(
        message.contains("`k7` already defined at line 8"),
        "{message}"
    );

    // Two mappings with duplicates: the earlier duplicate wins, wherever its mapping starts.
    let nested = "outer:\n  x: 1\n  y: 2\n  x: 3\nlater:\n  p: 1\n  p: 2\n";
    assert_eq!(error_of(nested).unwrap().0, 4);

    let merges = "base: &b {a: 1}\nother: &o {c: 2}\nm:\n  <<: *b\n  <<: *o\n  d: 4\n";
    assert_eq!(error_of(merges), None);
}

/// Offsets are 32 bits: a text too large for them is refused with an error, not misplaced.
#[test]
fn text_beyond_32_bit_offsets_is_refused() {
    let (file, error) = YamlFile::parse_owned(format!("\u{feff}{}", " ".repeat(MAX_TEXT)));
    let error = error.expect("refused");
    assert_eq!((error.line, error.column), (1, 1));
    assert!(error.message.contains("256 MiB"), "{}", error.message);
    assert!(file.docs().is_empty() && file.bom);
}

fn str_value(s: &str) -> Value {
    Value::Str(s.into(), false)
}

fn value_at(file: &YamlFile, keys: &[&str]) -> Value {
    let node = file.lookup(file.docs()[0].root, keys).expect("key present");
    file.value(node).unwrap()
}

#[test]
fn a_flow_sequence_may_close_at_its_parents_indentation() {
    // go-yaml ignores indentation inside flow collections; YAML 1.2 does not.
    let text = "spec:\n  template:\n    args: [\n      --a,\n      --b\n  ]\n    other: 1\n";
    let file = parse_ok(text);
    let args = file.lookup(file.docs()[0].root, &["spec", "template", "args"]);
    assert_eq!(
        file.slice(file.node(args.unwrap()).span),
        "[\n      --a,\n      --b\n  ]"
    );
    assert_eq!(
        value_at(&file, &["spec", "template", "args"]),
        Value::Seq(vec![str_value("--a"), str_value("--b")])
    );
    assert_eq!(
        value_at(&file, &["spec", "template", "other"]),
        str_value("1")
    );
    assert_spans_reparse(&file);
}

#[test]
fn flow_items_and_closer_may_sit_left_of_their_key() {
    let text = "spec:\n  args: [\n--a,\n  --b\n]\n  map: {\na: b,\n c: [d,\ne]\n}\n  after: x\n";
    let file = parse_ok(text);
    assert_eq!(
        value_at(&file, &["spec", "args"]),
        Value::Seq(vec![str_value("--a"), str_value("--b")])
    );
    assert_eq!(
        value_at(&file, &["spec", "map"]),
        Value::Map(vec![
            (str_value("a"), str_value("b")),
            (
                str_value("c"),
                Value::Seq(vec![str_value("d"), str_value("e")])
            ),
        ])
    );
    assert_eq!(value_at(&file, &["spec", "after"]), str_value("x"));
    let map = file.lookup(file.docs()[0].root, &["spec", "map"]).unwrap();
    assert_eq!(file.line_col(file.node(map).span.end - 1), (10, 1));
    assert_spans_reparse(&file);
}

/// A flow collection with a trailing comma (JSON-style YAML written by hand) ends at its closing
/// bracket, not at the comma where the parser's end marker sits.
#[test]
fn a_flow_collection_with_a_trailing_comma_ends_at_its_bracket() {
    let text = "hc: [{\n  a: 1,\n  # note\n}, {b: [x, y,],\n},]\nnext: 1\n";
    let file = parse_ok(text);
    let root = file.docs()[0].root;
    let list = file.lookup(root, &["hc"]).unwrap();
    let items = file.items(list);
    assert_eq!(
        file.slice(file.node(items[0]).span),
        "{\n  a: 1,\n  # note\n}"
    );
    assert_eq!(file.slice(file.node(items[1]).span), "{b: [x, y,],\n}");
    let inner = file.lookup(items[1], &["b"]).unwrap();
    assert_eq!(file.slice(file.node(inner).span), "[x, y,]");
    assert_eq!(
        file.slice(file.node(list).span),
        "[{\n  a: 1,\n  # note\n}, {b: [x, y,],\n},]"
    );
    assert_spans_reparse(&file);
}

#[test]
fn a_quoted_scalar_may_continue_at_column_zero() {
    let text = "data:\n  motd: \"hello\nworld\"\n  single: 'a\n b'\n";
    let file = parse_ok(text);
    assert_eq!(
        value_at(&file, &["data", "motd"]),
        Value::Str("hello world".into(), true)
    );
    assert_eq!(
        value_at(&file, &["data", "single"]),
        Value::Str("a b".into(), true)
    );
    let motd = file.lookup(file.docs()[0].root, &["data", "motd"]).unwrap();
    assert_eq!(file.slice(file.node(motd).span), "\"hello\nworld\"");
}

#[test]
fn a_flow_sequence_may_hold_a_single_pair_mapping_with_a_flow_value() {
    let text = "host: &host example.com\ntls: [hosts: [*host]]\nrules: [a: [b, c], d]\n";
    let file = parse_ok(text);
    assert_eq!(
        value_at(&file, &["tls"]),
        Value::Seq(vec![Value::Map(vec![(
            str_value("hosts"),
            Value::Seq(vec![str_value("example.com")])
        )])])
    );
    assert_eq!(
        value_at(&file, &["rules"]),
        Value::Seq(vec![
            Value::Map(vec![(
                str_value("a"),
                Value::Seq(vec![str_value("b"), str_value("c")])
            )]),
            str_value("d"),
        ])
    );
}

#[test]
fn indentation_go_yaml_rejects_stays_an_error() {
    // Block context: a key left of its siblings ends the mapping, and what follows is invalid.
    let (_, err) = YamlFile::parse("a:\n  b: 1\n c: 2\n");
    assert!(err.is_some());
    // A flow collection that never closes is an error however its lines are indented.
    let (_, err) = YamlFile::parse("a:\n  b: [\nx,\ny\nc: 1\n");
    assert!(err.is_some());
    // After a re-indented flow collection, a later error is reported at its place in the file.
    let (_, err) = YamlFile::parse("a:\n  b: [\n  x\n]\n  c: @bad\n");
    let err = err.expect("`@` cannot start a plain scalar");
    assert_eq!((err.line, err.column), (5, 6), "{err}");
}

#[test]
fn an_alias_followed_by_a_colon_is_a_mapping_key() {
    // go-yaml's anchor and alias names are `[A-Za-z0-9_-]`: the `:` ends the alias `app`, which
    // is then a key. YAML 1.2 reads the alias `app:` and finds no such anchor.
    let text = "name: &app ipmi\ncontrollers:\n  *app:\n    strategy: RollingUpdate\n  other: {*app: 1, b: *app}\nafter: *app\n";
    let file = parse_ok(text);
    assert_eq!(
        value_at(&file, &["controllers", "ipmi", "strategy"]),
        str_value("RollingUpdate")
    );
    assert_eq!(
        value_at(&file, &["controllers", "other"]),
        Value::Map(vec![
            (str_value("ipmi"), str_value("1")),
            (str_value("b"), str_value("ipmi")),
        ])
    );
    assert_eq!(value_at(&file, &["after"]), str_value("ipmi"));
    let controllers = file.lookup(file.docs()[0].root, &["controllers"]).unwrap();
    let (key, _) = file.entries(controllers).first().unwrap();
    assert_eq!(file.slice(file.node(key).span), "*app");
    assert_eq!(file.line_col(file.node(key).span.start), (3, 3));
    // An alias naming no anchor at all stays an error, where go-yaml reports it.
    let (_, err) = YamlFile::parse("a:\n  *nothing:\n    b: 1\n");
    let err = err.expect("unknown anchor");
    assert_eq!((err.line, err.column), (2, 3), "{err}");
}

/// A scalar read straight from its node's record is what the unpacked node says (its stored
/// value, else its span's text, quotes excluded), whatever the node and its style: plain,
/// quoted (with and without escapes), block, tagged, aliased, empty, long, and not a scalar;
/// and a key is found by that text.
#[test]
fn a_scalar_reads_as_its_unpacked_node_says() {
    let long = "x".repeat(1 << 24);
    let text = format!(
        "plain: 1\n'single': 2\n\"double\": 3\n\"esc\\tape\": 4\n'it''s': 5\n!!str tagged: 6\n\
         ? |\n  block\n: 7\nx: &a anchored\n*a : 9\n\"\": 10\ne: ''\nlist: [a, 'b', \"c\"]\n\
         map: {{k: v}}\nlong: '{long}'\n"
    );
    let file = parse_ok(&text);
    for id in file.node_ids() {
        let node = file.node(id);
        let unpacked = match node.kind {
            NodeKind::Scalar { value: Some(v), .. } => Some(v),
            NodeKind::Scalar {
                style: ScalarStyle::SingleQuoted | ScalarStyle::DoubleQuoted,
                ..
            } => Some(&file.text()[node.span.start + 1..node.span.end - 1]),
            NodeKind::Scalar { .. } => Some(file.slice(node.span)),
            _ => None,
        };
        assert_eq!(file.scalar_in(id), unpacked, "node {id}");
    }
    let root = file.docs()[0].root;
    for (key, value) in [
        ("single", "2"),
        ("esc\tape", "4"),
        ("it's", "5"),
        ("tagged", "6"),
        ("block\n", "7"),
        ("anchored", "9"),
        ("", "10"),
    ] {
        let (_, v) = file.entry(root, key).unwrap_or_else(|| panic!("{key:?}"));
        assert_eq!(file.scalar(v), Some(value), "{key:?}");
    }
    for absent in ["'single'", "\"double\"", "esc\\tape", "it''s", "block", "a"] {
        assert_eq!(file.entry(root, absent), None, "{absent:?}");
    }
    assert_eq!(
        file.scalar(file.lookup(root, &["long"]).unwrap()),
        Some(long.as_str())
    );
}

/// `entries` and `items` read a collection from its record: they must list what the unpacked
/// node lists, for block and flow collections, empty ones, aliases of them, other nodes, and
/// the paired entries a collection key makes (an error, but the nodes stay in the arena).
#[test]
fn collections_read_as_their_unpacked_nodes_say() {
    let text = "a: &m {k: v, l: [1, 2]}\nb: *m\nc:\n  - x\n  - &s [y, z]\n  - *s\nd: []\n\
                e: {}\nf:\n  g: h\nscalar: &t text\nalias: *t\n";
    let paired = "f:\n  g: h\n  ? [complex]\n  : key\n";
    for (text, error) in [(text, false), (paired, true)] {
        let (file, err) = YamlFile::parse(text);
        assert_eq!(err.is_some(), error, "{text:?}");
        for id in file.node_ids() {
            let (entries, items) = match file.resolve(id).map(|t| file.node(t).kind) {
                Some(NodeKind::Mapping { entries, .. }) => (entries, &[][..]),
                Some(NodeKind::Sequence { items, .. }) => (Entries::default(), items),
                _ => (Entries::default(), &[][..]),
            };
            assert_eq!(file.entries(id), entries, "node {id} of {text:?}");
            assert_eq!(file.items(id), items, "node {id} of {text:?}");
        }
    }
    let file = parse_ok(text);
    let root = file.docs()[0].root;
    let b = file.lookup(root, &["b"]).unwrap();
    assert_eq!(file.entries(b).len(), 2);
    let c = file.lookup(root, &["c"]).unwrap();
    assert_eq!(file.items(c).len(), 3);
    assert_eq!(file.items(file.items(c)[2]).len(), 2);
    let (file, _) = YamlFile::parse(paired);
    let f = file
        .node_ids()
        .find(|&id| file.scalar_in(id) == Some("f"))
        .unwrap()
        + 1;
    assert_eq!(file.entries(f).len(), 2);
}

/// Files that share one storage (as the loader's batches do) read exactly as each did alone:
/// text, every node (kind, span, dash, stored values and tags), entries, items and lines; and
/// the storage holds each text once.
#[test]
fn files_sharing_their_storage_read_as_they_did_alone() {
    let long = "k: v\n".repeat(3 * LINE_BLOCK);
    let texts = [
        "a: 1\nb: [x, y]\n",
        "\u{feff}- &a {k: v}\n- *a\n---\nc: 'q'\n",
        "",
        "x: !!str 3\ny: \"two\\nlines\"\nz:\n  - p\n  - q\n",
        long.as_str(),
    ];
    let alone: Vec<YamlFile> = texts.iter().map(|t| YamlFile::parse(t).0).collect();
    let mut shared = alone.clone();
    YamlFile::share_storage(&mut shared.iter_mut().collect::<Vec<_>>());
    for pair in shared.windows(2) {
        let end = pair[0].text().as_bytes().as_ptr_range().end;
        assert_eq!(pair[1].text().as_ptr(), end, "texts one after another");
    }
    for (a, s) in alone.iter().zip(&shared) {
        assert!(std::sync::Arc::ptr_eq(&s.storage, &shared[0].storage));
        assert_eq!(a.text(), s.text());
        assert_eq!((a.bom, a.line_ending), (s.bom, s.line_ending));
        assert_eq!(a.node_ids(), s.node_ids());
        for id in a.node_ids() {
            let node = a.node(id);
            assert_eq!(node, s.node(id), "node {id} of {:?}", a.text());
            assert_eq!(a.entries(id), s.entries(id));
            assert_eq!(a.items(id), s.items(id));
            assert_eq!(a.scalar(id), s.scalar(id));
            assert_eq!(a.line_of(node.span.end), s.line_of(node.span.end));
        }
    }
}
