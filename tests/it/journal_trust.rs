//! A `.fluxmend-journal` that fluxmend did not write (issue 24, item 4). A journal can come with
//! the repository (committed, or placed beside it by whoever prepared the work tree); recovery
//! must then do nothing it cannot prove:
//!
//! * a dry run (`fix` without `--write`/`--commit`), `check` and `graph` never act on a journal;
//! * a journal tracked by git is not an interrupted write: ignored, and said so (a write refuses
//!   to start beside it);
//! * no path under `.git` is ever touched, whatever the journal names;
//! * recovery acts only on files whose content is what the journal recorded (SHA-256 of the
//!   content before and after), only on YAML targets, only on temporaries that git does not
//!   track and that the journal declared beside their target; anything else is left as it is.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{TempRepo, commit_all, fixture, fluxmend, git_repo_with, tree};
use sha2::Digest as _;

const JOURNAL: &str = ".fluxmend-journal";
const LAYER: &str = "clusters/production/apps.yaml";
const ATTACKER: &str = "attacker: content\n";

fn sha(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file below `dir`, `.git` included.
fn everything(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    tree(dir)
}

fn temp(name: &str, tag: &str) -> String {
    let (dir, base) = name.rsplit_once('/').unwrap_or(("", name));
    let t = format!(".{base}.fluxmend-{tag}.tmp");
    if dir.is_empty() {
        t
    } else {
        format!("{dir}/{t}")
    }
}

/// A well-formed version-2 journal that, if recovery trusted it, would replace the tracked
/// `LAYER` with attacker content (a temporary beside it, hashes matching).
fn provable_edit(repo: &TempRepo) -> String {
    let before = std::fs::read(repo.path().join(LAYER)).unwrap();
    let (new, old) = (
        temp(LAYER, "aaaaaaaaaaaaaaaa"),
        temp(LAYER, "bbbbbbbbbbbbbbbb"),
    );
    repo.write(&new, ATTACKER);
    repo.write(&old, &before);
    format!(
        "fluxmend-journal 2\ntemp \"{new}\" \"{a}\"\ntemp \"{old}\" \"{b}\"\nedit \"{LAYER}\" \"{new}\" \"{old}\" \"{b}\" \"{a}\"\ncommit\n",
        a = sha(ATTACKER.as_bytes()),
        b = sha(&before)
    )
}

/// The reported exploit: a version-1 journal deleting `.git/HEAD` and `.git/index` and
/// replacing a tracked file.
fn exploit_v1(repo: &TempRepo) -> String {
    let new = temp(LAYER, "cccccccccc");
    repo.write(&new, ATTACKER);
    format!(
        "fluxmend-journal 1\ncommit\ndelete \".git/HEAD\"\ndelete \".git/index\"\nedit \"{LAYER}\" \"{new}\"\n"
    )
}

#[test]
fn a_dry_run_never_acts_on_a_journal() {
    for (label, make) in [
        ("v2", provable_edit as fn(&TempRepo) -> String),
        ("v1 exploit", exploit_v1),
    ] {
        for tracked in [true, false] {
            let repo = git_repo_with("fm001-dedicated");
            let text = make(&repo);
            repo.write(JOURNAL, &text);
            if tracked {
                commit_all(repo.path(), "journal");
            }
            let before = everything(repo.path());
            let run = fluxmend(["fix", "--verify", "builtin", repo.path().to_str().unwrap()]);
            let case = format!("{label}, tracked: {tracked}");
            assert_eq!(run.code, 1, "{case}: {}", run.stderr);
            assert_eq!(
                everything(repo.path()),
                before,
                "{case}: a dry run changed files"
            );
            let said = if tracked {
                "tracked by git"
            } else {
                "fix --write"
            };
            assert!(run.stderr.contains(said), "{case}: {}", run.stderr);
        }
    }
}

#[test]
fn a_journal_tracked_by_git_is_ignored_and_said_so() {
    for make in [provable_edit as fn(&TempRepo) -> String, exploit_v1] {
        let repo = git_repo_with("fm001-dedicated");
        let text = make(&repo);
        repo.write(JOURNAL, &text);
        commit_all(repo.path(), "journal");
        let before = everything(repo.path());
        let root = repo.path().to_str().unwrap();
        for command in ["check", "graph"] {
            let run = fluxmend([command, root]);
            assert!(
                run.stderr.contains("tracked by git") && run.stderr.contains("ignore"),
                "{command}: {}",
                run.stderr
            );
        }
        for flag in ["--write", "--commit"] {
            let run = fluxmend(["fix", flag, "--verify", "builtin", root]);
            assert_eq!(run.code, 2, "{flag}: {}", run.stderr);
            assert!(
                run.stderr.contains("tracked by git"),
                "{flag}: {}",
                run.stderr
            );
            assert_eq!(everything(repo.path()), before, "{flag}");
        }
    }
}

/// Journals placed beside the repository (not tracked by git) that name paths in `.git`.
#[test]
fn recovery_never_touches_dot_git() {
    let head = sha(b"ref: refs/heads/main\n");
    let cases = [
        format!(
            "delete \".git/HEAD\" \"{}\" \"{head}\"",
            temp(".git/HEAD", "dddddddddd")
        ),
        format!(
            "delete \".git/x.yaml\" \"{}\" \"{head}\"",
            temp(".git/x.yaml", "dddddddddd")
        ),
        format!(
            "delete \".GIT/x.yaml\" \"{}\" \"{head}\"",
            temp(".GIT/x.yaml", "dddddddddd")
        ),
        format!(
            "delete \"sub/.git/x.yaml\" \"{}\" \"{head}\"",
            temp("sub/.git/x.yaml", "dddddddddd")
        ),
        "dir \".git/refs\"".to_string(),
        format!("temp \"{}\" \"{head}\"", temp(".git/HEAD", "eeeeeeeeee")),
        format!(
            "temp \"{}\" \"{head}\"",
            temp(".git/refs/heads/main", "eeeeeeeeee")
        ),
    ];
    for line in cases {
        for committed in ["commit\n", ""] {
            let repo = git_repo_with("fm001-dedicated");
            std::fs::write(repo.path().join(".git/x.yaml"), "ref: refs/heads/main\n").unwrap();
            repo.write(JOURNAL, format!("fluxmend-journal 2\n{line}\n{committed}"));
            let git_before = everything(&repo.path().join(".git"));
            let run = fluxmend([
                "fix",
                "--write",
                "--verify",
                "builtin",
                repo.path().to_str().unwrap(),
            ]);
            assert_eq!(run.code, 2, "{line}: {}", run.stderr);
            assert!(run.stderr.contains(".git"), "{line}: {}", run.stderr);
            assert_eq!(
                everything(&repo.path().join(".git")),
                git_before,
                "{line}: .git changed"
            );
            assert!(
                repo.path().join(JOURNAL).exists(),
                "{line}: journal removed"
            );
        }
    }
}

/// What a journal cannot prove is left alone; a structurally foreign journal is refused whole.
#[allow(
    clippy::too_many_lines,
    reason = "a table of forged journals reads best as one list"
)]
#[test]
fn recovery_acts_only_on_what_the_journal_proves() {
    struct Case {
        name: &'static str,
        /// Builds the journal (and plants its files); returns it.
        journal: fn(&TempRepo) -> String,
        /// Refused whole (exit 2, nothing touched, journal kept) rather than recovered.
        refused: bool,
        /// Paths that must keep their content.
        kept: &'static [&'static str],
    }
    let cases = [
        Case {
            name: "version 1 (no hashes to prove anything)",
            journal: exploit_v1,
            refused: true,
            kept: &[LAYER],
        },
        Case {
            name: "edit whose before-hash is not the file's content",
            journal: |repo| {
                let new = temp(LAYER, "ffffffffff");
                repo.write(&new, ATTACKER);
                let old = temp(LAYER, "gggggggggg");
                repo.write(&old, "guess\n");
                format!(
                    "fluxmend-journal 2\ntemp \"{new}\" \"{a}\"\ntemp \"{old}\" \"{g}\"\nedit \"{LAYER}\" \"{new}\" \"{old}\" \"{g}\" \"{a}\"\ncommit\n",
                    a = sha(ATTACKER.as_bytes()),
                    g = sha(b"guess\n")
                )
            },
            refused: false,
            kept: &[LAYER],
        },
        Case {
            name: "delete of a file that is not YAML",
            journal: |repo| {
                let readme = std::fs::read(repo.path().join("README.md")).unwrap();
                let old = temp("README.md", "hhhhhhhhhh");
                repo.write(&old, &readme);
                format!(
                    "fluxmend-journal 2\ntemp \"{old}\" \"{h}\"\ndelete \"README.md\" \"{old}\" \"{h}\"\ncommit\n",
                    h = sha(&readme)
                )
            },
            refused: true,
            kept: &["README.md"],
        },
        Case {
            name: "a temporary that git tracks",
            journal: |repo| {
                let planted = temp(LAYER, "iiiiiiiiii");
                repo.write(&planted, ATTACKER);
                commit_all(repo.path(), "journal");
                format!(
                    "fluxmend-journal 2\ntemp \"{planted}\" \"{}\"\n",
                    sha(ATTACKER.as_bytes())
                )
            },
            refused: true,
            kept: &["clusters/production/.apps.yaml.fluxmend-iiiiiiiiii.tmp"],
        },
        Case {
            name: "an uncommitted temporary whose content is not the recorded one",
            journal: |repo| {
                let planted = temp(LAYER, "jjjjjjjjjj");
                repo.write(&planted, ATTACKER);
                format!(
                    "fluxmend-journal 2\ntemp \"{planted}\" \"{}\"\n",
                    sha(b"other")
                )
            },
            refused: false,
            kept: &["clusters/production/.apps.yaml.fluxmend-jjjjjjjjjj.tmp"],
        },
        Case {
            name: "a create over an existing file",
            journal: |repo| {
                let new = temp(LAYER, "kkkkkkkkkk");
                repo.write(&new, ATTACKER);
                format!(
                    "fluxmend-journal 2\ntemp \"{new}\" \"{a}\"\ncreate \"{LAYER}\" \"{new}\" \"{a}\"\ncommit\n",
                    a = sha(ATTACKER.as_bytes())
                )
            },
            refused: false,
            kept: &[LAYER],
        },
        Case {
            name: "a temporary the journal did not declare",
            journal: |repo| {
                let before = std::fs::read(repo.path().join(LAYER)).unwrap();
                let new = temp(LAYER, "llllllllll");
                repo.write(&new, ATTACKER);
                format!(
                    "fluxmend-journal 2\nedit \"{LAYER}\" \"{new}\" \"{new}\" \"{b}\" \"{a}\"\ncommit\n",
                    a = sha(ATTACKER.as_bytes()),
                    b = sha(&before)
                )
            },
            refused: true,
            kept: &[LAYER],
        },
        Case {
            name: "a temporary that is not beside its target",
            journal: |repo| {
                let before = std::fs::read(repo.path().join(LAYER)).unwrap();
                let (new, old) = (".x.fluxmend-m.tmp", ".y.fluxmend-m.tmp");
                repo.write(new, ATTACKER).write(old, &before);
                format!(
                    "fluxmend-journal 2\ntemp \"{new}\" \"{a}\"\ntemp \"{old}\" \"{b}\"\nedit \"{LAYER}\" \"{new}\" \"{old}\" \"{b}\" \"{a}\"\ncommit\n",
                    a = sha(ATTACKER.as_bytes()),
                    b = sha(&before)
                )
            },
            refused: true,
            kept: &[LAYER],
        },
        Case {
            name: "a path out of the root",
            journal: |_| {
                "fluxmend-journal 2\ncommit\ndelete \"../cm.yaml\" \".cm.yaml.fluxmend-n.tmp\" \"00\"\n"
                    .to_string()
            },
            refused: true,
            kept: &[],
        },
    ];
    for case in cases {
        let repo = git_repo_with("fm001-dedicated");
        let text = (case.journal)(&repo);
        repo.write(JOURNAL, &text);
        let before = everything(repo.path());
        // `--rule FM007` finds nothing here: the run only recovers.
        let run = fluxmend([
            "fix",
            "--write",
            "--verify",
            "builtin",
            "--rule",
            "FM007",
            repo.path().to_str().unwrap(),
        ]);
        let now = everything(repo.path());
        for kept in case.kept {
            assert_eq!(
                now.get(*kept),
                before.get(*kept),
                "{}: {kept} changed\n{}",
                case.name,
                run.stderr
            );
        }
        assert!(
            now.iter()
                .filter(|(k, _)| k.starts_with(".git/"))
                .eq(before.iter().filter(|(k, _)| k.starts_with(".git/"))),
            "{}: .git changed",
            case.name
        );
        if case.refused {
            assert_eq!(run.code, 2, "{}: {}", case.name, run.stderr);
            assert_eq!(
                now, before,
                "{}: a refused journal changed files",
                case.name
            );
            assert!(
                run.stderr.contains("not a journal fluxmend can use"),
                "{}: {}",
                case.name,
                run.stderr
            );
        } else {
            assert!(
                run.code == 0 || run.code == 1,
                "{}: {}",
                case.name,
                run.stderr
            );
            assert!(!now.contains_key(JOURNAL), "{}: journal left", case.name);
            assert!(
                run.stderr.contains("left as it is"),
                "{}: {}",
                case.name,
                run.stderr
            );
        }
    }
}

