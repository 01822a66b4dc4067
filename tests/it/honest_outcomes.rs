//! Issue 14, "never wrong, never silent": fluxmend sees what Flux sees, refuses what it cannot do
//! with a usage error, shows what stands in the way of a clean result, says when there is nothing
//! Flux-shaped to analyse, prints a diff `git apply` takes from the work tree's top level, writes
//! YAML-correct scalars, and words git errors as sentences with the next step.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{self, TempRepo, command_args, copy_tree, fluxmend, summary, tree};

/// `git apply ARGS… -` in `dir`, the diff on stdin: whether git accepted it, and its stderr.
fn git_apply(dir: &Path, args: &[&str], diff: &str) -> (bool, String) {
    let mut child = Command::new("git")
        .current_dir(dir)
        .arg("apply")
        .args(args)
        .arg("-")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), diff.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file of the work tree below `root` (its `.git` left out), relative path to bytes.
fn work_files(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut files = tree(root);
    files.retain(|path, _| !path.starts_with(".git/"));
    files
}

// 1. The walk reads what Flux reads.

/// A `*.yaml` in a `.gitignore` above PATH, a `.ignore` file and `.git/info/exclude` hide
/// nothing: Flux reads none of them. A `.gitignore` inside the repository still applies, with or
/// without git.
#[test]
fn ignore_files_flux_does_not_read_hide_nothing() {
    let parent = TempRepo::empty();
    parent.write(".gitignore", "*.yaml\n");
    let root = parent.path().join("repo");
    std::fs::create_dir(&root).unwrap();
    copy_tree(TempRepo::flux_layout().path(), &root);
    std::fs::write(root.join(".ignore"), "*.yaml\n").unwrap();
    let files = |root: &Path| {
        let run = fluxmend(command_args("check", root, &["--format", "json"]));
        assert_eq!(run.code, 0, "{}", run.stdout);
        summary(&run.json(), "files")
    };
    assert_eq!(files(&root), common::LAYOUT_FILES);

    // In a git repository: its exclude file is the user's, not Flux's; its .gitignore applies.
    common::init_and_commit_all(&root, "init");
    std::fs::write(root.join(".git/info/exclude"), "*.yaml\n").unwrap();
    assert_eq!(files(&root), common::LAYOUT_FILES);
    std::fs::write(root.join(".gitignore"), "infra/\n").unwrap();
    let run = fluxmend(command_args("check", &root, &["--format", "json"]));
    assert_eq!(summary(&run.json(), "files"), common::LAYOUT_FILES - 1);

    // Without git, the repository's own .gitignore is honoured all the same.
    let plain = TempRepo::flux_layout();
    plain.write(".gitignore", "infra/\n");
    let run = fluxmend(command_args("check", plain.path(), &["--format", "json"]));
    assert_eq!(summary(&run.json(), "files"), common::LAYOUT_FILES - 1);
}

// 6. Names that are not UTF-8 and scalars that need quoting.

/// A file or directory whose name is not UTF-8 is reported by name, as such, and the rest is
/// analysed. Both are below `infra/`, whose every file Flux reads (a generated kustomization):
/// warnings, not notes.
#[test]
#[cfg(unix)]
fn a_name_that_is_not_utf8_is_reported_as_such() {
    use std::os::unix::ffi::OsStrExt as _;
    let repo = TempRepo::flux_layout();
    let bad = |name: &[u8]| repo.path().join(std::ffi::OsStr::from_bytes(name));
    std::fs::write(bad(b"infra/bad\xff.yaml"), "kind: ConfigMap\n").unwrap();
    std::fs::create_dir(bad(b"infra/dir\xfe")).unwrap();
    std::fs::write(bad(b"infra/dir\xfe/cm.yaml"), "kind: ConfigMap\n").unwrap();
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let file = common::assert_diagnostic(
        &report,
        "infra/bad\u{FFFD}.yaml",
        "file name is not UTF-8",
        "warning",
    );
    assert!(file["message"].as_str().unwrap().contains("rename it"));
    common::assert_diagnostic(
        &report,
        "infra/dir\u{FFFD}",
        "directory name is not UTF-8",
        "warning",
    );
    assert!(!report.to_string().contains("No such file"), "{report:#}");
    assert_eq!(common::diagnostics(&report).len(), 2, "{report:#}");
    assert_eq!(summary(&report, "files"), common::LAYOUT_FILES);
}

