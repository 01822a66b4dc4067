//! The rollout model against the transition cases of kustomize-controller's reconcile: an object
//! moved between layers is deleted exactly when the old layer prunes it before its new layer
//! applies it (prune on and off, the `prune: disabled` annotation, `dependsOn` either way and
//! none), a removed layer deletes its inventory by its `deletionPolicy`, and what a deletion
//! means depends on the object (FluxInstance, Namespace, PersistentVolumeClaim, a workload).

use crate::common::{GOTK_SYNC, TempRepo};
use fluxmend::load::Repo;
use fluxmend::model::{Model, ModelOptions};
use fluxmend::rollout::{self, Consequence, Deletion, LayerChange, LeaveOutcome, Rollout};

const KEEP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: keep\n  namespace: default\n";
const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\n";
const PROTECTED_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n";

/// A Flux Kustomization `name` in flux-system reading `./name` from the root source.
struct Layer<'a> {
    name: &'a str,
    prune: bool,
    depends_on: &'a [&'a str],
    extra: &'a str,
    /// (file name, contents) of the objects in its folder.
    objects: &'a [(&'a str, &'a str)],
}

fn layer<'a>(name: &'a str, prune: bool, objects: &'a [(&'a str, &'a str)]) -> Layer<'a> {
    Layer {
        name,
        prune,
        depends_on: &[],
        extra: "",
        objects,
    }
}

/// A repository with the bootstrap root at `clusters/prod` applying each layer.
fn world(layers: &[Layer]) -> TempRepo {
    let repo = TempRepo::empty();
    repo.write("clusters/prod/flux-system/gotk-sync.yaml", GOTK_SYNC);
    for l in layers {
        let deps: String = if l.depends_on.is_empty() {
            String::new()
        } else {
            let items: String = l
                .depends_on
                .iter()
                .map(|d| format!("    - name: {d}\n"))
                .collect();
            format!("  dependsOn:\n{items}")
        };
        repo.write(
            &format!("clusters/prod/{}.yaml", l.name),
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {n}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./{n}\n  prune: {p}\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n{deps}{extra}",
                n = l.name,
                p = l.prune,
                extra = l.extra
            ),
        );
        for (file, text) in l.objects {
            repo.write(&format!("{}/{file}", l.name), text);
        }
    }
    repo
}

fn play(before: &TempRepo, after: &TempRepo) -> Rollout {
    let (b, a) = (
        Repo::load(before.path()).unwrap(),
        Repo::load(after.path()).unwrap(),
    );
    let options = ModelOptions::default();
    rollout::play(&Model::build(&b, &options), &Model::build(&a, &options))
}

fn deletions(r: &Rollout) -> Vec<&Deletion> {
    r.deletions().collect()
}

fn outcome(r: &Rollout, layer: &str, object: &str) -> LeaveOutcome {
    r.clusters
        .iter()
        .flat_map(|c| &c.steps)
        .filter(|s| s.layer.name == layer)
        .flat_map(|s| &s.leaves)
        .find(|l| l.object.to_string() == object)
        .unwrap_or_else(|| panic!("{object} does not leave {layer}: {r:#?}"))
        .outcome
}

/// `a` holds `keep` and `cfg`; after, `cfg` lives in `b`, with `b`'s dependsOn as given.
fn move_cfg(prune: bool, cfg: &str, b_depends: &[&str], a_depends: &[&str]) -> Rollout {
    let before = world(&[layer("a", prune, &[("keep.yaml", KEEP), ("cfg.yaml", cfg)])]);
    let after = world(&[
        Layer {
            depends_on: a_depends,
            ..layer("a", prune, &[("keep.yaml", KEEP)])
        },
        Layer {
            depends_on: b_depends,
            ..layer("b", prune, &[("cfg.yaml", cfg)])
        },
    ]);
    play(&before, &after)
}

#[test]
fn a_move_after_the_old_layer_is_deleted_by_its_prune() {
    let r = move_cfg(true, CM, &["a"], &[]);
    let d = deletions(&r);
    assert_eq!(d.len(), 1, "{r:#?}");
    assert_eq!(d[0].object.to_string(), "ConfigMap/default/cfg");
    assert_eq!(d[0].deleted_by.name, "a");
    assert_eq!(d[0].recreated_by.as_ref().unwrap().name, "b");
    assert_eq!(d[0].consequence, Consequence::Recreate);
    assert!(d[0].cause.contains("b depends on"), "{}", d[0].cause);
    assert_eq!(
        outcome(&r, "a", "ConfigMap/default/cfg"),
        LeaveOutcome::Deleted
    );
}

#[test]
fn an_unordered_move_counts_the_worst_order() {
    let r = move_cfg(true, CM, &[], &[]);
    let d = deletions(&r);
    assert_eq!(d.len(), 1, "{r:#?}");
    assert!(d[0].cause.contains("nothing orders"), "{}", d[0].cause);
}

