//! Model: the typed view of a loaded repository — every Kubernetes object with its provenance,
//! every kustomize directory, every Flux Kustomization (a *layer*) with what it applies, and the
//! graph of which layer applies, waits on and health-gates which.

mod flux;
mod kustomize;
mod objects;
mod paths;

pub use flux::{HealthCheck, Layer, LayerId, LayerRef, SourceRef, Variant};
pub use kustomize::{
    KUSTOMIZATION_FILE_NAMES, KustomizeDir, RefTarget, Rendered, Renderer, ResourceRef,
    is_namespaced,
};
pub use objects::{Object, ObjectIdx, ObjectKey};
pub use paths::{join, normalize};

use std::collections::HashMap;

use crate::diagnostics::Diagnostic;
use crate::load::Repo;

/// What the user told the model that it cannot infer.
#[derive(Clone, Debug, Default)]
pub struct ModelOptions {
    /// Flux Kustomizations (`name` or `namespace/name`) to treat as roots.
    pub roots: Vec<String>,
    /// The artifact root of OCIRepository/Bucket/ExternalArtifact sources, relative to the
    /// repository root, when it should not be inferred.
    pub source_root: Option<String>,
}

/// The whole model of one repository.
#[derive(Debug)]
pub struct Model<'r> {
    pub repo: &'r Repo,
    pub objects: Vec<Object>,
    /// Objects of each file in document order.
    objects_by_file: HashMap<usize, Vec<ObjectIdx>>,
    /// kustomize directories by directory path.
    pub kustomize_dirs: HashMap<String, KustomizeDir>,
    pub layers: Vec<Layer>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'r> Model<'r> {
    /// Build the model of a loaded repository.
    pub fn build(repo: &'r Repo, options: &ModelOptions) -> Model<'r> {
        let mut diagnostics = Vec::new();
        let (objects, objects_by_file) = objects::extract(repo, &mut diagnostics);
        let mut model = Model {
            repo,
            objects,
            objects_by_file,
            kustomize_dirs: HashMap::new(),
            layers: Vec::new(),
            diagnostics,
        };
        let mut diags = std::mem::take(&mut model.diagnostics);
        model.kustomize_dirs = kustomize::parse_dirs(&model, &mut diags);
        model.diagnostics = diags;
        flux::build_layers(&mut model, options);
        model
    }

    /// Objects defined in a file, in document order.
    pub fn objects_in(&self, file: usize) -> &[ObjectIdx] {
        self.objects_by_file.get(&file).map_or(&[], Vec::as_slice)
    }

    pub fn object(&self, idx: ObjectIdx) -> &Object {
        &self.objects[idx]
    }

    pub fn layer(&self, id: LayerId) -> &Layer {
        &self.layers[id]
    }

    /// Live layers (reached from a root), in discovery order.
    pub fn live_layers(&self) -> impl Iterator<Item = (LayerId, &Layer)> {
        self.layers.iter().enumerate().filter(|(_, l)| l.live)
    }

    /// Layers that list `id` in `dependsOn`, directly or transitively (each once, in order).
    pub fn dependents(&self, id: LayerId) -> Vec<LayerId> {
        let mut out: Vec<LayerId> = Vec::new();
        let mut frontier = vec![id];
        while let Some(current) = frontier.pop() {
            for (other, layer) in self.layers.iter().enumerate() {
                if layer.depends_on_ids.contains(&current) && other != id && !out.contains(&other) {
                    out.push(other);
                    frontier.push(other);
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Layers `id` depends on, directly or transitively.
    pub fn dependencies(&self, id: LayerId) -> Vec<LayerId> {
        let mut out: Vec<LayerId> = Vec::new();
        let mut frontier = vec![id];
        while let Some(current) = frontier.pop() {
            for &dep in &self.layers[current].depends_on_ids {
                if dep != id && !out.contains(&dep) {
                    out.push(dep);
                    frontier.push(dep);
                }
            }
        }
        out.sort_unstable();
        out
    }
}
