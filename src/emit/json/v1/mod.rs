//! Version 1 of the JSON output: the documents of `check`, `fix`, `simulate` and `graph` with
//! `--format json`. These types are the contract bots read (docs/reference.md); the model's and
//! the rollout's own types stay free to change. A field that changes meaning or goes away raises
//! [`VERSION`]; a new field does not. `docs/schema/fluxmend-v1.json` is generated from these
//! types (the schema test in this module keeps it so), and the integration tests validate real
//! outputs against it.
//!
//! Every type borrows what it shows from the report it is built from: building a document copies
//! no text.

mod check;
mod graph;
mod simulate;

use serde::Serialize;

pub use check::*;
pub use graph::*;
pub use simulate::*;

use crate::diagnostics;
use crate::model::{LayerRef, ObjectKey};

/// The version of this shape, written as `version` by `check` and `fix`.
pub const VERSION: u32 = 1;

/// The `version` field: always [`VERSION`] in this module's documents.
#[derive(Debug, Clone, Copy)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(VERSION)
    }
}

/// How bad a finding or diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl From<diagnostics::Severity> for Severity {
    fn from(s: diagnostics::Severity) -> Self {
        match s {
            diagnostics::Severity::Note => Severity::Note,
            diagnostics::Severity::Warning => Severity::Warning,
            diagnostics::Severity::Error => Severity::Error,
        }
    }
}

/// A Flux Kustomization (a layer) by identity.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Layer<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
}

impl<'a> From<&'a LayerRef> for Layer<'a> {
    fn from(l: &'a LayerRef) -> Self {
        Layer {
            name: &l.name,
            namespace: &l.namespace,
        }
    }
}

fn layers(refs: &[LayerRef]) -> Vec<Layer<'_>> {
    refs.iter().map(Layer::from).collect()
}

/// A Kubernetes object by identity; `namespace` is null for a cluster-scoped object (or one
/// whose namespace is left to the layer).
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Object<'a> {
    #[serde(rename = "apiVersion")]
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
}

impl<'a> From<&'a ObjectKey> for Object<'a> {
    fn from(k: &'a ObjectKey) -> Self {
        Object {
            api_version: &k.api_version,
            kind: &k.kind,
            namespace: k.namespace.as_deref(),
            name: &k.name,
        }
    }
}

/// A problem in the repository itself (not a rule finding), with its place when known.
#[derive(Debug, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Diagnostic<'a> {
    pub severity: Severity,
    /// Relative to PATH; `""` for the repository itself.
    pub file: &'a str,
    /// 1-based.
    pub line: Option<usize>,
    /// 1-based, in characters.
    pub column: Option<usize>,
    pub message: &'a str,
}

impl<'a> From<&'a diagnostics::Diagnostic> for Diagnostic<'a> {
    fn from(d: &'a diagnostics::Diagnostic) -> Self {
        Diagnostic {
            severity: d.severity.into(),
            file: d.file(),
            line: d.place.position().map(|(line, _)| line),
            column: d.place.position().map(|(_, column)| column),
            message: &d.message,
        }
    }
}

fn diagnostics(ds: &[diagnostics::Diagnostic]) -> Vec<Diagnostic<'_>> {
    ds.iter().map(Diagnostic::from).collect()
}

/// The `version` field's schema: the constant [`VERSION`].
#[cfg(test)]
impl schemars::JsonSchema for Version {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Version".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The version of the shape: raised when a field changes meaning or goes away, not for a new field.",
            "const": VERSION,
        })
    }
}

#[cfg(test)]
mod schema {
    use super::*;

    /// Every document of version 1 (untagged: the schema accepts any of them).
    #[derive(schemars::JsonSchema)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Document<'a> {
        Check(Check<'a>),
        Fix(FixReport<'a>),
        Failure(Failure<'a>),
        Rollout(Rollout<'a>),
        Graph(Graph<'a, Vec<GraphLayer<'a>>>),
    }

    /// The schema of every version 1 document, as `docs/schema/fluxmend-v1.json` holds it.
    pub fn generate() -> String {
        let mut schema = schemars::schema_for!(Document);
        if let Some(defs) = schema.get_mut("$defs").and_then(|d| d.as_object_mut()) {
            defs.values_mut().for_each(require_nullable);
        }
        schema.insert(
            "$id".into(),
            format!(
                "{}/blob/main/docs/schema/fluxmend-v1.json",
                env!("CARGO_PKG_REPOSITORY")
            )
            .into(),
        );
        schema.insert("title".into(), "fluxmend JSON output, version 1".into());
        serde_json::to_string_pretty(&schema).expect("a schema is JSON") + "\n"
    }

    /// Mark every nullable property of an object `schema` required: an `Option` field is written
    /// as `null` when unset, never left out (schemars takes it for optional). The fields a
    /// document really leaves out (a fix's phase) are not nullable.
    fn require_nullable(schema: &mut serde_json::Value) {
        let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
            return;
        };
        let is_null = |s: &serde_json::Value| s.get("type").is_some_and(|t| t == "null");
        let nullable: Vec<serde_json::Value> = properties
            .iter()
            .filter(|(_, p)| {
                p.get("type")
                    .and_then(|t| t.as_array())
                    .is_some_and(|types| types.iter().any(|t| t == "null"))
                    || p.get("anyOf")
                        .and_then(|a| a.as_array())
                        .is_some_and(|a| a.iter().any(is_null))
            })
            .map(|(name, _)| name.as_str().into())
            .collect();
        let required = schema
            .as_object_mut()
            .expect("an object schema")
            .entry("required")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(required) = required.as_array_mut() {
            for name in nullable {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }

    /// The committed schema is the one these types generate: `FLUXMEND_UPDATE_SCHEMA=1 cargo
    /// test --lib schema` rewrites it after a deliberate change of the types.
    #[test]
    fn committed_schema_is_generated_from_the_types() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schema/fluxmend-v1.json");
        let generated = generate();
        if std::env::var_os("FLUXMEND_UPDATE_SCHEMA").is_some() {
            std::fs::write(path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "{path} is not the schema of the v1 types: a change of the JSON output changes the \
             schema; after reading the change, `FLUXMEND_UPDATE_SCHEMA=1 cargo test --lib schema` \
             writes it"
        );
    }
}
