//! kustomize patches as data: which objects a `target` selects (kind, name, namespace, group,
//! version, labelSelector, annotationSelector, as kustomize's `Selector` reads them), which
//! fields a patch sets, and its effect on an object's content (strategic merge or JSON6902).
//! FluxInstance `spec.kustomize.patches` and kustomization `patches` entries share this shape.

use std::collections::BTreeMap;

use crate::model::ObjectKey;
use crate::parse::{Value, YamlFile};

/// Labels or annotations of an object; `None` for a value the model cannot know (the
/// resolved Flux version an instance's `app.kubernetes.io/version` label carries).
pub type Labels = BTreeMap<String, Option<String>>;

/// Whether a selector selects an object, or that the model cannot tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    Yes,
    No,
    Unknown,
}

impl Selection {
    fn and(self, other: Selection) -> Selection {
        match (self, other) {
            (Selection::No, _) | (_, Selection::No) => Selection::No,
            (Selection::Unknown, _) | (_, Selection::Unknown) => Selection::Unknown,
            _ => Selection::Yes,
        }
    }
}

/// A patch's `target`: every field given must match; `group`, `version`, `kind`, `name` and
/// `namespace` are anchored regular expressions in kustomize (`api/types/selector.go`:
/// `^(?:pattern)$`), so `kind: (GitRepository|OCIRepository)` selects both kinds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub group: Option<String>,
    pub version: Option<String>,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub label_selector: Option<String>,
    pub annotation_selector: Option<String>,
}

impl Selector {
    /// The selector a `target` mapping describes.
    pub fn from_value(target: &Value) -> Selector {
        let get = |k: &str| target.str_at(&[k]).map(str::to_string);
        Selector {
            group: get("group"),
            version: get("version"),
            kind: get("kind"),
            name: get("name"),
            namespace: get("namespace"),
            label_selector: get("labelSelector"),
            annotation_selector: get("annotationSelector"),
        }
    }

    /// Whether the selector picks the object `key` with these labels and annotations.
    pub fn selects(&self, key: &ObjectKey, labels: &Labels, annotations: &Labels) -> Selection {
        let (group, version) = key
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", key.api_version.as_str()));
        pattern(self.group.as_deref(), group)
            .and(pattern(self.version.as_deref(), version))
            .and(pattern(self.kind.as_deref(), &key.kind))
            .and(pattern(self.name.as_deref(), &key.name))
            .and(pattern(
                self.namespace.as_deref(),
                key.namespace.as_deref().unwrap_or(""),
            ))
            .and(label_selection(self.label_selector.as_deref(), labels))
            .and(label_selection(
                self.annotation_selector.as_deref(),
                annotations,
            ))
    }

    /// `Deployment/flux-system/kustomize-controller` style, with the selectors that are set.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let mut push = |field: &str, v: &Option<String>| {
            if let Some(v) = v {
                parts.push(format!("{field}: {v}"));
            }
        };
        push("group", &self.group);
        push("version", &self.version);
        push("kind", &self.kind);
        push("namespace", &self.namespace);
        push("name", &self.name);
        push("labelSelector", &self.label_selector);
        push("annotationSelector", &self.annotation_selector);
        format!("{{{}}}", parts.join(", "))
    }

    /// How far an object is from being selected: a smaller number is a nearer miss (used to
    /// suggest what the selector probably meant).
    pub fn distance(&self, key: &ObjectKey) -> usize {
        let mut d = 0;
        if let Some(kind) = &self.kind {
            // A workload of another kind is the likelier mistake (StatefulSet for Deployment).
            const WORKLOADS: &[&str] = &[
                "Deployment",
                "StatefulSet",
                "DaemonSet",
                "ReplicaSet",
                "Job",
                "CronJob",
            ];
            d += if kind != key.kind.as_str()
                && WORKLOADS.contains(&kind.as_str())
                && WORKLOADS.contains(&key.kind.as_str())
            {
                4
            } else {
                4 * edit_distance(&kind.to_ascii_lowercase(), &key.kind.to_ascii_lowercase())
            };
        }
        if let Some(name) = &self.name {
            d += edit_distance(name, &key.name);
        }
        if let Some(ns) = &self.namespace {
            d += edit_distance(ns, key.namespace.as_deref().unwrap_or(""));
        }
        d
    }
}

/// Whether a target field is a regular expression rather than a plain name (`.` aside, which
/// plain names hold and which matches itself).
pub fn is_regex(pattern: &str) -> bool {
    pattern.contains(|c: char| "*+?[](){}|^$\\".contains(c))
}

