//! `fluxmend simulate`: the public incidents as commands — a failing FluxInstance stalls the
//! layers behind the one that applies it until fluxmend's fixes give it a layer of its own
//! (devantler-tech/platform#3006), a dead runner turns the `apps` layer red until its runners
//! have their own (the forgejo runner incident), a root source that rejects every revision
//! cannot be corrected through Git either way — and the rollout of a change between two git
//! revisions, with every deletion it causes.

use crate::common::{self, Run, TempRepo, copy_tree, fixture, fluxmend, git, git_repo_with};
use serde_json::Value;

fn simulate(dir: &std::path::Path, args: &[&str]) -> Run {
    let mut all = vec!["simulate", dir.to_str().unwrap()];
    all.extend_from_slice(args);
    fluxmend(all)
}

/// (layer name, status) of every affected layer of the first cluster of one side.
fn affected(side: &Value) -> Vec<(String, String)> {
    side[0]["affected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["layer"]["name"].as_str().unwrap().to_string(),
                a["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_failing_flux_instance_stalls_the_chain_before_the_fix_and_only_itself_after() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let target = ["--fail", "FluxInstance/flux-system/flux"];
    let text = simulate(&dir, &target);
    assert_eq!(text.code, 0, "{}", text.stderr);
    insta::assert_snapshot!("flux-instance-fails", text.stdout);
    let json = simulate(&dir, &[&target[..], &["--format", "json"]].concat()).json();
    common::assert_json_v1("Failure", &json);
    assert_eq!(
        affected(&json["before"]),
        [
            (
                "infrastructure-controllers".into(),
                "health-check-failed".into()
            ),
            ("infrastructure".into(), "dependency-not-ready".into()),
            ("apps".into(), "dependency-not-ready".into()),
        ]
    );
    // After both phases of the fix the instance is in a wait: false layer: nothing goes red.
    assert_eq!(
        affected(&json["after_fixes"]),
        Vec::<(String, String)>::new()
    );
    assert_eq!(
        json["after_fixes"][0]["corrections"][0]["applied_by"]["name"],
        "flux-instance"
    );
}

#[test]
fn a_root_source_that_rejects_every_revision_cannot_be_corrected_through_git() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let json = simulate(
        &dir,
        &[
            "--fail",
            "OCIRepository/flux-system/flux-system",
            "--format",
            "json",
        ],
    )
    .json();
    common::assert_json_v1("Failure", &json);
    for side in ["before", "after_fixes"] {
        let c = &json[side][0];
        let correction = &c["corrections"][0];
        assert_eq!(correction["can_arrive"], false, "{side}: {c:#}");
        let why = correction["why"].as_str().unwrap();
        assert!(why.contains("rejects every new revision"), "{why}");
        assert!(why.contains("outside Git"), "{why}");
        assert!(
            c["frozen"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l["name"] == "apps"),
            "{side}: {c:#}"
        );
    }
}

#[test]
fn a_dead_runner_turns_apps_red_before_the_fix_and_only_the_runners_after() {
    let dir = fixture("forgejo-runners-in-apps", "before");
    let target = ["--fail", "StatefulSet/forgejo/forgejo-runner-deploy-atlas"];
    let text = simulate(&dir, &target);
    assert_eq!(text.code, 0, "{}", text.stderr);
    insta::assert_snapshot!("runner-fails", text.stdout);
    let json = simulate(&dir, &[&target[..], &["--format", "json"]].concat()).json();
    common::assert_json_v1("Failure", &json);
    assert_eq!(
        affected(&json["before"]),
        [("apps".into(), "health-check-failed".into())]
    );
    assert_eq!(
        affected(&json["after_fixes"]),
        [("apps-runners".into(), "health-check-failed".into())]
    );
}

#[test]
fn bad_targets_and_missing_modes_are_usage_errors() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let none = simulate(&dir, &[]);
    assert_eq!(none.code, 2, "{}", none.stderr);
    assert!(none.stderr.contains("--fail"), "{}", none.stderr);
    let bad = simulate(&dir, &["--fail", "flux"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("KIND/NAMESPACE/NAME"), "{}", bad.stderr);
    let no_git = TempRepo::copy_of(&dir);
    let run = simulate(no_git.path(), &["--from", "HEAD"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("not inside a git repository"),
        "{}",
        run.stderr
    );
    let repo = git_repo_with("flux-instance-oci-provider");
    let run = simulate(repo.path(), &["--from", "no-such-rev"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("is not a revision"), "{}", run.stderr);
}

/// Replace the work tree of `repo` by `tree` and commit it.
fn commit_tree(repo: &TempRepo, tree: &std::path::Path, message: &str) {
    for entry in std::fs::read_dir(repo.path()).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != ".git" {
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(p).unwrap();
            } else {
                std::fs::remove_file(p).unwrap();
            }
        }
    }
    copy_tree(tree, repo.path());
    let as_tester = ["-c", "user.name=t", "-c", "user.email=t@t"];
    git(repo.path(), &[&as_tester[..], &["add", "-A"]].concat());
    git(
        repo.path(),
        &[&as_tester[..], &["commit", "-qm", message]].concat(),
    );
}

#[test]
fn the_rollout_between_two_revisions_names_every_deletion() {
    // The one-step move fluxmend used to print: after/ without phase 1's annotations.
    let case = "flux-instance-oci-provider";
    let one_step = TempRepo::copy_of(&fixture(case, "after"));
    for provider in ["docker", "hetzner"] {
        let file = format!(
            "k8s/providers/{provider}/infrastructure/controllers/flux-instance/flux-instance.yaml"
        );
        std::fs::copy(
            fixture(case, "before").join(&file),
            one_step.path().join(&file),
        )
        .unwrap();
    }
    let repo = git_repo_with(case);
    commit_tree(&repo, one_step.path(), "one-step move");
    let run = simulate(repo.path(), &["--from", "HEAD~1", "--to", "HEAD"]);
    assert_eq!(
        run.code, 1,
        "a rollout that uninstalls Flux is exit 1\n{}",
        run.stderr
    );
    insta::assert_snapshot!("one-step-move-rollout", run.stdout);
    let json = simulate(
        repo.path(),
        &["--from", "HEAD~1", "--to", "HEAD", "--format", "json"],
    )
    .json();
    common::assert_json_v1("Rollout", &json);
    let deletions = json["rollout"]["clusters"][0]["deletions"]
        .as_array()
        .unwrap();
    assert_eq!(deletions.len(), 1, "{json:#}");
    assert_eq!(deletions[0]["consequence"], "uninstall");
    assert_eq!(
        deletions[0]["deleted_by"]["name"],
        "infrastructure-controllers"
    );
    assert_eq!(deletions[0]["recreated_by"]["name"], "flux-instance");

    // The phased fix: each step deletes nothing. `--to` defaults to the work tree.
    let repo = git_repo_with(case);
    commit_tree(&repo, &fixture(case, "phase1"), "phase 1");
    commit_tree(&repo, &fixture(case, "after"), "phase 2");
    for (from, to) in [("HEAD~2", Some("HEAD~1")), ("HEAD~1", None)] {
        let mut args = vec!["--from", from];
        if let Some(to) = to {
            args.extend(["--to", to]);
        }
        let run = simulate(repo.path(), &args);
        assert_eq!(run.code, 0, "{from}..{to:?}: {}", run.stdout);
        assert!(
            run.stdout.contains("nothing live is deleted"),
            "{}",
            run.stdout
        );
    }
    let phase2 = simulate(repo.path(), &["--from", "HEAD~1"]);
    assert!(
        phase2
            .stdout
            .contains("drops FluxInstance/flux-system/flux: kept (prune: disabled)"),
        "{}",
        phase2.stdout
    );
    assert!(
        phase2
            .stdout
            .contains("takes over FluxInstance/flux-system/flux"),
        "{}",
        phase2.stdout
    );
}

#[test]
fn failing_an_object_no_layer_applies_is_a_usage_error() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let run = simulate(&dir, &["--fail", "Deployment/whoami/no-such-app"]);
    assert_eq!(run.code, 2, "a typo is not a failure that stalls nothing");
    assert!(
        run.stderr
            .contains("--fail Deployment/whoami/no-such-app: no live layer applies or reads it"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// "After fluxmend's fixes" means the fixes `fix` offers: a rule `.fluxmend.yaml` disables
/// offers none, so the outcome is the same and no after section is shown; with the rule on
/// (negative control) it is.
#[test]
fn the_after_section_leaves_out_the_fixes_of_disabled_rules() {
    let repo = TempRepo::copy_of(&fixture("flux-instance-oci-provider", "before"));
    let target = [
        "--fail",
        "FluxInstance/flux-system/flux",
        "--format",
        "json",
    ];
    let on = simulate(repo.path(), &target);
    assert_eq!(on.code, 0, "{}", on.stderr);
    assert_ne!(on.json()["after_fixes"], Value::Null, "{}", on.stdout);
    repo.write(".fluxmend.yaml", "rules:\n  FM001: {enabled: false}\n");
    let off = simulate(repo.path(), &target);
    assert_eq!(off.code, 0, "{}", off.stderr);
    assert_eq!(off.json()["after_fixes"], Value::Null, "{}", off.stdout);
}

#[test]
fn the_after_section_is_there_only_when_a_fix_changes_the_outcome() {
    // The fixes move the FluxInstance; a failing app in `apps` stalls the same either way.
    let dir = fixture("flux-instance-oci-provider", "before");
    let target = ["--fail", "Deployment/whoami/whoami"];
    let text = simulate(&dir, &target);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(
        !text.stdout.contains("after fluxmend's fixes"),
        "{}",
        text.stdout
    );
    let json = simulate(&dir, &[&target[..], &["--format", "json"]].concat()).json();
    common::assert_json_v1("Failure", &json);
    assert_eq!(json["after_fixes"], Value::Null, "{json:#}");
    // Where they change it, it is said.
    let text = simulate(&dir, &["--fail", "FluxInstance/flux-system/flux"]);
    assert!(
        text.stdout.contains("after fluxmend's fixes"),
        "{}",
        text.stdout
    );
}

#[test]
fn check_and_simulate_give_one_answer_on_whether_the_correction_arrives() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let check = fluxmend(["check", dir.to_str().unwrap(), "--format", "json"]).json();
    let fm001 = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FM001")
        .expect("an FM001 finding");
    let message = fm001["message"].as_str().unwrap();
    let correction = |target: &str| {
        simulate(&dir, &["--fail", target, "--format", "json"]).json()["before"][0]["corrections"]
            [0]
        .clone()
    };
    // A failing instance alone is corrected through its layer (which applies before its
    // health check): check must not say otherwise.
    let instance = correction("FluxInstance/flux-system/flux");
    assert_eq!(instance["can_arrive"], true, "{instance:#}");
    assert!(
        !message.contains(
            "a bad instance change freezes delivery and the corrective commit cannot arrive"
        ),
        "{message}"
    );
    // The self-lock check names is the root source's, and simulate agrees that no correction
    // arrives then.
    let source = "OCIRepository/flux-system/flux-system";
    assert!(
        message.contains(&format!("self-lock; `fluxmend simulate --fail {source}`")),
        "{message}"
    );
    assert_eq!(correction(source)["can_arrive"], false);
    assert!(
        instance["why"].as_str().unwrap().contains(&format!(
            "unless the failure breaks the root source {source}"
        )),
        "{instance:#}"
    );
}

/// Two apps whose layers share a component with a PVC named `${APP}-data`, each layer
/// substituting its own APP: the same text names two objects.
fn per_app_layers(apps: &[&str]) -> String {
    let mut out = String::new();
    for app in apps {
        out.push_str(&format!(
            "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: {app}\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps/{app}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  components:\n    - ../../components/storage\n  postBuild:\n    substitute:\n      APP: {app}\n"
        ));
    }
    out
}

#[test]
fn a_name_postbuild_substitutes_is_one_object_per_layer() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "components/storage/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - pvc.yaml\n",
    )
    .write(
        "components/storage/pvc.yaml",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: ${APP}-data\n  namespace: media\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n",
    );
    for app in ["agregarr", "sonarr"] {
        repo.write(
            &format!("apps/{app}/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: []\n",
        );
    }
    repo.write(
        "clusters/prod/media.yaml",
        per_app_layers(&["agregarr", "sonarr"]),
    );
    let as_tester = ["-c", "user.name=t", "-c", "user.email=t@t"];
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &[&as_tester[..], &["add", "-A"]].concat());
    git(
        repo.path(),
        &[&as_tester[..], &["commit", "-qm", "two apps"]].concat(),
    );
    // Retire one app: its layer goes, and with it its own PVC; sonarr's PVC is another one.
    repo.write("clusters/prod/media.yaml", per_app_layers(&["sonarr"]));
    let json = simulate(repo.path(), &["--from", "HEAD", "--format", "json"]).json();
    common::assert_json_v1("Rollout", &json);
    let deletions: Vec<&Value> = json["rollout"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["deletions"].as_array().unwrap())
        .filter(|d| d["object"]["kind"] == "PersistentVolumeClaim")
        .collect();
    assert_eq!(deletions.len(), 1, "{json:#}");
    let pvc = deletions[0];
    assert_eq!(pvc["object"]["name"], "${APP}-data");
    assert_eq!(pvc["deleted_by"]["name"], "agregarr");
    assert_eq!(
        pvc["recreated_by"],
        Value::Null,
        "sonarr's PVC is not agregarr's: {pvc:#}"
    );
    assert_eq!(pvc["consequence"], "data-loss");
    assert!(
        pvc["cause"]
            .as_str()
            .unwrap()
            .contains("its name depends on postBuild"),
        "{pvc:#}"
    );
}
