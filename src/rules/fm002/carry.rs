//! What the kustomizations the moved objects leave did to them, carried into the one new
//! kustomization of the folder they move to: namespace, name prefix/suffix, labels,
//! annotations, images, targeted patches and transforming components, in an order kustomize
//! would also run them; anything that cannot be carried over exactly is refused with its place.

use std::collections::{BTreeMap, BTreeSet};

use crate::edit;
use crate::load::{FileId, SourceFile, parent_of};
use crate::model::{KustomizeDir, Model, RefTarget, Rendered, join, relative_path};
use crate::parse::{NodeId, NodeKind, Value, YamlFile};
use crate::rules::disposable::Analysis;
use crate::rules::layer_split::entry_text;

use super::overlays::FluxOverlays;
use super::touches::{component_touches, only_resources, patch_may_touch, transforms_only};

/// What makes the new kustomization do to the `moved` objects what `levels` (outermost first)
/// did: namespace, name prefix/suffix, labels, annotations, images, targeted patches and
/// transforming components. Carried into one kustomization, the operations of several levels
/// keep their order only when no level inside another runs a later [`Stage`] than it on the
/// moved objects; anything that cannot be carried over exactly is an error naming it.
pub(super) fn carry(
    an: &mut Analysis,
    flux: &FluxOverlays,
    moved_bindings: bool,
    moved: &[&Rendered],
    levels: &[FileId],
) -> Result<Carried, String> {
    let model = an.model;
    let mut read = Read::default();
    for (level, &file) in levels.iter().enumerate() {
        let f = model.repo.file(file);
        let Some(k) = model.kustomize_dirs.get(parent_of(&f.path)) else {
            continue;
        };
        let NodeKind::Mapping { entries, .. } = f.yaml.node(k.root).kind else {
            continue;
        };
        let level = Level {
            index: level,
            file: f,
            kustomization: k,
        };
        for (key, value) in entries {
            read.entry(an, moved, &level, key, value)?;
        }
    }
    read.check_order()?;
    let level_yaml = |level: usize| &model.repo.file(levels[level]).yaml;
    let mut lines: Vec<String> = Vec::new();
    read.names(&level_yaml, flux, moved_bindings, &mut lines)?;
    read.check_labels(&level_yaml)?;
    read.merged_fields(&level_yaml, &mut lines)?;
    // Inner levels first: their operations ran first.
    let inner_first = |mut v: Vec<(usize, CarriedPatch)>| {
        v.sort_by_key(|(level, _)| std::cmp::Reverse(*level));
        v.into_iter().map(|(_, p)| p).collect::<Vec<_>>()
    };
    let mut components = read.components;
    components.sort_by_key(|(level, _)| std::cmp::Reverse(*level));
    Ok(Carried {
        lines,
        patches: inner_first(read.patches),
        json6902: inner_first(read.json6902),
        components: components.into_iter().map(|(_, d)| d).collect(),
    })
}

/// A scalar field of one level: (level, key, value, its text).
type Field = (usize, NodeId, NodeId, String);

/// What the levels do to the moved objects, as read, before it is written as one kustomization.
#[derive(Default)]
struct Read<'m> {
    namespaces: Vec<Field>,
    prefixes: Vec<Field>,
    suffixes: Vec<Field>,
    /// `commonLabels`, `labels`, `commonAnnotations`, `images`: (level, key, value).
    plain: BTreeMap<&'m str, Vec<(usize, NodeId, NodeId)>>,
    patches: Vec<(usize, CarriedPatch)>,
    json6902: Vec<(usize, CarriedPatch)>,
    components: Vec<(usize, String)>,
    /// (level, stage, where, what) of every operation on the moved objects.
    ops: Vec<(usize, Stage, String, &'static str)>,
}

/// One kustomization of the chain the moved objects leave: its place (0 the outermost), file
/// and reading.
struct Level<'m> {
    index: usize,
    file: &'m SourceFile,
    kustomization: &'m KustomizeDir,
}

