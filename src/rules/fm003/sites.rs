//! Where the lists are: every `matchOIDCIdentity` list of more than one entry (or a JSON6902
//! operation that sets one), the object it belongs to and where it is set, for the message.

use crate::load::FileId;
use crate::model::patch::{PatchBody, Selector};
use crate::model::{Model, Name, ObjectKey};
use crate::parse::{NodeId, NodeKind, YamlFile};

use super::meta::LIST;

/// One list of more than one identity, in the YAML it is written in.
pub(super) struct Site {
    /// The sequence node.
    pub(super) list: NodeId,
    /// Where the list is set, for the message: its path in the object, or the patch that sets it.
    pub(super) place: String,
    /// The object it belongs to, as far as the YAML says (`None` in a patch without target).
    pub(super) object: Option<ObjectKey>,
    /// Each entry's `issuer` and `subject`; `None` when an entry has another shape.
    pub(super) entries: Option<Vec<(String, String)>>,
}

/// Every `matchOIDCIdentity` list of more than one entry in `yaml` whose verify block is not
/// another provider's; a JSON6902 operation whose `path` ends in `/matchOIDCIdentity` counts.
/// `outer` is the file and `patch` key of an embedded patch; `owner` names the object of a
/// mapping of `yaml`.
pub(super) fn sites(
    yaml: &YamlFile,
    outer: Option<(&YamlFile, NodeId)>,
    owner: impl Fn(NodeId) -> Option<ObjectKey>,
) -> Vec<Site> {
    let mut out = Vec::new();
    for id in yaml.node_ids() {
        let NodeKind::Mapping { entries, .. } = yaml.node(id).kind else {
            continue;
        };
        let key_is = |k: NodeId, text: &str| yaml.scalar(k) == Some(text);
        let list = entries
            .iter()
            .find(|(k, _)| key_is(*k, LIST))
            .map(|(_, v)| v)
            .or_else(|| {
                let path = entries.iter().find(|(k, _)| key_is(*k, "path"))?.1;
                yaml.scalar(path)?
                    .ends_with("/matchOIDCIdentity")
                    .then_some(())?;
                entries
                    .iter()
                    .find(|(k, _)| key_is(*k, "value"))
                    .map(|e| e.1)
            });
        let Some(list) = list.and_then(|l| yaml.resolve(l)) else {
            continue;
        };
        let provider = entries
            .iter()
            .find(|(k, _)| key_is(*k, "provider"))
            .and_then(|(_, v)| yaml.scalar(v));
        if provider.is_some_and(|p| p != "cosign") || yaml.items(list).len() < 2 {
            continue;
        }
        let place = match outer {
            Some((file, key)) => patch_owner(file, key),
            None => path_to(yaml, list).unwrap_or_else(|| LIST.to_string()),
        };
        out.push(Site {
            list,
            place,
            object: owner(id),
            entries: identities(yaml, list),
        });
    }
    out
}

/// The dotted path of `node` from its document's root (`spec.chart.spec.verify.matchOIDCIdentity`).
fn path_to(yaml: &YamlFile, node: NodeId) -> Option<String> {
    fn walk(yaml: &YamlFile, at: NodeId, target: NodeId, path: &mut Vec<String>) -> bool {
        if at == target {
            return true;
        }
        match yaml.node(at).kind {
            NodeKind::Mapping { entries, .. } => entries.iter().any(|(k, v)| {
                path.push(yaml.scalar(k).unwrap_or("?").to_string());
                let found = walk(yaml, v, target, path);
                if !found {
                    path.pop();
                }
                found
            }),
            NodeKind::Sequence { items, .. } => items.iter().enumerate().any(|(i, &v)| {
                path.push(format!("[{i}]"));
                let found = walk(yaml, v, target, path);
                if !found {
                    path.pop();
                }
                found
            }),
            _ => false,
        }
    }
    let start = yaml.node(node).span.start;
    let doc = yaml
        .docs()
        .iter()
        .rev()
        .find(|d| d.region().start <= start)?;
    let mut path = Vec::new();
    walk(yaml, doc.root, node, &mut path).then(|| path.join(".").replace(".[", "["))
}

