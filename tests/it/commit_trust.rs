//! `fix --commit` in repositories whose git settings change what a commit holds (issue 24,
//! item 5): the commit holds what `git add` and `git commit` would make of the written files
//! (clean filters, line-ending conversion, signing), or fluxmend refuses before writing anything,
//! with the reason and exit 2 (a lock held, a touched path git hides, an operation in progress).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{self, TempRepo, fixture, fluxmend, git};

/// The file the fm001-dedicated fix edits.
const EDITED: &str = "clusters/production/flux-instance.yaml";

fn git_ok(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A repository of fixtures/fm001-dedicated/before, configured by `config` (`key value` pairs)
/// and with `attributes` as `.gitattributes`, all committed; the work tree checked out again
/// under that configuration (so filters and conversions have run).
fn repo_with(config: &[(&str, &str)], attributes: &str) -> TempRepo {
    let repo = TempRepo::copy_of(&fixture("fm001-dedicated", "before"));
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "t"]);
    git(dir, &["config", "user.email", "t@t"]);
    for (key, value) in config {
        git(dir, &["config", key, value]);
    }
    if !attributes.is_empty() {
        repo.write(".gitattributes", attributes);
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "init"]);
    // Check out again: the work tree as this configuration makes it.
    for entry in std::fs::read_dir(dir).unwrap() {
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
    git(dir, &["checkout", "-q", "--", "."]);
    assert_eq!(git(dir, &["status", "--porcelain"]), "", "clean checkout");
    repo
}

fn commit(dir: &Path) -> common::Run {
    fluxmend([
        "fix",
        "--commit",
        "--verify",
        "builtin",
        dir.to_str().unwrap(),
    ])
}

/// What `git add` would store for the work-tree file `rel`.
fn as_git_adds(dir: &Path, rel: &str) -> String {
    git(dir, &["hash-object", "--path", rel, rel])
        .trim()
        .to_string()
}

/// The committed blob of `rel` is what `git add` makes of the written file, and git sees
/// nothing to commit afterwards.
fn assert_committed_as_git_would(dir: &Path, what: &str) {
    let committed = git(dir, &["rev-parse", &format!("HEAD:{EDITED}")]);
    assert_eq!(
        committed.trim(),
        as_git_adds(dir, EDITED),
        "{what}: committed blob"
    );
    assert_eq!(
        git(dir, &["status", "--porcelain"]),
        "",
        "{what}: the index or work tree is left dirty"
    );
    assert_eq!(
        git(dir, &["diff", "HEAD", "--stat"]),
        "",
        "{what}: the work tree differs from the commit"
    );
}

#[test]
fn a_clean_filter_runs_on_committed_content() {
    // A stand-in for git-crypt: the blob holds the text with letters rotated, the work tree the
    // plain text.
    let rot = "tr A-Za-z N-ZA-Mn-za-m";
    for required in ["false", "true"] {
        let repo = repo_with(
            &[
                ("filter.rot.clean", rot),
                ("filter.rot.smudge", rot),
                ("filter.rot.required", required),
            ],
            "*.yaml filter=rot\n",
        );
        let dir = repo.path();
        let run = commit(dir);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_committed_as_git_would(dir, "clean filter");
        let blob = git(dir, &["cat-file", "-p", &format!("HEAD:{EDITED}")]);
        assert!(
            !blob.contains("kind: Kustomization"),
            "plain text committed:\n{blob}"
        );
    }
    // Without git to run the filter: refused, nothing written.
    let repo = repo_with(
        &[("filter.rot.clean", rot), ("filter.rot.smudge", rot)],
        "*.yaml filter=rot\n",
    );
    let dir = repo.path();
    let before = everything(dir);
    let run = common::fluxmend_with_path(
        [
            "fix",
            "--commit",
            "--verify",
            "builtin",
            dir.to_str().unwrap(),
        ],
        "/nonexistent",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("filter (rot)"), "{}", run.stderr);
    let changed: Vec<String> = common::differing_paths(&everything(dir), &before)
        .into_iter()
        .filter(|p| !p.starts_with(".git/objects/"))
        .collect();
    assert_eq!(changed, Vec::<String>::new());
}

#[test]
fn line_ending_conversion_applies_to_committed_content() {
    for (config, attributes) in [
        (&[("core.autocrlf", "true")][..], ""),
        (&[][..], "*.yaml text eol=crlf\n"),
    ] {
        let repo = repo_with(config, attributes);
        let dir = repo.path();
        assert!(repo.read(EDITED).contains("\r\n"), "a CRLF work tree");
        let run = commit(dir);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(repo.read(EDITED).contains("\r\n"), "the file keeps CRLF");
        assert_committed_as_git_would(dir, &format!("{config:?} {attributes:?}"));
        let blob = git(dir, &["cat-file", "-p", &format!("HEAD:{EDITED}")]);
        assert!(!blob.contains('\r'), "CRLF committed");
    }
}

