//! The walk that builds the layers: breadth-first from the roots, each layer's source and path
//! resolved and its variants rendered, and the Flux Kustomizations it applies added below it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diagnostics::{Diagnostic, Severity};
use crate::model::kustomize::{Renderer, is_identity_conflict};
use crate::model::{Model, ModelOptions, Name, ObjectIdx, ObjectKey, display_dir};

use super::layer::{Layer, LayerId, LayerRef, Variant};
use super::operator::generated_by_resource_set;
use super::path::{Bindings, expand_path};
use super::read::{is_flux_kustomization, layer_from_object, transformed_target_namespace};
use super::render::{flux_overlays, render_layer_dir, unmodelled_below, unmodelled_fields};
use super::source::Sources;
use super::spec::SharedContexts;

/// A Flux Kustomization a layer applies: its object, its identity, and the
/// `spec.targetNamespace` a transformer on the way writes into it.
type Applied = (ObjectIdx, ObjectKey, Option<String>);

/// Where a layer is defined, for its diagnostics.
struct At {
    file: String,
    line: usize,
}

impl At {
    fn diagnostic(&self, severity: Severity, message: String) -> Diagnostic {
        Diagnostic::new(severity, &self.file, message).at(self.line, 1)
    }
}

/// The layers as the walk finds them, with what it has learnt on the way.
pub(super) struct Builder<'m, 'r> {
    pub(super) renderer: Renderer<'m, 'r>,
    pub(super) layers: Vec<Layer>,
    pub(super) known: HashMap<(usize, LayerRef, Option<ObjectIdx>), LayerId>,
    pub(super) sources: Sources<'m>,
    pub(super) options: &'m ModelOptions,
    /// (cluster, id) of every root layer.
    pub(super) root_ids: HashSet<(usize, LayerRef)>,
    /// Flux Kustomization objects some root reaches.
    pub(super) reached: HashSet<ObjectIdx>,
    pub(super) diagnostics: Vec<Diagnostic>,
    /// The apply contexts of this walk's layers, each kept once as the layer is added: a walk
    /// holds every layer of its cluster until the model takes them in (issue 26).
    contexts: SharedContexts,
}

impl<'m, 'r> Builder<'m, 'r> {
    /// A builder with no layer yet, that knows how many Flux Kustomizations read each source.
    pub(super) fn new(
        model: &'m Model<'r>,
        options: &'m ModelOptions,
        flux_ks: &[ObjectIdx],
    ) -> Self {
        Builder {
            renderer: Renderer::new(model),
            layers: Vec::new(),
            known: HashMap::default(),
            sources: Sources::new(model, options, flux_ks),
            options,
            root_ids: HashSet::default(),
            reached: HashSet::default(),
            diagnostics: Vec::new(),
            contexts: SharedContexts::default(),
        }
    }
}

impl<'m, 'r> Builder<'m, 'r> {
    /// Walk from `root` on its own, as a cluster of its own: what a walk of the whole
    /// repository finds below that root, sharing this builder's kept renders. The walks of a
    /// fleet's roots are independent (each root is its own cluster), so they run side by side
    /// and are taken in, in order, by [`Builder::absorb`].
    pub(super) fn walk_alone(&self, root: Layer) -> Builder<'m, 'r> {
        let mut alone = Builder {
            renderer: self.renderer.fork(),
            layers: Vec::new(),
            known: HashMap::default(),
            sources: self.sources.fork(),
            options: self.options,
            root_ids: HashSet::default(),
            reached: HashSet::default(),
            diagnostics: Vec::new(),
            contexts: SharedContexts::default(),
        };
        let id = alone.add(root);
        alone
            .root_ids
            .insert((alone.layers[id].cluster, alone.layers[id].id.clone()));
        alone.walk(vec![id]);
        alone
    }

    /// Take in a walk of one root ([`Builder::walk_alone`]) as cluster `cluster`, its layers
    /// numbered after this builder's; returns its root's id.
    pub(super) fn absorb(&mut self, alone: Builder, cluster: usize) -> LayerId {
        let offset = self.layers.len();
        self.layers
            .extend(alone.layers.into_iter().map(|mut layer| {
                layer.cluster = cluster;
                layer.applied_by = layer.applied_by.map(|parent| parent + offset);
                layer
            }));
        self.known.extend(
            alone
                .known
                .into_iter()
                .map(|((_, id, object), layer)| ((cluster, id, object), layer + offset)),
        );
        self.root_ids
            .extend(alone.root_ids.into_iter().map(|(_, id)| (cluster, id)));
        self.reached.extend(alone.reached);
        self.diagnostics.extend(alone.diagnostics);
        offset
    }
}

