//! kustomize directories: what each kustomization file lists and how it changes identities, and
//! a renderer that computes the objects a directory builds to — the same set `kustomize build`
//! renders (checked against `kubectl kustomize` in the tests).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::rc::Rc;

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::FileId;
use crate::parse::NodeId;

use super::transformers::Transformers;
use super::{Model, Name, ObjectIdx, ObjectKey, join};

/// File names kustomize recognises as a directory's kustomization, in its order of precedence.
pub const KUSTOMIZATION_FILE_NAMES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// The kinds kustomize v5.5's built-in schema (Kubernetes v1.21.2, kyaml `openapi.go`) knows as
/// cluster-scoped, by exact group and versions: its `namespace:` leaves only these alone. Anything
/// else — custom resources, and kinds or versions newer than that schema — gets a namespace.
const CLUSTER_SCOPED: &[(&str, &[&str], &[&str])] = &[
    (
        "admissionregistration.k8s.io",
        &["v1", "v1beta1"],
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
    ),
    (
        "apiextensions.k8s.io",
        &["v1", "v1beta1"],
        &["CustomResourceDefinition"],
    ),
    (
        "apiregistration.k8s.io",
        &["v1", "v1beta1"],
        &["APIService"],
    ),
    (
        "certificates.k8s.io",
        &["v1", "v1beta1"],
        &["CertificateSigningRequest"],
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        &["v1beta1"],
        &["FlowSchema", "PriorityLevelConfiguration"],
    ),
    ("networking.k8s.io", &["v1", "v1beta1"], &["IngressClass"]),
    ("node.k8s.io", &["v1", "v1beta1"], &["RuntimeClass"]),
    ("policy", &["v1beta1"], &["PodSecurityPolicy"]),
    (
        "rbac.authorization.k8s.io",
        &["v1", "v1beta1"],
        &["ClusterRole", "ClusterRoleBinding"],
    ),
    ("scheduling.k8s.io", &["v1", "v1beta1"], &["PriorityClass"]),
    (
        "storage.k8s.io",
        &["v1", "v1beta1"],
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
    ),
    (
        "",
        &["v1"],
        &[
            "ComponentStatus",
            "Namespace",
            "Node",
            "NodeProxyOptions",
            "PersistentVolume",
        ],
    ),
];

/// Kinds whose names `namePrefix`/`nameSuffix` leave alone (measured with kustomize v5.5).
pub(super) fn keeps_its_name(key: &ObjectKey) -> bool {
    matches!(key.kind.as_str(), "Namespace" | "CustomResourceDefinition")
        || (key.kind == "APIService" && key.group() == "apiregistration.k8s.io")
}

/// Whether kustomize's `namespace:` transformer sets a namespace on this apiVersion and kind.
pub fn is_namespaced(api_version: &str, kind: &str) -> bool {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    !CLUSTER_SCOPED.iter().any(|(g, versions, kinds)| {
        *g == group && versions.contains(&version) && kinds.contains(&kind)
    })
}

/// What a `resources`/`components` entry points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefTarget {
    File(String),
    Dir(String),
    /// A URL or remote base: reported, never fetched.
    Remote(String),
    /// Points at nothing that exists.
    Missing(String),
    /// `..` or an absolute path leaving the repository root.
    OutsideRoot,
}

/// One entry of a kustomization's `resources`, `bases` or `components` list.
#[derive(Clone, Debug)]
pub struct ResourceRef {
    /// The entry's text as written.
    pub text: String,
    /// The sequence item node (its span and dash are what an edit removes).
    pub item: NodeId,
    pub target: RefTarget,
}

/// A directory with a kustomization file.
#[derive(Clone, Debug)]
pub struct KustomizeDir {
    pub dir: String,
    pub file: FileId,
    /// Root node of the kustomization document.
    pub root: NodeId,
    /// `kind: Component`.
    pub component: bool,
    pub resources: Vec<ResourceRef>,
    pub components: Vec<ResourceRef>,
    pub namespace: Option<String>,
    pub name_prefix: String,
    pub name_suffix: String,
    /// Objects of its `configMapGenerator`/`secretGenerator`, with their hash suffix.
    pub generated: Vec<(ObjectIdx, Option<String>)>,
    /// What its `transformers:` and `replacements:` do to identities.
    pub transformers: Transformers,
}

