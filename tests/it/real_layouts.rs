//! Layouts real Flux repositories use that Flux applies without error: fluxmend must read them as
//! Flux does and report no false error (issue 15).

use crate::common::{self, *};

/// An ExternalSecret whose template holds `{{ … }}` in string values: valid YAML, applied as is.
const EXTERNAL_SECRET: &str = "\
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata:
  name: runner-token
  namespace: demo
spec:
  target:
    template:
      data:
        config.toml: |
          token = \"{{ .token }}\"
        url: \"{{ .url | lower }}\"
";

#[test]
fn template_text_in_string_values_is_read_as_objects() {
    let repo = TempRepo::flux_layout();
    repo.write("apps/secret.yaml", EXTERNAL_SECRET)
        .append("apps/kustomization.yaml", "  - secret.yaml\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    let graph = repo.graph_json();
    let objects = inventory(layer(&graph, "flux-system", "apps"));
    assert!(
        objects
            .iter()
            .any(|(kind, _, name)| kind == "ExternalSecret" && name == "runner-token"),
        "{objects:?}"
    );
}

#[test]
fn template_text_in_a_kustomization_comment_keeps_the_layer() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "apps/kustomization.yaml",
        format!("# values are rendered with {{{{ .Values.x }}}} later\n{APPS_KUSTOMIZATION}"),
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    assert_eq!(summary(&report, "objects"), LAYOUT_OBJECTS);
    let graph = repo.graph_json();
    assert_eq!(inventory(layer(&graph, "flux-system", "apps")).len(), 3);
}

/// A placeholder in a plain (unquoted) position parses, in yaml-rust2, to a mapping used as a
/// key, which Flux's YAML-to-JSON conversion rejects: that file is template text, skipped.
#[test]
fn template_text_that_is_not_yaml_for_flux_is_skipped_with_a_note() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "misc/unquoted.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = assert_diagnostic(&report, "misc/unquoted.yaml", "template text", "note");
    assert_eq!((&d["line"], &d["column"]), (&4.into(), &10.into()), "{d:#}");
}

/// A file no live layer reads: a problem there never reaches Flux, so it is a note; the same
/// file in a live layer is the error it is.
#[test]
fn problems_in_files_no_live_layer_reads_are_notes() {
    let broken = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a: b\n";
    let repo = TempRepo::flux_layout();
    repo.write("misc/broken.yaml", broken)
        // Cluster tool configuration beside the manifests: not a Kubernetes object.
        .write(
            "talos/kubeadm.yaml",
            "apiVersion: kubeadm.k8s.io/v1beta3\nkind: ClusterConfiguration\nkubernetesVersion: v1.30.0\n",
        )
        // An archived layer and what it reads.
        .write(
            ".archive/clusters/old/apps.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: old\n  \
             namespace: flux-system\nspec:\n  interval: 10m\n  path: ./gone\n  dependsOn:\n    - name: nothing\n  \
             sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
        )
        .write(
            ".archive/apps/kustomization.yaml",
            "resources:\n  - missing.yaml\n",
        );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert!(!diagnostics(&report).is_empty());
    for d in diagnostics(&report) {
        assert_eq!(d["severity"], "note", "{d:#}");
    }
    let d = assert_diagnostic(&report, "misc/broken.yaml", "YAML does not parse", "note");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .ends_with("(no live layer reads this file: error reported as a note)"),
        "{d:#}"
    );
    assert_eq!((&d["line"], &d["column"]), (&4.into(), &10.into()), "{d:#}");
    assert_diagnostic(&report, "talos/kubeadm.yaml", "no metadata.name", "note");
    assert_diagnostic(
        &report,
        ".archive/clusters/old/apps.yaml",
        "unreferenced",
        "note",
    );
    assert_eq!(run.code, 0);
    // `--fail-on note` still sees them.
    assert_eq!(repo.check_json(&["--fail-on", "note"]).0.code, 1);

    // Listed by a live layer, the same file is an error.
    repo.append("apps/kustomization.yaml", "  - ../misc/broken.yaml\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{report:#}");
    assert_diagnostic(&report, "misc/broken.yaml", "YAML does not parse", "error");
}

/// A tenant layer reading another repository (by URL), an OCI artifact pushed from elsewhere
/// (its path resolves nowhere here), and a second GitRepository of this same repository.
const SOURCES_LAYER: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: tenant
  namespace: flux-system
spec:
  interval: 5m
  url: ssh://git@github.com/example/tenant-apps.git
  ref:
    branch: main
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet-again
  namespace: flux-system
spec:
  interval: 5m
  url: git@github.com:Example/fleet.git
  ref:
    branch: main
---
apiVersion: source.toolkit.fluxcd.io/v1beta2
kind: OCIRepository
metadata:
  name: vendor
  namespace: flux-system
spec:
  interval: 5m
  url: oci://ghcr.io/vendor/manifests
  ref:
    tag: latest
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: tenant
  namespace: flux-system
spec:
  interval: 10m
  path: ./deploy/production
  prune: true
  sourceRef:
    kind: GitRepository
    name: tenant
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: vendor
  namespace: flux-system
