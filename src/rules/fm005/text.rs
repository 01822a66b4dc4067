//! How messages name the entries of a `healthChecks` list: as written, and counted.

use crate::model::{HealthCheck, Layer};
use crate::rules::plural;

/// `1 healthChecks entry`, `2 healthChecks entries`.
pub(super) fn entry_count(layer: &Layer) -> String {
    plural(
        layer.health_checks.len(),
        "healthChecks entry",
        "healthChecks entries",
    )
}

/// `Kind/namespace/name` (or `Kind/name`) of a `healthChecks` entry, as written.
pub(super) fn entry_text(hc: &HealthCheck) -> String {
    match &hc.namespace {
        Some(ns) => format!("{}/{ns}/{}", hc.kind, hc.name),
        None => format!("{}/{}", hc.kind, hc.name),
    }
}

/// [`entry_text`] of each entry, comma-separated.
pub(super) fn entries_text(entries: &[&HealthCheck]) -> String {
    entries
        .iter()
        .map(|hc| entry_text(hc))
        .collect::<Vec<_>>()
        .join(", ")
}