/// The fields of a kustomization file, besides `resources` and `components`, that name files
/// of the build: patches and configurations of transformers, generators and validators.
pub(super) const NAMED_FILE_FIELDS: &[&str] = &[
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "replacements",
    "transformers",
    "generators",
    "validators",
    "configurations",
];

/// The fields that name patch files: their documents edit other objects and define none.
const PATCH_FIELDS: &[&str] = &["patches", "patchesStrategicMerge", "patchesJson6902"];

impl KustomizeDir {
    /// The repository paths of the files this kustomization names under `fields` (a plain
    /// entry, or an entry's `path`), resolved against its directory `dir`.
    pub(super) fn named_files<'m>(
        &self,
        model: &'m Model,
        dir: &'m str,
        fields: &'m [&'m str],
    ) -> impl Iterator<Item = String> + 'm {
        let yaml = &model.repo.file(self.file).yaml;
        let root = self.root;
        fields
            .iter()
            .filter_map(move |field| yaml.lookup(root, &[field]))
            .flat_map(move |list| yaml.items(list).iter().copied())
            .filter_map(move |item| {
                yaml.scalar(item)
                    .or_else(|| yaml.lookup(item, &["path"]).and_then(|n| yaml.scalar(n)))
                    .and_then(|text| join(dir, text))
            })
    }
}

/// Files that some kustomization names as a patch and none as a resource or component. A Flux
/// Kustomization or FluxInstance written in such a file (a cluster overlay patching a layer by
/// name) is an edit of the real object, not a layer of its own.
pub(super) fn patch_only_files(model: &Model) -> HashSet<FileId> {
    let mut patches = HashSet::default();
    let mut resources = HashSet::default();
    for (dir, k) in &model.kustomize_dirs {
        patches.extend(k.named_files(model, dir, PATCH_FIELDS));
        for r in k.resources.iter().chain(&k.components) {
            if let RefTarget::File(path) = &r.target {
                resources.insert(path.clone());
            }
        }
    }
    patches
        .difference(&resources)
        .filter_map(|path| model.repo.file_id(path))
        .collect()
}

/// A patch kustomize applies on the way an object is rendered.
#[derive(Clone, Debug)]
pub struct PatchOnTheWay {
    /// The file the patch is written in (a patch file, or the kustomization file for an
    /// inline patch).
    pub file: String,
    /// Its `target`, when the entry has one.
    pub target: Option<crate::parse::Value>,
    /// The patch's text (strategic merge or JSON6902).
    pub body: String,
    /// Where the entry is written: the kustomization file and the entry's line.
    pub entry: (String, usize),
    /// The kustomization field it is listed under (`patches`, `patchesStrategicMerge`,
    /// `patchesJson6902`): kustomize runs the last after `namespace:` and the name prefixes.
    pub field: &'static str,
    /// `options.allowNameChange`: a strategic-merge patch may then rename its target.
    pub allow_name_change: bool,
}

impl PatchOnTheWay {
    /// Whether the patch may select `r` (whose content is `value`, written as `written`): see
    /// [`PatchOnTheWay::selection`]; no selector (a body that does not parse) may.
    pub fn may_select(
        &self,
        value: &crate::parse::Value,
        r: &Rendered,
        written: &ObjectKey,
    ) -> bool {
        self.selection(value, r, written) != Some(super::patch::Selection::No)
    }