spec:
  interval: 10m
  path: ./vendor/base
  prune: true
  dependsOn:
    - name: tenant
  sourceRef:
    kind: OCIRepository
    name: vendor
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra-again
  namespace: flux-system
spec:
  interval: 10m
  path: ./infra
  sourceRef:
    kind: GitRepository
    name: fleet-again
";

#[test]
fn layers_reading_another_repository_are_external_notes() {
    let repo = TempRepo::flux_layout();
    repo.write("clusters/prod/sources.yaml", SOURCES_LAYER);
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    for (layer, why) in [
        (
            "flux-system/tenant",
            "ssh://git@github.com/example/tenant-apps.git, not https://github.com/example/fleet",
        ),
        (
            "flux-system/vendor",
            "oci://ghcr.io/vendor/manifests, not https://github.com/example/fleet",
        ),
    ] {
        let d = find_diagnostic(&report, "clusters/prod/sources.yaml", layer);
        assert_eq!(d["severity"], "note", "{d:#}");
        let message = d["message"].as_str().unwrap();
        assert!(message.contains("is another repository"), "{message}");
        assert!(message.contains(why), "{message}");
        assert!(d["line"].is_u64() && d["column"].is_u64(), "{d:#}");
    }
    assert_eq!(diagnostics(&report).len(), 2, "{report:#}");
    let graph = repo.graph_json();
    for name in ["tenant", "vendor"] {
        let l = layer(&graph, "flux-system", name);
        assert_eq!(l["live"], true);
        assert_eq!(
            l["variants"],
            serde_json::json!([]),
            "no inventory claimed: {l:#}"
        );
    }
    // The same repository under another URL spelling is this one: modelled.
    let again = inventory(layer(&graph, "flux-system", "infra-again"));
    assert_eq!(again.len(), 1, "{again:?}");
}

