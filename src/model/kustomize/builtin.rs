//! What kustomize (v5.5) knows built in: the file names it reads as a directory's
//! kustomization, the kinds it takes as cluster-scoped (its `namespace:` leaves them alone) and
//! the kinds that keep their name (`namePrefix`/`nameSuffix` leave them alone).

use crate::model::ObjectKey;

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
