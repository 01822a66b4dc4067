//! Flux layers: every Flux Kustomization (and the root one a FluxInstance makes) with its source,
//! resolved path variants, gating, dependencies and inventory — and which root makes it live.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::FileId;
use crate::parse::{NodeId, YamlFile};

use super::kustomize::{
    RefTarget, Rendered, Renderer, ResourceRef, Transform, check_unique, display_dir,
};
use super::{Model, ModelOptions, Name, ObjectIdx, ObjectKey, join, normalize};

/// Index of a layer in [`Model::layers`].
pub type LayerId = usize;

/// A `dependsOn` entry, or a layer's own identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LayerRef {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for LayerRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The source a layer reads (`spec.sourceRef`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceRef {
    pub kind: String,
    pub name: String,
    pub namespace: String,
}

impl std::fmt::Display for SourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.kind, self.namespace, self.name)
    }
}

/// One `spec.healthChecks` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
    /// The sequence item, for edits that drop it.
    pub item: NodeId,
}

impl HealthCheck {
    pub fn matches(&self, key: &ObjectKey) -> bool {
        self.kind == key.kind
            && self.name == key.name
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| key.namespace.as_ref().is_some_and(|k| k == ns))
    }
}

/// One directory a layer's path stands for (a path with placeholders has one per match).
#[derive(Clone, Debug)]
pub struct Variant {
    pub dir: String,
    /// Placeholder text and the directory name it matched, e.g. (`__PROVIDER__`, `hetzner`).
    pub bindings: Vec<(String, String)>,
    /// The directory has no kustomization file: Flux generates one.
    pub generated: bool,
    /// What the layer applies from this directory.
    pub inventory: Vec<Rendered>,
    /// Why the directory could not be rendered (its inventory is then incomplete).
    pub error: Option<String>,
    /// kustomize fields and entries on the way whose effect on names and namespaces is not
    /// modelled (`helmCharts`, plugins and renaming patches or replacements among `transformers`
    /// and `replacements`), as `field in file`: the inventory's identities may differ from what
    /// Flux applies.
    pub unmodelled: Vec<String>,
}

/// kustomize fields that can rename, re-namespace or add objects in ways the model does not
/// follow (`transformers:` and `replacements:` entries are read one by one: only those whose
/// effect is unknown are unmodelled).
const UNMODELLED_FIELDS: &[&str] = &["helmCharts"];

/// The [`UNMODELLED_FIELDS`] and the transformers of unknown effect of the kustomization files
/// a variant's build reads.
fn unmodelled_fields(model: &Model, dir: &str, inventory: &[Rendered]) -> Vec<String> {
    let mut files: Vec<crate::load::FileId> = model
        .kustomize_dirs
        .get(dir)
        .map(|k| k.file)
        .into_iter()
        .chain(inventory.iter().flat_map(|r| r.chain.iter().copied()))
        .collect();
    files.sort_unstable();
    files.dedup();
    let mut out = Vec::new();
    for file in files {
        let source = model.repo.file(file);
        let Some(k) = model
            .kustomize_dirs
            .get(crate::load::parent_of(&source.path))
        else {
            continue;
        };
        if k.file != file {
            continue;
        }
        for field in UNMODELLED_FIELDS {
            if source.yaml.lookup(k.root, &[field]).is_some() {
                out.push(format!("`{field}` in {}", source.path));
            }
        }
        out.extend(k.transformers.unknown.iter().cloned());
    }
    out
}

/// The [`UNMODELLED_FIELDS`] and unknown transformers of every kustomization a build of `dir`
/// may read (resources and components, recursively): what a failed build, whose inventory is
/// empty, may have depended on.
fn unmodelled_below(model: &Model, dir: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut seen = HashSet::default();
    let mut stack = vec![dir.to_string()];
    while let Some(dir) = stack.pop() {
        if !seen.insert(dir.clone()) {
            continue;
        }
        let Some(k) = model.kustomize_dirs.get(&dir) else {
            continue;
        };
        let source = model.repo.file(k.file);
        for field in UNMODELLED_FIELDS {
            if source.yaml.lookup(k.root, &[field]).is_some() {
                out.push(format!("`{field}` in {}", source.path));
            }
        }
        out.extend(k.transformers.unknown.iter().cloned());
        for r in k.resources.iter().chain(&k.components) {
            if let RefTarget::Dir(d) = &r.target {
                stack.push(d.clone());
            }
        }
    }
    out
}

/// A Flux Kustomization as a delivery layer.
#[derive(Clone, Debug)]
pub struct Layer {
    pub id: LayerRef,
    /// The Flux Kustomization object; `None` for the root Kustomization a FluxInstance creates.
    pub object: Option<ObjectIdx>,
    /// The FluxInstance whose `spec.sync` creates this layer (root layers of the operator).
    pub created_by_instance: Option<ObjectIdx>,
    /// Index of the root this layer is reached from (one per cluster in a fleet repository).
    pub cluster: usize,
    /// Reached from a root; unreferenced layers are modelled but not live.
    pub live: bool,
    pub applied_by: Option<LayerId>,
    pub source: SourceRef,
    /// The source's artifact root in this repository, when known.
    pub source_root: Option<String>,
    /// `spec.path` as written.
    pub path: String,
    pub variants: Vec<Variant>,
    pub wait: bool,
    pub health_checks: Vec<HealthCheck>,
    pub health_check_exprs: usize,
    pub depends_on: Vec<(LayerRef, NodeId)>,
    pub depends_on_ids: Vec<LayerId>,
    pub timeout: Option<String>,
    pub interval: Option<String>,
    pub target_namespace: Option<String>,
    pub suspend: bool,
    pub prune: bool,
    pub post_build: bool,
    /// Applies to another cluster: its `spec.kubeConfig` (or a parent's) names one. Its objects
    /// live there, so they never lock this cluster's delivery.
    pub remote: bool,
}

impl Layer {
    /// Whether this layer health-gates the object: `wait: true` checks everything it applies and
    /// ignores `healthChecks`; otherwise only the listed objects are checked.
    pub fn gates(&self, key: &ObjectKey) -> bool {
        self.wait || self.health_checks.iter().any(|hc| hc.matches(key))
    }

    /// Every object of every variant, once per variant.
    pub fn inventory(&self) -> impl Iterator<Item = (&Variant, &Rendered)> {
        self.variants
            .iter()
            .flat_map(|v| v.inventory.iter().map(move |r| (v, r)))
    }
}

pub const FLUX_KUSTOMIZE_GROUP: &str = "kustomize.toolkit.fluxcd.io";
pub const FLUX_OPERATOR_GROUP: &str = "fluxcd.controlplane.io";

/// The sync settings of a FluxInstance (raw, or a HelmRelease of the `flux-instance` chart).
struct Sync {
    instance: ObjectIdx,
    kind: String,
    name: String,
    namespace: String,
    path: String,
    /// The repository the root source reads: this one.
    url: Option<String>,
}

/// `spec.url` of the source object a `sourceRef` names, when it is in this repository.
fn source_url(model: &Model, source: &SourceRef) -> Option<String> {
    let obj =
        model.object(model.find_object(&source.kind, &source.name, Some(&source.namespace))?);
    let yaml = &model.repo.file(obj.file).yaml;
    yaml.lookup(obj.root, &["spec", "url"])
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string)
}

