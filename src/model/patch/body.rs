//! What a patch is and what it writes: a strategic-merge document or JSON6902 operations read
//! from its text, the target it names itself, the fields it sets, and whether two patches set
//! the same field.

use crate::parse::{Value, YamlFile};

use super::selector::Selector;

/// One JSON6902 operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonOp {
    pub op: String,
    pub path: String,
    pub from: Option<String>,
    pub value: Option<Value>,
}

/// What a patch does: a strategic-merge document or a list of JSON6902 operations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PatchBody {
    StrategicMerge(Value),
    Json6902(Vec<JsonOp>),
}

/// A field a patch writes, as path segments (`spec`, `replicas`); list items are
/// `[3]` by index (JSON6902) or `[name=manager]` by merge key (strategic merge).
pub type FieldPath = Vec<String>;

impl PatchBody {
    /// Read a patch's text: a YAML (or JSON) sequence of operations is JSON6902, a mapping a
    /// strategic-merge patch.
    pub fn parse(text: &str) -> Result<PatchBody, String> {
        let (yaml, error) = YamlFile::parse(text);
        if let Some(e) = error {
            return Err(format!(
                "the patch does not parse ({}:{}: {})",
                e.line, e.column, e.message
            ));
        }
        let Some(doc) = yaml.docs().first() else {
            return Err("the patch is empty".into());
        };
        let value = yaml
            .value(doc.root)
            .map_err(|e| format!("the patch: {e}"))?;
        match value {
            Value::Seq(items) => items
                .iter()
                .map(|item| {
                    let op = item
                        .str_at(&["op"])
                        .ok_or("a JSON6902 operation without `op`")?;
                    let path = item
                        .str_at(&["path"])
                        .ok_or("a JSON6902 operation without `path`")?;
                    Ok(JsonOp {
                        op: op.to_string(),
                        path: path.to_string(),
                        from: item.str_at(&["from"]).map(str::to_string),
                        value: item.get("value").cloned(),
                    })
                })
                .collect::<Result<_, &str>>()
                .map(PatchBody::Json6902)
                .map_err(str::to_string),
            map @ Value::Map(_) => Ok(PatchBody::StrategicMerge(map)),
            _ => Err("a patch is a mapping (strategic merge) or a list of operations".into()),
        }
    }

    /// The object a strategic-merge patch without `target` names itself.
    pub fn implicit_target(&self) -> Option<Selector> {
        let PatchBody::StrategicMerge(v) = self else {
            return None;
        };
        let api_version = v.str_at(&["apiVersion"]).unwrap_or("");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        Some(Selector {
            group: Some(group.to_string()).filter(|g| !g.is_empty()),
            version: Some(version.to_string()).filter(|v| !v.is_empty()),
            kind: v.str_at(&["kind"]).map(str::to_string),
            name: v.str_at(&["metadata", "name"]).map(str::to_string),
            namespace: v.str_at(&["metadata", "namespace"]).map(str::to_string),
            ..Selector::default()
        })
    }

    /// The fields the patch writes (or removes), leaves only; a strategic-merge patch's
    /// identity (`apiVersion`, `kind`, `metadata.name`, `metadata.namespace`) is not a write.
    pub fn fields(&self) -> Vec<FieldPath> {
        let mut out = Vec::new();
        match self {
            PatchBody::StrategicMerge(v) => {
                if let Value::Map(entries) = v {
                    for (k, val) in entries {
                        let k = k.as_str().unwrap_or_default();
                        if k == "apiVersion" || k == "kind" {
                            continue;
                        }
                        let mut path = vec![k.to_string()];
                        if k == "metadata"
                            && let Value::Map(meta) = val
                        {
                            for (mk, mv) in meta {
                                let mk = mk.as_str().unwrap_or_default();
                                if mk != "name" && mk != "namespace" {
                                    path.push(mk.to_string());
                                    leaves(mv, &mut path, &mut out);
                                    path.pop();
                                }
                            }
                            continue;
                        }
                        leaves(val, &mut path, &mut out);
                    }
                }
            }
            PatchBody::Json6902(ops) => {
                for op in ops {
                    if op.op != "test" {
                        out.push(pointer_segments(&op.path));
                    }
                }
            }
        }
        out
    }
}