/// A layer whose directory is named with a combining character keeps its fix: the new
/// Kustomization's `path` is written as YAML, not with Rust's `\u{302}` escape.
#[test]
fn a_directory_named_with_a_combining_character_keeps_its_fix() {
    // Protected already: the fix is the move, which writes the directory's name.
    let repo = TempRepo::with_protected_flux_instance();
    let dir = "apps\u{302}";
    std::fs::rename(repo.path().join("apps"), repo.path().join(dir)).unwrap();
    let layer = repo.read("clusters/prod/apps.yaml");
    repo.write(
        "clusters/prod/apps.yaml",
        layer.replace("path: ./apps", &format!("path: ./{dir}")),
    );
    let run = repo.run("fix", &["--write", "--verify", "builtin"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("no fix"), "{}", run.stderr);
    assert!(
        run.stderr.contains("written; verified: builtin"),
        "{}",
        run.stderr
    );
    let created = repo.read("clusters/prod/flux-instance.yaml");
    assert!(
        created.contains(&format!("path: \"./{dir}/flux-instance\"")),
        "{created}"
    );
    let after = repo.run("check", &[]);
    assert_eq!(after.code, 0, "{}", after.stdout);
}

// 5. The diff's paths.

/// A git work tree with a README at the top and the Flux layout (with an FM001 finding whose
/// fix is the move, in one step) in `deploy/k8s/`, all committed.
fn work_tree_with_layout_below() -> TempRepo {
    let repo = TempRepo::empty();
    repo.write("README.md", "fleet\n");
    copy_tree(
        TempRepo::with_protected_flux_instance().path(),
        &repo.path().join("deploy/k8s"),
    );
    common::init_and_commit_all(repo.path(), "init");
    repo
}

/// With PATH inside a git work tree the diff's paths are relative to its top level: `git apply`
/// there (and in PATH itself, which git reads relative to the top level too) makes exactly the
/// change `fix --write` makes. `--diff-prefix` sets another prefix.
#[test]
fn the_diff_applies_from_the_work_tree_top_level() {
    let written = work_tree_with_layout_below();
    let run = fluxmend(command_args(
        "fix",
        &written.path().join("deploy/k8s"),
        &["--write", "--verify", "builtin"],
    ));
    assert_eq!(run.code, 1, "{}", run.stderr);
    let expected = work_files(written.path());

    for apply_in in ["", "deploy/k8s"] {
        let repo = work_tree_with_layout_below();
        let path = repo.path().join("deploy/k8s");
        let run = fluxmend(command_args("fix", &path, &["--verify", "builtin"]));
        assert_eq!(run.code, 1, "{}", run.stderr);
        let diff = run.stdout;
        assert!(
            diff.starts_with("diff --git a/deploy/k8s/"),
            "paths from the top level: {diff}"
        );
        let dir = repo.path().join(apply_in);
        let (ok, err) = git_apply(&dir, &["--check"], &diff);
        assert!(ok, "git apply --check in {apply_in:?}: {err}");
        let (ok, err) = git_apply(&dir, &[], &diff);
        assert!(ok, "git apply in {apply_in:?}: {err}");
        assert!(
            work_files(repo.path()) == expected,
            "applied in {apply_in:?}: {:?}",
            common::differing_paths(&work_files(repo.path()), &expected)
        );
    }

    // The JSON diff is the same text; an explicit prefix replaces the work tree's.
    let repo = work_tree_with_layout_below();
    let path = repo.path().join("deploy/k8s");
    let json = fluxmend(command_args("fix", &path, &["--format", "json"])).json();
    assert!(
        json["diff"]
            .as_str()
            .unwrap()
            .starts_with("diff --git a/deploy/k8s/")
    );
    assert_eq!(json["files"][0]["path"], "apps/flux-instance/flux.yaml");
    for (prefix, start) in [
        (".", "diff --git a/apps/"),
        ("", "diff --git a/apps/"),
        ("fleet/", "diff --git a/fleet/apps/"),
        ("./a/b", "diff --git a/a/b/apps/"),
    ] {
        let run = fluxmend(command_args("fix", &path, &["--diff-prefix", prefix]));
        assert!(run.stdout.starts_with(start), "{prefix:?}: {}", run.stdout);
    }
    for bad in ["../x", "/abs"] {
        let run = fluxmend(command_args("fix", &path, &["--diff-prefix", bad]));
        assert_eq!(run.code, 2, "{bad}: {run:?}");
        assert!(run.stderr.contains("--diff-prefix"), "{}", run.stderr);
    }
}

/// Outside any work tree the paths are relative to PATH, as before.
#[test]
fn outside_git_the_diff_is_relative_to_path() {
    let repo = TempRepo::with_flux_instance();
    let run = repo.run("fix", &["--verify", "builtin"]);
    assert!(
        run.stdout.starts_with("diff --git a/apps/"),
        "{}",
        run.stdout
    );
    let (ok, err) = git_apply(repo.path(), &["--check"], &run.stdout);
    assert!(ok, "{err}");
}

// 7. git errors as sentences.

/// `fix --commit` outside a git repository says so and what to do instead, without libgit2's
/// class and code, and changes nothing.
#[test]
fn commit_outside_git_is_a_plain_sentence() {
    let repo = TempRepo::with_flux_instance();
    let before = tree(repo.path());
    let run = fluxmend(command_args("fix", repo.path(), &["--commit"]));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("is not inside a git repository: use --write instead of --commit"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("class="), "{}", run.stderr);
    assert_eq!(tree(repo.path()), before);
}
