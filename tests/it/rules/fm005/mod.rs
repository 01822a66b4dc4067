//! FM005 end to end on the fixture repositories: the finding and diff (snapshots), the written
//! result equals `after/` byte for byte (CRLF kept), negative controls (a `healthChecks` list
//! without `wait` is the gate; a layer document another cluster patches gets no fix), idempotence,
//! and `--strategy health-checks`: `wait: false` instead, refused when the list names runners.

use crate::common::{
    self, TempRepo, assert_fix_writes_after_tree, fix_runs, fixture, fluxmend, kubectl_kustomize,
    rule_findings,
};

per_case! {
    [findings_and_diffs_match_snapshots, written_result_equals_after_tree_and_converges]
    fm005_inline => "fm005-inline",
    fm005_flow_crlf => "fm005-flow-crlf",
}

fn findings_and_diffs_match_snapshots(case: &str) {
    for (suffix, run) in fix_runs(case, &["--rule", "FM005"]) {
        insta::assert_snapshot!(format!("{case}{suffix}-report"), run.stderr);
        insta::assert_snapshot!(format!("{case}{suffix}-diff"), run.stdout);
    }
}

fn written_result_equals_after_tree_and_converges(case: &str) {
    assert_fix_writes_after_tree(case, "FM005", &[]);
}

/// The finding names the ignored entries, what the layer really waits on, that the list is
/// redundant (a note: the chart's Deployment is made by the HelmRelease the layer waits on) and
/// the layer behind it; the layer whose list is its gate (no `wait`) is not reported.
#[test]
fn the_finding_says_what_the_layer_really_waits_on() {
    let (code, findings) = rule_findings(&fixture("fm005-inline", "before"), "FM005");
    assert_eq!(code, 0, "a note does not fail check");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["layer"]["name"], "apps");
    assert_eq!(
        f["severity"], "note",
        "every entry is applied or made by the layer"
    );
    assert_eq!(f["file"], "clusters/production/layers.yaml");
    assert_eq!(f["line"], 41, "the healthChecks key");
    assert_eq!(f["masked_objects"], 3, "objects waited on but not listed");
    assert_eq!(f["blocked_layers"][0]["name"], "monitoring");
    let message = f["message"].as_str().unwrap();
    for part in [
        "ignores its 2 healthChecks entries",
        "all 4 objects it applies",
        "the list is redundant, every entry is applied by this layer or made by HelmRelease/podinfo/podinfo, which it applies and waits on",
        "flux-system/monitoring waits on all of them",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
}

