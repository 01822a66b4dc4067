//! The objects a FluxInstance generates, as flux-operator builds them: its namespace, RBAC and
//! network policies, each component's CRDs, ServiceAccount, Services and Deployment, and, for
//! `spec.sync`, the root source and root Kustomization; with the transformer labels the operator
//! adds and the instance's `spec.kustomize.patches` applied. The patches select objects as they
//! are *before* the operator's namespace, label and annotation transformers (kustomize runs a
//! kustomization's `patches` before its `namespace:` and its `transformers:`; flux-operator
//! `internal/builder/templates.go`): a component's manifest has no namespace and none of the
//! `managed-by`/`instance`/`version` labels yet. Rules read this to judge patches
//! (does one select anything, do two overlap, does one set the root source's trust settings)
//! without a cluster. What each component contributes is data: `rules/flux-distribution.yaml`.

use crate::load::FileId;
use crate::model::patch::{Labels, PatchBody, Selection, Selector};
use crate::model::{Model, Name, ObjectIdx, ObjectKey, SourceRef};
use crate::parse::{NodeId, Value, YamlFile};

use super::distribution::{Distribution, Template, distribution};
use super::flux::instance_spec;

/// The kinds of the objects `spec.sync` generates.
const SYNC_KINDS: &[&str] = &["GitRepository", "OCIRepository", "Bucket", "Kustomization"];

/// An object the operator generates for an instance, with the patches that reach it applied.
#[derive(Clone, Debug)]
pub struct GeneratedObject {
    /// Its identity on the cluster (the instance's namespace set).
    pub key: ObjectKey,
    /// What the instance's patches select it by: its identity, labels and annotations as the
    /// manifest writes them, before the operator's namespace and label transformers.
    pub at_patch_time: Written,
    /// The component it belongs to (`source-controller`), `None` for the instance's own
    /// namespace, RBAC, policies and sync objects.
    pub component: Option<String>,
    pub labels: Labels,
    pub annotations: Labels,
    /// What the model knows of its content (identity, labels, and for the sync objects their
    /// spec), after the patches that select it.
    pub content: Value,
    /// The instance patches that select it, by index into [`InstanceObjects::patches`], in
    /// the order they apply.
    pub patched_by: Vec<usize>,
}

/// An object's identity, labels and annotations as its manifest writes them.
#[derive(Clone, Debug)]
pub struct Written {
    pub key: ObjectKey,
    pub labels: Labels,
    pub annotations: Labels,
}

/// One entry of the instance's `spec.kustomize.patches`, with its provenance.
#[derive(Clone, Debug)]
pub struct InstancePatch {
    /// The file and the patch's item node (the `-` entry) in it.
    pub file: FileId,
    pub item: NodeId,
    /// 1-based line of the entry.
    pub line: usize,
    /// The `target` selector and its node, when the patch has one.
    pub target: Option<(Selector, NodeId)>,
    /// The patch's body, or why it could not be read.
    pub body: Result<PatchBody, String>,
    /// The generated objects it selects (by index into [`InstanceObjects::objects`]).
    pub selected: Vec<usize>,
    /// Objects the model cannot tell whether it selects (a regular expression, a label whose
    /// value is only known on the cluster).
    pub undecided: usize,
    /// Objects the target would select on the cluster (namespace, labels and annotations of
    /// the operator's transformers) but does not at patch time, when they are not set yet.
    pub selected_too_late: Vec<usize>,
}

impl InstancePatch {
    /// The selector in effect: `target`, or the object a strategic-merge patch names.
    pub fn selector(&self) -> Option<Selector> {
        match &self.target {
            Some((s, _)) => Some(s.clone()),
            None => self.body.as_ref().ok().and_then(PatchBody::implicit_target),
        }
    }
}

/// Everything a FluxInstance generates.
#[derive(Clone, Debug)]
pub struct InstanceObjects {
    pub instance: ObjectIdx,
    pub namespace: String,
    /// False when the set of objects depends on something not known statically (a `${…}`
    /// placeholder or an unknown name in `spec.components`): rules then judge no selection.
    pub complete: bool,
    pub objects: Vec<GeneratedObject>,
    pub patches: Vec<InstancePatch>,
    /// Index of the root source (`spec.sync.kind`, named `spec.sync.name` or the namespace).
    pub root_source: Option<usize>,
    /// Index of the root Kustomization.
    pub root_kustomization: Option<usize>,
    /// The root source and Kustomization were not read from `spec.sync` but taken from the
    /// `sourceRef` of the layer that applies an instance without `spec.sync` (its sync is set
    /// at bootstrap, outside the repository).
    pub sync_assumed: bool,
}