/// Whether two field paths write the same field: one is a prefix of the other, list items
/// compared by index or merge key when both use the same form, and assumed the same item when
/// one patch selects by index and the other by key. Two appends to the same list (`…/-`) do
/// not overlap: both items end up in it whichever applies first.
pub fn fields_overlap(a: &[String], b: &[String]) -> bool {
    let appends = |p: &[String]| p.last().is_some_and(|s| s == "[-]");
    if appends(a) && appends(b) && a.len() == b.len() && a[..a.len() - 1] == b[..b.len() - 1] {
        return false;
    }
    a.iter().zip(b.iter()).all(|(x, y)| {
        let item = |s: &str| s.starts_with('[');
        if item(x) && item(y) {
            x == y || x.contains('=') != y.contains('=') || x == "[-]" || y == "[-]"
        } else {
            x == y
        }
    })
}

/// `/spec/template/spec/containers/0/args` as JSON pointer written (`~1`, `~0` unescaped).
pub(super) fn pointer_segments(pointer: &str) -> FieldPath {
    pointer
        .split('/')
        .skip(1)
        .map(|s| {
            let s = s.replace("~1", "/").replace("~0", "~");
            if s == "-" || (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())) {
                format!("[{s}]")
            } else {
                s
            }
        })
        .collect()
}

/// Collect the leaf paths below `value` (a strategic-merge patch); list items of maps are
/// keyed by `name` (the merge key of containers, volumes, env and ports).
fn leaves(value: &Value, path: &mut FieldPath, out: &mut Vec<FieldPath>) {
    match value {
        Value::Map(entries) if !entries.is_empty() => {
            for (k, v) in entries {
                let k = k.as_str().unwrap_or_default();
                if k.starts_with("$patch") || k.starts_with("$setElementOrder") {
                    continue;
                }
                path.push(k.to_string());
                leaves(v, path, out);
                path.pop();
            }
        }
        Value::Seq(items) if items.iter().all(|i| i.str_at(&["name"]).is_some()) => {
            for item in items {
                let key = format!("[name={}]", item.str_at(&["name"]).unwrap_or_default());
                path.push(key);
                let rest: Vec<(Value, Value)> = match item {
                    Value::Map(e) => e
                        .iter()
                        .filter(|(k, _)| k.as_str() != Some("name"))
                        .cloned()
                        .collect(),
                    _ => Vec::new(),
                };
                if rest.is_empty() {
                    out.push(path.clone());
                } else {
                    leaves(&Value::Map(rest), path, out);
                }
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json6902_and_strategic_merge_fields_overlap() {
        let json = PatchBody::parse("- op: replace\n  path: /spec/replicas\n  value: 2\n").unwrap();
        let smp = PatchBody::parse(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: all\nspec:\n  replicas: 3\n",
        )
        .unwrap();
        let other = PatchBody::parse(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: all\n  labels:\n    a: b\n",
        )
        .unwrap();
        assert_eq!(
            json.fields(),
            vec![vec!["spec".to_string(), "replicas".into()]]
        );
        assert!(fields_overlap(&json.fields()[0], &smp.fields()[0]));
        assert!(!fields_overlap(&json.fields()[0], &other.fields()[0]));
        let containers = PatchBody::parse(
            "kind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n        - name: manager\n          args: [--a]\n",
        )
        .unwrap();
        let by_index = PatchBody::parse(
            "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --b\n",
        )
        .unwrap();
        assert!(fields_overlap(
            &containers.fields()[0],
            &by_index.fields()[0]
        ));
        let append = PatchBody::parse(
            "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --c\n",
        )
        .unwrap();
        assert!(!fields_overlap(&by_index.fields()[0], &append.fields()[0]));
    }
}
