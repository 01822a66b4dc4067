//! The distribution flux-operator installs, as data: which objects every instance and each
//! component contribute (`rules/flux-distribution.yaml`, read once). A file of its own
//! because it is what the operator ships, where `instance` is what one instance makes of it.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::model::patch::Labels;
use crate::parse::{Value, YamlFile};

/// The distribution data: which objects each component and every instance contribute.
pub const DISTRIBUTION: &str = include_str!("../../rules/flux-distribution.yaml");

/// One object of the distribution data, before the instance's namespace is applied.
#[derive(Clone, Debug)]
pub(super) struct Template {
    pub(super) kind: String,
    pub(super) api_version: String,
    pub(super) name: String,
    pub(super) component: Option<String>,
    /// Cluster-scoped: no namespace.
    pub(super) cluster: bool,
    /// From `roles/`, renamed with the `-<namespace>` suffix.
    pub(super) roles: bool,
    /// From `policies.yaml`, present unless `spec.cluster.networkPolicy: false`.
    pub(super) policy: bool,
    /// Labelled `control-plane: controller`.
    pub(super) controller: bool,
    /// Other labels written in the manifest (`labels:` in the data).
    pub(super) labels: Labels,
}

/// The parsed distribution data.
#[derive(Debug)]
pub(super) struct Distribution {
    pub(super) read_from: String,
    pub(super) default_components: Vec<String>,
    pub(super) common: Vec<Template>,
    pub(super) components: BTreeMap<String, Vec<Template>>,
}

pub(super) fn distribution() -> &'static Distribution {
    static DATA: OnceLock<Distribution> = OnceLock::new();
    DATA.get_or_init(|| {
        let (yaml, error) = YamlFile::parse(DISTRIBUTION);
        assert!(error.is_none(), "rules/flux-distribution.yaml: {error:?}");
        let data = yaml
            .value(yaml.docs()[0].root)
            .expect("rules/flux-distribution.yaml has no alias");
        let template = |v: &Value, component: Option<&str>| Template {
            kind: v.str_at(&["kind"]).unwrap_or_default().to_string(),
            api_version: v.str_at(&["apiVersion"]).unwrap_or_default().to_string(),
            name: v.str_at(&["name"]).unwrap_or_default().to_string(),
            component: component.map(str::to_string),
            cluster: v.get("cluster").and_then(Value::as_bool).unwrap_or(false),
            roles: v.get("roles").and_then(Value::as_bool).unwrap_or(false),
            policy: v.get("policy").and_then(Value::as_bool).unwrap_or(false),
            controller: v
                .get("controller")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            labels: match v.get("labels") {
                Some(Value::Map(entries)) => entries
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((k.as_str()?.to_string(), v.as_str().map(str::to_string)))
                    })
                    .collect(),
                _ => Labels::new(),
            },
        };
        let mut components = BTreeMap::new();
        if let Some(Value::Map(entries)) = data.get("components") {
            for (name, spec) in entries {
                let name = name.as_str().unwrap_or_default();
                let mut objects: Vec<Template> = spec
                    .get("crds")
                    .map(Value::seq)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(Value::as_str)
                    .map(|crd| Template {
                        kind: "CustomResourceDefinition".into(),
                        api_version: "apiextensions.k8s.io/v1".into(),
                        name: crd.to_string(),
                        component: Some(name.to_string()),
                        cluster: true,
                        roles: false,
                        policy: false,
                        controller: false,
                        labels: Labels::new(),
                    })
                    .collect();
                objects.extend(
                    spec.get("objects")
                        .map(Value::seq)
                        .unwrap_or_default()
                        .iter()
                        .map(|o| template(o, Some(name))),
                );
                components.insert(name.to_string(), objects);
            }
        }
        Distribution {
            read_from: data
                .str_at(&["distribution", "read_from"])
                .unwrap_or_default()
                .to_string(),
            default_components: data
                .path(&["distribution", "default_components"])
                .map(Value::seq)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            common: data
                .get("common")
                .map(Value::seq)
                .unwrap_or_default()
                .iter()
                .map(|o| template(o, None))
                .collect(),
            components,
        }
    })
}

/// Where the generated objects were read from (`flux-operator config/data/flux/v2.9.4`), for
/// messages that rest on them.
pub fn distribution_source() -> &'static str {
    &distribution().read_from
}

/// The component whose manifests hold an object of this kind and name (`Deployment`,
/// `image-reflector-controller` → `image-reflector-controller`): what a patch meant when it
/// targets a component the instance does not install.
pub fn component_of(kind: &str, name: &str) -> Option<&'static str> {
    distribution()
        .components
        .iter()
        .find(|(_, objects)| objects.iter().any(|o| o.kind == kind && o.name == name))
        .map(|(component, _)| component.as_str())
}