    /// Whether the patch selects `r` (whose content is `value`, written as `written`): by its
    /// current or its written identity, as kustomize matches either, and by the labels and
    /// annotations of its content. `None` without a selector (a body that does not parse).
    pub fn selection(
        &self,
        value: &crate::parse::Value,
        r: &Rendered,
        written: &ObjectKey,
    ) -> Option<super::patch::Selection> {
        use super::patch::{Labels, Selection};
        let selector = self.selector()?;
        let metadata = |field: &str| -> Labels {
            match value.path(&["metadata", field]) {
                Some(crate::parse::Value::Map(entries)) => entries
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((k.as_str()?.to_string(), v.as_str().map(str::to_string)))
                    })
                    .collect(),
                _ => Labels::new(),
            }
        };
        let (labels, annotations) = (metadata("labels"), metadata("annotations"));
        let each = [&r.key, written].map(|key| selector.selects(key, &labels, &annotations));
        Some(if each.contains(&Selection::Yes) {
            Selection::Yes
        } else if each.contains(&Selection::Unknown) {
            Selection::Unknown
        } else {
            Selection::No
        })
    }

    /// The identity the patch gives an object it selects, if it renames: a JSON6902 `add` or
    /// `replace` of `/metadata/name` or `/metadata/namespace` with a string, or a strategic-merge
    /// patch allowed to change names that writes another `metadata.name`.
    pub fn renames(&self) -> Option<(Option<String>, Option<String>)> {
        use super::patch::PatchBody;
        match PatchBody::parse(&self.body).ok()? {
            PatchBody::Json6902(ops) => {
                let (mut name, mut namespace) = (None, None);
                for op in ops.iter().filter(|o| o.op == "add" || o.op == "replace") {
                    let text = op
                        .value
                        .as_ref()
                        .and_then(|v| v.as_str())
                        .map(str::to_string);
                    match op.path.as_str() {
                        "/metadata/name" => name = text.or(name),
                        "/metadata/namespace" => namespace = text.or(namespace),
                        _ => {}
                    }
                }
                (name.is_some() || namespace.is_some()).then_some((name, namespace))
            }
            PatchBody::StrategicMerge(v) if self.allow_name_change && self.target.is_some() => {
                let name = v.str_at(&["metadata", "name"])?.to_string();
                Some((Some(name), None))
            }
            PatchBody::StrategicMerge(_) => None,
        }
    }

    /// The selector of the objects it patches: its `target`, or the object a strategic-merge
    /// patch names itself; `None` when the body does not parse.
    pub fn selector(&self) -> Option<super::patch::Selector> {
        match &self.target {
            Some(t) => Some(super::patch::Selector::from_value(t)),
            None => super::patch::PatchBody::parse(&self.body)
                .ok()?
                .implicit_target(),
        }
    }
}

/// kustomize fields whose effect on what a build holds the model does not follow.
const UNMODELLED: &[&str] = &["transformers", "replacements", "helmCharts", "generators"];

