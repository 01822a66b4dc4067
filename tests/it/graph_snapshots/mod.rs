//! Snapshots of what fluxmend understood of every fixture's `before/` tree: `graph` (text and
//! JSON) and `check --format json`, one snapshot per fixture and format (`snapshots/` beside
//! this file). Review a change against the fixture's `CASE.md` before accepting it.
//!
//! Every fixture is snapshotted even when an earlier one fails; the test then lists them all.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::common::{FixtureTree, command_args, fixture_trees, fluxmend, manifest_dir};

/// Run the binary on a fixture; paths in the output must be relative to the fixture root.
fn output(tree: &FixtureTree, args: &[&str]) -> String {
    let run = fluxmend(command_args(args[0], &tree.root, &args[1..]));
    run.assert_no_panic();
    assert!(
        run.stderr.is_empty(),
        "{} {args:?} wrote to stderr:\n{}",
        tree.label(),
        run.stderr
    );
    let root = manifest_dir();
    assert!(
        !run.stdout.contains(root.to_str().unwrap()),
        "{} {args:?}: output holds an absolute path:\n{}",
        tree.label(),
        run.stdout
    );
    run.stdout
}

#[test]
fn fixture_graphs_and_reports() {
    let trees = fixture_trees(false);
    let mut failed = Vec::new();
    for tree in &trees {
        let graph = output(tree, &["graph"]);
        let graph_json = output(tree, &["graph", "--format", "json"]);
        serde_json::from_str::<serde_json::Value>(&graph_json)
            .expect("graph --format json is JSON");
        let report = output(tree, &["check", "--format", "json"]);
        serde_json::from_str::<serde_json::Value>(&report).expect("check --format json is JSON");
        for (name, text) in [
            (format!("graph__{}", tree.case), graph),
            (format!("graph_json__{}", tree.case), graph_json),
            (format!("check_json__{}", tree.case), report),
        ] {
            let result = catch_unwind(AssertUnwindSafe(|| {
                insta::with_settings!({
                    description => format!("fixtures/{}/before (see fixtures/{}/CASE.md)", tree.case, tree.case),
                    omit_expression => true,
                }, {
                    insta::assert_snapshot!(name.as_str(), text);
                });
            }));
            if result.is_err() {
                failed.push(name);
            }
        }
    }
    assert!(
        failed.is_empty(),
        "snapshots differ (review the .snap.new files): {failed:?}"
    );
    assert!(trees.len() >= 9, "only {} fixtures", trees.len());
}
