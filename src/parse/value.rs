//! A node as plain data (`Value`), aliases expanded under a budget.

use rustc_hash::FxHashMap as HashMap;

use super::file::YamlFile;
use super::node::{Entries, NodeId, NodeKind, ScalarStyle};

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
        entries: Entries<'_>,
        budget: &mut usize,
    ) -> Result<Value, AliasBudgetExceeded> {
        let mut out = MapBuilder::with_capacity(entries.len());
        for (k, v) in entries {
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
}

/// The entries of a mapping being converted, in order, each key once: linear in the number of
/// entries (a mapping of 200,000 keys was quadratic), a hash index built only once a mapping is
/// larger than a few entries.
pub(super) struct MapBuilder {
    pub(super) entries: Vec<Option<(Value, Value)>>,
    pub(super) index: Option<HashMap<Value, usize>>,
}

/// Below this many entries a linear search is cheaper than hashing.
pub(super) const MAP_INDEX_FROM: usize = 16;

impl MapBuilder {
    pub(super) fn with_capacity(n: usize) -> MapBuilder {
        MapBuilder {
            entries: Vec::with_capacity(n),
            index: None,
        }
    }

    pub(super) fn position(&mut self, key: &Value) -> Option<usize> {
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

    pub(super) fn push(&mut self, key: Value, value: Value) {
        if let Some(index) = &mut self.index {
            index.insert(key.clone(), self.entries.len());
        }
        self.entries.push(Some((key, value)));
    }

    /// An explicit entry: it replaces an earlier one of the same key, and comes last.
    pub(super) fn replace(&mut self, key: Value, value: Value) {
        if let Some(i) = self.position(&key) {
            self.entries[i] = None;
        }
        self.push(key, value);
    }

    /// A merge key's value: the entries of its mapping (or mappings) whose keys are not there.
    pub(super) fn merge(&mut self, merged: Value) {
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

    pub(super) fn finish(self) -> Vec<(Value, Value)> {
        self.entries.into_iter().flatten().collect()
    }
}

pub(crate) fn is_null(s: &str) -> bool {
    matches!(s, "" | "~" | "null" | "Null" | "NULL")
}