impl Model<'_> {
    /// Whether the build of `dir` is fully known: no remote entry, no `transformers`,
    /// `replacements`, `helmCharts` or `generators`, no missing entry, anywhere below it. A
    /// rule that claims an object is *not* in a build must know all of it.
    pub fn fully_known(&self, dir: &str) -> bool {
        self.fully_known_below(dir, &mut HashSet::default())
    }

    fn fully_known_below(&self, dir: &str, seen: &mut HashSet<String>) -> bool {
        if !seen.insert(dir.to_string()) {
            return true;
        }
        let Some(k) = self.kustomize_dirs.get(dir) else {
            // A plain directory (Flux generates its kustomization) holds what is in it.
            return true;
        };
        let yaml = &self.repo.file(k.file).yaml;
        if UNMODELLED
            .iter()
            .any(|f| yaml.lookup(k.root, &[f]).is_some())
        {
            return false;
        }
        k.resources
            .iter()
            .chain(&k.components)
            .all(|r| match &r.target {
                RefTarget::File(_) => true,
                RefTarget::Dir(d) => self.fully_known_below(d, seen),
                RefTarget::Remote(_) | RefTarget::Missing(_) | RefTarget::OutsideRoot => false,
            })
    }

    /// Every patch kustomize applies on the way `r` is rendered (the `patches`,
    /// `patchesStrategicMerge` and `patchesJson6902` entries of each kustomization file in its
    /// chain, outermost first): what can change the object after the document the model reads,
    /// so a rule that trusts a field there can tell when it cannot.
    pub fn patches_on_the_way(&self, r: &Rendered) -> Vec<PatchOnTheWay> {
        r.chain
            .iter()
            .filter_map(|&file| {
                let dir = crate::load::parent_of(&self.repo.file(file).path);
                self.kustomize_dirs.get(dir).filter(|k| k.file == file)
            })
            .flat_map(|k| self.kustomization_patches(k))
            .collect()
    }

    /// The `patches`, `patchesStrategicMerge` and `patchesJson6902` entries of one
    /// kustomization, in the order it lists them.
    pub fn kustomization_patches(&self, k: &KustomizeDir) -> Vec<PatchOnTheWay> {
        let mut out = Vec::new();
        let source = self.repo.file(k.file);
        let dir = k.dir.as_str();
        let yaml = &source.yaml;
        for field in PATCH_FIELDS {
            let Some(list) = yaml.lookup(k.root, &[field]) else {
                continue;
            };
            for &item in yaml.items(list) {
                let target = yaml
                    .lookup(item, &["target"])
                    .and_then(|t| yaml.value(t).ok());
                let inline = yaml.lookup(item, &["patch"]).and_then(|n| yaml.scalar(n));
                let path = yaml
                    .lookup(item, &["path"])
                    .and_then(|n| yaml.scalar(n))
                    .or_else(|| yaml.scalar(item).filter(|_| *field != "patches"));
                let (file, body) = match (inline, path.and_then(|p| join(dir, p))) {
                    (Some(text), _) => (source.path.clone(), text.to_string()),
                    (None, Some(path)) => match self.repo.file_id(&path) {
                        Some(id) => (path, self.repo.file(id).yaml.text.to_string()),
                        None => continue,
                    },
                    // `patchesStrategicMerge` may hold the patch itself as a string.
                    (None, None) => match yaml.scalar(item) {
                        Some(text) => (source.path.clone(), text.to_string()),
                        None => continue,
                    },
                };
                let entry = (
                    source.path.clone(),
                    yaml.line_of(yaml.node(item).span.start),
                );
                let allow_name_change = yaml
                    .lookup(item, &["options", "allowNameChange"])
                    .and_then(|n| yaml.value(n).ok())
                    .and_then(|v| v.as_bool())
                    == Some(true);
                out.push(PatchOnTheWay {
                    file,
                    target,
                    body,
                    entry,
                    field,
                    allow_name_change,
                });
            }
        }
        out
    }

    /// The object `r` as Flux applies it, as far as the model knows: its document with the
    /// patches on its way applied (innermost kustomization first, each in its order), then the
    /// `spec.patches` of `layer`. A patch whose target may select it is applied; one that does
    /// not parse is left out.
    pub fn content(
        &self,
        layer: Option<&super::Layer>,
        r: &Rendered,
    ) -> Result<crate::parse::Value, crate::parse::AliasBudgetExceeded> {
        let obj = self.object(r.object);
        let mut value = self.repo.file(obj.file).yaml.value(obj.root)?;
        let inner_first = r.chain.iter().rev().filter_map(|&file| {
            let dir = crate::load::parent_of(&self.repo.file(file).path);
            self.kustomize_dirs.get(dir).filter(|k| k.file == file)
        });
        let patches = inner_first
            .flat_map(|k| self.kustomization_patches(k))
            .chain(layer.map(|l| self.layer_patches(l)).unwrap_or_default());
        for p in patches {
            let Ok(body) = super::patch::PatchBody::parse(&p.body) else {
                continue;
            };
            if p.may_select(&value, r, &obj.key) {
                body.apply(&mut value);
            }
        }
        Ok(value)
    }

    /// The `spec.patches` of a Flux Kustomization: Flux applies them to everything its build
    /// renders, after the kustomize patches.
    pub fn layer_patches(&self, layer: &super::Layer) -> Vec<PatchOnTheWay> {
        let Some(obj) = layer.object.map(|o| self.object(o)) else {
            return Vec::new();
        };
        let source = self.repo.file(obj.file);
        layer
            .spec
            .patches
            .iter()
            .map(|p| PatchOnTheWay {
                file: source.path.clone(),
                target: p.target.clone(),
                body: p.body.clone(),
                entry: (
                    source.path.clone(),
                    source.yaml.line_of(source.yaml.node(p.item).span.start),
                ),
                field: "patches",
                allow_name_change: p.allow_name_change,
            })
            .collect()
    }
}

