//! FM002 end to end on the fixture repositories: the finding and diff (snapshots), the written
//! result equals `after/` byte for byte, negative control (and a clean repository with no
//! finding), idempotence, render equivalence with `kubectl kustomize` (content, namespace and
//! labels included, every object exactly once), and — asked of the model after the rewrite — a
//! failing moved workload blocks no layer and masks no other object. Then the rule's edges on
//! small repositories: the catalogue and its extension, healthChecks gating, folders that move
//! whole, transformers carried over, and the fixes it refuses.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Deref;
use std::path::Path;

use crate::common::{
    self, Run, TempRepo, assert_fix_writes_after_tree, command_args, first_finding_and_fix,
    fix_runs, fixture, fluxmend, kubectl_kustomize, strip_protection,
};
use fluxmend::load::Repo;
use fluxmend::model::{Model, ObjectKey};
use fluxmend::rules::disposable::Analysis;
use fluxmend::verify::kustomize::generated_resources;
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

per_case! {
    [
        findings_and_diffs_match_snapshots,
        written_result_equals_after_tree_and_converges,
        kubectl_renders_every_object_once_with_the_same_content_before_and_after,
        after_the_rewrite_a_failing_runner_blocks_nothing_and_masks_nothing,
        the_new_layer_is_applied_by_the_same_parent_as_the_old_one,
    ]
    forgejo_runners_in_apps => "forgejo-runners-in-apps",
    fm002_helm_runners => "fm002-helm-runners",
    fm002_generated => "fm002-generated",
    fm002_runners_folder => "fm002-runners-folder",
    fm002_components => "fm002-components",
    fm002_outer_components => "fm002-outer-components",
    fm002_ks_layout => "fm002-ks-layout",
}

fn findings_and_diffs_match_snapshots(case: &str) {
    for (suffix, run) in fix_runs(case, &["--rule", "FM002"]) {
        insta::assert_snapshot!(format!("{case}{suffix}-report"), run.stderr);
        insta::assert_snapshot!(format!("{case}{suffix}-diff"), run.stdout);
    }
}

fn written_result_equals_after_tree_and_converges(case: &str) {
    assert_fix_writes_after_tree(case, "FM002", &[]);
}

