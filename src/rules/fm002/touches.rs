//! Whether what a kustomization does may change the objects an FM002 move takes out of it:
//! a patch (by its target, or by the object an untargeted one names) or a component.

use crate::load::{FileId, parent_of};
use crate::model::{Model, Rendered, join};
use crate::parse::{NodeId, NodeKind, YamlFile};

/// A kustomization (or component) that only lists resources: it transforms nothing.
pub(super) fn only_resources(model: &Model, file: FileId) -> bool {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs().first() else {
        return true;
    };
    match f.yaml.node(doc.root).kind {
        NodeKind::Mapping { entries, .. } => entries.iter().all(|(k, _)| {
            matches!(
                f.yaml.scalar(k),
                Some("apiVersion" | "kind" | "metadata" | "resources")
            )
        }),
        _ => false,
    }
}

/// Whether a transforming component may change the moved objects: any transformer but a
/// patch that targets none of them. A patch without a target that names one would fail in the
/// kustomization the object leaves (the component stays there for the others).
pub(super) fn component_touches(
    model: &Model,
    file: FileId,
    moved: &[&Rendered],
) -> Result<bool, String> {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs().first() else {
        return Ok(false);
    };
    let NodeKind::Mapping { entries, .. } = f.yaml.node(doc.root).kind else {
        return Ok(true);
    };
    let mut touches = false;
    for (key, value) in entries {
        match f.yaml.scalar(key).unwrap_or_default() {
            "apiVersion" | "kind" | "metadata" => {}
            field @ ("patches" | "patchesStrategicMerge" | "patchesJson6902") => {
                for &item in f.yaml.items(value) {
                    if !patch_may_touch(model, &f.path, &f.yaml, item, moved) {
                        continue;
                    }
                    if field == "patchesStrategicMerge"
                        || f.yaml.lookup(item, &["target"]).is_none()
                    {
                        return Err(format!(
                            "{}:{}: a patch without a target names a moved object; it would fail in the kustomization the object leaves, and fluxmend does not move patch entries",
                            f.path,
                            f.yaml.line_of(f.yaml.node(item).span.start)
                        ));
                    }
                    touches = true;
                }
            }
            _ => touches = true,
        }
    }
    Ok(touches)
}

/// A component that only transforms what it is applied to: no resources, generators or
/// components of its own (they would add objects to both layers).
pub(super) fn transforms_only(model: &Model, file: FileId) -> bool {
    let f = model.repo.file(file);
    let Some(doc) = f.yaml.docs().first() else {
        return false;
    };
    f.yaml
        .lookup(doc.root, &["kind"])
        .and_then(|n| f.yaml.scalar(n))
        == Some("Component")
        && [
            "resources",
            "bases",
            "components",
            "configMapGenerator",
            "secretGenerator",
            "generators",
            "helmCharts",
        ]
        .iter()
        .all(|k| f.yaml.lookup(doc.root, &[k]).is_none())
}

/// Whether a patch of a kustomization may change one of the moved objects. Targets are
/// regular expressions to kustomize: plain names and `(a|b)` alternations are decided, anything
/// else may match.
pub(super) fn patch_may_touch(
    model: &Model,
    kfile_path: &str,
    yaml: &YamlFile,
    item: NodeId,
    moved: &[&Rendered],
) -> bool {
    let target = yaml
        .lookup(item, &["target"])
        .and_then(|t| yaml.value(t).ok());
    if let Some(t) = target {
        return moved.iter().any(|m| {
            let raw = &model.object(m.object).key;
            let version = m.key.api_version.rsplit('/').next().unwrap_or_default();
            let field = |k: &str, candidates: &[&str]| {
                t.str_at(&[k])
                    .is_none_or(|p| candidates.iter().any(|c| pattern_may_match(p, c)))
            };
            field("kind", &[&m.key.kind])
                && field("name", &[&raw.name, &m.key.name])
                && field(
                    "namespace",
                    &[
                        m.key.namespace.as_deref().unwrap_or_default(),
                        raw.namespace.as_deref().unwrap_or_default(),
                    ],
                )
                && field("group", &[m.key.group()])
                && field("version", &[version])
        });
    }
    // Without a target the patch names its object: an inline patch, or a file.
    let body = yaml
        .lookup(item, &["patch"])
        .or_else(|| yaml.scalar(item).filter(|s| s.contains('\n')).map(|_| item))
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string);
    let path = yaml
        .lookup(item, &["path"])
        .and_then(|n| yaml.scalar(n))
        .or_else(|| yaml.scalar(item).filter(|s| !s.contains('\n')));
    let text = match (body, path) {
        (Some(b), _) => b,
        (None, Some(p)) => {
            let Some(file) = join(parent_of(kfile_path), p).and_then(|p| model.repo.file_id(&p))
            else {
                return true;
            };
            model.repo.file(file).yaml.text().to_string()
        }
        _ => return true,
    };
    let (patch, err) = YamlFile::parse(&text);
    if err.is_some() || patch.docs().is_empty() {
        return true;
    }
    patch.docs().iter().any(|d| {
        let get = |keys: &[&str]| patch.lookup(d.root, keys).and_then(|n| patch.scalar(n));
        let (Some(kind), Some(name)) = (get(&["kind"]), get(&["metadata", "name"])) else {
            return true;
        };
        moved.iter().any(|m| {
            m.key.kind == kind && (model.object(m.object).key.name == name || m.key.name == name)
        })
    })
}

/// Whether a kustomize target pattern (an anchored regular expression) may match `text`.
fn pattern_may_match(pattern: &str, text: &str) -> bool {
    let meta = |s: &str| {
        s.contains([
            '.', '*', '+', '?', '(', ')', '[', ']', '{', '}', '|', '^', '$', '\\',
        ])
    };
    if !meta(pattern) {
        return pattern == text;
    }
    let inner = pattern
        .strip_prefix('(')
        .and_then(|p| p.strip_suffix(')'))
        .unwrap_or(pattern);
    let alternatives: Vec<&str> = inner.split('|').collect();
    if alternatives.iter().all(|a| !meta(a)) {
        return alternatives.contains(&text);
    }
    true
}
