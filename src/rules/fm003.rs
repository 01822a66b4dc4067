//! FM003 multi-identity-verify: a cosign `spec.verify.matchOIDCIdentity` with more than one
//! entry, which cosign's Sigstore-bundle verification refuses outright, failing closed (the
//! trigger of devantler-tech/platform#3006). Documentation: `rules/FM003.md`.

use crate::diagnostics::Severity;
use crate::edit::{self, Changeset, TextEdit};
use crate::load::FileId;
use crate::model::patch::{PatchBody, Selector};
use crate::model::{LayerId, LayerRef, Model, Name, ObjectKey};
use crate::parse::{NodeId, NodeKind, ScalarStyle, Value, YamlFile};
use std::sync::LazyLock;

use super::{Draft, Finding, Fix, Rule, RuleMeta, report_text};

pub struct MultiIdentityVerify;

static META: RuleMeta = RuleMeta {
    id: "FM003",
    name: "multi-identity-verify",
    summary: "a cosign verify block lists more than one matchOIDCIdentity entry, which cosign's bundle verification refuses",
    doc: include_str!("../../rules/FM003.md"),
};

const LIST: &str = "matchOIDCIdentity";

static EXACT_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "exact"));

static WIDER_TRADEOFF: LazyLock<String> = LazyLock::new(|| report_text(META.doc, "wider"));

impl Rule for MultiIdentityVerify {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        for (file_id, file) in model.repo.files.iter().enumerate() {
            if !file.yaml.text.contains(LIST) || !model.is_live_file(&file.path) {
                continue;
            }
            for mut site in sites(&file.yaml, None, |n| object_at(model, file_id, n)) {
                if model.is_patch_file(file_id) {
                    site.place = "set by a kustomize patch".into();
                }
                findings.extend(describe(model, file_id, &site));
            }
            // Patches written as strings (`patch: |`): a FluxInstance's `spec.kustomize.patches`,
            // a Flux Kustomization's `spec.patches`, a kustomization file's `patches`.
            // A literal block maps back to the file's bytes (and can be edited); a folded or
            // quoted string is read for its value only.
            for (key, value) in patch_strings(&file.yaml) {
                let block = edit::BlockDocument::of(&file.yaml, value);
                let parsed;
                let inner = match &block {
                    Some(b) => &b.yaml,
                    None => {
                        let text = file.yaml.scalar(value).unwrap_or_default();
                        if !text.contains(LIST) {
                            continue;
                        }
                        let (yaml, error) = YamlFile::parse(text);
                        if error.is_some() {
                            continue;
                        }
                        parsed = yaml;
                        &parsed
                    }
                };
                if !inner.text.contains(LIST) {
                    continue;
                }
                let target = patch_target(&file.yaml, key, inner);
                for site in sites(inner, Some((&file.yaml, key)), |_| target.clone()) {
                    findings.extend(describe_embedded(
                        model,
                        file_id,
                        (key, block.as_ref()),
                        inner,
                        &site,
                    ));
                }
            }
        }
        findings
    }
}

/// One list of more than one identity, in the YAML it is written in.
struct Site {
    /// The sequence node.
    list: NodeId,
    /// Where the list is set, for the message: its path in the object, or the patch that sets it.
    place: String,
    /// The object it belongs to, as far as the YAML says (`None` in a patch without target).
    object: Option<ObjectKey>,
    /// Each entry's `issuer` and `subject`; `None` when an entry has another shape.
    entries: Option<Vec<(String, String)>>,
}

