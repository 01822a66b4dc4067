//! FM003 end to end on the fixture repositories: the finding and diff (snapshots), the written
//! result equals `after/` byte for byte, negative controls (one identity; the result), idempotence,
//! and what the fix means: after it, every list the independent renderer (`kubectl kustomize`)
//! produces has one entry whose patterns accept what the entries accepted.

use crate::common::{
    self, TempRepo, assert_fix_writes_after_tree, fix_runs, fixture, fluxmend, kubectl_kustomize,
    rule_findings,
};

per_case! {
    [findings_and_diffs_match_snapshots, written_result_equals_after_tree_and_converges]
    fm003_instance_patch => "fm003-instance-patch",
    fm003_sources => "fm003-sources",
}

fn findings_and_diffs_match_snapshots(case: &str) {
    for (suffix, run) in fix_runs(case, &["--rule", "FM003"]) {
        insta::assert_snapshot!(format!("{case}{suffix}-report"), run.stderr);
        insta::assert_snapshot!(format!("{case}{suffix}-diff"), run.stdout);
    }
}

fn written_result_equals_after_tree_and_converges(case: &str) {
    assert_fix_writes_after_tree(case, "FM003", &["--rule", "FM003"]);
}

fn fm003_findings(root: &std::path::Path) -> Vec<serde_json::Value> {
    rule_findings(root, "FM003").1
}

/// Each list is found where it is written (the object, the patch file, the FluxInstance's patch
/// string, at the list's own line), as an error naming the source; one identity is not reported.
#[test]
fn every_place_a_list_is_written_is_found() {
    let found: Vec<(String, u64, String)> = fm003_findings(&fixture("fm003-sources", "before"))
        .iter()
        .map(|f| {
            assert_eq!(f["severity"], "error");
            (
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                format!(
                    "{}/{}",
                    f["object"]["kind"].as_str().unwrap(),
                    f["object"]["name"].as_str().unwrap()
                ),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "apps/podinfo-source.yaml".to_string(),
                15,
                "OCIRepository/podinfo".to_string()
            ),
            (
                "apps/release.yaml".to_string(),
                17,
                "HelmRelease/web".to_string()
            ),
            (
                "apps/verify-charts.yaml".to_string(),
                10,
                "OCIRepository/charts".to_string()
            ),
        ]
    );
    let instance = fm003_findings(&fixture("fm003-instance-patch", "before"));
    assert_eq!(instance.len(), 1, "{instance:#?}");
    let f = &instance[0];
    assert_eq!(
        f["file"],
        "k8s/providers/hetzner/infrastructure/controllers/flux-instance/flux-instance.yaml"
    );
    assert_eq!(f["line"], 60, "the list's line inside the patch block");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("set by a patch of FluxInstance flux"),
        "{message}"
    );
    assert!(
        message.contains("multiple identities are not supported at this time"),
        "{message}"
    );
    let frozen: Vec<&str> = f["blocked_layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(
        frozen.contains(&"flux-system"),
        "the root layer reads the root source: {frozen:?}"
    );
}

/// Where the entries do not cover every combination, the fix says it is wider and names what
/// it also accepts; where they do (one issuer), it is exact.
#[test]
fn a_wider_merge_says_what_it_also_accepts() {
    let run = common::fluxmend_in(
        &fixture("fm003-sources", "before"),
        ["fix", ".", "--rule", "FM003"],
    );
    // Each finding's `fix:` detail line (unwrapped).
    let text = common::unwrapped(&run.stderr);
    let fix_of = |file: &str| -> String {
        text.lines()
            .skip_while(|l| !l.starts_with(file))
            .skip(1)
            .find(|l| l.starts_with("    fix:"))
            .unwrap_or_else(|| panic!("no fix for {file}: {text}"))
            .to_string()
    };
    let podinfo = fix_of("apps/podinfo-source.yaml");
    assert!(
        podinfo.contains("wider than the list: it also accepts subject ^https://gitlab.com/"),
        "{podinfo}"
    );
    assert!(
        podinfo.contains("from issuer ^https://token.actions.githubusercontent.com$"),
        "{podinfo}"
    );
    let web = fix_of("apps/release.yaml");
    assert!(!web.contains("wider"), "{web}");
}

/// The object kubectl renders with the patch file applied: two identities before the fix; one
/// after, whose subject keeps each old pattern whole in a group. (That the alternation matches
/// what the patterns matched is the property test in `src/rules/fm003/merge.rs`.)
#[test]
fn the_rendered_object_carries_one_identity_with_every_pattern() {
    let charts_of = |rendered: &str| -> String {
        let charts = &rendered[rendered.find("name: charts").unwrap()..];
        charts[..charts.find("---").unwrap_or(charts.len())].to_string()
    };
    let repo = TempRepo::copy_of(&fixture("fm003-sources", "before"));
    let before = charts_of(&kubectl_kustomize(&repo.path().join("apps")));
    assert_eq!(before.matches("issuer:").count(), 2, "{before}");
    let run = fluxmend(["fix", "--write", repo.path().to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let charts = charts_of(&kubectl_kustomize(&repo.path().join("apps")));
    assert_eq!(charts.matches("issuer:").count(), 1, "{charts}");
    for old in [
        "(?:https://github.com/harbor-labs/charts/.github/workflows/publish.yml@refs/heads/main)",
        "(?:https://github.com/harbor-labs/charts/.github/workflows/hotfix.yml@refs/heads/main)",
    ] {
        assert!(charts.contains(old), "{old} not in {charts}");
    }
    assert!(fm003_findings(repo.path()).is_empty());
}

/// A patch written as a quoted string (JSON) is read for its value: the list is found, at the
/// `patch` key, and no fix is offered, with the reason.
#[test]
fn a_list_in_a_quoted_patch_string_is_found_without_a_fix() {
    let repo = TempRepo::copy_of(&fixture("fm003-sources", "after"));
    let apps = repo.read("clusters/prod/apps.yaml").replacen(
        "  postBuild:\n",
        "  patches:\n    - target: {kind: OCIRepository, name: dashboards}\n      patch: \"[{\\\"op\\\": \\\"replace\\\", \\\"path\\\": \\\"/spec/verify/matchOIDCIdentity\\\", \\\"value\\\": [{\\\"issuer\\\": \\\"^a$\\\", \\\"subject\\\": \\\"^x$\\\"}, {\\\"issuer\\\": \\\"^a$\\\", \\\"subject\\\": \\\"^y$\\\"}]}]\"\n  postBuild:\n",
        1,
    );
    repo.write("clusters/prod/apps.yaml", apps);
    let found = fm003_findings(repo.path());
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["file"], "clusters/prod/apps.yaml");
    assert_eq!(found[0]["line"], 15, "the patch key");
    assert_eq!(found[0]["object"]["name"], "dashboards");
    let fix = fluxmend(["fix", repo.path().to_str().unwrap(), "--rule", "FM003"]);
    assert_eq!(fix.stdout, "", "{}", fix.stderr);
    assert!(
        fix.stderr.contains("folded or quoted string"),
        "{}",
        fix.stderr
    );
}
