//! The `healthChecks` entries that gate an instance or what it creates: they make the finding
//! with `wait: false`, and every fix drops them.

use crate::model::{HealthCheck, Layer, Model, Rendered};

/// The `healthChecks` entries that gate on the instance or what it creates.
pub(super) fn naming_health_checks<'l>(
    model: &Model,
    layer: &'l Layer,
    r: &Rendered,
) -> Vec<&'l HealthCheck> {
    let source = model.instance_source(r.object);
    layer
        .health_checks
        .iter()
        .filter(|hc| {
            hc.matches(&r.key)
                || source.as_ref().is_some_and(|s| {
                    (hc.kind == "Kustomization" || hc.kind == s.kind)
                        && hc.name == s.name
                        && hc.namespace.as_ref().is_none_or(|ns| *ns == s.namespace)
                })
        })
        .collect()
}
