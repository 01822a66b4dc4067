//! The names an object may refer to: every scalar value outside its own `metadata`, borrowed
//! from its file's text where the tree is the data, read as data where it is not.

use std::borrow::Cow;

use rustc_hash::FxHashSet as HashSet;

use crate::model::{Model, ObjectIdx};
use crate::parse::{
    Entries, NodeId, NodeKind, ScalarStyle, VALUE_NODE_BUDGET, Value, YamlFile, is_null,
};

/// Every scalar value of an object outside its own `metadata`, borrowed from its file's text
/// (owned only when merge keys or repeated keys make the data differ from the tree).
pub(super) type Scalars<'m> = HashSet<Cow<'m, str>>;

pub(super) fn collect_scalars(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Str(s, _) => {
            out.insert(s.clone());
        }
        Value::Seq(items) => items.iter().for_each(|i| collect_scalars(i, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| collect_scalars(v, out)),
        Value::Null => {}
    }
}

/// Every scalar value of an object outside its own `metadata` (what [`collect_scalars`] finds
/// in the object's data), borrowed from the file's text: converting every object of a fleet to
/// data to copy its strings out was FM002's largest cost in time and memory.
pub(super) fn object_scalars<'m>(model: &'m Model, idx: ObjectIdx) -> Scalars<'m> {
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let mut out = HashSet::default();
    let mut budget = VALUE_NODE_BUDGET;
    match borrowed_scalars(yaml, obj.root, Top::Object, &mut budget, &mut out) {
        Ok(()) => out,
        // The data is not converted past the budget: nothing is named.
        Err(Walk::Budget) => HashSet::default(),
        // Merge keys or repeated keys: read the data as conversion builds it.
        Err(Walk::Data) => {
            let mut owned = HashSet::default();
            if let Ok(Value::Map(entries)) = yaml.value(obj.root) {
                for (k, v) in &entries {
                    if k.as_str() != Some("metadata") {
                        collect_scalars(v, &mut owned);
                    }
                }
            }
            owned.into_iter().map(Cow::Owned).collect()
        }
    }
}

/// Where [`borrowed_scalars`] is in an object.
#[derive(Clone, Copy, PartialEq)]
enum Top {
    /// The object's root: its `metadata` is left out.
    Object,
    /// Inside a value whose scalars are collected.
    Collect,
    /// Inside `metadata`: only counted against the budget.
    Skip,
}

/// Why [`borrowed_scalars`] stopped.
enum Walk {
    /// Over [`VALUE_NODE_BUDGET`] nodes, where [`YamlFile::value`] refuses the conversion.
    Budget,
    /// A mapping whose data is not its entries as written (a merge key, a key that repeats or
    /// may repeat as data: null, an alias, a collection): the tree is not the data.
    Data,
}

/// The scalars of node `id` as [`YamlFile::value`] converts it (nulls left out, aliases
/// followed, every node visited counted against `budget` the same way), borrowed from the text.
fn borrowed_scalars<'y>(
    yaml: &'y YamlFile,
    id: NodeId,
    top: Top,
    budget: &mut usize,
    out: &mut Scalars<'y>,
) -> Result<(), Walk> {
    *budget = budget.checked_sub(1).ok_or(Walk::Budget)?;
    match yaml.node(id).kind {
        NodeKind::Scalar { style, tag, .. } => {
            let text = yaml.scalar_text(id);
            let null = style == ScalarStyle::Plain
                && tag != Some("tag:yaml.org,2002:str")
                && is_null(text);
            if top == Top::Collect && !null {
                out.insert(Cow::Borrowed(text));
            }
        }
        NodeKind::Alias { target: Some(t) } => borrowed_scalars(yaml, t, top, budget, out)?,
        NodeKind::Alias { target: None } => {}
        NodeKind::Sequence { items, .. } => {
            // An object whose root is a sequence names nothing (it is no mapping).
            let inner = if top == Top::Collect {
                Top::Collect
            } else {
                Top::Skip
            };
            for &item in items {
                borrowed_scalars(yaml, item, inner, budget, out)?;
            }
        }
        NodeKind::Mapping { entries, .. } => {
            if !plain_keys(yaml, entries) {
                return Err(Walk::Data);
            }
            for (k, v) in entries {
                let inner = match top {
                    Top::Object if yaml.scalar_text(k) == "metadata" => Top::Skip,
                    Top::Skip => Top::Skip,
                    _ => Top::Collect,
                };
                borrowed_scalars(yaml, k, Top::Skip, budget, out)?;
                borrowed_scalars(yaml, v, inner, budget, out)?;
            }
        }
    }
    Ok(())
}

/// Whether a mapping's data is its entries as written: every key a scalar (no alias, no
/// collection), none null or the merge key `<<`, no two alike.
fn plain_keys(yaml: &YamlFile, entries: Entries<'_>) -> bool {
    let mut keys: Vec<&str> = Vec::with_capacity(entries.len());
    for (k, _) in entries {
        let NodeKind::Scalar { style, .. } = yaml.node(k).kind else {
            return false;
        };
        let text = yaml.scalar_text(k);
        if text == "<<" || (style == ScalarStyle::Plain && is_null(text)) {
            return false;
        }
        keys.push(text);
    }
    if keys.len() <= 16 {
        return (1..keys.len()).all(|i| !keys[..i].contains(&keys[i]));
    }
    let mut seen = HashSet::default();
    keys.iter().all(|k| seen.insert(*k))
}
