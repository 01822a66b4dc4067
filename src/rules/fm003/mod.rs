//! FM003 multi-identity-verify: a cosign `spec.verify.matchOIDCIdentity` with more than one
//! entry, which cosign's Sigstore-bundle verification refuses outright, failing closed (the
//! trigger of devantler-tech/platform#3006). Documentation: `rules/FM003.md`.
//!
//! This module detects and reports; beside it, each file importing only the files listed after
//! it: `plan` (the fix: one entry whose patterns are the alternations of the entries'),
//! `replace` (the edit, in the list's style), `merge` (the merged patterns and the gates'
//! canonical form), `sites` (where the lists are written), `meta` (the rule's document).

mod merge;
mod meta;
mod plan;
mod replace;
mod sites;

use crate::diagnostics::Severity;
use crate::edit;
use crate::load::FileId;
use crate::model::{LayerId, LayerRef, Model, Name, ObjectKey};
use crate::parse::{NodeId, YamlFile};

use super::{Draft, Finding, Fix, Rule, RuleMeta};
use meta::{LIST, META};
use plan::plan;
use replace::replace_list;
use sites::{Site, object_at, patch_strings, patch_target, sites};

pub struct MultiIdentityVerify;

impl Rule for MultiIdentityVerify {
    fn meta(&self) -> &'static RuleMeta {
        &META
    }

    fn check(&self, model: &Model) -> Vec<Draft> {
        let mut findings = Vec::new();
        for (index, file) in model.repo.files.iter().enumerate() {
            let file_id = crate::load::file_id(index);
            if !file.yaml.text().contains(LIST) || !model.is_live_file(&file.path) {
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
                if !inner.text().contains(LIST) {
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
                .map(ToString::to_string)
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
    let mut users: Vec<LayerId> = model.users_of_file(file).map(|u| u.0).collect();
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
        .map_or_else(|| "a verify patch".to_string(), ToString::to_string);
    let layer_ref = layer.map_or_else(
        || LayerRef {
            namespace: Name::default(),
            name: Name::default(),
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
        replace_list(inner, site.list, i, s).and_then(|e| block.lift(&source.yaml, &e))
    });
    findings(model, file, line, site, fix)
}
