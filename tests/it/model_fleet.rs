//! The model on a fleet repository: one root per cluster, bootstrap and FluxInstance roots side
//! by side, and dependencies resolved inside each cluster only.

use crate::common::TempRepo;
use fluxmend::load::{Repo, file_id};
use fluxmend::model::{Model, ModelOptions};

fn layer(name: &str, path: &str, depends_on: Option<&str>) -> String {
    let deps = depends_on.map_or(String::new(), |d| {
        format!("  dependsOn:\n    - name: {d}\n")
    });
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  path: {path}\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  wait: true\n{deps}"
    )
}

/// A cluster bootstrapped with `flux bootstrap`: its `flux-system` GitRepository and the
/// Kustomization that syncs `clusters/<cluster>`.
fn bootstrap(tmp: &TempRepo, cluster: &str) {
    let dir = format!("clusters/{cluster}");
    tmp.write(
        &format!("{dir}/flux-system/gotk-sync.yaml"),
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: https://example.com/fleet.git\n---\n{}",
            layer("flux-system", &format!("./{dir}"), None)
        ),
    );
}

/// A bootstrapped cluster whose `apps` layer syncs `apps/<cluster>`.
fn cluster_with_apps(tmp: &TempRepo, cluster: &str) {
    bootstrap(tmp, cluster);
    tmp.write(
        &format!("clusters/{cluster}/apps.yaml"),
        layer("apps", &format!("./apps/{cluster}"), None),
    );
}

/// A cluster run by the Flux Operator: a FluxInstance syncing `clusters/<cluster>`.
fn flux_instance(tmp: &TempRepo, cluster: &str) {
    tmp.write(
        &format!("clusters/{cluster}/flux-instance.yaml"),
        format!("apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  sync:\n    kind: GitRepository\n    url: https://example.com/fleet.git\n    ref: refs/heads/main\n    path: clusters/{cluster}\n"),
    );
}

#[test]
fn every_cluster_is_its_own_root_and_dependencies_stay_inside_it() {
    let tmp = TempRepo::empty();
    let root = tmp.path();
    for cluster in ["a", "b", "c"] {
        let dir = format!("clusters/{cluster}");
        if cluster == "c" {
            flux_instance(&tmp, cluster);
        } else {
            bootstrap(&tmp, cluster);
        }
        tmp.write(
            &format!("{dir}/infra.yaml"),
            layer("infra", "./infra", None),
        );
        tmp.write(
            &format!("{dir}/apps.yaml"),
            layer("apps", "./apps", Some("infra")),
        );
    }
    tmp.write(
        "infra/ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: infra\n",
    );
    tmp.write(
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
    );

    let repo = Repo::load(root).unwrap();
    let model = Model::build(&repo, &ModelOptions::default());
    assert_eq!(
        model.diagnostics,
        vec![],
        "a clean fleet has no diagnostics"
    );
    assert!(
        model.layers.iter().all(|l| l.live),
        "every layer is reached from its cluster's root"
    );
    let clusters: std::collections::BTreeSet<_> = model.layers.iter().map(|l| l.cluster).collect();
    assert_eq!(clusters.len(), 3);
    for (id, l) in model.layers.iter().enumerate() {
        if l.id.name == "apps" {
            let deps = model.dependencies(id);
            assert_eq!(deps.len(), 1, "apps waits for its own cluster's infra only");
            assert_eq!(model.layer(deps[0]).cluster, l.cluster);
            assert_eq!(model.dependents(deps[0]), vec![id]);
        }
    }
}

#[test]
fn dependency_cycles_are_reported_once_per_cycle() {
    let tmp = TempRepo::empty();
    let root = tmp.path();
    tmp.write(
        "clusters/a/flux-system/gotk-sync.yaml",
        layer("flux-system", "./clusters/a", None),
    );
    tmp.write("clusters/a/x.yaml", layer("x", "./w", Some("y")));
    tmp.write("clusters/a/y.yaml", layer("y", "./w", Some("z")));
    tmp.write("clusters/a/z.yaml", layer("z", "./w", Some("x")));
    tmp.write("clusters/a/self.yaml", layer("self", "./w", Some("self")));
    tmp.write(
        "w/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n",
    );
    let repo = Repo::load(root).unwrap();
    let model = Model::build(&repo, &ModelOptions::default());
    let cycles: Vec<_> = model
        .diagnostics
        .iter()
        .filter(|d| d.message.starts_with("dependsOn cycle"))
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(cycles.len(), 2, "{cycles:?}");
    assert!(
        cycles
            .iter()
            .any(|m| m.contains("flux-system/x, flux-system/y, flux-system/z")),
        "{cycles:?}"
    );
    assert!(
        cycles.iter().any(|m| m.contains("flux-system/self wait")),
        "{cycles:?}"
    );
}