fn s(text: &str) -> Value {
    Value::Str(text.to_string(), false)
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
}

fn labels_value(labels: &Labels) -> Value {
    Value::Map(
        labels
            .iter()
            .filter_map(|(k, v)| Some((s(k), s(v.as_deref()?))))
            .collect(),
    )
}

impl Model<'_> {
    /// The objects the FluxInstance (or `flux-instance` HelmRelease) at `idx` generates, or
    /// `None` for another object.
    pub fn instance_objects(&self, idx: ObjectIdx) -> Option<InstanceObjects> {
        self.instance_objects_assuming(idx, None)
    }

    /// [`Model::instance_objects`] for an instance whose `spec.sync` is not in the repository
    /// (a bootstrap tool sets it, and the instance applied here leaves it alone): `assumed` is
    /// the root source as the layer applying the instance reads it. Without it, a patch that
    /// may select a sync object is undecided rather than a miss.
    pub fn instance_objects_assuming(
        &self,
        idx: ObjectIdx,
        assumed: Option<&SourceRef>,
    ) -> Option<InstanceObjects> {
        let (file, spec) = instance_spec(self, idx)?;
        let yaml = &self.repo.file(file).yaml;
        let obj = self.object(idx);
        let namespace = obj
            .key
            .namespace
            .as_ref()
            .map_or_else(|| "flux-system".to_string(), Name::to_string);
        let scalar = |keys: &[&str]| yaml.lookup(spec, keys).and_then(|n| yaml.scalar(n));
        let data = distribution();
        let components = component_names(yaml, spec, data);
        let marks = OperatorMarks::new(&namespace, scalar(&["distribution", "version"]));
        let network_policy = scalar(&["cluster", "networkPolicy"]) != Some("false");
        let (mut objects, mut complete) =
            distribution_objects(data, &components, network_policy, &namespace, &marks);
        let (mut root_source, mut root_kustomization) = (None, None);
        let read_sync = self.instance_source(idx);
        let sync_assumed = read_sync.is_none() && assumed.is_some();
        if let Some(source) = read_sync.or_else(|| assumed.cloned()) {
            let [source_object, kustomization] =
                sync_objects(&source, |k| scalar(&["sync", k]), &marks);
            root_source = Some(objects.len());
            objects.push(source_object);
            root_kustomization = Some(objects.len());
            objects.push(kustomization);
        }
        if components.iter().any(|c| c.contains("${")) {
            complete = false;
        }
        let mut patches = read_patches(yaml, spec, file);
        apply_patches(&mut patches, &mut objects, root_source.is_some());
        Some(InstanceObjects {
            instance: idx,
            namespace,
            complete,
            objects,
            patches,
            root_source,
            root_kustomization,
            sync_assumed,
        })
    }
}

/// The components the instance installs: `spec.components`, or the distribution's default.
fn component_names(yaml: &YamlFile, spec: NodeId, data: &Distribution) -> Vec<String> {
    match yaml.lookup(spec, &["components"]) {
        Some(list) => yaml
            .items(list)
            .iter()
            .filter_map(|&n| yaml.scalar(n))
            .map(str::to_string)
            .collect(),
        None => data.default_components.clone(),
    }
}

/// The labels and annotations the operator's transformers add to every object it generates.
struct OperatorMarks {
    labels: Labels,
    annotations: Labels,
}