/// Every `matchOIDCIdentity` list of more than one entry in `yaml` whose verify block is not
/// another provider's; a JSON6902 operation whose `path` ends in `/matchOIDCIdentity` counts.
/// `outer` is the file and `patch` key of an embedded patch; `owner` names the object of a
/// mapping of `yaml`.
fn sites(
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
            .map(|&(_, v)| v)
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
            .and_then(|(_, v)| yaml.scalar(*v));
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
            NodeKind::Mapping { entries, .. } => entries.iter().any(|&(k, v)| {
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
    let doc = yaml.docs.iter().rev().find(|d| d.region.start <= start)?;
    let mut path = Vec::new();
    walk(yaml, doc.root, node, &mut path).then(|| path.join(".").replace(".[", "["))
}

/// What sets an embedded patch, for the message: a FluxInstance (applied by flux-operator to
/// what it generates), a Flux Kustomization's `spec.patches`, or a kustomization file.
fn patch_owner(file: &YamlFile, patch_key: NodeId) -> String {
    let start = file.node(patch_key).span.start;
    let doc = file.docs.iter().rev().find(|d| d.region.start <= start);
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
fn patch_target(file: &YamlFile, patch_key: NodeId, inner: &YamlFile) -> Option<ObjectKey> {
    let target = file
        .node_ids()
        .find(|&m| file.entries(m).iter().any(|&(k, _)| k == patch_key))
        .and_then(|map| file.lookup(map, &["target"]))
        .and_then(|t| file.value(t).ok())
        .map(|t| Selector::from_value(&t))
        .or_else(|| PatchBody::parse(&inner.text).ok()?.implicit_target())?;
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
fn object_at(model: &Model, file: FileId, node: NodeId) -> Option<ObjectKey> {
    let yaml = &model.repo.file(file).yaml;
    let start = yaml.node(node).span.start;
    let doc = yaml.docs.iter().rposition(|d| d.region.start <= start)?;
    model
        .objects_in(file)
        .map(|o| model.object(o))
        .find(|o| o.doc == doc)
        .map(|o| o.key.clone())
}

/// Every `patch:` entry whose value is a string: (key node, value node).
fn patch_strings(yaml: &YamlFile) -> Vec<(NodeId, NodeId)> {
    let mut out = Vec::new();
    for id in yaml.node_ids() {
        let NodeKind::Mapping { entries, .. } = yaml.node(id).kind else {
            continue;
        };
        for &(k, v) in entries {
            if yaml.scalar(k) == Some("patch")
                && matches!(yaml.node(v).kind, NodeKind::Scalar { .. })
            {
                out.push((k, v));
            }
        }
    }
    out
}

/// `(?:a)|(?:b)` for several distinct patterns (`^(?:a|b)$` when each is anchored at both ends
/// and has no alternation of its own); the pattern itself for one. Go's `regexp` matches a
/// pattern anywhere in the text, so the alternation matches exactly what one of them matched.
fn alternation(patterns: &[&str]) -> String {
    let mut distinct: Vec<&str> = Vec::new();
    for p in patterns {
        if !distinct.contains(p) {
            distinct.push(p);
        }
    }
    if distinct.len() == 1 {
        return distinct[0].to_string();
    }
    let anchored = |p: &&str| {
        p.starts_with('^') && p.ends_with('$') && !p.ends_with("\\$") && !p.contains('|')
    };
    if distinct.iter().all(anchored) {
        let inner: Vec<&str> = distinct.iter().map(|p| &p[1..p.len() - 1]).collect();
        return format!("^(?:{})$", inner.join("|"));
    }
    distinct
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|")
}

/// The merged entry, and whether it accepts exactly what the list accepted: true when the
/// entries are every combination of their distinct subjects and issuers.
fn merge(entries: &[(String, String)]) -> (String, String, bool) {
    let issuers: Vec<&str> = entries.iter().map(|(i, _)| i.as_str()).collect();
    let subjects: Vec<&str> = entries.iter().map(|(_, s)| s.as_str()).collect();
    let count = |v: &[&str]| {
        let mut d = v.to_vec();
        d.sort_unstable();
        d.dedup();
        d.len()
    };
    let mut pairs = entries.to_vec();
    pairs.sort();
    pairs.dedup();
    let exact = pairs.len() == count(&issuers) * count(&subjects);
    (alternation(&issuers), alternation(&subjects), exact)
}

/// The (issuer, subject) combinations the merged entry accepts that no entry named.
fn unlisted_pairs(entries: &[(String, String)]) -> Vec<(String, String)> {
    let mut issuers: Vec<&String> = entries.iter().map(|(i, _)| i).collect();
    let mut subjects: Vec<&String> = entries.iter().map(|(_, s)| s).collect();
    issuers.dedup();
    subjects.dedup();
    let mut out = Vec::new();
    for i in &issuers {
        for s in &subjects {
            let pair = ((*i).clone(), (*s).clone());
            if !entries.contains(&pair) && !out.contains(&pair) {
                out.push(pair);
            }
        }
    }
    out
}

/// The canonical form of verify blocks, for the gates: every `matchOIDCIdentity` list (and a
/// JSON6902 `value` for one) becomes its merged single entry, and every `patch` string its
/// parsed, canonical documents. A fix passes when the content after equals the content before
/// in this form: it merged the identities and changed nothing else.
pub fn canonical(value: Value) -> Value {
    match value {
        Value::Map(entries) => {
            let json_patch_list = entries.iter().any(|(k, v)| {
                k.as_str() == Some("path")
                    && v.as_str()
                        .is_some_and(|p| p.ends_with("/matchOIDCIdentity"))
            });
            Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| {
                        let v = match k.as_str() {
                            Some(LIST) => merged_value(v),
                            Some("value") if json_patch_list => merged_value(v),
                            Some("patch") => parsed_patch(v),
                            _ => canonical(v),
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Seq(items) => Value::Seq(items.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A list of identities as its one merged entry (unchanged when not a list of issuer/subject
/// pairs).
fn merged_value(list: Value) -> Value {
    let Value::Seq(items) = &list else {
        return list;
    };
    let pairs: Option<Vec<(String, String)>> = items
        .iter()
        .map(|i| match i {
            Value::Map(e) if e.len() == 2 => Some((
                i.str_at(&["issuer"])?.to_string(),
                i.str_at(&["subject"])?.to_string(),
            )),
            _ => None,
        })
        .collect();
    let Some(pairs) = pairs.filter(|p| !p.is_empty()) else {
        return list;
    };
    let (issuer, subject, _) = merge(&pairs);
    let s = |t: &str| Value::Str(t.to_string(), false);
    Value::Seq(vec![Value::Map(vec![
        (s("issuer"), s(&issuer)),
        (s("subject"), s(&subject)),
    ])])
}

/// A patch string as its parsed documents in canonical form (unchanged when it does not parse).
fn parsed_patch(value: Value) -> Value {
    let Value::Str(text, _) = &value else {
        return canonical(value);
    };
    let (yaml, error) = YamlFile::parse(text);
    if error.is_some() {
        return value;
    }
    let docs: Option<Vec<Value>> = yaml
        .docs
        .iter()
        .map(|d| yaml.value(d.root).ok().map(canonical))
        .collect();
    match docs {
        Some(docs) => Value::Map(vec![(
            Value::Str("<patch>".into(), false),
            Value::Seq(docs),
        )]),
        None => value,
    }
}

/// A scalar written like `like` (its quoting style) when that style can hold `value`.
fn scalar_like(yaml: &YamlFile, like: Option<NodeId>, value: &str) -> String {
    let style = like.and_then(|n| match yaml.node(n).kind {
        NodeKind::Scalar { style, .. } => Some(style),
        _ => None,
    });
    match style {
        Some(ScalarStyle::SingleQuoted) if !value.chars().any(char::is_control) => {
            format!("'{}'", value.replace('\'', "''"))
        }
        Some(ScalarStyle::DoubleQuoted) => edit::double_quoted(value),
        _ => edit::scalar_text(value),
    }
}

/// The edit that replaces the list with one entry, written in the list's style: the first
/// entry's key order, quoting and block or flow form.
fn replace_list(
    yaml: &YamlFile,
    list: NodeId,
    issuer: &str,
    subject: &str,
) -> Result<TextEdit, String> {
    let items = yaml.items(list);
    let first = yaml
        .resolve(items[0])
        .ok_or("an entry is an unknown alias")?;
    let keys: Vec<&str> = yaml
        .entries(first)
        .iter()
        .filter_map(|(k, _)| yaml.scalar(*k))
        .collect();
    let value_of = |k: &str| yaml.lookup(first, &[k]);
    let pair = |k: &str| {
        let v = if k == "issuer" { issuer } else { subject };
        format!("{k}: {}", scalar_like(yaml, value_of(k), v))
    };
    let NodeKind::Sequence { flow, .. } = yaml.node(list).kind else {
        return Err("not a list".into());
    };
    let item_flow = matches!(yaml.node(first).kind, NodeKind::Mapping { flow: true, .. });
    let body = if item_flow {
        format!(
            "{{{}}}",
            keys.iter().map(|k| pair(k)).collect::<Vec<_>>().join(", ")
        )
    } else {
        String::new()
    };
    let span = yaml.node(list).span;
    if flow {
        let body = if item_flow {
            body
        } else {
            format!(
                "{{{}}}",
                keys.iter().map(|k| pair(k)).collect::<Vec<_>>().join(", ")
            )
        };
        return Ok(TextEdit {
            start: span.start,
            end: span.end,
            text: format!("[{body}]"),
        });
    }
    let dash = yaml
        .node(items[0])
        .dash
        .ok_or("a block entry without its dash")?;
    let last = *items.last().expect("two or more entries");
    let end = yaml.node(last).span.end;
    let text = if item_flow {
        format!("- {body}")
    } else {
        let column = dash - yaml.line_start(dash);
        let lead = yaml.node(first).span.start - dash;
        let pad = " ".repeat(column + lead);
        let lines: Vec<String> = keys.iter().map(|k| pair(k)).collect();
        format!(
            "-{}{}",
            " ".repeat(lead - 1),
            lines.join(&format!("\n{pad}"))
        )
    };
    Ok(TextEdit {
        start: dash,
        end,
        text,
    })
}

fn message(object: &str, site: &Site, frozen: &[LayerRef]) -> String {
    let n = site.entries.as_ref().map_or(2, Vec::len);
    let what = if site.place.contains(' ') {
        format!("matchOIDCIdentity has {n} entries ({})", site.place)
    } else {
        format!("{} has {n} entries", site.place)
    };
    let mut m = format!(
        "{object}: {what}, and cosign's Sigstore-bundle verification refuses more than one \
         (\"unsupported: multiple identities are not supported at this time\"): once the \
         artifacts are signed as Sigstore bundles (cosign v3's default), every one is rejected \
         and {object} stops updating"
    );
    if !frozen.is_empty() {
        m.push_str(&format!(
            "; {} {} the last revision, and a corrective commit cannot arrive through {object}",
            frozen
                .iter()
                .map(|l| l.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            if frozen.len() == 1 { "keeps" } else { "keep" },
        ));
    }
    m
}

/// The live layers that read from the source `object` names (a layer's `sourceRef`, or the
/// root layer a FluxInstance creates from its sync), in the cluster of `layer`.
fn frozen_layers(model: &Model, object: Option<&ObjectKey>, cluster: usize) -> Vec<LayerRef> {
    let Some(o) = object else { return Vec::new() };
    let mut out: Vec<LayerRef> = model
        .live_layers()
        .filter(|(_, l)| {
            l.cluster == cluster
                && l.source.kind == *o.kind
                && l.source.name == *o.name
                && o.namespace
                    .as_ref()
                    .is_none_or(|ns| l.source.namespace == **ns)
        })
        .map(|(_, l)| l.id.clone())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The live layers that read `file` (as an object file or a patch of their build), the first
/// of each cluster.
fn reading_layers(model: &Model, file: FileId) -> Vec<LayerId> {
    let mut users: Vec<LayerId> = model.users_of_file(file).iter().map(|u| u.0).collect();
    if users.is_empty() {
        let path = &model.repo.file(file).path;
        users = model
            .live_layers()
            .filter(|(_, l)| {
                l.inventory()
                    .any(|(_, r)| model.patches_on_the_way(r).iter().any(|p| p.file == *path))
            })
            .map(|(id, _)| id)
            .collect();
    }
    let mut seen = Vec::new();
    users.retain(|&l| {
        let cluster = model.layer(l).cluster;
        let first = !seen.contains(&cluster);
        seen.push(cluster);
        first
    });
    users
}

/// One finding per cluster that reads the file (the rule runner merges those that agree).
fn findings(
    model: &Model,
    file: FileId,
    line: usize,
    site: &Site,
    fix: Result<Fix, String>,
) -> Vec<Draft> {
    let layers = reading_layers(model, file);
    if layers.is_empty() {
        return vec![finding(model, file, line, site, None, fix)];
    }
    layers
        .into_iter()
        .map(|l| finding(model, file, line, site, Some(l), fix.clone()))
        .collect()
}

fn finding(
    model: &Model,
    file: FileId,
    line: usize,
    site: &Site,
    layer_id: Option<LayerId>,
    fix: Result<Fix, String>,
) -> Draft {
    let layer = layer_id.map(|l| model.layer(l));
    let cluster = layer.map_or(0, |l| l.cluster);
    let frozen = frozen_layers(model, site.object.as_ref(), cluster);
    let object_text = site
        .object
        .as_ref()
        .map_or_else(|| "a verify patch".to_string(), |o| o.to_string());
    let layer_ref = layer.map_or_else(
        || LayerRef {
            namespace: String::new(),
            name: String::new(),
        },
        |l| l.id.clone(),
    );
    let object = site.object.clone().unwrap_or_else(|| ObjectKey {
        api_version: Name::from(""),
        kind: Name::from(""),
        namespace: None,
        name: Name::from(""),
    });
    Finding::draft(
        (META.id, Severity::Error),
        (model.repo.file(file).path.clone(), line),
        (layer_ref, cluster),
        object,
    )
    .summary(message(&object_text, site, &frozen))
    .blast(frozen, 0)
    .planned(fix)
}

fn describe(model: &Model, file: FileId, site: &Site) -> Vec<Draft> {
    let source = model.repo.file(file);
    let yaml = &source.yaml;
    let line = yaml.line_of(yaml.node(site.list).span.start);
    let fix = plan(source.error.is_some(), &source.path, site, |i, s| {
        replace_list(yaml, site.list, i, s)
    });
    findings(model, file, line, site, fix)
}

/// A list inside a patch string: at its own line when the string is a literal block (which the
/// fix edits), else at the `patch` key, without a fix.
fn describe_embedded(
    model: &Model,
    file: FileId,
    (key, block): (NodeId, Option<&edit::BlockDocument>),
    inner: &YamlFile,
    site: &Site,
) -> Vec<Draft> {
    let source = model.repo.file(file);
    let Some(block) = block else {
        let line = source.yaml.line_of(source.yaml.node(key).span.start);
        let fix = Err(
            "the patch is a folded or quoted string, whose bytes do not map to the list's: \
             write it as a literal block (`patch: |`) or merge the entries by hand"
                .to_string(),
        );
        return findings(model, file, line, site, fix);
    };
    let line = block.line + inner.line_of(inner.node(site.list).span.start);
    let fix = plan(source.error.is_some(), &source.path, site, |i, s| {
        replace_list(inner, site.list, i, s).and_then(|e| block.lift(&source.yaml, e))
    });
    findings(model, file, line, site, fix)
}

/// The fix: the list becomes one entry whose patterns are the alternations of the entries'.
fn plan(
    broken: bool,
    path: &str,
    site: &Site,
    edit: impl Fn(&str, &str) -> Result<TextEdit, String>,
) -> Result<Fix, String> {
    if broken {
        return Err(format!(
            "{path} does not parse to its end; fluxmend does not edit it"
        ));
    }
    let entries = site.entries.as_ref().ok_or(
        "an entry has keys other than issuer and subject (or an unknown alias); merge by hand",
    )?;
    let (issuer, subject, exact) = merge(entries);
    let mut changes = Changeset::default();
    changes.edit(path, edit(&issuer, &subject)?);
    let mut description = format!(
        "merge the {} identities into one entry: issuer {issuer}, subject {subject}",
        entries.len()
    );
    if !exact {
        let extra = unlisted_pairs(entries);
        description.push_str(&format!(
            " (wider than the list: it also accepts {})",
            extra
                .iter()
                .map(|(i, s)| format!("subject {s} from issuer {i}"))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut fix = Fix::titled(
        format!("merge {} matchOIDCIdentity entries into one", entries.len()),
        description,
        if exact {
            EXACT_TRADEOFF.as_str()
        } else {
            WIDER_TRADEOFF.as_str()
        },
        changes,
    );
    fix.normalise = Some(canonical);
    Ok(fix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternation_keeps_each_pattern_whole() {
        assert_eq!(alternation(&["a", "a"]), "a");
        assert_eq!(alternation(&["^x$", "^y.*$"]), "^(?:x|y.*)$");
        // Unanchored patterns match anywhere: grouped whole, each keeps its meaning.
        assert_eq!(alternation(&["x", "^y"]), "(?:x)|(?:^y)");
        // An alternation inside a pattern must not leak into the other's anchors.
        assert_eq!(alternation(&["^a|b$", "^c$"]), "(?:^a|b$)|(?:^c$)");
    }

    proptest::proptest! {
        /// The alternation matches exactly what one of the patterns matched, with Go's
        /// unanchored `MatchString` semantics (Rust's `regex` agrees with RE2 on this syntax).
        #[test]
        fn alternation_matches_the_union(
            patterns in proptest::collection::vec("[\\^]?[ab.]{0,3}(\\|[ab])?(\\.\\*)?[$]?", 1..4),
            texts in proptest::collection::vec("[abc]{0,5}", 1..12),
        ) {
            let compiled: Vec<regex::Regex> = patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect();
            proptest::prop_assume!(compiled.len() == patterns.len());
            let refs: Vec<&str> = patterns.iter().map(String::as_str).collect();
            let merged = regex::Regex::new(&alternation(&refs)).unwrap();
            for t in &texts {
                proptest::prop_assert_eq!(
                    merged.is_match(t),
                    compiled.iter().any(|r| r.is_match(t)),
                    "{:?} vs {:?} on {:?}", alternation(&refs), patterns, t
                );
            }
        }
    }

    #[test]
    fn merge_is_exact_only_for_a_full_cross_product() {
        let e = |i: &str, s: &str| (i.to_string(), s.to_string());
        assert!(merge(&[e("i", "a"), e("i", "b")]).2);
        assert!(merge(&[e("i", "a"), e("j", "a"), e("i", "b"), e("j", "b")]).2);
        assert!(!merge(&[e("i", "a"), e("j", "b")]).2);
    }

    #[test]
    fn canonical_form_is_the_same_before_and_after_a_merge() {
        let parse = |t: &str| {
            let (y, e) = YamlFile::parse(t);
            assert!(e.is_none());
            y.value(y.docs[0].root).unwrap()
        };
        let before = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^a$'\n      - issuer: '^i$'\n        subject: '^b$'\n",
        );
        let after = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^(?:a|b)$'\n",
        );
        let other = parse(
            "spec:\n  verify:\n    provider: cosign\n    matchOIDCIdentity:\n      - issuer: '^i$'\n        subject: '^(?:a|c)$'\n",
        );
        assert_eq!(canonical(before.clone()), canonical(after));
        assert_ne!(canonical(before), canonical(other));
    }
}