/// What a `chartRef` or `sourceRef` names is found by kind and name: the namespace given (or
/// none), and otherwise the first in repository order — the same answer for every HelmRelease of
/// a fleet, looked up through one index instead of a scan per release.
#[test]
fn find_object_resolves_by_kind_name_and_namespace() {
    let tmp = TempRepo::empty();
    let repo_source = |ns: Option<&str>, url: &str| {
        let ns = ns.map_or(String::new(), |n| format!("  namespace: {n}\n"));
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: charts\n{ns}spec:\n  url: {url}\n"
        )
    };
    tmp.write("a/source.yaml", repo_source(Some("team-a"), "oci://a"));
    tmp.write("b/source.yaml", repo_source(Some("team-b"), "oci://b"));
    tmp.write("c/source.yaml", repo_source(None, "oci://c"));
    tmp.write(
        "d/other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: charts\n  namespace: team-b\n",
    );
    let repo = Repo::load(tmp.path()).unwrap();
    let model = Model::build(&repo, &ModelOptions::default());
    let file_of = |found: Option<fluxmend::model::ObjectIdx>| {
        found.map(|i| repo.file(model.object(i).file).path.clone())
    };
    let find = |ns| file_of(model.find_object("OCIRepository", "charts", ns));
    assert_eq!(find(Some("team-b")).as_deref(), Some("b/source.yaml"));
    assert_eq!(find(Some("team-a")).as_deref(), Some("a/source.yaml"));
    assert_eq!(find(None).as_deref(), Some("a/source.yaml"));
    // No object in team-z: the one without a namespace stands for it.
    assert_eq!(find(Some("team-z")).as_deref(), Some("c/source.yaml"));
    assert_eq!(model.find_object("OCIRepository", "missing", None), None);
    assert_eq!(
        file_of(model.find_object("ConfigMap", "charts", Some("team-b"))).as_deref(),
        Some("d/other.yaml")
    );
}

