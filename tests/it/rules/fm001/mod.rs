//! FM001 end to end on the fixture repositories: the finding and diff (snapshots), the written
//! result equals `after/` byte for byte, negative control, idempotence, render equivalence with
//! `kubectl kustomize`, byte preservation, and `--commit`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{
    self, TempRepo, assert_fix_writes_after_tree, differing_paths, first_finding_and_fix, fix_runs,
    fixture, fluxmend, git, git_repo_with, kubectl_kustomize, strip_protection, tree, unwrapped,
};

per_case! {
    [
        findings_and_diffs_match_snapshots,
        written_result_equals_after_tree_and_converges,
        kubectl_renders_the_same_objects_before_and_after,
        a_new_layer_is_applied_by_the_same_parent_as_the_old_one,
    ]
    flux_instance_oci_provider => "flux-instance-oci-provider",
    fm001_dedicated => "fm001-dedicated",
    fm001_inline => "fm001-inline",
    fm001_healthchecks => "fm001-healthchecks",
    fm001_prune_off => "fm001-prune-off",
    fm001_app_folder => "fm001-app-folder",
    fm001_carried_settings => "fm001-carried-settings",
    fm001_bootstrap_cycle => "fm001-bootstrap-cycle",
    fm001_own_layer => "fm001-own-layer",
    fm001_own_layer_alone => "fm001-own-layer-alone",
    fm001_healthchecks_instance => "fm001-healthchecks-instance",
    fm001_healthchecks_flow => "fm001-healthchecks-flow",
    fm001_generated_layer => "fm001-generated-layer",
    fm001_outside_path => "fm001-outside-path",
}

fn findings_and_diffs_match_snapshots(case: &str) {
    for (suffix, run) in fix_runs(case, &[]) {
        insta::assert_snapshot!(format!("{case}{suffix}-report"), run.stderr);
        insta::assert_snapshot!(format!("{case}{suffix}-diff"), run.stdout);
    }
}

fn written_result_equals_after_tree_and_converges(case: &str) {
    assert_fix_writes_after_tree(case, "FM001", &["--rule", "FM001"]);
}

/// The FM001 findings of `fix --format json` on `root`, each with its fix or why it has none.
fn fm001_fix_findings(root: &Path) -> serde_json::Value {
    let run = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--format",
        "json",
        "--rule",
        "FM001",
    ]);
    run.json()["findings"].clone()
}

/// Render every live layer directory with kubectl (or read it, where Flux generates the
/// kustomization) and collect the objects, Flux Kustomizations excepted.
fn rendered_objects(root: &Path) -> BTreeMap<String, usize> {
    let graph = fluxmend(["graph", root.to_str().unwrap(), "--format", "json"]).json();
    let mut out = BTreeMap::new();
    for layer in graph["layers"].as_array().unwrap() {
        if !layer["live"].as_bool().unwrap() {
            continue;
        }
        for variant in layer["variants"].as_array().unwrap() {
            let dir = root.join(variant["dir"].as_str().unwrap());
            let docs: Vec<String> = if variant["generated"].as_bool().unwrap() {
                walkdir::WalkDir::new(&dir)
                    .into_iter()
                    .map(Result::unwrap)
                    .filter(|e| {
                        e.file_type().is_file()
                            && e.path()
                                .extension()
                                .is_some_and(|x| x == "yaml" || x == "yml")
                    })
                    .flat_map(|e| normalise(&std::fs::read_to_string(e.path()).unwrap()))
                    .collect()
            } else {
                normalise(&kubectl_kustomize(&dir))
            };
            for doc in docs {
                if doc.contains("kind: Kustomization")
                    && doc.contains("kustomize.toolkit.fluxcd.io")
                {
                    continue;
                }
                *out.entry(doc).or_insert(0) += 1;
            }
        }
    }
    out
}

/// The documents with the annotation a phased move adds removed.
fn without_protection(docs: BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for (doc, n) in docs {
        *out.entry(strip_protection(&doc)).or_insert(0) += n;
    }
    out
}

