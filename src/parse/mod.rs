//! Span-accurate YAML: one node tree per document, every node with the exact byte range of its
//! text. Everything downstream (model, rules, edits) speaks these byte ranges, so they must be exact.
//!
//! saphyr-parser gives start markers (in characters); [`ends`] re-reads the source to find
//! where each node really ends (DESIGN.md §4).
//!
//! Each file has one job and imports only the files listed after it: `build` (the parse),
//! `lenient` (what go-yaml accepts that saphyr-parser refuses), `ends` (where each node ends),
//! `value` (a node as plain data), `file` (a parsed file and reading its nodes), `node` (a node,
//! its span and kind, and how the arena packs it).

mod build;
mod ends;
mod file;
mod lenient;
mod node;
mod value;

pub use build::MAX_NESTING;
pub use file::{Document, LineEnding, ParseError, YamlFile};
pub use node::{Entries, EntriesIter, Node, NodeId, NodeKind, ScalarStyle, Span};
pub(crate) use value::is_null;
pub use value::{AliasBudgetExceeded, VALUE_NODE_BUDGET, Value};

#[cfg(test)]
mod tests;