/// One object a directory renders: which object, its identity after the transformers, and the
/// chain of kustomization files (outermost first) that brought it in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendered {
    pub object: ObjectIdx,
    pub key: ObjectKey,
    pub chain: Vec<FileId>,
    /// A generated ConfigMap/Secret's `-<hash>`: it stays last in the name whatever prefix or
    /// suffix an outer kustomization adds.
    pub hash_suffix: Option<String>,
}

pub(super) fn parse_dirs(
    model: &Model,
    diagnostics: &mut Vec<Diagnostic>,
) -> HashMap<String, KustomizeDir> {
    // Directories are independent: read their kustomization files in parallel, keep the order.
    let parsed: Vec<(Option<KustomizeDir>, Vec<Diagnostic>)> = model
        .repo
        .dirs
        .par_iter()
        .map(|dir| {
            let mut diagnostics = Vec::new();
            (parse_dir(model, dir, &mut diagnostics), diagnostics)
        })
        .collect();
    let mut dirs = HashMap::default();
    for (parsed, diags) in parsed {
        diagnostics.extend(diags);
        if let Some(k) = parsed {
            dirs.insert(k.dir.clone(), k);
        }
    }
    dirs
}

/// The kustomization file of `dir`, if it has a usable one.
fn parse_dir(model: &Model, dir: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<KustomizeDir> {
    let repo = model.repo;
    let file = KUSTOMIZATION_FILE_NAMES
        .iter()
        .find_map(|name| repo.file_id(&join(dir, name).unwrap_or_default()))?;
    let source = repo.file(file);
    let yaml = &source.yaml;
    let Some(doc) = yaml.docs.first() else {
        if source.error.is_none() {
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                &source.path,
                "kustomization file is empty".into(),
            ));
        }
        return None;
    };
    let root = doc.root;
    if !matches!(
        yaml.resolve(root).map(|r| yaml.node(r).kind),
        Some(crate::parse::NodeKind::Mapping { .. })
    ) {
        // A list or a scalar: kustomize cannot unmarshal it into a Kustomization.
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                &source.path,
                format!(
                    "this kustomization file is not a mapping; kustomize and Flux will fail to build {}",
                    if dir.is_empty() { "the repository root" } else { dir }
                ),
            )
            .at(yaml.line_of(yaml.node(root).span.start), 1),
        );
        return None;
    }
    let scalar = |key: &str| {
        yaml.lookup(root, &[key])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let kind = scalar("kind");
    let api = scalar("apiVersion");
    let component = kind.as_deref() == Some("Component");
    let is_kustomize = match (&api, &kind) {
        (Some(a), _) if !a.starts_with("kustomize.config.k8s.io/") => false,
        (_, Some(k)) => k == "Kustomization" || k == "Component",
        // No apiVersion and no kind: kustomize reads the file as a Kustomization.
        (_, None) => true,
    };
    if !is_kustomize {
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                &source.path,
                format!(
                    "this kustomization file is not a kustomize Kustomization ({} {}); kustomize and Flux will fail to build {}",
                    api.as_deref().unwrap_or("no apiVersion"),
                    kind.as_deref().unwrap_or("no kind"),
                    if dir.is_empty() { "the repository root" } else { dir }
                ),
            )
            .at(yaml.line_of(yaml.node(root).span.start), 1),
        );
        return None;
    }
    let refs = |field: &str, diagnostics: &mut Vec<Diagnostic>| -> Vec<ResourceRef> {
        let Some(list) = yaml.lookup(root, &[field]) else {
            return Vec::new();
        };
        yaml.items(list)
            .iter()
            .filter_map(|&item| {
                let text = yaml.scalar(item)?.to_string();
                let target = resolve_ref(model, dir, &text);
                let (line, col) = yaml.line_col(yaml.node(item).span.start);
                match &target {
                    RefTarget::Missing(path) => diagnostics.push(
                        Diagnostic::new(Severity::Error, &source.path, format!("{field} entry `{text}` does not exist ({path})")).at(line, col),
                    ),
                    RefTarget::OutsideRoot => diagnostics.push(
                        Diagnostic::new(Severity::Error, &source.path, format!("{field} entry `{text}` leaves the repository root")).at(line, col),
                    ),
                    RefTarget::Remote(_) => diagnostics.push(
                        Diagnostic::new(Severity::Note, &source.path, format!("{field} entry `{text}` is remote; not fetched, its objects are not modelled")).at(line, col),
                    ),
                    _ => {}
                }
                Some(ResourceRef { text, item, target })
            })
            .collect()
    };
    let mut resources = refs("resources", diagnostics);
    resources.extend(refs("bases", diagnostics));
    let components = refs("components", diagnostics);
    Some(KustomizeDir {
        dir: dir.to_string(),
        file,
        root,
        component,
        resources,
        components,
        namespace: scalar("namespace").filter(|n| !n.is_empty()),
        name_prefix: scalar("namePrefix").unwrap_or_default(),
        name_suffix: scalar("nameSuffix").unwrap_or_default(),
        generated: Vec::new(),
        transformers: super::transformers::read(repo, dir, &source.path, yaml, root),
    })
}

