//! What bots and CI read: pull-request text, `fix --format json`'s commit and branch,
//! `--pr-body`, SARIF (validated against the vendored 2.1.0 schema), GitHub annotations, the
//! JSON `version` and `fixable`, completions and the man page.

use crate::common::{self, fixture, fluxmend, git, git_repo_with};
use serde_json::Value;

fn sarif_schema() -> jsonschema::Validator {
    let text =
        std::fs::read_to_string(common::manifest_dir().join("tests/data/sarif-schema-2.1.0.json"))
            .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::draft7::new(&schema).expect("the vendored schema compiles")
}

#[test]
fn commit_message_is_a_pull_request() {
    let repo = git_repo_with("flux-instance-oci-provider");
    let root = repo.path().to_str().unwrap();
    let body_file = repo.path().join("../pr-body-14b.md");
    let run = fluxmend([
        "fix",
        "--commit",
        "--branch",
        "fluxmend/fm001",
        "--format",
        "json",
        "--pr-body",
        body_file.to_str().unwrap(),
        root,
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json = run.json();
    assert_eq!(json["version"], 1);
    common::assert_json_v1("FixReport", &json);
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_eq!(json["commit"].as_str(), Some(head.trim()));
    assert_eq!(json["branch"], "fluxmend/fm001");
    assert_eq!(json["applied"], "committed");

    let message = git(repo.path(), &["log", "-1", "--format=%B"]);
    let (subject, body) = message.split_once("\n\n").unwrap();
    // Two FluxInstances (one per provider) in layers of one name: one subject, not two.
    assert_eq!(
        subject,
        "fluxmend: protect FluxInstance from the prune of infrastructure-controllers (phase 1 of 2)"
    );
    for section in [
        "## Findings",
        "## Files",
        "## Verification",
        "## How to review",
    ] {
        assert!(body.contains(section), "{section} missing:\n{body}");
    }
    assert!(
        body.contains("- **FM001** `FluxInstance/flux-system/flux`"),
        "{body}"
    );
    assert!(body.contains("- edited `k8s/providers/docker/infrastructure/controllers/flux-instance/flux-instance.yaml`"), "{body}");
    assert!(body.contains("Trade-off:"), "{body}");
    // Wrapped at 72 columns (characters, not bytes: an em dash is one column): a longer line
    // ends in a long unbreakable word (a path), and
    // list items continue on indented lines.
    for line in body.lines() {
        let last = line.rsplit(' ').next().unwrap_or("");
        assert!(
            line.chars().count() <= 72 || last.len() > 40,
            "line over 72 columns: {line:?}"
        );
    }
    assert!(
        body.lines()
            .any(|l| l.starts_with("    ") && !l.trim().starts_with('-')),
        "{body}"
    );
    // --pr-body is the message's body, for tools that open the pull request.
    let written = std::fs::read_to_string(&body_file).unwrap();
    std::fs::remove_file(&body_file).unwrap();
    assert_eq!(written.trim_end(), body.trim_end());

    // Phase 2 names the move itself; the commit lands on the current branch.
    let run = fluxmend(["fix", "--commit", "--format", "json", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(run.json()["branch"], "fluxmend/fm001");
    let message = git(repo.path(), &["log", "-1", "--format=%B"]);
    assert_eq!(
        message.lines().next(),
        Some("fluxmend: move FluxInstance out of infrastructure-controllers (phase 2 of 2)")
    );
    assert!(
        message.contains("- created `k8s/clusters/base/flux-kustomization-flux-instance.yaml`"),
        "{message}"
    );
}

#[test]
fn fix_json_without_commit_has_null_commit_and_no_pr_body_when_nothing_changes() {
    let before = fixture("flux-instance-oci-provider", "before");
    let run = fluxmend(["fix", "--format", "json", before.to_str().unwrap()]);
    let json = run.json();
    assert_eq!(json["commit"], Value::Null);
    assert_eq!(json["branch"], Value::Null);
    assert_eq!(json["findings"][0]["fixable"], true);

    let clean = fixture("fm002-clean", "before");
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.md");
    let run = fluxmend([
        "fix",
        "--pr-body",
        body.to_str().unwrap(),
        clean.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!body.exists(), "nothing to change writes no body");
}

/// Real `check`, `fix` and `graph` documents validate against the JSON v1 schema generated from
/// the output types (closed: no field it does not describe), across fixtures that give phased
/// fixes, fixes the kustomize gate builds, findings without a fix, diagnostics and suppressions.
#[test]
fn json_v1_documents_validate_against_the_schema() {
    let suppressing = common::TempRepo::copy_of(&fixture("forgejo-runners-in-apps", "before"));
    suppressing.replace(
        "apps/base/forgejo/runner-gaming.yaml",
        "metadata:\n  name: forgejo-runner-gaming\n",
        "metadata:\n  name: forgejo-runner-gaming\n  annotations:\n    fluxmend.io/ignore: \"FM002: reviewed\"\n",
    );
    // A suppression naming no rule: an error diagnostic.
    suppressing.append(
        "apps/base/forgejo/runner-bridge.yaml",
        "# fluxmend: ignore[FM999] whatever\n",
    );
    let mut roots: Vec<std::path::PathBuf> = [
        "fm001-inline",
        "forgejo-runners-in-apps",
        "fm004-instance-patches",
        "fm006-defects",
        "fm005-flow-crlf",
        "fm007-overlapping-patches",
        "healthy-resourcesets",
    ]
    .iter()
    .map(|case| fixture(case, "before"))
    .collect();
    roots.push(suppressing.path().to_path_buf());
    let mut seen = std::collections::BTreeSet::new();
    for root in &roots {
        let root = root.to_str().unwrap();
        for (def, args) in [
            ("Check", vec!["check", "--format", "json", root]),
            ("FixReport", vec!["fix", "--format", "json", root]),
            ("Graph", vec!["graph", "--format", "json", root]),
        ] {
            let run = fluxmend(&args);
            run.assert_no_panic();
            let doc = run.json();
            common::assert_json_v1(def, &doc);
            // What the documents held, so that the shapes below are known to be covered.
            for (key, shape) in [
                ("suppressed", "a suppressed finding"),
                ("diagnostics", "a diagnostic"),
            ] {
                if doc[key].as_array().is_some_and(|a| !a.is_empty()) {
                    seen.insert(shape);
                }
            }
            for f in doc["findings"].as_array().into_iter().flatten() {
                match (&f["fix"], def) {
                    (Value::Null, "FixReport") => seen.insert("a finding without a fix"),
                    (fix, _) if fix["phases"].is_u64() => seen.insert("a phased fix"),
                    _ => false,
                };
            }
            if doc["kustomize_layers"].is_object() {
                seen.insert("the kustomize gate's layers");
            }
        }
    }
    let mut wanted = vec![
        "a suppressed finding",
        "a diagnostic",
        "a finding without a fix",
        "a phased fix",
    ];
    if common::try_kubectl_kustomize(&fixture("fm001-inline", "before")).is_ok() {
        wanted.push("the kustomize gate's layers");
    }
    for shape in wanted {
        assert!(seen.contains(shape), "no document held {shape}");
    }
}

/// The closed schema the documents are checked against rejects what the types do not write: a
/// field it does not know, a missing one, a wrong type, an unknown severity.
#[test]
fn json_v1_schema_rejects_what_the_types_do_not_write() {
    let run = fluxmend([
        "check",
        "--format",
        "json",
        fixture("fm001-inline", "before").to_str().unwrap(),
    ]);
    let good = run.json();
    common::assert_json_v1("Check", &good);
    let mut unknown = good.clone();
    unknown["findings"][0]["extra"] = 1.into();
    let mut missing = good.clone();
    missing["findings"][0]
        .as_object_mut()
        .unwrap()
        .remove("fixable");
    let mut wrong = good.clone();
    wrong["summary"]["files"] = "15".into();
    let mut severity = good.clone();
    severity["findings"][0]["severity"] = "fatal".into();
    let mut version = good.clone();
    version["version"] = 2.into();
    for bad in [unknown, missing, wrong, severity, version] {
        assert!(!common::json_v1_errors("Check", &bad).is_empty(), "{bad:#}");
    }
}

#[test]
fn sarif_validates_and_fingerprints_are_stable() {
    let schema = sarif_schema();
    let repo = common::TempRepo::copy_of(&fixture("forgejo-runners-in-apps", "before"));
    let root = repo.path().to_str().unwrap();
    let run = fluxmend(["check", "--format", "sarif", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let log = run.json();
    let errors: Vec<String> = schema
        .iter_errors(&log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF invalid: {errors:#?}");
    let results = log["runs"][0]["results"].as_array().unwrap();
    assert!(!results.is_empty());
    let rules = log["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    for r in rules {
        let id = r["id"].as_str().unwrap();
        assert!(
            r["helpUri"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/rules/{id}.md"))
        );
    }
    for r in results {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index]["id"], r["ruleId"]);
        assert!(
            r["locations"][0]["physicalLocation"]["region"]["startLine"]
                .as_u64()
                .unwrap()
                >= 1
        );
        assert!(r["properties"]["fixable"].is_boolean());
    }
    // A comment added at the top of every finding's file moves the lines, not the fingerprints.
    let prints = |log: &Value| -> Vec<(String, u64)> {
        log["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["partialFingerprints"]["fluxmend/v1"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                    r["locations"][0]["physicalLocation"]["region"]["startLine"]
                        .as_u64()
                        .unwrap(),
                )
            })
            .collect()
    };
    let first = prints(&log);
    for r in results {
        let uri = r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            .as_str()
            .unwrap();
        let path = repo.path().join(uri);
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.starts_with("# moved\n") {
            std::fs::write(&path, format!("# moved\n{text}")).unwrap();
        }
    }
    let second = prints(&fluxmend(["check", "--format", "sarif", root]).json());
    assert_eq!(first.len(), second.len());
    for ((a, line_a), (b, line_b)) in first.iter().zip(&second) {
        assert_eq!(a, b, "fingerprint changed when lines moved");
        assert_eq!(line_a + 1, *line_b);
    }
}

#[test]
fn sarif_paths_are_relative_to_the_checkout() {
    let repo = git_repo_with("flux-instance-oci-provider");
    let k8s = repo.path().join("k8s");
    let run = fluxmend(["check", "--format", "sarif", k8s.to_str().unwrap()]);
    let log = run.json();
    let uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(uri.starts_with("k8s/"), "{uri}");
    assert!(repo.path().join(&uri).is_file(), "{uri}");
    assert!(sarif_schema().is_valid(&log));
}

#[test]
fn github_annotations() {
    // Outside a git work tree the paths are relative to PATH (inside one: to its top level).
    let repo = common::TempRepo::copy_of(&fixture("flux-instance-oci-provider", "before"));
    let before = repo.path();
    let run = fluxmend(["check", "--format", "github", before.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let json = fluxmend(["check", "--format", "json", before.to_str().unwrap()]).json();
    let findings = json["findings"].as_array().unwrap();
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("title=fluxmend FM"))
        .collect();
    assert_eq!(lines.len(), findings.len(), "{}", run.stdout);
    for (line, f) in lines.iter().zip(findings) {
        // GitHub's workflow commands: error, warning, notice (for a note).
        let command = match f["severity"].as_str().unwrap() {
            "note" => "notice",
            other => other,
        };
        let expected = format!(
            "::{command} file={},line={},col={},title=fluxmend FM",
            f["file"].as_str().unwrap(),
            f["line"],
            f["column"]
        );
        assert!(line.starts_with(&expected), "{line} vs {expected}");
        assert!(!line.contains('\n'));
        if f["fixable"] == true {
            assert!(
                line.ends_with("(fixable%3A `fluxmend fix`)")
                    || line.ends_with("(fixable: `fluxmend fix`)"),
                "{line}"
            );
        }
    }
    assert!(
        run.stdout.lines().all(|l| l.starts_with("::")),
        "{}",
        run.stdout
    );
}

#[test]
fn check_json_has_a_version_and_says_what_is_fixable() {
    let before = fixture("flux-instance-oci-provider", "before");
    let json = fluxmend(["check", "--format", "json", before.to_str().unwrap()]).json();
    assert_eq!(json["version"], 1);
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["fixable"].is_boolean())
    );
    assert!(
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["fixable"] == true)
    );
    let text = fluxmend(["check", before.to_str().unwrap()]).stdout;
    assert!(
        text.contains("FM001 error: ")
            && text.contains("\n    fix: available: `fluxmend fix` shows it\n"),
        "{text}"
    );
}

#[test]
fn completions_and_man_page() {
    // `completion`, as flux and flux-operator spell it; the plural stays an alias.
    for command in ["completion", "completions"] {
        for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
            let run = fluxmend([command, shell]);
            assert_eq!(run.code, 0, "{command} {shell}: {}", run.stderr);
            assert!(
                run.stdout.contains("simulate") && run.stdout.contains("fail-on"),
                "{shell}"
            );
        }
    }
    let run = fluxmend(["completion", "tcsh"]);
    assert_eq!(run.code, 2);
    let man = fluxmend(["man"]);
    assert_eq!(man.code, 0, "{}", man.stderr);
    assert!(
        man.stdout.starts_with(".ie") || man.stdout.contains(".TH fluxmend 1"),
        "{}",
        &man.stdout[..200]
    );
    assert!(man.stdout.contains("simulate"));
    assert!(
        man.stdout.contains("Exit codes:"),
        "the help's exit codes are in the page"
    );
}

#[test]
fn the_man_page_links_only_pages_that_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let run = fluxmend(["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let main = std::fs::read_to_string(dir.path().join("fluxmend.1")).unwrap();
    let linked = regex::Regex::new(r"fluxmend\\-([a-z]+)\(1\)").unwrap();
    let pages: Vec<String> = linked
        .captures_iter(&main)
        .map(|c| format!("fluxmend-{}.1", &c[1]))
        .collect();
    assert!(pages.contains(&"fluxmend-check.1".to_string()), "{main}");
    for page in &pages {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page} is linked but not generated: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
    let check = std::fs::read_to_string(dir.path().join("fluxmend-check.1")).unwrap();
    assert!(
        check.contains("fail\\-on") && check.contains("Exit codes:"),
        "{check}"
    );
}

#[test]
fn a_commit_subject_names_each_fix_by_what_it_does() {
    // FM005's fix moves nothing: it removes a list Flux ignores.
    let repo = git_repo_with("fm005-inline");
    let root = repo.path().to_str().unwrap();
    let run = fluxmend(["fix", "--commit", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]).trim(),
        "fluxmend: remove ignored healthChecks from apps"
    );
    let repo = git_repo_with("fm005-inline");
    let root = repo.path().to_str().unwrap();
    let run = fluxmend(["fix", "--commit", "--strategy", "health-checks", root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        git(repo.path(), &["log", "-1", "--format=%s"]).trim(),
        "fluxmend: set wait: false on apps"
    );
}

#[test]
fn help_gives_examples_and_exit_codes() {
    for command in [&[][..], &["check"], &["fix"], &["simulate"], &["graph"]] {
        let run = fluxmend([command, &["--help"]].concat());
        assert_eq!(run.code, 0, "{command:?}");
        for section in ["Examples:", "Exit codes:", "  2  "] {
            assert!(
                run.stdout.contains(section),
                "{command:?} --help: {}",
                run.stdout
            );
        }
    }
    let fix = fluxmend(["fix", "--help"]).stdout;
    assert!(
        fix.contains("1  a change was printed, written or committed: review it"),
        "{fix}"
    );
}

#[test]
fn select_ignore_and_exit_zero() {
    // The forgejo runner layout has FM002 findings and one FM005 (its ignored healthChecks);
    // no FM001.
    let runners = fixture("forgejo-runners-in-apps", "before");
    let runners = runners.to_str().unwrap();
    let rules = |extra: &[&str]| -> (i32, Vec<String>) {
        let run = fluxmend([&["check", "--format", "json"], extra, &[runners]].concat());
        let json = run.json();
        let mut ids: Vec<String> = json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect();
        ids.dedup();
        (run.code, ids)
    };
    let both = vec!["FM002".to_string(), "FM005".to_string()];
    assert_eq!(rules(&[]), (1, both.clone()));
    assert_eq!(rules(&["--ignore", "FM002"]).1, vec!["FM005".to_string()]);
    assert_eq!(
        rules(&[
            "--ignore",
            "disposable-workload-in-gated-layer,health-checks-ignored"
        ]),
        (0, Vec::new())
    );
    assert_eq!(
        rules(&["--select", "FM002"]),
        (1, vec!["FM002".to_string()])
    );
    assert_eq!(rules(&["--select", "FM001"]).1, Vec::<String>::new());
    assert_eq!(rules(&["--exit-zero"]), (0, both));
    // Usage errors: an unknown rule, ignoring every rule, --exit-zero with --fail-on.
    let every_rule: Vec<&str> = fluxmend::rules::all().iter().map(|r| r.meta().id).collect();
    let every_rule = every_rule.join(",");
    for bad in [
        &["--ignore", "FM999"][..],
        &["--ignore", &every_rule],
        &["--select", "FM001", "--ignore", "FM001"],
        &["--exit-zero", "--fail-on", "error"],
    ] {
        let run = fluxmend([&["check"], bad, &[runners]].concat());
        assert_eq!(run.code, 2, "{bad:?}: {}", run.stderr);
    }
    // fix honours --ignore: nothing to change once FM002 and FM005 are left out.
    let run = fluxmend(["fix", "--ignore", "FM002,FM005", runners]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.is_empty());
}

/// The byte offset of a 1-based (line, column in characters) position.
fn offset_of(text: &str, line: u64, column: u64) -> usize {
    let start: usize = text
        .split_inclusive('\n')
        .take(line as usize - 1)
        .map(str::len)
        .sum();
    start
        + text[start..]
            .chars()
            .take(column as usize - 1)
            .map(char::len_utf8)
            .sum::<usize>()
}

/// SARIF `fixes` carry the verified fix: applied replacement by replacement, they give the
/// tree `fix --write` writes, new files included, and the log still validates.
#[test]
fn sarif_fixes_apply_to_what_fix_writes() {
    for case in [
        "fm002-runners-folder",
        "flux-instance-oci-provider",
        "fm005-inline",
        "fm005-flow-crlf",
        "fm003-instance-patch",
    ] {
        let by_sarif = common::TempRepo::copy_of(&fixture(case, "before"));
        let by_fix = common::TempRepo::copy_of(&fixture(case, "before"));
        let log = fluxmend([
            "check",
            "--format",
            "sarif",
            by_sarif.path().to_str().unwrap(),
        ])
        .json();
        let errors: Vec<String> = sarif_schema()
            .iter_errors(&log)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{case}: {errors:?}");
        let results = log["runs"][0]["results"].as_array().unwrap();
        let fixes: Vec<&Value> = results.iter().filter_map(|r| r.get("fixes")).collect();
        assert!(!fixes.is_empty(), "{case}: no fixes in {log:#}");
        for fix in fixes {
            for change in fix[0]["artifactChanges"].as_array().unwrap() {
                let uri = change["artifactLocation"]["uri"].as_str().unwrap();
                let path = by_sarif.path().join(uri);
                let mut text = std::fs::read_to_string(&path).unwrap_or_default();
                for r in change["replacements"].as_array().unwrap().iter().rev() {
                    let d = &r["deletedRegion"];
                    let start = offset_of(
                        &text,
                        d["startLine"].as_u64().unwrap(),
                        d["startColumn"].as_u64().unwrap(),
                    );
                    let end = offset_of(
                        &text,
                        d["endLine"].as_u64().unwrap(),
                        d["endColumn"].as_u64().unwrap(),
                    );
                    text.replace_range(start..end, r["insertedContent"]["text"].as_str().unwrap());
                }
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
            }
        }
        let run = fluxmend([
            "fix",
            "--verify",
            "builtin",
            "--write",
            by_fix.path().to_str().unwrap(),
        ]);
        assert_eq!(run.code, 1, "{case}: {}", run.stderr);
        let differing =
            common::differing_paths(&common::tree(by_sarif.path()), &common::tree(by_fix.path()));
        assert!(differing.is_empty(), "{case}: {differing:?}");
    }
}
