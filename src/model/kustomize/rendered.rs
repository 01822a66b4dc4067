//! One object as a directory renders it, and the identity transforms (`namespace:`,
//! `namePrefix`, `nameSuffix`) applied on top of it.

use std::sync::Arc;

use crate::load::FileId;
use crate::model::{Name, ObjectIdx, ObjectKey};

use super::builtin::{is_namespaced, keeps_its_name};

/// Kustomization files, outermost first.
pub type Chain = Arc<[FileId]>;

/// One object a directory renders: which object, its identity after the transformers, and the
/// chain of kustomization files (outermost first) that brought it in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub object: ObjectIdx,
    pub key: ObjectKey,
    /// Shared by the entries a kustomization brings in through the same files: a fleet's
    /// inventories hold ~5 times as many entries as distinct chains, each kept by every model
    /// (issue 26).
    pub chain: Chain,
}

// A fleet's inventories hold hundreds of thousands of entries in every model: a generated
// object's hash suffix is the model's ([`crate::model::Model::hash_suffix`]), not each
// entry's, and ids are 32 bits (issue 26).
const _: () = assert!(std::mem::size_of::<Rendered>() == 56);

/// Identity transformers applied on top of a set of rendered objects.
#[derive(Clone, Debug, Default)]
pub struct Transform<'a> {
    pub namespace: Option<Name>,
    pub prefix: &'a str,
    pub suffix: &'a str,
}

impl Transform<'_> {
    /// Apply to one rendered object; `hash` is its hash suffix, if it is a generated object
    /// with one ([`crate::model::Model::hash_suffix`]): it stays last in the name whatever
    /// prefix or suffix is added.
    pub fn apply(&self, rendered: &mut Rendered, hash: Option<&Name>) {
        let key = &mut rendered.key;
        if let Some(ns) = &self.namespace {
            if key.is_namespace() {
                key.name = ns.clone();
            } else if is_namespaced(&key.api_version, &key.kind) {
                key.namespace = Some(ns.clone());
            }
        }
        let hash = hash.map_or("", |h| h.as_str());
        // No prefix or suffix to add and the hash already last: the name is what it was, and
        // stays shared with the object (a fleet's kustomizations set a namespace on every
        // level, and a new name per rendering was an allocation each).
        let unchanged =
            self.prefix.is_empty() && self.suffix.is_empty() && key.name.ends_with(hash);
        if !unchanged && !keeps_its_name(key) {
            let base = key.name.strip_suffix(hash).unwrap_or(&key.name);
            key.name = format!("{}{base}{}{hash}", self.prefix, self.suffix).into();
        }
    }
}
