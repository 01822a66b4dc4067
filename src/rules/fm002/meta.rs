//! FM002's identity and document, from which the finding and the fixes read their texts: here so
//! that the fixes need not import `mod.rs`.

use crate::rules::RuleMeta;

pub(super) static META: RuleMeta = RuleMeta {
    id: "FM002",
    name: "disposable-workload-in-gated-layer",
    summary: "a disposable workload (a CI runner) health-gates a Flux Kustomization that holds other objects or has dependents",
    doc: include_str!("../../../rules/FM002.md"),
};
