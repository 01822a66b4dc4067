//! Model: the typed view of a loaded repository — every Kubernetes object with its provenance,
//! every kustomize directory, every Flux Kustomization (a *layer*) with what it applies, and the
//! graph of which layer applies, waits on and health-gates which.

pub(crate) mod annotations;
mod clusters;
mod distribution;
mod flux;
mod generators;
mod instance;
mod kustomize;
mod live;
mod objects;
pub mod patch;
mod paths;
mod required;

pub use annotations::{PRUNE_DISABLED, annotations, prune_exempt};
pub use clusters::{cluster_keys, rootless};
pub use distribution::{DISTRIBUTION, component_of, distribution_source};
pub use flux::{
    APPLY_CONTEXT, ApplyContext, FLUX_KUSTOMIZE_GROUP, FLUX_OPERATOR_GROUP, FluxSpec, HealthCheck,
    Layer, LayerId, LayerRef, SourceRef, SpecPatch, Variant,
};
pub use instance::{GeneratedObject, InstanceObjects, InstancePatch};
pub use kustomize::{
    KUSTOMIZATION_FILE_NAMES, KustomizeDir, PatchOnTheWay, RefTarget, Rendered, Renderer,
    ResourceRef, display_dir, is_namespaced,
};
pub use objects::{Name, Object, ObjectIdx, ObjectKey, Objects, object_idx};
pub use paths::{join, normalize, relative_path};

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::{FileId, Repo};
use crate::parse::NodeId;

/// What `check` says of a PATH with no Flux layer: a note in the report, and always in the text
/// summary.
pub const NOTHING_ANALYSED: &str = "no Flux Kustomization (kustomize.toolkit.fluxcd.io) and no \
    FluxInstance below PATH: nothing was analysed. Point PATH at the root of the Flux repository \
    (or at the folder pushed as the OCI artifact), and check that .gitignore or .sourceignore do \
    not hide its files";

/// Objects by (kind, name), in repository order.
type KindNameIndex = HashMap<(Name, Name), Vec<ObjectIdx>>;

/// What the user told the model that it cannot infer.
#[derive(Clone, Debug, Default)]
pub struct ModelOptions {
    /// Flux Kustomizations (`name` or `namespace/name`) to treat as roots.
    pub roots: Vec<String>,
    /// The artifact root of OCIRepository/Bucket/ExternalArtifact sources, relative to the
    /// repository root, when it should not be inferred.
    pub source_root: Option<String>,
    /// `--source NAME=DIR`: sources (`name`, `namespace/name` or `kind/namespace/name`) whose
    /// artifact is the directory DIR of this repository (a checkout of another repository kept
    /// here): their layers are analysed against DIR rather than being external.
    pub sources: Vec<(String, String)>,
}

/// The whole model of one repository.
#[derive(Debug)]
pub struct Model<'r> {
    pub repo: &'r Repo,
    pub objects: Objects,
    /// Where each file's objects start in `objects` (see [`Model::objects_in`]).
    file_objects: Arc<Vec<ObjectIdx>>,
    /// kustomize directories by directory path. Boxed: most of a fleet's directories have
    /// none, and the table's empty slots then cost a pointer each, not a whole record.
    /// This and the other parts a change often leaves equal are shared by a variant model
    /// whose own are equal ([`Model::build_variant`]).
    pub kustomize_dirs: Arc<HashMap<Name, Box<KustomizeDir>>>,
    pub layers: Arc<Vec<Layer>>,
    /// For each layer, the layers that list it in `dependsOn` (the reverse edges).
    dependents_of: Arc<Vec<Vec<LayerId>>>,
    /// For each file, the live (layer, variant index) pairs that render from it: as the file of
    /// an object they apply or a kustomization file on the way.
    /// `users_of_file(f)` is `file_users[file_users_start[f]..file_users_start[f + 1]]`.
    file_users_start: Arc<Vec<u32>>,
    /// 32-bit (layer, variant) pairs: a fleet's files have a million, kept by every model.
    file_users: Arc<Vec<(u32, u32)>>,
    /// How many objects were known and their (kind, name) index, built on first use (see
    /// `find_object`).
    by_kind_name: OnceLock<(usize, KindNameIndex)>,
    /// The model's own diagnostics, those about files no live layer reads already notes.
    pub diagnostics: Vec<Diagnostic>,
    /// The files live layers read, found when first asked: a repository without a warning
    /// about a file (a healthy fleet) never needs them.
    live_files: OnceLock<live::LiveFiles>,
    /// (listed file, kustomization file, its `resources` item) for every entry naming a file of
    /// the repository, sorted: built when first asked (a fix registering a new layer).
    listers: OnceLock<Arc<Vec<(FileId, FileId, NodeId)>>>,
    /// The hash suffix (`-<hash>`) of each generated ConfigMap and Secret, in object order: they
    /// are the objects after the files' own ([`Model::hash_suffix`]).
    hash_suffixes: Vec<Option<Name>>,
    /// Files only ever named as patches ([`kustomize::patch_only_files`]): their documents
    /// define no layer.
    patch_only_files: HashSet<FileId>,
    /// The files the generators read that are not parsed YAML, read from where the repository
    /// was loaded (its work tree, a revision's objects): besides the files the repository lists,
    /// all a model is built from ([`Model::is_model_of`]).
    generator_inputs: Vec<String>,
}

