//! Flux Operator ResourceSets: the layers a ResourceSet generates exist in the model, with
//! provenance, and their names resolve `dependsOn`; what cannot be expanded is a note, never an
//! error; a problem inside a generated layer is found, and its fix refused (the template is
//! what would have to change).

use crate::common::{TempRepo, diagnostics, fixture, fluxmend, layer};

const GENERATED: &str = "clusters/staging/tenants.yaml#ResourceSet/flux-system/tenants";

#[test]
fn generated_layers_exist_and_resolve_depends_on() {
    let repo = TempRepo::copy_of(&fixture("healthy-resourcesets", "before"));
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(diagnostics(&report).is_empty(), "{report:#}");
    let graph = repo.graph_json();
    for tenant in ["team-a", "team-b", "platform-tools"] {
        let l = layer(&graph, "flux-system", &format!("tenant-{tenant}"));
        assert_eq!(l["file"], GENERATED, "{l:#}");
        assert_eq!(l["live"], true);
        assert_eq!(l["path"], format!("./tenants/{tenant}"));
        // The generated layer's targetNamespace reaches what it applies.
        let objects = l["variants"][0]["objects"].to_string();
        assert!(
            objects.contains(&format!("\"namespace\":\"{tenant}\"")),
            "{objects}"
        );
    }
    let apps = layer(&graph, "flux-system", "apps");
    assert_eq!(apps["depends_on"].as_array().unwrap().len(), 2, "{apps:#}");
}

/// A template flux-operator alone can render (`inputs.id`): a note saying why, no layer, and a
/// dependsOn on what it would generate is a note too, not an error.
#[test]
fn what_cannot_be_expanded_is_a_note() {
    let repo = TempRepo::copy_of(&fixture("healthy-resourcesets", "before"));
    let tenants = repo.read("clusters/staging/tenants.yaml").replace(
        "name: tenant-<< inputs.tenant >>",
        "name: tenant-<< inputs.id >>",
    );
    repo.write("clusters/staging/tenants.yaml", tenants);
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let notes: Vec<String> = diagnostics(&report)
        .iter()
        .map(|d| {
            assert_eq!(d["severity"], "note", "{d:#}");
            d["message"].as_str().unwrap().to_string()
        })
        .collect();
    assert!(
        notes.iter().any(|n| n.contains(
            "ResourceSet flux-system/tenants: not expanded (the template uses inputs.id"
        )),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(|n| n.contains(
            "dependsOn flux-system/tenant-team-a, which no modelled Flux Kustomization defines"
        )),
        "{notes:#?}"
    );
}

/// A generated tenant layer with `wait: true` that also runs a CI runner: FM002 reports it in
/// the generated file, and its fix is refused because the layer comes from a template.
#[test]
fn a_problem_in_a_generated_layer_is_found_and_its_fix_refused() {
    let repo = TempRepo::copy_of(&fixture("healthy-resourcesets", "before"));
    let tenants = repo.read("clusters/staging/tenants.yaml").replace(
        "        prune: true\n",
        "        prune: true\n        wait: true\n",
    );
    repo.write("clusters/staging/tenants.yaml", tenants).write(
        "tenants/team-a/runner.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: runner\nspec:\n  selector:\n    matchLabels:\n      app: runner\n  template:\n    metadata:\n      labels:\n        app: runner\n    spec:\n      containers:\n        - name: runner\n          image: code.forgejo.org/forgejo/runner:6.3.1\n",
    );
    let run = fluxmend(["fix", repo.path().to_str().unwrap(), "--format", "json"]);
    let report = run.json();
    let finding = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FM002")
        .unwrap_or_else(|| panic!("an FM002 finding: {report:#}"));
    assert_eq!(finding["layer"]["name"], "tenant-team-a");
    assert!(
        finding["no_fix_reason"].as_str().unwrap().contains(
            "is generated from ResourceSet flux-system/tenants (clusters/staging/tenants.yaml:"
        ),
        "{finding:#}"
    );
    assert!(!run.stdout.contains("diff --git"));
    // Nothing generated is ever written: the tree on disk has no such file.
    assert!(!repo.path().join(GENERATED).exists());
}

/// The bundle shape: a `resourcesTemplate` with `range` over a list input and `if` on a boolean
/// one generates one Flux Kustomization per item; each is a layer, with `decryption` only where
/// the input says so.
#[test]
fn a_range_template_generates_one_layer_per_item() {
    let repo = TempRepo::copy_of(&fixture("healthy-resourcesets", "before"));
    repo.write(
        "clusters/staging/bundles.yaml",
        "apiVersion: fluxcd.controlplane.io/v1\nkind: ResourceSet\nmetadata:\n  name: bundles\n  namespace: flux-system\nspec:\n  inputs:\n    - bundle: addons\n      decryption: false\n      apps: [team-a, team-b]\n    - bundle: tools\n      decryption: true\n      apps: [platform-tools]\n  resourcesTemplate: |\n    <<- range $app := inputs.apps >>\n    ---\n    apiVersion: kustomize.toolkit.fluxcd.io/v1\n    kind: Kustomization\n    metadata:\n      name: << inputs.bundle >>-<< $app >>\n    spec:\n      interval: 10m\n      prune: true\n      <<- if inputs.decryption >>\n      decryption:\n        provider: sops\n      <<- end >>\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n      path: ./tenants/<< $app >>\n    <<- end >>\n",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 0, "{report:#}");
    let graph = repo.graph_json();
    for name in ["addons-team-a", "addons-team-b", "tools-platform-tools"] {
        let l = layer(&graph, "flux-system", name);
        assert_eq!(
            l["file"],
            "clusters/staging/bundles.yaml#ResourceSet/flux-system/bundles"
        );
    }
    let generated = fluxmend::load::Repo::load(repo.path()).unwrap();
    let id = generated
        .file_id("clusters/staging/bundles.yaml#ResourceSet/flux-system/bundles")
        .unwrap();
    let text = generated.file(id).yaml.text();
    assert_eq!(text.matches("provider: sops").count(), 1, "{text}");
}
