//! A move done in phases never collapses into one change: the transition gate plays the rollout
//! from the base revision (what the cluster runs: `--base`, by default the remote's default
//! branch, the current branch's remote-tracking branch, or HEAD), so a later phase is offered
//! only once the base holds the earlier one; and a first phase is offered only when every later
//! phase passes every gate. Run as people run fix: twice without committing, fix-commit-fix,
//! against a remote, and through the `fluxmend-fix` pre-commit hook as shipped.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{
    self, TempRepo, commit_all, differing_paths, fixture, fluxmend, git, git_repo_with, tree,
};

/// The move of fm001-inline: phase 1 protects the FluxInstance, phase 2 moves it.
const CASE: &str = "fm001-inline";

/// The one text a later phase waiting for its earlier one says (first line of the issue).
const NOT_DEPLOYED: &str =
    "phase 1 of 2 is not deployed yet: merge it and let Flux apply it, then run fix again";

fn fix(repo: &Path, args: &[&str]) -> common::Run {
    let mut all = vec!["fix"];
    all.extend_from_slice(args);
    all.push(repo.to_str().unwrap());
    let run = fluxmend(all);
    run.assert_no_panic();
    run
}

/// The work tree without `.git`.
fn work_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(dir)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(".git/"))
        .collect()
}

fn assert_tree_is(dir: &Path, stage: &str) {
    let differing = differing_paths(&work_tree(dir), &tree(&fixture(CASE, stage)));
    assert!(differing.is_empty(), "differs from {stage}/: {differing:?}");
}

/// The FM001 finding's reason for having no fix, from `fix --format json`.
fn no_fix_reason(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(args);
    let json = fix(dir, &all).json();
    let finding = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "FM001")
        .unwrap_or_else(|| panic!("an FM001 finding: {json:#}"));
    assert!(finding["fix"].is_null(), "a fix is offered: {finding:#}");
    assert_eq!(json["diff"], "", "{json:#}");
    finding["no_fix_reason"].as_str().unwrap().to_string()
}

#[test]
fn a_second_write_without_committing_writes_nothing_of_phase_2() {
    let repo = git_repo_with(CASE);
    let first = fix(repo.path(), &["--write"]);
    assert_eq!(first.code, 1, "{}", first.stderr);
    assert!(first.stderr.contains("phase 1 of 2"), "{}", first.stderr);
    assert_tree_is(repo.path(), "phase1");

    let second = fix(repo.path(), &["--write"]);
    let report = common::unwrapped(&second.stderr);
    assert!(report.contains(NOT_DEPLOYED), "{report}");
    assert!(report.contains("nothing to change"), "{report}");
    assert!(!report.contains("phase 2 of 2:"), "{report}");
    assert_tree_is(repo.path(), "phase1");
    // The reason names the base and what the move would do from there.
    let reason = no_fix_reason(repo.path(), &[]);
    for needle in [
        NOT_DEPLOYED,
        "HEAD",
        "FluxInstance/flux-system/flux",
        "flux-operator uninstalls Flux",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }

    // What the two runs leave is one safe step: it uninstalls nothing.
    let rollout = fluxmend(["simulate", "--from", "HEAD", repo.path().to_str().unwrap()]);
    assert_eq!(rollout.code, 0, "{}", rollout.stdout);
    assert!(
        !rollout.stdout.contains("[uninstall]"),
        "{}",
        rollout.stdout
    );
}

