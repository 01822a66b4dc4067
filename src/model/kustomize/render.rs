//! The renderer: the objects a directory builds to, the same set `kustomize build` renders
//! (checked against `kubectl kustomize` in the tests), with what patches and transformers do to
//! their identities.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::hash::BuildHasher as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::load::FileId;
use crate::model::{Model, Name};

use super::dir::{RefTarget, ResourceRef, display_dir};
use super::patches::PatchOnTheWay;
use super::rendered::{Chain, Rendered, Transform};
use super::transformers::Transformers;

/// Why a directory could not be rendered.
pub type RenderResult = Arc<Result<Vec<Rendered>, String>>;

/// The renders kept between requests, shared by the renderers of walks that run side by side.
#[derive(Default)]
struct Memo {
    kept: HashMap<String, RenderResult>,
    /// Hashes of the directories rendered once and not kept: a fleet's 40,000 paths again
    /// for the whole walk otherwise. Two directories of one hash only make the second kept
    /// sooner: the memo is right whatever it keeps.
    requested: HashSet<u64>,
}

/// Renders kustomize directories, memoised from the second request on: fleets include the same
/// bases many times, but most directories are rendered once, and keeping every render held a
/// third of the model's memory until the layers were built.
pub struct Renderer<'m, 'r> {
    pub model: &'m Model<'r>,
    memo: Arc<Mutex<Memo>>,
    /// The directories this renderer's current build passes through: a kustomization cycle.
    in_progress: HashSet<String>,
}

impl<'m, 'r> Renderer<'m, 'r> {
    pub fn new(model: &'m Model<'r>) -> Self {
        Renderer {
            model,
            memo: Arc::default(),
            in_progress: HashSet::default(),
        }
    }

    /// A renderer for a walk of its own (another thread's), sharing this one's kept renders.
    #[must_use]
    pub fn fork(&self) -> Self {
        Renderer {
            model: self.model,
            memo: self.memo.clone(),
            in_progress: HashSet::default(),
        }
    }

    /// Drop the kept renders, for this renderer and its forks: what is rendered after is
    /// rendered again (the memo is right whatever it keeps).
    pub fn forget_kept(&self) {
        let mut memo = self.memo();
        memo.kept = HashMap::default();
        memo.requested = HashSet::default();
    }

    fn memo(&self) -> MutexGuard<'_, Memo> {
        // A render that panicked leaves the memo as consistent as before it: nothing is half
        // inserted.
        self.memo.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Objects of a plain YAML file, as a resource.
    pub fn file_objects(&self, file: FileId, chain: &Chain) -> Vec<Rendered> {
        self.model
            .objects_in(file)
            .map(|object| Rendered {
                object,
                key: self.model.objects[object].key.clone(),
                chain: chain.clone(),
            })
            .collect()
    }

    /// Render the kustomization in `dir`.
    pub fn render_dir(&mut self, dir: &str) -> RenderResult {
        if let Some(done) = self.memo().kept.get(dir) {
            return done.clone();
        }
        if !self.in_progress.insert(dir.to_string()) {
            return Arc::new(Err(format!("kustomization cycle through {dir}")));
        }
        let result = Arc::new(self.render_uncached(dir));
        self.in_progress.remove(dir);
        // Only a build that succeeded is kept: an error may depend on where the build started
        // (a cycle is reported where it closes), and renders run side by side must not make
        // which one came first visible.
        if result.is_ok() {
            let mut memo = self.memo();
            if !memo
                .requested
                .insert(rustc_hash::FxBuildHasher.hash_one(dir))
            {
                memo.kept.insert(dir.to_string(), result.clone());
            }
        }
        result
    }

    /// [`Renderer::render_dir`] as an owned list: moved out when nothing else holds it.
    pub fn render_dir_owned(&mut self, dir: &str) -> Result<Vec<Rendered>, String> {
        Arc::try_unwrap(self.render_dir(dir)).unwrap_or_else(|shared| shared.as_ref().clone())
    }

