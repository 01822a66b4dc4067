//! Which objects a patch's `target` selects, as kustomize's `Selector` reads it: kind, name,
//! namespace, group and version as anchored regular expressions, label and annotation
//! selectors; and how near a target that selects nothing comes to an object.

use std::collections::BTreeMap;

use crate::model::ObjectKey;
use crate::parse::Value;

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
