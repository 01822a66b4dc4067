//! Concurrent changes during `fix --write` (issue 24, item 6): another writer changing a file the
//! fix touches, or a directory on the way swapped for a symbolic link, while fluxmend writes.
//! Whatever the moment, nothing is written outside the root, nothing another writer wrote is
//! overwritten, the race is reported (exit 2), and the tree is the one before the write plus the
//! other writer's change: the journal rolls the write back consistently, also when the race is
//! lost after the write was decided.
//!
//! The races are injected deterministically through a hook of debug builds
//! (`FLUXMEND_TEST_RACE_HOOK`: a program run with `prepared` once the temporaries are written,
//! and with `apply TARGET` right before each target is put in place); release builds have no hook
//! and these tests do nothing there.

// Shell race hooks and symbolic links: unix only.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, TempRepo, copy_tree, fixture, outside_dir, tree};

/// 15 files: creates in a new directory, an edit, deletions (the write of the reported race).
const CASE: &str = "forgejo-runners-in-apps";
const STAGE: &str = "phase1";

struct Run {
    code: i32,
    stderr: String,
}

/// `fix --write` on `root` with the race hook `script` (a shell script body, run in the root
/// with the hook's arguments as `$1`, `$2`).
fn write_with_hook(root: &Path, script: &str) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let hook = dir.path().join("hook.sh");
    std::fs::write(&hook, format!("#!/bin/sh\nset -e\n{script}\n")).unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--write", "--verify", "builtin"])
        .arg(root)
        .env("FLUXMEND_TEST_RACE_HOOK", &hook)
        .output()
        .unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The plan's files: (path, change).
