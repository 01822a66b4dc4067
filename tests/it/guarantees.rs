//! The promises of README "What fluxmend guarantees" about writes and commits (issue 12): no
//! write outside the root or through a link, nothing existing overwritten by a created file, a
//! commit of exactly the touched paths, all or nothing when killed, and the small ones (branch
//! names, unborn HEAD, no empty directory left behind).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{self, TempRepo, fixture, fluxmend, git, git_repo_with, outside_dir, tree};

const AS_TESTER: [&str; 4] = ["-c", "user.name=t", "-c", "user.email=t@t"];

fn git_as_tester(dir: &Path, args: &[&str]) -> String {
    git(dir, &[&AS_TESTER[..], args].concat())
}

/// The files of a git work tree, `.git` left out.
#[cfg(unix)]
fn work_tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut t = tree(dir);
    t.retain(|k, _| !k.starts_with(".git/"));
    t
}

/// Paths that look like fluxmend temporaries or its journal.
fn leftovers(root: &Path) -> Vec<String> {
    tree(root)
        .into_keys()
        .filter(|p| p.contains(".fluxmend-"))
        .collect()
}

/// Run the binary with extra environment variables.
fn fluxmend_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run fluxmend");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Item 1: a link named like the old fixed temporary sibling (`.NAME.fluxmend-tmp`) pointing out
/// of the root is neither written through nor replaces the file.
#[test]
#[cfg(unix)]
fn a_link_named_like_a_temporary_file_is_never_written_through() {
    let repo = TempRepo::with_protected_flux_instance();
    let outside = outside_dir();
    let victim = outside.path().join("victim");
    repo.symlink(&victim, "apps/.kustomization.yaml.fluxmend-tmp");
    let before_outside = tree(outside.path());
    let run = repo.run("fix", &["--write", "--verify", "builtin"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!victim.exists(), "wrote outside the root");
    assert_eq!(tree(outside.path()), before_outside);
    let meta = std::fs::symlink_metadata(repo.path().join("apps/kustomization.yaml")).unwrap();
    assert!(
        meta.is_file(),
        "apps/kustomization.yaml was replaced by a link"
    );
    assert_ne!(
        repo.read("apps/kustomization.yaml"),
        common::APPS_KUSTOMIZATION.to_string() + "  - flux.yaml\n",
        "the fix was written"
    );
    assert_eq!(
        leftovers(repo.path()),
        vec!["apps/.kustomization.yaml.fluxmend-tmp".to_string()],
        "only the planted link remains"
    );
}

/// Item 3: a file a fix would create exists, hidden from the loader by `.gitignore`: it is
/// neither overwritten nor read, and the fix is refused with the path.
#[test]
fn an_ignored_existing_file_at_a_created_path_is_never_overwritten() {
    // Phase 2, the move, creates the new folder.
    let repo = TempRepo::copy_of(&fixture("fm002-generated", "phase1"));
    repo.write(".gitignore", "apps/gitea-runners/\n")
        .write("apps/gitea-runners/kustomization.yaml", "my local secret\n");
    let before = tree(repo.path());
    let run = repo.run("fix", &["--write", "--verify", "builtin"]);
    assert_eq!(tree(repo.path()), before, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "refusing to create apps/gitea-runners/kustomization.yaml: it already exists"
        ),
        "{}",
        run.stderr
    );
}