/// What a `resources`/`components` entry `text` of the directory `dir` points at.
pub(super) fn resolve_ref(model: &Model, dir: &str, text: &str) -> RefTarget {
    let is_remote = text.contains("://")
        || text.starts_with("git@")
        || text.starts_with("github.com/")
        || text.starts_with("gitlab.com/")
        || text.starts_with("bitbucket.org/");
    if is_remote {
        return RefTarget::Remote(text.to_string());
    }
    let Some(path) = join(dir, text) else {
        return RefTarget::OutsideRoot;
    };
    if model.repo.is_dir(&path) {
        RefTarget::Dir(path)
    } else if model.repo.is_file(&path) {
        RefTarget::File(path)
    } else {
        RefTarget::Missing(path)
    }
}

/// Identity transformers applied on top of a set of rendered objects.
#[derive(Clone, Debug, Default)]
pub struct Transform<'a> {
    pub namespace: Option<Name>,
    pub prefix: &'a str,
    pub suffix: &'a str,
}

impl Transform<'_> {
    pub fn apply(&self, rendered: &mut Rendered) {
        let key = &mut rendered.key;
        if let Some(ns) = &self.namespace {
            if key.is_namespace() {
                key.name = ns.clone();
            } else if is_namespaced(&key.api_version, &key.kind) {
                key.namespace = Some(ns.clone());
            }
        }
        if !keeps_its_name(key) {
            let hash = rendered.hash_suffix.as_deref().unwrap_or("");
            let base = key.name.strip_suffix(hash).unwrap_or(&key.name);
            key.name = format!("{}{base}{}{hash}", self.prefix, self.suffix).into();
        }
    }
}

/// Why a directory could not be rendered.
pub type RenderResult = Rc<Result<Vec<Rendered>, String>>;

/// Renders kustomize directories, memoised from the second request on: fleets include the same
/// bases many times, but most directories are rendered once, and keeping every render held a
/// third of the model's memory until the layers were built.
pub struct Renderer<'m, 'r> {
    pub model: &'m Model<'r>,
    memo: HashMap<String, RenderResult>,
    /// Directories rendered once and not kept.
    requested: HashSet<String>,
    in_progress: HashSet<String>,
}

impl<'m, 'r> Renderer<'m, 'r> {
    pub fn new(model: &'m Model<'r>) -> Self {
        Renderer {
            model,
            memo: HashMap::default(),
            requested: HashSet::default(),
            in_progress: HashSet::default(),
        }
    }

    /// Objects of a plain YAML file, as a resource.
    pub fn file_objects(&self, path: &str, chain: &[FileId]) -> Vec<Rendered> {
        let Some(file) = self.model.repo.file_id(path) else {
            return Vec::new();
        };
        self.model
            .objects_in(file)
            .map(|object| Rendered {
                object,
                key: self.model.objects[object].key.clone(),
                chain: chain.to_vec(),
                hash_suffix: None,
            })
            .collect()
    }

