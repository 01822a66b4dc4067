//! Kubernetes objects as written: identity and provenance of every document that has one.

use std::sync::Arc;

use arcstr::ArcStr;
use rustc_hash::FxHashSet as HashSet;

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::{FileId, Repo, SourceFile, file_id};
use crate::parse::NodeId;

/// Index of an object in [`super::Model::objects`]. 32 bits, like [`FileId`]: inventories name
/// an object per entry, and a fleet's models hold millions (issue 26).
pub type ObjectIdx = u32;

/// The index of the object at `index` in a model's objects.
pub fn object_idx(index: usize) -> ObjectIdx {
    ObjectIdx::try_from(index).expect("a repository holds fewer than 2^32 objects")
}

/// A name, kind, namespace or apiVersion shared between an object and every rendering of it:
/// a clone costs a reference count, not an allocation (a fleet renders each object once per
/// kustomization level, and thousands of objects share a kind or a namespace). One word, its
/// length beside the count: an identity is four of them, held by every object and every
/// rendering of it (issue 26). Kustomize directories keep their folder, namespace, prefix,
/// suffix and entries' paths as names too.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(ArcStr);

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl Name {
    /// The text (an inherent method: `str::as_str` is not stable).
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(ArcStr::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(ArcStr::from(s))
    }
}

