//! What deleting an object means: a restart, lost data, an uninstalled Flux.

use crate::model::ObjectKey;
use crate::model::{FLUX_KUSTOMIZE_GROUP, FLUX_OPERATOR_GROUP};

use super::outcome::Consequence;
use super::side::Applied;

/// Workloads whose deletion and re-creation only restarts their pods.
pub fn restarts_only(key: &ObjectKey) -> bool {
    matches!(
        (key.group(), key.kind.as_str()),
        (
            "apps" | "batch" | "",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" | "CronJob" | "Pod"
        )
    )
}

/// What deleting `x` means, and in a sentence.
pub(super) fn consequence(x: &Applied, recreated: bool) -> (Consequence, String) {
    let key = &x.key;
    let kind = key.kind.as_str();
    if x.is_instance {
        if x.instance_disabled {
            return (
                if recreated {
                    Consequence::Recreate
                } else {
                    Consequence::Removed
                },
                "the FluxInstance is deleted; it carries fluxcd.controlplane.io/reconcile: disabled, so flux-operator leaves Flux installed".into(),
            );
        }
        if x.remote {
            // Another cluster's Flux: this cluster keeps reconciling the repository.
            return (
                Consequence::Cascade,
                "flux-operator uninstalls Flux from the cluster the layer's kubeConfig reaches (not this one): its controllers and what its instance manages are removed there".into(),
            );
        }
        return (
            Consequence::Uninstall,
            "flux-operator uninstalls Flux when its FluxInstance is deleted: the Flux controllers and every object the instance manages are removed, and nothing reconciles the repository any more".into(),
        );
    }
    let group = key.group();
    match (group, kind) {
        ("", "Namespace") => (
            Consequence::Cascade,
            format!("deleting Namespace {} deletes every object in it", key.name),
        ),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => (
            Consequence::Cascade,
            format!(
                "deleting CRD {} deletes every object of that kind in the cluster",
                key.name
            ),
        ),
        ("", "PersistentVolumeClaim" | "PersistentVolume") => (
            Consequence::DataLoss,
            format!("{kind} {} is deleted with its data", key.name),
        ),
        ("helm.toolkit.fluxcd.io", "HelmRelease") => (
            Consequence::Cascade,
            format!(
                "helm-controller uninstalls release {}: every object of the release is deleted",
                key.name
            ),
        ),
        (FLUX_KUSTOMIZE_GROUP, "Kustomization") => (
            Consequence::Cascade,
            format!(
                "Flux Kustomization {} is deleted: its deletionPolicy decides what happens to everything it applied",
                key.name
            ),
        ),
        (FLUX_OPERATOR_GROUP, _) => (
            Consequence::Cascade,
            format!("flux-operator tears down what {kind} {} manages", key.name),
        ),
        _ if !recreated => (
            Consequence::Removed,
            format!(
                "{kind} {} is deleted and no layer applies it again",
                key.name
            ),
        ),
        _ if restarts_only(key) => (
            Consequence::Restart,
            format!(
                "{kind} {} is deleted and created again: its pods restart",
                key.name
            ),
        ),
        _ => (
            Consequence::Recreate,
            format!(
                "{kind} {} is deleted and created again: what uses it fails until it is back",
                key.name
            ),
        ),
    }
}
