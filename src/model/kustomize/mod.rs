//! kustomize directories: what each kustomization file lists and how it changes identities, and
//! a renderer that computes the objects a directory builds to — the same set `kustomize build`
//! renders (checked against `kubectl kustomize` in the tests).
//!
//! Each file has one job and imports only the files listed after it: `render` (the renderer),
//! `read` (a kustomization file read into a `KustomizeDir`), `patches` (the patches on an
//! object's way), `dir` (the directory's types, the files it names, whether its build is fully
//! known), `transformers` (its `transformers:` and `replacements:`), `rendered` (one rendered
//! object and the identity transforms), `builtin` (what kustomize knows built in).

mod builtin;
mod dir;
mod patches;
mod read;
mod render;
mod rendered;
mod transformers;

pub use builtin::{KUSTOMIZATION_FILE_NAMES, is_namespaced};
pub use dir::{KustomizeDir, RefTarget, ResourceRef, display_dir};
pub(super) use dir::{NAMED_FILE_FIELDS, patch_only_files};
pub use patches::PatchOnTheWay;
pub(super) use read::parse_dirs;
pub use render::{Renderer, apply_renames, check_unique, is_identity_conflict};
pub use rendered::{Chain, Rendered, Transform};