/// Two clusters' layers without a root this repository defines (bootstrapped from outside):
/// each `apps` waits for its own cluster's `infra-configs` only, in every graph format.
#[test]
fn depends_on_resolves_within_the_applying_cluster() {
    let repo = TempRepo::empty();
    for cluster in ["staging", "production"] {
        repo.write(
            &format!("clusters/{cluster}/layers.yaml"),
            format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: infra-configs\n  \
                 namespace: flux-system\nspec:\n  interval: 10m\n  path: ./infra/{cluster}\n  sourceRef:\n    \
                 kind: GitRepository\n    name: flux-system\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\n\
                 kind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  \
                 path: ./apps/{cluster}\n  dependsOn:\n    - name: infra-configs\n  sourceRef:\n    \
                 kind: GitRepository\n    name: flux-system\n"
            ),
        )
        .write(
            &format!("infra/{cluster}/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\n",
        )
        .write(
            &format!("apps/{cluster}/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n",
        );
    }
    let graph = repo.graph_json();
    for l in graph["layers"].as_array().unwrap() {
        if l["name"] == "apps" {
            let deps = l["depends_on"].as_array().unwrap();
            assert_eq!(deps.len(), 1, "{l:#}");
            let dep = &graph["layers"][deps[0].as_u64().unwrap() as usize];
            let dir = |x: &serde_json::Value| {
                x["file"]
                    .as_str()
                    .unwrap()
                    .rsplit_once('/')
                    .unwrap()
                    .0
                    .to_string()
            };
            assert_eq!(dir(dep), dir(l), "{l:#}\n{dep:#}");
        }
    }
    for format in ["text", "dot", "mermaid"] {
        let run = repo.run("graph", &["--format", format]);
        let waits =
            run.stdout.matches("waits for").count() + run.stdout.matches("dependsOn:").count();
        assert_eq!(waits, 2, "graph --format {format}:\n{}", run.stdout);
    }
}

/// A parent layer's `targetNamespace`, `namePrefix` and `nameSuffix` apply to the Flux
/// Kustomizations it renders, as Flux applies them: the child's identity is the transformed one,
/// and its `dependsOn` (namespace defaulting to its own) resolves against transformed names.
#[test]
fn a_parent_layers_transformers_rename_the_child_layers() {
    let repo = TempRepo::flux_layout();
    repo.append(
        "clusters/prod/infra.yaml",
        "  targetNamespace: team\n  namePrefix: t-\n  nameSuffix: -x\n",
    )
    .write(
        "infra/children.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: base\n\
         spec:\n  interval: 10m\n  path: ./apps\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    \
         namespace: flux-system\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
         metadata:\n  name: top\nspec:\n  interval: 10m\n  path: ./apps\n  dependsOn:\n    - name: t-base-x\n  \
         sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let graph = repo.graph_json();
    let base = layer(&graph, "team", "t-base-x");
    let top = layer(&graph, "team", "t-top-x");
    assert_eq!(
        top["depends_on"],
        serde_json::json!([base["id"]]),
        "{top:#}"
    );
    assert!(
        graph["layers"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["namespace"] != "default"),
        "{graph:#}"
    );
}

/// A layer file two clusters share: one finding per cluster when their blast radii differ, each
/// naming its cluster; one finding naming both when they are the same.
#[test]
fn findings_name_their_cluster_and_keep_blast_radii_apart() {
    let repo = TempRepo::empty();
    for c in ["a", "b"] {
        repo.write(
            &format!("clusters/{c}/flux-system/gotk-sync.yaml"),
            GOTK_SYNC.replace("./clusters/prod", &format!("./clusters/{c}")),
        )
        .write(
            &format!("clusters/{c}/kustomization.yaml"),
            "resources:\n  - flux-system/gotk-sync.yaml\n  - ../../shared/apps.yaml\n",
        );
    }
    repo.write(
        "shared/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  \
         namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: false\n  wait: true\n  \
         sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .write("apps/kustomization.yaml", format!("{APPS_KUSTOMIZATION}  - flux.yaml\n"))
    .write(
        "apps/app.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: default\n",
    )
    .write("apps/flux.yaml", FLUX_INSTANCE);
    let findings = |repo: &TempRepo| {
        let (_, report) = repo.check_json(&["--rule", "FM001"]);
        report["findings"].as_array().unwrap().clone()
    };
    let same = findings(&repo);
    assert_eq!(same.len(), 1, "{same:#?}");
    assert_eq!(
        same[0]["cluster"],
        "flux-system/flux-system (path ./clusters/a); flux-system/flux-system (path ./clusters/b)"
    );
    let text = repo.run("check", &["--rule", "FM001"]).stdout;
    assert!(
        text.contains("    cluster: flux-system/flux-system (path ./clusters/a); "),
        "{text}"
    );

    // Cluster b has a layer waiting for apps: its blast radius differs.
    repo.append("clusters/b/kustomization.yaml", "  - extra.yaml\n").write(
        "clusters/b/extra.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extra\n  \
         namespace: flux-system\nspec:\n  interval: 10m\n  path: ./infra\n  dependsOn:\n    - name: apps\n  \
         sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .write("infra/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: infra\n");
    let apart = findings(&repo);
    assert_eq!(apart.len(), 2, "{apart:#?}");
    assert_eq!(
        apart[0]["cluster"],
        "flux-system/flux-system (path ./clusters/a)"
    );
    assert_eq!(apart[0]["blocked_layers"], serde_json::json!([]));
    assert_eq!(
        apart[1]["cluster"],
        "flux-system/flux-system (path ./clusters/b)"
    );
    assert_eq!(
        apart[1]["blocked_layers"],
        serde_json::json!([{"namespace": "flux-system", "name": "extra"}])
    );
}

/// A tenant layer whose kustomization renames its child layers with a builtin transformer
/// configuration: the model renames them too, so a `dependsOn` on the transformed name resolves.
/// A plugin among the transformers leaves the layer not fully modelled (a note, no error).
const TENANT_LAYER: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: tenants
  namespace: flux-system
spec:
  interval: 10m
  path: ./tenants
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

const TENANT_CHILDREN: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: db
  namespace: flux-system
spec:
  interval: 10m
  path: ./infra
  sourceRef:
    kind: GitRepository
    name: flux-system
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: app
  namespace: flux-system
spec:
  interval: 10m
  path: ./infra
  dependsOn:
    - name: team-db
  sourceRef:
    kind: GitRepository
    name: flux-system
";

#[test]
fn builtin_transformers_are_modelled_and_plugins_mark_the_layer_not_fully_modelled() {
    let repo = TempRepo::flux_layout();
    repo.write("clusters/prod/tenants.yaml", TENANT_LAYER)
        .write("tenants/layers.yaml", TENANT_CHILDREN)
        .write(
            "tenants/kustomization.yaml",
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - layers.yaml\n\
             transformers:\n  - prefix.yaml\n",
        )
        .write(
            "tenants/prefix.yaml",
            "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: team\nprefix: team-\n\
             fieldSpecs:\n  - path: metadata/name\n",
        );
    // The builtin PrefixSuffixTransformer is modelled: `team-db` is the renamed `db`.
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    // A plugin is an unknown effect: a note on the layer, never an error.
    repo.write(
        "tenants/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - layers.yaml\n\
         transformers:\n  - prefix.yaml\n  - sops.yaml\n",
    )
    .write(
        "tenants/sops.yaml",
        "apiVersion: example.com/v1\nkind: SecretDecrypter\nmetadata:\n  name: decrypt\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = assert_diagnostic(
        &report,
        "clusters/prod/tenants.yaml",
        "not fully modelled: `transformers` entry `sops.yaml` in tenants/kustomization.yaml (SecretDecrypter is not a builtin transformer",
        "note",
    );
    assert_eq!(d["line"], 1);
    assert!(
        diagnostics(&report).iter().all(|d| d["severity"] == "note"),
        "{report:#}"
    );
}

/// `tests/data/healthy-unusual/`: a repository Flux applies without error, written the ways real
/// repositories are (template text in values and comments, a builtin transformer configuration,
/// a tenant layer from another repository, an archived folder with broken files and a layer
/// nothing applies, Talos/kubeadm configuration, a local Helm chart, a Jinja file). `check`
/// passes with no error or warning, and still sees every object Flux applies.
#[test]
fn a_healthy_but_unusual_repository_passes_check() {
    let root = manifest_dir().join("tests/data/healthy-unusual");
    let run = fluxmend(command_args("check", &root, &["--format", "json"]));
    run.assert_no_panic();
    let report = run.json();
    assert_eq!(run.code, 0, "{report:#}");
    for d in diagnostics(&report) {
        assert_eq!(d["severity"], "note", "{d:#}");
        assert!(
            d["line"].is_u64() || d["message"].as_str().unwrap().starts_with("skipped: Helm"),
            "{d:#}"
        );
    }
    assert_eq!(
        report["summary"]["diagnostics"],
        serde_json::json!({"note": 8}),
        "{report:#}"
    );
    assert_eq!(summary(&report, "live_layers"), 5);
    let graph = fluxmend(command_args("graph", &root, &["--format", "json"])).json();
    let kinds = |name: &str| {
        let mut k: Vec<String> = inventory(layer(&graph, "flux-system", name))
            .into_iter()
            .map(|(kind, _, name)| format!("{kind}/{name}"))
            .collect();
        k.sort();
        k
    };
    assert_eq!(
        kinds("infrastructure"),
        ["ExternalSecret/registry", "Namespace/infra"]
    );
    assert_eq!(
        kinds("apps"),
        ["ConfigMap/alert-templates", "HelmRelease/runner-config"]
    );
}

/// `--source NAME=DIR` maps an external source to a checkout kept in the repository: its layer
/// is then analysed there. A malformed value is a usage error.
#[test]
fn source_option_maps_an_external_source_to_a_local_checkout() {
    let repo = TempRepo::flux_layout();
    repo.write("clusters/prod/sources.yaml", SOURCES_LAYER)
        .write(
            "vendor/tenant-apps/deploy/production/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tenant\n  namespace: default\n",
        );
    let graph = |extra: &[&str]| {
        let run = repo.run("graph", &[&["--format", "json"][..], extra].concat());
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()
    };
    assert_eq!(
        layer(&graph(&[]), "flux-system", "tenant")["variants"],
        serde_json::json!([])
    );
    for name in [
        "tenant",
        "flux-system/tenant",
        "GitRepository/flux-system/tenant",
    ] {
        let mapped = graph(&["--source", &format!("{name}=vendor/tenant-apps")]);
        let tenant = layer(&mapped, "flux-system", "tenant");
        assert_eq!(
            tenant["source_root"], "vendor/tenant-apps",
            "{name}: {tenant:#}"
        );
        assert_eq!(
            inventory(tenant),
            [("ConfigMap".into(), "default".into(), "tenant".into())],
            "{name}"
        );
    }
    for bad in ["tenant", "=x", "tenant=does/not/exist"] {
        let run = fluxmend(command_args("check", repo.path(), &["--source", bad]));
        assert_eq!(run.code, 2, "--source {bad}: {}", run.stderr);
        assert!(run.stderr.contains("--source"), "{}", run.stderr);
    }
}

/// A repository bootstrapped from outside (no FluxInstance sync, no bootstrap Kustomization):
/// its own source is created elsewhere, so an app's OCI artifact or a Git repository defined
/// here is another repository even when its path is `.` — not this repository rendered again
/// under the app's `targetNamespace` (which made every layer appear once per app).
#[test]
fn without_a_root_an_apps_own_artifact_is_external_whatever_its_path() {
    let repo = TempRepo::empty();
    let doc = |name: &str, ns: &str, kind: &str, source: &str, path: &str| {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: {ns}\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  wait: true\n  targetNamespace: {ns}\n  sourceRef:\n    kind: {kind}\n    name: {source}\n"
        )
    };
    repo.write(
        "clusters/base/apps.yaml",
        doc("apps", "flux-system", "OCIRepository", "flux-system", "apps")
            .replace("  targetNamespace: flux-system\n", ""),
    )
    .write(
        "apps/kustomization.yaml",
        "resources:\n  - shop.yaml\n  - wiki.yaml\n",
    )
    .write(
        "apps/shop.yaml",
        format!(
            "{}---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: shop\n  namespace: shop\nspec:\n  url: oci://ghcr.io/example/shop/manifests\n",
            doc("shop", "shop", "OCIRepository", "shop", ".")
        ),
    )
    .write(
        "apps/wiki.yaml",
        format!(
            "{}---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: wiki\n  namespace: wiki\nspec:\n  url: https://github.com/example/wiki\n",
            doc("wiki", "wiki", "GitRepository", "wiki", "./")
        ),
    );
    let graph = repo.graph_json();
    let mut names: Vec<String> = graph["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(common::layer_id)
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["flux-system/apps", "shop/shop", "wiki/wiki"],
        "{graph:#}"
    );
    for (ns, name) in [("shop", "shop"), ("wiki", "wiki")] {
        assert_eq!(layer(&graph, ns, name)["variants"], serde_json::json!([]));
    }
    let (_, report) = repo.check_json(&[]);
    for (file, why) in [
        ("apps/shop.yaml", "oci://ghcr.io/example/shop/manifests"),
        (
            "apps/wiki.yaml",
            // `apps` applies it (walked first: it is not below another layer's path).
            "https://github.com/example/wiki, while this repository arrives as OCIRepository",
        ),
    ] {
        let d = find_diagnostic(&report, file, "is another repository");
        assert_eq!(d["severity"], "note", "{d:#}");
        assert!(d["message"].as_str().unwrap().contains(why), "{d:#}");
    }
}

/// A cluster overlay that patches a layer by name from a file of its own (`patches: - path:`),
/// the way devantler-tech/platform protects a database per provider. The patch file holds a Flux
/// Kustomization without `spec.path`: it edits the layer, it is not a layer that syncs the root.
#[test]
fn a_patch_file_of_a_flux_kustomization_is_not_a_layer() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "clusters/prod/kustomization.yaml",
        "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - flux-system
  - apps.yaml
  - infra.yaml
patches:
  - path: patches/apps-timeout.yaml
",
    )
    .write(
        "clusters/prod/patches/apps-timeout.yaml",
        "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  timeout: 15m
",
    )
    // Not a Kubernetes object: a tool's configuration at the top, which a layer rendering the
    // root directory would trip over.
    .write("review-bot.yaml", "reviews:\n  profile: chill\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let problems: Vec<&serde_json::Value> = diagnostics(&report)
        .iter()
        .filter(|d| d["severity"] != "note")
        .collect();
    assert!(problems.is_empty(), "{report:#}");
    let graph = repo.graph_json();
    assert_eq!(
        graph["layers"].as_array().map(Vec::len),
        Some(LAYOUT_LAYERS as usize),
        "{graph:#}"
    );
    // kustomize agrees: the overlay renders one `apps` layer, patched.
    let rendered = kubectl_kustomize(&repo.path().join("clusters/prod"));
    assert_eq!(rendered.matches("name: apps\n").count(), 1, "{rendered}");
    assert!(rendered.contains("timeout: 15m"), "{rendered}");
}

/// A tenant's GitRepository on this repository's URL but another branch (the way
/// fluxcd/flux2-multi-tenancy gives each team a branch) is another tree: a note, not "Flux cannot
/// generate a kustomization" for this checkout's root. Likewise with a bootstrap placeholder as
/// the root's source (URL unknown) and a branch other than main or master. The same URL and
/// branch as the root is this repository.
#[test]
fn the_same_repository_at_another_branch_is_external() {
    let tenant = |branch: &str| {
        format!(
            "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: dev-team\n  namespace: apps\nspec:\n  interval: 1m\n  url: https://github.com/example/fleet\n  ref:\n    branch: {branch}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: dev-team\n  namespace: apps\nspec:\n  interval: 5m\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: dev-team\n"
        )
    };
    let repo = TempRepo::flux_layout();
    // The repository root holds a file that is not a Kubernetes object: this tree's root is no
    // layer Flux could build, so rendering it for the tenant would be a false error.
    repo.write(".ci/pipeline.yaml", "steps:\n  - run: make\n")
        .write("clusters/prod/dev-team.yaml", tenant("dev-team"));
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = find_diagnostic(
        &report,
        "clusters/prod/dev-team.yaml",
        "is another repository",
    );
    assert_eq!(d["severity"], "note", "{d:#}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("https://github.com/example/fleet at branch dev-team, not branch main"),
        "{d:#}"
    );
    // The root's source is a bootstrap placeholder: its URL and branch are unknown.
    repo.write(
        "clusters/prod/flux-system/gotk-sync.yaml",
        "# generated by flux bootstrap\n",
    )
    .write(
        "clusters/prod/flux-system/sync.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/prod\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .write(
        "clusters/prod/flux-system/kustomization.yaml",
        "resources:\n  - gotk-sync.yaml\n  - sync.yaml\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = find_diagnostic(
        &report,
        "clusters/prod/dev-team.yaml",
        "is another repository",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("at branch dev-team"),
        "{d:#}"
    );
    // The same branch as the root: this repository, analysed (its root renders the `.ci` file,
    // which Flux cannot apply: an error, as it would be for Flux).
    let repo = TempRepo::flux_layout();
    repo.write(".ci/pipeline.yaml", "steps:\n  - run: make\n")
        .write("clusters/prod/dev-team.yaml", tenant("main"));
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{report:#}");
    assert!(
        diagnostics(&report).iter().all(|d| !d["message"]
            .as_str()
            .unwrap()
            .contains("is another repository")),
        "{report:#}"
    );
}

/// Flux's generated kustomization lists a subdirectory with a kustomization file of its own and
/// stops there: a directory that kustomization no longer names (commented out) is not read, so
/// its broken kustomization is a note. A broken one the build does read stays an error.
#[test]
fn below_a_generated_path_only_what_nested_kustomizations_name_is_read() {
    let layer = "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: tools\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./tools\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n";
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: default\n"
        )
    };
    let repo = TempRepo::flux_layout();
    repo.write("clusters/prod/tools.yaml", layer)
        .write("tools/top.yaml", cm("top"))
        .write(
            "tools/team/kustomization.yaml",
            "resources:\n  - ./current\n  # - ./retired\n",
        )
        .write(
            "tools/team/current/kustomization.yaml",
            "resources:\n  - cm.yaml\n",
        )
        .write("tools/team/current/cm.yaml", cm("current"))
        .write(
            "tools/team/retired/kustomization.yaml",
            "resources:\n  - gone.yaml\n",
        );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = find_diagnostic(
        &report,
        "tools/team/retired/kustomization.yaml",
        "resources entry `gone.yaml` does not exist",
    );
    assert_eq!(d["severity"], "note", "{d:#}");
    // The same mistake in a directory the build reads fails it.
    repo.write(
        "tools/team/current/kustomization.yaml",
        "resources:\n  - cm.yaml\n  - gone.yaml\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{report:#}");
    let d = find_diagnostic(
        &report,
        "tools/team/current/kustomization.yaml",
        "resources entry `gone.yaml` does not exist",
    );
    assert_eq!(d["severity"], "error", "{d:#}");
}

/// A Flux Kustomization `flux-system/NAME` syncing `path` from the GitRepository `flux-system`.
fn flux_ks(name: &str, path: &str) -> String {
    format!(
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: {path}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
    )
}

/// With no root (Flux installed from outside the repository), a Flux Kustomization whose file
/// lies below a path another layer syncs, but which that layer's build does not take (its entry
/// commented out), is not applied by Flux: unreferenced, not live, and its broken build is a
/// note. The layers the build does take stay live.
#[test]
fn without_a_root_a_layer_left_out_of_a_synced_folder_is_not_live() {
    let repo = TempRepo::empty();
    repo.write("cluster/apps.yaml", flux_ks("apps", "./apps"))
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - ./web/ks.yaml\n  # - ./old/ks.yaml\n",
        )
        .write("apps/web/ks.yaml", flux_ks("web", "./apps/web/app"))
        .write(
            "apps/web/app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: default\n",
        )
        .write("apps/old/ks.yaml", flux_ks("old", "./apps/old/app"))
        .write(
            "apps/old/app/kustomization.yaml",
            "resources:\n  - gone.yaml\n",
        );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert_eq!(summary(&report, "live_layers"), 2, "{report:#}");
    let d = find_diagnostic(&report, "apps/old/ks.yaml", "no layer's build takes it");
    assert_eq!(d["severity"], "note", "{d:#}");
    assert!(
        diagnostics(&report).iter().all(|d| d["severity"] == "note"),
        "{report:#}"
    );
}

