//! The comparison: the objects each side renders as a multiset, and the first difference said
//! in a sentence.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet as HashSet;

use crate::model::ObjectKey;
use crate::parse::Value;

use super::build::Build;
use super::plan::LayerKey;
use crate::verify::yaml::show;

/// (cluster, document) → how often the affected layers render it.
pub(super) type Multiset = BTreeMap<(usize, Value), (usize, BTreeSet<String>)>;

pub(super) fn multiset(
    builds: &[Build],
    touched: &HashSet<LayerKey>,
    excluded: &HashSet<(usize, String, String, String, String)>,
    allowed: &crate::verify::Allowed,
    after: bool,
) -> Multiset {
    let mut out: Multiset = BTreeMap::new();
    for b in builds {
        let Ok(docs) = &b.docs else { continue };
        for d in docs {
            let s = |keys: &[&str]| d.str_at(keys).unwrap_or_default().to_string();
            let (api, kind, ns, name) = (
                s(&["apiVersion"]),
                s(&["kind"]),
                s(&["metadata", "namespace"]),
                s(&["metadata", "name"]),
            );
            let flux_layer = kind == "Kustomization"
                && api.starts_with("kustomize.toolkit.fluxcd.io/")
                && touched.iter().any(|(c, lns, lname)| {
                    *c == b.layer.0 && *lname == name && (ns.is_empty() || *lns == ns)
                });
            let key = ObjectKey {
                api_version: api.as_str().into(),
                kind: kind.as_str().into(),
                namespace: (!ns.is_empty()).then(|| ns.as_str().into()),
                name: name.as_str().into(),
            };
            if flux_layer || excluded.contains(&(b.layer.0, api, kind, ns, name)) {
                continue;
            }
            let doc = allowed.content(&key, d.clone(), after);
            let entry = out
                .entry((b.layer.0, doc))
                .or_insert_with(|| (0, BTreeSet::new()));
            entry.0 += 1;
            entry.1.insert(format!("{}/{}", b.layer.1, b.layer.2));
        }
    }
    out
}

pub(super) fn identity(v: &Value) -> String {
    let s = |keys: &[&str]| v.str_at(keys).unwrap_or_default().to_string();
    let ns = s(&["metadata", "namespace"]);
    format!(
        "{} {}{}",
        s(&["kind"]),
        if ns.is_empty() {
            String::new()
        } else {
            format!("{ns}/")
        },
        s(&["metadata", "name"])
    )
}

/// Which object changed, and how.
pub(super) fn describe(before: &Multiset, after: &Multiset) -> String {
    let only = |a: &Multiset, b: &Multiset| -> Vec<(usize, Value, usize, BTreeSet<String>)> {
        a.iter()
            .filter_map(|((c, v), (n, layers))| {
                let other = b.get(&(*c, v.clone())).map_or(0, |(m, _)| *m);
                (*n > other).then(|| (*c, v.clone(), n - other, layers.clone()))
            })
            .collect()
    };
    let gone = only(before, after);
    let new = only(after, before);
    let layers = |l: &BTreeSet<String>| l.iter().cloned().collect::<Vec<_>>().join(", ");
    let mut lines = Vec::new();
    let mut used = vec![false; new.len()];
    for (c, v, n, ls) in &gone {
        let same_kind_name = |w: &Value| {
            w.str_at(&["kind"]) == v.str_at(&["kind"])
                && w.str_at(&["metadata", "name"]) == v.str_at(&["metadata", "name"])
        };
        match new
            .iter()
            .enumerate()
            .find(|(i, (c2, w, _, _))| !used[*i] && c2 == c && same_kind_name(w))
        {
            Some((i, (_, w, _, ls2))) => {
                used[i] = true;
                lines.push(format!(
                    "{} (layer {}) changes: {}",
                    identity(v),
                    layers(ls),
                    first_difference(v, w, "").map_or_else(
                        || "its content differs".into(),
                        |(p, a, b)| format!("{p}: {} → {}", shown(a.as_ref()), shown(b.as_ref()))
                    ),
                ));
                let _ = ls2;
            }
            None => lines.push(format!(
                "{} is rendered {n} time(s) fewer after the change (was in layer {})",
                identity(v),
                layers(ls)
            )),
        }
    }
    for (i, (_, v, n, ls)) in new.iter().enumerate() {
        if !used[i] {
            lines.push(format!(
                "{} is rendered {n} more time(s) after the change (layer {})",
                identity(v),
                layers(ls)
            ));
        }
    }
    lines.truncate(5);
    lines.join("; ")
}

pub(super) fn shown(v: Option<&Value>) -> String {
    v.map_or("(absent)".into(), show)
}

/// The first path where two values differ: (path, before, after).
pub(super) fn first_difference(
    before: &Value,
    after: &Value,
    path: &str,
) -> Option<(String, Option<Value>, Option<Value>)> {
    if before == after {
        return None;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (before, after) {
        (Value::Map(ours), Value::Map(theirs)) => {
            for (k, v) in ours {
                let key = k.as_str().unwrap_or("?");
                match theirs.iter().find(|(k2, _)| k2 == k) {
                    Some((_, w)) => {
                        if let Some(d) = first_difference(v, w, &join(key)) {
                            return Some(d);
                        }
                    }
                    None => return Some((join(key), Some(v.clone()), None)),
                }
            }
            theirs
                .iter()
                .find(|(k, _)| !ours.iter().any(|(k2, _)| k2 == k))
                .map(|(k, w)| (join(k.as_str().unwrap_or("?")), None, Some(w.clone())))
        }
        (Value::Seq(ours), Value::Seq(theirs)) if ours.len() == theirs.len() => ours
            .iter()
            .zip(theirs)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{path}[{i}]"))),
        _ => Some((
            if path.is_empty() {
                ".".into()
            } else {
                path.into()
            },
            Some(before.clone()),
            Some(after.clone()),
        )),
    }
}
