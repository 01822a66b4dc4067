//! FM004 (patch-matches-nothing) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, the one fix (a FluxInstance target's `namespace:`), no fix
//! for the rest, and `explain`.

use crate::common::{
    self, assert_no_finding_of, assert_unfixable_and_documented, fixture, fluxmend,
};

per_case! {
    [findings_match_snapshots_in_text_and_json]
    fm004_instance_patches => "fm004-instance-patches",
    fm004_instance_order => "fm004-instance-order",
    fm004_instance_namespace => "fm004-instance-namespace",
    fm004_flux_components => "fm004-flux-components",
    fm004_layer_patches => "fm004-layer-patches",
    fm004_clean => "fm004-clean",
}

fn findings_match_snapshots_in_text_and_json(case: &str) {
    let root = fixture(case, "before");
    let root = root.to_str().unwrap();
    let text = fluxmend(["check", root, "--rule", "FM004", "--show-notes"]);
    text.assert_no_panic();
    insta::assert_snapshot!(format!("{case}-check"), text.stdout);
    let json = fluxmend(["check", root, "--rule", "FM004", "--format", "json"]).json();
    insta::assert_snapshot!(
        format!("{case}-json"),
        serde_json::to_string_pretty(&json["findings"]).unwrap()
    );
}

#[test]
fn the_negative_control_has_no_finding() {
    assert_no_finding_of("FM004", "fm004-clean");
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    assert_unfixable_and_documented("FM004", "patch-matches-nothing", "fm004-instance-patches");
}

/// An instance without `spec.sync` (set at bootstrap) patching the root source: the target is
/// the source the applying layer reads, so it is not a miss; a component typo still is.
#[test]
fn a_patch_on_a_root_source_synced_at_bootstrap_is_not_a_miss() {
    let root = fixture("fm006-sync-at-bootstrap", "before");
    let run = fluxmend(["check", root.to_str().unwrap(), "--rule", "FM004"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stdout.contains("[FM004]"), "{}", run.stdout);
}

/// kustomize itself (kubectl) agrees: the patch FM004 reports changes nothing and exits 0, the
/// one it does not report applies.
#[test]
fn kubectl_kustomize_drops_the_reported_patch_silently() {
    let root = fixture("fm004-layer-patches", "before");
    let rendered = common::kubectl_kustomize(&root.join("apps/prod"));
    assert!(!rendered.contains("kind: StatefulSet"), "{rendered}");
    assert!(rendered.contains("replicas: 1"), "{rendered}");
    assert!(rendered.contains("tier: frontend"), "{rendered}");
    let check = fluxmend(["check", root.to_str().unwrap(), "--rule", "FM004"]);
    assert!(
        check
            .stdout
            .contains("apps/prod/kustomization.yaml:16:7: FM004 warning"),
        "{}",
        check.stdout
    );
    assert!(!check.stdout.contains("labelSelector"), "{}", check.stdout);
}

/// flux-operator runs an instance's patches before its namespace and label transformers
/// (internal/builder/templates.go): a target with `namespace:` or a labelSelector on a label the
/// operator adds selects nothing (errors); kind is an anchored regular expression, the sync
/// objects carry their namespace, part-of is in the manifests (no finding); a component the
/// instance does not install is a note.
#[test]
fn instance_patches_select_what_the_operator_has_when_it_applies_them() {
    let (code, findings) =
        common::rule_findings(&fixture("fm004-instance-order", "before"), "FM004");
    let at: Vec<(u64, &str)> = findings
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(
        at,
        vec![(23, "error"), (32, "error"), (65, "note")],
        "{findings:#?}"
    );
    assert_eq!(code, 1);
    let message = |i: usize| findings[i]["message"].as_str().unwrap();
    assert!(
        message(0).contains("must not contain a namespace"),
        "{}",
        message(0)
    );
    assert!(message(0).contains("remove `namespace:`"), "{}", message(0));
    assert!(
        message(1).contains("app.kubernetes.io/managed-by"),
        "{}",
        message(1)
    );
    assert!(message(2).contains("does not install"), "{}", message(2));
}

/// A Flux Kustomization's `spec.components` join the kustomization at its path (fluxcd/pkg
/// `kustomize_generator.go)`: that kustomization's patches select their objects. kubectl agrees on
/// a copy where the component is appended as Flux does: the HPA patch applies, the ScaledObject
/// (named `${APP}` until postBuild) and the PodDisruptionBudget patches change nothing.
#[test]
fn flux_components_are_part_of_the_build_their_patches_see() {
    let root = fixture("fm004-flux-components", "before");
    let (_, findings) = common::rule_findings(&root, "FM004");
    let lines: Vec<u64> = findings
        .iter()
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, vec![26, 34], "{findings:#?}");
    assert!(
        findings[1]["message"]
            .as_str()
            .unwrap()
            .contains("postBuild substitutes"),
        "{findings:#?}"
    );
    let copy = tempfile::tempdir().unwrap();
    common::copy_tree(&root, copy.path());
    let kustomization = copy.path().join("apps/lab/kustomization.yaml");
    let text = std::fs::read_to_string(&kustomization).unwrap().replace(
        "  - ../components/nfs-scaler\n",
        "  - ../components/nfs-scaler\n  - ../components/autoscaling\n",
    );
    std::fs::write(&kustomization, text).unwrap();
    let rendered = common::kubectl_kustomize(&copy.path().join("apps/lab"));
    assert!(rendered.contains("maxReplicas: 2"), "{rendered}");
    assert!(rendered.contains("tier: media"), "{rendered}");
    assert!(rendered.contains("minReplicaCount: 0"), "{rendered}");
    assert!(!rendered.contains("PodDisruptionBudget"), "{rendered}");
}

/// A FluxInstance patch target whose `namespace:` keeps it from selecting has one plain intent:
/// the fix removes that line and nothing else (a target whose namespace selects keeps it), the
/// finding is gone, a second run changes nothing; the diff is pinned.
#[test]
fn a_namespace_that_keeps_an_instance_patch_from_selecting_is_removed() {
    common::assert_fix_writes_after_tree("fm004-instance-namespace", "FM004", &["--rule", "FM004"]);
    let root = fixture("fm004-instance-namespace", "before");
    let fix = fluxmend(["fix", root.to_str().unwrap(), "--rule", "FM004"]);
    insta::assert_snapshot!("fm004-instance-namespace-diff", fix.stdout);
    assert!(fix.stderr.contains("verified: builtin"), "{}", fix.stderr);
}