/// The revision a GitRepository checks out (`spec.ref`), as `kind value` in Flux's order of
/// precedence (commit, name, semver, tag, branch); `None` when unset or not defined here.
fn git_ref(model: &Model, source: &SourceRef) -> Option<String> {
    let obj =
        model.object(model.find_object(&source.kind, &source.name, Some(&source.namespace))?);
    let yaml = &model.repo.file(obj.file).yaml;
    ["commit", "name", "semver", "tag", "branch"]
        .iter()
        .find_map(|k| {
            yaml.lookup(obj.root, &["spec", "ref", k])
                .and_then(|n| yaml.scalar(n))
                .map(|v| format!("{k} {v}"))
        })
}

/// A repository URL without what does not tell repositories apart: scheme, user, `.git`, a
/// trailing `/`, case, and the `:` of scp-like `git@host:org/repo`.
fn normalize_url(url: &str) -> String {
    let url = url.trim().to_ascii_lowercase();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    let rest = match rest.split_once(':') {
        // `host:org/repo` (scp-like), not `host:port/…`.
        Some((host, path)) if !path.starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{host}/{path}")
        }
        _ => rest.to_string(),
    };
    let rest = rest.trim_end_matches('/');
    rest.strip_suffix(".git").unwrap_or(rest).to_string()
}

/// The file and node of a FluxInstance's spec: `spec` of the object, or `spec.values.instance`
/// of a HelmRelease of the `flux-instance` chart. `None` for another object, or one written
/// in a file named only as a patch.
pub(super) fn instance_spec(model: &Model, idx: ObjectIdx) -> Option<(FileId, NodeId)> {
    if model.in_patch_file(idx) {
        return None;
    }
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let spec = if obj.is(FLUX_OPERATOR_GROUP, "FluxInstance") {
        yaml.lookup(obj.root, &["spec"])?
    } else if obj.key.kind == "HelmRelease"
        && model.helm_chart(idx).as_deref() == Some("flux-instance")
    {
        yaml.lookup(obj.root, &["spec", "values", "instance"])?
    } else {
        return None;
    };
    Some((obj.file, spec))
}

fn instance_sync(model: &Model, idx: ObjectIdx) -> Option<Sync> {
    let (file, spec) = instance_spec(model, idx)?;
    let obj = model.object(idx);
    let yaml = &model.repo.file(file).yaml;
    let sync = yaml.lookup(spec, &["sync"])?;
    let get = |k: &str| {
        yaml.lookup(sync, &[k])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let namespace = obj
        .key
        .namespace
        .as_ref()
        .map_or_else(|| "flux-system".into(), Name::to_string);
    Some(Sync {
        instance: idx,
        kind: get("kind").unwrap_or_else(|| "GitRepository".into()),
        name: get("name").unwrap_or_else(|| namespace.clone()),
        namespace,
        path: get("path").unwrap_or_default(),
        url: get("url"),
    })
}

impl Model<'_> {
    /// The chart a HelmRelease installs: `spec.chart.spec.chart`, or the last path segment of the
    /// OCIRepository (or the chart of the HelmChart) its `chartRef` names.
    pub fn helm_chart(&self, idx: ObjectIdx) -> Option<String> {
        let obj = self.object(idx);
        let yaml = &self.repo.file(obj.file).yaml;
        let scalar = |keys: &[&str]| yaml.lookup(obj.root, keys).and_then(|n| yaml.scalar(n));
        if let Some(chart) = scalar(&["spec", "chart", "spec", "chart"]) {
            return Some(chart.rsplit('/').next().unwrap_or(chart).to_string());
        }
        let kind = scalar(&["spec", "chartRef", "kind"])?;
        let name = scalar(&["spec", "chartRef", "name"])?;
        let namespace = scalar(&["spec", "chartRef", "namespace"]).or(obj.key.namespace.as_deref());
        let target = self.object(self.find_object(kind, name, namespace)?);
        let tyaml = &self.repo.file(target.file).yaml;
        let tscalar = |keys: &[&str]| {
            tyaml
                .lookup(target.root, keys)
                .and_then(|n| tyaml.scalar(n))
        };
        match kind {
            "OCIRepository" => tscalar(&["spec", "url"])
                .and_then(|u| u.trim_end_matches('/').rsplit('/').next())
                .map(str::to_string),
            _ => tscalar(&["spec", "chart"]).map(str::to_string),
        }
    }

    /// Whether an object is a FluxInstance (raw or through the `flux-instance` chart).
    pub fn is_flux_instance(&self, idx: ObjectIdx) -> bool {
        let obj = self.object(idx);
        obj.is(FLUX_OPERATOR_GROUP, "FluxInstance")
            || (obj.key.kind == "HelmRelease"
                && self.helm_chart(idx).as_deref() == Some("flux-instance"))
    }

    /// The source a FluxInstance's sync creates (the root source it owns).
    pub fn instance_source(&self, idx: ObjectIdx) -> Option<SourceRef> {
        instance_sync(self, idx).map(|s| SourceRef {
            kind: s.kind,
            name: s.name,
            namespace: s.namespace,
        })
    }
}

/// The file the loader generated from a ResourceSet: `None` for another object, and for a
/// ResourceSet it could not expand.
fn resource_set_file(model: &Model, idx: ObjectIdx) -> Option<Option<crate::load::FileId>> {
    let obj = model.object(idx);
    if !obj.is(FLUX_OPERATOR_GROUP, "ResourceSet") {
        return None;
    }
    let file = model.repo.file(obj.file);
    let namespace = file
        .yaml
        .lookup(obj.root, &["metadata", "namespace"])
        .and_then(|n| file.yaml.scalar(n))
        .unwrap_or("default");
    let path = crate::load::resourceset::generated_path(&file.path, namespace, &obj.key.name);
    Some(model.repo.file_id(&path))
}

/// The objects the loader generated from a ResourceSet (none for another object, or a
/// ResourceSet it could not expand).
fn generated_by_resource_set(model: &Model, idx: ObjectIdx) -> std::ops::Range<ObjectIdx> {
    resource_set_file(model, idx)
        .flatten()
        .map_or(0..0, |id| model.objects_in(id))
}

fn is_flux_kustomization(model: &Model, idx: ObjectIdx) -> bool {
    model.object(idx).is(FLUX_KUSTOMIZE_GROUP, "Kustomization") && !model.in_patch_file(idx)
}