/// Other attributes a repository may commit (`ident`; `-text` and `text=auto` under
/// `core.autocrlf`): the committed blob is what `git add` makes of the written file, and git
/// sees nothing left to commit.
#[test]
fn other_attributes_commit_what_git_adds() {
    for (config, attributes) in [
        (&[][..], "*.yaml ident\n"),
        (&[("core.autocrlf", "true")][..], "*.yaml -text\n"),
        (&[("core.autocrlf", "true")][..], "* text=auto\n"),
    ] {
        let repo = repo_with(config, attributes);
        let run = commit(repo.path());
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert_committed_as_git_would(repo.path(), &format!("{config:?} {attributes:?}"));
    }
}

/// Every file below `dir`, `.git` included.
fn everything(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    common::tree(dir)
}

/// `fix --commit` refuses with `reason` (exit 2) and changes nothing: no file, no ref, no
/// index (objects nothing refers to may be left in `.git/objects`, as git leaves them; `git gc`
/// removes them).
fn assert_refused(dir: &Path, reason: &str, what: &str) {
    let before = everything(dir);
    let run = commit(dir);
    assert_eq!(run.code, 2, "{what}: {}", run.stderr);
    assert!(
        run.stderr.contains(reason),
        "{what}: no {reason:?} in: {}",
        run.stderr
    );
    let changed: Vec<String> = common::differing_paths(&everything(dir), &before)
        .into_iter()
        .filter(|p| !p.starts_with(".git/objects/"))
        .collect();
    assert_eq!(
        changed,
        Vec::<String>::new(),
        "{what}: refused but changed files"
    );
}

#[test]
fn a_held_lock_refuses_before_writing() {
    for lock in ["index.lock", "HEAD.lock", "refs/heads/main.lock"] {
        let repo = repo_with(&[], "");
        let dir = repo.path();
        std::fs::write(dir.join(".git").join(lock), "").unwrap();
        assert_refused(dir, lock, lock);
    }
    // The lock of a branch to create.
    let repo = repo_with(&[], "");
    let dir = repo.path();
    std::fs::write(dir.join(".git/refs/heads/fix.lock"), "").unwrap();
    let before = everything(dir);
    let run = fluxmend([
        "fix",
        "--commit",
        "--branch",
        "fix",
        "--verify",
        "builtin",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("fix.lock"), "{}", run.stderr);
    assert_eq!(everything(dir), before);
}

#[test]
fn a_touched_path_git_hides_refuses() {
    for flag in ["--skip-worktree", "--assume-unchanged"] {
        let repo = repo_with(&[], "");
        let dir = repo.path();
        git(dir, &["update-index", flag, EDITED]);
        // A local change git does not show.
        repo.append(EDITED, "# local, hidden from git\n");
        assert_refused(dir, flag.trim_start_matches('-'), flag);
    }
}

#[test]
fn an_operation_in_progress_refuses() {
    // A merge, a cherry-pick and a rebase, each stopped on a conflict in an unrelated file.
    for (operation, reason) in [
        ("merge", "merge"),
        ("cherry-pick", "cherry-pick"),
        ("rebase", "rebase"),
    ] {
        let repo = repo_with(&[], "");
        let dir = repo.path();
        git(dir, &["checkout", "-qb", "other"]);
        repo.write("README.md", "theirs\n");
        git(dir, &["commit", "-qam", "theirs"]);
        git(dir, &["checkout", "-q", "main"]);
        repo.write("README.md", "ours\n");
        git(dir, &["commit", "-qam", "ours"]);
        let stopped = match operation {
            "merge" => git_ok(dir, &["merge", "-q", "other"]),
            "cherry-pick" => git_ok(dir, &["cherry-pick", "other"]),
            _ => git_ok(dir, &["rebase", "-q", "other"]),
        };
        assert!(stopped.is_err(), "{operation} should stop on the conflict");
        assert_refused(dir, reason, operation);
    }
}

#[test]
fn signing_configured_signs_or_refuses() {
    let keys = tempfile::tempdir().unwrap();
    let key = keys.path().join("key");
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "t@t", "-f"])
        .arg(&key)
        .status();
    if !made.is_ok_and(|s| s.success()) {
        eprintln!("ssh-keygen is not available: signing is not tested");
        return;
    }
    let public = std::fs::read_to_string(keys.path().join("key.pub")).unwrap();
    let allowed = keys.path().join("allowed");
    std::fs::write(&allowed, format!("t@t {public}")).unwrap();
    let key_path = key.to_str().unwrap().to_string();
    let allowed_path = allowed.to_str().unwrap().to_string();
    let repo = repo_with(
        &[
            ("gpg.format", "ssh"),
            ("user.signingkey", &key_path),
            ("gpg.ssh.allowedSignersFile", &allowed_path),
            ("commit.gpgsign", "true"),
        ],
        "",
    );
    let dir = repo.path();
    let run = commit(dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    git(dir, &["verify-commit", "HEAD"]);
    assert_committed_as_git_would(dir, "signed");
    // A key that cannot sign: refused before anything is written.
    let repo = repo_with(&[], "");
    for (key, value) in [
        ("gpg.format", "ssh"),
        ("user.signingkey", "/nonexistent/key"),
        ("commit.gpgsign", "true"),
    ] {
        git(repo.path(), &["config", key, value]);
    }
    assert_refused(repo.path(), "commit.gpgsign", "unusable key");
}