/// Item 2: staged, unrelated changes are neither committed nor unstaged.
#[test]
fn commit_holds_only_the_touched_paths_and_keeps_the_rest_staged() {
    let repo = git_repo_with("fm001-dedicated");
    let dir = repo.path();
    repo.write("unrelated.txt", "staged, not part of the fix\n");
    git(dir, &["add", "unrelated.txt"]);
    let run = fluxmend([
        "fix",
        "--commit",
        "--verify",
        "builtin",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let committed = git(dir, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(committed.trim(), "clusters/production/flux-instance.yaml");
    assert_eq!(
        git(dir, &["diff", "--cached", "--name-only"]).trim(),
        "unrelated.txt",
        "the unrelated change is still staged"
    );
    assert_eq!(
        git(dir, &["status", "--porcelain"]).trim(),
        "A  unrelated.txt"
    );
}

/// Item 2: run on a subdirectory, files staged outside it are not committed.
#[test]
fn commit_from_a_subdirectory_ignores_what_is_staged_outside_it() {
    let repo = TempRepo::empty();
    let dir = repo.path();
    common::copy_tree(&fixture("fm001-dedicated", "before"), &dir.join("fleet"));
    git(dir, &["init", "-q", "-b", "main"]);
    git_as_tester(dir, &["add", "-A"]);
    git_as_tester(dir, &["commit", "-qm", "init"]);
    repo.write("elsewhere/notes.yaml", "a: 1\n");
    git(dir, &["add", "elsewhere/notes.yaml"]);
    let fleet = dir.join("fleet");
    let run = fluxmend([
        "fix",
        "--commit",
        "--verify",
        "builtin",
        fleet.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let committed = git(dir, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(
        committed.trim(),
        "fleet/clusters/production/flux-instance.yaml"
    );
    assert_eq!(
        git(dir, &["status", "--porcelain"]).trim(),
        "A  elsewhere/notes.yaml"
    );
}

/// Item 6: a repository without commits gets the fix as its root commit, not "uncommitted
/// changes".
#[test]
fn commit_in_a_repository_without_commits_makes_the_root_commit() {
    let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    let run = fluxmend([
        "fix",
        "--commit",
        "--verify",
        "builtin",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("uncommitted"), "{}", run.stderr);
    assert_eq!(git(dir, &["rev-list", "--count", "HEAD"]).trim(), "1");
    let committed = git(dir, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(committed.trim(), "clusters/production/flux-instance.yaml");
    assert_eq!(
        tree(dir).get("clusters/production/flux-instance.yaml"),
        tree(&fixture("fm001-dedicated", "after")).get("clusters/production/flux-instance.yaml")
    );
}

/// Item 6: branch names git refuses are a usage error before anything is read or written.
#[test]
fn invalid_branch_names_are_usage_errors() {
    let repo = git_repo_with("fm001-dedicated");
    let dir = repo.path();
    let before = tree(dir);
    for name in [
        "@",
        "refs/heads/x",
        "a..b",
        "-x",
        "x.lock",
        "a b",
        "HEAD",
        "x/",
    ] {
        let flag = format!("--branch={name}");
        let run = fluxmend(["fix", "--commit", &flag, dir.to_str().unwrap()]);
        assert_eq!(run.code, 2, "--branch {name:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("not a valid branch name"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(tree(dir), before);
    assert_eq!(git(dir, &["branch", "--list"]).trim(), "* main");
}

/// Item 6: a commit that fails after the files were written restores them and the index and
/// removes the directories the write made. The failure is a lock another git process takes
/// while fluxmend writes (the race hook of debug builds takes it once the temporaries are
/// written): the index, then the branch.
#[cfg(unix)]
#[test]
fn a_failed_commit_leaves_no_new_directory() {
    if !cfg!(debug_assertions) {
        return; // the race hook exists in debug builds only
    }
    for lock in [".git/index.lock", ".git/refs/heads/main.lock"] {
        let repo = git_repo_with("fm001-inline");
        let dir = repo.path();
        let (files, folders) = (work_tree(dir), common::dirs(dir));
        let head = git(dir, &["rev-parse", "HEAD"]);
        let hooks = tempfile::tempdir().unwrap();
        let hook = hooks.path().join("hook.sh");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh
[ \"$1\" = prepared ] && touch {lock}\nexit 0\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let (code, _, err) = fluxmend_env(
            &[
                "fix",
                "--commit",
                "--verify",
                "builtin",
                dir.to_str().unwrap(),
            ],
            &[("FLUXMEND_TEST_RACE_HOOK", hook.to_str().unwrap())],
        );
        assert_eq!(code, 2, "{lock}: {err}");
        assert!(dir.join(lock).exists(), "{lock}: the hook did not run");
        std::fs::remove_file(dir.join(lock)).unwrap();
        assert_eq!(
            common::differing_paths(&work_tree(dir), &files),
            Vec::<String>::new(),
            "{lock}"
        );
        let new_dirs: Vec<String> = common::dirs(dir).difference(&folders).cloned().collect();
        assert!(
            new_dirs.iter().all(|d| d.starts_with(".git")),
            "{lock}: new directories left behind: {new_dirs:?}"
        );
        assert_eq!(git(dir, &["status", "--porcelain"]), "", "{lock}");
        assert_eq!(git(dir, &["rev-parse", "HEAD"]), head, "{lock}");
    }
}

/// Recover an interrupted write and nothing else: `fix --write` with a rule that finds nothing
/// in these fixtures (a dry run never recovers). Returns stderr.
fn recover_only(root: &str) -> String {
    let (code, _, err) = fluxmend_env(
        &[
            "fix", "--write", "--verify", "builtin", "--rule", "FM007", root,
        ],
        &[],
    );
    assert!(code == 0 || code == 1, "{err}");
    err
}

/// Item 4: stopped (as by SIGKILL) after every possible number of steps, the next run completes
/// or rolls back the write: the tree is exactly before or exactly after, no temporary left.
#[test]
fn an_interrupted_write_is_completed_or_rolled_back_by_the_next_run() {
    if !cfg!(debug_assertions) {
        return; // the stop hook exists in debug builds only
    }
    // From the protected tree: the move is the large write.
    let case = "forgejo-runners-in-apps";
    let before = tree(&fixture(case, "phase1"));
    let after = tree(&fixture(case, "after"));
    let (mut rolled_back, mut completed) = (0, 0);
    for n in 0.. {
        let repo = TempRepo::copy_of(&fixture(case, "phase1"));
        let root = repo.path().to_str().unwrap();
        let steps = n.to_string();
        let (code, _, err) = fluxmend_env(
            &["fix", "--write", "--verify", "builtin", root],
            &[("FLUXMEND_TEST_ABORT_AFTER", &steps)],
        );
        if code == 1 {
            assert_eq!(tree(repo.path()), after, "uninterrupted run");
            assert!(n > 10, "the write has more steps than {n}");
            break;
        }
        assert_eq!(code, 86, "step {n}: {err}");
        let err = recover_only(root);
        assert!(
            err.contains("an interrupted fix --write"),
            "step {n}: {err}"
        );
        let now = tree(repo.path());
        if now == before {
            rolled_back += 1;
            assert!(err.contains("rolled back"), "step {n}: {err}");
        } else {
            assert_eq!(now, after, "step {n}: mixed tree after recovery");
            completed += 1;
            assert!(err.contains("completed"), "step {n}: {err}");
        }
        assert!(leftovers(repo.path()).is_empty(), "step {n}");
    }
    assert!(
        rolled_back > 0 && completed > 0,
        "{rolled_back} {completed}"
    );
}

/// Item 4: SIGKILL at seeded random moments of `fix --write`; after the next run the tree is
/// fully old or fully new. `FLUXMEND_KILL_ITERATIONS` runs more than the default 24.
#[test]
fn sigkill_during_write_never_leaves_a_mixed_tree() {
    // From the protected tree: the move is the large write.
    let case = "forgejo-runners-in-apps";
    let before = tree(&fixture(case, "phase1"));
    let after = tree(&fixture(case, "after"));
    let iterations: u64 = std::env::var("FLUXMEND_KILL_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    // How long a whole run takes: kill moments are spread over it.
    let start = std::time::Instant::now();
    let probe = TempRepo::copy_of(&fixture(case, "phase1"));
    let run = fluxmend([
        "fix",
        "--write",
        "--verify",
        "builtin",
        probe.path().to_str().unwrap(),
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let span = start.elapsed().as_micros() as u64 + 1;
    let mut seed: u64 = 0x5eed_0012;
    let mut random = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..iterations {
        let repo = TempRepo::copy_of(&fixture(case, "phase1"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
            .args(["fix", "--write", "--verify", "builtin"])
            .arg(repo.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(random() % span));
        let _ = child.kill();
        let _ = child.wait();
        recover_only(repo.path().to_str().unwrap());
        let (code, _, err) = fluxmend_env(
            &["fix", "--verify", "builtin", repo.path().to_str().unwrap()],
            &[],
        );
        let now = tree(repo.path());
        assert!(
            (now == before && code == 1) || (now == after && code == 0),
            "iteration {i}: mixed tree or wrong code {code}: {err}"
        );
        assert!(leftovers(repo.path()).is_empty(), "iteration {i}");
    }
}

/// A journal planted in a repository cannot send the recovery outside the root.
#[test]
fn a_hostile_journal_is_refused() {
    let repo = TempRepo::with_flux_instance();
    let outside = outside_dir();
    repo.write(
        ".fluxmend-journal",
        format!(
            "fluxmend-journal 1\ncommit\ndelete \"../{}/cm.yaml\"\n",
            outside.path().display()
        ),
    );
    let run = fluxmend(["fix", "--write", repo.path().to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(outside.path().join("cm.yaml").exists());
}

/// Issue 24, item 9: an edited file keeps its owner and group (as root: any; as another user: a
/// group the user is in), and its mode.
#[cfg(unix)]
#[test]
fn an_edited_file_keeps_its_owner_and_group() {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
    let edited = repo.path().join("clusters/production/flux-instance.yaml");
    let me = std::fs::metadata(repo.path()).unwrap();
    let root = me.uid() == 0;
    let (uid, gid) = if root {
        (4242, 4343)
    } else {
        // A supplementary group of this user other than the file's, if there is one.
        let groups = Command::new("id").arg("-G").output().unwrap();
        let other = String::from_utf8_lossy(&groups.stdout)
            .split_whitespace()
            .filter_map(|g| g.parse::<u32>().ok())
            .find(|&g| g != me.gid());
        match other {
            Some(g) => (me.uid(), g),
            None => return, // nothing another owner could be
        }
    };
    std::os::unix::fs::chown(&edited, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&edited, std::fs::Permissions::from_mode(0o640)).unwrap();
    let run = repo.run("fix", &["--write", "--verify", "builtin"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        tree(repo.path()),
        tree(&fixture("fm001-dedicated", "after"))
    );
    let now = std::fs::metadata(&edited).unwrap();
    assert_eq!((now.uid(), now.gid()), (uid, gid), "owner and group");
    assert_eq!(now.mode() & 0o7777, 0o640, "mode");
}

/// Issue 24, item 9, for what the write creates: a new file and a new directory take the owner
/// and group of the directory they are made in, so that root fixing another user's tree leaves
/// nothing root-owned behind (they were root's).
#[cfg(unix)]
#[test]
fn created_files_and_directories_take_their_directorys_owner() {
    use std::os::unix::fs::MetadataExt as _;
    if std::fs::metadata("/proc/self").map_or(1, |m| m.uid()) != 0 {
        return; // only root can give a file another owner
    }
    // The instance already protected: FM001 moves it into a new layer directory at once.
    let repo = TempRepo::with_protected_flux_instance();
    let owner = (4242, 4343);
    for entry in walkdir::WalkDir::new(repo.path()) {
        let entry = entry.unwrap();
        std::os::unix::fs::lchown(entry.path(), Some(owner.0), Some(owner.1)).unwrap();
    }
    let before = common::dirs(repo.path());
    let run = repo.run("fix", &["--write", "--verify", "builtin"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        common::dirs(repo.path()).len() > before.len(),
        "the fix creates a directory:\n{}",
        run.stderr
    );
    for entry in walkdir::WalkDir::new(repo.path()) {
        let entry = entry.unwrap();
        let m = entry.metadata().unwrap();
        assert_eq!(
            (m.uid(), m.gid()),
            owner,
            "{} is not owned as its directory",
            entry.path().display()
        );
    }
}

/// Parallel work keeps its order (ARCHITECTURE.md): on every fixture, `fix`'s JSON (findings,
/// fixes, gates' verdicts, the diff) is the same on one thread as on several.
#[test]
fn output_is_the_same_whatever_the_thread_count() {
    let mut compared = 0;
    for tree in common::fixture_trees(false) {
        let root = tree.root.to_str().unwrap();
        let args = ["fix", "--verify", "builtin", "--format", "json", root];
        let one = fluxmend_env(&args, &[("RAYON_NUM_THREADS", "1")]);
        let many = fluxmend_env(&args, &[("RAYON_NUM_THREADS", "4")]);
        assert!(one.0 == 0 || one.0 == 1, "{}: {}", tree.label(), one.2);
        assert_eq!(one, many, "{}", tree.label());
        compared += usize::from(one.1.contains("\"rule\""));
    }
    assert!(compared > 20, "only {compared} fixtures have findings");
}

#[path = "../../examples/fleet/mod.rs"]
#[allow(dead_code)]
mod fleet;

/// The same on a generated fleet, where rules and gates work on many clusters at once (FM002
/// analyses each cluster in its own task): findings of several clusters, in the same order on
/// one thread as on several.
#[test]
fn fleet_output_is_the_same_whatever_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("fleet");
    fleet::generate(&out, 1400, 1).unwrap();
    let root = out.to_str().unwrap();
    let args = ["fix", "--verify", "builtin", "--format", "json", root];
    let one = fluxmend_env(&args, &[("RAYON_NUM_THREADS", "1")]);
    let many = fluxmend_env(&args, &[("RAYON_NUM_THREADS", "4")]);
    assert!(one.0 == 0 || one.0 == 1, "{}", one.2);
    assert_eq!(one, many);
    let report: serde_json::Value = serde_json::from_str(&one.1).unwrap();
    let clusters: std::collections::BTreeSet<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "FM002")
        .filter_map(|f| f["cluster"].as_str())
        .collect();
    assert!(clusters.len() > 1, "FM002 in {clusters:?}");
}
