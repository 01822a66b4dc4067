//! kustomize `transformers:` entries and `replacements:`, as far as they change identities.
//!
//! The builtin plugins (`apiVersion: builtin`) are read the way kustomize v5.5 runs them
//! (api/internal/builtins): a NamespaceTransformer sets `metadata.namespace` of every
//! namespaceable object (only unset ones with `unsetOnly`) and renames the objects its
//! `metadata/name` fieldSpecs select; a PrefixSuffixTransformer renames the objects its
//! `metadata/name` fieldSpecs select, except CRDs, APIServices and Namespaces, and fails without
//! fieldSpecs; labels, annotations, images and replicas leave identities alone; a patch or a
//! replacement changes what the model sees only when it writes a name, namespace, kind or
//! apiVersion, or into a Flux object (whose spec the model reads as written). What the model
//! cannot follow (plugins, other builtin kinds, such patches and replacements) is an *unknown
//! effect*: a note, and the layer is marked not fully modelled.

use crate::load::Repo;
use crate::parse::{Value, YamlFile};

use crate::model::{Name, join};

use super::builtin::{KUSTOMIZATION_FILE_NAMES, is_namespaced, keeps_its_name};
use super::rendered::Rendered;

/// Which objects a fieldSpec selects: each field that is set must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GvkSelector {
    group: Option<String>,
    version: Option<String>,
    kind: Option<String>,
}

impl GvkSelector {
    fn from_field_spec(spec: &Value) -> Self {
        let field = |k: &str| {
            spec.str_at(&[k])
                .filter(|s| !s.is_empty())
                .map(String::from)
        };
        GvkSelector {
            group: field("group"),
            version: field("version"),
            kind: field("kind"),
        }
    }

    fn selects(&self, rendered: &Rendered) -> bool {
        let key = &rendered.key;
        let version = key
            .api_version
            .rsplit_once('/')
            .map_or(key.api_version.as_str(), |(_, v)| v);
        self.group.as_deref().is_none_or(|g| g == key.group())
            && self.version.as_deref().is_none_or(|v| v == version)
            && self.kind.as_deref().is_none_or(|k| k == key.kind.as_str())
    }
}

/// A builtin transformer's effect on identities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdentityTransformer {
    /// builtin NamespaceTransformer.
    Namespace {
        namespace: String,
        unset_only: bool,
        /// `metadata/name` fieldSpecs: the objects they select are renamed to the namespace.
        renames: Vec<GvkSelector>,
        /// A `spec/targetNamespace` fieldSpec selecting Flux Kustomizations, with its `create`:
        /// the layers it renders then apply into the namespace.
        target_namespace: Option<bool>,
    },
    /// builtin PrefixSuffixTransformer, on the objects its `metadata/name` fieldSpecs select.
    PrefixSuffix {
        prefix: String,
        suffix: String,
        selects: Vec<GvkSelector>,
    },
}

impl IdentityTransformer {
    /// Apply to one rendered object, as kustomize does at this point of the build; `hash` as
    /// for [`super::Transform::apply`].
    pub fn apply(&self, rendered: &mut Rendered, hash: Option<&Name>) {
        match self {
            IdentityTransformer::Namespace {
                namespace,
                unset_only,
                renames,
                ..
            } => {
                let key = &rendered.key;
                let unset = key.namespace.as_deref().is_none_or(str::is_empty);
                if is_namespaced(&key.api_version, &key.kind) && (unset || !unset_only) {
                    rendered.key.namespace = Some(Name::from(namespace.as_str()));
                }
                if renames.iter().any(|s| s.selects(rendered)) {
                    rendered.key.name = Name::from(namespace.as_str());
                }
            }
            IdentityTransformer::PrefixSuffix {
                prefix,
                suffix,
                selects,
            } => {
                if keeps_its_name(&rendered.key) || !selects.iter().any(|s| s.selects(rendered)) {
                    return;
                }
                let key = &mut rendered.key;
                let hash = hash.map_or("", |h| h.as_str());
                let base = key.name.strip_suffix(hash).unwrap_or(&key.name);
                key.name = format!("{prefix}{base}{suffix}{hash}").into();
            }
        }
    }
}