/// A text already shared (a folder's path, [`crate::load::Repo::dir_path`]) shared once more.
impl From<ArcStr> for Name {
    fn from(s: ArcStr) -> Self {
        Name(s)
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Name> for String {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        **self == *other.0
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

/// Hands out one shared [`Name`] per distinct text.
#[derive(Default)]
pub(super) struct Names(HashSet<Name>);

impl Names {
    /// Hand out the names of `key` for their texts from now on.
    fn learn(&mut self, key: &ObjectKey) {
        let ObjectKey {
            api_version,
            kind,
            namespace,
            name,
        } = key;
        for n in [api_version, kind, name].into_iter().chain(namespace) {
            if !self.0.contains(n.as_str()) {
                self.0.insert(n.clone());
            }
        }
    }

    pub(super) fn get(&mut self, text: &str) -> Name {
        if let Some(name) = self.0.get(text) {
            return name.clone();
        }
        let name = Name::from(text);
        self.0.insert(name.clone());
        name
    }
}

/// An object's identity as Kubernetes and kustomize key it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub api_version: Name,
    pub kind: Name,
    pub namespace: Option<Name>,
    pub name: Name,
}

impl ObjectKey {
    /// The API group (`""` for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map_or("", |(g, _)| g)
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.kind == kind && self.group() == group
    }

    /// A core `v1` Namespace: what kustomize's namespace transformer renames and what holds
    /// the namespaced objects a move may leave behind.
    pub fn is_namespace(&self) -> bool {
        self.kind == "Namespace" && self.api_version == "v1"
    }

    /// A CustomResourceDefinition: the objects of its kind need it first.
    pub fn is_crd(&self) -> bool {
        self.is("apiextensions.k8s.io", "CustomResourceDefinition")
    }

    /// A Flux HelmRelease.
    pub fn is_helm_release(&self) -> bool {
        self.is("helm.toolkit.fluxcd.io", "HelmRelease")
    }

    /// A Flux Kustomization (not kustomize's `Kustomization` file kind).
    pub fn is_flux_kustomization(&self) -> bool {
        self.is("kustomize.toolkit.fluxcd.io", "Kustomization")
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// One Kubernetes object: a document with `apiVersion`, `kind` and `metadata.name`.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    pub file: FileId,
    /// Index of the document in its file ([`Object::doc`]). This and `line` are 32 bits, as
    /// a parsed text is under 2^28 bytes: a fleet keeps a record per object (issue 26).
    pub(super) doc: u32,
    /// Root node of the document.
    pub root: NodeId,
    /// 1-based line where the document's content starts, and [`ENCRYPTED`] in its top bit
    /// (made by [`line_of_document`], read with [`Object::line`] and [`Object::encrypted`]).
    pub(super) line: u32,
    pub key: ObjectKey,
}

// A record per object in every model: 48 bytes, where `usize` ids, document and line and a
// flag of its own took 64.
const _: () = assert!(std::mem::size_of::<Object>() == 48);

/// In [`Object::line`]'s word: the document is SOPS-encrypted. A line number is under 2^28.
const ENCRYPTED: u32 = 1 << 31;

/// An object's line word: its document's 1-based first line, and whether it is encrypted.
pub(super) fn line_of_document(line: usize, encrypted: bool) -> u32 {
    line as u32 | if encrypted { ENCRYPTED } else { 0 }
}

impl Object {
    /// Index of the document in its file.
    pub fn doc(&self) -> usize {
        self.doc as usize
    }

    /// 1-based line where the document's content starts.
    pub fn line(&self) -> usize {
        (self.line & !ENCRYPTED) as usize
    }

    /// A SOPS-encrypted document: its header is known, its payload is not read.
    pub fn encrypted(&self) -> bool {
        self.line & ENCRYPTED != 0
    }

    pub fn is(&self, group: &str, kind: &str) -> bool {
        self.key.is(group, kind)
    }
}

/// Objects in [`ObjectIdx`] order, held in runs of [`Objects::RUN`]: a variant model shares
/// each run equal to its base's rather than holding a copy. A move's first phases edit a few
/// objects and renumber none, and that model is kept beside the next phases' build (issue 26:
/// `fix`'s peak); a run is small enough that an edit leaves most runs equal.
#[derive(Clone, Default)]
pub struct Objects {
    runs: Vec<Arc<[Object]>>,
    len: usize,
}

impl Objects {
    /// Objects a run holds: with the count before them, 16 KiB, one of the allocator's sizes
    /// (256 objects and the count took the next size up, 20 KiB: 2 MB unused at 142k files).
    const RUN: usize = 255;

    /// `objects`, in runs.
    pub(super) fn new(objects: Vec<Object>) -> Objects {
        let mut all = Objects::default();
        all.extend(objects);
        all
    }

    /// Add `more` after the objects there are.
    pub(super) fn extend(&mut self, more: Vec<Object>) {
        let mut tail: Vec<Object> = match self.runs.last() {
            Some(last) if last.len() < Self::RUN => {
                let last = self.runs.pop().expect("a last run");
                last.to_vec()
            }
            _ => Vec::new(),
        };
        self.len += more.len();
        tail.extend(more);
        self.runs.extend(tail.chunks(Self::RUN).map(Arc::from));
    }

    /// Take `base`'s run wherever this one's is equal (same place, same objects).
    pub(super) fn share_equal_runs(&mut self, base: &Objects) {
        for (ours, theirs) in self.runs.iter_mut().zip(&base.runs) {
            if ours[..] == theirs[..] {
                *ours = Arc::clone(theirs);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &Object> + '_ {
        self.runs.iter().flat_map(|run| run.iter())
    }

    /// Every object's index, in order.
    pub fn indices(&self) -> impl Iterator<Item = ObjectIdx> + use<> {
        (0..self.len).map(object_idx)
    }

    /// The objects in parallel, a run to a task; collected in order.
    pub(super) fn par_iter(&self) -> impl ParallelIterator<Item = &Object> + '_ {
        self.runs.par_iter().flat_map_iter(|run| run.iter())
    }
}

impl std::ops::Index<ObjectIdx> for Objects {
    type Output = Object;
    fn index(&self, idx: ObjectIdx) -> &Object {
        let idx = idx as usize;
        &self.runs[idx / Self::RUN][idx % Self::RUN]
    }
}

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// An object as found in its file, before its names are shared.
struct Found<'a> {
    doc: usize,
    root: NodeId,
    line: usize,
    api_version: &'a str,
    kind: &'a str,
    namespace: Option<&'a str>,
    name: &'a str,
    encrypted: bool,
}

/// Every object of every file, in file and document order, and where each file's objects start
/// (one more entry than files: file `f` has `starts[f]..starts[f + 1]`). Files are read in
/// parallel; names are shared afterwards, in order, with each other and with those of `known`.
pub(super) fn extract(
    repo: &Repo,
    diagnostics: &mut Vec<Diagnostic>,
    known: &Objects,
) -> (Vec<Object>, Vec<ObjectIdx>) {
    let per_file: Vec<(Vec<Found>, Vec<Diagnostic>)> =
        repo.files.par_iter().map(|file| objects_of(file)).collect();
    let mut objects = Vec::new();
    let mut starts = Vec::with_capacity(per_file.len() + 1);
    let mut names = Names::default();
    for key in known.iter().map(|o| &o.key) {
        names.learn(key);
    }
    for (index, (found, diags)) in per_file.into_iter().enumerate() {
        diagnostics.extend(diags);
        starts.push(object_idx(objects.len()));
        objects.extend(found.into_iter().map(|f| Object {
            file: file_id(index),
            doc: f.doc as u32,
            root: f.root,
            line: line_of_document(f.line, f.encrypted),
            key: ObjectKey {
                api_version: names.get(f.api_version),
                kind: names.get(f.kind),
                namespace: f.namespace.map(|n| names.get(n)),
                name: names.get(f.name),
            },
        }));
    }
    starts.push(object_idx(objects.len()));
    (objects, starts)
}

/// The objects of one file, and what made a document not one.
fn objects_of(file: &SourceFile) -> (Vec<Found<'_>>, Vec<Diagnostic>) {
    let yaml = &file.yaml;
    // A document is usually one object: grown from empty, each one-object file of a fleet held
    // room for four until every file was read (18 MB more at 142k files, in every model).
    let mut found = Vec::with_capacity(yaml.docs().len());
    let mut diagnostics = Vec::new();
    for (doc_idx, doc) in yaml.docs().iter().enumerate() {
        let scalar =
            |node: NodeId, keys: &[&str]| yaml.lookup(node, keys).and_then(|n| yaml.scalar(n));
        let (Some(api_version), Some(kind)) = (
            scalar(doc.root, &["apiVersion"]),
            scalar(doc.root, &["kind"]),
        ) else {
            continue;
        };
        if api_version.starts_with("kustomize.config.k8s.io/") {
            continue;
        }
        // A `v1 List` is its items to kustomize.
        let roots: Vec<NodeId> = if kind == "List" && api_version == "v1" {
            yaml.lookup(doc.root, &["items"])
                .map(|items| yaml.items(items).to_vec())
                .unwrap_or_default()
        } else {
            vec![doc.root]
        };
        for root in roots {
            let line = yaml.line_of(yaml.node(root).span.start);
            let (Some(api_version), Some(kind)) =
                (scalar(root, &["apiVersion"]), scalar(root, &["kind"]))
            else {
                diagnostics.push(
                    Diagnostic::new(
                        Severity::Warning,
                        &file.path,
                        "a List item has no apiVersion or kind".into(),
                    )
                    .at(line, 1),
                );
                continue;
            };
            let Some(name) = scalar(root, &["metadata", "name"]).filter(|n| !n.is_empty()) else {
                diagnostics.push(
                    Diagnostic::new(
                        Severity::Warning,
                        &file.path,
                        format!("{kind} has no metadata.name; not an object kustomize can apply"),
                    )
                    .at(line, 1),
                );
                continue;
            };
            found.push(Found {
                doc: doc_idx,
                root,
                line,
                api_version,
                kind,
                namespace: scalar(root, &["metadata", "namespace"]).filter(|n| !n.is_empty()),
                name,
                encrypted: yaml.entry(root, "sops").is_some(),
            });
        }
    }
    (found, diagnostics)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::{Object, ObjectKey, Objects};

    use crate::load::{FileId, Repo, write_test_file as write};
    use crate::model::{Model, ModelOptions};

    /// A variant's model built beside the base's is the model built alone: the same objects
    /// with the same keys, in the same files; an object the change leaves alone holds the
    /// base's very name, a new one its own.
    #[test]
    fn a_variant_model_shares_the_names_of_its_base() {
        let tmp = tempfile::tempdir().unwrap();
        let cm = |name: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: apps\n"
            )
        };
        write(tmp.path(), "a/one.yaml", &cm("one"));
        write(tmp.path(), "b/two.yaml", &cm("two"));
        let repo = Repo::load(tmp.path()).unwrap();
        let options = ModelOptions::default();
        let base = Model::build(&repo, &options);
        let changes = BTreeMap::from([
            ("a/0.yaml".to_string(), Some(cm("zero"))),
            ("b/two.yaml".to_string(), Some(cm("two-renamed"))),
        ]);
        let variant = repo.with_changes(&changes);
        let alone = Model::build(&variant, &options);
        let beside = base.build_variant(&variant, &options);
        let described = |m: &Model| {
            m.objects
                .iter()
                .map(|o| format!("{} {} {:?}", m.repo.file(o.file).path, o.doc, o.key))
                .collect::<Vec<_>>()
        };
        assert_eq!(described(&beside), described(&alone));
        assert_eq!(described(&beside).len(), 3);
        let name_of = |m: &Model, name: &str| {
            let o = m.objects.iter().find(|o| o.key.name == *name).unwrap();
            o.key.name.as_str().as_ptr()
        };
        assert_eq!(name_of(&beside, "one"), name_of(&base, "one"));
        assert_ne!(name_of(&alone, "one"), name_of(&base, "one"));
        assert_ne!(name_of(&beside, "zero"), name_of(&base, "one"));
        let namespace = |m: &Model| m.objects[0].key.namespace.clone().unwrap();
        assert_eq!(namespace(&beside).as_ptr(), namespace(&base).as_ptr());
    }

