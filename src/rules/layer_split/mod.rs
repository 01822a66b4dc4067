//! Planning helpers shared by the rules that split objects out of a Flux layer into a new one
//! beside it (FM001, FM002): where an object entered a layer, removing `resources` entries,
//! free names, copying settings of the old Flux Kustomization, and registering the new one in
//! the same style as the old.
//!
//! Each file has one job and imports only the files listed after it: `register` (the new layer
//! registered beside the old), `protect` (the two phases of a move off a pruning layer),
//! `document` (the new layer's text), `carried` (what it carries of the old and what not),
//! `entries` (the entries a move finds and removes), `places` (names, folders and paths).

mod carried;
mod document;
mod entries;
mod places;
mod protect;
mod register;

pub(super) use carried::{CARRIED, not_carried_patches};
pub(super) use document::{
    copy_entry, copy_entry_nodes, entry_text, layer_document_head, modelines, spec_indent,
};
pub(super) use entries::{
    bringing_entry, drop_spec_entries, entry_location, remove_items, remove_resource_entry,
    resources_list,
};
pub(super) use places::{
    built_elsewhere, first_free, free_name, generated_cover, path_text, relative_below,
};
pub(super) use protect::{needs_protection, protect_first, second_phase};
pub(super) use register::register;
