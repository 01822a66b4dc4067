//! The documents flux-operator builds from one ResourceSet: each resource template rendered
//! once per input set, `resourcesTemplate` rendered and parsed, disabled objects left out,
//! duplicates kept once, Flux objects given the ResourceSet's namespace.

use std::collections::BTreeMap;

use rustc_hash::FxHashSet as HashSet;

use crate::parse::{Value, YamlFile};

use super::budget::{Budget, MAX_NODES, NotExpanded};
use super::inputs::{Inputs, input_sets};
use super::render::render_within;

/// The documents flux-operator builds from a ResourceSet: every template once per input set
/// (once without inputs when there are none), objects annotated
/// `fluxcd.controlplane.io/reconcile: disabled` left out, duplicates (group, kind, namespace,
/// name) kept once, a missing namespace of a Flux object set to the ResourceSet's.
pub(super) fn build(
    rset: &Value,
    namespace: &str,
    providers: &BTreeMap<(String, String), Inputs>,
) -> Result<Vec<Value>, NotExpanded> {
    let sets = input_sets(rset, namespace, providers)?;
    let runs: Vec<Option<&Inputs>> = if sets.is_empty() {
        vec![None]
    } else {
        sets.iter().map(Some).collect()
    };
    let mut templates: Vec<(Option<&Value>, Option<&str>)> = vec![(
        rset.path(&["spec", "resources"]),
        rset.str_at(&["spec", "resourcesTemplate"]),
    )];
    if let Some(steps) = rset.path(&["spec", "steps"]) {
        templates = steps
            .seq()
            .iter()
            .map(|s| (s.get("resources"), s.str_at(&["resourcesTemplate"])))
            .collect();
    }
    let mut budget = Budget::new();
    let mut out: Vec<Value> = Vec::new();
    let mut keys: HashSet<(String, String, String, String)> = HashSet::default();
    for (resources, text) in templates {
        let mut built: Vec<Value> = Vec::new();
        for resource in resources.map(Value::seq).unwrap_or_default() {
            for inputs in &runs {
                built.push(render_value(resource, *inputs, &mut budget)?);
            }
        }
        if let Some(text) = text {
            for inputs in &runs {
                let rendered = render_within(text, *inputs, &mut budget)?;
                let (yaml, error) = YamlFile::parse(&rendered);
                if let Some(e) = error {
                    return Err(format!(
                        "resourcesTemplate does not parse once rendered ({}:{}: {})",
                        e.line, e.column, e.message
                    )
                    .into());
                }
                for d in yaml.docs() {
                    let v = yaml.value_with_budget(d.root, budget.nodes).map_err(|_| {
                        NotExpanded::Limit(format!("it generates more than {MAX_NODES} nodes"))
                    })?;
                    budget.nodes(node_count(&v))?;
                    if v != Value::Null {
                        built.push(v);
                    }
                }
            }
        }
        for mut object in built {
            if object.str_at(&[
                "metadata",
                "annotations",
                "fluxcd.controlplane.io/reconcile",
            ]) == Some("disabled")
            {
                continue;
            }
            let group = object
                .str_at(&["apiVersion"])
                .and_then(|a| a.rsplit_once('/'))
                .map_or("", |(g, _)| g)
                .to_string();
            if group.ends_with(".toolkit.fluxcd.io")
                && object.str_at(&["metadata", "namespace"]).is_none()
            {
                set_namespace(&mut object, namespace);
            }
            let key = (
                group,
                object.str_at(&["kind"]).unwrap_or_default().to_string(),
                object
                    .str_at(&["metadata", "namespace"])
                    .unwrap_or_default()
                    .to_string(),
                object
                    .str_at(&["metadata", "name"])
                    .unwrap_or_default()
                    .to_string(),
            );
            if keys.insert(key) {
                out.push(object);
            }
        }
    }
    Ok(out)
}

