//! Suppressions with a reason: the `fluxmend.io/ignore` annotation (object or layer) and the
//! `# fluxmend: ignore[RULE] reason` comment. Suppressed findings leave the exit code, are not
//! fixed (nor is a fix they share), and are listed with their reason in JSON and SARIF;
//! malformed suppressions are errors, unused ones warnings.

use crate::common::{self, TempRepo, find_diagnostic, fixture};
use serde_json::Value;

const GAMING: &str = "apps/base/forgejo/runner-gaming.yaml";
const BRIDGE: &str = "apps/base/forgejo/runner-bridge.yaml";
const APPS_LAYER: &str = "clusters/kai-server/apps.yaml";

/// The forgejo runners layout: seven runners health-gated by `apps`, one fix moving them all.
fn runners() -> TempRepo {
    TempRepo::copy_of(&fixture("forgejo-runners-in-apps", "before"))
}

/// Add `annotations` (already indented lines) to the metadata of the document named `name`.
fn annotate(repo: &TempRepo, file: &str, name: &str, annotation: &str) {
    let text = repo.read(file);
    let needle = format!("metadata:\n  name: {name}\n");
    assert!(text.contains(&needle), "{file} has no {name}");
    repo.write(
        file,
        text.replacen(
            &needle,
            &format!("{needle}  annotations:\n    fluxmend.io/ignore: {annotation}\n"),
            1,
        ),
    );
}

fn rules_of(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect()
}

fn messages(report: &Value) -> Vec<String> {
    common::diagnostics(report)
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_annotated_object_is_suppressed_and_its_shared_fix_withheld() {
    let repo = runners();
    let (_, before) = repo.check_json(&["--rule", "FM002"]);
    let count = before["findings"].as_array().unwrap().len();
    assert!(count > 1);
    assert!(before["findings"][0]["fixable"].as_bool().unwrap());
    annotate(
        &repo,
        GAMING,
        "forgejo-runner-gaming",
        "\"FM002: the mod packer needs runner 6.x, reviewed 2026-11\"",
    );
    let (run, report) = repo.check_json(&["--rule", "FM002"]);
    assert_eq!(run.code, 1, "the other runners still stand");
    let suppressed = report["suppressed"].as_array().unwrap();
    assert_eq!(suppressed.len(), 1);
    assert_eq!(suppressed[0]["file"], GAMING);
    assert_eq!(
        suppressed[0]["suppression"]["reason"],
        "the mod packer needs runner 6.x, reviewed 2026-11"
    );
    assert_eq!(suppressed[0]["suppression"]["form"], "annotation");
    assert_eq!(report["summary"]["suppressed"], 1);
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), count - 1);
    // The one fix moved every runner, the suppressed one too: none is offered now.
    assert!(findings.iter().all(|f| f["fixable"] == false));
    // `fix` changes nothing, says why, and does not exit 0 while the others stand (they are
    // warnings: `--fail-on warning`).
    let fix = repo.run(
        "fix",
        &[
            "--rule",
            "FM002",
            "--format",
            "json",
            "--fail-on",
            "warning",
        ],
    );
    let plan = fix.json();
    assert_eq!(plan["files"].as_array().unwrap().len(), 0, "{}", fix.stdout);
    assert_eq!(plan["suppressed"].as_array().unwrap().len(), 1);
    let reasons: Vec<&str> = plan["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["no_fix_reason"].as_str())
        .collect();
    assert!(
        reasons.iter().any(|r| r.contains("suppressed")
            && r.contains("forgejo-runner-gaming")
            && r.contains("mod packer")),
        "{reasons:?}"
    );
    assert_eq!(fix.code, 1);
}

#[test]
fn a_layer_annotation_suppresses_every_finding_of_the_layer_and_the_exit_code_is_zero() {
    let repo = runners();
    annotate(
        &repo,
        APPS_LAYER,
        "apps",
        "\"FM002, health-checks-ignored: runners accepted in apps; FM001: no instance here\"",
    );
    let (run, report) = repo.check_json(&[]);
    assert_eq!(report["findings"].as_array().unwrap().len(), 0, "{report}");
    let suppressed = rules_of(&report["suppressed"]);
    assert!(suppressed.contains(&"FM002") && suppressed.contains(&"FM005"));
    // The FM001 entry suppresses nothing: reported, as a warning at the annotation.
    let unused = find_diagnostic(&report, APPS_LAYER, "unused suppression: no FM001 finding");
    assert_eq!(unused["severity"], "warning");
    assert_eq!(unused["line"], 7);
    assert_eq!(run.code, 1, "the unused suppression is a warning");
    let (run, _) = repo.check_json(&["--fail-on", "error"]);
    assert_eq!(run.code, 0, "suppressed findings do not count");
    // Only the rules that ran can leave a suppression unused.
    let (_, report) = repo.check_json(&["--rule", "FM002"]);
    assert!(
        messages(&report).iter().all(|m| !m.contains("unused")),
        "{report}"
    );
    let fix = repo.run("fix", &[]);
    assert!(fix.stderr.contains("nothing to change"), "{}", fix.stderr);
    assert!(fix.stderr.contains("suppressed: "), "{}", fix.stderr);
}

