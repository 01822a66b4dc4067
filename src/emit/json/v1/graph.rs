//! The document of `graph`.

use serde::Serialize;

use super::{Diagnostic, Object, diagnostics};
use crate::emit::json::Sorted;
use crate::model::{self, Model};

/// The source a layer reads (`spec.sourceRef`).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Source<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
}

/// One `spec.healthChecks` entry.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct HealthCheck<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
}

/// An object a variant applies.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GraphObject<'a> {
    pub object: Object<'a>,
    /// The file that defines it, relative to PATH.
    pub file: &'a str,
    /// 1-based line of its document.
    pub line: usize,
    /// Whether the layer's health check includes it.
    pub gated: bool,
    /// The kustomization files that bring it in, outermost first.
    pub via: Vec<&'a str>,
}

/// One directory a layer's path stands for (a path with placeholders has one per match).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Variant<'a> {
    pub dir: &'a str,
    /// `[placeholder, directory name]` pairs.
    pub bindings: &'a [(String, String)],
    /// Flux generates its kustomization (there is no kustomization file).
    pub generated: bool,
    /// Why it could not be read fully.
    pub error: Option<&'a str>,
    pub objects: Vec<GraphObject<'a>>,
}

/// One layer of `graph --format json`.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct GraphLayer<'a> {
    /// Its index, which `applied_by` and `depends_on` refer to.
    pub id: usize,
    pub name: &'a str,
    pub namespace: &'a str,
    /// Whether a root applies it.
    pub live: bool,
    /// The file that defines it; null for one a FluxInstance creates.
    pub file: Option<&'a str>,
    /// The FluxInstance that creates it.
    pub created_by_instance: Option<Object<'a>>,
    pub applied_by: Option<usize>,
    pub source: Source<'a>,
    /// Where the source's root is in this repository, when known.
    pub source_root: Option<&'a str>,
    pub path: &'a str,
    pub wait: bool,
    pub health_checks: Vec<HealthCheck<'a>>,
    pub depends_on: &'a [usize],
    pub variants: Vec<Variant<'a>>,
}

impl<'a> GraphLayer<'a> {
    pub fn new(model: &'a Model, id: usize, l: &'a model::Layer) -> Self {
        let path = |f| model.repo.file(f).path.as_str();
        GraphLayer {
            id,
            name: &l.id.name,
            namespace: &l.id.namespace,
            live: l.live,
            file: l.object.map(|o| path(model.object(o).file)),
            created_by_instance: l.created_by_instance.map(|o| (&model.object(o).key).into()),
            applied_by: l.applied_by,
            source: Source {
                kind: &l.source.kind,
                name: &l.source.name,
                namespace: &l.source.namespace,
            },
            source_root: l.source_root.as_deref(),
            path: &l.path,
            wait: l.wait,
            health_checks: l
                .health_checks
                .iter()
                .map(|h| HealthCheck {
                    kind: &h.kind,
                    name: &h.name,
                    namespace: h.namespace.as_deref(),
                })
                .collect(),
            depends_on: &l.depends_on_ids,
            variants: l
                .variants
                .iter()
                .map(|v| Variant {
                    dir: &v.dir,
                    bindings: &v.bindings,
                    generated: v.generated,
                    error: v.error.as_deref(),
                    objects: v
                        .inventory
                        .iter()
                        .map(|r| GraphObject {
                            object: (&r.key).into(),
                            file: path(model.object(r.object).file),
                            line: model.object(r.object).line(),
                            gated: l.gates(&r.key),
                            via: r.chain.iter().map(|&f| path(f)).collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// `graph --format json`.
// `layers` is written a layer at a time, each layer `Sorted` on its own: a fleet's graph is tens
// of megabytes of text, and held whole as one `serde_json::Value` it took ten times that.
#[derive(Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Graph<'a, L> {
    #[cfg_attr(test, schemars(with = "Vec<Diagnostic<'static>>"))]
    pub diagnostics: Sorted<Vec<Diagnostic<'a>>>,
    /// Every layer, in model order.
    #[cfg_attr(test, schemars(with = "Vec<GraphLayer<'static>>"))]
    pub layers: L,
}

impl<'a, L: Serialize> Graph<'a, L> {
    pub fn new(diags: &'a [diagnostics::Diagnostic], layers: L) -> Self {
        Graph {
            diagnostics: Sorted(diagnostics(diags)),
            layers,
        }
    }
}