    /// Render the kustomization in `dir` with `components` appended to its own, as Flux does
    /// with a Flux Kustomization's `spec.components` (fluxcd/pkg `kustomize_generator.go`): the
    /// kustomization's own namespace, prefixes, suffixes and patches then apply to the
    /// components' objects too. Not memoised.
    pub fn render_dir_with(
        &mut self,
        dir: &str,
        components: &[ResourceRef],
    ) -> Result<Vec<Rendered>, String> {
        if components.is_empty() {
            return self.render_dir_owned(dir);
        }
        if !self.in_progress.insert(dir.to_string()) {
            return Err(format!("kustomization cycle through {dir}"));
        }
        let result = self.render_uncached_with(dir, components);
        self.in_progress.remove(dir);
        result
    }

    fn render_uncached(&mut self, dir: &str) -> Result<Vec<Rendered>, String> {
        self.render_uncached_with(dir, &[])
    }

    fn render_uncached_with(
        &mut self,
        dir: &str,
        extra_components: &[ResourceRef],
    ) -> Result<Vec<Rendered>, String> {
        let Some(k) = self.model.kustomize_dirs.get(dir) else {
            return Err(format!(
                "{} has no usable kustomization file",
                display_dir(dir)
            ));
        };
        let chain: Chain = Arc::new([k.file]);
        let mut out = Vec::new();
        for r in &k.resources {
            out.extend(self.render_ref(r, k.file, &chain)?);
        }
        for &object in &k.generated {
            let mut key = self.model.objects[object].key.clone();
            if let Some(hash) = self.model.hash_suffix(object) {
                key.name = format!("{}{hash}", key.name).into();
            }
            out.push(Rendered {
                object,
                key,
                chain: chain.clone(),
            });
        }
        for c in k.components.iter().chain(extra_components) {
            self.add_component(c, Some(k.file), &mut out)?;
        }
        // kustomize's builtin order: the patches, `namespace:`, the name prefix and suffix, then
        // `patchesJson6902`, then `transformers:`.
        let patches = self.model.kustomization_patches(k);
        let (late, early): (Vec<_>, Vec<_>) =
            patches.iter().partition(|p| p.field == "patchesJson6902");
        apply_renames(self.model, &early, &mut out);
        let transform = Transform {
            namespace: k.namespace.clone(),
            prefix: &k.name_prefix,
            suffix: &k.name_suffix,
        };
        for o in &mut out {
            transform.apply(o, self.model.hash_suffix(o.object));
        }
        apply_renames(self.model, &late, &mut out);
        apply_transformers(self.model, k.transformers(), &mut out)?;
        check_unique(&out, self.model)?;
        Ok(out)
    }

    /// Apply the component `c` to what a build accumulated so far (`out`): its resources join,
    /// then its transformers run over everything, as kustomize does. `parent` is the file of
    /// the kustomization that lists it (none for the one Flux generates).
    pub fn add_component(
        &mut self,
        c: &ResourceRef,
        parent: Option<FileId>,
        out: &mut Vec<Rendered>,
    ) -> Result<(), String> {
        let RefTarget::Dir(cdir) = &c.target else {
            if let RefTarget::Remote(_) = c.target {
                return Ok(());
            }
            // Only a kustomization's own `components` entry can be anything but a directory
            // (`Model::flux_components` keeps directories alone): `parent` lists it.
            let text = parent.map_or("", |f| c.text(&self.model.repo.file(f).yaml));
            return Err(format!("component `{text}` is not a directory"));
        };
        let Some(comp) = self.model.kustomize_dirs.get(cdir.as_str()) else {
            return Err(format!("component {cdir} has no kustomization file"));
        };
        let transform = Transform {
            namespace: comp.namespace.clone(),
            prefix: &comp.name_prefix,
            suffix: &comp.name_suffix,
        };
        let comp_file = comp.file;
        let chain: Chain = parent.into_iter().chain([comp_file]).collect();
        for r in &comp.resources {
            out.extend(self.render_ref(r, comp_file, &chain)?);
        }
        for o in out.iter_mut() {
            transform.apply(o, self.model.hash_suffix(o.object));
        }
        apply_transformers(self.model, comp.transformers(), out)
    }

