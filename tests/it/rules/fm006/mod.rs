//! FM006 (root-source-trust-loop) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

use crate::common::{
    self, assert_no_finding_of, assert_unfixable_and_documented, fixture, fluxmend,
};

per_case! {
    [findings_match_snapshots_in_text_and_json]
    fm006_verify_patch => "fm006-verify-patch",
    fm006_sync_at_bootstrap => "fm006-sync-at-bootstrap",
    fm006_verify_in_sync_file => "fm006-verify-in-sync-file",
    fm006_bootstrap_only => "fm006-bootstrap-only",
    fm006_defects => "fm006-defects",
}

fn findings_match_snapshots_in_text_and_json(case: &str) {
    let root = fixture(case, "before");
    let root = root.to_str().unwrap();
    let text = fluxmend(["check", root, "--rule", "FM006", "--show-notes"]);
    text.assert_no_panic();
    insta::assert_snapshot!(format!("{case}-check"), text.stdout);
    let json = fluxmend(["check", root, "--rule", "FM006", "--format", "json"]).json();
    insta::assert_snapshot!(
        format!("{case}-json"),
        serde_json::to_string_pretty(&json["findings"]).unwrap()
    );
}

#[test]
fn the_negative_control_has_no_finding() {
    assert_no_finding_of("FM006", "fm006-bootstrap-only");
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    assert_unfixable_and_documented("FM006", "root-source-trust-loop", "fm006-verify-patch");
}

/// Severity by what the setting costs: a credentials name (pullSecret, secretRef) is no finding;
/// a well-formed verify or certSecretRef delivered through its own source is a note (the
/// layout's risk, the recovery, the alternatives); a concrete defect raises it: a list cosign
/// refuses or a regexp Go does not compile (error), a verify patch that selects nothing
/// (warning).
#[test]
fn severity_follows_the_defect_not_the_layout() {
    let (code, findings) = common::rule_findings(&fixture("fm006-defects", "before"), "FM006");
    let at: Vec<(u64, &str)> = findings
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["severity"].as_str().unwrap()))
        .collect();
    assert_eq!(
        at,
        vec![(26, "error"), (39, "warning"), (47, "note")],
        "{findings:#?}"
    );
    assert_eq!(code, 1);
    let message = |i: usize| findings[i]["message"].as_str().unwrap();
    assert!(message(0).contains("lists 2 identities"), "{}", message(0));
    assert!(message(0).contains("Go compiles"), "{}", message(0));
    assert!(message(1).contains("selects no object"), "{}", message(1));
    assert!(message(2).contains("Recovery: re-apply"), "{}", message(2));
    // The layout of devantler-tech/platform#3006 with well-formed values: notes only.
    let (code, findings) = common::rule_findings(&fixture("fm006-verify-patch", "before"), "FM006");
    assert!(
        findings.iter().all(|f| f["severity"] == "note"),
        "{findings:#?}"
    );
    assert_eq!(findings.len(), 2);
    let _ = code;
}
