//! `fix --commit` that fails after it has started leaves the working tree and the index exactly
//! as they were.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_failed_commit_restores_tree_and_index() {
    let tmp = tempfile::tempdir().unwrap();
    let before = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fm001-dedicated/before");
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", before.display()))
        .arg(tmp.path())
        .status()
        .unwrap();
    assert!(status.success());
    let dir = tmp.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
    );
    // The branch exists already: creating it fails after the files were written and staged.
    git(dir, &["branch", "taken"]);
    let head = git(dir, &["rev-parse", "HEAD"]);
    let out = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--commit", "--branch", "taken"])
        .arg(dir)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        git(dir, &["status", "--porcelain"]),
        "",
        "working tree and index are clean"
    );
    assert_eq!(git(dir, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        git(dir, &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
}