impl OperatorMarks {
    /// For an instance in `namespace` whose `spec.distribution.version` is `version`.
    fn new(namespace: &str, version: Option<&str>) -> Self {
        let mut labels: Labels = [
            ("app.kubernetes.io/managed-by", Some("flux-operator")),
            ("app.kubernetes.io/instance", Some(namespace)),
            ("app.kubernetes.io/part-of", Some("flux")),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
        .collect();
        // The label carries the resolved version; a range (`2.x`) resolves on the cluster.
        let exact_version = version.filter(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'));
        labels.insert(
            "app.kubernetes.io/version".into(),
            exact_version.map(|v| format!("v{v}")),
        );
        // internal/builder/templates.go, annotationsTmpl.
        let annotations: Labels = [
            ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
            ("kustomize.toolkit.fluxcd.io/prune", "Disabled"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), Some(v.to_string())))
        .collect();
        Self {
            labels,
            annotations,
        }
    }
}

/// The objects the distribution contributes: every instance's (its network policies unless
/// turned off) and each component's; `false` when a component is not in the data.
fn distribution_objects(
    data: &Distribution,
    components: &[String],
    network_policy: bool,
    namespace: &str,
    marks: &OperatorMarks,
) -> (Vec<GeneratedObject>, bool) {
    let mut complete = true;
    let mut templates: Vec<&Template> = data
        .common
        .iter()
        .filter(|t| network_policy || !t.policy)
        .collect();
    for c in components {
        match data.components.get(c) {
            Some(objects) => templates.extend(objects),
            None => complete = false,
        }
    }
    let objects = templates
        .into_iter()
        .map(|t| template_object(t, namespace, marks))
        .collect();
    (objects, complete)
}

/// One object of the distribution data as the operator generates it in `namespace`.
fn template_object(t: &Template, namespace: &str, marks: &OperatorMarks) -> GeneratedObject {
    let mut written = t.labels.clone();
    if let Some(c) = &t.component {
        written.insert("app.kubernetes.io/component".into(), Some(c.clone()));
        written.insert("app.kubernetes.io/part-of".into(), Some("flux".into()));
    }
    if t.controller {
        written.insert("control-plane".into(), Some("controller".into()));
    }
    let mut labels = written.clone();
    labels.extend(marks.labels.clone());
    let name = if t.name == "<namespace>" {
        namespace.to_string()
    } else if t.roles {
        format!("{}-{namespace}", t.name)
    } else {
        t.name.clone()
    };
    let key = ObjectKey {
        api_version: Name::from(t.api_version.as_str()),
        kind: Name::from(t.kind.as_str()),
        namespace: (!t.cluster).then(|| Name::from(namespace)),
        name: Name::from(name.as_str()),
    };
    // `roles/` is built by its own kustomization, which sets the namespace; the
    // components' manifests and policies.yaml get it only after the patches.
    let written = Written {
        key: ObjectKey {
            namespace: key.namespace.clone().filter(|_| t.roles),
            ..key.clone()
        },
        labels: written,
        annotations: Labels::new(),
    };
    generated(
        key,
        written,
        t.component.clone(),
        (labels, marks.annotations.clone()),
        Vec::new(),
    )
}

/// What `spec.sync` generates for the root `source`: the root source and the root
/// Kustomization, `get` reading a field of `spec.sync`.
fn sync_objects<'y>(
    source: &SourceRef,
    get: impl Fn(&str) -> Option<&'y str>,
    marks: &OperatorMarks,
) -> [GeneratedObject; 2] {
    let kind = source.kind.as_str();
    // v1 for every kind from Flux 2.6 (internal/builder/semver.go), which the data
    // covers.
    let api_version = "source.toolkit.fluxcd.io/v1";
    let mut source_spec = vec![("interval", s(get("interval").unwrap_or("1m")))];
    let reference = get("ref").unwrap_or_default();
    match kind {
        "GitRepository" => source_spec.push(("ref", map(vec![("name", s(reference))]))),
        "OCIRepository" => source_spec.push(("ref", map(vec![("tag", s(reference))]))),
        _ => source_spec.push(("bucketName", s(reference))),
    }
    if let Some(secret) = get("pullSecret") {
        source_spec.push(("secretRef", map(vec![("name", s(secret))])));
    }
    if let Some(provider) = get("provider") {
        source_spec.push(("provider", s(provider)));
    }
    let url_field = if kind == "Bucket" { "endpoint" } else { "url" };
    source_spec.push((url_field, s(get("url").unwrap_or_default())));
    let key = |api: &str, kind: &str| ObjectKey {
        api_version: Name::from(api),
        kind: Name::from(kind),
        namespace: Some(Name::from(source.namespace.as_str())),
        name: Name::from(source.name.as_str()),
    };
    // sync.yaml writes the namespace, and no labels.
    let written = |key: ObjectKey| Written {
        key,
        labels: Labels::new(),
        annotations: Labels::new(),
    };
    let root_source = generated(
        key(api_version, kind),
        written(key(api_version, kind)),
        None,
        (marks.labels.clone(), marks.annotations.clone()),
        source_spec,
    );
    let kustomization = key("kustomize.toolkit.fluxcd.io/v1", "Kustomization");
    let root_kustomization = generated(
        kustomization.clone(),
        written(kustomization),
        None,
        (marks.labels.clone(), marks.annotations.clone()),
        vec![
            ("interval", s("10m0s")),
            ("path", s(get("path").unwrap_or_default())),
            ("prune", s("true")),
            (
                "sourceRef",
                map(vec![("kind", s(kind)), ("name", s(&source.name))]),
            ),
        ],
    );
    [root_source, root_kustomization]
}