/// With no root, when the layer that syncs a folder cannot be built (an entry names a missing
/// file), the Flux Kustomizations below that folder are not "unreferenced" defects of their own:
/// whether Flux applies them is unknown until the one error is repaired. One error, the rest
/// notes that name the failing layer; with the build repaired (negative control) they are live.
#[test]
fn below_a_layer_whose_build_fails_the_layers_are_unknown_not_warnings() {
    let repo = TempRepo::empty();
    repo.write("cluster/apps.yaml", flux_ks("apps", "./apps"))
        .write(
            "apps/kustomization.yaml",
            "resources:\n  - ./web/ks.yaml\n  - ./db/ks.yaml\n  - ./gone/ks.yaml\n",
        );
    for app in ["web", "db"] {
        repo.write(
            &format!("apps/{app}/ks.yaml"),
            flux_ks(app, &format!("./apps/{app}/app")),
        )
        .write(
            &format!("apps/{app}/app/cm.yaml"),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}\n  namespace: default\n"
            ),
        );
    }
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{report:#}");
    for app in ["web", "db"] {
        let d = find_diagnostic(
            &report,
            &format!("apps/{app}/ks.yaml"),
            "which flux-system/apps syncs, but that layer's build fails",
        );
        assert_eq!(d["severity"], "note", "{d:#}");
    }
    assert!(
        diagnostics(&report).iter().all(|d| d["severity"] == "note"
            || d["file"] == "apps/kustomization.yaml"
            || d["message"]
                .as_str()
                .unwrap()
                .starts_with("flux-system/apps")),
        "{report:#}"
    );
    assert!(
        diagnostics(&report)
            .iter()
            .all(|d| d["severity"] != "warning"),
        "{report:#}"
    );

    repo.write(
        "apps/kustomization.yaml",
        "resources:\n  - ./web/ks.yaml\n  - ./db/ks.yaml\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    assert_eq!(summary(&report, "live_layers"), 3, "{report:#}");
}

/// A generator file given as an http(s) URL is fetched by kustomize's loader when Flux builds
/// the layer (`FileLoader.Load`): not a missing file. The ConfigMap is in the layer; a note says
/// its content (and, when hashed, its name's suffix) is unknown. A missing local file (negative
/// control) stays an error.
#[test]
fn a_generator_file_fetched_over_http_is_not_a_missing_file() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\nconfigMapGenerator:\n  - name: dashboards\n    options:\n      disableNameSuffixHash: true\n    files:\n      - cluster.json=https://raw.example.org/dashboards/cluster.json\n  - name: hashed\n    files:\n      - HTTPS://raw.example.org/dashboards/logs.json\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let d = find_diagnostic(
        &report,
        "apps/kustomization.yaml",
        "configMapGenerator dashboards",
    );
    assert_eq!(d["severity"], "note", "{d:#}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("fetched over the network"),
        "{d:#}"
    );
    let d = find_diagnostic(
        &report,
        "apps/kustomization.yaml",
        "configMapGenerator hashed",
    );
    assert!(
        d["message"].as_str().unwrap().contains("hash suffix"),
        "{d:#}"
    );
    let graph = repo.graph_json().to_string();
    assert!(graph.contains("\"dashboards\""), "{graph}");

    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\nconfigMapGenerator:\n  - name: dashboards\n    files:\n      - cluster.json=dashboards/cluster.json\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{report:#}");
    let d = find_diagnostic(&report, "apps/kustomization.yaml", "does not exist");
    assert_eq!(d["severity"], "error", "{d:#}");
}

/// Every `healthy-*` fixture (unusual but valid layouts: transformers, ResourceSets) checks
/// clean: exit 0, no finding, no diagnostic above a note.
#[test]
fn every_healthy_fixture_checks_clean() {
    let mut seen = 0;
    for tree in common::fixture_trees(false) {
        if !tree.case.starts_with("healthy-") {
            continue;
        }
        seen += 1;
        let run = common::fluxmend(["check", tree.root.to_str().unwrap(), "--format", "json"]);
        let report = run.json();
        assert_eq!(run.code, 0, "{}: {report:#}", tree.label());
        assert_eq!(
            report["findings"],
            serde_json::json!([]),
            "{}",
            tree.label()
        );
        for d in common::diagnostics(&report) {
            assert_eq!(d["severity"], "note", "{}: {d:#}", tree.label());
        }
    }
    assert!(seen >= 2, "the healthy fixtures");
}

/// A directory of transformer configurations (`transformers: [./transformers]`, whose
/// kustomization sets their namespace) is modelled: each app folder's placeholder Namespace is
/// renamed to the folder's namespace, so two folders no longer collide, and a
/// NamespaceTransformer fieldSpec on `spec/targetNamespace` sets the child layer's target
/// namespace (its HelmRelease lands there, and FM005 finds the healthChecks entry applied).
#[test]
fn a_directory_of_transformer_configurations_is_modelled() {
    let repo = TempRepo::flux_layout();
    let app = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n  - ks.yaml\ntransformers:\n  - ./transformers\n";
    let transformers = |ns: &str| {
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: {ns}\nresources:\n  - ../../shared-transformers\n"
        )
    };
    let child_layer = |name: &str| {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {name}\nspec:\n  interval: 1h\n  path: ./apps/{name}/release\n  prune: true\n  wait: true\n  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      name: {name}\n      namespace: {name}\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n"
        )
    };
    let release = |name: &str| {
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: {name}\nspec:\n  interval: 1h\n  chart:\n    spec:\n      chart: {name}\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n        namespace: flux-system\n"
        )
    };
    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - media\n  - backup\n",
    )
    .write(
        "apps/shared-transformers/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - namespace.yaml\n",
    )
    .write(
        "apps/shared-transformers/namespace.yaml",
        "apiVersion: builtin\nkind: NamespaceTransformer\nmetadata:\n  name: app-namespace\n  namespace: unset\nunsetOnly: false\nfieldSpecs:\n  - path: metadata/name\n    kind: Namespace\n    create: true\n  - path: spec/targetNamespace\n    group: kustomize.toolkit.fluxcd.io\n    kind: Kustomization\n    create: true\n",
    );
    for name in ["media", "backup"] {
        repo.write(&format!("apps/{name}/kustomization.yaml"), app)
            .write(
                &format!("apps/{name}/namespace.yaml"),
                "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: placeholder\n",
            )
            .write(&format!("apps/{name}/ks.yaml"), child_layer(name))
            .write(
                &format!("apps/{name}/transformers/kustomization.yaml"),
                transformers(name),
            )
            .write(&format!("apps/{name}/release/release.yaml"), release(name));
    }
    let (run, report) = repo.check_json(&[]);
    assert!(
        diagnostics(&report).iter().all(|d| d["severity"] == "note"),
        "{report:#}"
    );
    let graph = repo.graph_json();
    let media = inventory(layer(&graph, "media", "media"));
    assert!(
        media.contains(&("HelmRelease".into(), "media".into(), "media".into())),
        "{media:?}"
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings
            .iter()
            .filter(|f| f["rule"] == "FM005")
            .all(|f| f["severity"] == "note"),
        "{findings:#?}"
    );
    assert_eq!(run.code, 0, "{report:#}");
}

