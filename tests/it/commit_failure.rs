//! `fix --commit` that fails after it has started leaves the working tree and the index exactly
//! as they were.

use crate::common::{fluxmend, git, git_repo_with};

#[test]
fn a_failed_commit_restores_tree_and_index() {
    let repo = git_repo_with("fm001-dedicated");
    let dir = repo.path();
    // The branch exists already: refused before anything is written.
    git(dir, &["branch", "taken"]);
    let head = git(dir, &["rev-parse", "HEAD"]);
    let run = fluxmend([
        "fix",
        "--commit",
        "--branch",
        "taken",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    // A sentence with the next step, not libgit2's `class=Reference (4); code=Exists (-4)`.
    assert!(
        run.stderr.contains("choose another --branch name") && !run.stderr.contains("class="),
        "{}",
        run.stderr
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