/// A layer read from a Flux Kustomization object (before its paths are resolved).
fn layer_from_object(
    model: &Model,
    idx: ObjectIdx,
    key: &ObjectKey,
    cluster: usize,
    applied_by: Option<LayerId>,
) -> Layer {
    let obj = model.object(idx);
    let yaml: &YamlFile = &model.repo.file(obj.file).yaml;
    let spec = yaml.lookup(obj.root, &["spec"]);
    let at = |keys: &[&str]| spec.and_then(|s| yaml.lookup(s, keys));
    let text = |keys: &[&str]| at(keys).and_then(|n| yaml.scalar(n)).map(str::to_string);
    let namespace = key.namespace.as_deref().unwrap_or("default").to_string();
    let field = |item: NodeId, k: &str| {
        yaml.lookup(item, &[k])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let items = |key: &str| at(&[key]).map_or(&[][..], |list| yaml.items(list));
    let health_checks = items("healthChecks")
        .iter()
        .filter_map(|&item| {
            Some(HealthCheck {
                kind: field(item, "kind")?,
                name: field(item, "name")?,
                namespace: field(item, "namespace"),
                item,
            })
        })
        .collect();
    let depends_on = items("dependsOn")
        .iter()
        .filter_map(|&item| {
            let name = field(item, "name")?;
            let namespace = field(item, "namespace").unwrap_or_else(|| namespace.clone());
            Some((LayerRef { name, namespace }, item))
        })
        .collect();
    let bool_at = |k: &str| {
        at(&[k])
            .and_then(|n| yaml.value(n).ok())
            .and_then(|v| v.as_bool())
    };
    Layer {
        id: LayerRef {
            namespace: namespace.clone(),
            name: key.name.to_string(),
        },
        object: Some(idx),
        created_by_instance: None,
        cluster,
        live: false,
        applied_by,
        source: SourceRef {
            kind: text(&["sourceRef", "kind"]).unwrap_or_else(|| "GitRepository".into()),
            name: text(&["sourceRef", "name"]).unwrap_or_default(),
            namespace: text(&["sourceRef", "namespace"]).unwrap_or_else(|| namespace.clone()),
        },
        source_root: None,
        path: text(&["path"]).unwrap_or_default(),
        variants: Vec::new(),
        wait: bool_at("wait").unwrap_or(false),
        health_checks,
        health_check_exprs: at(&["healthCheckExprs"]).map_or(0, |n| yaml.items(n).len()),
        depends_on,
        depends_on_ids: Vec::new(),
        timeout: text(&["timeout"]),
        interval: text(&["interval"]),
        target_namespace: text(&["targetNamespace"]),
        suspend: bool_at("suspend").unwrap_or(false),
        prune: bool_at("prune").unwrap_or(false),
        post_build: at(&["postBuild"]).is_some(),
        remote: at(&["kubeConfig"]).is_some(),
    }
}

/// The root Kustomization the operator creates for a FluxInstance's sync: `interval: 10m`,
/// `prune: true`, no wait.
fn layer_from_sync(sync: &Sync, cluster: usize) -> Layer {
    Layer {
        id: LayerRef {
            namespace: sync.namespace.clone(),
            name: sync.name.clone(),
        },
        object: None,
        created_by_instance: Some(sync.instance),
        cluster,
        live: true,
        applied_by: None,
        source: SourceRef {
            kind: sync.kind.clone(),
            name: sync.name.clone(),
            namespace: sync.namespace.clone(),
        },
        source_root: None,
        path: sync.path.clone(),
        variants: Vec::new(),
        wait: false,
        health_checks: Vec::new(),
        health_check_exprs: 0,
        depends_on: Vec::new(),
        depends_on_ids: Vec::new(),
        timeout: None,
        interval: Some("10m".into()),
        target_namespace: None,
        suspend: false,
        prune: true,
        post_build: false,
        remote: false,
    }
}

/// The `spec.targetNamespace` the transformers on `r`'s way write into the Flux Kustomization
/// it is (innermost kustomization first, each one's transformers in order: the last wins).
fn transformed_target_namespace(model: &Model, r: &Rendered) -> Option<String> {
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let mut current = yaml
        .lookup(obj.root, &["spec", "targetNamespace"])
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string);
    let mut changed = false;
    for &file in r.chain.iter().rev() {
        let dir = crate::load::parent_of(&model.repo.file(file).path);
        let Some(k) = model.kustomize_dirs.get(dir).filter(|k| k.file == file) else {
            continue;
        };
        for t in &k.transformers.identity {
            if let Some(ns) = t.target_namespace(current.as_deref()) {
                current = Some(ns);
                changed = true;
            }
        }
    }
    current.filter(|_| changed)
}

/// Is a path segment a placeholder resolved outside Flux (`__PROVIDER__`, `${CLUSTER}`)?
fn placeholder_parts(segment: &str) -> Option<(&str, &str, &str)> {
    let (start, end) = if let Some(s) = segment.find("${") {
        (s, segment[s..].find('}')? + s + 1)
    } else {
        let s = segment.find("__")?;
        let e = segment[s + 2..].find("__")? + s + 4;
        if e - s <= 4
            || !segment[s + 2..e - 2]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return None;
        }
        (s, e)
    };
    Some((&segment[..start], &segment[start..end], &segment[end..]))
}

/// Placeholder text and the directory name it matched.
type Bindings = Vec<(String, String)>;

/// Expand a layer path against existing directories: one (dir, bindings) per match.
fn expand_path(
    model: &Model,
    base: &str,
    path: &str,
    clamped: &mut bool,
) -> Result<Vec<(String, Bindings)>, String> {
    let mut current: Vec<(String, Bindings)> = vec![(base.to_string(), Vec::new())];
    for segment in path.split('/') {
        let mut next = Vec::new();
        for (dir, bindings) in current {
            match segment {
                "" | "." => next.push((dir, bindings)),
                // Flux joins the path with securejoin: `..` at the source root stays there.
                ".." => match super::paths::join(&dir, "..") {
                    Some(parent) if dir != base => next.push((parent, bindings)),
                    _ => {
                        *clamped = true;
                        next.push((dir, bindings));
                    }
                },
                seg => match placeholder_parts(seg) {
                    Some((prefix, placeholder, suffix)) => {
                        for sub in model.repo.subdirs(&dir) {
                            let name = sub.rsplit('/').next().unwrap_or(sub);
                            if name.len() > prefix.len() + suffix.len()
                                && name.starts_with(prefix)
                                && name.ends_with(suffix)
                            {
                                let mut b = bindings.clone();
                                b.push((
                                    placeholder.to_string(),
                                    name[prefix.len()..name.len() - suffix.len()].to_string(),
                                ));
                                next.push((sub.clone(), b));
                            }
                        }
                    }
                    None => {
                        let joined = join(&dir, seg)
                            .ok_or_else(|| format!("path `{path}` leaves the source root"))?;
                        if model.repo.is_dir(&joined) {
                            next.push((joined, bindings));
                        }
                    }
                },
            }
        }
        current = next;
    }
    Ok(current)
}

impl Model<'_> {
    /// A Flux Kustomization's `spec.components`, resolved against the directory `dir` of one of
    /// its variants. Flux appends them to the kustomization at the path (fluxcd/pkg
    /// `kustomize/kustomize_generator.go`); with `ignoreMissingComponents` a missing one is
    /// left out, otherwise it fails the build.
    pub fn flux_components(&self, layer: &Layer, dir: &str) -> Result<Vec<ResourceRef>, String> {
        let Some(obj) = layer.object.map(|o| self.object(o)) else {
            return Ok(Vec::new());
        };
        let yaml = &self.repo.file(obj.file).yaml;
        let Some(list) = yaml.lookup(obj.root, &["spec", "components"]) else {
            return Ok(Vec::new());
        };
        let ignore_missing = yaml
            .lookup(obj.root, &["spec", "ignoreMissingComponents"])
            .and_then(|n| yaml.value(n).ok())
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        let mut out = Vec::new();
        for &item in yaml.items(list) {
            let Some(text) = yaml.scalar(item) else {
                continue;
            };
            let target = match join(dir, text) {
                Some(p) if self.repo.is_dir(&p) => RefTarget::Dir(p),
                Some(_) if ignore_missing => continue,
                Some(p) if self.repo.is_file(&p) => {
                    return Err(format!("component `{text}` is not a directory"));
                }
                _ => return Err(format!("component `{text}` does not exist")),
            };
            out.push(ResourceRef {
                text: text.to_string(),
                item,
                target,
            });
        }
        Ok(out)
    }
}