/// kustomize matches a target field as the Go regular expression `^(?:pattern)$` (an empty
/// field matches anything). Go's RE2 syntax is read by the `regex` crate, which shares it; a
/// pattern it does not compile is `Unknown` (kustomize would refuse it or read it otherwise).
fn pattern(want: Option<&str>, have: &str) -> Selection {
    let Some(want) = want.filter(|w| !w.is_empty()) else {
        return Selection::Yes;
    };
    let plain = !is_regex(want);
    if plain && !want.contains('.') {
        return if want == have {
            Selection::Yes
        } else {
            Selection::No
        };
    }
    match anchored(want) {
        Some(re) if re.is_match(have) => Selection::Yes,
        Some(_) => Selection::No,
        None => Selection::Unknown,
    }
}

/// The compiled `^(?:pattern)$`, cached per thread: targets are few, the objects they are
/// matched against many.
fn anchored(pattern: &str) -> Option<regex::Regex> {
    thread_local! {
        static CACHE: std::cell::RefCell<std::collections::HashMap<String, Option<regex::Regex>>> =
            std::cell::RefCell::default();
    }
    CACHE.with(|cache| {
        cache
            .borrow_mut()
            .entry(pattern.to_string())
            .or_insert_with(|| regex::Regex::new(&format!("^(?:{pattern})$")).ok())
            .clone()
    })
}

/// A Kubernetes label selector (`a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
/// comma-separated) against a set of labels. A requirement on a label whose value is unknown
/// is `Unknown`; a selector that does not parse is `Unknown` too (kustomize would refuse it).
fn label_selection(selector: Option<&str>, labels: &Labels) -> Selection {
    let Some(selector) = selector.map(str::trim).filter(|s| !s.is_empty()) else {
        return Selection::Yes;
    };
    let Some(requirements) = split_requirements(selector) else {
        return Selection::Unknown;
    };
    requirements
        .iter()
        .map(|r| requirement(r, labels))
        .fold(Selection::Yes, Selection::and)
}

