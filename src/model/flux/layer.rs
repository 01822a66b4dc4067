//! The layer types: a Flux Kustomization as a delivery layer, its identity, source, health
//! checks and the directories its path stands for.

use crate::model::kustomize::Rendered;
use crate::model::{Name, ObjectIdx, ObjectKey};
use crate::parse::NodeId;

use super::spec::FluxSpec;

/// Index of a layer in [`crate::model::Model::layers`].
pub type LayerId = usize;

/// A `dependsOn` entry, or a layer's own identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayerRef {
    pub namespace: Name,
    pub name: Name,
}

impl std::fmt::Display for LayerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The source a layer reads (`spec.sourceRef`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceRef {
    pub kind: Name,
    pub name: Name,
    pub namespace: Name,
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// One `spec.healthChecks` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// The sequence item, for edits that drop it.
    pub item: NodeId,
}

impl HealthCheck {
    pub fn matches(&self, key: &ObjectKey) -> bool {
        self.kind == key.kind
            && self.name == key.name
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| key.namespace.as_ref().is_some_and(|k| k == ns))
    }
}

/// One directory a layer's path stands for (a path with placeholders has one per match).
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub dir: Name,
    /// Placeholder text and the directory name it matched, e.g. (`__PROVIDER__`, `hetzner`).
    pub bindings: Vec<(String, String)>,
    /// The directory has no kustomization file: Flux generates one.
    pub generated: bool,
    /// What the layer applies from this directory.
    pub inventory: Vec<Rendered>,
    /// Why the directory could not be rendered (its inventory is then incomplete).
    pub error: Option<Name>,
    /// kustomize fields and entries on the way whose effect on names and namespaces is not
    /// modelled (`helmCharts`, plugins and renaming patches or replacements among `transformers`
    /// and `replacements`), as `field in file`: the inventory's identities may differ from what
    /// Flux applies.
    pub unmodelled: Vec<String>,
}

/// A Flux Kustomization as a delivery layer.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    pub id: LayerRef,
    /// The Flux Kustomization object; `None` for the root Kustomization a FluxInstance creates.
    pub object: Option<ObjectIdx>,
    /// The FluxInstance whose `spec.sync` creates this layer (root layers of the operator).
    pub created_by_instance: Option<ObjectIdx>,
    /// Index of the root this layer is reached from (one per cluster in a fleet repository).
    pub cluster: usize,
    /// Reached from a root; unreferenced layers are modelled but not live.
    pub live: bool,
    pub applied_by: Option<LayerId>,
    pub source: SourceRef,
    /// The source's artifact root in this repository, when known.
    pub source_root: Option<Name>,
    /// `spec.path` as written.
    pub path: Name,
    pub variants: Vec<Variant>,
    pub wait: bool,
    pub health_checks: Vec<HealthCheck>,
    pub health_check_exprs: usize,
    pub depends_on: Vec<(LayerRef, NodeId)>,
    pub depends_on_ids: Vec<LayerId>,
    pub timeout: Option<Name>,
    pub interval: Option<Name>,
    pub target_namespace: Option<Name>,
    pub suspend: bool,
    pub prune: bool,
    pub post_build: bool,
    /// Applies to another cluster: its `spec.kubeConfig` (or a parent's) names one. Its objects
    /// live there, so they never lock this cluster's delivery.
    pub remote: bool,
    /// What the spec layers on the build and how it applies it.
    pub spec: FluxSpec,
}

impl Layer {
    /// Whether this layer health-gates the object: `wait: true` checks everything it applies and
    /// ignores `healthChecks`; otherwise only the listed objects are checked.
    pub fn gates(&self, key: &ObjectKey) -> bool {
        self.wait || self.health_checks.iter().any(|hc| hc.matches(key))
    }

    /// Every object of every variant, once per variant.
    pub fn inventory(&self) -> impl Iterator<Item = (&Variant, &Rendered)> {
        self.variants
            .iter()
            .flat_map(|v| v.inventory.iter().map(move |r| (v, r)))
    }
}

pub const FLUX_KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
pub const FLUX_OPERATOR_GROUP: &str = "fluxcd.controlplane.io";