/// Render what Flux applies from `dir`: its kustomization, or the one Flux generates, with the
/// layer's `spec.components` appended.
fn render_layer_dir(
    renderer: &mut Renderer,
    layer: &Layer,
    dir: &str,
) -> (bool, Result<Vec<Rendered>, String>) {
    let model = renderer.model;
    let components = match model.flux_components(layer, dir) {
        Ok(c) => c,
        Err(e) => return (!has_kustomization_file(model, dir), Err(e)),
    };
    if has_kustomization_file(model, dir) {
        // Flux generates only when there is no kustomization file; an unusable one fails.
        return (false, renderer.render_dir_with(dir, &components));
    }
    let generated = generate(renderer, dir).and_then(|mut out| {
        for c in &components {
            renderer.add_component(c, None, &mut out)?;
        }
        Ok(out)
    });
    (true, generated)
}

/// Whether `dir` holds a file kustomize takes as its kustomization (usable or not).
fn has_kustomization_file(model: &Model, dir: &str) -> bool {
    model.kustomize_dirs.contains_key(dir)
        || super::kustomize::KUSTOMIZATION_FILE_NAMES
            .iter()
            .any(|name| join(dir, name).is_some_and(|p| model.repo.is_file(&p)))
}

/// Flux's generated kustomization: every `.yaml`/`.yml` below `dir`, recursively; a subdirectory
/// with its own kustomization file is a directory resource and is not descended into.
fn generate(renderer: &mut Renderer, dir: &str) -> Result<Vec<Rendered>, String> {
    let model = renderer.model;
    let mut out = Vec::new();
    // Flux decodes every YAML file it lists; one it cannot decode fails the whole layer.
    if let Some(skipped) = model.repo.skipped_yaml_in(dir).next() {
        return Err(format!(
            "Flux cannot generate a kustomization for {}: {skipped} is not plain Kubernetes YAML",
            display_dir(dir)
        ));
    }
    for &file in model.repo.files_in(dir) {
        let source = model.repo.file(file);
        if let Some(e) = &source.error {
            return Err(format!(
                "Flux cannot generate a kustomization for {}: {} does not parse ({}:{}: {})",
                display_dir(dir),
                source.path,
                e.line,
                e.column,
                e.message
            ));
        }
        let objects = model.objects_in(file);
        let non_object = source.yaml.docs.iter().enumerate().find(|(idx, d)| {
            let empty = matches!(source.yaml.value(d.root), Ok(crate::parse::Value::Null));
            !empty && !objects.clone().any(|o| model.object(o).doc == *idx)
        });
        if let Some((_, doc)) = non_object {
            return Err(format!(
                "Flux cannot generate a kustomization for {}: {}:{} is a document that is not a Kubernetes object",
                display_dir(dir),
                source.path,
                source.yaml.line_of(source.yaml.node(doc.root).span.start)
            ));
        }
        out.extend(renderer.file_objects(&source.path, &[]));
    }
    for sub in model.repo.subdirs(dir).to_vec() {
        if has_kustomization_file(model, &sub) {
            out.extend(renderer.render_dir_owned(&sub)?);
        } else {
            out.extend(generate(renderer, &sub)?);
        }
    }
    Ok(out)
}

struct Builder<'m, 'r> {
    renderer: Renderer<'m, 'r>,
    layers: Vec<Layer>,
    known: HashMap<(usize, LayerRef, Option<ObjectIdx>), LayerId>,
    source_roots: HashMap<(usize, SourceRef), Option<String>>,
    options: &'m ModelOptions,
    /// (cluster, id) of every root layer.
    root_ids: HashSet<(usize, LayerRef)>,
    /// Flux Kustomization objects some root reaches.
    reached: HashSet<ObjectIdx>,
    /// How many Flux Kustomization objects read each source: a source shared by several layers
    /// is the repository's own.
    source_readers: HashMap<SourceRef, usize>,
    diagnostics: Vec<Diagnostic>,
}

impl<'m, 'r> Builder<'m, 'r> {
    /// A builder with no layer yet, that knows how many Flux Kustomizations read each source.
    fn new(model: &'m Model<'r>, options: &'m ModelOptions, flux_ks: &[ObjectIdx]) -> Self {
        let mut source_readers: HashMap<SourceRef, usize> = HashMap::default();
        for &idx in flux_ks {
            let key = model.object(idx).key.clone();
            let source = layer_from_object(model, idx, &key, 0, None).source;
            *source_readers.entry(source).or_default() += 1;
        }
        Builder {
            renderer: Renderer::new(model),
            layers: Vec::new(),
            known: HashMap::default(),
            source_roots: HashMap::default(),
            options,
            root_ids: HashSet::default(),
            reached: HashSet::default(),
            source_readers,
            diagnostics: Vec::new(),
        }
    }
}

impl Builder<'_, '_> {
    fn source_root(&mut self, cluster: usize, source: &SourceRef, path: &str) -> Option<String> {
        if let Some(dir) = self.mapped_source(source) {
            return Some(dir.to_string());
        }
        if source.kind == "GitRepository" {
            return Some(String::new());
        }
        if let Some(root) = &self.options.source_root {
            return Some(root.clone());
        }
        let key = (cluster, source.clone());
        if let Some(done) = self.source_roots.get(&key) {
            return done.clone();
        }
        let model = self.renderer.model;
        // The artifact root is the directory the paths resolve against: the shallowest one that
        // has this layer's path.
        let found = std::iter::once(&String::new())
            .chain(model.repo.dirs.iter())
            .filter(|d| expand_path(model, d, path, &mut false).is_ok_and(|v| !v.is_empty()))
            .min_by_key(|d| {
                (
                    if d.is_empty() {
                        0
                    } else {
                        d.matches('/').count() + 1
                    },
                    (*d).clone(),
                )
            })
            .cloned();
        self.source_roots.insert(key, found.clone());
        found
    }

    /// The directory `--source` maps this source to, if any.
    fn mapped_source(&self, source: &SourceRef) -> Option<&str> {
        self.options.sources.iter().find_map(|(name, dir)| {
            let parts: Vec<&str> = name.split('/').collect();
            let matches = match parts.as_slice() {
                [n] => *n == source.name,
                [ns, n] => *ns == source.namespace && *n == source.name,
                [kind, ns, n] => {
                    *kind == source.kind && *ns == source.namespace && *n == source.name
                }
                _ => false,
            };
            matches.then_some(dir.as_str())
        })
    }