impl Builder<'_, '_> {
    /// What the parent's build does to this layer's Flux Kustomization that the model does not
    /// follow: the unmodelled entries of the parent's variants that render it.
    fn parent_unmodelled(&self, id: LayerId) -> Vec<String> {
        let layer = &self.layers[id];
        let (Some(parent), Some(object)) = (layer.applied_by, layer.object) else {
            return Vec::new();
        };
        let mut out: Vec<String> = self.layers[parent]
            .variants
            .iter()
            .filter(|v| v.inventory.iter().any(|r| r.object == object))
            .flat_map(|v| v.unmodelled.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Resolve a layer's variants and render them; returns the Flux Kustomizations it applies.
    fn resolve(&mut self, id: LayerId) -> Vec<Applied> {
        let layer = self.layers[id].clone();
        let model = self.renderer.model;
        let object = layer.object.or(layer.created_by_instance);
        let at = At {
            file: object
                .map(|o| model.repo.file(model.object(o).file).path.clone())
                .unwrap_or_default(),
            line: object.map_or(1, |o| model.object(o).line()),
        };
        let Some((root, matches)) = self.locate(id, &layer, &at) else {
            return Vec::new();
        };
        let mut applied = Vec::new();
        let mut variants = Vec::new();
        for (dir, bindings) in matches {
            variants.push(self.render_variant(id, &layer, &at, dir, bindings, &mut applied));
        }
        variants.shrink_to_fit();
        let layer = &mut self.layers[id];
        layer.source_root = Some(root.into());
        layer.variants = variants;
        applied
    }

    /// The layer's source root and the directories its path stands for there, with a
    /// diagnostic where it reads another repository, or its path leaves the source root, climbs
    /// above it or exists nowhere; `None` when there is nothing to render.
    fn locate(
        &mut self,
        id: LayerId,
        layer: &Layer,
        at: &At,
    ) -> Option<(String, Vec<(String, Bindings)>)> {
        let model = self.renderer.model;
        if let Some(why) = self.sources.external(model, &self.layers, id) {
            // Another repository's layout is not this one's: resolving the path here would
            // claim objects it does not apply, or report a path missing that exists there.
            self.diagnostics.push(at.diagnostic(
                Severity::Note,
                format!(
                    "{}: its source {} is another repository ({why}): not analysed, and nothing it applies is modelled",
                    layer.id, layer.source
                ),
            ));
            return None;
        }
        let Some(root) = self
            .sources
            .root(model, layer.cluster, &layer.source, &layer.path)
        else {
            self.diagnostics.push(at.diagnostic(
                Severity::Error,
                format!(
                    "{}: spec.path `{}` does not exist in this repository",
                    layer.id, layer.path
                ),
            ));
            return None;
        };
        let mut clamped = false;
        let matches = match expand_path(model, &root, &layer.path, &mut clamped) {
            Ok(m) => m,
            Err(e) => {
                self.diagnostics
                    .push(at.diagnostic(Severity::Error, format!("{}: {e}", layer.id)));
                return None;
            }
        };
        if clamped {
            self.diagnostics.push(at.diagnostic(
                Severity::Warning,
                format!(
                    "{}: spec.path `{}` climbs above the source root; Flux clamps it there (securejoin), so the layer applies from {}",
                    layer.id,
                    layer.path,
                    display_dir(&root)
                ),
            ));
        }
        if matches.is_empty() {
            // A parent's transformers or replacements the model does not follow may rewrite the
            // path (a `__PROVIDER__` placeholder, say): then it is a note.
            let unsure = self.parent_unmodelled(id);
            let (severity, why) = if unsure.is_empty() {
                (Severity::Error, String::new())
            } else {
                (
                    Severity::Note,
                    format!(
                        ", as written; not fully modelled: {} may rewrite it",
                        unsure.join(", ")
                    ),
                )
            };
            self.diagnostics.push(at.diagnostic(
                severity,
                format!(
                    "{}: spec.path `{}` does not exist (source root {}){why}",
                    layer.id,
                    layer.path,
                    display_dir(&root)
                ),
            ));
        }
        Some((root, matches))
    }

    /// Render one directory of the layer, with the layer's overlays, reporting what fails or is
    /// not modelled; the Flux Kustomizations it applies are added to `applied`.
    fn render_variant(
        &mut self,
        id: LayerId,
        layer: &Layer,
        at: &At,
        dir: String,
        bindings: Bindings,
        applied: &mut Vec<Applied>,
    ) -> Variant {
        let model = self.renderer.model;
        let (generated, result) = render_layer_dir(&mut self.renderer, layer, &dir);
        let (mut inventory, mut error) = match result {
            Ok(objs) => (objs, None),
            Err(e) => (Vec::new(), Some(e)),
        };
        if error.is_none() {
            error = flux_overlays(model, layer, &mut inventory).err();
        }
        if let Some(e) = &error {
            // Two objects with one identity is a claim about names, which transformers the
            // model does not follow may change: a note there, not an error.
            let unsure = if is_identity_conflict(e) {
                let mut why = unmodelled_below(model, &dir);
                why.extend(self.parent_unmodelled(id));
                why
            } else {
                Vec::new()
            };
            let diagnostic = if unsure.is_empty() {
                at.diagnostic(
                    Severity::Error,
                    format!("{} ({}): {e}", layer.id, display_dir(&dir)),
                )
            } else {
                at.diagnostic(
                    Severity::Note,
                    format!(
                        "{} ({}): {e}, as far as fluxmend can tell; not fully modelled: {} \
                         may rename or re-namespace, so Flux may build it",
                        layer.id,
                        display_dir(&dir),
                        unsure.join(", ")
                    ),
                )
            };
            self.diagnostics.push(diagnostic);
        }
        for r in &inventory {
            if is_flux_kustomization(model, r.object) {
                applied.push((
                    r.object,
                    r.key.clone(),
                    transformed_target_namespace(model, r),
                ));
            }
            // flux-operator applies what a ResourceSet generates: its Flux Kustomizations
            // are layers below the one that applies the ResourceSet.
            for generated in generated_by_resource_set(model, r.object) {
                if is_flux_kustomization(model, generated) {
                    applied.push((generated, model.object(generated).key.clone(), None));
                }
            }
        }
        let unmodelled = unmodelled_fields(model, &dir, &inventory);
        if !unmodelled.is_empty() {
            self.diagnostics.push(at.diagnostic(
                Severity::Note,
                format!(
                    "{} ({}): not fully modelled: {} may rename, re-namespace or add objects; what fluxmend shows of this layer may differ from what Flux applies",
                    layer.id,
                    display_dir(&dir),
                    unmodelled.join(", ")
                ),
            ));
        }
        // Kept for the whole run, and there is one per layer of a fleet: no growth slack.
        inventory.shrink_to_fit();
        Variant {
            // The repository's own copy of the folder's path, when it has the folder.
            dir: model
                .repo
                .dir_path(&dir)
                .map_or_else(|| Name::from(dir), |shared| Name::from(shared.clone())),
            bindings,
            generated,
            inventory,
            error: error.map(Name::from),
            unmodelled,
        }
    }

    pub(super) fn add(&mut self, mut layer: Layer) -> LayerId {
        if let Some(obj) = layer.object {
            self.reached.insert(obj);
        }
        let key = (layer.cluster, layer.id.clone(), layer.object);
        if let Some(&existing) = self.known.get(&key) {
            return existing;
        }
        let id = self.layers.len();
        self.known.insert(key, id);
        self.contexts.share(&mut layer.spec.apply_context);
        self.layers.push(layer);
        id
    }

    /// Breadth-first from the roots: each layer's inventory names the layers it applies.
    pub(super) fn walk(&mut self, roots: Vec<LayerId>) {
        let mut queue: std::collections::VecDeque<LayerId> = roots.into();
        let mut done = HashSet::default();
        while let Some(id) = queue.pop_front() {
            if !done.insert(id) {
                continue;
            }
            let live = self.layers[id].live;
            let cluster = self.layers[id].cluster;
            for (obj, key, target_namespace) in self.resolve(id) {
                let model = self.renderer.model;
                let mut child = layer_from_object(model, obj, &key, cluster, Some(id));
                if target_namespace.is_some() {
                    child.target_namespace = target_namespace.map(Name::from);
                }
                // A Flux Kustomization applied to another cluster is reconciled there.
                child.remote |= self.layers[id].remote;
                // The bootstrap Kustomization applies itself; a FluxInstance's root is the same layer.
                if self.root_ids.contains(&(cluster, child.id.clone())) {
                    self.reached.insert(obj);
                    continue;
                }
                child.live = live;
                let before = self.layers.len();
                let child_id = self.add(child);
                if child_id == before {
                    queue.push_back(child_id);
                }
            }
        }
    }
}