impl IdentityTransformer {
    /// The `spec.targetNamespace` this transformer writes into a Flux Kustomization that has
    /// `current` (a NamespaceTransformer whose fieldSpecs name that field; with `create: false`
    /// only where one is set).
    pub fn target_namespace(&self, current: Option<&str>) -> Option<String> {
        match self {
            IdentityTransformer::Namespace {
                namespace,
                target_namespace: Some(create),
                ..
            } if *create || current.is_some() => Some(namespace.clone()),
            _ => None,
        }
    }
}

/// Whether a fieldSpec writes `spec/targetNamespace` of Flux Kustomizations, and its `create`.
fn target_namespace_spec(config: &Value) -> Option<bool> {
    config
        .get("fieldSpecs")
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .find(|spec| {
            spec.str_at(&["path"]) == Some("spec/targetNamespace")
                && spec.str_at(&["kind"]).is_none_or(|k| k == "Kustomization")
                && spec
                    .str_at(&["group"])
                    .is_none_or(|g| g.is_empty() || g == "kustomize.toolkit.fluxcd.io")
        })
        .map(|spec| spec.get("create").and_then(Value::as_bool).unwrap_or(false))
}

/// What a kustomization's `transformers:` and `replacements:` do to identities.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transformers {
    /// The builtin transformers that change identities, in the order kustomize runs them.
    pub identity: Vec<IdentityTransformer>,
    /// Why kustomize fails this build, when a transformer's configuration is invalid.
    pub error: Option<String>,
    /// Entries whose effect is not modelled, as `` `field` entry `text` in FILE (why) ``.
    pub unknown: Vec<String>,
}

impl Transformers {
    /// Nothing to do and nothing to say: what most kustomizations have.
    pub(super) fn is_empty(&self) -> bool {
        self.identity.is_empty() && self.error.is_none() && self.unknown.is_empty()
    }
}

/// The part of a builtin transformer that matters for identities.
enum Effect {
    None,
    Identity(IdentityTransformer),
    Unknown(String),
    Error(String),
}

/// Read `transformers:` and `replacements:` of the kustomization `root` in `file` (directory
/// `dir`).
pub(super) fn read(repo: &Repo, dir: &str, file: &str, yaml: &YamlFile, root: u32) -> Transformers {
    let mut out = Transformers::default();
    let value = |node| yaml.value(node).unwrap_or(Value::Null);
    if let Some(list) = yaml.lookup(root, &["transformers"]) {
        for &item in yaml.items(list) {
            let Some(text) = yaml.scalar(item) else {
                continue;
            };
            let unknown =
                |why: &str| format!("`transformers` entry `{}` in {file} ({why})", short(text));
            let configs = match transformer_configs(repo, dir, text) {
                Ok(configs) => configs,
                Err(why) => {
                    out.unknown.push(unknown(&why));
                    continue;
                }
            };
            for config in configs {
                match effect(repo, dir, &config) {
                    Effect::None => {}
                    Effect::Identity(t) => out.identity.push(t),
                    Effect::Unknown(why) => out.unknown.push(unknown(&why)),
                    Effect::Error(e) => {
                        out.error
                            .get_or_insert(format!("transformer `{}`: {e}", short(text)));
                    }
                }
            }
        }
    }
    if let Some(list) = yaml.lookup(root, &["replacements"]) {
        for &item in yaml.items(list) {
            if let Some(why) = replacement_renames(repo, dir, &value(item)) {
                let note = format!("`replacements` in {file} ({why})");
                if !out.unknown.contains(&note) {
                    out.unknown.push(note);
                }
            }
        }
    }
    out
}

