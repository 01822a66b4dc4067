//! Flux layers: every Flux Kustomization (and the root one a FluxInstance makes) with its source,
//! resolved path variants, gating, dependencies and inventory — and which root makes it live.
//!
//! The layer types are `layer`. Reading one Flux Kustomization (or a FluxInstance's sync)
//! into a [`Layer`] is `read` (its spec's effects typed in `spec`), what flux-operator objects make is `operator`; `build` walks
//! from the roots (`roots`, the bootstrap cycle included), resolving each layer's source
//! (`source`) and path (`path`) and rendering what it applies (`render`); `depends` resolves
//! `dependsOn` and finds its cycles.

mod build;
mod depends;
mod layer;
mod operator;
mod path;
mod read;
mod render;
mod roots;
mod source;
mod spec;

pub use layer::{
    FLUX_KUSTOMIZE_GROUP, FLUX_OPERATOR_GROUP, HealthCheck, Layer, LayerId, LayerRef, SourceRef,
    Variant,
};
pub(in crate::model) use operator::instance_spec;
pub(in crate::model) use roots::{build_layers, unmatched_roots};
pub use spec::{APPLY_CONTEXT, ApplyContext, FluxSpec, SpecPatch};
