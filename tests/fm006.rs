//! FM006 (root-source-trust-loop) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

mod common;

use common::{fixture, fluxmend};

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
    let root = fixture("fm006-bootstrap-only", "before");
    let run = fluxmend(["check", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let findings = run.json()["findings"].clone();
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "FM006"),
        "{findings:#}"
    );
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    let root = fixture("fm006-verify-patch", "before");
    let fix = fluxmend(["fix", root.to_str().unwrap(), "--rule", "FM006"]);
    fix.assert_no_panic();
    assert_eq!(fix.stdout, "", "no diff: {}", fix.stderr);
    assert!(fix.stderr.contains("no fix: "), "{}", fix.stderr);
    let explain = fluxmend(["explain", "FM006"]);
    assert_eq!(explain.code, 0);
    assert!(
        explain.stdout.contains("# FM006 root-source-trust-loop"),
        "{}",
        explain.stdout
    );
    let rules = fluxmend(["rules"]);
    assert!(rules.stdout.contains("FM006"), "{}", rules.stdout);
}