/// How many nodes a value holds (an iterative count: values may be deep).
fn node_count(value: &Value) -> usize {
    let mut n = 0;
    let mut todo = vec![value];
    while let Some(v) = todo.pop() {
        n += 1;
        match v {
            Value::Seq(items) => todo.extend(items),
            Value::Map(entries) => {
                for (k, v) in entries {
                    todo.push(k);
                    todo.push(v);
                }
            }
            _ => {}
        }
    }
    n
}

fn set_namespace(object: &mut Value, namespace: &str) {
    let Value::Map(entries) = object else { return };
    let Some((_, Value::Map(meta))) = entries
        .iter_mut()
        .find(|(k, _)| k.as_str() == Some("metadata"))
    else {
        return;
    };
    meta.push((
        Value::Str("namespace".into(), false),
        Value::Str(namespace.into(), false),
    ));
}

/// A resource template with every string (keys included) rendered.
fn render_value(
    value: &Value,
    inputs: Option<&Inputs>,
    budget: &mut Budget,
) -> Result<Value, NotExpanded> {
    budget.nodes(1)?;
    Ok(match value {
        Value::Str(s, quoted) if s.contains("<<") => {
            scalar(&render_within(s, inputs, budget)?, *quoted)
        }
        Value::Seq(items) => Value::Seq(
            items
                .iter()
                .map(|i| render_value(i, inputs, budget))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(entries) => Value::Map(
            entries
                .iter()
                .map(|(k, v)| {
                    Ok((
                        render_value(k, inputs, budget)?,
                        render_value(v, inputs, budget)?,
                    ))
                })
                .collect::<Result<_, NotExpanded>>()?,
        ),
        other => other.clone(),
    })
}

/// A rendered scalar as the YAML flux-operator parses after rendering reads it: a `quote`d
/// value is the string inside the quotes.
fn scalar(text: &str, quoted: bool) -> Value {
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            return Value::Str(text[1..text.len() - 1].to_string(), true);
        }
    }
    Value::Str(text.to_string(), quoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One resource template, two input sets: names, a slugified label, a quoted value read
    /// back as the string, the ResourceSet's namespace given to the Flux objects, an object
    /// annotated `reconcile: disabled` left out, and a duplicate kept once.
    #[test]
    fn builds_each_template_once_per_input_set() {
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: apps\n  namespace: tenants\nspec:\n  inputs:\n    - tenant: team1\n      semver: \">=1.0.0-rc.0\"\n    - tenant: team2\n      semver: \">=2.0.0\"\n  resources:\n    - apiVersion: source.toolkit.fluxcd.io/v1\n      kind: OCIRepository\n      metadata:\n        name: << inputs.tenant >>-app\n        labels:\n          semver: << inputs.semver | slugify >>\n      spec:\n        ref:\n          semver: << inputs.semver | quote >>\n    - apiVersion: v1\n      kind: Namespace\n      metadata:\n        name: shared\n    - apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: << inputs.tenant >>-off\n        annotations:\n          fluxcd.controlplane.io/reconcile: disabled\n";
        let (yaml, e) = YamlFile::parse(text);
        assert!(e.is_none());
        let rset = yaml.value(yaml.docs()[0].root).unwrap();
        let built = build(&rset, "tenants", &BTreeMap::new()).unwrap();
        let ids: Vec<(String, String, String)> = built
            .iter()
            .map(|o| {
                let s = |k: &[&str]| o.str_at(k).unwrap_or_default().to_string();
                (
                    s(&["kind"]),
                    s(&["metadata", "namespace"]),
                    s(&["metadata", "name"]),
                )
            })
            .collect();
        let id = |k: &str, ns: &str, n: &str| (k.to_string(), ns.to_string(), n.to_string());
        assert_eq!(
            ids,
            [
                id("OCIRepository", "tenants", "team1-app"),
                id("OCIRepository", "tenants", "team2-app"),
                id("Namespace", "", "shared"),
            ]
        );
        assert_eq!(
            built[0].str_at(&["metadata", "labels", "semver"]),
            Some("1-0-0-rc-0")
        );
        assert_eq!(
            built[0].str_at(&["spec", "ref", "semver"]),
            Some(">=1.0.0-rc.0")
        );
    }
}
