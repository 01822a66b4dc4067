//! `.fluxmend.yaml`: `rules` (enabled, severity), `roots`, `source-root`, `exclude`; flags win
//! over the file; mistakes are error diagnostics at <file:line:column> listing the valid keys.

use crate::common::{self, TempRepo, find_diagnostic};

const CONFIG: &str = ".fluxmend.yaml";

/// The small Flux layout with a FluxInstance in the `wait: true` layer `apps`: one FM001 error.
fn repo_with(config: &str) -> TempRepo {
    let repo = TempRepo::with_flux_instance();
    repo.write(CONFIG, config);
    repo
}

fn rules(report: &serde_json::Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_string(),
                f["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_rule_disabled_in_the_file_runs_only_when_a_flag_names_it() {
    let repo = repo_with("rules:\n  flux-instance-in-gated-layer:\n    enabled: false\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(rules(&report), []);
    assert_eq!(run.code, 0);
    let (run, report) = repo.check_json(&["--rule", "FM001"]);
    assert_eq!(rules(&report), [("FM001".into(), "error".into())]);
    assert_eq!(run.code, 1);
    // Nothing left to run is a usage error, as with --ignore.
    let every_rule_off: String = fluxmend::rules::all()
        .iter()
        .map(|r| format!("  {}: {{enabled: false}}\n", r.meta().id))
        .collect();
    repo.write(CONFIG, format!("rules:\n{every_rule_off}"));
    let run = common::fluxmend(common::command_args("check", repo.path(), &[]));
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("leaves no rule to run"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_severity_set_in_the_file_changes_findings_and_the_exit_code() {
    let repo = repo_with("rules:\n  FM001: {severity: note}\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(rules(&report), [("FM001".into(), "note".into())]);
    assert_eq!(run.code, 0, "a note is below the default --fail-on warning");
    let (run, _) = repo.check_json(&["--fail-on", "note"]);
    assert_eq!(run.code, 1);
}

#[test]
fn roots_and_source_root_come_from_the_file_unless_flags_give_them() {
    // With `infra` as the only root, `apps` (and its FluxInstance) is not live.
    let repo = repo_with("roots: [flux-system/infra]\n");
    let (_, report) = repo.check_json(&[]);
    assert_eq!(rules(&report), []);
    let (_, report) = repo.check_json(&["--root", "flux-system"]);
    assert_eq!(rules(&report), [("FM001".into(), "error".into())]);
    // A root naming nothing is refused, saying where it may come from.
    repo.write(CONFIG, "roots: [nowhere]\n");
    let run = common::fluxmend(common::command_args("check", repo.path(), &[]));
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("`roots:` in .fluxmend.yaml"),
        "{}",
        run.stderr
    );
    // A source-root that is no directory is the file's error; the root is inferred instead.
    repo.write(CONFIG, "source-root: missing/dir\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1);
    let error = find_diagnostic(&report, CONFIG, "source-root missing/dir");
    assert_eq!(error["severity"], "error");
    assert_eq!(rules(&report), [("FM001".into(), "error".into())]);
    repo.write(CONFIG, "source-root: apps\n");
    let (_, report) = repo.check_json(&[]);
    assert!(common::diagnostics(&report).is_empty(), "{report:#}");
}

#[test]
fn excluded_files_are_not_loaded() {
    // `*.yaml` would exclude the configuration too: it is kept (its `disposable:` is read).
    let repo = repo_with(
        "exclude:\n  - scratch/\n  - /clusters/prod/apps.yaml\n  - /*.yaml\ndisposable:\n  images:\n    - match: x\n",
    );
    repo.write("scratch/broken.yaml", "a: [\n");
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1, "the configuration's error: {report:#}");
    // Neither the broken file nor the layer `apps` is seen; the configuration is still read.
    assert_eq!(common::diagnostics(&report).len(), 1, "{report:#}");
    find_diagnostic(&report, CONFIG, "every matcher needs a `reason`");
    assert_eq!(rules(&report), []);
    let graph = repo.graph_json();
    let layers = graph["layers"].as_array().unwrap();
    assert!(layers.iter().all(|l| l["name"] != "apps"), "{graph:#}");
    repo.write(CONFIG, "");
    let (_, report) = repo.check_json(&[]);
    assert_eq!(rules(&report), [("FM001".into(), "error".into())]);
    find_diagnostic(&report, "scratch/broken.yaml", "does not parse");
}

#[test]
fn mistakes_are_diagnostics_with_a_place_and_the_valid_keys() {
    let repo =
        repo_with("rules:\n  FM001:\n    enabled: false\n    level: high\nignore: [FM002]\n");
    let mut run = repo.run("check", &[]);
    assert_eq!(run.code, 1);
    run.stdout = common::unwrapped(&run.stdout);
    assert!(
        run.stdout.contains(".fluxmend.yaml:4:5: error: rules.FM001: unknown key `level` (valid keys: enabled, severity)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(".fluxmend.yaml:5:1: error: unknown key `ignore` (valid keys: rules, roots, source-root, exclude, disposable)"),
        "{}",
        run.stdout
    );
    // The valid part still applies: FM001 is disabled.
    assert!(!run.stdout.contains("[FM001]"), "{}", run.stdout);
    // `fix` shows them too and does not exit 0 while they stand.
    let fix = repo.run("fix", &[]);
    assert!(
        fix.stderr.contains("unknown key `ignore`"),
        "{}",
        fix.stderr
    );
    assert_eq!(fix.code, 1);
}

/// Text output writes paths relative to the current directory with line and column, so that
/// `path:line:col` opens in an editor from where fluxmend ran.
#[test]
fn text_paths_are_relative_to_the_current_directory_with_a_column() {
    let repo = TempRepo::with_flux_instance();
    let (_, report) = repo.check_json(&[]);
    let f = &report["findings"][0];
    let (file, line, column) = (
        f["file"].as_str().unwrap(),
        f["line"].as_u64().unwrap(),
        f["column"].as_u64().unwrap(),
    );
    assert_eq!(file, "apps/kustomization.yaml");
    let text = repo.read(file);
    let written = text.lines().nth(line as usize - 1).unwrap();
    assert_eq!(
        &written[column as usize - 1..],
        "- flux.yaml",
        "the column points at the entry"
    );
    let from_root = common::fluxmend_in(repo.path(), ["check", "."]);
    assert!(
        from_root
            .stdout
            .starts_with(&format!("{file}:{line}:{column}: FM001 error: ")),
        "{}",
        from_root.stdout
    );
    let from_apps = common::fluxmend_in(&repo.path().join("apps"), ["check", ".."]);
    assert!(
        from_apps
            .stdout
            .starts_with(&format!("../{file}:{line}:{column}: ")),
        "{}",
        from_apps.stdout
    );
    let from_above = common::fluxmend_in(
        repo.path().parent().unwrap(),
        ["check", repo.path().to_str().unwrap()],
    );
    let name = repo.path().file_name().unwrap().to_str().unwrap();
    assert!(
        from_above
            .stdout
            .starts_with(&format!("{name}/{file}:{line}:{column}: ")),
        "{}",
        from_above.stdout
    );
}

#[test]
fn the_file_is_found_upwards_to_the_git_top_level_or_given_with_config() {
    // The Flux tree in k8s/, the settings at the top of the work tree.
    let repo = TempRepo::empty();
    let tree = TempRepo::with_flux_instance();
    common::copy_tree(tree.path(), &repo.path().join("k8s"));
    common::git(repo.path(), &["init", "-q"]);
    repo.write(CONFIG, "rules:\n  FM001: {enabled: false}\n");
    let k8s = repo.path().join("k8s");
    let run = common::fluxmend(["check", k8s.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        rules(&run.json()),
        [],
        "the top level's file applies to k8s/"
    );
    // A mistake in it is reported where it is, as seen from PATH.
    repo.write(CONFIG, "rulez: {}\n");
    let run = common::fluxmend(["check", k8s.to_str().unwrap(), "--format", "json"]);
    find_diagnostic(&run.json(), "../.fluxmend.yaml", "rulez");
    // Not above the top level: a file outside the work tree never applies.
    let outer = TempRepo::empty();
    common::copy_tree(tree.path(), &outer.path().join("repo"));
    common::git(&outer.path().join("repo"), &["init", "-q"]);
    outer.write(CONFIG, "rules:\n  FM001: {enabled: false}\n");
    let run = common::fluxmend([
        "check",
        outer.path().join("repo").to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(rules(&run.json()), [("FM001".into(), "error".into())]);
    // --config names the file.
    let settings = outer.path().join("settings.yaml");
    std::fs::write(&settings, "rules:\n  FM001: {severity: warning}\n").unwrap();
    let run = common::fluxmend([
        "check",
        outer.path().join("repo").to_str().unwrap(),
        "--format",
        "json",
        "--config",
        settings.to_str().unwrap(),
    ]);
    assert_eq!(rules(&run.json()), [("FM001".into(), "warning".into())]);
    let run = common::fluxmend(["check", k8s.to_str().unwrap(), "--config", "no-such.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--config no-such.yaml: no such file"),
        "{}",
        run.stderr
    );
}