/// `file:line` of a node, for messages.
fn at(f: &SourceFile, n: NodeId) -> String {
    format!("{}:{}", f.path, f.yaml.line_of(f.yaml.node(n).span.start))
}

impl<'m> Read<'m> {
    /// Read one entry of a level's kustomization.
    fn entry(
        &mut self,
        an: &mut Analysis,
        moved: &[&Rendered],
        lv: &Level<'m>,
        key: NodeId,
        value: NodeId,
    ) -> Result<(), String> {
        let (level, f) = (lv.index, lv.file);
        let yaml = &f.yaml;
        let name = yaml.scalar(key).unwrap_or_default();
        let text = yaml.scalar(value).unwrap_or_default().to_string();
        match name {
            "apiVersion" | "kind" | "metadata" | "resources" | "bases" | "sortOptions"
            | "generatorOptions" | "openapi" | "crds" => {}
            "namespace" | "namePrefix" | "nameSuffix" if text.is_empty() => {}
            "namespace" | "namePrefix" | "nameSuffix" | "commonLabels" | "labels"
            | "commonAnnotations" | "images" => {
                let (stage, what) = if name == "images" {
                    (Stage::Images, "`images`")
                } else {
                    (Stage::Metadata, "a namespace, name or label transformer")
                };
                self.ops.push((level, stage, at(f, key), what));
                match name {
                    "namespace" => self.namespaces.push((level, key, value, text)),
                    "namePrefix" => self.prefixes.push((level, key, value, text)),
                    "nameSuffix" => self.suffixes.push((level, key, value, text)),
                    _ => self
                        .plain
                        .entry(name)
                        .or_default()
                        .push((level, key, value)),
                }
            }
            "patches" | "patchesStrategicMerge" | "patchesJson6902" => {
                self.patches_of(an.model, moved, lv, name, value)?;
            }
            "replicas" => replicas_spare(an.model, moved, f, value)?,
            "configMapGenerator" | "secretGenerator" => generators_spare(an, moved, f, value)?,
            "components" => self.components_of(an.model, moved, lv)?,
            other => {
                return Err(format!(
                    "{}: `{other}` may change the moved objects; fluxmend does not carry it over",
                    at(f, key)
                ));
            }
        }
        Ok(())
    }

    /// The entries of a patch list that may touch the moved objects: carried when targeted.
    fn patches_of(
        &mut self,
        model: &Model,
        moved: &[&Rendered],
        lv: &Level,
        field: &str,
        list: NodeId,
    ) -> Result<(), String> {
        let (level, f) = (lv.index, lv.file);
        let yaml = &f.yaml;
        for &item in yaml.items(list) {
            if !patch_may_touch(model, f.path.as_str(), yaml, item, moved) {
                continue;
            }
            let targeted =
                field != "patchesStrategicMerge" && yaml.lookup(item, &["target"]).is_some();
            if !targeted {
                return Err(format!(
                    "{}: a patch without a target names a moved object; it would fail in the kustomization the object leaves, and fluxmend does not move patch entries",
                    at(f, item)
                ));
            }
            let patch = CarriedPatch::read(yaml, &f.path, item)?;
            if field == "patches" {
                self.ops.push((
                    level,
                    Stage::Patch,
                    at(f, item),
                    "a patch that may target the moved objects",
                ));
                self.patches.push((level, patch));
            } else {
                self.ops.push((
                    level,
                    Stage::Json6902,
                    at(f, item),
                    "a JSON6902 patch that may target the moved objects",
                ));
                self.json6902.push((level, patch));
            }
        }
        Ok(())
    }

