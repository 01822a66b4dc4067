//! Removing an item of a sequence or an entry of a mapping, with the comments that are about
//! it, in block and flow style.

use crate::parse::{NodeId, NodeKind, YamlFile};

use super::changeset::{EditError, TextEdit};

use super::text::after_line;

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
    let text = file.text();
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
    let text = file.text();
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
    let entries: Vec<(NodeId, NodeId)> = entries.iter().collect();
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
    let text = file.text();
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

#[cfg(test)]
mod comment_tests {
    use super::*;
    use crate::edit::apply;

    /// `text` after removing the `resources` item whose value is `value`.
    fn without(text: &str, value: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let root = file.docs()[0].root;
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
        let items = file.items(file.docs()[0].root).to_vec();
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
mod flow_entry_tests {
    use super::*;
    use crate::edit::apply;

    /// `text` after removing the entry `key` of the mapping at `path` (the document root when
    /// empty).
    fn without(text: &str, path: &[&str], key: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let root = file.docs()[0].root;
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
                .lookup(reparsed.docs()[0].root, &[path, &[key]].concat())
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
        let map = file.lookup(file.docs()[0].root, &["spec"]).unwrap();
        let (k, _) = file.entry(map, "a").unwrap();
        assert!(remove_entry(&file, map, k).is_err());
    }
}

#[cfg(test)]
mod clear_tests {
    use super::*;
    use crate::edit::apply;

    fn cleared(text: &str) -> String {
        let (file, err) = YamlFile::parse(text);
        assert!(err.is_none(), "{err:?}");
        let list = file.lookup(file.docs()[0].root, &["resources"]).unwrap();
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
    use crate::edit::apply;

    /// The only item of a multi-line flow sequence, a flow mapping with a trailing comma: the
    /// list is left `[]` (its closing brace went with it).
    #[test]
    fn the_only_flow_item_goes_whole() {
        let text = "hc: [{\n  a: 1,\n}]\nnext: 1\n";
        let (file, _) = YamlFile::parse(text);
        let list = file.lookup(file.docs()[0].root, &["hc"]).unwrap();
        let item = file.items(list)[0];
        let e = remove_item(&file, list, item).unwrap();
        assert_eq!(apply(text, &[e]).unwrap(), "hc: []\nnext: 1\n");
    }
}
