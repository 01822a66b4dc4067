//! FM006 (root-source-trust-loop) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

mod common;

use common::{assert_no_finding_of, assert_unfixable_and_documented, fixture, fluxmend};

const CASES: &[&str] = &[
    "fm006-verify-patch",
    "fm006-sync-at-bootstrap",
    "fm006-verify-in-sync-file",
    "fm006-bootstrap-only",
];

#[test]
fn findings_match_snapshots_in_text_and_json() {
    for case in CASES {
        let root = fixture(case, "before");
        let root = root.to_str().unwrap();
        let text = fluxmend(["check", root, "--rule", "FM006"]);
        text.assert_no_panic();
        insta::assert_snapshot!(format!("{case}-check"), text.stdout);
        let json = fluxmend(["check", root, "--rule", "FM006", "--format", "json"]).json();
        insta::assert_snapshot!(
            format!("{case}-json"),
            serde_json::to_string_pretty(&json["findings"]).unwrap()
        );
    }
}

#[test]
fn the_negative_control_has_no_finding() {
    assert_no_finding_of("FM006", "fm006-bootstrap-only");
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    assert_unfixable_and_documented("FM006", "root-source-trust-loop", "fm006-verify-patch");
}