/// Documents as canonical YAML text (comments, formatting and key order dropped: kustomize
/// sorts keys, a file read as Flux's generated kustomization lists it keeps them as written).
fn normalise(text: &str) -> Vec<String> {
    fn sorted(doc: yaml_rust2::Yaml) -> yaml_rust2::Yaml {
        use yaml_rust2::Yaml;
        match doc {
            Yaml::Hash(map) => {
                let mut entries: Vec<(Yaml, Yaml)> =
                    map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
                entries.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
                Yaml::Hash(entries.into_iter().collect())
            }
            Yaml::Array(items) => Yaml::Array(items.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    yaml_rust2::YamlLoader::load_from_str(text)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .map(|d| {
            let mut s = String::new();
            yaml_rust2::YamlEmitter::new(&mut s)
                .dump(&sorted(d))
                .unwrap();
            s
        })
        .collect()
}

fn kubectl_renders_the_same_objects_before_and_after(case: &str) {
    // The one change a phased move makes to an object is its prune: disabled annotation:
    // compared without it.
    let before = without_protection(rendered_objects(&fixture(case, "before")));
    let after = without_protection(rendered_objects(&fixture(case, "after")));
    assert!(before.len() > 3, "{case}: rendered too little to compare");
    assert_eq!(before, after, "{case}: objects rendered differ");
}

#[test]
fn bytes_outside_the_edit_are_kept_crlf_bom_comments_quoting() {
    let repo = TempRepo::empty();
    let crlf = |s: &str| s.replace('\n', "\r\n");
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: https://example.com/repo.git\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/prod\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    let layer = crlf(
        "\u{feff}# controllers layer\t \napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: \"controllers\"   # quoted on purpose\n  namespace: flux-system\nspec:\n  interval: 1h\n  path: './infra/controllers'\n  sourceRef: {kind: GitRepository, name: flux-system}\n  wait: true\n\n# trailing comment\n",
    );
    repo.write("clusters/prod/controllers.yaml", &layer);
    repo.write(
        "clusters/prod/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  dependsOn:\n    - name: controllers\n",
    );
    let aggregate = crlf(
        "\u{feff}apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - operator.yaml   # the operator\n\n  # the instance\n  - instance/\n  - 'cm.yaml'\n# end\n",
    );
    repo.write("infra/controllers/kustomization.yaml", &aggregate);
    repo.write(
        "infra/controllers/operator.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n",
    );
    repo.write(
        "infra/controllers/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  namespace: flux-system\n",
    );
    repo.write(
        "infra/controllers/instance/kustomization.yaml",
        "resources:\n  - flux.yaml\n",
    );
    repo.write(
        "infra/controllers/instance/flux.yaml",
        "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  sync:\n    kind: GitRepository\n    url: https://example.com/repo.git\n    path: clusters/prod\n",
    );
    repo.write(
        "apps/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
    );
    let run = fluxmend(["fix", "--write", repo.path().to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    // The aggregate: only the entry and its comment went; BOM, CRLF, quoting and comments stay.
    let expected = crlf(
        "\u{feff}apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - operator.yaml   # the operator\n\n  - 'cm.yaml'\n# end\n",
    );
    assert_eq!(repo.read("infra/controllers/kustomization.yaml"), expected);
    // The old layer file is untouched; the new one uses its line ending and indentation.
    assert_eq!(repo.read("clusters/prod/controllers.yaml"), layer);
    let new = repo.read("clusters/prod/flux-instance.yaml");
    assert!(
        new.contains("\r\n") && !new.replace("\r\n", "").contains('\n'),
        "CRLF kept: {new:?}"
    );
    assert!(
        new.contains("  path: ./infra/controllers/instance\r\n"),
        "{new}"
    );
    assert!(
        new.contains("  sourceRef: {kind: GitRepository, name: flux-system}\r\n"),
        "{new}"
    );
    assert!(
        new.contains("  wait: false\r\n") && new.contains("    - name: controllers\r\n"),
        "{new}"
    );
}

#[test]
fn commit_creates_one_commit_with_only_the_fix() {
    let repo = git_repo_with("flux-instance-oci-provider");
    let root = repo.path().to_str().unwrap();
    let parent = git(repo.path(), &["rev-parse", "HEAD"]);
    let run = fluxmend(["fix", "--commit", "--branch", "fluxmend/fm001", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "fluxmend/fm001"
    );
    // Phase 1 (the layer prunes): the instances are protected where they are.
    let message = git(repo.path(), &["log", "-1", "--format=%B"]);
    assert_eq!(
        message.lines().next(),
        Some(
            "fluxmend: protect FluxInstance from the prune of infrastructure-controllers (phase 1 of 2)"
        ),
        "{message}"
    );
    assert!(message.contains("Phase 1 of 2"), "{message}");
    assert!(
        message.contains("Before\n    running `fluxmend fix` for phase 2, confirm")
            || message.contains("running `fluxmend fix` for phase 2, confirm"),
        "{message}"
    );
    let changed = git(repo.path(), &["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(
        changed.lines().collect::<Vec<_>>(),
        [
            "M\tk8s/providers/docker/infrastructure/controllers/flux-instance/flux-instance.yaml",
            "M\tk8s/providers/hetzner/infrastructure/controllers/flux-instance/flux-instance.yaml",
        ]
    );
    // Phase 2, the move, on top.
    let run = fluxmend(["fix", "--commit", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let message = git(repo.path(), &["log", "-1", "--format=%B"]);
    assert!(message.contains("Phase 2 of 2"), "{message}");
    assert!(
        message.contains("Trade-off: Health gating is lost"),
        "{message}"
    );
    let changed = git(repo.path(), &["show", "--name-status", "--format=", "HEAD"]);
    assert_eq!(
        changed.lines().collect::<Vec<_>>(),
        [
            "A\tk8s/clusters/base/flux-kustomization-flux-instance.yaml",
            "M\tk8s/clusters/base/kustomization.yaml",
            "M\tk8s/providers/docker/infrastructure/controllers/kustomization.yaml",
            "M\tk8s/providers/hetzner/infrastructure/controllers/kustomization.yaml",
        ]
    );
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD~2"]), parent);
    assert_eq!(
        git(repo.path(), &["status", "--porcelain"]),
        "",
        "working tree clean"
    );
    // The committed tree is the expected after/ tree.
    let committed: BTreeMap<_, _> = tree(repo.path())
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".git/"))
        .collect();
    let expected = tree(&fixture("flux-instance-oci-provider", "after"));
    let differing = differing_paths(&committed, &expected);
    assert!(differing.is_empty(), "differs from after/: {differing:?}");
}

#[test]
fn commit_refuses_a_dirty_file_and_writes_nothing() {
    let repo = git_repo_with("flux-instance-oci-provider");
    let instance =
        "k8s/providers/hetzner/infrastructure/controllers/flux-instance/flux-instance.yaml";
    repo.append(instance, "# local edit\n");
    let before = tree(repo.path());
    let run = fluxmend(["fix", "--commit", repo.path().to_str().unwrap()]);
    let err = &run.stderr;
    assert_eq!(run.code, 2, "{err}");
    assert!(
        err.contains("uncommitted changes") && err.contains(instance),
        "{err}"
    );
    assert_eq!(tree(repo.path()), before, "nothing written");
}

#[test]
fn a_flux_instance_helm_release_is_found_too() {
    let repo = TempRepo::empty();
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/prod\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    );
    repo.write(
        "clusters/prod/controllers.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: controllers\n  namespace: flux-system\nspec:\n  path: ./controllers\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  wait: true\n",
    );
    repo.write(
        "controllers/kustomization.yaml",
        "resources:\n  - operator.yaml\n  - instance/\n",
    );
    repo.write(
        "controllers/operator.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n",
    );
    repo.write(
        "controllers/instance/kustomization.yaml",
        "resources:\n  - release.yaml\n",
    );
    // The flux-instance chart, its source named through chartRef.
    repo.write(
        "controllers/instance/release.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: flux-instance\n  namespace: flux-system\nspec:\n  url: oci://ghcr.io/controlplaneio-fluxcd/charts/flux-instance\n---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: flux-instance\n  namespace: flux-system\nspec:\n  chartRef:\n    kind: OCIRepository\n    name: flux-instance\n  values:\n    instance:\n      sync:\n        kind: GitRepository\n        url: https://example.com/repo.git\n        path: clusters/prod\n",
    );
    let run = fluxmend(["check", repo.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 1);
    let report = run.json();
    let finding = &report["findings"][0];
    assert_eq!(finding["rule"], "FM001");
    assert_eq!(finding["object"]["kind"], "HelmRelease");
    assert_eq!(finding["layer"]["name"], "controllers");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("owns the root source GitRepository/flux-system/flux-system"),
        "{finding}"
    );
}

/// The app-folder layout: the instance's chart source and alert rule count as the instance's,
/// so its layer is dedicated and gets `wait: false`; a workload beside them (negative control)
/// makes the layer shared again, and the fix no longer drops the layer's wait.
#[test]
fn app_folder_companions_are_the_instances_and_a_workload_is_not() {
    let fix_description = |root: &Path| {
        let (finding, description) = first_finding_and_fix(root, "FM001");
        assert_eq!(finding["layer"]["name"], "flux-instance", "{finding}");
        description
    };
    let dedicated = fix_description(&fixture("fm001-app-folder", "before"));
    assert!(
        dedicated.starts_with("set wait: false on flux-system/flux-instance")
            && dedicated.contains("OCIRepository/flux-system/flux-instance")
            && dedicated.contains("PrometheusRule/flux-system/flux-instance-rules"),
        "{dedicated}"
    );
    let repo = TempRepo::copy_of(&fixture("fm001-app-folder", "before"));
    let app = "kubernetes/apps/flux-system/flux-instance/app";
    repo.write(
        &format!("{app}/dashboard.yaml"),
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: flux-dashboard\nspec:\n  selector:\n    matchLabels:\n      app: flux-dashboard\n  template:\n    metadata:\n      labels:\n        app: flux-dashboard\n    spec:\n      containers:\n        - name: ui\n          image: ghcr.io/example/flux-dashboard:1.0.0\n",
    )
    .append(&format!("{app}/kustomization.yaml"), "  - ./dashboard.yaml\n");
    let shared = fix_description(repo.path());
    assert!(!shared.starts_with("set wait: false"), "{shared}");
}

/// The settings of the old layer reach the new one, and a cluster overlay's patch of the old
/// layer by name is named as not carried; without that patch (negative control) nothing is
/// said to be left behind.
#[test]
fn carried_settings_and_what_is_not_carried_are_said() {
    let description = |root: &Path| {
        let (finding, description) = first_finding_and_fix(root, "FM001");
        assert!(!description.is_empty(), "a fix: {finding}");
        description
    };
    let with_overlay = description(&fixture("fm001-carried-settings", "before"));
    assert!(
        with_overlay.contains(
            "not carried: the patch at clusters/prod-eu/kustomization.yaml:10 of flux-system/infrastructure-controllers"
        ),
        "{with_overlay}"
    );
    let repo = TempRepo::copy_of(&fixture("fm001-carried-settings", "before"));
    let k = repo.read("clusters/prod-eu/kustomization.yaml");
    let cut = k.find("patches:").unwrap();
    repo.write("clusters/prod-eu/kustomization.yaml", &k[..cut]);
    let without_overlay = description(repo.path());
    assert!(
        !without_overlay.contains("not carried"),
        "{without_overlay}"
    );
    let new_layer = std::fs::read_to_string(
        fixture("fm001-carried-settings", "after").join("clusters/prod-eu/flux-instance.yaml"),
    )
    .unwrap();
    for setting in [
        "platform.example.net/tier: controllers",
        "platform.example.net/owner: team-platform",
        "serviceAccountName: kustomize-controller",
        "decryption:",
        "cluster_name: prod-eu",
        "commonMetadata:",
        "patches:",
        "force: false",
        "deletionPolicy: Orphan",
        "prune: false",
    ] {
        assert!(
            new_layer.contains(setting),
            "{setting} not carried:\n{new_layer}"
        );
    }
}

/// `spec.components` on the old layer: they may patch the instance and name paths relative to
/// the old path, which the move does not re-root, so the fix is refused and says why — while
/// the same layout without them is fixed (negative control).
#[test]
fn components_on_the_old_layer_are_refused_with_the_reason() {
    let repo = TempRepo::copy_of(&fixture("fm001-prune-off", "before"));
    let (_, plain) = repo.check_json(&["--rule", "FM001"]);
    assert!(plain["findings"][0]["rule"] == "FM001", "{plain}");
    let layer = "clusters/prod-eu/infrastructure-controllers.yaml";
    let text = repo.read(layer);
    repo.write(
        layer,
        text.replacen(
            "  path: ./infrastructure/controllers\n",
            "  path: ./infrastructure/controllers\n  components:\n    - ../components/tls\n",
            1,
        ),
    )
    .write(
        "infrastructure/components/tls/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations:\n  platform.example.net/tls: strict\n",
    );
    let before = fm001_fix_findings(&fixture("fm001-prune-off", "before"))[0].clone();
    assert!(before["fix"].is_object(), "{before}");
    let with_components = fm001_fix_findings(repo.path())[0].clone();
    assert!(with_components["fix"].is_null(), "{with_components}");
    let reason = with_components["no_fix_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("spec.components") && reason.contains(layer),
        "{reason}"
    );
}

/// A tree that applies its own namespace-less root (no FluxInstance sync, no namespaced
/// bootstrap Kustomization): the cycle is the root, with the namespace the layer applying it
/// gives it, and every layer is live, so FM001 is found. When the cycle does not close (the
/// root is no longer listed by the instance's layer; negative control), nothing is live and
/// nothing is claimed.
#[test]
fn a_bootstrap_cycle_is_the_root() {
    let live_layers = |root: &Path| {
        let graph = fluxmend(["graph", root.to_str().unwrap(), "--format", "json"]).json();
        let layers = graph["layers"].as_array().unwrap().clone();
        let live: Vec<String> = layers
            .iter()
            .filter(|l| l["live"] == true)
            .map(common::layer_id)
            .collect();
        (layers.len(), live, layers.first().cloned())
    };
    let (count, live, first) = live_layers(&fixture("fm001-bootstrap-cycle", "before"));
    assert_eq!(live.len(), count, "{live:?}");
    let root = first.unwrap();
    assert_eq!(
        (&root["namespace"], &root["name"], &root["applied_by"]),
        (
            &"flux-system".into(),
            &"flux-system".into(),
            &serde_json::Value::Null
        ),
        "{root}"
    );
    let (finding, _) = first_finding_and_fix(&fixture("fm001-bootstrap-cycle", "before"), "FM001");
    assert_eq!(finding["layer"]["name"], "flux-instance", "{finding}");

    let repo = TempRepo::copy_of(&fixture("fm001-bootstrap-cycle", "before"));
    let listing = "kubernetes/apps/flux-system/flux-instance/app/kustomization.yaml";
    repo.replace(listing, "  - ./ks.yaml\n", "");
    let (_, live, _) = live_layers(repo.path());
    assert!(live.is_empty(), "{live:?}");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        report["findings"].as_array().unwrap().is_empty(),
        "{report}"
    );
}

/// A move must be live: every layer a fix adds is applied by the same parent as the layer the
/// FluxInstance was gated by, and the instance is still applied by a live layer — asked of the
/// model, independent of the render gate. Returns how many layers the fix adds.
fn a_new_layer_is_applied_by_the_same_parent_as_the_old_one(case: &str) -> usize {
    use fluxmend::load::Repo;
    use fluxmend::model::Model;
    let mut moved = 0;
    let load = |stage: &str| Repo::load(&fixture(case, stage)).unwrap();
    let (before_repo, after_repo) = (load("before"), load("after"));
    let before = Model::build(&before_repo, &fluxmend::model::ModelOptions::default());
    let after = Model::build(&after_repo, &fluxmend::model::ModelOptions::default());
    let parent_of = |model: &Model, id: &str| {
        let (_, layer) = model
            .live_layers()
            .find(|(_, l)| l.id.to_string() == id)
            .unwrap_or_else(|| panic!("{case}: no live layer {id}"));
        layer.applied_by.map(|p| model.layer(p).id.to_string())
    };
    let old: Vec<String> = before.layers.iter().map(|l| l.id.to_string()).collect();
    let gated: Vec<String> = fluxmend::rules::run(&before, &["FM001".to_string()])
        .into_iter()
        .map(|f| format!("{}/{}", f.layer.namespace, f.layer.name))
        .collect();
    assert!(!gated.is_empty(), "{case}");
    for new in after
        .layers
        .iter()
        .filter(|l| !old.contains(&l.id.to_string()))
    {
        moved += 1;
        let new = new.id.to_string();
        let expected: Vec<_> = gated.iter().map(|g| parent_of(&before, g)).collect();
        assert!(
            expected.contains(&parent_of(&after, &new)),
            "{case}: {new} is applied by {:?}, the old layer by {expected:?}",
            parent_of(&after, &new)
        );
    }
    let instance_live = after.live_layers().any(|(_, l)| {
        l.inventory().any(|(_, r)| {
            after.is_flux_instance(r.object)
                || after
                    .helm_chart(r.object)
                    .is_some_and(|c| c == "flux-instance")
        })
    });
    assert!(instance_live, "{case}: no live layer applies the instance");
    moved
}

/// The check above is not vacuous (it was one loop that asserted some case adds a layer): the
/// incident's fix adds layers.
#[test]
fn a_case_adds_a_layer() {
    let moved =
        a_new_layer_is_applied_by_the_same_parent_as_the_old_one("flux-instance-oci-provider");
    assert!(moved > 0, "no layer added");
}

/// The instance's own layer is decided by who uses its objects: the layer that reads the
/// Secret of the layer's ExternalSecret depends on it, so it gets a healthChecks entry
/// (fm001-own-layer); once it no longer depends on the layer (negative control), the layer
/// serves more than the instance and the instance moves instead, saying why.
#[test]
fn an_object_a_layer_uses_without_depending_on_it_makes_the_layer_shared() {
    let own = first_finding_and_fix(&fixture("fm001-own-layer", "before"), "FM001").1;
    assert!(
        own.starts_with("set wait: false on flux-system/flux-instance")
            && own.contains(
                "ExternalSecret/flux-system/chat-webhook (used by flux-system/flux-alerts)"
            ),
        "{own}"
    );
    let repo = TempRepo::copy_of(&fixture("fm001-own-layer", "before"));
    repo.replace(
        "kubernetes/apps/flux-system/flux-alerts/ks.yaml",
        "  dependsOn:\n    - name: flux-instance\n      namespace: *namespace\n",
        "",
    );
    let shared = first_finding_and_fix(repo.path(), "FM001").1;
    assert!(
        !shared.starts_with("set wait: false")
            && shared.ends_with(
                "(not in place: ExternalSecret/flux-system/chat-webhook is used by flux-system/flux-alerts, which does not depend on flux-system/flux-instance)"
            ),
        "{shared}"
    );
}

/// A `healthChecks` list the layer already has (ignored while `wait` was true) is kept and read
/// from then on: the entry naming the instance goes, the others stay, the object a dependent
/// uses is added to it, and the fix says the kept entries now count.
#[test]
fn an_ignored_health_checks_list_is_kept_and_extended() {
    let repo = TempRepo::copy_of(&fixture("fm001-own-layer", "before"));
    let ks = "kubernetes/apps/flux-system/flux-instance/ks.yaml";
    let text = repo.read(ks);
    repo.replace(
        ks,
        "  timeout: 5m\n",
        "  timeout: 5m\n  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      name: flux-instance\n      namespace: flux-system\n    - apiVersion: external-secrets.io/v1\n      kind: ExternalSecret\n      name: webhook-token\n      namespace: flux-system\n",
    );
    let root = repo.path().to_str().unwrap();
    let run = fluxmend(["fix", "--write", root, "--rule", "FM001"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        unwrapped(&run.stderr)
            .contains("its other healthChecks entries (1), ignored while wait was true"),
        "{}",
        run.stderr
    );
    assert_eq!(
        repo.read(ks),
        text.replace(
            "  timeout: 5m\n",
            "  timeout: 5m\n  healthChecks:\n    - apiVersion: external-secrets.io/v1\n      kind: ExternalSecret\n      name: webhook-token\n      namespace: flux-system\n    - {apiVersion: external-secrets.io/v1, kind: ExternalSecret, name: chat-webhook, namespace: flux-system}\n",
        )
        .replace("wait: true #", "wait: false #")
    );
    let again = fluxmend(["fix", root, "--rule", "FM001"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, ""),
        "{}",
        again.stderr
    );
}

/// fm001-outside-path with a second cluster whose layer lists the same `../controllers`: moving
/// the instance out of that folder would change the other cluster's layer too, so no fix is
/// offered and the other layer is named. Without the second cluster (negative control) the move
/// is offered.
#[test]
fn a_folder_another_cluster_builds_is_not_edited() {
    let alone = fm001_fix_findings(&fixture("fm001-outside-path", "before"));
    assert!(alone[0]["fix"].is_object(), "{alone}");
    let repo = TempRepo::copy_of(&fixture("fm001-outside-path", "before"));
    let eu_to_us = |rel: &str| repo.read(rel).replace("prod-eu", "prod-us");
    let sync = eu_to_us("clusters/prod-eu/flux-system/gotk-sync.yaml");
    let layer = eu_to_us("clusters/prod-eu/infrastructure-controllers.yaml");
    let overlay = repo.read("infrastructure/prod-eu/kustomization.yaml");
    repo.write("clusters/prod-us/flux-system/gotk-sync.yaml", sync)
        .write(
            "clusters/prod-us/flux-system/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- gotk-sync.yaml\n",
        )
        .write("clusters/prod-us/infrastructure-controllers.yaml", layer)
        .write("infrastructure/prod-us/kustomization.yaml", overlay);
    let shared = fm001_fix_findings(repo.path());
    assert_eq!(shared.as_array().map(Vec::len), Some(2), "{shared}");
    for finding in shared.as_array().unwrap() {
        assert!(finding["fix"].is_null(), "{finding}");
        let reason = finding["no_fix_reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("infrastructure/controllers/flux-operator.yaml is also built by")
                && reason.contains("would change that layer too"),
            "{reason}"
        );
    }
}
