//! FM007 (overlapping-instance-patches) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

use crate::common::{
    self, assert_no_finding_of, assert_unfixable_and_documented, fixture, fluxmend,
};

per_case! {
    [findings_match_snapshots_in_text_and_json]
    fm007_overlapping_patches => "fm007-overlapping-patches",
    fm007_different_fields => "fm007-different-fields",
}

fn findings_match_snapshots_in_text_and_json(case: &str) {
    let root = fixture(case, "before");
    let root = root.to_str().unwrap();
    let text = fluxmend(["check", root, "--rule", "FM007", "--show-notes"]);
    text.assert_no_panic();
    insta::assert_snapshot!(format!("{case}-check"), text.stdout);
    let json = fluxmend(["check", root, "--rule", "FM007", "--format", "json"]).json();
    insta::assert_snapshot!(
        format!("{case}-json"),
        serde_json::to_string_pretty(&json["findings"]).unwrap()
    );
}

#[test]
fn the_negative_control_has_no_finding() {
    assert_no_finding_of("FM007", "fm007-different-fields");
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    assert_unfixable_and_documented(
        "FM007",
        "overlapping-instance-patches",
        "fm007-overlapping-patches",
    );
}

/// flux-operator appends the instance's patches after its own and kustomize applies them in
/// order: the later patch decides, deterministically (a note naming it). A patch whose target
/// selects nothing when the operator applies it (`namespace:`) is not compared.
#[test]
fn the_later_patch_decides_and_only_selecting_targets_are_compared() {
    let root = fixture("fm007-overlapping-patches", "before");
    let (_, findings) = common::rule_findings(&root, "FM007");
    let at: Vec<(u64, &str)> = findings
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(at, vec![(31, "note"), (54, "note")], "{findings:#?}");
    for f in &findings {
        let message = f["message"].as_str().unwrap();
        assert!(message.contains("applied last and decides"), "{message}");
        assert!(!message.contains(":63"), "{message}");
    }
}
