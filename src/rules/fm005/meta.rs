//! FM005's identity and document, from which the fix reads its trade-offs.

use crate::rules::RuleMeta;

pub(super) static META: RuleMeta = RuleMeta {
    id: "FM005",
    name: "health-checks-ignored",
    summary: "a Flux Kustomization with wait: true lists healthChecks, which Flux ignores",
    doc: include_str!("../../../rules/FM005.md"),
};