#[test]
fn a_new_layer_the_old_one_depends_on_takes_the_object_over_first() {
    let r = move_cfg(true, CM, &[], &["b"]);
    assert!(deletions(&r).is_empty(), "{r:#?}");
    assert_eq!(
        outcome(&r, "a", "ConfigMap/default/cfg"),
        LeaveOutcome::HandedOver
    );
    let b = r.clusters[0]
        .steps
        .iter()
        .find(|s| s.layer.name == "b")
        .unwrap();
    assert_eq!(b.change, LayerChange::Added);
    assert_eq!(b.takes_over[0].to_string(), "ConfigMap/default/cfg");
}

#[test]
fn a_layer_that_does_not_prune_leaves_the_object_for_the_new_one() {
    let r = move_cfg(false, CM, &["a"], &[]);
    assert!(deletions(&r).is_empty(), "{r:#?}");
    assert_eq!(
        outcome(&r, "a", "ConfigMap/default/cfg"),
        LeaveOutcome::Orphaned
    );
}

#[test]
fn an_object_annotated_prune_disabled_is_kept() {
    let r = move_cfg(true, PROTECTED_CM, &["a"], &[]);
    assert!(deletions(&r).is_empty(), "{r:#?}");
    assert_eq!(
        outcome(&r, "a", "ConfigMap/default/cfg"),
        LeaveOutcome::Protected
    );
}

/// kustomize-controller's prune excludes `reconcile: disabled` objects as it does
/// `prune: disabled` ones (`ssa.DeleteOptions` exclusions).
#[test]
fn an_object_annotated_reconcile_disabled_is_kept() {
    let unmanaged = PROTECTED_CM.replace(
        "kustomize.toolkit.fluxcd.io/prune: disabled",
        "kustomize.toolkit.fluxcd.io/reconcile: disabled",
    );
    let r = move_cfg(true, &unmanaged, &["a"], &[]);
    assert!(deletions(&r).is_empty(), "{r:#?}");
    assert_eq!(
        outcome(&r, "a", "ConfigMap/default/cfg"),
        LeaveOutcome::Protected
    );
}

#[test]
fn a_dependency_on_another_source_does_not_order_the_revision() {
    // b depends on a, but reads another source: a being Ready says nothing about this revision.
    let other = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: other\n  namespace: flux-system\nspec:\n  url: https://github.com/example/fleet\n";
    let before = world(&[layer("a", true, &[("keep.yaml", KEEP), ("cfg.yaml", CM)])]);
    let after = world(&[
        Layer {
            depends_on: &["b"],
            ..layer("a", true, &[("keep.yaml", KEEP)])
        },
        layer("b", true, &[("cfg.yaml", CM)]),
    ]);
    // Point b at the other source.
    let b = after.read("clusters/prod/b.yaml");
    after.write(
        "clusters/prod/b.yaml",
        b.replace("    name: flux-system\n", "    name: other\n"),
    );
    after.write("clusters/prod/other.yaml", other);
    let r = play(&before, &after);
    assert_eq!(deletions(&r).len(), 1, "{r:#?}");
}

/// What moving one object off a pruning layer after it costs, by kind.
fn consequence_of(object: &str) -> (Consequence, String) {
    let r = move_cfg(true, object, &["a"], &[]);
    let d = deletions(&r);
    assert_eq!(d.len(), 1, "{r:#?}");
    (d[0].consequence, d[0].effect.clone())
}

#[test]
fn what_a_deletion_means_depends_on_the_object() {
    let instance = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution:\n    version: 2.x\n";
    let (c, effect) = consequence_of(instance);
    assert_eq!(c, Consequence::Uninstall);
    assert!(effect.contains("uninstalls Flux"), "{effect}");

    let disabled = instance.replace(
        "  namespace: flux-system\n",
        "  namespace: flux-system\n  annotations:\n    fluxcd.controlplane.io/reconcile: disabled\n",
    );
    let (c, effect) = consequence_of(&disabled);
    assert_eq!(c, Consequence::Recreate);
    assert!(effect.contains("leaves Flux installed"), "{effect}");

    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: shop\n";
    assert_eq!(consequence_of(namespace).0, Consequence::Cascade);

    let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n";
    let (c, effect) = consequence_of(crd);
    assert_eq!(c, Consequence::Cascade);
    assert!(effect.contains("every object of that kind"), "{effect}");

    let pvc = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: data\n  namespace: default\nspec:\n  accessModes: [ReadWriteOnce]\n";
    assert_eq!(consequence_of(pvc).0, Consequence::DataLoss);

    let runner =
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: runner\n  namespace: default\n";
    let (c, _) = consequence_of(runner);
    assert_eq!(c, Consequence::Restart);
    assert!(!c.is_harmful());
    assert!(Consequence::Recreate.is_harmful());
}

