//! A ResourceSet's input sets: its inline `spec.inputs`, then those of the `Static`
//! ResourceSetInputProviders of the repository it names in `spec.inputsFrom`, concatenated (the
//! `Flatten` strategy); inputs from a cluster or a remote service cannot be known.

use std::collections::BTreeMap;

use crate::load::file::SourceFile;
use crate::parse::Value;

/// The group flux-operator's kinds belong to.
pub(super) const GROUP: &str = "fluxcd.controlplane.io";

/// One input set: input name → value.
pub(super) type Inputs = BTreeMap<String, Value>;

fn is(value: &Value, kind: &str) -> bool {
    value.str_at(&["kind"]) == Some(kind)
        && value
            .str_at(&["apiVersion"])
            .is_some_and(|a| a.starts_with(&format!("{GROUP}/")))
}

/// The `Static` ResourceSetInputProviders of the repository, by (namespace, name): their one
/// input set, `defaultValues`.
pub(super) fn static_providers(files: &[&SourceFile]) -> BTreeMap<(String, String), Inputs> {
    let mut out = BTreeMap::new();
    for file in files {
        if !file.yaml.text().contains("ResourceSetInputProvider") {
            continue;
        }
        for doc in file.yaml.docs() {
            let Ok(v) = file.yaml.value(doc.root) else {
                continue;
            };
            if !is(&v, "ResourceSetInputProvider") || v.str_at(&["spec", "type"]) != Some("Static")
            {
                continue;
            }
            let key = (
                v.str_at(&["metadata", "namespace"])
                    .unwrap_or("default")
                    .to_string(),
                v.str_at(&["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
            );
            out.insert(key, map_of(v.path(&["spec", "defaultValues"])));
        }
    }
    out
}

fn map_of(value: Option<&Value>) -> Inputs {
    match value {
        Some(Value::Map(entries)) => entries
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.clone())))
            .collect(),
        _ => Inputs::new(),
    }
}

/// The input sets of a ResourceSet: its own, then its providers', concatenated (`Flatten`).
pub(super) fn input_sets(
    rset: &Value,
    namespace: &str,
    providers: &BTreeMap<(String, String), Inputs>,
) -> Result<Vec<Inputs>, String> {
    if let Some(strategy) = rset.str_at(&["spec", "inputStrategy", "name"])
        && strategy != "Flatten"
    {
        return Err(format!("inputStrategy {strategy}"));
    }
    let mut sets: Vec<Inputs> = rset
        .path(&["spec", "inputs"])
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .map(|i| map_of(Some(i)))
        .collect();
    let mut from: Vec<(String, String)> = Vec::new();
    for reference in rset
        .path(&["spec", "inputsFrom"])
        .map(Value::seq)
        .unwrap_or_default()
    {
        let kind = reference
            .str_at(&["kind"])
            .unwrap_or("ResourceSetInputProvider");
        let Some(name) = reference.str_at(&["name"]) else {
            return Err(
                "inputsFrom selects providers by label, whose inputs the cluster holds".into(),
            );
        };
        if kind != "ResourceSetInputProvider" {
            return Err(format!("inputsFrom {kind}/{name}"));
        }
        from.push((namespace.to_string(), name.to_string()));
    }
    from.sort();
    for key in from {
        let inputs = providers.get(&key).ok_or_else(|| {
            format!(
                "inputsFrom ResourceSetInputProvider {}/{}: not a Static provider of this repository; its inputs come from a remote service",
                key.0, key.1
            )
        })?;
        sets.push(inputs.clone());
    }
    Ok(sets)
}