    /// A component that adds objects would add them to both layers; one that transforms the
    /// moved objects is carried (and stays for the others).
    fn components_of(
        &mut self,
        model: &Model,
        moved: &[&Rendered],
        lv: &Level,
    ) -> Result<(), String> {
        let (level, f) = (lv.index, lv.file);
        for c in &lv.kustomization.components {
            let comp = match &c.target {
                RefTarget::Dir(d) => model.kustomize_dirs.get(d.as_str()).map(|k| (d, k)),
                _ => None,
            };
            match comp {
                Some((_, comp)) if only_resources(model, comp.file) => {}
                Some((d, comp)) if transforms_only(model, comp.file) => {
                    if component_touches(model, comp.file, moved)? {
                        self.ops
                            .push((level, Stage::Component, at(f, c.item), "a component"));
                        self.components.push((level, d.to_string()));
                    }
                }
                _ => {
                    return Err(format!(
                        "{}: a component of this kustomization may change the moved objects and cannot be carried over as it is (it adds objects)",
                        at(f, c.item)
                    ));
                }
            }
        }
        Ok(())
    }

    /// kustomize runs a level's operations after those of every level inside it; the new
    /// kustomization runs them by stage. Namespace, name and label transformers and image
    /// tags change different fields: their order does not matter.
    fn check_order(&self) -> Result<(), String> {
        for (inner, a_stage, a_at, a_what) in &self.ops {
            for (outer, b_stage, b_at, b_what) in &self.ops {
                let commute = matches!((a_stage, b_stage), (Stage::Images, Stage::Metadata));
                if inner > outer && a_stage > b_stage && !commute {
                    return Err(format!(
                        "{b_at}: {b_what} runs after {a_what} at {a_at}, in a kustomization inside it; one new kustomization would run it first, so it cannot be carried over as it is"
                    ));
                }
            }
        }
        Ok(())
    }