/// What sets an embedded patch, for the message: a FluxInstance (applied by flux-operator to
/// what it generates), a Flux Kustomization's `spec.patches`, or a kustomization file.
fn patch_owner(file: &YamlFile, patch_key: NodeId) -> String {
    let start = file.node(patch_key).span.start;
    let doc = file.docs().iter().rev().find(|d| d.region().start <= start);
    let text = |keys: &[&str]| {
        doc.and_then(|d| file.lookup(d.root, keys))
            .and_then(|n| file.scalar(n))
    };
    match (text(&["kind"]), text(&["metadata", "name"])) {
        (Some("FluxInstance"), Some(name)) => format!(
            "set by a patch of FluxInstance {name}, which flux-operator applies to the object it generates"
        ),
        (Some("Kustomization"), Some(name))
            if text(&["apiVersion"])
                .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/")) =>
        {
            format!("set by a spec.patches entry of Flux Kustomization {name}")
        }
        _ => "set by a kustomize patch".to_string(),
    }
}

/// The `(issuer, subject)` of each entry, when every entry has exactly those two keys.
fn identities(yaml: &YamlFile, list: NodeId) -> Option<Vec<(String, String)>> {
    yaml.items(list)
        .iter()
        .map(|&item| {
            let item = yaml.resolve(item)?;
            let entries = yaml.entries(item);
            let get = |k: &str| yaml.lookup(item, &[k]).and_then(|n| yaml.scalar(n));
            (entries.len() == 2)
                .then(|| Some((get("issuer")?.to_string(), get("subject")?.to_string())))?
        })
        .collect()
}

/// The object an embedded patch edits: its `target`, or the object a strategic-merge patch
/// names itself; `None` when that is not one object by kind and name.
pub(super) fn patch_target(
    file: &YamlFile,
    patch_key: NodeId,
    inner: &YamlFile,
) -> Option<ObjectKey> {
    let target = file
        .node_ids()
        .find(|&m| file.entries(m).iter().any(|(k, _)| k == patch_key))
        .and_then(|map| file.lookup(map, &["target"]))
        .and_then(|t| file.value(t).ok())
        .map(|t| Selector::from_value(&t))
        .or_else(|| PatchBody::parse(inner.text()).ok()?.implicit_target())?;
    let api_version = match (&target.group, &target.version) {
        (Some(g), Some(v)) => format!("{g}/{v}"),
        (Some(g), None) => g.clone(),
        (None, v) => v.clone().unwrap_or_default(),
    };
    Some(ObjectKey {
        api_version: Name::from(api_version.as_str()),
        kind: Name::from(target.kind?.as_str()),
        namespace: target.namespace.map(|n| Name::from(n.as_str())),
        name: Name::from(target.name?.as_str()),
    })
}

/// The object of the file whose document holds `node` (a source object, or a strategic-merge
/// patch file's document, which the model reads as an object too).
pub(super) fn object_at(model: &Model, file: FileId, node: NodeId) -> Option<ObjectKey> {
    let yaml = &model.repo.file(file).yaml;
    let start = yaml.node(node).span.start;
    let doc = yaml
        .docs()
        .iter()
        .rposition(|d| d.region().start <= start)?;
    model
        .objects_in(file)
        .map(|o| model.object(o))
        .find(|o| o.doc() == doc)
        .map(|o| o.key.clone())
}

/// Every `patch:` entry whose value is a string: (key node, value node).
pub(super) fn patch_strings(yaml: &YamlFile) -> Vec<(NodeId, NodeId)> {
    let mut out = Vec::new();
    for id in yaml.node_ids() {
        let NodeKind::Mapping { entries, .. } = yaml.node(id).kind else {
            continue;
        };
        for (k, v) in entries {
            if yaml.scalar(k) == Some("patch")
                && matches!(yaml.node(v).kind, NodeKind::Scalar { .. })
            {
                out.push((k, v));
            }
        }
    }
    out
}