#[test]
fn phase_2_is_offered_once_the_base_holds_phase_1() {
    let repo = git_repo_with(CASE);
    let dir = repo.path();
    assert_eq!(fix(dir, &["--write"]).code, 1);
    commit_all(dir, "phase 1");
    // Base = HEAD (no remote): it holds phase 1, so the move comes now.
    let second = fix(dir, &["--write"]);
    assert_eq!(second.code, 1, "{}", second.stderr);
    assert!(second.stderr.contains("phase 2 of 2"), "{}", second.stderr);
    assert_tree_is(dir, "after");
    git(dir, &["checkout", "-q", "--", "."]);
    git(dir, &["clean", "-qfd"]);
    assert_tree_is(dir, "phase1");
    // A base before phase 1 (what a cluster that has not applied it runs): no phase 2.
    let reason = no_fix_reason(dir, &["--base", "HEAD~1"]);
    assert!(
        reason.contains(NOT_DEPLOYED) && reason.contains("HEAD~1"),
        "{reason}"
    );
    // An unknown base is a usage error.
    let run = fluxmend(["fix", "--base", "no-such-revision", dir.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--base: `no-such-revision` is not a revision"),
        "{}",
        run.stderr
    );
}

/// `origin` as a bare repository next to the work tree, `main` pushed and tracking it.
fn with_remote(repo: &TempRepo) -> tempfile::TempDir {
    let remote = tempfile::tempdir().unwrap();
    git(remote.path(), &["init", "-q", "--bare", "-b", "main"]);
    let dir = repo.path();
    git(
        dir,
        &["remote", "add", "origin", remote.path().to_str().unwrap()],
    );
    git(dir, &["push", "-q", "-u", "origin", "main"]);
    remote
}

#[test]
fn the_remote_tracking_branch_is_the_default_base() {
    let repo = git_repo_with(CASE);
    let dir = repo.path();
    let _remote = with_remote(&repo);
    assert_eq!(fix(dir, &["--write"]).code, 1);
    commit_all(dir, "phase 1");
    // Committed, not pushed: origin/main (what the cluster can run) lacks phase 1.
    let reason = no_fix_reason(dir, &[]);
    assert!(
        reason.contains(NOT_DEPLOYED) && reason.contains("origin/main"),
        "{reason}"
    );
    git(dir, &["push", "-q"]);
    let run = fix(dir, &[]);
    assert!(run.stderr.contains("phase 2 of 2"), "{}", run.stderr);

    // On a feature branch that tracks its own pushed remote branch, the remote's default branch
    // is the base: the feature branch holding phase 1 is not what the cluster runs.
    git(dir, &["reset", "-q", "--hard", "HEAD~1"]);
    git(dir, &["push", "-q", "-f"]);
    git(dir, &["remote", "set-head", "origin", "main"]);
    git(dir, &["switch", "-q", "-c", "feature"]);
    assert_eq!(fix(dir, &["--write"]).code, 1);
    commit_all(dir, "phase 1");
    git(dir, &["push", "-q", "-u", "origin", "feature"]);
    let reason = no_fix_reason(dir, &[]);
    assert!(
        reason.contains(NOT_DEPLOYED) && reason.contains("origin/main"),
        "{reason}"
    );
    // Merged into main and pushed: phase 2.
    git(dir, &["push", "-q", "origin", "feature:main"]);
    let run = fix(dir, &[]);
    assert!(run.stderr.contains("phase 2 of 2"), "{}", run.stderr);
}

/// fm001-inline with a kustomize patch of the FluxInstance in the layer it leaves: phase 1 (an
/// annotation) renders the same, but the move (phase 2) drops the patch from the instance —
/// only a real kustomize sees it. So phase 1 is not offered: it would leave the instance
/// protected for good and the finding failing CI.
#[test]
fn a_plan_whose_last_phase_fails_offers_no_phase_1() {
    let repo = TempRepo::copy_of(&fixture(CASE, "before"));
    repo.append(
        "infrastructure/controllers/kustomization.yaml",
        "patches:\n  - target:\n      kind: FluxInstance\n    patch: |\n      - op: add\n        path: /spec/cluster\n        value:\n          multitenant: true\n",
    );
    let reason = no_fix_reason(repo.path(), &["--verify", "kustomize"]);
    for needle in [
        "phase 1 of 2 is not offered",
        "phase 2 of 2 would fail",
        "kustomize gate",
        "FluxInstance flux-system/flux",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    let before = tree(repo.path());
    let run = fix(repo.path(), &["--write", "--verify", "kustomize"]);
    assert!(run.stderr.contains("nothing to change"), "{}", run.stderr);
    assert_eq!(tree(repo.path()), before, "nothing written");
    // The builtin gates cannot see patches: with them alone, both phases pass.
    let builtin = fix(repo.path(), &["--verify", "builtin"]);
    assert!(
        builtin.stderr.contains("phase 1 of 2"),
        "{}",
        builtin.stderr
    );
}

/// Two clusters, each with fm001-inline's move; the second cluster builds its own copy of the
/// controllers, with a kustomize patch of the instance that only a real kustomize sees, so only
/// its move's last phase fails. The moves of a run are first checked together (one model per
/// phase for the whole fleet); that fails here, so they are checked one at a time: the second
/// cluster's phase 1 is refused with its reason, the first cluster's is still offered. Without
/// the patch, both are offered.
#[test]
fn one_failing_move_refuses_only_its_own_phase_1() {
    let repo = TempRepo::copy_of(&fixture(CASE, "before"));
    let dir = repo.path();
    let copy = |from: &str, to: &str, edit: &dyn Fn(String) -> String| {
        for entry in std::fs::read_dir(dir.join(from)).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_file() {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                let name = entry.file_name().into_string().unwrap();
                repo.write(&format!("{to}/{name}"), edit(text));
            }
        }
    };
    let us = |text: String| {
        text.replace("./clusters/prod-eu", "./clusters/prod-us")
            .replace(
                "./infrastructure/controllers",
                "./infrastructure/controllers-us",
            )
    };
    copy("clusters/prod-eu", "clusters/prod-us", &us);
    copy(
        "clusters/prod-eu/flux-system",
        "clusters/prod-us/flux-system",
        &us,
    );
    copy(
        "infrastructure/controllers",
        "infrastructure/controllers-us",
        &|t| t,
    );
    // Both moves pass together: both are offered.
    let both = fix(dir, &["--format", "json", "--verify", "kustomize"]).json();
    let offered = both["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "FM001" && f["fix"].is_object())
        .count();
    assert_eq!(offered, 2, "{both:#}");
    repo.append(
        "infrastructure/controllers-us/kustomization.yaml",
        "patches:\n  - target:\n      kind: FluxInstance\n    patch: |\n      - op: add\n        path: /spec/cluster\n        value:\n          multitenant: true\n",
    );
    let json = fix(dir, &["--format", "json", "--verify", "kustomize"]).json();
    let fm001: Vec<&serde_json::Value> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "FM001")
        .collect();
    assert_eq!(fm001.len(), 2, "{json:#}");
    let in_file = |needle: &str| {
        *fm001
            .iter()
            .find(|f| f["file"].as_str().unwrap().contains(needle))
            .unwrap_or_else(|| panic!("{needle}: {json:#}"))
    };
    let refused = in_file("controllers-us");
    assert!(refused["fix"].is_null(), "{refused:#}");
    let reason = refused["no_fix_reason"].as_str().unwrap();
    for needle in [
        "phase 1 of 2 is not offered",
        "phase 2 of 2 would fail",
        "kustomize gate",
    ] {
        assert!(reason.contains(needle), "{needle}: {reason}");
    }
    let offered = in_file("infrastructure/controllers/");
    assert!(offered["fix"].is_object(), "{offered:#}");
    let diff = json["diff"].as_str().unwrap();
    assert!(diff.contains("infrastructure/controllers/"), "{diff}");
    assert!(!diff.contains("controllers-us"), "{diff}");
}

/// What pre-commit does for one `git commit` with the `fluxmend-fix` hook as shipped: run its
/// entry from the top level; the commit goes ahead only when the hook passes and changed
/// nothing. Returns whether the commit was made.
fn commit_with_hook(dir: &Path, entry: &str, message: &str) -> bool {
    git(dir, &["add", "-A"]);
    let before = work_tree(dir);
    let bin = Path::new(env!("CARGO_BIN_EXE_fluxmend")).parent().unwrap();
    let hook = Command::new("bash")
        .args(["-c", entry])
        .current_dir(dir)
        .env(
            "PATH",
            format!("{}:{}", bin.display(), std::env::var("PATH").unwrap()),
        )
        .output()
        .unwrap();
    let changed = work_tree(dir) != before;
    if !hook.status.success() || changed {
        return false;
    }
    commit_all(dir, message);
    true
}

#[test]
fn the_pre_commit_fix_hook_writes_one_phase_per_deployment() {
    let hooks =
        std::fs::read_to_string(common::manifest_dir().join(".pre-commit-hooks.yaml")).unwrap();
    let hooks = yaml_rust2::YamlLoader::load_from_str(&hooks).unwrap();
    let entry = hooks[0]
        .as_vec()
        .unwrap()
        .iter()
        .find(|h| h["id"].as_str() == Some("fluxmend-fix"))
        .unwrap()["entry"]
        .as_str()
        .unwrap()
        .to_string();
    let repo = git_repo_with(CASE);
    let dir = repo.path();
    let _remote = with_remote(&repo);
    repo.append("apps/prod-eu/namespace.yaml", "# a change to commit\n");
    // The hook writes phase 1 and fails the commit; the user stages it and commits again.
    assert!(!commit_with_hook(dir, &entry, "change"));
    assert_tree_is_except(dir, "phase1", "apps/prod-eu/namespace.yaml");
    assert!(commit_with_hook(dir, &entry, "change, with phase 1"));
    // Another commit before phase 1 is pushed and deployed: still nothing of phase 2.
    repo.append("apps/prod-eu/namespace.yaml", "# another change\n");
    assert!(commit_with_hook(dir, &entry, "another change"));
    let rollout = fluxmend(["simulate", "--from", "origin/main", dir.to_str().unwrap()]);
    assert_eq!(rollout.code, 0, "{}", rollout.stdout);
    assert!(
        !rollout.stdout.contains("[uninstall]"),
        "{}",
        rollout.stdout
    );
    // Pushed (merged, applied by Flux): the next commit gets phase 2.
    git(dir, &["push", "-q"]);
    repo.append("apps/prod-eu/namespace.yaml", "# a third change\n");
    assert!(!commit_with_hook(dir, &entry, "third change"));
    assert_tree_is_except(dir, "after", "apps/prod-eu/namespace.yaml");
}

fn assert_tree_is_except(dir: &Path, stage: &str, except: &str) {
    let differing: Vec<String> = differing_paths(&work_tree(dir), &tree(&fixture(CASE, stage)))
        .into_iter()
        .filter(|p| p != except)
        .collect();
    assert!(differing.is_empty(), "differs from {stage}/: {differing:?}");
}