#[test]
fn a_clean_repository_has_no_finding_and_nothing_to_fix() {
    let root = fixture("fm002-clean", "before");
    let root = root.to_str().unwrap();
    let check = fluxmend(["check", root]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert!(!check.stdout.contains("[FM002]"), "{}", check.stdout);
    let fix = fluxmend(["fix", root]);
    assert_eq!((fix.code, fix.stdout.as_str()), (0, ""), "{}", fix.stderr);
    // Its runners are disposable; they simply live in a layer that gates nothing.
    let repo = Repo::load(Path::new(root)).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut analysis = Analysis::new(&model);
    let runners: Vec<String> = model
        .objects
        .indices()
        .filter(|&i| analysis.disposable(i).is_some())
        .map(|i| model.object(i).key.name.to_string())
        .collect();
    assert_eq!(runners, ["forgejo-runner", "forgejo-runner-host"]);
}

#[test]
fn a_dedicated_runner_layer_has_no_finding_and_nothing_to_fix() {
    let root = fixture("fm002-dedicated-runners", "before");
    let check = fluxmend(["check", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert_eq!(check.json()["findings"], serde_json::json!([]));
    let fix = fluxmend(["fix", root.to_str().unwrap()]);
    assert_eq!((fix.code, fix.stdout.as_str()), (0, ""), "{}", fix.stderr);
    // The runner is gated, and everything else the layer applies is the runner's: what
    // produces or grants what it uses, or its Namespace.
    let repo = Repo::load(&root).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut analysis = Analysis::new(&model);
    let (id, layer) = model
        .live_layers()
        .find(|(_, l)| l.id.name == "forgejo-runner")
        .unwrap();
    let bundle = analysis.bundle(id, 0);
    assert_eq!(bundle.gated.len(), 1);
    assert!(bundle.staying.is_empty(), "{:?}", bundle.staying);
    let mut moved: Vec<String> = layer.variants[0]
        .inventory
        .iter()
        .filter(|r| bundle.moved.contains(&r.object))
        .map(|r| format!("{} {}", r.key.api_version, r.key.kind))
        .collect();
    moved.sort();
    assert_eq!(
        moved,
        [
            "bitnami.com/v1alpha1 SealedSecret",
            "cert-manager.io/v1 Certificate",
            "external-secrets.io/v1 ExternalSecret",
            "helm.toolkit.fluxcd.io/v2 HelmRelease",
            "rbac.authorization.k8s.io/v1 Role",
            "rbac.authorization.k8s.io/v1 RoleBinding",
            "source.toolkit.fluxcd.io/v1 HelmRepository",
            "talos.dev/v1alpha1 ServiceAccount",
            "v1 ConfigMap",
            "v1 ServiceAccount",
        ]
    );
}

#[test]
fn what_the_runner_does_not_own_is_still_masked_and_named_with_its_group() {
    let repo = TempRepo::copy_of(&fixture("fm002-dedicated-runners", "before"));
    let dir = repo.path().join("apps/forgejo-runner");
    let kustomization = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
    // The generated ConfigMap becomes a plain one (a split does not carry generators over).
    let generator = "configMapGenerator:\n  - name: forgejo-runner-config\n    namespace: forgejo-runner\n    files:\n      - config.yaml\ngeneratorOptions:\n  disableNameSuffixHash: true\n";
    assert!(kustomization.contains(generator));
    std::fs::write(
        dir.join("kustomization.yaml"),
        kustomization.replace(generator, "").replace(
            "  - talos-serviceaccount.yaml\n",
            "  - talos-serviceaccount.yaml\n  - config.yaml\n  - web.yaml\n",
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: forgejo-runner-config\n  namespace: forgejo-runner\ndata:\n  config.yaml: |\n    log: {level: info}\n",
    )
    .unwrap();
    // An app that also mounts the Talos Secret: the talos.dev ServiceAccount is shared now.
    std::fs::write(
        dir.join("web.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: forgejo-runner\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n      volumes:\n        - name: talosconfig\n          secret:\n            secretName: forgejo-runner-talos\n",
    )
    .unwrap();
    // The layer prunes: phase 1 protects what moves, then the move is planned.
    let first = fluxmend(command_args(
        "fix",
        repo.path(),
        &["--rule", "FM002", "--write"],
    ));
    assert!(first.stderr.contains("phase 1 of 2"), "{}", first.stderr);
    let plan = fluxmend(command_args(
        "fix",
        repo.path(),
        &["--rule", "FM002", "--format", "json"],
    ))
    .json();
    let findings = plan["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{plan:#}");
    let f = &findings[0];
    // The Deployment, the talos.dev ServiceAccount it shares and the Namespace they share stay.
    assert_eq!(f["masked_objects"], 3, "{f:#}");
    let fix = f["fix"]["description"].as_str().unwrap();
    assert!(
        fix.contains("ServiceAccount.talos.dev/forgejo-runner/forgejo-runner-talos"),
        "{fix}"
    );
    assert!(!fix.contains("ServiceAccount/forgejo-runner/"), "{fix}");
}

#[test]
fn the_new_layer_carries_the_old_layers_settings_with_one_dependson() {
    let old = std::fs::read_to_string(
        fixture("fm002-runners-folder", "before").join("clusters/homelab/forgejo.yaml"),
    )
    .unwrap();
    let new = std::fs::read_to_string(
        fixture("fm002-runners-folder", "after").join("clusters/homelab/forgejo-runners.yaml"),
    )
    .unwrap();
    assert!(
        old.find("  wait: true").unwrap() < old.find("  dependsOn:").unwrap(),
        "the old layer lists wait before dependsOn"
    );
    assert_eq!(new.matches("dependsOn:").count(), 1, "{new}");
    for carried in [
        "  labels:\n    toolkit.fluxcd.io/tenant: platform\n",
        "  annotations:\n    homelab.example.org/owner: \"platform team\"\n",
        "  prune: false\n",
        "  suspend: false\n",
        "  healthCheckExprs:\n    - apiVersion: external-secrets.io/v1\n",
        "  timeout: 5m\n",
    ] {
        assert!(new.contains(carried), "{carried:?} not carried:\n{new}");
    }
    // The runners' folder is the new path; nothing was renamed or moved.
    assert!(new.contains("  path: ./apps/forgejo/runners\n"), "{new}");
    let after = fixture("fm002-runners-folder", "after");
    assert!(!after.join("apps/forgejo/runners-2").exists());
    for f in [
        "ocirepository.yaml",
        "tekton-runner.yaml",
        "externalsecret.yaml",
    ] {
        assert_eq!(
            std::fs::read(after.join("apps/forgejo/runners").join(f)).unwrap(),
            std::fs::read(
                fixture("fm002-runners-folder", "before")
                    .join("apps/forgejo/runners")
                    .join(f)
            )
            .unwrap(),
            "{f}"
        );
    }
}

/// The documents Flux applies for every live layer, built the way Flux builds them: the
/// kustomization it generates where the path has none, `targetNamespace`, `namePrefix`,
/// `nameSuffix` written into the kustomization, `commonMetadata` set on every object. Each
/// document (canonical YAML) maps to the layers that apply it; Flux Kustomizations are left out.
fn flux_builds(root: &Path) -> BTreeMap<String, Vec<String>> {
    let graph = fluxmend(["graph", root.to_str().unwrap(), "--format", "json"]).json();
    let repo = Repo::load(root).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for layer in graph["layers"].as_array().unwrap() {
        if !layer["live"].as_bool().unwrap() {
            continue;
        }
        let name = layer["name"].as_str().unwrap();
        let spec = layer_spec(&model, layer["namespace"].as_str().unwrap(), name);
        for variant in layer["variants"].as_array().unwrap() {
            let tmp = TempRepo::copy_of(root);
            let dir = tmp.path().join(variant["dir"].as_str().unwrap());
            let file = dir.join("kustomization.yaml");
            let mut k = if variant["generated"].as_bool().unwrap() {
                let mut h = Hash::new();
                h.insert(
                    Yaml::from_str("apiVersion"),
                    Yaml::from_str("kustomize.config.k8s.io/v1beta1"),
                );
                h.insert(Yaml::from_str("kind"), Yaml::from_str("Kustomization"));
                h.insert(
                    Yaml::from_str("resources"),
                    Yaml::Array(
                        generated_resources(&dir)
                            .into_iter()
                            .map(Yaml::String)
                            .collect(),
                    ),
                );
                h
            } else {
                let text = std::fs::read_to_string(&file).unwrap();
                match YamlLoader::load_from_str(&text).unwrap().remove(0) {
                    Yaml::Hash(h) => h,
                    other => panic!("{other:?}"),
                }
            };
            for (flux, kustomize) in [
                ("targetNamespace", "namespace"),
                ("namePrefix", "namePrefix"),
                ("nameSuffix", "nameSuffix"),
            ] {
                if let Some(v) = spec[flux].as_str() {
                    k.insert(Yaml::from_str(kustomize), Yaml::String(v.into()));
                }
            }
            let mut text = String::new();
            YamlEmitter::new(&mut text).dump(&Yaml::Hash(k)).unwrap();
            std::fs::write(&file, text).unwrap();
            for mut doc in YamlLoader::load_from_str(&kubectl_kustomize(&dir)).unwrap() {
                if doc["kind"].as_str() == Some("Kustomization")
                    && doc["apiVersion"]
                        .as_str()
                        .is_some_and(|a| a.starts_with("kustomize.toolkit.fluxcd.io/"))
                {
                    continue;
                }
                for (what, key) in [("labels", "labels"), ("annotations", "annotations")] {
                    if let Some(add) = spec["commonMetadata"][what].as_object() {
                        set_metadata(&mut doc, key, add);
                    }
                }
                let mut s = String::new();
                YamlEmitter::new(&mut s).dump(&doc).unwrap();
                out.entry(s).or_default().push(name.to_string());
            }
        }
    }
    out
}

/// A Flux Kustomization's spec as JSON.
fn layer_spec(model: &Model, namespace: &str, name: &str) -> serde_json::Value {
    let layer = model
        .layers
        .iter()
        .find(|l| l.id.namespace == namespace && l.id.name == name && l.live)
        .unwrap();
    let Some(obj) = layer.object.map(|o| model.object(o)) else {
        return serde_json::Value::Null;
    };
    let yaml = &model.repo.file(obj.file).yaml;
    let text = yaml.slice(yaml.node(obj.root).span).to_string();
    let doc = YamlLoader::load_from_str(&text).unwrap().remove(0);
    yaml_to_json(&doc["spec"])
}

fn yaml_to_json(y: &Yaml) -> serde_json::Value {
    match y {
        Yaml::Hash(h) => serde_json::Value::Object(
            h.iter()
                .map(|(k, v)| (k.as_str().unwrap_or_default().to_string(), yaml_to_json(v)))
                .collect(),
        ),
        Yaml::Array(a) => serde_json::Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::String(s) | Yaml::Real(s) => serde_json::Value::String(s.clone()),
        Yaml::Integer(i) => serde_json::Value::String(i.to_string()),
        Yaml::Boolean(b) => serde_json::Value::Bool(*b),
        _ => serde_json::Value::Null,
    }
}

fn set_metadata(doc: &mut Yaml, key: &str, add: &serde_json::Map<String, serde_json::Value>) {
    let Yaml::Hash(root) = doc else { return };
    let meta = root
        .entry(Yaml::from_str("metadata"))
        .or_insert_with(|| Yaml::Hash(Hash::new()));
    let Yaml::Hash(meta) = meta else { return };
    let map = meta
        .entry(Yaml::from_str(key))
        .or_insert_with(|| Yaml::Hash(Hash::new()));
    let Yaml::Hash(map) = map else { return };
    for (k, v) in add {
        map.insert(
            Yaml::String(k.clone()),
            Yaml::String(v.as_str().unwrap_or_default().to_string()),
        );
    }
}

fn kubectl_renders_every_object_once_with_the_same_content_before_and_after(case: &str) {
    // The one change a phased move makes to an object is its prune: disabled annotation:
    // compared without it.
    let builds = |stage| -> BTreeMap<String, Vec<String>> {
        flux_builds(&fixture(case, stage))
            .into_iter()
            .map(|(doc, layers)| (strip_protection(&doc), layers))
            .collect()
    };
    let (before, after) = (builds("before"), builds("after"));
    assert!(before.len() > 10, "{case}: rendered too little to compare");
    for (side, builds) in [("before", &before), ("after", &after)] {
        let twice: Vec<_> = builds.iter().filter(|(_, l)| l.len() != 1).collect();
        assert!(
            twice.is_empty(),
            "{case} {side}: rendered more than once: {twice:?}"
        );
    }
    let docs = |b: &BTreeMap<String, Vec<String>>| b.keys().cloned().collect::<BTreeSet<_>>();
    assert_eq!(
        docs(&before),
        docs(&after),
        "{case}: objects rendered differ"
    );
    // Only the disposable bundle changed layer, and it now comes from the new layer.
    let moved: Vec<(&String, &String, &String)> = before
        .iter()
        .filter(|&(doc, l)| after[doc] != *l)
        .map(|(doc, l)| (doc, &l[0], &after[doc][0]))
        .collect();
    assert!(!moved.is_empty(), "{case}: nothing moved");
    for (doc, from, to) in moved {
        assert!(
            to.starts_with(&format!("{from}-runners")),
            "{case}: moved from {from} to {to}:\n{doc}"
        );
    }
}

/// (layer name, object) of every FM002 finding of the model of `root`.
fn fm002_findings(root: &Path) -> Vec<(String, ObjectKey)> {
    let repo = Repo::load(root).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    fluxmend::rules::run(&model, &["FM002".to_string()])
        .into_iter()
        .map(|f| (f.layer.name.to_string(), f.object))
        .collect()
}

fn after_the_rewrite_a_failing_runner_blocks_nothing_and_masks_nothing(case: &str) {
    let gated_before = fm002_findings(&fixture(case, "before"));
    assert!(!gated_before.is_empty(), "{case}");
    let repo = Repo::load(&fixture(case, "after")).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut analysis = Analysis::new(&model);
    for (old_layer, key) in &gated_before {
        // Every layer that would turn red when this workload fails.
        let mut gating = Vec::new();
        for (id, layer) in model.live_layers() {
            for (vi, v) in layer.variants.iter().enumerate() {
                if v.inventory
                    .iter()
                    .any(|r| r.key == *key && layer.gates(&r.key))
                {
                    gating.push((id, vi));
                }
            }
        }
        assert!(
            !gating.is_empty(),
            "{case}: {key} is gated by no layer: its health is visible nowhere"
        );
        for (id, vi) in gating {
            let layer = model.layer(id);
            assert_ne!(&layer.id.name, old_layer, "{case}: {key}");
            let blocked: Vec<String> = model
                .dependents(id)
                .iter()
                .map(|&d| model.layer(d).id.to_string())
                .collect();
            assert!(
                blocked.is_empty(),
                "{case}: {key} in {} blocks {blocked:?}",
                layer.id
            );
            let bundle = analysis.bundle(id, vi);
            let masked: Vec<String> = bundle
                .staying
                .iter()
                .map(|&i| layer.variants[vi].inventory[i].key.to_string())
                .collect();
            assert!(
                masked.is_empty(),
                "{case}: {key} in {} masks {masked:?}",
                layer.id
            );
        }
    }
}

/// A move must be live: after the rewrite, every new layer is applied by the same parent layer as
/// the one it was split from (asked of the model, independent of the render gate), and the
/// old layer is still applied there.
fn the_new_layer_is_applied_by_the_same_parent_as_the_old_one(case: &str) {
    let old: BTreeSet<String> = fm002_findings(&fixture(case, "before"))
        .into_iter()
        .map(|(layer, _)| layer)
        .collect();
    let repo = Repo::load(&fixture(case, "after")).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let parent = |name: &str| {
        let (_, layer) = model
            .live_layers()
            .find(|(_, l)| l.id.name == name)
            .unwrap_or_else(|| panic!("{case}: no live layer {name}"));
        layer.applied_by.map(|p| model.layer(p).id.to_string())
    };
    for name in &old {
        let new = format!("{name}-runners");
        assert!(parent(name).is_some(), "{case}: {name} has no parent");
        assert_eq!(parent(&new), parent(name), "{case}: {new} vs {name}");
    }
}

// ---------------------------------------------------------------------------------------------
// Edges, on small repositories.

/// A throw-away repository: bootstrap `clusters/test` (generated) plus whatever the test writes.
struct Repo2(TempRepo);

impl Deref for Repo2 {
    type Target = TempRepo;

    fn deref(&self) -> &TempRepo {
        &self.0
    }
}

impl Repo2 {
    fn new() -> Repo2 {
        let r = Repo2(TempRepo::empty());
        r.write(
            "clusters/test/flux-system/gotk-sync.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: https://example.com/repo.git\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  path: ./clusters/test\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        );
        r
    }

    /// A Flux Kustomization `name` with `path`, `wait` and extra spec lines.
    fn layer(&self, name: &str, path: &str, extra: &str) -> &Repo2 {
        self.write(
            &format!("clusters/test/{name}.yaml"),
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  path: {path}\n  prune: true\n{extra}"
            ),
        );
        self
    }

    /// `fluxmend COMMAND PATH REST… --rule FM002`.
    fn fm002(&self, command: &str, rest: &[&str]) -> Run {
        fluxmend(command_args(
            command,
            self.path(),
            &[rest, &["--rule", "FM002"]].concat(),
        ))
    }

    fn check(&self) -> serde_json::Value {
        self.fm002("check", &["--format", "json"]).json()
    }

    fn fix(&self) -> serde_json::Value {
        self.fm002("fix", &["--format", "json"]).json()
    }

    /// The plan of the move itself: phase 1 (protecting what moves off a pruning layer) is
    /// written first when that is what `fix` offers.
    fn move_plan(&self) -> serde_json::Value {
        let plan = self.fix();
        if plan["findings"][0]["fix"]["phase"] != 1 {
            return plan;
        }
        let run = self.fm002("fix", &["--write"]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        self.fix()
    }

    /// Write the fix; a phased one (off a pruning layer) is written phase after phase, and the
    /// report of the last is returned.
    fn write_fix(&self) -> String {
        loop {
            let run = self.fm002("fix", &["--write"]);
            let report = run.stderr;
            assert_eq!(run.code, 1, "{report}");
            assert!(report.contains("written; verified: builtin"), "{report}");
            if !report.contains("phase 1 of 2") {
                return report;
            }
        }
    }
}

const NAMESPACE_CI: &str = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ci\n";
const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: nginx:1.27\n";

fn deployment(name: &str, image: &str, extra_meta: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n{extra_meta}spec:\n  selector:\n    matchLabels: {{app: {name}}}\n  template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: main\n          image: {image}\n"
    )
}

fn objects(report: &serde_json::Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["object"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_name_is_not_enough_the_catalogue_and_the_opt_in_label_are() {
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - namespace.yaml\n  - web.yaml\n  - named-runner.yaml\n  - batch.yaml\n  - exempt.yaml\n  - woodpecker.yaml\n",
        )
        .write("apps/namespace.yaml", NAMESPACE_CI)
        .write("apps/web.yaml", WEB)
        // "runner" in the name only: not disposable.
        .write("apps/named-runner.yaml", deployment("test-runner", "nginx:1.27", ""))
        // Opted in by label.
        .write(
            "apps/batch.yaml",
            deployment("nightly", "busybox:1", "  labels:\n    fluxmend.io/disposable: \"true\"\n"),
        )
        // A runner image, opted out by annotation.
        .write(
            "apps/exempt.yaml",
            deployment(
                "release-runner",
                "gitea/act_runner:0.2.11",
                "  annotations:\n    fluxmend.io/disposable: \"false\"\n",
            ),
        )
        .write(
            "apps/woodpecker.yaml",
            deployment("agent", "docker.io/woodpeckerci/woodpecker-agent:v3", ""),
        );
    let report = repo.check();
    assert_eq!(objects(&report), ["nightly", "agent"], "{report:#}");
    let messages: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains("label fluxmend.io/disposable: \"true\""),
        "{}",
        messages[0]
    );
    assert!(
        messages[1].contains("Woodpecker CI agent"),
        "{}",
        messages[1]
    );
    assert_eq!(report["findings"][0]["severity"], "warning");
}

#[test]
fn the_repository_catalogue_extends_the_builtin_one_and_its_errors_are_reported() {
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write("apps/kustomization.yaml", "resources:\n  - web.yaml\n  - agent.yaml\n")
        .write("apps/web.yaml", WEB)
        .write("apps/agent.yaml", deployment("agent", "registry.example.com/ci/agent:7", ""))
        .write(
            ".fluxmend.yaml",
            "disposable:\n  images:\n    - reason: in-house build agent\n      match: registry.example.com/ci/agent\n",
        );
    let report = repo.check();
    assert_eq!(objects(&report), ["agent"], "{report:#}");
    assert!(
        report["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("in-house build agent")
    );
    repo.write(
        ".fluxmend.yaml",
        "disposable:\n  images:\n    - match: registry.example.com/ci/agent\n",
    );
    let report = repo.check();
    // A diagnostic of the configuration file, not a finding.
    let error =
        common::find_diagnostic(&report, ".fluxmend.yaml", "every matcher needs a `reason`");
    assert_eq!(error["line"], 3);
    assert_eq!(error["column"], 7);
    assert_eq!(error["severity"], "error");
    // The built-in catalogue alone does not know the agent: nothing is found.
    assert!(objects(&report).is_empty(), "{report:#}");
}

#[test]
fn a_healthchecks_gate_moves_the_runner_and_drops_its_entry() {
    let repo = Repo2::new();
    repo.layer(
        "apps",
        "./apps",
        "  healthChecks:\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: web\n      namespace: ci\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: runner\n      namespace: ci\n",
    )
    .layer("later", "./later", "  dependsOn:\n    - name: apps\n")
    .write("later/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  namespace: ci\n")
    .write(
        "apps/kustomization.yaml",
        "namespace: ci\nresources:\n  - namespace.yaml\n  - web.yaml\n  - runner.yaml\n",
    )
    .write("apps/namespace.yaml", NAMESPACE_CI)
    .write("apps/web.yaml", WEB)
    .write(
        "apps/runner.yaml",
        deployment("runner", "ghcr.io/actions/actions-runner:2.327.1", ""),
    );
    let report = repo.check();
    assert_eq!(objects(&report), ["runner"]);
    let f = &report["findings"][0];
    assert_eq!(f["severity"], "error", "it blocks `later`");
    assert_eq!(f["blocked_layers"][0]["name"], "later");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("(its healthChecks)")
    );
    repo.write_fix();
    let apps = repo.read("clusters/test/apps.yaml");
    assert!(
        apps.contains("name: web") && !apps.contains("name: runner"),
        "{apps}"
    );
    let new = repo.read("clusters/test/apps-runners.yaml");
    assert!(
        new.contains("  wait: true\n") && new.contains("  path: ./apps/runners\n"),
        "{new}"
    );
    assert!(
        new.contains("  dependsOn:\n    - name: apps\n"),
        "it needs the ci Namespace:\n{new}"
    );
    assert_eq!(
        repo.read("apps/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps by fluxmend FM002; applied by the Flux Kustomization apps-runners.\nnamespace: ci\nresources:\n  - runner.yaml\n"
    );
    assert_eq!(repo.check()["findings"], serde_json::json!([]));
}

#[test]
fn a_folder_of_runners_is_wrapped_with_the_outer_transformers_and_left_as_it_is() {
    let repo = Repo2::new();
    let runners_kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nlabels:\n  - pairs:\n      app.kubernetes.io/part-of: ci\nresources:\n  - runner.yaml\n";
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "namespace: forgejo\ncommonLabels:\n  team: platform\nresources:\n  - namespace.yaml\n  - server.yaml\n  - ci-runners/\n",
        )
        .write("apps/namespace.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: forgejo\n")
        .write("apps/server.yaml", WEB)
        .write("apps/ci-runners/kustomization.yaml", runners_kustomization)
        .write(
            "apps/ci-runners/runner.yaml",
            deployment("runner", "code.forgejo.org/forgejo/runner:11", ""),
        );
    assert!(repo.write_fix().contains("builtin + kustomize"));
    assert_eq!(
        repo.read("apps/kustomization.yaml"),
        "namespace: forgejo\ncommonLabels:\n  team: platform\nresources:\n  - namespace.yaml\n  - server.yaml\n"
    );
    assert_eq!(
        repo.read("apps/ci-runners/kustomization.yaml"),
        runners_kustomization
    );
    assert_eq!(
        repo.read("apps/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps by fluxmend FM002; applied by the Flux Kustomization apps-runners.\nnamespace: forgejo\ncommonLabels:\n  team: platform\nresources:\n  - ../ci-runners\n"
    );
    assert!(
        repo.read("clusters/test/apps-runners.yaml")
            .contains("  path: ./apps/runners\n")
    );
    // With nothing to carry over, the folder itself is the new path.
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - server.yaml\n  - ci-runners/\n",
        )
        .write("apps/server.yaml", WEB)
        .write("apps/ci-runners/kustomization.yaml", runners_kustomization)
        .write(
            "apps/ci-runners/runner.yaml",
            deployment("runner", "buildkite/agent:3", ""),
        );
    repo.write_fix();
    assert!(
        repo.read("clusters/test/apps-runners.yaml")
            .contains("  path: ./apps/ci-runners\n")
    );
    assert!(!repo.path().join("apps/runners").exists());
}

#[test]
fn a_folder_of_runners_inside_a_generated_path_moves_out_whole() {
    let repo = Repo2::new();
    let runner_kustomization = "namespace: team-a\nresources:\n  - ../../base/runner\n";
    repo.layer("apps", "./apps/cluster-a", "  wait: true\n")
        .write("apps/cluster-a/web.yaml", WEB)
        .write(
            "apps/cluster-a/runner/kustomization.yaml",
            runner_kustomization,
        )
        .write(
            "apps/base/runner/kustomization.yaml",
            "resources:\n  - runner.yaml\n",
        )
        .write(
            "apps/base/runner/runner.yaml",
            deployment("runner", "drone/drone-runner-kube:latest", ""),
        );
    assert!(repo.write_fix().contains("builtin + kustomize"));
    assert!(
        !repo
            .path()
            .join("apps/cluster-a/runner/kustomization.yaml")
            .exists()
    );
    assert_eq!(
        repo.read("apps/cluster-a-runners/runner/kustomization.yaml"),
        runner_kustomization
    );
    let new = repo.read("clusters/test/apps-runners.yaml");
    assert!(
        new.contains("  path: ./apps/cluster-a-runners/runner\n"),
        "{new}"
    );
    assert!(
        !new.contains("dependsOn"),
        "it needs nothing of apps:\n{new}"
    );
}

#[test]
fn transformers_of_several_levels_are_merged_into_the_new_kustomization() {
    let repo = Repo2::new();
    repo.layer("apps", "./apps/prod", "  wait: true\n")
        .write(
            "apps/prod/kustomization.yaml",
            "resources:\n  - ../base\ncommonAnnotations:\n  owner: ops\nlabels:\n  - pairs:\n      env: prod\n",
        )
        .write(
            "apps/base/kustomization.yaml",
            "namespace: ci\nnamePrefix: ci-\nlabels:\n  - pairs:\n      tier: build\n    includeSelectors: true\nresources:\n  - namespace.yaml\n  - web.yaml\n  - runner.yaml\n",
        )
        .write("apps/base/namespace.yaml", NAMESPACE_CI)
        .write("apps/base/web.yaml", WEB)
        .write(
            "apps/base/runner.yaml",
            deployment("runner", "gitlab/gitlab-runner:alpine", ""),
        );
    let report = repo.write_fix();
    assert!(report.contains("builtin + kustomize"), "{report}");
    assert_eq!(
        repo.read("apps/base/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps/base by fluxmend FM002; applied by the Flux Kustomization apps-runners.\nnamespace: ci\nnamePrefix: ci-\nlabels:\n  - pairs:\n      env: prod\n  - pairs:\n      tier: build\n    includeSelectors: true\ncommonAnnotations:\n  owner: ops\nresources:\n  - runner.yaml\n"
    );
}

/// The fix each repository gets refused, and why.
fn refusal(repo: &Repo2) -> String {
    let plan = repo.fix();
    assert_eq!(plan["files"], serde_json::json!([]), "{plan:#}");
    plan["findings"][0]["no_fix_reason"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn what_cannot_be_carried_over_exactly_is_refused_with_the_reason() {
    let base = |kustomization: &str| {
        let repo = Repo2::new();
        repo.layer("apps", "./apps/prod", "  wait: true\n")
            .write("apps/prod/kustomization.yaml", kustomization)
            .write(
                "apps/base/kustomization.yaml",
                "namespace: ci\nresources:\n  - namespace.yaml\n  - web.yaml\n  - runner.yaml\n",
            )
            .write("apps/base/namespace.yaml", NAMESPACE_CI)
            .write("apps/base/web.yaml", WEB)
            .write(
                "apps/base/runner.yaml",
                deployment("runner", "jenkins/inbound-agent:3", ""),
            );
        repo
    };
    // A patch of an outer kustomization that targets the runner.
    let repo = base(
        "resources:\n  - ../base\npatches:\n  - target:\n      kind: Deployment\n      name: runner\n    patch: |\n      - op: add\n        path: /spec/replicas\n        value: 2\n",
    );
    let reason = refusal(&repo);
    assert!(
        reason
            .contains("apps/prod/kustomization.yaml:4: a patch that may target the moved objects"),
        "{reason}"
    );
    // A patch that targets something else is no obstacle.
    let repo = base(
        "resources:\n  - ../base\npatches:\n  - target:\n      kind: Deployment\n      name: (web|api)\n    patch: |\n      - op: add\n        path: /spec/replicas\n        value: 2\n",
    );
    assert!(repo.write_fix().contains("builtin + kustomize"));
    // Replacements may touch anything.
    let repo = base("resources:\n  - ../base\nreplacements:\n  - path: r.yaml\n");
    repo.write(
        "apps/prod/r.yaml",
        "source: {kind: Deployment, name: web}\ntargets: []\n",
    );
    assert!(refusal(&repo).contains("`replacements` may change the moved objects"));
    // A name prefix rewrites references: a runner naming a Secret that stays cannot move.
    let repo = base("resources:\n  - ../base\nnamePrefix: prod-\n");
    repo.write(
        "apps/base/runner.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\nspec:\n  template:\n    spec:\n      containers:\n        - name: r\n          image: jenkins/inbound-agent:3\n          envFrom: [{secretRef: {name: shared}}]\n",
    )
    .write(
        "apps/base/web.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: shared\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: w\n          image: nginx\n          envFrom: [{secretRef: {name: shared}}]\n",
    );
    let reason = refusal(&repo);
    assert!(
        reason.contains("Deployment/ci/prod-runner names Secret/ci/prod-shared across the split"),
        "{reason}"
    );
    // A base another layer builds too.
    let repo = base("resources:\n  - ../base\n");
    repo.layer("staging", "./apps/base", "");
    assert!(
        refusal(&repo).contains("is also built by flux-system/staging"),
        "{}",
        refusal(&repo)
    );
}

/// Negative control of the edge removal: a dependent that uses what the runner layer applies
/// (a ServiceMonitor selecting what the runner's release creates) keeps its edge, and the reason
/// says what it uses.
#[test]
fn a_runner_only_layer_whose_dependents_use_its_objects_keeps_the_edge() {
    let repo = Repo2::new();
    repo.layer("runners", "./runners", "  wait: true\n")
        .layer("monitoring", "./monitoring", "  dependsOn:\n    - name: runners\n")
        .write(
            "monitoring/runner-metrics.yaml",
            "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n  name: runner-metrics\n  namespace: monitoring\nspec:\n  namespaceSelector:\n    matchNames: [ci]\n  selector:\n    matchLabels:\n      app: gitlab-runner\n  endpoints:\n    - port: metrics\n",
        )
        .write("runners/namespace.yaml", NAMESPACE_CI)
        .write(
            "runners/runner.yaml",
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: gitlab-runner\n  namespace: ci\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: gitlab-runner\n      sourceRef:\n        kind: HelmRepository\n        name: gitlab\n        namespace: flux-system\n  values:\n    metrics:\n      enabled: true\n",
        );
    let plan = repo.fix();
    assert_eq!(plan["files"], serde_json::json!([]), "{plan:#}");
    let f = &plan["findings"][0];
    assert_eq!(f["severity"], "error");
    assert_eq!(f["masked_objects"], 0);
    assert_eq!(
        f["no_fix_reason"],
        "flux-system/runners holds only disposable workloads and what they use, so there is nothing to split out, and what depends on it needs its objects (flux-system/monitoring uses HelmRelease/ci/gitlab-runner (names what the release creates)): keep the dependsOn, or move what is needed out of the runner layer",
        "{f:#}"
    );
    // Without the dependent it is the safe end state.
    repo.layer("monitoring", "./monitoring", "");
    assert_eq!(repo.check()["findings"], serde_json::json!([]));
}

#[test]
fn line_endings_and_bom_are_kept_in_split_and_new_files() {
    let repo = Repo2::new();
    let crlf = |t: &str| t.replace('\n', "\r\n");
    repo.write(
        "clusters/test/apps.yaml",
        format!(
            "\u{feff}{}",
            crlf("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  wait: true\n")
        ),
    )
    .write("apps/kustomization.yaml", crlf("resources:\n  - all.yaml\n"))
    .write(
        "apps/all.yaml",
        format!(
            "\u{feff}{}",
            crlf(&format!("# everything\n{WEB}---\n{}", deployment("runner", "gitea/act_runner:0.2", "")))
        ),
    );
    repo.write_fix();
    assert_eq!(
        repo.read("apps/all.yaml"),
        format!("\u{feff}{}", crlf(&format!("# everything\n{WEB}")))
    );
    assert_eq!(
        repo.read("apps/runners/all.yaml"),
        format!(
            "\u{feff}{}",
            crlf(&format!(
                "---\n{}",
                deployment("runner", "gitea/act_runner:0.2", "")
            ))
        )
    );
    for f in [
        "apps/runners/kustomization.yaml",
        "clusters/test/apps-runners.yaml",
        "apps/kustomization.yaml",
    ] {
        let text = repo.read(f);
        assert!(
            !text.replace("\r\n", "").contains('\n'),
            "{f} is not CRLF throughout: {text:?}"
        );
    }
}

#[test]
fn runners_listed_file_by_file_keep_their_folder_unless_it_holds_objects_that_stay() {
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - web.yaml\n  - runners/runner.yaml\n  - runners/config.yaml\n",
        )
        .write("apps/web.yaml", WEB)
        .write(
            "apps/runners/runner.yaml",
            deployment("runner", "woodpeckerci/woodpecker-agent:v3", ""),
        )
        // Read by the runner only: it moves along, and the folder is the runners' own.
        .write(
            "apps/runners/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: agent-config\n",
        )
        .write(
            "apps/runners/runner.yaml",
            deployment("runner", "woodpeckerci/woodpecker-agent:v3", "")
                .replace("image: woodpeckerci/woodpecker-agent:v3\n", "image: woodpeckerci/woodpecker-agent:v3\n          envFrom: [{configMapRef: {name: agent-config}}]\n"),
        );
    assert!(repo.write_fix().contains("builtin + kustomize"));
    assert_eq!(
        repo.read("apps/kustomization.yaml"),
        "resources:\n  - web.yaml\n"
    );
    assert_eq!(
        repo.read("apps/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps by fluxmend FM002; applied by the Flux Kustomization apps-runners.\nresources:\n  - runner.yaml\n  - config.yaml\n"
    );
    assert!(
        repo.read("clusters/test/apps-runners.yaml")
            .contains("  path: ./apps/runners\n")
    );
    assert!(!repo.path().join("apps/runners-2").exists());

    // The same folder also holds a ConfigMap the web app reads: the runner's file moves out.
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - web.yaml\n  - runners/runner.yaml\n  - runners/config.yaml\n",
        )
        .write(
            "apps/web.yaml",
            WEB.replace(
                "image: nginx:1.27\n",
                "image: nginx:1.27\n          envFrom: [{configMapRef: {name: shared}}]\n",
            ),
        )
        .write(
            "apps/runners/runner.yaml",
            deployment("runner", "woodpeckerci/woodpecker-agent:v3", ""),
        )
        .write(
            "apps/runners/config.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shared\n",
        );
    repo.write_fix();
    assert_eq!(
        repo.read("apps/kustomization.yaml"),
        "resources:\n  - web.yaml\n  - runners/config.yaml\n"
    );
    assert!(!repo.path().join("apps/runners/kustomization.yaml").exists());
    assert!(!repo.path().join("apps/runners/runner.yaml").exists());
    assert!(repo.path().join("apps/runners-2/runner.yaml").exists());
    assert!(
        repo.read("clusters/test/apps-runners.yaml")
            .contains("  path: ./apps/runners-2\n")
    );
}

#[test]
fn a_chart_source_in_another_namespace_moves_with_its_only_runner_or_is_needed_where_it_stays() {
    let release = |name: &str, namespace: &str, chart: &str| {
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: {chart}\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n        namespace: flux-system\n"
        )
    };
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - repository.yaml\n  - runner.yaml\n  - web.yaml\n",
        )
        .write(
            "apps/repository.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  url: https://charts.gitlab.io\n",
        )
        .write("apps/runner.yaml", release("runner", "ci", "gitlab-runner"))
        .write("apps/web.yaml", WEB);
    repo.write_fix();
    assert_eq!(
        repo.read("apps/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps by fluxmend FM002; applied by the Flux Kustomization apps-runners.\nresources:\n  - repository.yaml\n  - runner.yaml\n"
    );
    assert!(
        !repo
            .read("clusters/test/apps-runners.yaml")
            .contains("dependsOn")
    );

    // Another release in another namespace uses the same chart source: it stays, and the
    // runners' layer waits for the old one.
    let repo = Repo2::new();
    repo.layer("apps", "./apps", "  wait: true\n")
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - repository.yaml\n  - runner.yaml\n  - web.yaml\n",
        )
        .write(
            "apps/repository.yaml",
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: charts\n  namespace: flux-system\nspec:\n  url: https://charts.gitlab.io\n",
        )
        .write("apps/runner.yaml", release("runner", "ci", "gitlab-runner"))
        .write("apps/web.yaml", release("web", "web", "gitlab-pages"));
    let plan = repo.move_plan();
    let fix = plan["findings"][0]["fix"]["description"].as_str().unwrap();
    assert!(
        fix.contains("dependsOn apps: it needs HelmRepository/flux-system/charts"),
        "{fix}"
    );
}

/// A component of the kustomization that lists the runner (a patch by label selector) is carried
/// into the new folder, re-rooted: the runner still gets its node selector, the server too.
#[test]
fn a_component_of_the_listing_kustomization_is_carried_over() {
    let after = fixture("fm002-components", "after");
    let runners = kubectl_kustomize(&after.join("apps/forgejo/runners"));
    assert!(runners.contains("name: forgejo-runner"), "{runners}");
    assert!(runners.contains("pool: ci"), "{runners}");
    let stays = kubectl_kustomize(&after.join("apps/forgejo"));
    assert!(!stays.contains("forgejo-runner"), "{stays}");
    assert!(stays.contains("pool: ci"), "{stays}");
}

/// A component that adds objects would add them to both layers: no fix, and the reason.
#[test]
fn a_component_that_adds_objects_is_not_carried() {
    let repo = TempRepo::copy_of(&fixture("fm002-components", "phase1"));
    repo.append(
        "components/ci-node-pool/kustomization.yaml",
        "resources:\n  - priority-class.yaml\n",
    );
    repo.write(
        "components/ci-node-pool/priority-class.yaml",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: ci\nvalue: 1000\n",
    );
    let run = fluxmend(["fix", repo.path().to_str().unwrap()]);
    assert_eq!(run.stdout, "", "{}", run.stderr);
    assert!(
        run.stderr
            .contains("cannot be carried over as it is (it adds objects"),
        "{}",
        run.stderr
    );
}

/// A cluster overlay that patches the old layer by name (a patch file holding `Kustomization`
/// `apps`) does not reach the new layer: the move says so; without it (negative control) it
/// says nothing is left behind.
#[test]
fn an_overlay_patch_of_the_old_layer_is_named_as_not_carried() {
    let repo = TempRepo::copy_of(&fixture("fm002-components", "phase1"));
    let description = |repo: &TempRepo| {
        let (finding, description) = first_finding_and_fix(repo.path(), "FM002");
        assert!(!description.is_empty(), "a fix: {finding}");
        description
    };
    repo.write(
        "clusters/lab/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system\n  - apps.yaml\n",
    );
    let plain = description(&repo);
    assert!(plain.starts_with("phase 2 of 2: move"), "{plain}");
    assert!(!plain.contains("not carried"), "{plain}");
    repo.append(
        "clusters/lab/kustomization.yaml",
        "patches:\n  - path: apps-timeout.yaml\n",
    )
    .write(
        "clusters/lab/apps-timeout.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  timeout: 20m\n",
    );
    let patched = description(&repo);
    assert!(
        patched.contains(
            "not carried: the patch at clusters/lab/kustomization.yaml:7 of flux-system/apps by name (review whether apps-runners needs the same)"
        ),
        "{patched}"
    );
}

/// Components and targeted patches of an outer kustomization reach the runner after what the
/// kustomizations inside it did: they are carried into the new folder (components and patch
/// files re-rooted) when none of those transforms it, and refused with the reason when one does
/// (one new kustomization would run them first).
#[test]
fn outer_components_and_patches_are_carried_unless_an_inner_kustomization_transforms_first() {
    let repo = |base_extra: &str| {
        let repo = Repo2::new();
        repo.layer("apps", "./apps/prod", "  wait: true\n")
            .write(
                "apps/prod/kustomization.yaml",
                "resources:\n  - ../base\npatches:\n  - path: runner-memory.yaml\n    target:\n      kind: Deployment\n      name: runner\ncomponents:\n  - ../../components/ci-pool\n",
            )
            .write(
                "apps/prod/runner-memory.yaml",
                "- op: add\n  path: /spec/template/spec/containers/0/resources\n  value: {limits: {memory: 2Gi}}\n",
            )
            .write(
                "components/ci-pool/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n  - target:\n      kind: Deployment\n    patch: |\n      - op: add\n        path: /spec/template/spec/nodeSelector\n        value: {pool: ci}\n",
            )
            .write(
                "apps/base/kustomization.yaml",
                format!("{base_extra}resources:\n  - web.yaml\n  - runner.yaml\n"),
            )
            .write("apps/base/web.yaml", WEB)
            .write(
                "apps/base/runner.yaml",
                deployment("runner", "gitea/act_runner:0.2", ""),
            );
        repo
    };
    let plain = repo("");
    assert!(plain.write_fix().contains("builtin + kustomize"));
    assert_eq!(
        plain.read("apps/base/runners/kustomization.yaml"),
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n# Split out of apps/base by fluxmend FM002; applied by the Flux Kustomization apps-runners.\npatches:\n  - path: ../../prod/runner-memory.yaml\n    target:\n      kind: Deployment\n      name: runner\nresources:\n  - runner.yaml\ncomponents:\n  - ../../../components/ci-pool\n"
    );
    let runner = kubectl_kustomize(&plain.path().join("apps/base/runners"));
    assert!(
        runner.contains("pool: ci") && runner.contains("memory: 2Gi"),
        "{runner}"
    );
    // The base sets a namespace first: the outer patch selected the runner after it did.
    let transformed = repo("namespace: ci\n");
    let reason = refusal(&transformed);
    assert!(
        reason.contains(
            "apps/prod/kustomization.yaml:4: a patch that may target the moved objects runs after a namespace, name or label transformer at apps/base/kustomization.yaml:1, in a kustomization inside it"
        ),
        "{reason}"
    );
}

/// A layer of runners and what they use, on which other layers depend for nothing they use:
/// the fix drops their `dependsOn` edges on it (an entry, or the whole key when it was the only
/// one) and moves nothing. The finding and the diff (snapshots), the written tree equals
/// `after/`, a second run changes nothing, every object renders the same from the same layer
/// (`kubectl kustomize`), and — asked of the model — the runner layer then blocks nothing.
#[test]
fn a_runner_only_layer_loses_the_dependson_edges_of_layers_that_use_nothing_of_it() {
    let case = "fm002-runner-only-dependent";
    for (suffix, run) in fix_runs(case, &["--rule", "FM002"]) {
        insta::assert_snapshot!(format!("{case}{suffix}-report"), run.stderr);
        insta::assert_snapshot!(format!("{case}{suffix}-diff"), run.stdout);
    }
    assert_fix_writes_after_tree(case, "FM002", &[]);
    assert_eq!(
        flux_builds(&fixture(case, "before")),
        flux_builds(&fixture(case, "after"))
    );
    let repo = Repo::load(&fixture(case, "after")).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let (id, _) = model
        .live_layers()
        .find(|(_, l)| l.id.name == "ci-agents")
        .unwrap();
    assert_eq!(model.dependents(id), Vec::<usize>::new());
}

/// One model, one answer: a layer that health-checks only its runner (`healthChecks`, no wait)
/// hides no other object's health when the runner fails — `check` and `simulate` both say 0,
/// and without dependents there is nothing to report; with `wait: true` both count the objects
/// the layer applies besides the runner.
#[test]
fn a_layer_that_checks_only_its_runner_masks_nothing_as_simulate_says() {
    let runner_check = "  healthChecks:\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: runner\n      namespace: ci\n";
    let repo = Repo2::new();
    repo.layer("ci", "./ci", runner_check)
        .write("ci/namespace.yaml", NAMESPACE_CI)
        .write(
            "ci/runner.yaml",
            deployment("runner", "gitea/act_runner:0.2", "  namespace: ci\n"),
        )
        // Not the runner's, not checked: its health was never reported.
        .write(
            "ci/web.yaml",
            WEB.replace("  name: web\n", "  name: web\n  namespace: ci\n"),
        );
    let masked_by_simulate = |repo: &Repo2| {
        let run = fluxmend(command_args(
            "simulate",
            repo.path(),
            &["--fail", "Deployment/ci/runner", "--format", "json"],
        ));
        run.json()["before"][0]["affected"][0]["masked"].clone()
    };
    assert_eq!(repo.check()["findings"], serde_json::json!([]));
    assert_eq!(masked_by_simulate(&repo), 0);
    // A dependent makes the gate harmful: reported, and still masking nothing.
    repo.layer("later", "./later", "  dependsOn:\n    - name: ci\n")
        .write(
            "later/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  namespace: default\n",
        );
    let f = &repo.check()["findings"][0];
    assert_eq!(f["masked_objects"], 0, "{f:#}");
    assert_eq!(masked_by_simulate(&repo), 0);
    // With wait: true the layer checks everything: the web Deployment and the Namespace (not
    // the runner's own: web lives there too).
    repo.layer("ci", "./ci", "  wait: true\n");
    let f = &repo.check()["findings"][0];
    assert_eq!(f["masked_objects"], 2, "{f:#}");
    assert_eq!(masked_by_simulate(&repo), 2);
}

/// Dedicated runner layers are not reported (fixture `fm002-dedicated-keda-runner`): a Forgejo
/// runner run as a KEDA ScaledJob is recognised by its pod template, and its token Secret, the
/// TriggerAuthentication that reads it, its Namespace and a namespace-wide NetworkPolicy are its
/// own; a layer that checks only its agents hides nothing. Positive control: an app in the
/// runner's namespace is masked, and so are the Namespace and the policy, which serve it too.
#[test]
fn dedicated_runner_layers_with_a_keda_runner_or_a_namespace_policy_are_not_reported() {
    let root = fixture("fm002-dedicated-keda-runner", "before");
    let check = fluxmend(["check", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    assert_eq!(check.json()["findings"], serde_json::json!([]));
    let repo = Repo::load(&root).unwrap();
    let model = Model::build(&repo, &fluxmend::model::ModelOptions::default());
    let mut analysis = Analysis::new(&model);
    let (id, layer) = model
        .live_layers()
        .find(|(_, l)| l.id.name == "forgejo-runner")
        .unwrap();
    let bundle = analysis.bundle(id, 0);
    let inventory = &layer.variants[0].inventory;
    assert_eq!(
        bundle
            .gated
            .iter()
            .map(|(i, reason)| (inventory[*i].key.to_string(), reason.as_str()))
            .collect::<Vec<_>>(),
        [(
            "ScaledJob/forgejo-runner/forgejo-runner".to_string(),
            "runs image code.forgejo.org/forgejo/runner:9.1.0: Forgejo Actions runner"
        )]
    );
    let mut moved: Vec<String> = inventory
        .iter()
        .filter(|r| bundle.moved.contains(&r.object))
        .map(|r| r.key.kind.to_string())
        .collect();
    moved.sort();
    assert_eq!(
        moved,
        [
            "NetworkPolicy",
            "ScaledJob",
            "Secret",
            "TriggerAuthentication"
        ]
    );
    assert_eq!(bundle.own_namespaces.len(), 1);
    assert!(bundle.staying.is_empty());

    let mixed = TempRepo::copy_of(&root);
    mixed
        .write(
            "runners/forgejo/wiki-cache.yaml",
            deployment("wiki-cache", "redis:7", ""),
        )
        .append(
            "runners/forgejo/kustomization.yaml",
            "  - wiki-cache.yaml\n",
        );
    let report = fluxmend(command_args("check", mixed.path(), &["--format", "json"])).json();
    assert_eq!(objects(&report), ["forgejo-runner"]);
    assert_eq!(report["findings"][0]["masked_objects"], 3, "{report:#}");
}

/// A runner's own Secrets as a JSON6902 overlay patch makes them: one renamed to what the
/// runner reads (`replace /metadata/name`), one the runner reads only through a field the
/// overlay adds (`add …/envFrom`). Both are the runner's, and the layer is dedicated.
/// Needs the model to apply JSON6902 patches that rename objects or add fields (issue 22,
/// item 8: patch modelling); until then both Secrets look foreign and the layer is reported.
#[test]
#[ignore = "needs JSON6902 patches applied in the model (issue 22 item 8)"]
fn secrets_an_overlay_renames_or_adds_for_the_runner_are_its_own() {
    let repo = Repo2::new();
    repo.layer("runners", "./runners/prod", "  wait: true\n")
        .write(
            "runners/base/kustomization.yaml",
            "resources:\n  - runner.yaml\n  - token.yaml\n",
        )
        .write(
            "runners/base/runner.yaml",
            deployment("runner", "code.forgejo.org/forgejo/runner:9", "").replace(
                "          image: code.forgejo.org/forgejo/runner:9\n",
                "          image: code.forgejo.org/forgejo/runner:9\n          env:\n            - name: TOKEN\n              valueFrom: {secretKeyRef: {name: runner-token, key: token}}\n",
            ),
        )
        .write(
            "runners/base/token.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: token-template\nstringData:\n  token: x\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: runner-cache\nstringData:\n  url: s3://cache\n",
        )
        .write(
            "runners/prod/kustomization.yaml",
            "resources:\n  - ../base\npatches:\n  - target: {kind: Secret, name: token-template}\n    patch: |\n      - op: replace\n        path: /metadata/name\n        value: runner-token\n  - target: {kind: Deployment, name: runner}\n    patch: |\n      - op: add\n        path: /spec/template/spec/containers/0/envFrom\n        value: [{secretRef: {name: runner-cache}}]\n",
        );
    assert_eq!(repo.check()["findings"], serde_json::json!([]));
}
