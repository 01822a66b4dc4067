//! A patch's effect on an object's content, as far as the model holds it: strategic merge
//! (mappings merged, `null` deleting, named list items merged by name) and the JSON6902
//! operations.

use crate::parse::Value;

use super::body::{PatchBody, pointer_segments};

impl PatchBody {
    /// Apply the patch to an object's content, as far as the model holds it.
    pub fn apply(&self, content: &mut Value) {
        match self {
            PatchBody::StrategicMerge(patch) => merge(content, patch),
            PatchBody::Json6902(ops) => {
                for op in ops {
                    let path = pointer_segments(&op.path);
                    match op.op.as_str() {
                        "add" | "replace" => {
                            if let Some(v) = &op.value {
                                set_at(content, &path, v.clone(), op.op == "add");
                            }
                        }
                        "remove" => remove_at(content, &path),
                        "copy" | "move" => {
                            let from = op.from.as_deref().map(pointer_segments);
                            if let Some(v) = from.as_ref().and_then(|f| get_at(content, f)) {
                                let v = v.clone();
                                if op.op == "move" {
                                    remove_at(content, from.as_ref().unwrap_or(&Vec::new()));
                                }
                                set_at(content, &path, v, true);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// Strategic merge as far as the model needs it: mappings merge, `null` deletes, lists of
/// named maps merge by `name`, other lists are replaced.
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Map(t), Value::Map(p)) => {
            for (k, v) in p {
                let pos = t.iter().position(|(tk, _)| tk == k);
                match (pos, v) {
                    (Some(i), Value::Null) => {
                        t.remove(i);
                    }
                    (None, Value::Null) => {}
                    (Some(i), v) => merge(&mut t[i].1, v),
                    (None, v) => t.push((k.clone(), v.clone())),
                }
            }
        }
        (Value::Seq(t), Value::Seq(p))
            if p.iter()
                .chain(t.iter())
                .all(|i| i.str_at(&["name"]).is_some()) =>
        {
            for item in p {
                let name = item.str_at(&["name"]);
                match t.iter_mut().find(|ti| ti.str_at(&["name"]) == name) {
                    Some(existing) => merge(existing, item),
                    None => t.push(item.clone()),
                }
            }
        }
        (t, p) => *t = p.clone(),
    }
}

fn get_at<'v>(content: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(content, |v, seg| match v {
        Value::Map(_) => v.get(seg),
        Value::Seq(items) => index_of(seg).and_then(|i| items.get(i)),
        _ => None,
    })
}

fn index_of(seg: &str) -> Option<usize> {
    seg.strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

/// The node at `path` (mapping keys and `[i]` items), when every step exists.
fn parent_at<'v>(content: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    let mut node = content;
    for seg in path {
        node = match node {
            Value::Map(entries) => {
                &mut entries
                    .iter_mut()
                    .find(|(k, _)| k.as_str() == Some(seg.as_str()))?
                    .1
            }
            Value::Seq(items) => items.get_mut(index_of(seg)?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Set the value at `path`; `add` creates missing mapping keys as kustomize's JSON patch
/// library does for the last segment only, so a missing parent leaves the content unchanged.
fn set_at(content: &mut Value, path: &[String], value: Value, add: bool) {
    let Some((last, parents)) = path.split_last() else {
        *content = value;
        return;
    };
    let Some(node) = parent_at(content, parents) else {
        return;
    };
    match node {
        Value::Map(entries) => match entries.iter_mut().find(|(k, _)| k.as_str() == Some(last)) {
            Some((_, v)) => *v = value,
            None if add => entries.push((Value::Str(last.clone(), false), value)),
            None => {}
        },
        Value::Seq(items) if last == "[-]" && add => items.push(value),
        Value::Seq(items) => {
            if let Some(i) = index_of(last) {
                if add && i <= items.len() {
                    items.insert(i, value);
                } else if let Some(v) = items.get_mut(i) {
                    *v = value;
                }
            }
        }
        _ => {}
    }
}

fn remove_at(content: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let Some(node) = parent_at(content, parents) else {
        return;
    };
    match node {
        Value::Map(entries) => entries.retain(|(k, _)| k.as_str() != Some(last)),
        Value::Seq(items) => {
            if let Some(i) = index_of(last).filter(|&i| i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::YamlFile;

    #[test]
    fn patches_apply_to_content() {
        let (yaml, _) = YamlFile::parse("spec:\n  url: oci://x\n  ref:\n    tag: latest\n");
        let mut content = yaml.value(yaml.docs()[0].root).unwrap();
        PatchBody::parse(
            "kind: OCIRepository\nmetadata:\n  name: flux-system\nspec:\n  verify:\n    provider: cosign\n  ref: null\n",
        )
        .unwrap()
        .apply(&mut content);
        assert_eq!(
            content.str_at(&["spec", "verify", "provider"]),
            Some("cosign")
        );
        assert!(content.path(&["spec", "ref"]).is_none());
        PatchBody::parse("- op: replace\n  path: /spec/url\n  value: oci://y\n- op: add\n  path: /spec/verify/secretRef\n  value: {name: keys}\n")
            .unwrap()
            .apply(&mut content);
        assert_eq!(content.str_at(&["spec", "url"]), Some("oci://y"));
        assert_eq!(
            content.str_at(&["spec", "verify", "secretRef", "name"]),
            Some("keys")
        );
    }
}