    /// Render the kustomization in `dir`.
    pub fn render_dir(&mut self, dir: &str) -> RenderResult {
        if let Some(done) = self.memo.get(dir) {
            return done.clone();
        }
        if !self.in_progress.insert(dir.to_string()) {
            return Rc::new(Err(format!("kustomization cycle through {dir}")));
        }
        let result = Rc::new(self.render_uncached(dir));
        self.in_progress.remove(dir);
        if !self.requested.insert(dir.to_string()) {
            self.memo.insert(dir.to_string(), result.clone());
        }
        result
    }

    /// [`Renderer::render_dir`] as an owned list: moved out when nothing else holds it.
    pub fn render_dir_owned(&mut self, dir: &str) -> Result<Vec<Rendered>, String> {
        Rc::try_unwrap(self.render_dir(dir)).unwrap_or_else(|shared| shared.as_ref().clone())
    }

    /// Render the kustomization in `dir` with `components` appended to its own, as Flux does
    /// with a Flux Kustomization's `spec.components` (fluxcd/pkg `kustomize_generator.go`): the
    /// kustomization's own namespace, prefixes, suffixes and patches then apply to the
    /// components' objects too. Not memoised.
    pub fn render_dir_with(
        &mut self,
        dir: &str,
        components: &[ResourceRef],
    ) -> Result<Vec<Rendered>, String> {
        if components.is_empty() {
            return self.render_dir_owned(dir);
        }
        if !self.in_progress.insert(dir.to_string()) {
            return Err(format!("kustomization cycle through {dir}"));
        }
        let result = self.render_uncached_with(dir, components);
        self.in_progress.remove(dir);
        result
    }

    fn render_uncached(&mut self, dir: &str) -> Result<Vec<Rendered>, String> {
        self.render_uncached_with(dir, &[])
    }

    fn render_uncached_with(
        &mut self,
        dir: &str,
        extra_components: &[ResourceRef],
    ) -> Result<Vec<Rendered>, String> {
        let Some(k) = self.model.kustomize_dirs.get(dir) else {
            return Err(format!(
                "{} has no usable kustomization file",
                display_dir(dir)
            ));
        };
        let chain = [k.file];
        let mut out = Vec::new();
        for r in &k.resources {
            out.extend(self.render_ref(r, &chain)?);
        }
        for (object, hash_suffix) in &k.generated {
            let mut key = self.model.objects[*object].key.clone();
            if let Some(hash) = hash_suffix {
                key.name = format!("{}{hash}", key.name).into();
            }
            out.push(Rendered {
                object: *object,
                key,
                chain: chain.to_vec(),
                hash_suffix: hash_suffix.clone(),
            });
        }
        for c in k.components.iter().chain(extra_components) {
            self.add_component(c, Some(k.file), &mut out)?;
        }
        // kustomize's builtin order: the patches, `namespace:`, the name prefix and suffix, then
        // `patchesJson6902`, then `transformers:`.
        let patches = self.model.kustomization_patches(k);
        let (late, early): (Vec<_>, Vec<_>) =
            patches.iter().partition(|p| p.field == "patchesJson6902");
        apply_renames(self.model, &early, &mut out);
        let transform = Transform {
            namespace: k.namespace.as_deref().map(Name::from),
            prefix: &k.name_prefix,
            suffix: &k.name_suffix,
        };
        out.iter_mut().for_each(|o| transform.apply(o));
        apply_renames(self.model, &late, &mut out);
        apply_transformers(&k.transformers, &mut out)?;
        check_unique(&out, self.model)?;
        Ok(out)
    }