/// `users_of_file` is its definition: for every file, the live (layer, variant) pairs with an
/// inventory entry whose object is written there or that a kustomization file there brought
/// in, each once, in layer then variant order; a layer no root reaches uses no file.
#[test]
fn the_users_of_a_file_are_the_live_variants_that_render_from_it() {
    let tmp = TempRepo::empty();
    for cluster in ["a", "b"] {
        cluster_with_apps(&tmp, cluster);
        tmp.write(
            &format!("apps/{cluster}/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../base\n  - own.yaml\n",
        );
        tmp.write(
            &format!("apps/{cluster}/own.yaml"),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: own-{cluster}\n  namespace: default\n"),
        );
    }
    // Two layers of cluster b read the base twice over; one Flux Kustomization no root reaches.
    tmp.write("clusters/b/more.yaml", layer("more", "./apps/base", None));
    tmp.write("unreached/ks.yaml", layer("unreached", "./apps/base", None));
    tmp.write(
        "apps/base/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cm.yaml\n  - deploy.yaml\n",
    );
    tmp.write(
        "apps/base/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n  namespace: default\n",
    );
    tmp.write(
        "apps/base/deploy.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: default\n",
    );

    let repo = Repo::load(tmp.path()).unwrap();
    let model = Model::build(&repo, &ModelOptions::default());
    assert!(
        model.layers.iter().any(|l| !l.live),
        "the unreached layer is modelled"
    );
    let mut used = 0;
    for file in (0..repo.files.len()).map(file_id) {
        let mut expected = Vec::new();
        for (id, layer) in model.live_layers() {
            for (vi, variant) in layer.variants.iter().enumerate() {
                if variant
                    .inventory
                    .iter()
                    .any(|r| model.object(r.object).file == file || r.chain.contains(&file))
                {
                    expected.push((id, vi));
                }
            }
        }
        let found: Vec<_> = model.users_of_file(file).collect();
        assert_eq!(found, expected, "{}", repo.file(file).path);
        used += usize::from(!found.is_empty());
    }
    let base = repo.file_id("apps/base/cm.yaml").unwrap();
    assert_eq!(
        model.users_of_file(base).count(),
        3,
        "both clusters' apps and cluster b's second layer"
    );
    assert!(
        used >= 8,
        "the files the live layers read have users ({used})"
    );
}

/// A cluster migrated to the Flux Operator: its FluxInstance syncs the folder that still holds
/// the bootstrap Kustomization, which is then a layer of that cluster, not a cluster of its own;
/// a bootstrap no FluxInstance reaches is its own cluster.
#[test]
fn a_bootstrap_a_flux_instance_reaches_is_no_cluster_of_its_own() {
    let tmp = TempRepo::empty();
    flux_instance(&tmp, "migrated");
    for cluster in ["migrated", "plain"] {
        let dir = format!("clusters/{cluster}");
        bootstrap(&tmp, cluster);
        tmp.write(&format!("{dir}/apps.yaml"), layer("apps", "./apps", None));
    }
    tmp.write(
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
    );
    let repo = Repo::load(tmp.path()).unwrap();
    let model = Model::build(&repo, &ModelOptions::default());
    let clusters: std::collections::BTreeSet<_> = model.layers.iter().map(|l| l.cluster).collect();
    assert_eq!(
        clusters.len(),
        2,
        "{:#?}",
        model
            .layers
            .iter()
            .map(|l| (l.cluster, l.id.to_string()))
            .collect::<Vec<_>>()
    );
    assert!(model.layers.iter().all(|l| l.live));
    let apps = model.layers.iter().filter(|l| l.id.name == "apps").count();
    assert_eq!(apps, 2, "one apps layer per cluster");
}

/// What the gates compare is the model of the repository the fix writes: for every fixture,
/// its `before` with the files its `after` changes applied in memory (`Repo::with_changes`),
/// modelled beside the `before` model (`Model::build_variant`), is the model of `after` loaded
/// from disk: the same objects, kustomize directories, layers with their inventories, users of
/// each file and diagnostics. A variant that shares more with its base must keep this true.
#[test]
fn a_change_modelled_in_memory_is_the_model_of_the_written_repository() {
    use std::collections::BTreeMap;

    let texts = |repo: &Repo| -> BTreeMap<String, String> {
        repo.files
            .iter()
            .filter(|f| repo.generated_from(&f.path).is_none())
            .map(|f| {
                let bom = if f.yaml.bom { "\u{feff}" } else { "" };
                (f.path.clone(), format!("{bom}{}", f.yaml.text()))
            })
            .collect()
    };
    let described = |m: &Model| {
        let mut dirs: Vec<String> = m
            .kustomize_dirs
            .iter()
            .map(|(dir, k)| format!("{dir}: {k:?}"))
            .collect();
        dirs.sort();
        let users: Vec<String> = (0..m.repo.files.len())
            .map(file_id)
            .map(|f| {
                format!(
                    "{} {:?}",
                    m.repo.file(f).path,
                    m.users_of_file(f).collect::<Vec<_>>()
                )
            })
            .collect();
        format!(
            "objects {:#?}\ndirs {dirs:#?}\nlayers {:#?}\nusers {users:#?}\ndiagnostics {:#?}",
            m.objects, m.layers, m.diagnostics
        )
    };
    let options = ModelOptions::default();
    let mut compared = 0;
    for tree in crate::common::fixture_trees(true) {
        if tree.stage != "after" {
            continue;
        }
        let before = Repo::load(&crate::common::fixture(&tree.case, "before")).unwrap();
        let after = Repo::load(&tree.root).unwrap();
        let (was, now) = (texts(&before), texts(&after));
        let mut changes: BTreeMap<String, Option<String>> = now
            .iter()
            .filter(|(path, text)| was.get(*path) != Some(text))
            .map(|(path, text)| (path.clone(), Some(text.clone())))
            .collect();
        changes.extend(
            was.keys()
                .filter(|path| !now.contains_key(*path))
                .map(|path| (path.clone(), None)),
        );
        if changes.is_empty() {
            continue;
        }
        let base = Model::build(&before, &options);
        let changed = before.with_changes(&changes);
        let beside = base.build_variant(&changed, &options);
        let written = Model::build(&after, &options);
        let (ours, theirs) = (described(&beside), described(&written));
        if ours != theirs {
            let line = ours
                .lines()
                .zip(theirs.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            let show = |text: &str| {
                text.lines()
                    .skip(line.saturating_sub(5))
                    .take(12)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            panic!(
                "{}: the model in memory differs from the written one at line {line}:\n--- in memory\n{}\n--- written\n{}",
                tree.case,
                show(&ours),
                show(&theirs)
            );
        }
        compared += 1;
    }
    assert!(compared >= 20, "fixtures with a change: {compared}");
}

/// A variant that only edits an object (a move's protection: an annotation) keeps the
/// base's kustomize directories, layers and what lists each file as they were: it shares them
/// rather than holding a copy each (issue 26), and is still the model of its files. A variant
/// that adds a file renumbers the files and objects after it, and keeps layers of its own.
#[test]
fn a_variant_shares_what_a_change_leaves_equal() {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    let tmp = TempRepo::empty();
    for cluster in ["a", "b"] {
        cluster_with_apps(&tmp, cluster);
        tmp.write(
            &format!("apps/{cluster}/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - runner.yaml\n",
        );
        tmp.write(
            &format!("apps/{cluster}/runner.yaml"),
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\n  namespace: ci\n",
        );
    }
    let repo = Repo::load(tmp.path()).unwrap();
    let options = ModelOptions::default();
    let base = Model::build(&repo, &options);
    let runner = repo.file_id("apps/b/runner.yaml").unwrap();
    let listed = base.listers_of(runner);
    assert_eq!(listed.len(), 1);
    let change =
        |path: &str, text: &str| BTreeMap::from([(path.to_string(), Some(text.to_string()))]);

    let annotated = repo.with_changes(&change(
        "apps/a/runner.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\n  namespace: ci\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
    ));
    let variant = base.build_variant(&annotated, &options);
    assert!(Arc::ptr_eq(&variant.layers, &base.layers));
    assert!(Arc::ptr_eq(&variant.kustomize_dirs, &base.kustomize_dirs));
    // What lists each file, indexed on the base already, is the same index.
    assert_eq!(variant.listers_of(runner).as_ptr(), listed.as_ptr());
    let own = Model::build(&annotated, &options);
    assert_eq!(format!("{:?}", variant.layers), format!("{:?}", own.layers));

    let added = repo.with_changes(&change(
        "apps/a/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config\n  namespace: ci\n",
    ));
    let variant = base.build_variant(&added, &options);
    assert!(!Arc::ptr_eq(&variant.layers, &base.layers));
    assert_eq!(variant.layers.len(), base.layers.len());
    let own = Model::build(&added, &options);
    assert_eq!(format!("{:?}", variant.layers), format!("{:?}", own.layers));
}

/// A change that removes the last file of a layer's `spec.path` is modelled as committed: git
/// keeps no empty folder, so the path no longer exists and the layer fails, as its model
/// loaded from the committed tree says (an empty folder left on disk would render nothing and
/// let a verification take the failure for an empty layer).
#[test]
fn a_layer_whose_folder_a_change_empties_has_no_path() {
    use std::collections::BTreeMap;

    let tmp = TempRepo::empty();
    cluster_with_apps(&tmp, "a");
    tmp.write(
        "apps/a/runner.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\n  namespace: ci\n",
    );
    let repo = Repo::load(tmp.path()).unwrap();
    let options = ModelOptions::default();
    let base = Model::build(&repo, &options);
    let emptied = repo.with_changes(&BTreeMap::from([("apps/a/runner.yaml".to_string(), None)]));
    let variant = base.build_variant(&emptied, &options);
    let messages = |m: &Model| -> Vec<String> {
        m.diagnostics
            .iter()
            .map(|d| format!("{:?} {}", d.severity, d.message))
            .collect()
    };
    assert!(
        messages(&variant)
            .iter()
            .any(|m| m.contains("spec.path `./apps/a` does not exist")),
        "{:#?}",
        messages(&variant)
    );
    std::fs::remove_dir_all(tmp.path().join("apps")).unwrap();
    let committed = Repo::load(tmp.path()).unwrap();
    assert_eq!(
        messages(&variant),
        messages(&Model::build(&committed, &options))
    );
}