/// Inside a layer the model marks "not fully modelled", an identity conflict (two objects with
/// one name) is a note: the transformer it cannot follow may rename one of them.
#[test]
fn an_identity_conflict_in_a_layer_not_fully_modelled_is_a_note() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - copy.yaml\ntransformers:\n  - rename.yaml\n",
    )
    .write(
        "apps/copy.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: demo\ndata:\n  greeting: hi\n",
    )
    .write(
        "apps/rename.yaml",
        "apiVersion: example.com/v1\nkind: RenameByAnnotation\nmetadata:\n  name: rename\n",
    );
    let (run, report) = repo.check_json(&[]);
    let d = assert_diagnostic(
        &report,
        "clusters/prod/apps.yaml",
        "ConfigMap/demo/settings is rendered twice",
        "note",
    );
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .contains("not fully modelled"),
        "{d:#}"
    );
    assert_eq!(run.code, 0, "{report:#}");
}

/// A HelmRelease written without its chart, which a JSON6902 patch of the kustomization adds
/// (`chartRef`): Flux applies it complete, so no "missing required field" warning.
#[test]
fn a_field_a_patch_adds_is_not_missing() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "apps/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: demo\nspec:\n  interval: 1h\n",
    )
    .write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - release.yaml\npatches:\n  - target:\n      kind: HelmRelease\n    patch: |\n      - op: add\n        path: /spec/chartRef\n        value:\n          kind: OCIRepository\n          name: app-template\n          namespace: flux-system\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    assert_eq!(run.code, 0, "{report:#}");
    // Without the patch the warning stands.
    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - release.yaml\n",
    );
    let (_, report) = repo.check_json(&[]);
    assert_diagnostic(
        &report,
        "apps/release.yaml",
        "missing required field spec.chart or spec.chartRef",
        "warning",
    );
}