    /// Why a layer's source is another repository than this one, if it is. The root layer's
    /// source is this repository; a GitRepository is another when its URL differs from the
    /// root source's (or, with either URL unknown, when its path does not exist here); an
    /// OCIRepository defined here whose URL is not the root source's; an OCIRepository, Bucket
    /// or other artifact when its path resolves nowhere here (see
    /// [`Builder::source_root`]) and no `--source-root` says where it was pushed from. A
    /// source `--source` maps to a directory is never external.
    fn external_source(&mut self, id: LayerId) -> Option<String> {
        let layer = &self.layers[id];
        let mut root = id;
        while let Some(parent) = self.layers[root].applied_by {
            root = parent;
        }
        let root_layer = &self.layers[root];
        let model = self.renderer.model;
        // Without any root (no FluxInstance sync, no bootstrap Kustomization, no --root) every
        // layer is walked as one; the repository's own source is then created outside it, so a
        // source defined here that only this layer reads is a tenant's or an app's repository.
        let rootless = root == id
            && layer.created_by_instance.is_none()
            && self.options.roots.is_empty()
            && !(layer.id.name == "flux-system" && layer.id.namespace == "flux-system");
        if rootless
            && self.source_readers.get(&layer.source).copied().unwrap_or(0) <= 1
            && let Some(url) = source_url(model, &layer.source)
        {
            return Some(format!(
                "{url}, a source only this layer reads (this repository has no root to compare with)"
            ));
        }
        if root == id
            || layer.source == root_layer.source
            || layer.source.name.is_empty()
            || self.mapped_source(&layer.source).is_some()
        {
            return None;
        }
        let url = source_url(model, &layer.source);
        if layer.source.kind == "GitRepository" {
            let root_url = match root_layer.created_by_instance {
                Some(instance) => instance_sync(model, instance).and_then(|s| s.url),
                None => source_url(model, &root_layer.source),
            };
            // The same repository at another revision (a tenant's branch) is another tree.
            let other_ref = match (
                git_ref(model, &layer.source),
                (root_layer.created_by_instance.is_none())
                    .then(|| git_ref(model, &root_layer.source))
                    .flatten(),
            ) {
                (Some(own), Some(root)) if own != root => Some(format!("{own}, not {root}")),
                _ => None,
            };
            return match (url, root_url) {
                (Some(url), Some(root_url)) if normalize_url(&url) != normalize_url(&root_url) => {
                    Some(format!("{url}, not {root_url}"))
                }
                (Some(url), Some(_)) => other_ref.map(|r| format!("{url} at {r}")),
                // This repository arrives as an artifact (OCI, Bucket): a Git repository with a
                // URL of its own is another.
                (Some(url), None) if root_layer.source.kind != "GitRepository" => Some(format!(
                    "{url}, while this repository arrives as {} {}",
                    root_layer.source.kind, root_layer.source.name
                )),
                // This repository's own source is not defined here (a bootstrap placeholder): a
                // Git source checking out a revision other than the usual default branch is
                // another tree than the one being analysed (a tenant's branch).
                (Some(url), None)
                    if git_ref(model, &layer.source).is_some_and(|r| {
                        !matches!(r.as_str(), "branch main" | "branch master")
                    }) =>
                {
                    Some(format!(
                        "{url} at {}, and this repository's own source is not defined here to compare with",
                        git_ref(model, &layer.source).unwrap_or_default()
                    ))
                }
                (url, _) => expand_path(model, "", &layer.path, &mut false)
                    .is_ok_and(|v| v.is_empty())
                    .then(|| match url {
                        Some(url) => format!("{url}; spec.path `{}` is not here", layer.path),
                        None => format!("not defined here; spec.path `{}` is not here", layer.path),
                    }),
            };
        }
        // An OCI artifact defined here with its own URL is another artifact than the root's
        // (the same repository pushed twice under two names is rare; a tenant's or an app's
        // manifests pushed by their own pipeline are common), whatever its path.
        if layer.source.kind == "OCIRepository"
            && let Some(url) = &url
        {
            let root_url = match root_layer.created_by_instance {
                Some(instance) => instance_sync(model, instance).and_then(|s| s.url),
                None => source_url(model, &root_layer.source),
            };
            if root_url
                .as_ref()
                .is_none_or(|r| normalize_url(r) != normalize_url(url))
            {
                return Some(match root_url {
                    Some(r) => format!("{url}, not {r}"),
                    None => format!("{url}, an artifact of its own"),
                });
            }
        }
        let (cluster, source, path) = (layer.cluster, layer.source.clone(), layer.path.clone());
        self.source_root(cluster, &source, &path)
            .is_none()
            .then(|| {
                format!(
                    "{}spec.path `{path}` resolves nowhere here",
                    url.map(|u| format!("{u}; ")).unwrap_or_default()
                )
            })
    }