/// The first line of an entry, for messages.
fn short(text: &str) -> &str {
    text.lines().next().unwrap_or("").trim()
}

/// The configuration documents a `transformers:` entry names: an inline document, or a file.
fn transformer_configs(repo: &Repo, dir: &str, text: &str) -> Result<Vec<Value>, String> {
    if text.contains('\n') {
        let (inline, error) = YamlFile::parse(text);
        if let Some(e) = error {
            return Err(format!("inline configuration does not parse: {e}"));
        }
        return Ok(documents(&inline));
    }
    let path = join(dir, text).ok_or("leaves the repository root")?;
    if repo.is_dir(&path) {
        return directory_configs(repo, &path, 0);
    }
    let id = repo
        .file_id(&path)
        .ok_or_else(|| format!("{path} is not a file fluxmend read"))?;
    let source = repo.file(id);
    if source.error.is_some() {
        return Err(format!("{path} does not parse"));
    }
    Ok(documents(&source.yaml))
}

/// The fields a kustomization that builds transformer configurations may set without changing
/// what the configurations do (their own labels and names do not matter).
const CONFIG_DIR_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "resources",
    "namespace",
    "namePrefix",
    "nameSuffix",
    "commonLabels",
    "commonAnnotations",
    "labels",
];

/// How deep directories of transformer configurations are followed.
const MAX_CONFIG_DEPTH: usize = 16;

/// The configurations a `transformers:` entry naming a directory stands for: kustomize builds
/// that directory's kustomization and takes each resource as a configuration. Its `namespace:`
/// sets each configuration's `metadata.namespace` (a NamespaceTransformer's namespace, so it
/// wins over the one written in the file); nested directories are built the same way.
fn directory_configs(repo: &Repo, dir: &str, depth: usize) -> Result<Vec<Value>, String> {
    if depth > MAX_CONFIG_DEPTH {
        return Err(format!("{dir}: directories nested too deep"));
    }
    let file = KUSTOMIZATION_FILE_NAMES
        .iter()
        .find_map(|name| join(dir, name).and_then(|p| repo.file_id(&p)))
        .ok_or_else(|| format!("{dir} has no kustomization file"))?;
    let source = repo.file(file);
    if source.error.is_some() {
        return Err(format!("{} does not parse", source.path));
    }
    let kustomization = documents(&source.yaml)
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let Value::Map(entries) = &kustomization else {
        return Err(format!("{} is not a kustomization", source.path));
    };
    if let Some(key) = entries
        .iter()
        .filter_map(|(k, _)| k.as_str())
        .find(|k| !CONFIG_DIR_FIELDS.contains(k))
    {
        return Err(format!(
            "{} sets `{key}`, whose effect on the configurations is not modelled",
            source.path
        ));
    }
    let mut configs = Vec::new();
    for entry in kustomization
        .get("resources")
        .map(Value::seq)
        .unwrap_or_default()
    {
        let text = entry
            .as_str()
            .ok_or("a resources entry that is not a path")?;
        let path = join(dir, text).ok_or("leaves the repository root")?;
        if repo.is_dir(&path) {
            configs.extend(directory_configs(repo, &path, depth + 1)?);
            continue;
        }
        let id = repo
            .file_id(&path)
            .ok_or_else(|| format!("{path} is not a file fluxmend read"))?;
        if repo.file(id).error.is_some() {
            return Err(format!("{path} does not parse"));
        }
        configs.extend(documents(&repo.file(id).yaml));
    }
    if let Some(namespace) = kustomization
        .str_at(&["namespace"])
        .filter(|n| !n.is_empty())
    {
        for config in &mut configs {
            set_namespace(config, namespace);
        }
    }
    Ok(configs)
}