impl<'r> Model<'r> {
    /// The `--root` values that name no Flux Kustomization: a typo there would otherwise leave
    /// the repository without a live layer and pass silently.
    pub fn unmatched_roots<'a>(&self, roots: &'a [String]) -> Vec<&'a str> {
        flux::unmatched_roots(self, roots)
    }

    /// Build the model of a loaded repository.
    pub fn build(repo: &'r Repo, options: &ModelOptions) -> Model<'r> {
        Model::build_sharing(repo, options, &Objects::default())
    }

    /// Build the model of `repo`, a variant of this model's repository (verification's), its
    /// objects named with this model's names where the texts are the same: most of a variant's
    /// objects are this model's, and their names were a copy each (issue 26). Its runs of
    /// objects ([`Objects`]), kustomize directories, layers and the indexes over them are this
    /// model's where they are equal: a change that edits objects without adding or removing a
    /// file or an object (a move's protection) leaves them so (the runs before a new file's
    /// objects, in any change), and a variant kept beside the next one's build held a copy
    /// (issue 26: `fix`'s peak). The model is the one [`Model::build`] makes: names are
    /// compared and hashed by their text, and only equal values are shared.
    pub fn build_variant<'v>(&self, repo: &'v Repo, options: &ModelOptions) -> Model<'v> {
        let mut model = Model::build_sharing(repo, options, &self.objects);
        model.objects.share_equal_runs(&self.objects);
        share_if_equal(&mut model.file_objects, &self.file_objects);
        share_if_equal(&mut model.kustomize_dirs, &self.kustomize_dirs);
        if Arc::ptr_eq(&model.kustomize_dirs, &self.kustomize_dirs)
            && let Some(listers) = self.listers.get()
        {
            // What lists each file is read from the kustomize directories alone.
            model.listers = OnceLock::from(Arc::clone(listers));
        }
        share_if_equal(&mut model.layers, &self.layers);
        share_if_equal(&mut model.dependents_of, &self.dependents_of);
        share_if_equal(&mut model.file_users_start, &self.file_users_start);
        share_if_equal(&mut model.file_users, &self.file_users);
        model
    }

    /// Whether this model is the one [`Model::build`] makes of `repo` with the same options: the
    /// repository lists the same files, each YAML file with the same text
    /// ([`Repo::lists_the_same`]), and the generators' other inputs hold the same bytes there or
    /// are missing from both (a generator naming a file that does not exist fails alike). The
    /// revision a clean checkout is at is its work tree: `fix` plays its rollout from the work
    /// tree's model rather than building the same model again (issue 26).
    pub fn is_model_of(&self, repo: &Repo) -> bool {
        self.repo.lists_the_same(repo)
            && self.generator_inputs.iter().all(|path| {
                match (self.repo.read_bytes(path), repo.read_bytes(path)) {
                    (Ok(ours), Ok(theirs)) => ours == theirs,
                    (Err(ours), Err(theirs)) => ours.is_missing() && theirs.is_missing(),
                    _ => false,
                }
            })
    }

    /// [`Model::build`], names shared with those of `known` objects.
    fn build_sharing(repo: &'r Repo, options: &ModelOptions, known: &Objects) -> Model<'r> {
        let mut diagnostics = Vec::new();
        let (objects, file_objects) = objects::extract(repo, &mut diagnostics, known);
        let mut model = Model {
            repo,
            objects: Objects::new(objects),
            file_objects: Arc::new(file_objects),
            kustomize_dirs: Arc::default(),
            layers: Arc::default(),
            dependents_of: Arc::default(),
            file_users_start: Arc::default(),
            file_users: Arc::default(),
            by_kind_name: OnceLock::new(),
            diagnostics,
            live_files: OnceLock::new(),
            listers: OnceLock::new(),
            hash_suffixes: Vec::new(),
            patch_only_files: HashSet::default(),
            generator_inputs: Vec::new(),
        };
        let mut diags = std::mem::take(&mut model.diagnostics);
        model.kustomize_dirs = Arc::new(kustomize::parse_dirs(&model, &mut diags));
        model.patch_only_files = kustomize::patch_only_files(&model);
        // Generated ConfigMaps and Secrets are objects too, defined by their generator entry.
        let mut dirs: Vec<&Name> = model.kustomize_dirs.keys().collect();
        dirs.sort();
        // Each directory's generators on their own (a fleet has tens of thousands), taken in
        // path order with their diagnostics.
        let generated: Vec<(Name, generators::Generation)> = dirs
            .into_par_iter()
            .filter_map(|dir| {
                let k = &model.kustomize_dirs[dir];
                generators::generate(repo, dir, k.file, k.root).map(|made| (dir.clone(), made))
            })
            .collect();
        let kustomize_dirs = Arc::make_mut(&mut model.kustomize_dirs);
        let mut generated_objects = Vec::new();
        for (dir, made) in generated {
            diags.extend(made.diagnostics);
            model.generator_inputs.extend(made.inputs);
            for g in made.objects {
                let idx = object_idx(model.objects.len() + generated_objects.len());
                generated_objects.push(g.object);
                model.hash_suffixes.push(g.hash_suffix);
                if let Some(k) = kustomize_dirs.get_mut(dir.as_str()) {
                    k.generated.push(idx);
                }
            }
        }
        model.objects.extend(generated_objects);
        model.diagnostics = diags;
        flux::build_layers(&mut model, options);
        // A layer is a large record (its spec, variants and inventories' headers): the room the
        // vector grew into would outlast the walk.
        Arc::make_mut(&mut model.layers).shrink_to_fit();
        if model.layers.is_empty() {
            // Nothing Flux-shaped: an empty or plain-manifest tree, a repository another one's
            // Flux applies (a tenant's apps), or the wrong PATH. The repository need not change,
            // so it is a note (the text summary always says it): saying nothing would let "no
            // finding" pass for "analysed and fine".
            model
                .diagnostics
                .push(Diagnostic::new(Severity::Note, "", NOTHING_ANALYSED.into()));
        }
        required::check(&mut model);
        let mut dependents_of = vec![Vec::new(); model.layers.len()];
        for (id, layer) in model.layers.iter().enumerate() {
            for &dep in &layer.depends_on_ids {
                dependents_of[dep].push(id);
            }
        }
        model.dependents_of = Arc::new(dependents_of);
        let (starts, users) = file_users(&model);
        model.file_users_start = Arc::new(starts);
        model.file_users = Arc::new(users);
        let mut diagnostics = std::mem::take(&mut model.diagnostics);
        model.demote_unread(&mut diagnostics);
        model.diagnostics = diagnostics;
        model
    }

    /// Make the warnings and errors about files no live layer reads notes (see [`live`]).
    fn demote_unread(&self, diagnostics: &mut [Diagnostic]) {
        if diagnostics
            .iter()
            .any(|d| d.severity > Severity::Note && !d.file().is_empty())
        {
            self.live_files().demote(self.repo, diagnostics);
        }
    }

    fn live_files(&self) -> &live::LiveFiles {
        self.live_files.get_or_init(|| live::LiveFiles::of(self))
    }

    /// Every diagnostic of the run: the loader's, then the model's; those about files no live
    /// layer reads are notes (see [`live`]), so that `--fail-on` counts only what Flux meets.
    pub fn all_diagnostics(&self) -> Vec<Diagnostic> {
        // The configuration file is fluxmend's, not Flux's: `crate::config` reports on it.
        let mut all: Vec<Diagnostic> = self
            .repo
            .diagnostics
            .iter()
            .filter(|d| d.file() != crate::load::CONFIG_FILE)
            .cloned()
            .collect();
        self.demote_unread(&mut all);
        all.extend(self.diagnostics.iter().cloned());
        all
    }

    /// The kustomizations whose `resources` list `file`, with the item that lists it, in the
    /// order of the kustomization file, then the item. Indexed once: a fleet has a resources
    /// entry per file and a fix per layer.
    pub fn listers_of(&self, file: FileId) -> &[(FileId, FileId, NodeId)] {
        let listers = self.listers.get_or_init(|| {
            let mut all: Vec<(FileId, FileId, NodeId)> = self
                .kustomize_dirs
                .values()
                .flat_map(|k| {
                    k.resources.iter().filter_map(|r| match &r.target {
                        RefTarget::File(id) => Some((*id, k.file, r.item)),
                        _ => None,
                    })
                })
                .collect();
            all.sort_unstable();
            Arc::new(all)
        });
        let start = listers.partition_point(|&(listed, ..)| listed < file);
        let end = listers.partition_point(|&(listed, ..)| listed <= file);
        &listers[start..end]
    }

    /// Whether kustomizations name the file only as a patch: its documents edit other objects.
    pub fn is_patch_file(&self, file: FileId) -> bool {
        self.patch_only_files.contains(&file)
    }

    /// Whether a live layer reads the file at `path` (as an object, a kustomization or a file one
    /// names): a rule about what Flux applies looks only there.
    pub fn is_live_file(&self, path: &str) -> bool {
        self.live_files().contains(self.repo, path)
    }

    /// Objects defined in a file, in document order (a file's objects are consecutive).
    pub fn objects_in(&self, file: FileId) -> std::ops::Range<ObjectIdx> {
        let file = file as usize;
        match (self.file_objects.get(file), self.file_objects.get(file + 1)) {
            (Some(&start), Some(&end)) => start..end,
            _ => 0..0,
        }
    }

    /// The live (layer, variant index) pairs that render from `file` (an object's file or a
    /// kustomization file on the way), in layer order.
    pub fn users_of_file(
        &self,
        file: FileId,
    ) -> impl ExactSizeIterator<Item = (LayerId, usize)> + '_ {
        let file = file as usize;
        let users = match (
            self.file_users_start.get(file),
            self.file_users_start.get(file + 1),
        ) {
            (Some(&start), Some(&end)) => &self.file_users[start as usize..end as usize],
            _ => &[],
        };
        users
            .iter()
            .map(|&(layer, variant)| (layer as LayerId, variant as usize))
    }

    /// Whether the object is written in a file that kustomizations name only as a patch: it
    /// is an edit of another object, not an object Flux applies as written.
    fn in_patch_file(&self, idx: ObjectIdx) -> bool {
        self.patch_only_files.contains(&self.object(idx).file)
    }

    pub fn object(&self, idx: ObjectIdx) -> &Object {
        &self.objects[idx]
    }

    /// A generated ConfigMap's or Secret's `-<hash>` (none when its generator disables it or
    /// the object is not generated): kept last in the name whatever prefix or suffix an outer
    /// kustomization adds, and a patch does not rename the object (its hash is computed from
    /// its name).
    pub fn hash_suffix(&self, idx: ObjectIdx) -> Option<&Name> {
        // Generated objects come right after the files' own.
        let first_generated = self.file_objects.last().copied().unwrap_or(0);
        let at = idx.checked_sub(first_generated)?;
        self.hash_suffixes.get(at as usize)?.as_ref()
    }

    /// The first object, in repository order, of `kind` named `name` in `namespace` (or in no
    /// namespace): what a `sourceRef` or `chartRef` names. Indexed on first use, which comes
    /// after every object (generated ones included) is known: a fleet has a HelmRelease per
    /// cluster, and scanning every object for each was quadratic.
    pub fn find_object(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Option<ObjectIdx> {
        let (indexed, index) = self.by_kind_name.get_or_init(|| {
            let mut index = KindNameIndex::default();
            for (idx, o) in self.objects.indices().zip(self.objects.iter()) {
                let key = (o.key.kind.clone(), o.key.name.clone());
                index.entry(key).or_default().push(idx);
            }
            (self.objects.len(), index)
        });
        debug_assert_eq!(
            *indexed,
            self.objects.len(),
            "find_object was indexed before every object was known"
        );
        let candidates = index.get(&(Name::from(kind), Name::from(name)))?;
        candidates.iter().copied().find(|&idx| {
            let ns = self.objects[idx].key.namespace.as_deref();
            namespace.is_none() || ns == namespace || ns.is_none()
        })
    }

    pub fn layer(&self, id: LayerId) -> &Layer {
        &self.layers[id]
    }

    /// Live layers (reached from a root), in discovery order.
    pub fn live_layers(&self) -> impl Iterator<Item = (LayerId, &Layer)> {
        self.layers.iter().enumerate().filter(|(_, l)| l.live)
    }

    /// Layers that list `id` in `dependsOn`, directly or transitively: what a failure of `id`
    /// leaves `DependencyNotReady`.
    pub fn dependents(&self, id: LayerId) -> Vec<LayerId> {
        self.reach(id, |l| &self.dependents_of[l])
    }

    /// Layers `id` depends on, directly or transitively.
    pub fn dependencies(&self, id: LayerId) -> Vec<LayerId> {
        self.reach(id, |l| &self.layers[l].depends_on_ids)
    }

    /// Every layer reachable from `id` along `edges` (`id` itself excluded), sorted.
    fn reach<'a>(
        &'a self,
        id: LayerId,
        edges: impl Fn(LayerId) -> &'a Vec<LayerId>,
    ) -> Vec<LayerId> {
        let mut seen = vec![false; self.layers.len()];
        seen[id] = true;
        let mut out = Vec::new();
        let mut frontier = vec![id];
        while let Some(current) = frontier.pop() {
            for &next in edges(current) {
                if !seen[next] {
                    seen[next] = true;
                    out.push(next);
                    frontier.push(next);
                }
            }
        }
        out.sort_unstable();
        out
    }
}

