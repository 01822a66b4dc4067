//! FM003's identity and document, from which the fix reads its trade-offs, and the key it is
//! about.

use crate::rules::RuleMeta;

pub(super) static META: RuleMeta = RuleMeta {
    id: "FM003",
    name: "multi-identity-verify",
    summary: "a cosign verify block lists more than one matchOIDCIdentity entry, which cosign's bundle verification refuses",
    doc: include_str!("../../../rules/FM003.md"),
};

pub(super) const LIST: &str = "matchOIDCIdentity";