    /// Objects in runs index, iterate and count as the list they were made from, generated
    /// objects added after them included; a variant shares every run equal to its base's and
    /// keeps its own where an object differs.
    #[test]
    fn objects_are_shared_by_equal_runs() {
        let object = |file: FileId, name: &str| Object {
            file,
            doc: 0,
            root: 0,
            line: 1,
            key: ObjectKey {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                namespace: None,
                name: name.into(),
            },
        };
        let list: Vec<Object> = (0..600).map(|i| object(i, &format!("cm-{i}"))).collect();
        let mut base = Objects::new(list[..590].to_vec());
        base.extend(list[590..].to_vec());
        assert_eq!(base.len(), 600);
        assert_eq!(base.iter().cloned().collect::<Vec<_>>(), list);
        assert!((0..600).all(|i| base[i] == list[i as usize]));
        assert_eq!(format!("{base:?}"), format!("{list:?}"));

        let mut edited = list.clone();
        edited[300] = object(300, "renamed");
        let mut variant = Objects::new(edited.clone());
        variant.share_equal_runs(&base);
        let shared: Vec<bool> = (0..3)
            .map(|run| Arc::ptr_eq(&variant.runs[run], &base.runs[run]))
            .collect();
        assert_eq!(shared, [true, false, true]);
        assert_eq!(variant.iter().cloned().collect::<Vec<_>>(), edited);
    }
}
