//! A directory with a kustomization file: what it lists, the files it names, and whether the
//! build of a directory is fully known.

use rayon::prelude::*;
use rustc_hash::FxHashSet as HashSet;

use crate::load::FileId;
use crate::model::{Model, Name, ObjectIdx, join};
use crate::parse::{NodeId, YamlFile};

use super::transformers::Transformers;

/// What a `resources`/`components` entry points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefTarget {
    /// A YAML file fluxmend parsed. Resolved to its id once, when the kustomization is read: a
    /// fleet renders an entry per file for every layer that reaches it, and every verification
    /// re-models the repository.
    File(FileId),
    /// Another file Flux ships (not YAML, or skipped): what it holds is not modelled.
    OtherFile(Name),
    Dir(Name),
    /// A URL or remote base: reported, never fetched.
    Remote(Name),
    /// Points at nothing that exists.
    Missing(Name),
    /// `..` or an absolute path leaving the repository root.
    OutsideRoot,
}

/// One entry of a kustomization's `resources`, `bases` or `components` list (or of a Flux
/// Kustomization's `spec.components`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceRef {
    /// The sequence item node (its span and dash are what an edit removes).
    pub item: NodeId,
    pub target: RefTarget,
}

impl ResourceRef {
    /// The entry's text as written in `listed_in`, the file that lists it: read there rather
    /// than copied, as a fleet has an entry for nearly every file (issue 26).
    pub fn text<'y>(&self, listed_in: &'y YamlFile) -> &'y str {
        listed_in.scalar(self.item).unwrap_or_default()
    }
}

/// A directory with a kustomization file.
#[derive(Clone, Debug, PartialEq)]
pub struct KustomizeDir {
    /// Its folder, shared with the model's map of directories (the key).
    pub dir: Name,
    pub file: FileId,
    /// Root node of the kustomization document.
    pub root: NodeId,
    /// `kind: Component`.
    pub component: bool,
    pub resources: Box<[ResourceRef]>,
    pub components: Box<[ResourceRef]>,
    pub namespace: Option<Name>,
    pub name_prefix: Name,
    pub name_suffix: Name,
    /// Objects of its `configMapGenerator`/`secretGenerator` (their hash suffixes are the
    /// model's: [`crate::model::Model::hash_suffix`]).
    pub generated: Vec<ObjectIdx>,
    /// What its `transformers:` and `replacements:` do to identities, when anything (read it
    /// with [`KustomizeDir::transformers`]): few directories have any, and a fleet keeps a
    /// record for each (issue 26).
    pub(super) transformers: Option<Box<Transformers>>,
}

/// What a directory without `transformers:` or `replacements:` has.
static NO_TRANSFORMERS: Transformers = Transformers {
    identity: Vec::new(),
    error: None,
    unknown: Vec::new(),
};

/// The fields of a kustomization file, besides `resources` and `components`, that name files
/// of the build: patches and configurations of transformers, generators and validators.
pub(in crate::model) const NAMED_FILE_FIELDS: &[&str] = &[
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "replacements",
    "transformers",
    "generators",
    "validators",
    "configurations",
];

/// The fields that name patch files: their documents edit other objects and define none.
pub(super) const PATCH_FIELDS: &[&str] = &["patches", "patchesStrategicMerge", "patchesJson6902"];

impl KustomizeDir {
    /// What its `transformers:` and `replacements:` do to identities.
    pub fn transformers(&self) -> &Transformers {
        self.transformers.as_deref().unwrap_or(&NO_TRANSFORMERS)
    }

    /// The repository paths of the files this kustomization names under `fields` (a plain
    /// entry, or an entry's `path`), resolved against its directory `dir`.
    pub(in crate::model) fn named_files<'m>(
        &self,
        model: &'m Model,
        dir: &'m str,
        fields: &'m [&'m str],
    ) -> impl Iterator<Item = String> + 'm {
        let yaml = &model.repo.file(self.file).yaml;
        let root = self.root;
        fields
            .iter()
            .filter_map(move |field| yaml.lookup(root, &[field]))
            .flat_map(move |list| yaml.items(list).iter().copied())
            .filter_map(move |item| {
                yaml.scalar(item)
                    .or_else(|| yaml.lookup(item, &["path"]).and_then(|n| yaml.scalar(n)))
                    .and_then(|text| join(dir, text))
            })
    }
}

/// Files that some kustomization names as a patch and none as a resource or component. A Flux
/// Kustomization or FluxInstance written in such a file (a cluster overlay patching a layer by
/// name) is an edit of the real object, not a layer of its own.
pub(in crate::model) fn patch_only_files(model: &Model) -> HashSet<FileId> {
    // A fleet has tens of thousands of kustomizations: both passes run in parallel.
    let mut patches: HashSet<FileId> = model
        .kustomize_dirs
        .par_iter()
        .flat_map_iter(|(dir, k)| k.named_files(model, dir, PATCH_FIELDS))
        .filter_map(|path| model.repo.file_id(&path))
        .collect();
    // Patches are few and resources entries one per file of a fleet: find the listed ones
    // among them rather than collect every entry.
    if !patches.is_empty() {
        let listed: HashSet<FileId> = model
            .kustomize_dirs
            .par_iter()
            .flat_map_iter(|(_, k)| k.resources.iter().chain(&k.components))
            .filter_map(|r| match r.target {
                RefTarget::File(id) if patches.contains(&id) => Some(id),
                _ => None,
            })
            .collect();
        patches.retain(|id| !listed.contains(id));
    }
    patches
}

/// kustomize fields whose effect on what a build holds the model does not follow.
const UNMODELLED: &[&str] = &["transformers", "replacements", "helmCharts", "generators"];

impl Model<'_> {
    /// Whether the build of `dir` is fully known: no remote entry, no `transformers`,
    /// `replacements`, `helmCharts` or `generators`, no missing entry, anywhere below it. A
    /// rule that claims an object is *not* in a build must know all of it.
    pub fn fully_known(&self, dir: &str) -> bool {
        self.fully_known_below(dir, &mut HashSet::default())
    }

    fn fully_known_below(&self, dir: &str, seen: &mut HashSet<String>) -> bool {
        if !seen.insert(dir.to_string()) {
            return true;
        }
        let Some(k) = self.kustomize_dirs.get(dir) else {
            // A plain directory (Flux generates its kustomization) holds what is in it.
            return true;
        };
        let yaml = &self.repo.file(k.file).yaml;
        if UNMODELLED
            .iter()
            .any(|f| yaml.lookup(k.root, &[f]).is_some())
        {
            return false;
        }
        k.resources
            .iter()
            .chain(&k.components)
            .all(|r| match &r.target {
                RefTarget::File(_) | RefTarget::OtherFile(_) => true,
                RefTarget::Dir(d) => self.fully_known_below(d, seen),
                RefTarget::Remote(_) | RefTarget::Missing(_) | RefTarget::OutsideRoot => false,
            })
    }
}

/// A directory for messages: `.` for the root.
pub fn display_dir(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}