    /// What the parent's build does to this layer's Flux Kustomization that the model does not
    /// follow: the unmodelled entries of the parent's variants that render it.
    fn parent_unmodelled(&self, id: LayerId) -> Vec<String> {
        let layer = &self.layers[id];
        let (Some(parent), Some(object)) = (layer.applied_by, layer.object) else {
            return Vec::new();
        };
        let mut out: Vec<String> = self.layers[parent]
            .variants
            .iter()
            .filter(|v| v.inventory.iter().any(|r| r.object == object))
            .flat_map(|v| v.unmodelled.iter().cloned())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Resolve a layer's variants and render them; returns the Flux Kustomizations it applies,
    /// with the `spec.targetNamespace` a transformer on the way writes into them.
    fn resolve(&mut self, id: LayerId) -> Vec<(ObjectIdx, ObjectKey, Option<String>)> {
        let layer = self.layers[id].clone();
        let model = self.renderer.model;
        let file = layer
            .object
            .or(layer.created_by_instance)
            .map(|o| model.object(o).file);
        let file_path = file
            .map(|f| model.repo.file(f).path.clone())
            .unwrap_or_default();
        let line = layer
            .object
            .or(layer.created_by_instance)
            .map_or(1, |o| model.object(o).line);
        if let Some(why) = self.external_source(id) {
            // Another repository's layout is not this one's: resolving the path here would
            // claim objects it does not apply, or report a path missing that exists there.
            self.diagnostics.push(
                Diagnostic::new(
                    Severity::Note,
                    &file_path,
                    format!(
                        "{}: its source {} is another repository ({why}): not analysed, and nothing it applies is modelled",
                        layer.id, layer.source
                    ),
                )
                .at(line, 1),
            );
            return Vec::new();
        }
        let Some(root) = self.source_root(layer.cluster, &layer.source, &layer.path) else {
            self.diagnostics.push(
                Diagnostic::new(
                    Severity::Error,
                    &file_path,
                    format!(
                        "{}: spec.path `{}` does not exist in this repository",
                        layer.id, layer.path
                    ),
                )
                .at(line, 1),
            );
            return Vec::new();
        };
        let mut clamped = false;
        let matches = match expand_path(model, &root, &layer.path, &mut clamped) {
            Ok(m) => m,
            Err(e) => {
                self.diagnostics.push(
                    Diagnostic::new(Severity::Error, &file_path, format!("{}: {e}", layer.id))
                        .at(line, 1),
                );
                return Vec::new();
            }
        };
        if clamped {
            self.diagnostics.push(
                Diagnostic::new(
                    Severity::Warning,
                    &file_path,
                    format!(
                        "{}: spec.path `{}` climbs above the source root; Flux clamps it there (securejoin), so the layer applies from {}",
                        layer.id,
                        layer.path,
                        display_dir(&root)
                    ),
                )
                .at(line, 1),
            );
        }
        if matches.is_empty() {
            // A parent's transformers or replacements the model does not follow may rewrite the
            // path (a `__PROVIDER__` placeholder, say): then it is a note.
            let unsure = self.parent_unmodelled(id);
            let (severity, why) = if unsure.is_empty() {
                (Severity::Error, String::new())
            } else {
                (
                    Severity::Note,
                    format!(
                        ", as written; not fully modelled: {} may rewrite it",
                        unsure.join(", ")
                    ),
                )
            };
            self.diagnostics.push(
                Diagnostic::new(
                    severity,
                    &file_path,
                    format!(
                        "{}: spec.path `{}` does not exist (source root {}){why}",
                        layer.id,
                        layer.path,
                        display_dir(&root)
                    ),
                )
                .at(line, 1),
            );
        }
        let mut applied = Vec::new();
        let mut variants = Vec::new();
        for (dir, bindings) in matches {
            let (generated, result) = render_layer_dir(&mut self.renderer, &layer, &dir);
            let (mut inventory, mut error) = match result {
                Ok(objs) => (objs, None),
                Err(e) => (Vec::new(), Some(e)),
            };
            if error.is_none() {
                error = self.flux_overlays(&layer, &mut inventory).err();
            }
            if let Some(e) = &error {
                // Two objects with one identity is a claim about names, which transformers the
                // model does not follow may change: a note there, not an error.
                let unsure = if super::kustomize::is_identity_conflict(e) {
                    let mut why = unmodelled_below(model, &dir);
                    why.extend(self.parent_unmodelled(id));
                    why
                } else {
                    Vec::new()
                };
                let diagnostic = if unsure.is_empty() {
                    Diagnostic::new(
                        Severity::Error,
                        &file_path,
                        format!("{} ({}): {e}", layer.id, display_dir(&dir)),
                    )
                } else {
                    Diagnostic::new(
                        Severity::Note,
                        &file_path,
                        format!(
                            "{} ({}): {e}, as far as fluxmend can tell; not fully modelled: {} \
                             may rename or re-namespace, so Flux may build it",
                            layer.id,
                            display_dir(&dir),
                            unsure.join(", ")
                        ),
                    )
                };
                self.diagnostics.push(diagnostic.at(line, 1));
            }
            for r in &inventory {
                if is_flux_kustomization(model, r.object) {
                    applied.push((
                        r.object,
                        r.key.clone(),
                        transformed_target_namespace(model, r),
                    ));
                }
                // flux-operator applies what a ResourceSet generates: its Flux Kustomizations
                // are layers below the one that applies the ResourceSet.
                for generated in generated_by_resource_set(model, r.object) {
                    if is_flux_kustomization(model, generated) {
                        applied.push((generated, model.object(generated).key.clone(), None));
                    }
                }
            }
            let unmodelled = unmodelled_fields(model, &dir, &inventory);
            if !unmodelled.is_empty() {
                self.diagnostics.push(
                    Diagnostic::new(
                        Severity::Note,
                        &file_path,
                        format!(
                            "{} ({}): not fully modelled: {} may rename, re-namespace or add objects; what fluxmend shows of this layer may differ from what Flux applies",
                            layer.id,
                            display_dir(&dir),
                            unmodelled.join(", ")
                        ),
                    )
                    .at(line, 1),
                );
            }
            // Kept for the whole run, and there is one per layer of a fleet: no growth slack.
            inventory.shrink_to_fit();
            variants.push(Variant {
                dir,
                bindings,
                generated,
                inventory,
                error,
                unmodelled,
            });
        }
        variants.shrink_to_fit();
        let layer = &mut self.layers[id];
        layer.source_root = Some(root);
        layer.variants = variants;
        applied
    }

    /// What Flux layers on top of the build (its `spec.components` are part of it):
    /// `targetNamespace`, `namePrefix`, `nameSuffix`.
    fn flux_overlays(&mut self, layer: &Layer, inventory: &mut [Rendered]) -> Result<(), String> {
        let model = self.renderer.model;
        let Some(obj) = layer.object.map(|o| model.object(o)) else {
            return Ok(());
        };
        let yaml = &model.repo.file(obj.file).yaml;
        let scalar = |k: &str| {
            yaml.lookup(obj.root, &["spec", k])
                .and_then(|n| yaml.scalar(n))
                .map(str::to_string)
        };
        // Its spec.patches join the kustomization's patches (fluxcd/pkg kustomize_generator.go):
        // those that rename act before targetNamespace and the name prefixes.
        let patches = model.layer_patches(layer);
        super::kustomize::apply_renames(model, &patches.iter().collect::<Vec<_>>(), inventory);
        // As the layer holds it: a transformer of its parent's build may have set it.
        let target_namespace = layer.target_namespace.clone();
        let prefix = scalar("namePrefix").unwrap_or_default();
        let suffix = scalar("nameSuffix").unwrap_or_default();
        let t = Transform {
            namespace: target_namespace.map(Name::from),
            prefix: &prefix,
            suffix: &suffix,
        };
        inventory.iter_mut().for_each(|o| t.apply(o));
        check_unique(inventory, model)
    }

    fn add(&mut self, layer: Layer) -> LayerId {
        if let Some(obj) = layer.object {
            self.reached.insert(obj);
        }
        let key = (layer.cluster, layer.id.clone(), layer.object);
        if let Some(&existing) = self.known.get(&key) {
            return existing;
        }
        let id = self.layers.len();
        self.known.insert(key, id);
        self.layers.push(layer);
        id
    }

    /// The root of a tree that applies its own root: the namespace-less bootstrap `flux-system`
    /// Kustomization (the name `flux bootstrap` and flux-operator give the root) shipped inside
    /// the tree it syncs, taking its namespace from the layer that applies it
    /// (`targetNamespace`). With no FluxInstance sync and no namespaced bootstrap Kustomization
    /// to start from, every layer of such a tree lies below another one's path, yet once a
    /// bootstrap script applied the root, Flux keeps the whole cycle reconciled: it is live.
    /// Found by walking from the candidate in a throwaway builder: the cycle closes when the walk
    /// reaches the candidate's own object, and gives the root the identity Flux gives it.
    fn bootstrap_cycle(&self, flux_ks: &[ObjectIdx]) -> Option<Layer> {
        let model = self.renderer.model;
        flux_ks.iter().find_map(|&idx| {
            let key = &model.object(idx).key;
            if key.name != "flux-system" || key.namespace.is_some() || self.reached.contains(&idx) {
                return None;
            }
            let mut trial = Builder::new(model, self.options, flux_ks);
            // Tried in the namespace bootstrap gives it: its sourceRef (namespace-less too) then
            // names the bootstrap source; the walk says which namespace the cycle gives it.
            let bootstrap = ObjectKey {
                namespace: Some(Name::from("flux-system")),
                ..key.clone()
            };
            let start = trial.add(layer_from_object(model, idx, &bootstrap, 0, None));
            trial.reached.clear();
            trial.root_ids.insert((0, trial.layers[start].id.clone()));
            trial.walk(vec![start]);
            let mut root = match trial.layers.iter().skip(1).find(|l| l.object == Some(idx)) {
                Some(closing) => closing.clone(),
                None if trial.reached.contains(&idx) => trial.layers[start].clone(),
                None => return None,
            };
            root.applied_by = None;
            root.live = true;
            root.variants = Vec::new();
            root.source_root = None;
            Some(root)
        })
    }

    /// Breadth-first from the roots: each layer's inventory names the layers it applies.
    fn walk(&mut self, roots: Vec<LayerId>) {
        let mut queue: std::collections::VecDeque<LayerId> = roots.into();
        let mut done = HashSet::default();
        while let Some(id) = queue.pop_front() {
            if !done.insert(id) {
                continue;
            }
            let live = self.layers[id].live;
            let cluster = self.layers[id].cluster;
            for (obj, key, target_namespace) in self.resolve(id) {
                let model = self.renderer.model;
                let mut child = layer_from_object(model, obj, &key, cluster, Some(id));
                if target_namespace.is_some() {
                    child.target_namespace = target_namespace;
                }
                // A Flux Kustomization applied to another cluster is reconciled there.
                child.remote |= self.layers[id].remote;
                // The bootstrap Kustomization applies itself; a FluxInstance's root is the same layer.
                if self.root_ids.contains(&(cluster, child.id.clone())) {
                    self.reached.insert(obj);
                    continue;
                }
                child.live = live;
                let before = self.layers.len();
                let child_id = self.add(child);
                if child_id == before {
                    queue.push_back(child_id);
                }
            }
        }
    }
}

/// Whether a `--root` value (`name` or `namespace/name`) names this Flux Kustomization.
fn root_matches(root: &str, key: &ObjectKey) -> bool {
    match root.split_once('/') {
        Some((ns, name)) => key.name == name && key.namespace.as_deref().unwrap_or("default") == ns,
        None => key.name == root,
    }
}

/// The `roots` values that name no Flux Kustomization of the model.
pub(super) fn unmatched_roots<'a>(model: &Model, roots: &'a [String]) -> Vec<&'a str> {
    roots
        .iter()
        .filter(|r| {
            !(0..model.objects.len())
                .any(|i| is_flux_kustomization(model, i) && root_matches(r, &model.object(i).key))
        })
        .map(String::as_str)
        .collect()
}