/// The instance's `spec.kustomize.patches`, read, none applied yet.
fn read_patches(yaml: &YamlFile, spec: NodeId, file: FileId) -> Vec<InstancePatch> {
    let mut patches = Vec::new();
    if let Some(list) = yaml.lookup(spec, &["kustomize", "patches"]) {
        for &item in yaml.items(list) {
            let target = yaml.lookup(item, &["target"]).map(|node| {
                let value = yaml.value(node).unwrap_or(Value::Null);
                (Selector::from_value(&value), node)
            });
            let body = match yaml.lookup(item, &["patch"]).and_then(|n| yaml.scalar(n)) {
                Some(text) => PatchBody::parse(text),
                None => Err("the patch has no inline `patch` text".into()),
            };
            let at = yaml.node(item).dash.unwrap_or(yaml.node(item).span.start);
            patches.push(InstancePatch {
                file,
                item,
                line: yaml.line_of(at),
                target,
                body,
                selected: Vec::new(),
                undecided: 0,
                selected_too_late: Vec::new(),
            });
        }
    }
    patches
}

/// Each patch applied to the objects it selects as the manifests are written, recording those
/// it selects only on the cluster; a patch that may select the sync objects is undecided when
/// they are not here (`has_sync` false).
fn apply_patches(patches: &mut [InstancePatch], objects: &mut [GeneratedObject], has_sync: bool) {
    // The operator renders every patch in one kustomize build, in list order.
    for (pi, patch) in patches.iter_mut().enumerate() {
        let Some(selector) = patch.selector() else {
            continue;
        };
        if !has_sync
            && selector
                .kind
                .as_deref()
                .is_none_or(|k| SYNC_KINDS.contains(&k))
        {
            // The sync objects exist on the cluster (set at bootstrap) but not here.
            patch.undecided += 1;
        }
        for (oi, object) in objects.iter_mut().enumerate() {
            let written = &object.at_patch_time;
            match selector.selects(&written.key, &written.labels, &written.annotations) {
                Selection::Yes => {
                    patch.selected.push(oi);
                    object.patched_by.push(pi);
                    if let Ok(body) = &patch.body {
                        body.apply(&mut object.content);
                    }
                }
                Selection::Unknown => patch.undecided += 1,
                Selection::No => {
                    let on_cluster =
                        selector.selects(&object.key, &object.labels, &object.annotations);
                    if on_cluster == Selection::Yes {
                        patch.selected_too_late.push(oi);
                    }
                }
            }
        }
    }
}

