//! kustomize patches as data: which objects a `target` selects (kind, name, namespace, group,
//! version, labelSelector, annotationSelector, as kustomize's `Selector` reads them), which
//! fields a patch sets, and its effect on an object's content (strategic merge or JSON6902).
//! FluxInstance `spec.kustomize.patches` and kustomization `patches` entries share this shape.
//!
//! Each file has one job and imports only the files listed after it: `apply` (a patch's effect
//! on an object's content), `body` (what a patch is and which fields it writes), `selector`
//! (which objects a target selects).

mod apply;
mod body;
mod selector;

pub use body::{FieldPath, JsonOp, PatchBody, fields_overlap};
pub use selector::{Labels, Selection, Selector, is_regex};