pub(super) fn build_layers(model: &mut Model, options: &ModelOptions) {
    let flux_ks: Vec<ObjectIdx> = (0..model.objects.len())
        .filter(|&i| is_flux_kustomization(model, i))
        .collect();
    let syncs: Vec<Sync> = (0..model.objects.len())
        .filter_map(|i| instance_sync(model, i))
        .collect();
    let (layers, diagnostics) = {
        let mut b = Builder::new(model, options, &flux_ks);
        let mut roots = Vec::new();
        let named = |idx: ObjectIdx| {
            let key = &model.object(idx).key;
            options.roots.iter().any(|r| root_matches(r, key))
        };
        if !options.roots.is_empty() {
            for &idx in flux_ks.iter().filter(|&&i| named(i)) {
                let mut layer = layer_from_object(
                    model,
                    idx,
                    &model.object(idx).key.clone(),
                    roots.len(),
                    None,
                );
                layer.live = true;
                roots.push(b.add(layer));
            }
            if roots.is_empty() {
                b.diagnostics.push(Diagnostic::new(
                    Severity::Error,
                    "",
                    format!(
                        "no Flux Kustomization matches --root {}",
                        options.roots.join(", ")
                    ),
                ));
            }
        } else {
            // Each FluxInstance's sync is the root of one cluster; walk those first, so that a
            // bootstrap Kustomization they apply (a migration to the operator) is the same root.
            for sync in &syncs {
                let root = b.add(layer_from_sync(sync, roots.len()));
                roots.push(root);
                b.root_ids
                    .insert((b.layers[root].cluster, b.layers[root].id.clone()));
                b.walk(vec![root]);
            }
            for &idx in &flux_ks {
                let key = model.object(idx).key.clone();
                let bootstrap =
                    key.name == "flux-system" && key.namespace.as_deref() == Some("flux-system");
                if !bootstrap || b.reached.contains(&idx) {
                    continue;
                }
                let mut layer = layer_from_object(model, idx, &key, roots.len(), None);
                layer.live = true;
                let root = b.add(layer);
                roots.push(root);
                b.root_ids
                    .insert((b.layers[root].cluster, b.layers[root].id.clone()));
                b.walk(vec![root]);
            }
            if roots.is_empty()
                && let Some(mut layer) = b.bootstrap_cycle(&flux_ks)
            {
                layer.cluster = roots.len();
                let root = b.add(layer);
                roots.push(root);
                b.root_ids
                    .insert((b.layers[root].cluster, b.layers[root].id.clone()));
                b.walk(vec![root]);
            }
        }
        let no_roots = roots.is_empty() && options.roots.is_empty();
        if !options.roots.is_empty() {
            b.root_ids = roots
                .iter()
                .map(|&r| (b.layers[r].cluster, b.layers[r].id.clone()))
                .collect();
            b.walk(roots.clone());
        }
        // Flux Kustomizations no root reaches: with no root at all, every one is a root (one
        // shared cluster); otherwise each is unreferenced (modelled in a cluster of its own, not
        // live).
        // With no root, a Flux Kustomization whose file lies below another one's `spec.path`
        // is no root either: that directory is synced, and when its build does not take this
        // file (a commented-out entry, a folder left behind), Flux never applies it. Those are
        // walked last, so that the layers that do apply them come first.
        let synced_dirs: Vec<(ObjectIdx, String)> = if no_roots {
            flux_ks
                .iter()
                .filter_map(|&idx| {
                    let key = model.object(idx).key.clone();
                    let dir = normalize(&layer_from_object(model, idx, &key, 0, None).path)?;
                    (!dir.is_empty()).then_some((idx, dir))
                })
                .collect()
        } else {
            Vec::new()
        };
        let below_a_synced_dir = |idx: ObjectIdx| {
            let path = &model.repo.file(model.object(idx).file).path;
            synced_dirs
                .iter()
                .filter(|(other, _)| *other != idx)
                .find(|(_, dir)| {
                    path.strip_prefix(dir.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
                })
        };
        let (tops, below): (Vec<ObjectIdx>, Vec<ObjectIdx>) = flux_ks
            .iter()
            .partition(|&&idx| below_a_synced_dir(idx).is_none());
        let mut next_cluster = roots.len();
        for idx in tops.into_iter().chain(below) {
            if b.reached.contains(&idx) {
                continue;
            }
            let obj = model.object(idx);
            let cluster = if no_roots { 0 } else { next_cluster };
            next_cluster += 1;
            let mut layer = layer_from_object(model, idx, &obj.key.clone(), cluster, None);
            let synced_dir = below_a_synced_dir(idx);
            layer.live = no_roots && synced_dir.is_none();
            if !layer.live {
                // Below a live layer whose build fails, what Flux applies is unknown (it applies
                // nothing new until the build is repaired): a consequence of the error reported
                // at that layer, not a second defect.
                let failed_syncer = synced_dir.and_then(|(other, _)| {
                    b.layers.iter().find(|l| {
                        l.live
                            && l.object == Some(*other)
                            && l.variants.iter().any(|v| v.error.is_some())
                    })
                });
                let (severity, why) = match (synced_dir, failed_syncer) {
                    (Some((_, dir)), Some(syncer)) if no_roots => (
                        Severity::Note,
                        format!(
                            "Flux Kustomization {} is below {dir}, which {} syncs, but that layer's build fails (reported there), so whether Flux applies it is unknown: not treated as live",
                            layer.id, syncer.id
                        ),
                    ),
                    (Some((_, dir)), None) if no_roots => (
                        Severity::Warning,
                        format!(
                            "Flux Kustomization {} is below {dir}, which a layer syncs, but no layer's build takes it (unreferenced): not treated as live",
                            layer.id
                        ),
                    ),
                    _ => (
                        Severity::Warning,
                        format!(
                            "Flux Kustomization {} is not applied by any root (unreferenced): not treated as live",
                            layer.id
                        ),
                    ),
                };
                b.diagnostics.push(
                    Diagnostic::new(severity, &model.repo.file(obj.file).path, why).at(obj.line, 1),
                );
            }
            let id = b.add(layer);
            b.walk(vec![id]);
        }
        (b.layers, b.diagnostics)
    };
    model.layers = layers;
    model.diagnostics.extend(diagnostics);
    resolve_dependencies(model);
}

fn resolve_dependencies(model: &mut Model) {
    let mut by_id: HashMap<(usize, &LayerRef), Vec<LayerId>> = HashMap::default();
    for (i, l) in model.layers.iter().enumerate() {
        by_id.entry((l.cluster, &l.id)).or_default().push(i);
    }
    // Clusters with a layer whose names the model may have wrong, or that applies a ResourceSet
    // the loader could not expand: a target missing there may be one of those layers' objects
    // under its real name, or a layer the ResourceSet generates.
    let uncertain: HashSet<usize> = model
        .layers
        .iter()
        .filter(|l| {
            l.variants.iter().any(|v| !v.unmodelled.is_empty())
                || l.inventory()
                    .any(|(_, r)| resource_set_file(model, r.object) == Some(None))
        })
        .map(|l| l.cluster)
        .collect();
    let mut resolved = Vec::new();
    let mut diagnostics = Vec::new();
    for layer in &model.layers {
        let mut ids = Vec::new();
        for (dep, item) in &layer.depends_on {
            match by_id.get(&(layer.cluster, dep)) {
                Some(found) => ids.extend(closest(model, layer, found)),
                None if layer.live && uncertain.contains(&layer.cluster) => {
                    let obj = layer.object.map(|o| model.object(o));
                    let file = obj.map(|o| model.repo.file(o.file));
                    let (line, col) =
                        file.map_or((1, 1), |f| f.yaml.line_col(f.yaml.node(*item).span.start));
                    diagnostics.push(
                        Diagnostic::new(
                            Severity::Note,
                            file.map_or("", |f| f.path.as_str()),
                            format!("{} dependsOn {dep}, which no modelled Flux Kustomization defines; a layer of this cluster is not fully modelled (or applies a ResourceSet fluxmend could not expand) and may define it", layer.id),
                        )
                        .at(line, col),
                    );
                }
                None if layer.live => {
                    let obj = layer.object.map(|o| model.object(o));
                    let file = obj.map(|o| model.repo.file(o.file));
                    let (line, col) =
                        file.map_or((1, 1), |f| f.yaml.line_col(f.yaml.node(*item).span.start));
                    diagnostics.push(
                        Diagnostic::new(
                            Severity::Error,
                            file.map_or("", |f| f.path.as_str()),
                            format!("{} dependsOn {dep}, which no Flux Kustomization defines: it will stay DependencyNotReady", layer.id),
                        )
                        .at(line, col),
                    );
                }
                None => {}
            }
        }
        ids.sort_unstable();
        ids.dedup();
        resolved.push(ids);
    }
    for (layer, ids) in model.layers.iter_mut().zip(resolved) {
        layer.depends_on_ids = ids;
    }
    // Cycles: the layers of a strongly connected component wait on each other forever.
    for mut cycle in dependency_cycles(&model.layers) {
        cycle.sort_unstable();
        let names: Vec<String> = cycle
            .iter()
            .map(|&i| model.layers[i].id.to_string())
            .collect();
        let layer = &model.layers[cycle[0]];
        let obj = layer.object.map(|o| model.object(o));
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                obj.map_or("", |o| model.repo.file(o.file).path.as_str()),
                format!(
                    "dependsOn cycle: {} wait on each other and never become ready",
                    names.join(", ")
                ),
            )
            .at(obj.map_or(1, |o| o.line), 1),
        );
    }
    model.diagnostics.extend(diagnostics);
}