    /// Apply the component `c` to what a build accumulated so far (`out`): its resources join,
    /// then its transformers run over everything, as kustomize does. `parent` is the file of
    /// the kustomization that lists it (none for the one Flux generates).
    pub fn add_component(
        &mut self,
        c: &ResourceRef,
        parent: Option<FileId>,
        out: &mut Vec<Rendered>,
    ) -> Result<(), String> {
        let RefTarget::Dir(cdir) = &c.target else {
            if let RefTarget::Remote(_) = c.target {
                return Ok(());
            }
            return Err(format!("component `{}` is not a directory", c.text));
        };
        let Some(comp) = self.model.kustomize_dirs.get(cdir) else {
            return Err(format!("component {cdir} has no kustomization file"));
        };
        let transform = Transform {
            namespace: comp.namespace.as_deref().map(Name::from),
            prefix: &comp.name_prefix,
            suffix: &comp.name_suffix,
        };
        let comp_file = comp.file;
        let chain: Vec<FileId> = parent.into_iter().chain([comp_file]).collect();
        for r in &comp.resources {
            out.extend(self.render_ref(r, &chain)?);
        }
        out.iter_mut().for_each(|o| transform.apply(o));
        apply_transformers(&comp.transformers, out)
    }

    /// Render one resources entry, prefixing `chain` to the chain of what it brings in.
    pub fn render_ref(
        &mut self,
        r: &ResourceRef,
        chain: &[FileId],
    ) -> Result<Vec<Rendered>, String> {
        match &r.target {
            RefTarget::File(path) => Ok(self.file_objects(path, chain)),
            RefTarget::Dir(path) => {
                let mut objs = self.render_dir_owned(path)?;
                for o in &mut objs {
                    o.chain.splice(0..0, chain.iter().copied());
                }
                Ok(objs)
            }
            RefTarget::Remote(_) => Ok(Vec::new()),
            RefTarget::Missing(path) => {
                Err(format!("resource `{}` does not exist ({path})", r.text))
            }
            RefTarget::OutsideRoot => {
                Err(format!("resource `{}` leaves the repository root", r.text))
            }
        }
    }
}

/// Apply what `patches` do to identities: a patch that renames (see [`PatchOnTheWay::renames`])
/// gives each object it selects its new name or namespace. A generated object keeps its name
/// (its hash is computed from it).
pub fn apply_renames(model: &Model, patches: &[&PatchOnTheWay], out: &mut [Rendered]) {
    for p in patches {
        let Some((name, namespace)) = p.renames() else {
            continue;
        };
        for r in out.iter_mut().filter(|r| r.hash_suffix.is_none()) {
            let obj = model.object(r.object);
            let Ok(value) = model.repo.file(obj.file).yaml.value(obj.root) else {
                continue;
            };
            if p.selection(&value, r, &obj.key) != Some(super::patch::Selection::Yes) {
                continue;
            }
            if let Some(name) = &name {
                r.key.name = Name::from(name.as_str());
            }
            if let Some(ns) = &namespace {
                r.key.namespace = Some(Name::from(ns.as_str()));
            }
        }
    }
}

/// Run a kustomization's `transformers:` after its own fields, in order, as kustomize does.
fn apply_transformers(transformers: &Transformers, out: &mut [Rendered]) -> Result<(), String> {
    if let Some(e) = &transformers.error {
        return Err(e.clone());
    }
    for t in &transformers.identity {
        out.iter_mut().for_each(|o| t.apply(o));
    }
    Ok(())
}

/// The words of [`check_unique`]'s error.
const RENDERED_TWICE: &str = "is rendered twice";

/// Whether a build error is [`check_unique`]'s: a claim about identities, which transformers
/// the model does not follow may change.
pub fn is_identity_conflict(error: &str) -> bool {
    error.contains(RENDERED_TWICE)
}

/// kustomize refuses two resources with one identity.
pub fn check_unique(objs: &[Rendered], model: &Model) -> Result<(), String> {
    let mut seen = HashSet::default();
    for o in objs {
        // No namespace and `default` are one id to kustomize.
        let ns = o.key.namespace.as_deref().filter(|n| *n != "default");
        if !seen.insert((&o.key.kind, o.key.group(), ns, &o.key.name)) {
            let obj = model.object(o.object);
            return Err(format!(
                "{} {RENDERED_TWICE} (again from {}:{})",
                o.key,
                model.repo.file(obj.file).path,
                obj.line
            ));
        }
    }
    Ok(())
}

/// A directory for messages: `.` for the root.
pub fn display_dir(dir: &str) -> &str {
    if dir.is_empty() { "." } else { dir }
}