/// `--strategy health-checks` makes the list the gate: `wait: false`, nothing else changed,
/// verified by every gate including a real kustomize build; the result has no FM005 finding.
#[test]
fn the_health_checks_strategy_sets_wait_false() {
    let repo = TempRepo::copy_of(&fixture("fm005-inline", "before"));
    let before = repo.read("clusters/production/layers.yaml");
    let root = repo.path().to_str().unwrap();
    let run = fluxmend(["fix", "--write", root, "--strategy", "health-checks"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("verified: builtin + kustomize"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("it then also waits on Deployment/podinfo/podinfo"),
        "{}",
        run.stderr
    );
    let after = repo.read("clusters/production/layers.yaml");
    assert_eq!(
        after,
        before.replacen("  wait: true\n", "  wait: false\n", 1),
        "only the wait value changes"
    );
    let check = fluxmend(["check", root, "--rule", "FM005"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    let again = fluxmend(["fix", root, "--strategy", "health-checks"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, ""),
        "{}",
        again.stderr
    );
}

/// A list of runners must not become the gate: that is the trap FM002 reports.
#[test]
fn the_health_checks_strategy_refuses_to_gate_on_runners() {
    let root = fixture("forgejo-runners-in-apps", "before");
    let run = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--rule",
        "FM005",
        "--strategy",
        "health-checks",
        "--show-notes",
    ]);
    assert_eq!(run.stdout, "", "no change is offered");
    assert!(
        common::unwrapped(&run.stderr).contains(
            "no fix: --strategy health-checks would make StatefulSet/forgejo/forgejo-runner-bridge"
        ),
        "{}",
        run.stderr
    );
    assert!(
        common::unwrapped(&run.stderr).contains("disposable workloads"),
        "{}",
        run.stderr
    );
}

/// The layer document is shared by two clusters and staging patches its `wait` off: staging
/// has no finding, production has one without a fix, because the edit would change staging.
#[test]
fn a_layer_document_another_cluster_patches_is_not_edited() {
    let root = fixture("fm005-shared-base", "before");
    let (_, findings) = rule_findings(&root, "FM005");
    let root = root.to_str().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert!(
        findings[0]["cluster"]
            .as_str()
            .unwrap()
            .contains("./clusters/production"),
        "{:#?}",
        findings[0]
    );
    assert!(
        !findings[0]["cluster"]
            .as_str()
            .unwrap()
            .contains("./clusters/staging")
    );
    let fix = fluxmend(["fix", root, "--rule", "FM005", "--show-notes"]);
    assert_eq!(fix.stdout, "", "{}", fix.stderr);
    assert!(
        common::unwrapped(&fix.stderr).contains(
            "clusters/base/apps.yaml is also the layer flux-system/apps of cluster flux-system/flux-system (path ./clusters/staging), where a patch sets its wait or healthChecks"
        ),
        "{}",
        fix.stderr
    );
    // The premise, checked with the independent renderer: staging's layer is rendered with
    // wait false, production's with wait true.
    let fixture_root = fixture("fm005-shared-base", "before");
    let staging = kubectl_kustomize(&fixture_root.join("clusters/staging"));
    let production = kubectl_kustomize(&fixture_root.join("clusters/production"));
    assert!(staging.contains("wait: false"), "{staging}");
    assert!(production.contains("wait: true"), "{production}");
}

/// Only a patch that may select the layer and writes `wait` or `healthChecks` silences the rule:
/// staging's patch retargeted at another layer leaves `apps` as written in both clusters, so
/// both report it and the shared document gets its fix.
#[test]
fn a_patch_of_another_layer_does_not_hide_the_finding() {
    let repo = TempRepo::copy_of(&fixture("fm005-shared-base", "before"));
    let staging = repo
        .read("clusters/staging/kustomization.yaml")
        .replace("      name: apps\n", "      name: infra\n");
    repo.write("clusters/staging/kustomization.yaml", staging);
    let (_, findings) = rule_findings(repo.path(), "FM005");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let cluster = findings[0]["cluster"].as_str().unwrap();
    assert!(
        cluster.contains("./clusters/production") && cluster.contains("./clusters/staging"),
        "{cluster}"
    );
    let fix = fluxmend(["fix", repo.path().to_str().unwrap(), "--rule", "FM005"]);
    assert!(
        fix.stdout.contains("-  healthChecks:"),
        "{}\n{}",
        fix.stdout,
        fix.stderr
    );
}

/// Severity by what the list loses (fixtures/fm005-severity): redundant lists are notes (an
/// entry the layer's chart makes; an entry in a build with a remote resource, about which no
/// claim is made); an entry another layer applies (which depends on this one: the deadlock is
/// named), a stale entry nothing applies, and healthCheckExprs for a kind the layer does not
/// apply are warnings.
#[test]
fn severity_follows_what_the_list_loses() {
    let (code, findings) = rule_findings(&fixture("fm005-severity", "before"), "FM005");
    assert_eq!(code, 1);
    let at: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| {
            (
                f["layer"]["name"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        at,
        vec![
            ("crds", "note"),
            ("storage", "warning"),
            ("database", "warning"),
            ("rook", "warning"),
        ],
        "{findings:#?}"
    );
    let message = |layer: &str| {
        findings
            .iter()
            .find(|f| f["layer"]["name"] == layer)
            .unwrap()["message"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        message("storage")
            .contains("healthCheckExprs for CephCluster (ceph.rook.io/v1) are never evaluated")
    );
    assert!(message("database").contains("applied by flux-system/database-cluster"));
    assert!(message("database").contains("a fresh cluster would deadlock"));
    assert!(
        message("rook").contains(
            "nothing in this repository applies HelmRelease/rook-ceph/rook-ceph-operator"
        )
    );
}

/// No "not applied" claim where the build is not fully known: an entry a remote resource may
/// hold is neither dangling nor another layer's (a note that says so).
#[test]
fn no_claim_about_an_entry_a_remote_resource_may_hold() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "apps/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - app.yaml\n  - https://github.com/example-org/mesh/releases/download/v2.14.0/control-plane.yaml\n",
    );
    let layer = repo.read("clusters/prod/apps.yaml").replace(
        "spec:\n",
        "spec:\n  healthChecks:\n    - apiVersion: apps/v1\n      kind: Deployment\n      name: linkerd-destination\n      namespace: linkerd\n",
    );
    repo.write("clusters/prod/apps.yaml", layer);
    let (_, findings) = rule_findings(repo.path(), "FM005");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let message = findings[0]["message"].as_str().unwrap();
    assert_eq!(findings[0]["severity"], "note", "{message}");
    assert!(message.contains("makes no claim"), "{message}");
    assert!(
        !message.contains("nothing in this repository applies"),
        "{message}"
    );
}

/// `--strategy health-checks` refuses a gate that cannot pass: an entry only a dependent layer
/// applies (deadlock on a fresh cluster) or nothing applies; it still sets wait: false where the
/// entries exist.
#[test]
fn the_health_checks_strategy_refuses_a_gate_that_cannot_pass() {
    let root = fixture("fm005-severity", "before");
    let report = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--rule",
        "FM005",
        "--strategy",
        "health-checks",
        "--format",
        "json",
    ])
    .json();
    let reason = |layer: &str| {
        let f = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["layer"]["name"] == layer)
            .unwrap();
        (
            f["fix"].is_null(),
            f["no_fix_reason"].as_str().unwrap_or_default().to_string(),
        )
    };
    let (none, why) = reason("database");
    assert!(
        none && why.contains("a fresh cluster would deadlock"),
        "{why}"
    );
    let (none, why) = reason("rook");
    assert!(none && why.contains("never become Ready"), "{why}");
    for layer in ["crds", "storage"] {
        assert!(!reason(layer).0, "{layer}: {report:#}");
    }
}

/// Without wait, a healthChecks entry is polled whichever layer applies it: `simulate` shows a
/// failing object of another layer holding the layer that lists it.
#[test]
fn simulate_shows_a_healthchecks_gate_on_another_layers_object() {
    let root = fixture("fm005-severity", "before");
    let run = fluxmend([
        "simulate",
        root.to_str().unwrap(),
        "--fail",
        "Cluster/database/postgres",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "flux-system/reporting: Ready=False (HealthCheckFailed on Cluster/database/postgres)"
        ),
        "{}",
        run.stdout
    );
}