/// `ours`, replaced by `theirs` when equal: one value kept for both models.
fn share_if_equal<T: PartialEq>(ours: &mut Arc<T>, theirs: &Arc<T>) {
    if **ours == **theirs {
        *ours = Arc::clone(theirs);
    }
}

/// For each file, the live (layer, variant index) pairs that render from it, in layer order:
/// where each file's pairs start (one more entry than files), and the pairs. Each variant's
/// files are listed apart (in parallel), then counted and placed by file: every (file, layer,
/// variant) of a fleet gathered in one list to be sorted set the model's peak (20 MB of
/// triples and their copies at 142k files, issue 26).
fn file_users(model: &Model) -> (Vec<u32>, Vec<(u32, u32)>) {
    let objects = &model.objects;
    let per_layer: Vec<Vec<Vec<FileId>>> = model
        .layers
        .par_iter()
        .map(|layer| {
            if !layer.live {
                return Vec::new();
            }
            layer
                .variants
                .iter()
                .map(|variant| {
                    let mut files: Vec<FileId> = variant
                        .inventory
                        .iter()
                        .flat_map(|r| {
                            std::iter::once(objects[r.object].file).chain(r.chain.iter().copied())
                        })
                        .collect();
                    files.sort_unstable();
                    files.dedup();
                    files.shrink_to_fit();
                    files
                })
                .collect()
        })
        .collect();
    let count = model.repo.files.len();
    let mut starts = vec![0u32; count + 1];
    for &f in per_layer.iter().flatten().flatten() {
        starts[f as usize + 1] += 1;
    }
    for i in 1..=count {
        starts[i] += starts[i - 1];
    }
    let mut next = starts.clone();
    let mut users = vec![(0, 0); starts[count] as usize];
    for (id, variants) in per_layer.iter().enumerate() {
        for (vi, files) in variants.iter().enumerate() {
            for &f in files {
                users[next[f as usize] as usize] = (id as u32, vi as u32);
                next[f as usize] += 1;
            }
        }
    }
    (starts, users)
}