    /// `namespace` (the outermost wins), `namePrefix` (outer first) and `nameSuffix` (inner
    /// first): one level's entry as written, several levels' combined.
    fn names<'y>(
        &self,
        level_yaml: &impl Fn(usize) -> &'y YamlFile,
        flux: &FluxOverlays,
        moved_bindings: bool,
        lines: &mut Vec<String>,
    ) -> Result<(), String> {
        let mut distinct: BTreeSet<&str> = self.namespaces.iter().map(|n| n.3.as_str()).collect();
        if let Some(t) = &flux.target_namespace {
            distinct.insert(t.as_str());
        }
        if distinct.len() > 1 && moved_bindings {
            return Err(
                "several namespace transformers apply to moved RoleBindings; kustomize sets their subjects' namespaces level by level, which one kustomization cannot reproduce".into(),
            );
        }
        if let Some((level, k, v, ns)) = self.namespaces.first() {
            if self.namespaces.len() == 1 {
                verbatim(lines, level_yaml(*level), *k, *v);
            } else {
                lines.push(format!("namespace: {}", edit::scalar_text(ns)));
            }
        }
        for (key, list, outer_first) in [
            ("namePrefix", &self.prefixes, true),
            ("nameSuffix", &self.suffixes, false),
        ] {
            match list.len() {
                0 => {}
                1 => verbatim(lines, level_yaml(list[0].0), list[0].1, list[0].2),
                _ => {
                    let mut parts: Vec<&str> = list.iter().map(|p| p.3.as_str()).collect();
                    if !outer_first {
                        parts.reverse();
                    }
                    lines.push(format!("{key}: {}", edit::scalar_text(&parts.concat())));
                }
            }
        }
        Ok(())
    }

    /// Labels and annotations: order-independent only when no key gets two values.
    fn check_labels<'y>(&self, level_yaml: &impl Fn(usize) -> &'y YamlFile) -> Result<(), String> {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for field in ["commonLabels", "labels"] {
            for &(level, _, v) in self.plain.get(field).map_or(&[][..], Vec::as_slice) {
                let value = level_yaml(level).value(v).unwrap_or(Value::Null);
                let maps: Vec<Value> = if field == "labels" {
                    value
                        .seq()
                        .iter()
                        .filter_map(|l| l.get("pairs").cloned())
                        .collect()
                } else {
                    vec![value]
                };
                for m in maps {
                    if let Value::Map(pairs) = m {
                        for (k, v) in pairs {
                            let (k, v) = (edit::value_flow_text(&k), edit::value_flow_text(&v));
                            if let Some(old) = seen.insert(k.clone(), v.clone())
                                && old != v
                            {
                                return Err(format!(
                                    "label {k} is set to {old} and {v} by different kustomizations; fluxmend does not merge them"
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// `commonLabels`, `labels`, `commonAnnotations` and `images`: one level's entry as
    /// written, several levels' merged (never two `images`).
    fn merged_fields<'y>(
        &self,
        level_yaml: &impl Fn(usize) -> &'y YamlFile,
        lines: &mut Vec<String>,
    ) -> Result<(), String> {
        for field in ["commonLabels", "labels", "commonAnnotations", "images"] {
            let list = self.plain.get(field).map_or(&[][..], Vec::as_slice);
            match list.len() {
                0 => {}
                1 => verbatim(lines, level_yaml(list[0].0), list[0].1, list[0].2),
                _ if field == "images" => {
                    return Err(
                        "several kustomizations set `images`; fluxmend does not merge them".into(),
                    );
                }
                _ => {
                    let mut merged: Vec<(Value, Value)> = Vec::new();
                    let mut items: Vec<Value> = Vec::new();
                    for &(level, _, v) in list {
                        match level_yaml(level).value(v).unwrap_or(Value::Null) {
                            Value::Map(pairs) => {
                                for (k, v) in pairs {
                                    if let Some(e) = merged.iter_mut().find(|(mk, _)| *mk == k) {
                                        if e.1 != v && field == "commonAnnotations" {
                                            return Err(format!(
                                                "annotation {} is set twice with different values; fluxmend does not merge them",
                                                edit::value_flow_text(&k)
                                            ));
                                        }
                                    } else {
                                        merged.push((k, v));
                                    }
                                }
                            }
                            Value::Seq(s) => items.extend(s),
                            _ => {}
                        }
                    }
                    lines.push(format!("{field}:"));
                    if field == "labels" {
                        lines.extend(edit::value_block_lines(&Value::Seq(items), 2));
                    } else {
                        lines.extend(edit::value_block_lines(&Value::Map(merged), 2));
                    }
                }
            }
        }
        Ok(())
    }
}

/// A `replicas` entry naming a moved object is not carried over.
fn replicas_spare(
    model: &Model,
    moved: &[&Rendered],
    f: &SourceFile,
    list: NodeId,
) -> Result<(), String> {
    let yaml = &f.yaml;
    for &item in yaml.items(list) {
        let n = yaml.lookup(item, &["name"]).and_then(|n| yaml.scalar(n));
        if moved
            .iter()
            .any(|m| Some(model.object(m.object).key.name.as_str()) == n)
        {
            return Err(format!(
                "{}: `replicas` names a moved object; fluxmend does not carry it over",
                at(f, item)
            ));
        }
    }
    Ok(())
}

/// A generated ConfigMap or Secret a moved object names: its hashed name is known only where
/// it is generated.
fn generators_spare(
    an: &mut Analysis,
    moved: &[&Rendered],
    f: &SourceFile,
    list: NodeId,
) -> Result<(), String> {
    let yaml = &f.yaml;
    for &item in yaml.items(list) {
        let Some(n) = yaml.lookup(item, &["name"]).and_then(|n| yaml.scalar(n)) else {
            continue;
        };
        for m in moved {
            if an.mentions(m.object, n) {
                return Err(format!(
                    "{}: {} names the generated {n}, whose hashed name the new folder would not know",
                    at(f, item),
                    m.key
                ));
            }
        }
    }
    Ok(())
}

/// A level's entry as written, re-indented to the new kustomization's top level.
fn verbatim(lines: &mut Vec<String>, yaml: &YamlFile, k: NodeId, v: NodeId) {
    let indent = &yaml.text()[yaml.line_start(yaml.node(k).span.start)..yaml.node(k).span.start];
    for l in entry_text(yaml, k, v).split('\n') {
        lines.push(l.strip_prefix(indent).unwrap_or(l).to_string());
    }
}

/// What a new folder's kustomization does to the moved objects: the carried fields (lines
/// without line endings), the patches it applies, and the components (repository
/// directories), whose paths are written relative to the new folder.
pub(super) struct Carried {
    lines: Vec<String>,
    patches: Vec<CarriedPatch>,
    json6902: Vec<CarriedPatch>,
    components: Vec<String>,
}

impl Carried {
    pub(super) fn is_empty(&self) -> bool {
        self.lines.is_empty()
            && self.patches.is_empty()
            && self.json6902.is_empty()
            && self.components.is_empty()
    }

    /// The kustomization lines of the new folder `folder`: the carried fields, then the
    /// patches with their files re-rooted.
    pub(super) fn lines_for(&self, folder: &str) -> Vec<String> {
        let mut lines = self.lines.clone();
        for (key, list) in [
            ("patches", &self.patches),
            ("patchesJson6902", &self.json6902),
        ] {
            if !list.is_empty() {
                lines.push(format!("{key}:"));
                for p in list {
                    lines.extend(p.text_for(folder).split('\n').map(str::to_string));
                }
            }
        }
        lines
    }

    /// The component directories relative to `folder`.
    pub(super) fn components_from(&self, folder: &str) -> Vec<String> {
        self.components
            .iter()
            .map(|c| relative_path(folder, c))
            .collect()
    }
}

/// A patch entry carried into a new kustomization: its text as written (from its dash to its
/// end, aliases resolved, LF line endings), with the file it names (`path:`) re-rooted.
struct CarriedPatch {
    before: String,
    /// The repository path of the patch file, and the entry's text after its `path` value.
    file: Option<(String, String)>,
}

impl CarriedPatch {
    fn read(yaml: &YamlFile, kfile_path: &str, item: NodeId) -> Result<CarriedPatch, String> {
        let dash = yaml.node(item).dash.ok_or("patch item without a dash")?;
        let start = yaml.line_start(dash);
        let end = edit::after_line(yaml.text(), yaml.node(item).span.end);
        let text = |a: usize, b: usize| {
            edit::resolved_text(yaml, a, b)
                .replace("\r\n", "\n")
                .clone()
        };
        let path = yaml
            .lookup(item, &["path"])
            .and_then(|n| yaml.scalar(n).map(|p| (n, p)));
        Ok(match path {
            Some((node, p)) => {
                let span = yaml.node(node).span;
                let file = join(parent_of(kfile_path), p).ok_or_else(|| {
                    format!("{kfile_path}: patch path `{p}` leaves the repository")
                })?;
                CarriedPatch {
                    before: text(start, span.start),
                    file: Some((file, text(span.end, end).trim_end_matches('\n').to_string())),
                }
            }
            None => CarriedPatch {
                before: text(start, end).trim_end_matches('\n').to_string(),
                file: None,
            },
        })
    }

    fn text_for(&self, folder: &str) -> String {
        match &self.file {
            Some((file, after)) => format!(
                "{}{}{after}",
                self.before,
                edit::scalar_text(&relative_path(folder, file))
            ),
            None => self.before.clone(),
        }
    }
}

/// Where an operation on the moved objects runs within one kustomization: its components
/// after its resources and generators, then kustomize's builtin transformers in their fixed
/// order (`configureBuiltinTransformers`: strategic-merge patches, patches, namespace,
/// prefix, suffix, labels, annotations, JSON6902 patches, replicas, images).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Stage {
    Component,
    Patch,
    /// namespace, namePrefix/nameSuffix, labels, annotations.
    Metadata,
    Json6902,
    Images,
}
