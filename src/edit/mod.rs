//! Lossless edits: byte-range replacements planned on the span tree, in each file's own line
//! ending and indentation, so that every byte outside an edit stays exactly as it was.
//!
//! Each file has one job and imports only the files listed after it: `insert` (an item or an
//! entry inserted, a node replaced), `remove` (an item or an entry removed with its comments),
//! `block` (a document inside a block scalar), `text` (YAML text for values, nodes and ranges),
//! `changeset` (byte-range edits per file, applied to a text).

mod block;
mod changeset;
mod insert;
mod remove;
mod text;

pub use block::BlockDocument;
pub use changeset::{Changeset, EditError, FileOp, TextEdit, apply};
pub use insert::{insert_entry, insert_item, replace_node};
pub use remove::{clear_sequence, remove_entry, remove_item};
pub use text::{
    after_line, document_region, double_quoted, inline_text, resolved_text, scalar_text,
    value_block_lines, value_flow_text,
};