/// `metadata.namespace` of a configuration document set to `namespace`.
fn set_namespace(config: &mut Value, namespace: &str) {
    let Value::Map(entries) = config else { return };
    let key = |k: &str| Value::Str(k.to_string(), false);
    let at = match entries
        .iter()
        .position(|(k, _)| k.as_str() == Some("metadata"))
    {
        Some(i) => i,
        None => {
            entries.push((key("metadata"), Value::Map(Vec::new())));
            entries.len() - 1
        }
    };
    if let Value::Map(metadata) = &mut entries[at].1 {
        metadata.retain(|(k, _)| k.as_str() != Some("namespace"));
        metadata.push((key("namespace"), key(namespace)));
    }
}

fn documents(yaml: &YamlFile) -> Vec<Value> {
    yaml.docs()
        .iter()
        .filter_map(|d| yaml.value(d.root).ok())
        .filter(|v| *v != Value::Null)
        .collect()
}

/// The `metadata/name` fieldSpecs of a configuration.
fn name_field_specs(config: &Value) -> Vec<GvkSelector> {
    config
        .get("fieldSpecs")
        .map(Value::seq)
        .unwrap_or_default()
        .iter()
        .filter(|spec| spec.str_at(&["path"]) == Some("metadata/name"))
        .map(GvkSelector::from_field_spec)
        .collect()
}

fn effect(repo: &Repo, dir: &str, config: &Value) -> Effect {
    let kind = config.str_at(&["kind"]).unwrap_or("");
    if config.str_at(&["apiVersion"]) != Some("builtin") {
        return Effect::Unknown(format!(
            "{} is not a builtin transformer: a plugin, which Flux does not run",
            if kind.is_empty() { "no kind" } else { kind }
        ));
    }
    let text = |key: &str| config.str_at(&[key]).unwrap_or("").to_string();
    match kind {
        "NamespaceTransformer" => {
            let namespace = config.str_at(&["metadata", "namespace"]).unwrap_or("");
            if namespace.is_empty() {
                return Effect::None;
            }
            Effect::Identity(IdentityTransformer::Namespace {
                namespace: namespace.to_string(),
                unset_only: config.get("unsetOnly").and_then(Value::as_bool) == Some(true),
                renames: name_field_specs(config),
                target_namespace: target_namespace_spec(config),
            })
        }
        "PrefixSuffixTransformer" => {
            if config.get("fieldSpecs").is_none_or(|f| *f == Value::Null) {
                return Effect::Error("fieldSpecs is not expected to be nil".into());
            }
            Effect::Identity(IdentityTransformer::PrefixSuffix {
                prefix: text("prefix"),
                suffix: text("suffix"),
                selects: name_field_specs(config),
            })
        }
        "LabelTransformer"
        | "AnnotationsTransformer"
        | "ImageTagTransformer"
        | "ReplicaCountTransformer" => Effect::None,
        "PatchTransformer" => match patch_renames(repo, dir, config) {
            Some(why) => Effect::Unknown(why),
            None => Effect::None,
        },
        "ReplacementTransformer" => config
            .get("replacements")
            .map(Value::seq)
            .unwrap_or_default()
            .iter()
            .find_map(|r| replacement_renames(repo, dir, r))
            .map_or(Effect::None, Effect::Unknown),
        other => Effect::Unknown(format!("builtin {other} is not modelled")),
    }
}

/// Kinds whose spec the model reads as written (layers, their sources, Helm releases): a patch
/// or replacement that may write into one is an unknown effect, whatever field it writes.
const MODELLED_SPEC_KINDS: &[&str] = &[
    "Kustomization",
    "FluxInstance",
    "ResourceSet",
    "GitRepository",
    "OCIRepository",
    "Bucket",
    "ExternalArtifact",
    "HelmRelease",
    "HelmRepository",
    "HelmChart",
];

/// Whether a patch or replacement target (`kind` unset: every kind) may select a kind whose
/// spec the model reads.
fn may_select_modelled_spec(target: Option<&Value>) -> bool {
    match target.and_then(|t| t.str_at(&["kind"])) {
        Some(kind) if !kind.is_empty() => MODELLED_SPEC_KINDS.contains(&kind),
        _ => true,
    }
}

