//! The diff `fix` prints is a contract: `git apply` and `patch -p1` both turn each fixture's
//! `before/` tree into its `after/` tree (renames included).

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures_with_after() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("after").is_dir())
        .collect();
    cases.sort();
    cases
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

fn same_tree(a: &Path, b: &Path) -> bool {
    Command::new("diff")
        .args(["-r", "-x", ".git"])
        .arg(a)
        .arg(b)
        .status()
        .unwrap()
        .success()
}

#[test]
fn git_apply_and_patch_reproduce_every_after_tree() {
    let cases = fixtures_with_after();
    assert!(cases.len() >= 7, "{cases:?}");
    for case in cases {
        let before = case.join("before");
        let out = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
            .arg("fix")
            .arg(&before)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{}", case.display());
        let diff = out.stdout;
        for tool in ["git", "patch"] {
            let tmp = tempfile::tempdir().unwrap();
            copy_tree(&before, tmp.path());
            let mut cmd = if tool == "git" {
                let mut c = Command::new("git");
                c.args(["apply", "--whitespace=nowarn", "-"]);
                c
            } else {
                let mut c = Command::new("patch");
                c.args(["-p1", "-s", "--no-backup-if-mismatch"]);
                c
            };
            let mut child = cmd
                .current_dir(tmp.path())
                .stdin(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), &diff).unwrap();
            assert!(
                child.wait().unwrap().success(),
                "{tool} rejects the diff of {}",
                case.display()
            );
            assert!(
                same_tree(tmp.path(), &case.join("after")),
                "{tool}: {} differs from after/",
                case.display()
            );
        }
    }
}
