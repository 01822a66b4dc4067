//! Seeded mutation testing of `fix --write` (issue 12): each case takes a fixture with fixes,
//! mutates it the way a careful user or a hostile repository would (comments, CRLF, BOM,
//! unrelated and ignored files, links named like temporary files, an existing ignored file where
//! a fix creates one), and checks the write oracle:
//!
//! * every file the plan does not list is byte-identical (links included), nothing outside the
//!   root changes, no temporary file or journal is left;
//! * the written tree is exactly the dry-run diff applied with `git apply`;
//! * every finding the plan fixed is gone, and a second `fix` has nothing to change.
//!
//! `FLUXMEND_ORACLE_CASES` runs more than the default 200 cases; `FLUXMEND_ORACLE_SEED` another
//! seed.

// One of the seeded mutations is a symbolic link out of the root.
#![cfg(unix)]

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{TempRepo, copy_tree, differing_paths, fixture, fluxmend, outside_dir, tree};
use serde_json::Value;

const CASES: [&str; 7] = [
    "fm001-dedicated",
    "fm001-healthchecks",
    "fm001-inline",
    "fm002-generated",
    "fm002-helm-runners",
    "flux-instance-oci-provider",
    "forgejo-runners-in-apps",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn fix_json(root: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["fix", "--verify", "builtin", "--format", "json"];
    args.extend_from_slice(extra);
    args.push(root.to_str().unwrap());
    let run = fluxmend(&args);
    assert!(run.code == 0 || run.code == 1, "{args:?}: {}", run.stderr);
    run.json()
}

/// `(rule, object)` of every finding that has a fix in a `fix --format json` report.
fn fixed(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| !f["fix"].is_null())
        .map(|f| format!("{} {}", f["rule"], f["object"]))
        .collect()
}

fn findings(report: &Value) -> BTreeSet<String> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} {}", f["rule"], f["object"]))
        .collect()
}

/// Mutate the repository; returns what was done, for messages.
fn mutate(repo: &TempRepo, rng: &mut Rng, outside: &Path, created: &[String]) -> Vec<String> {
    let files: Vec<String> = tree(repo.path())
        .into_keys()
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    if !repo.path().join(".gitignore").exists() {
        repo.write(".gitignore", "");
    }
    let mut done = Vec::new();
    for _ in 0..=rng.below(3) {
        let f = files[rng.below(files.len())].clone();
        let path = repo.path().join(&f);
        let dir = f.rfind('/').map_or("", |i| &f[..i]).to_string();
        let name = f.rsplit('/').next().unwrap().to_string();
        let join = |n: &str| {
            if dir.is_empty() {
                n.to_string()
            } else {
                format!("{dir}/{n}")
            }
        };
        match rng.below(7) {
            0 => {
                repo.append(&f, &format!("# fuzz {}\n", rng.next() % 1000));
                done.push(format!("comment {f}"));
            }
            1 => {
                let text = std::fs::read_to_string(&path).unwrap();
                if !text.contains('\r') {
                    std::fs::write(&path, text.replace('\n', "\r\n")).unwrap();
                    done.push(format!("crlf {f}"));
                }
            }
            2 => {
                let text = std::fs::read_to_string(&path).unwrap();
                if !text.starts_with('\u{feff}') {
                    std::fs::write(&path, format!("\u{feff}{text}")).unwrap();
                    done.push(format!("bom {f}"));
                }
            }
            3 => {
                repo.write(&join("notes.txt"), "unrelated\n");
                done.push(format!("unrelated {}", join("notes.txt")));
            }
            4 => {
                let link = join(&format!(".{name}.fluxmend-tmp"));
                if !repo.path().join(&link).exists() {
                    repo.symlink(outside.join("victim"), &link);
                    done.push(format!("temp-named link {link}"));
                }
            }
            5 => {
                repo.append(".gitignore", "ignored-local.yaml\n")
                    .write(&join("ignored-local.yaml"), "secret: mine\n");
                done.push(format!("ignored {}", join("ignored-local.yaml")));
            }
            _ => {
                if let Some(c) = created.get(rng.below(created.len().max(1))) {
                    let c = c.clone();
                    repo.append(".gitignore", &format!("/{c}\n"))
                        .write(&c, "local: file\n");
                    done.push(format!("ignored file at created path {c}"));
                }
            }
        }
    }
    done
}

fn git_apply(dir: &Path, diff: &str) -> Result<(), String> {
    let mut child = Command::new("git")
        .args(["apply", "--allow-empty", "--whitespace=nowarn", "-"])
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(diff.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn run_case(seed: u64, i: u64) {
    let mut rng = Rng(seed ^ (i.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1);
    let case = CASES[rng.below(CASES.len())];
    let outside = outside_dir();
    let before_outside = tree(outside.path());
    let created: Vec<String> = fix_json(&fixture(case, "before"), &[])["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["change"] == "create")
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    let repo = TempRepo::copy_of(&fixture(case, "before"));
    let what = mutate(&repo, &mut rng, outside.path(), &created);
    let label = format!("case {i} ({case}: {what:?})");
    // A move off a pruning layer takes two phases: each write is held to the oracle, and only
    // a first phase may leave a next one to do.
    for round in 1.. {
        let before = tree(repo.path());
        let plan = fix_json(repo.path(), &[]);
        let listed: BTreeSet<String> = plan["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["path"].as_str().unwrap().to_string())
            .collect();
        if listed.is_empty() {
            assert!(round > 1, "{label}: nothing to fix");
            break;
        }
        assert!(round <= 2, "{label}: still changing after two phases");
        let expected = TempRepo::empty();
        copy_tree(repo.path(), expected.path());
        if let Err(e) = git_apply(expected.path(), plan["diff"].as_str().unwrap()) {
            panic!("{label}: the dry-run diff does not apply: {e}");
        }

        let written = fix_json(repo.path(), &["--write"]);
        let now = tree(repo.path());
        let changed: BTreeSet<String> = differing_paths(&before, &now).into_iter().collect();
        assert!(
            changed.is_subset(&listed),
            "{label}: unlisted changes {changed:?} (plan {listed:?})"
        );
        assert_eq!(
            differing_paths(&tree(expected.path()), &now),
            Vec::<String>::new(),
            "{label}: the written tree is not the dry-run diff applied"
        );
        assert_eq!(
            tree(outside.path()),
            before_outside,
            "{label}: wrote outside"
        );
        assert!(
            !now.keys()
                .any(|p| p.contains(".fluxmend-") && !p.ends_with(".fluxmend-tmp")),
            "{label}: temporary or journal left"
        );
        let again = fix_json(repo.path(), &[]);
        let first_phase = written["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["fix"]["phase"] == 1);
        if !first_phase {
            assert_eq!(again["files"], serde_json::json!([]), "{label}: second fix");
            let gone = fixed(&written);
            let remaining = findings(&again);
            assert!(
                gone.is_disjoint(&remaining),
                "{label}: fixed findings remain: {:?}",
                gone.intersection(&remaining).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn seeded_mutations_keep_the_write_oracle() {
    let cases: u64 = std::env::var("FLUXMEND_ORACLE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let seed: u64 = std::env::var("FLUXMEND_ORACLE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x0012_f1a5);
    let workers = 2;
    std::thread::scope(|s| {
        for w in 0..workers {
            s.spawn(move || {
                for i in (w..cases).step_by(workers as usize) {
                    run_case(seed, i);
                }
            });
        }
    });
}