/// JSON pointers (patches) whose change is a change of identity.
const IDENTITY_POINTERS: &[&str] = &[
    "",
    "/",
    "/metadata",
    "/metadata/name",
    "/metadata/namespace",
    "/kind",
    "/apiVersion",
];

/// Why a PatchTransformer may change identities, or `None` when it cannot: a JSON 6902 patch
/// writing an identity field, or a strategic-merge patch allowed to change name or kind (without
/// that option kustomize keeps the target's identity).
fn patch_renames(repo: &Repo, dir: &str, config: &Value) -> Option<String> {
    let options = ["allowNameChange", "allowKindChange"];
    if options
        .iter()
        .any(|o| config.path(&["options", o]).and_then(Value::as_bool) == Some(true))
    {
        return Some("a patch allowed to change names or kinds".into());
    }
    let text = match (config.str_at(&["patch"]), config.str_at(&["path"])) {
        (Some(inline), _) => inline.to_string(),
        (None, Some(path)) => {
            let file = join(dir, path).and_then(|p| repo.file_id(&p));
            match file {
                Some(id) => repo.file(id).yaml.text().to_string(),
                None => return Some(format!("patch file {path} is not a file fluxmend read")),
            }
        }
        (None, None) => return None,
    };
    let (patch, error) = YamlFile::parse(&text);
    if error.is_some() {
        return Some("its patch does not parse".into());
    }
    let patched: Vec<Value> = documents(&patch)
        .into_iter()
        .filter(|d| d.get("kind").is_some())
        .collect();
    let may_write_flux = match config.get("target") {
        Some(target) => may_select_modelled_spec(Some(target)),
        // A strategic-merge patch without a target patches the object it names.
        None => patched.is_empty() || patched.iter().any(|d| may_select_modelled_spec(Some(d))),
    };
    if may_write_flux {
        return Some("a patch that may change a Flux object the model reads as written".into());
    }
    let writes_identity = documents(&patch).iter().any(|doc| {
        doc.seq().iter().any(|op| {
            op.str_at(&["op"]).is_some_and(|o| o != "test")
                && op
                    .str_at(&["path"])
                    .is_some_and(|p| IDENTITY_POINTERS.contains(&p))
        })
    });
    writes_identity.then(|| "a patch that writes a name, namespace, kind or apiVersion".into())
}

/// Field paths (replacements) whose change is a change of identity.
const IDENTITY_FIELD_PATHS: &[&str] = &[
    "metadata",
    "metadata.name",
    "metadata.namespace",
    "kind",
    "apiVersion",
];

/// Why one replacement (inline, or `path:` to a file of replacements) may change identities.
fn replacement_renames(repo: &Repo, dir: &str, replacement: &Value) -> Option<String> {
    if let Some(path) = replacement.str_at(&["path"]) {
        let Some(id) = join(dir, path).and_then(|p| repo.file_id(&p)) else {
            return Some(format!(
                "replacements file {path} is not a file fluxmend read"
            ));
        };
        return documents(&repo.file(id).yaml)
            .iter()
            .flat_map(|doc| doc.seq().iter())
            .find_map(|r| replacement_renames(repo, dir, r));
    }
    let targets = replacement
        .get("targets")
        .map(Value::seq)
        .unwrap_or_default();
    if targets
        .iter()
        .any(|t| may_select_modelled_spec(t.get("select")))
    {
        return Some(
            "a replacement that may change a Flux object the model reads as written".into(),
        );
    }
    let renames = targets
        .iter()
        .flat_map(|t| t.get("fieldPaths").map(Value::seq).unwrap_or_default())
        .filter_map(Value::as_str)
        .any(|p| IDENTITY_FIELD_PATHS.contains(&p));
    renames.then(|| "a replacement into a name, namespace, kind or apiVersion".into())
}
