//! FM004 (patch-matches-nothing) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

mod common;

use common::{assert_no_finding_of, assert_unfixable_and_documented, fixture, fluxmend};

const CASES: &[&str] = &[
    "fm004-instance-patches",
    "fm004-layer-patches",
    "fm004-clean",
];

#[test]
fn findings_match_snapshots_in_text_and_json() {
    for case in CASES {
        let root = fixture(case, "before");
        let root = root.to_str().unwrap();
        let text = fluxmend(["check", root, "--rule", "FM004"]);
        text.assert_no_panic();
        insta::assert_snapshot!(format!("{case}-check"), text.stdout);
        let json = fluxmend(["check", root, "--rule", "FM004", "--format", "json"]).json();
        insta::assert_snapshot!(
            format!("{case}-json"),
            serde_json::to_string_pretty(&json["findings"]).unwrap()
        );
    }
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