/// Of the layers a `dependsOn` entry names, the one Flux would wait for. In a cluster each name
/// is one object, but without a known root every layer shares one model cluster, so two real
/// clusters' `infra-configs` meet: keep those the referrer's own parent applies, else those
/// defined nearest to the referrer (the longest common directory of their files).
fn closest(model: &Model, layer: &Layer, found: &[LayerId]) -> Vec<LayerId> {
    if found.len() < 2 {
        return found.to_vec();
    }
    if layer.applied_by.is_some() {
        let siblings: Vec<LayerId> = found
            .iter()
            .copied()
            .filter(|&f| model.layers[f].applied_by == layer.applied_by)
            .collect();
        if !siblings.is_empty() {
            return siblings;
        }
    }
    let dir_of = |l: &Layer| {
        l.object
            .map(|o| crate::load::parent_of(&model.repo.file(model.object(o).file).path))
    };
    let Some(own) = dir_of(layer) else {
        return found.to_vec();
    };
    let shared = |f: LayerId| {
        dir_of(&model.layers[f]).map_or(0, |d| {
            let (mut a, mut b) = (own.split('/'), d.split('/'));
            let mut n = 0;
            while let (Some(x), Some(y)) = (a.next(), b.next()) {
                if x != y {
                    break;
                }
                n += 1;
            }
            n
        })
    };
    let best = found.iter().map(|&f| shared(f)).max().unwrap_or(0);
    found
        .iter()
        .copied()
        .filter(|&f| shared(f) == best)
        .collect()
}

/// The `dependsOn` cycles: strongly connected components with more than one layer, or a layer
/// that depends on itself (Tarjan's algorithm, iterative: linear in layers and edges).
fn dependency_cycles(layers: &[Layer]) -> Vec<Vec<LayerId>> {
    const UNSEEN: usize = usize::MAX;
    let n = layers.len();
    let (mut index, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut cycles, mut next) = (Vec::new(), Vec::new(), 0);
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        // (node, position in its edge list)
        let mut work = vec![(start, 0)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == UNSEEN {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = layers[v].depends_on_ids.get(*edge) {
                *edge += 1;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || layers[v].depends_on_ids.contains(&v) {
                    cycles.push(component);
                }
            }
        }
    }
    cycles
}