/// `c` (applied by the root) is removed from the repository: what its `deletionPolicy` does to
/// what it applied.
fn remove_layer(prune: bool, policy: &str) -> Rollout {
    let extra = if policy.is_empty() {
        String::new()
    } else {
        format!("  deletionPolicy: {policy}\n")
    };
    let before = world(&[
        layer("a", true, &[("keep.yaml", KEEP)]),
        Layer {
            extra: &extra,
            ..layer("c", prune, &[("cfg.yaml", CM)])
        },
    ]);
    let after = world(&[layer("a", true, &[("keep.yaml", KEEP)])]);
    play(&before, &after)
}

#[test]
fn a_removed_layer_deletes_its_inventory_by_its_deletion_policy() {
    for (prune, policy, deleted) in [
        (true, "", true),
        (false, "", false),
        (true, "MirrorPrune", true),
        (false, "Delete", true),
        (false, "WaitForTermination", true),
        (true, "Orphan", false),
    ] {
        let r = remove_layer(prune, policy);
        let what = format!("prune {prune}, deletionPolicy {policy:?}: {r:#?}");
        // The root prunes the Kustomization object itself in every case.
        let layer = r
            .deletions()
            .find(|d| d.object.to_string() == "Kustomization/flux-system/c")
            .unwrap_or_else(|| panic!("{what}"));
        assert_eq!(layer.deleted_by.name, "flux-system");
        let inventory: Vec<_> = r
            .deletions()
            .filter(|d| d.object.to_string() == "ConfigMap/default/cfg")
            .collect();
        assert_eq!(inventory.len(), usize::from(deleted), "{what}");
        if deleted {
            assert_eq!(layer.consequence, Consequence::Cascade, "{what}");
            assert_eq!(inventory[0].consequence, Consequence::Removed);
            assert!(
                inventory[0].cause.contains("is removed"),
                "{}",
                inventory[0].cause
            );
        } else {
            assert_eq!(layer.consequence, Consequence::Removed, "{what}");
            assert!(
                layer.effect.contains("leaves what it applied"),
                "{}",
                layer.effect
            );
        }
        let steps: Vec<(&str, LayerChange)> = r.clusters[0]
            .steps
            .iter()
            .map(|s| (s.layer.name.as_str(), s.change))
            .collect();
        // The removed layer is played with its parent, after it.
        let root = steps.iter().position(|s| s.0 == "flux-system").unwrap();
        let c = steps.iter().position(|s| s.0 == "c").unwrap();
        assert!(root < c, "{steps:?}");
        assert_eq!(steps[c].1, LayerChange::Removed);
    }
}

#[test]
fn an_unchanged_repository_deletes_nothing_and_changes_no_layer() {
    let before = world(&[layer("a", true, &[("keep.yaml", KEEP), ("cfg.yaml", CM)])]);
    let r = play(&before, &before);
    assert!(deletions(&r).is_empty());
    assert!(
        r.clusters[0]
            .steps
            .iter()
            .all(|s| s.change == LayerChange::Unchanged),
        "{r:#?}"
    );
}

/// kustomize-controller's prune also excludes `ssa: Ignore` (since v1.1.0; `deleteObjects`),
/// its value compared case-insensitively as fluxcd/pkg does; `ssa: IfNotPresent` is pruned.
#[test]
fn an_object_annotated_ssa_ignore_is_kept_and_if_not_present_is_not() {
    for (value, kept) in [("Ignore", true), ("ignore", true), ("IfNotPresent", false)] {
        let annotated = PROTECTED_CM.replace(
            "kustomize.toolkit.fluxcd.io/prune: disabled",
            &format!("kustomize.toolkit.fluxcd.io/ssa: {value}"),
        );
        let r = move_cfg(true, &annotated, &["a"], &[]);
        assert_eq!(deletions(&r).is_empty(), kept, "{value}: {r:#?}");
        assert_eq!(
            outcome(&r, "a", "ConfigMap/default/cfg"),
            if kept {
                LeaveOutcome::Protected
            } else {
                LeaveOutcome::Deleted
            },
            "{value}"
        );
    }
}

/// A FluxInstance a layer applies to another cluster (`spec.kubeConfig`) is that cluster's
/// Flux: deleting it uninstalls Flux there, not here (no self-lock of this cluster).
#[test]
fn deleting_another_clusters_flux_instance_is_no_uninstall_here() {
    let instance = "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution:\n    version: 2.x\n";
    let remote = "  kubeConfig:\n    secretRef:\n      name: edge-kubeconfig\n";
    let before = world(&[Layer {
        extra: remote,
        ..layer(
            "edge",
            true,
            &[("keep.yaml", KEEP), ("flux.yaml", instance)],
        )
    }]);
    let after = world(&[Layer {
        extra: remote,
        ..layer("edge", true, &[("keep.yaml", KEEP)])
    }]);
    let r = play(&before, &after);
    let d = deletions(&r);
    assert_eq!(d.len(), 1, "{r:#?}");
    assert_eq!(d[0].consequence, Consequence::Cascade);
    assert!(d[0].effect.contains("not this one"), "{}", d[0].effect);
}
