//! FM007 (overlapping-instance-patches) end to end on the fixture repositories: text and JSON findings
//! (snapshots), the negative control, no fix offered, and `explain`.

mod common;

use common::{fixture, fluxmend};

const CASES: &[&str] = &["fm007-overlapping-patches", "fm007-different-fields"];

#[test]
fn findings_match_snapshots_in_text_and_json() {
    for case in CASES {
        let root = fixture(case, "before");
        let root = root.to_str().unwrap();
        let text = fluxmend(["check", root, "--rule", "FM007"]);
        text.assert_no_panic();
        insta::assert_snapshot!(format!("{case}-check"), text.stdout);
        let json = fluxmend(["check", root, "--rule", "FM007", "--format", "json"]).json();
        insta::assert_snapshot!(
            format!("{case}-json"),
            serde_json::to_string_pretty(&json["findings"]).unwrap()
        );
    }
}

#[test]
fn the_negative_control_has_no_finding() {
    let root = fixture("fm007-different-fields", "before");
    let run = fluxmend(["check", root.to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let findings = run.json()["findings"].clone();
    assert!(
        findings
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "FM007"),
        "{findings:#}"
    );
}

#[test]
fn no_fix_is_offered_and_explain_documents_the_rule() {
    let root = fixture("fm007-overlapping-patches", "before");
    let fix = fluxmend(["fix", root.to_str().unwrap(), "--rule", "FM007"]);
    fix.assert_no_panic();
    assert_eq!(fix.stdout, "", "no diff: {}", fix.stderr);
    assert!(fix.stderr.contains("no fix: "), "{}", fix.stderr);
    let explain = fluxmend(["explain", "FM007"]);
    assert_eq!(explain.code, 0);
    assert!(
        explain
            .stdout
            .contains("# FM007 overlapping-instance-patches"),
        "{}",
        explain.stdout
    );
    let rules = fluxmend(["rules"]);
    assert!(rules.stdout.contains("FM007"), "{}", rules.stdout);
}
