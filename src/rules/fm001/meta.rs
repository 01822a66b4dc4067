//! FM001's identity and document, from which the finding and the fixes read their texts.

use std::sync::LazyLock;

use crate::rules::{RuleMeta, report_text};

pub(super) static META: RuleMeta = RuleMeta {
    id: "FM001",
    name: "flux-instance-in-gated-layer",
    summary: "a FluxInstance is health-gated by the Flux Kustomization that applies it",
    doc: include_str!("../../../rules/FM001.md"),
};

pub(super) static TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "move"));