/// The requirements of a selector, split on the commas outside parentheses.
fn split_requirements(selector: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(selector[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    out.push(selector[start..].trim());
    (depth == 0 && out.iter().all(|r| !r.is_empty())).then_some(out)
}

fn requirement(req: &str, labels: &Labels) -> Selection {
    let bool_of = |b: bool| if b { Selection::Yes } else { Selection::No };
    let value_is = |key: &str, test: &dyn Fn(&str) -> bool, absent: bool| match labels.get(key) {
        None => bool_of(absent),
        Some(None) => Selection::Unknown,
        Some(Some(v)) => bool_of(test(v)),
    };
    if let Some(key) = req.strip_prefix('!') {
        return bool_of(!labels.contains_key(key.trim()));
    }
    if let Some((key, value)) = req.split_once("!=") {
        let value = value.trim();
        return value_is(key.trim(), &|v| v != value, true);
    }
    if let Some((key, value)) = req.split_once("==").or_else(|| req.split_once('=')) {
        let value = value.trim();
        return value_is(key.trim(), &|v| v == value, false);
    }
    let set_op = |op: &str| {
        let (key, rest) = req.split_once(op)?;
        let set = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
        let values: Vec<String> = set.split(',').map(|v| v.trim().to_string()).collect();
        Some((key.trim().to_string(), values))
    };
    if let Some((key, values)) = set_op(" notin ") {
        return value_is(&key, &|v| !values.iter().any(|x| x == v), true);
    }
    if let Some((key, values)) = set_op(" in ") {
        return value_is(&key, &|v| values.iter().any(|x| x == v), false);
    }
    if req.contains(char::is_whitespace) {
        return Selection::Unknown;
    }
    bool_of(labels.contains_key(req))
}

/// Levenshtein distance on bytes (names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let next = (row[j] + 1).min(row[j + 1] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

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
        let Some(doc) = yaml.docs.first() else {
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
fn pointer_segments(pointer: &str) -> FieldPath {
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
    use crate::model::Name;

    fn key(api: &str, kind: &str, ns: Option<&str>, name: &str) -> ObjectKey {
        ObjectKey {
            api_version: Name::from(api),
            kind: Name::from(kind),
            namespace: ns.map(Name::from),
            name: Name::from(name),
        }
    }

    fn labels(pairs: &[(&str, Option<&str>)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect()
    }

    #[test]
    fn selector_fields_must_all_match() {
        let deploy = key(
            "apps/v1",
            "Deployment",
            Some("flux-system"),
            "kustomize-controller",
        );
        let none = Labels::new();
        let sel = |kind: &str, name: &str| Selector {
            kind: Some(kind.into()),
            name: Some(name.into()),
            ..Selector::default()
        };
        assert_eq!(
            sel("Deployment", "kustomize-controller").selects(&deploy, &none, &none),
            Selection::Yes
        );
        assert_eq!(
            sel("Deployment", "kustomize-controler").selects(&deploy, &none, &none),
            Selection::No
        );
        let wrong_group = Selector {
            group: Some("source.toolkit.fluxcd.io".into()),
            ..sel("Deployment", "kustomize-controller")
        };
        assert_eq!(wrong_group.selects(&deploy, &none, &none), Selection::No);
        let regex = sel("Deployment", "(kustomize|helm)-controller");
        assert_eq!(regex.selects(&deploy, &none, &none), Selection::Yes);
        assert_eq!(
            sel("Deployment", "(source|helm)-controller").selects(&deploy, &none, &none),
            Selection::No
        );
        assert_eq!(
            sel("Deployment", "kustomize-(").selects(&deploy, &none, &none),
            Selection::Unknown
        );
    }

    #[test]
    fn kind_group_and_version_are_anchored_regular_expressions() {
        // kustomize api/types/selector.go: every GVK field is `^(?:pattern)$`.
        let oci = key(
            "source.toolkit.fluxcd.io/v1",
            "OCIRepository",
            Some("flux-system"),
            "flux-system",
        );
        let none = Labels::new();
        let kind = |k: &str| Selector {
            kind: Some(k.into()),
            ..Selector::default()
        };
        assert_eq!(
            kind("(GitRepository|OCIRepository)").selects(&oci, &none, &none),
            Selection::Yes
        );
        assert_eq!(kind("OCI").selects(&oci, &none, &none), Selection::No);
        assert_eq!(
            kind("OCIRepository|Bucket").selects(&oci, &none, &none),
            Selection::Yes
        );
        let group = Selector {
            group: Some("source\\.toolkit\\..*".into()),
            version: Some("v1(beta2)?".into()),
            ..Selector::default()
        };
        assert_eq!(group.selects(&oci, &none, &none), Selection::Yes);
        let wrong_version = Selector {
            version: Some("v1beta2".into()),
            ..Selector::default()
        };
        assert_eq!(wrong_version.selects(&oci, &none, &none), Selection::No);
    }

    #[test]
    fn label_selectors_as_kubernetes_reads_them() {
        let l = labels(&[
            ("app.kubernetes.io/part-of", Some("flux")),
            ("app.kubernetes.io/component", Some("source-controller")),
            ("app.kubernetes.io/version", None),
        ]);
        let check = |s: &str| label_selection(Some(s), &l);
        assert_eq!(check("app.kubernetes.io/part-of=flux"), Selection::Yes);
        assert_eq!(check("app.kubernetes.io/part-of==flux"), Selection::Yes);
        assert_eq!(check("app.kubernetes.io/part-of!=flux"), Selection::No);
        assert_eq!(
            check("app.kubernetes.io/component in (source-controller, helm-controller)"),
            Selection::Yes
        );
        assert_eq!(
            check("app.kubernetes.io/component notin (source-controller)"),
            Selection::No
        );
        assert_eq!(
            check("app.kubernetes.io/part-of,!control-plane"),
            Selection::Yes
        );
        assert_eq!(check("control-plane"), Selection::No);
        assert_eq!(
            check("app.kubernetes.io/version=v2.9.4"),
            Selection::Unknown
        );
        assert_eq!(check("a in (b"), Selection::Unknown);
    }

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

    #[test]
    fn patches_apply_to_content() {
        let (yaml, _) = YamlFile::parse("spec:\n  url: oci://x\n  ref:\n    tag: latest\n");
        let mut content = yaml.value(yaml.docs[0].root).unwrap();
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

    #[test]
    fn distance_prefers_the_near_miss() {
        let sel = Selector {
            kind: Some("Deployment".into()),
            name: Some("kustomize-controler".into()),
            ..Selector::default()
        };
        let near = key(
            "apps/v1",
            "Deployment",
            Some("flux-system"),
            "kustomize-controller",
        );
        let far = key(
            "apps/v1",
            "Deployment",
            Some("flux-system"),
            "helm-controller",
        );
        assert!(sel.distance(&near) < sel.distance(&far));
    }
}