fn plan(root: &Path) -> Vec<(String, String)> {
    let run = common::fluxmend([
        "fix",
        "--verify",
        "builtin",
        "--format",
        "json",
        root.to_str().unwrap(),
    ]);
    run.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["change"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn leftovers(t: &BTreeMap<String, Vec<u8>>) -> Vec<&String> {
    t.keys().filter(|k| k.contains(".fluxmend-")).collect()
}

fn active() -> bool {
    cfg!(debug_assertions)
}

/// Another writer changes (or, for a created path, creates) one target: after the temporaries
/// are written, or right before that target is put in place. Every target in turn.
#[test]
fn another_writers_change_is_never_overwritten() {
    if !active() {
        return;
    }
    let files = plan(&fixture(CASE, STAGE));
    assert_eq!(files.len(), 15);
    let mut trials = 0;
    for (path, change) in &files {
        for point in ["prepared", "apply"] {
            let repo = TempRepo::copy_of(&fixture(CASE, STAGE));
            let theirs = format!("# {change} raced at {point}\n");
            let mut expected = tree(repo.path());
            expected.insert(path.clone(), theirs.clone().into_bytes());
            let condition = match point {
                "prepared" => "[ \"$1\" = prepared ]".to_string(),
                _ => format!("[ \"$1\" = apply ] && [ \"$2\" = '{path}' ]"),
            };
            let run = write_with_hook(
                repo.path(),
                &format!(
                    "if {condition}; then printf '{}' > '{path}'; fi",
                    theirs.replace('\n', "\\n")
                ),
            );
            let label = format!("{change} {path} at {point}");
            assert_eq!(run.code, 2, "{label}: {}", run.stderr);
            assert!(
                run.stderr.contains("changed while fluxmend was writing"),
                "{label}: {}",
                run.stderr
            );
            let now = tree(repo.path());
            assert!(leftovers(&now).is_empty(), "{label}: {:?}", leftovers(&now));
            assert_eq!(
                common::differing_paths(&now, &expected),
                Vec::<String>::new(),
                "{label}: the tree is not the one before plus the other writer's change\n{}",
                run.stderr
            );
            trials += 1;
        }
    }
    assert_eq!(trials, 30);
}

/// A directory on the way is swapped for a link to a directory outside the root for a moment
/// (the hook swaps it, the test puts it back): nothing lands outside, nothing is left missing.
#[test]
fn a_directory_swapped_for_a_link_is_a_lost_race() {
    if !active() {
        return;
    }
    let files = plan(&fixture(CASE, STAGE));
    for (swapped, point) in [
        ("apps/base/forgejo", "prepared"),
        ("apps/base/forgejo", "apply"),
        ("apps/base", "apply"),
        ("apps/base/forgejo/runners", "apply"),
        ("clusters/kai-server", "apply"),
    ] {
        // At apply: the hook fires before the first target below the swapped directory.
        let target = files
            .iter()
            .map(|(p, _)| p)
            .find(|p| p.starts_with(&format!("{swapped}/")))
            .unwrap();
        let repo = TempRepo::copy_of(&fixture(CASE, STAGE));
        let outside = outside_dir();
        let decoy = outside.path().join("decoy");
        std::fs::create_dir(&decoy).unwrap();
        let real: PathBuf = repo.path().join(swapped);
        if real.exists() {
            copy_tree(&real, &decoy);
        }
        let before = tree(repo.path());
        let before_outside = tree(outside.path());
        let aside = format!("{swapped}.aside");
        let condition = match point {
            "prepared" => "[ \"$1\" = prepared ]".to_string(),
            _ => format!("[ \"$1\" = apply ] && [ \"$2\" = '{target}' ]"),
        };
        let run = write_with_hook(
            repo.path(),
            &format!(
                "if {condition} && [ -d '{swapped}' ] && [ ! -L '{swapped}' ]; then mv '{swapped}' '{aside}'; ln -s '{}' '{swapped}'; fi",
                decoy.display()
            ),
        );
        let label = format!("{swapped} at {point}");
        assert_eq!(run.code, 2, "{label}: {}", run.stderr);
        assert!(
            run.stderr.contains("changed while fluxmend was writing"),
            "{label}: {}",
            run.stderr
        );
        assert_eq!(
            tree(outside.path()),
            before_outside,
            "{label}: wrote outside"
        );
        // The moment ends: the directory comes back.
        let link = repo.path().join(swapped);
        if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_symlink()) {
            std::fs::remove_file(&link).unwrap();
            std::fs::rename(repo.path().join(&aside), &link).unwrap();
        }
        let now = tree(repo.path());
        assert_eq!(
            common::differing_paths(&now, &before),
            Vec::<String>::new(),
            "{label}: the tree is not the one before\n{}",
            run.stderr
        );
    }
}

/// Killed after the write was decided, then another writer changes a target not yet put in
/// place: the next `fix --write` cannot complete without overwriting it, so it rolls back.
#[test]
fn recovery_rolls_back_rather_than_overwrite_a_change_made_after_a_crash() {
    if !active() {
        return;
    }
    let files = plan(&fixture(CASE, STAGE));
    // Killed right before the edit (creates go first): the creates are in place.
    let (edited, _) = files.iter().find(|(_, c)| c == "edit").unwrap();
    let repo = TempRepo::copy_of(&fixture(CASE, STAGE));
    let before = tree(repo.path());
    let run = write_with_hook(
        repo.path(),
        &format!("if [ \"$1\" = apply ] && [ \"$2\" = '{edited}' ]; then kill -9 $PPID; fi"),
    );
    assert_eq!(run.code, -1, "killed: {}", run.stderr);
    assert!(repo.path().join(".fluxmend-journal").exists());
    repo.append(edited, "# theirs\n");
    let mut expected = before.clone();
    expected
        .get_mut(edited.as_str())
        .unwrap()
        .extend_from_slice(b"# theirs\n");
    let recovered = common::fluxmend([
        "fix",
        "--write",
        "--verify",
        "builtin",
        "--rule",
        "FM007",
        repo.path().to_str().unwrap(),
    ]);
    assert!(
        recovered.stderr.contains("rolled back"),
        "{}",
        recovered.stderr
    );
    assert!(
        recovered.stderr.contains(edited.as_str()),
        "{}",
        recovered.stderr
    );
    assert_eq!(
        common::differing_paths(&tree(repo.path()), &expected),
        Vec::<String>::new(),
        "{}",
        recovered.stderr
    );
}

/// Another writer replaces a target right before it is put in place with a link to a file
/// outside the root, a FIFO, or nothing (it deleted it): a lost race every time, reported
/// without hanging; nothing outside changes, and once the FIFO or link is taken away again the
/// tree is the one before, less the raced file. Edited, deleted and created targets each.
#[test]
fn a_target_replaced_by_a_link_a_fifo_or_nothing_is_a_lost_race() {
    if !active() {
        return;
    }
    let files = plan(&fixture(CASE, STAGE));
    let mut trials = 0;
    for change in ["edit", "delete", "create"] {
        let (target, _) = files
            .iter()
            .find(|(_, c)| c == change)
            .unwrap_or_else(|| panic!("the plan has no {change}"));
        for swap in ["link", "fifo", "nothing"] {
            let repo = TempRepo::copy_of(&fixture(CASE, STAGE));
            let outside = outside_dir();
            let secret = outside.path().join("secret.yaml");
            std::fs::write(&secret, "kind: Secret\n").unwrap();
            let before_outside = tree(outside.path());
            let mut expected = tree(repo.path());
            expected.remove(target);
            let action = match swap {
                "link" => format!("rm -f '{target}'; ln -s '{}' '{target}'", secret.display()),
                "fifo" => format!("rm -f '{target}'; mkfifo '{target}'"),
                _ => format!("rm -f '{target}'"),
            };
            let run = write_with_hook(
                repo.path(),
                &format!("if [ \"$1\" = apply ] && [ \"$2\" = '{target}' ]; then {action}; fi"),
            );
            let label = format!("{change} {target} swapped for {swap}");
            // Deleting a target that is to be deleted, or one not created yet, changes nothing
            // the write relies on: it completes (exit 1, changes written).
            if swap == "nothing" && change != "edit" {
                assert_eq!(run.code, 1, "{label}: {}", run.stderr);
                assert!(leftovers(&tree(repo.path())).is_empty(), "{label}");
                continue;
            }
            assert_eq!(run.code, 2, "{label}: {}", run.stderr);
            assert!(
                run.stderr.contains("changed while fluxmend was writing"),
                "{label}: {}",
                run.stderr
            );
            assert_eq!(tree(outside.path()), before_outside, "{label}: outside");
            let raced = repo.path().join(target);
            if std::fs::symlink_metadata(&raced).is_ok() {
                std::fs::remove_file(&raced).unwrap();
            }
            let now = tree(repo.path());
            assert!(leftovers(&now).is_empty(), "{label}: {:?}", leftovers(&now));
            assert_eq!(
                common::differing_paths(&now, &expected),
                Vec::<String>::new(),
                "{label}: the tree is not the one before\n{}",
                run.stderr
            );
            trials += 1;
        }
    }
    assert_eq!(trials, 7);
}