    /// Render one resources entry of the kustomization file `listed_in`, prefixing `chain` to
    /// the chain of what it brings in.
    pub fn render_ref(
        &mut self,
        r: &ResourceRef,
        listed_in: FileId,
        chain: &Chain,
    ) -> Result<Vec<Rendered>, String> {
        let text = || r.text(&self.model.repo.file(listed_in).yaml);
        match &r.target {
            RefTarget::File(file) => Ok(self.file_objects(*file, chain)),
            RefTarget::Dir(path) => {
                let mut objs = self.render_dir_owned(path)?;
                // The objects a directory brings in through the same files share one chain,
                // and so do they with `chain` in front: each inner chain is prefixed once.
                let mut last: Option<(Chain, Chain)> = None;
                for o in &mut objs {
                    let prefixed = match &last {
                        Some((inner, prefixed)) if Arc::ptr_eq(inner, &o.chain) => prefixed.clone(),
                        _ => {
                            let prefixed: Chain =
                                chain.iter().chain(o.chain.iter()).copied().collect();
                            last = Some((o.chain.clone(), prefixed.clone()));
                            prefixed
                        }
                    };
                    o.chain = prefixed;
                }
                Ok(objs)
            }
            // What another file or a remote base holds is not modelled.
            RefTarget::OtherFile(_) | RefTarget::Remote(_) => Ok(Vec::new()),
            RefTarget::Missing(path) => {
                Err(format!("resource `{}` does not exist ({path})", text()))
            }
            RefTarget::OutsideRoot => {
                Err(format!("resource `{}` leaves the repository root", text()))
            }
        }
    }
}

/// Apply what `patches` do to identities: a patch that renames (see [`PatchOnTheWay::renames`])
/// gives each object it selects its new name or namespace. A generated object keeps its name
/// (its hash is computed from it).
pub fn apply_renames(model: &Model, patches: &[&PatchOnTheWay], out: &mut [Rendered]) {
    for p in patches {
        let Some((name, namespace)) = p.renames() else {
            continue;
        };
        for r in out
            .iter_mut()
            .filter(|r| model.hash_suffix(r.object).is_none())
        {
            let obj = model.object(r.object);
            let Ok(value) = model.repo.file(obj.file).yaml.value(obj.root) else {
                continue;
            };
            if p.selection(&value, r, &obj.key) != Some(crate::model::patch::Selection::Yes) {
                continue;
            }
            if let Some(name) = &name {
                r.key.name = Name::from(name.as_str());
            }
            if let Some(ns) = &namespace {
                r.key.namespace = Some(Name::from(ns.as_str()));
            }
        }
    }
}

/// Run a kustomization's `transformers:` after its own fields, in order, as kustomize does.
fn apply_transformers(
    model: &Model,
    transformers: &Transformers,
    out: &mut [Rendered],
) -> Result<(), String> {
    if let Some(e) = &transformers.error {
        return Err(e.clone());
    }
    for t in &transformers.identity {
        for o in out.iter_mut() {
            t.apply(o, model.hash_suffix(o.object));
        }
    }
    Ok(())
}

/// The words of [`check_unique`]'s error.
const RENDERED_TWICE: &str = "is rendered twice";

/// Whether a build error is [`check_unique`]'s: a claim about identities, which transformers
/// the model does not follow may change.
pub fn is_identity_conflict(error: &str) -> bool {
    error.contains(RENDERED_TWICE)
}

/// kustomize refuses two resources with one identity.
pub fn check_unique(objs: &[Rendered], model: &Model) -> Result<(), String> {
    let mut seen = HashSet::default();
    for o in objs {
        // No namespace and `default` are one id to kustomize.
        let ns = o.key.namespace.as_deref().filter(|n| *n != "default");
        if !seen.insert((&o.key.kind, o.key.group(), ns, &o.key.name)) {
            let obj = model.object(o.object);
            return Err(format!(
                "{} {RENDERED_TWICE} (again from {}:{})",
                o.key,
                model.repo.file(obj.file).path,
                obj.line
            ));
        }
    }
    Ok(())
}
