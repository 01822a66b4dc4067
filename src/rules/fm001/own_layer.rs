//! Whether a `wait: true` layer exists for its FluxInstances (`rules/FM001.md`, "The
//! instance's own layer"): then `wait: false` in place is the fix, and the finding a warning
//! when nothing depends on it.

use std::collections::BTreeSet;

use crate::model::{LayerId, Model, Rendered, SourceRef};
use crate::rules::disposable::Analysis;

/// Why a `wait: true` layer exists for its FluxInstances (see `rules/FM001.md`, "The instance's
/// own layer"): every other object it applies serves them. It runs nothing of its own (no pod
/// template, no HelmRelease of another chart, no Flux Kustomization: what those deliver is not
/// in the repository), and no layer outside uses it except layers that depend on this one —
/// those get a `healthChecks` entry for it, so they wait for exactly what they use, as before.
pub(super) struct OwnLayer {
    /// The objects its dependents use, with the layers that use them.
    pub(super) checks: Vec<(Rendered, Vec<LayerId>)>,
    /// Every other object it applies, as `Kind/namespace/name`.
    pub(super) companions: Vec<String>,
}

/// The layer as the instance's own, or why it is not (the reason names the object).
pub(super) fn own_layer(
    model: &Model,
    analysis: &mut Analysis,
    layer_id: LayerId,
) -> Result<OwnLayer, String> {
    let layer = model.layer(layer_id);
    let dependents: BTreeSet<LayerId> = model.dependents(layer_id).into_iter().collect();
    let mut others: Vec<&Rendered> = Vec::new();
    for variant in &layer.variants {
        let products: Vec<SourceRef> = variant
            .inventory
            .iter()
            .filter(|r| model.is_flux_instance(r.object))
            .filter_map(|r| model.instance_source(r.object))
            .collect();
        others.extend(
            variant
                .inventory
                .iter()
                .filter(|r| !model.is_flux_instance(r.object) && !is_product(&products, r)),
        );
    }
    // What an object is reads its own document; who uses it searches the cluster: the cheap
    // question first.
    if let Some((r, what)) = others
        .iter()
        .find_map(|r| runs_its_own(model, r).map(|what| (r, what)))
    {
        return Err(format!("{} {what}", r.key));
    }
    let mut checks: Vec<(Rendered, Vec<LayerId>)> = Vec::new();
    let mut companions = BTreeSet::new();
    for r in others {
        let users = analysis.users(layer_id, r);
        if let Some(&other) = users.iter().find(|u| !dependents.contains(u)) {
            return Err(format!(
                "{} is used by {}, which does not depend on {}",
                r.key,
                model.layer(other).id,
                layer.id
            ));
        }
        companions.insert(r.key.to_string());
        if !users.is_empty() && !checks.iter().any(|(c, _)| c.key == r.key) {
            checks.push((r.clone(), users.into_iter().collect()));
        }
    }
    Ok(OwnLayer {
        checks,
        companions: companions.into_iter().collect(),
    })
}

/// Whether `r` is what an instance's sync creates (its root source, its root Kustomization):
/// the layer applies the instance's own object, which the instance owns.
fn is_product(products: &[SourceRef], r: &Rendered) -> bool {
    let ns = r.key.namespace.as_deref().unwrap_or("default");
    products.iter().any(|s| {
        r.key.name.as_str() == s.name
            && ns == s.namespace
            && ((r.key.group() == "source.toolkit.fluxcd.io" && r.key.kind.as_str() == s.kind)
                || r.key.is_flux_kustomization())
    })
}

/// What an object delivers that the repository does not show, if anything: pods it runs (its
/// image serves whatever it serves, webhooks and APIs included), a chart it installs (CRDs,
/// Services), another tree it applies.
fn runs_its_own(model: &Model, r: &Rendered) -> Option<&'static str> {
    match (r.key.group(), r.key.kind.as_str()) {
        ("helm.toolkit.fluxcd.io", "HelmRelease") => {
            return Some("installs a chart that is not the instance's");
        }
        ("kustomize.toolkit.fluxcd.io", "Kustomization") => {
            return Some("applies a tree of its own");
        }
        _ => {}
    }
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let pods = [
        ["spec", "containers"].as_slice(),
        ["spec", "template", "spec", "containers"].as_slice(),
        [
            "spec",
            "jobTemplate",
            "spec",
            "template",
            "spec",
            "containers",
        ]
        .as_slice(),
    ];
    pods.iter()
        .any(|p| yaml.lookup(obj.root, p).is_some())
        .then_some("runs pods")
}