/// A Flux Kustomization's `spec.patches` that rename act like the kustomization's own (Flux
/// appends them to it): the layer applies the renamed object.
#[test]
fn a_layer_patch_that_renames_is_applied_to_the_inventory() {
    let repo = TempRepo::flux_layout();
    let text = repo.read("clusters/prod/apps.yaml")
        + "  patches:\n    - target:\n        kind: ConfigMap\n        name: settings\n      patch: |\n        - op: replace\n          path: /metadata/name\n          value: web-settings\n";
    repo.write("clusters/prod/apps.yaml", text);
    let graph = repo.graph_json();
    let objects = inventory(layer(&graph, "flux-system", "apps"));
    assert!(
        objects.contains(&("ConfigMap".into(), "demo".into(), "web-settings".into())),
        "{objects:?}"
    );
    assert!(
        !objects.contains(&("ConfigMap".into(), "demo".into(), "settings".into())),
        "{objects:?}"
    );
}

/// `check kubernetes` inside a git work tree whose GitRepository paths are written from the top
/// level (`./kubernetes/apps`): the layers resolve from the top level, as Flux and flux-local
/// do, and PATH narrows the report (paths relative to PATH, nothing from outside it).
#[test]
fn a_path_below_the_work_tree_resolves_layers_from_the_top_level() {
    let repo = TempRepo::empty();
    repo.write(
        "kubernetes/flux/gotk-sync.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  ref:\n    branch: main\n  url: https://git.example.com/lab/home.git\n---\n\
         apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./kubernetes/flux\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .write(
        "kubernetes/flux/apps.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./kubernetes/apps\n  prune: true\n  wait: true\n  healthChecks:\n    - apiVersion: v1\n      kind: ConfigMap\n      name: settings\n      namespace: lab\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .write(
        "kubernetes/apps/settings.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: lab\ndata:\n  a: b\n",
    )
    .write("talos/machine.yaml", "machine: [unclosed\n");
    init_and_commit_all(repo.path(), "init");
    let path = repo.path().join("kubernetes");
    let run = fluxmend(command_args("check", &path, &["--format", "json"]));
    let report = run.json();
    assert_eq!(report["summary"]["live_layers"], 2, "{report:#}");
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{report:#}");
    assert_eq!(findings[0]["file"], "flux/apps.yaml", "relative to PATH");
    assert_eq!(run.code, 0, "{report:#}");
}

/// A FluxInstance a layer applies to another cluster (`spec.kubeConfig`) owns that cluster's
/// root source: FM001 still reports the health gate, but no self-lock of this cluster, and
/// FM006 sees no trust loop through this cluster's source of the same name.
#[test]
fn an_instance_applied_to_another_cluster_is_no_self_lock_here() {
    let repo = TempRepo::with_flux_instance();
    let apps = repo.read("clusters/prod/apps.yaml")
        + "  kubeConfig:\n    secretRef:\n      name: edge-kubeconfig\n";
    repo.write("clusters/prod/apps.yaml", apps).write(
        "apps/flux.yaml",
        FLUX_INSTANCE.to_string()
            + "  kustomize:\n    patches:\n      - target:\n          kind: GitRepository\n        patch: |\n          - op: add\n            path: /spec/verify\n            value:\n              mode: HEAD\n              secretRef:\n                name: pgp-keys\n",
    );
    let (_, findings) = rule_findings(repo.path(), "FM001");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let message = findings[0]["message"].as_str().unwrap();
    assert!(!message.contains("self-lock"), "{message}");
    assert!(message.contains("kubeConfig reaches"), "{message}");
    let (_, findings) = rule_findings(repo.path(), "FM006");
    assert!(findings.is_empty(), "{findings:#?}");
}