#[test]
fn a_comment_on_the_line_or_above_suppresses() {
    let repo = runners();
    let (_, before) = repo.check_json(&["--rule", "FM002"]);
    let bridge = before["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["file"] == BRIDGE)
        .expect("a finding in runner-bridge.yaml");
    let line = bridge["line"].as_u64().unwrap() as usize;
    let text = repo.read(BRIDGE);
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // Alone on the line above the one the finding points at.
    lines.insert(
        line - 1,
        "# fluxmend: ignore[disposable-workload-in-gated-layer] bridge runner pinned".into(),
    );
    repo.write(BRIDGE, lines.join("\n") + "\n");
    let (_, report) = repo.check_json(&["--rule", "FM002"]);
    let suppressed = report["suppressed"].as_array().unwrap();
    assert_eq!(suppressed.len(), 1, "{report}");
    assert_eq!(suppressed[0]["suppression"]["form"], "comment");
    assert_eq!(suppressed[0]["suppression"]["line"], line);
    assert_eq!(
        suppressed[0]["suppression"]["reason"],
        "bridge runner pinned"
    );
    // Trailing on the finding's line works too; two lines above does not.
    lines.remove(line - 1);
    lines[line - 1].push_str("  # fluxmend: ignore[FM002] bridge runner pinned");
    repo.write(BRIDGE, lines.join("\n") + "\n");
    let (_, report) = repo.check_json(&["--rule", "FM002"]);
    assert_eq!(report["suppressed"].as_array().unwrap().len(), 1);
    lines[line - 1] =
        lines[line - 1].replace("  # fluxmend: ignore[FM002] bridge runner pinned", "");
    lines.insert(line - 2, "# fluxmend: ignore[FM002] too far".into());
    repo.write(BRIDGE, lines.join("\n") + "\n");
    let (_, report) = repo.check_json(&["--rule", "FM002"]);
    assert_eq!(report["suppressed"].as_array().unwrap().len(), 0);
    let unused = find_diagnostic(&report, BRIDGE, "unused suppression");
    assert_eq!(unused["line"], line - 1);
    assert_eq!(unused["column"], 1);
}

#[test]
fn a_suppression_without_a_reason_or_with_an_unknown_rule_is_an_error() {
    let repo = runners();
    annotate(&repo, GAMING, "forgejo-runner-gaming", "FM002");
    repo.append(BRIDGE, "# fluxmend: ignore[FM999] whatever\n");
    repo.append(GAMING, "    # fluxmend: ignore[FM002]\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1);
    assert_eq!(
        report["summary"]["suppressed"], 0,
        "nothing malformed suppresses"
    );
    let no_reason = find_diagnostic(&report, GAMING, "\"FM002\" gives no reason");
    assert_eq!(no_reason["severity"], "error");
    assert!(no_reason["line"].as_u64().is_some() && no_reason["column"] == 25);
    let unknown = find_diagnostic(&report, BRIDGE, "no rule \"FM999\"");
    assert_eq!(unknown["severity"], "error");
    let comment = find_diagnostic(&report, GAMING, "ignore[FM002] gives no reason");
    assert_eq!(comment["column"], 5);
    let text = repo.run("check", &[]);
    assert!(
        text.stdout.contains(&format!("{GAMING}:")) && text.stdout.contains(": error: "),
        "{}",
        text.stdout
    );
}

#[test]
fn sarif_marks_suppressed_results_in_source_and_validates() {
    let repo = runners();
    annotate(
        &repo,
        GAMING,
        "forgejo-runner-gaming",
        "\"FM002: reviewed 2026-11\"",
    );
    let run = repo.run("check", &["--format", "sarif"]);
    let log = run.json();
    let schema_text =
        std::fs::read_to_string(common::manifest_dir().join("tests/data/sarif-schema-2.1.0.json"))
            .unwrap();
    let schema: Value = serde_json::from_str(&schema_text).unwrap();
    let validator = jsonschema::draft7::new(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&log).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let results = log["runs"][0]["results"].as_array().unwrap();
    let held: Vec<&Value> = results
        .iter()
        .filter(|r| r.get("suppressions").is_some())
        .collect();
    assert_eq!(held.len(), 1);
    assert_eq!(held[0]["suppressions"][0]["kind"], "inSource");
    assert_eq!(
        held[0]["suppressions"][0]["justification"],
        "reviewed 2026-11"
    );
    assert_eq!(
        held[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        GAMING
    );
}