/// A generated object's record, its content holding identity, labels and `spec` as on the
/// cluster.
fn generated(
    key: ObjectKey,
    at_patch_time: Written,
    component: Option<String>,
    (labels, annotations): (Labels, Labels),
    spec: Vec<(&str, Value)>,
) -> GeneratedObject {
    let mut metadata = vec![("name", s(&key.name))];
    if let Some(ns) = &key.namespace {
        metadata.push(("namespace", s(ns)));
    }
    metadata.push(("labels", labels_value(&labels)));
    metadata.push(("annotations", labels_value(&annotations)));
    let mut content = vec![
        ("apiVersion", s(&key.api_version)),
        ("kind", s(&key.kind)),
        ("metadata", map(metadata)),
    ];
    if !spec.is_empty() {
        content.push(("spec", map(spec)));
    }
    GeneratedObject {
        key,
        at_patch_time,
        component,
        labels,
        annotations,
        content: map(content),
        patched_by: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Repo;
    use crate::model::ModelOptions;
    use crate::model::component_of;

    fn instance_model(dir: &std::path::Path, text: &str) -> Repo {
        std::fs::write(dir.join("instance.yaml"), text).unwrap();
        Repo::load(dir).unwrap()
    }

    const INSTANCE: &str = "\
apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: \"2.x\"
    registry: ghcr.io/fluxcd
  components:
    - source-controller
    - kustomize-controller
  sync:
    kind: OCIRepository
    url: oci://ghcr.io/example/platform
    ref: latest
    path: clusters/prod
  kustomize:
    patches:
      - target:
          kind: OCIRepository
        patch: |
          - op: add
            path: /spec/verify
            value:
              provider: cosign
              matchOIDCIdentity:
                - issuer: ${ISSUER}
                  subject: ${SUBJECT}
      - target:
          kind: Deployment
          name: kustomize-controler
        patch: |
          - op: replace
            path: /spec/replicas
            value: 2
      - target:
          kind: Deployment
          labelSelector: app.kubernetes.io/component=source-controller
        patch: |
          apiVersion: apps/v1
          kind: Deployment
          metadata:
            name: all
          spec:
            replicas: 3
";

    #[test]
    fn generates_components_root_source_and_applies_patches() {
        let dir = tempfile::tempdir().unwrap();
        let repo = instance_model(dir.path(), INSTANCE);
        let model = Model::build(&repo, &ModelOptions::default());
        let idx = model
            .objects
            .indices()
            .find(|&i| model.is_flux_instance(i))
            .unwrap();
        let generated = model.instance_objects(idx).unwrap();
        assert!(generated.complete);
        let names: Vec<String> = generated
            .objects
            .iter()
            .map(|o| o.key.to_string())
            .collect();
        for want in [
            "Deployment/flux-system/source-controller",
            "ServiceAccount/flux-system/kustomize-controller",
            "Service/flux-system/source-controller",
            "CustomResourceDefinition/ocirepositories.source.toolkit.fluxcd.io",
            "ClusterRole/crd-controller-flux-system",
            "OCIRepository/flux-system/flux-system",
            "Kustomization/flux-system/flux-system",
        ] {
            assert!(
                names.contains(&want.to_string()),
                "{want} missing: {names:?}"
            );
        }
        assert!(!names.iter().any(|n| n.contains("helm-controller")));
        assert_eq!(
            component_of("Deployment", "helm-controller"),
            Some("helm-controller")
        );
        assert_eq!(component_of("Deployment", "podinfo"), None);
        let source = &generated.objects[generated.root_source.unwrap()];
        assert_eq!(
            source.content.str_at(&["spec", "verify", "provider"]),
            Some("cosign")
        );
        assert_eq!(source.patched_by, vec![0]);
        // The misspelt name selects nothing; the label selector selects one Deployment.
        assert!(generated.patches[1].selected.is_empty());
        let by_label: Vec<String> = generated.patches[2]
            .selected
            .iter()
            .map(|&i| generated.objects[i].key.to_string())
            .collect();
        assert_eq!(by_label, vec!["Deployment/flux-system/source-controller"]);
        assert_eq!(generated.patches[0].line, 20);
        let sc = generated
            .objects
            .iter()
            .find(|o| o.key.name == "source-controller" && o.key.kind == "Deployment")
            .unwrap();
        assert_eq!(sc.content.str_at(&["spec", "replicas"]), Some("3"));
        assert_eq!(
            sc.labels.get("app.kubernetes.io/version"),
            Some(&None),
            "a version range resolves on the cluster"
        );
    }

    #[test]
    fn sync_name_and_default_components() {
        let dir = tempfile::tempdir().unwrap();
        let text = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux\nspec:\n  distribution:\n    version: 2.9.4\n  sync:\n    kind: GitRepository\n    name: root\n    url: https://example.com/x.git\n    ref: refs/heads/main\n    path: clusters/a\n";
        let repo = instance_model(dir.path(), text);
        let model = Model::build(&repo, &ModelOptions::default());
        let idx = model
            .objects
            .indices()
            .find(|&i| model.is_flux_instance(i))
            .unwrap();
        let generated = model.instance_objects(idx).unwrap();
        let source = &generated.objects[generated.root_source.unwrap()];
        assert_eq!(source.key.to_string(), "GitRepository/flux/root");
        let names: Vec<String> = generated
            .objects
            .iter()
            .map(|o| o.key.to_string())
            .collect();
        assert!(names.contains(&"Deployment/flux/helm-controller".to_string()));
        assert!(names.contains(&"Service/flux/webhook-receiver".to_string()));
        assert_eq!(
            source.labels.get("app.kubernetes.io/version"),
            Some(&Some("v2.9.4".to_string()))
        );
    }
}