/// fluxmend's own interrupted write is still completed: a journal it wrote proves itself.
#[test]
fn an_own_interrupted_write_is_still_recovered_by_write_only() {
    if !cfg!(debug_assertions) {
        return; // the test hook exists in debug builds only
    }
    let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
    let root = repo.path().to_str().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--write", "--verify", "builtin", root])
        .env("FLUXMEND_TEST_ABORT_AFTER", "1000")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // Stopped right after `commit`: steps = journal lines before it.
    let mut stopped = None;
    for n in 1..40 {
        let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
        let root = repo.path().to_str().unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_fluxmend"))
            .args(["fix", "--write", "--verify", "builtin", root])
            .env("FLUXMEND_TEST_ABORT_AFTER", n.to_string())
            .output()
            .unwrap();
        if out.status.code() != Some(86) {
            break;
        }
        let journal = std::fs::read_to_string(repo.path().join(JOURNAL)).unwrap();
        if journal.contains("\ncommit\n") {
            stopped = Some(repo);
            break;
        }
    }
    let repo = stopped.expect("a run stopped after commit");
    let root = repo.path().to_str().unwrap();
    let before = tree(repo.path());
    let dry = fluxmend(["fix", "--verify", "builtin", root]);
    assert_eq!(tree(repo.path()), before, "a dry run recovered");
    assert!(dry.stderr.contains("fix --write"), "{}", dry.stderr);
    let write = fluxmend([
        "fix", "--write", "--verify", "builtin", "--rule", "FM007", root,
    ]);
    assert!(write.stderr.contains("was completed"), "{}", write.stderr);
    assert_eq!(
        tree(repo.path()),
        tree(&fixture("fm001-dedicated", "after"))
    );
}
