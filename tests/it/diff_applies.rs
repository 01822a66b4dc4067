//! The diff `fix` prints is a contract: `git apply` and `patch -p1` both turn each fixture's
//! `before/` tree into its `after/` tree (renames included) — through `phase1/` for a move done
//! in two phases.

use std::process::{Command, Stdio};

use crate::common::{TempRepo, command_args, dirs, fixture, fixture_trees, fluxmend, tree};

#[test]
fn git_apply_and_patch_reproduce_every_after_tree() {
    let cases: Vec<String> = fixture_trees(true)
        .into_iter()
        .filter(|t| t.stage == "after")
        .map(|t| t.case)
        .collect();
    assert!(cases.len() >= 7, "{cases:?}");
    let steps = cases.iter().flat_map(|case| {
        let phase1 = fixture(case, "phase1");
        let stages = if phase1.is_dir() {
            vec![fixture(case, "before"), phase1, fixture(case, "after")]
        } else {
            vec![fixture(case, "before"), fixture(case, "after")]
        };
        (0..stages.len() - 1)
            .map(|i| (case.clone(), stages[i].clone(), stages[i + 1].clone()))
            .collect::<Vec<_>>()
    });
    for (case, before, after) in steps {
        // The fixtures live inside this crate's git work tree: paths relative to PATH here.
        let run = fluxmend(command_args("fix", &before, &["--diff-prefix", "."]));
        assert_eq!(run.code, 1, "{case}");
        for tool in ["git", "patch"] {
            let tmp = TempRepo::copy_of(&before);
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
                .stdin(Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), run.stdout.as_bytes())
                .unwrap();
            assert!(
                child.wait().unwrap().success(),
                "{tool} rejects the diff of {case}"
            );
            // Every file and every directory, as `diff -r` compares them.
            assert_eq!(
                tree(tmp.path()),
                tree(&after),
                "{tool}: {case} differs from after/"
            );
            assert_eq!(
                dirs(tmp.path()),
                dirs(&after),
                "{tool}: {case} differs from after/"
            );
        }
    }
}
