//! The exit-code contract of the CLI (src/main.rs): 0 nothing at or above `--fail-on`, 1 a
//! finding or diagnostic at or above it, 2 a usage or I/O error. Also the shape of `check
//! --format json` and that every `graph` format runs.

use crate::common::{self, TempRepo, command_args, fluxmend, summary};

/// `check` (plus `extra` args); asserts the process did not panic.
fn check(repo: &TempRepo, extra: &[&str]) -> common::Run {
    repo.run("check", extra)
}

/// `check` exits with each code at each `--fail-on` threshold.
fn assert_fail_on(repo: &TempRepo, thresholds: &[(&str, i32)]) {
    for &(fail_on, code) in thresholds {
        assert_eq!(
            check(repo, &["--fail-on", fail_on]).code,
            code,
            "--fail-on {fail_on}"
        );
    }
}

/// The summary of `check --format json` counts exactly these diagnostics.
fn assert_diagnostic_counts(repo: &TempRepo, expected: &serde_json::Value) {
    let (_, report) = repo.check_json(&[]);
    assert_eq!(&report["summary"]["diagnostics"], expected, "{report:#}");
}

/// A layout with one warning and nothing worse: a HelmRelease without `spec` in a live layer.
fn repo_with_warning_only() -> TempRepo {
    let repo = TempRepo::flux_layout();
    repo.write(
        "infra/release.yaml",
        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: x\n  namespace: infra\n",
    );
    repo
}

/// A layout with one note and nothing worse: a remote kustomize resource (never fetched).
fn repo_with_note_only() -> TempRepo {
    let repo = TempRepo::flux_layout();
    repo.append(
        "apps/kustomization.yaml",
        "  - https://github.com/x/y//deploy?ref=v1\n",
    );
    repo
}

#[test]
fn clean_repository_exits_0() {
    let repo = TempRepo::flux_layout();
    let run = check(&repo, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(
        run.stdout.contains("findings: none; diagnostics: none"),
        "{}",
        run.stdout
    );
    assert_fail_on(&repo, &[("note", 0), ("warning", 0), ("error", 0)]);
}

#[test]
fn error_diagnostic_exits_1_at_every_threshold() {
    let repo = TempRepo::flux_layout();
    repo.append(
        "clusters/prod/infra.yaml",
        "  dependsOn:\n    - name: does-not-exist\n",
    );
    for extra in [
        &[][..],
        &["--fail-on", "note"],
        &["--fail-on", "warning"],
        &["--fail-on", "error"],
    ] {
        let run = check(&repo, extra);
        assert_eq!(run.code, 1, "check {extra:?}:\n{}", run.stdout);
        assert!(run.stdout.contains("does-not-exist"), "{}", run.stdout);
    }
}

#[test]
fn malformed_yaml_exits_1() {
    let repo = TempRepo::flux_layout();
    repo.write(
        "infra/broken.yaml",
        "kind: ConfigMap\nmetadata:\n  name: a: b\n",
    );
    let run = check(&repo, &[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("infra/broken.yaml:3:"),
        "{}",
        run.stdout
    );
}

#[test]
fn warning_fails_by_default_but_not_with_fail_on_error() {
    let repo = repo_with_warning_only();
    assert_diagnostic_counts(&repo, &serde_json::json!({"warning": 1}));
    assert_eq!(check(&repo, &[]).code, 1, "default --fail-on is warning");
    assert_fail_on(&repo, &[("warning", 1), ("note", 1), ("error", 0)]);
}

#[test]
fn note_passes_by_default_but_fails_with_fail_on_note() {
    let repo = repo_with_note_only();
    assert_diagnostic_counts(&repo, &serde_json::json!({"note": 1}));
    assert_eq!(check(&repo, &[]).code, 0);
    assert_fail_on(&repo, &[("error", 0), ("note", 1)]);
}

#[test]
fn missing_path_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("does/not/exist");
    for cmd in ["check", "graph"] {
        let run = fluxmend(command_args(cmd, &missing, &[]));
        assert_eq!(run.code, 2, "{cmd}: {run:?}");
        assert!(
            run.stdout.is_empty(),
            "{cmd} printed a report: {}",
            run.stdout
        );
        assert!(
            run.stderr.contains("does/not/exist"),
            "{cmd} stderr: {}",
            run.stderr
        );
    }
}

#[test]
fn path_that_is_a_file_exits_2() {
    let repo = TempRepo::flux_layout();
    let file = repo.path().join("apps/app.yaml");
    let run = fluxmend(command_args("check", &file, &[]));
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("not a directory"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2() {
    let repo = TempRepo::flux_layout();
    let path = repo.path().to_str().unwrap();
    for args in [
        vec!["check", path, "--no-such-flag"],
        vec!["graph", path, "--no-such-flag"],
        vec!["check", path, "--format", "yaml"],
        vec!["check", path, "--fail-on", "fatal"],
        vec!["graph", path, "--format", "svg"],
        vec!["frobnicate"],
        vec![],
    ] {
        let run = fluxmend(&args);
        assert_eq!(run.code, 2, "fluxmend {args:?}: {run:?}");
        assert!(
            !run.stderr.is_empty(),
            "fluxmend {args:?} said nothing on stderr"
        );
    }
}

#[test]
fn help_and_version_exit_0() {
    for args in [["--help"], ["--version"]] {
        let run = fluxmend(args);
        assert_eq!(run.code, 0, "fluxmend {args:?}: {run:?}");
        assert!(!run.stdout.is_empty());
    }
}

#[test]
fn check_json_has_findings_diagnostics_and_summary() {
    let repo = repo_with_warning_only();
    let (run, report) = repo.check_json(&[]);
    assert_eq!(run.code, 1);
    let mut keys: Vec<&String> = report
        .as_object()
        .expect("top level is an object")
        .keys()
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "diagnostics",
            "findings",
            "summary",
            "suppressed",
            "version"
        ],
        "{report:#}"
    );
    assert_eq!(report["version"], 1);
    assert!(report["findings"].is_array());
    let diagnostic = &report["diagnostics"][0];
    for key in ["severity", "file", "line", "column", "message"] {
        assert!(
            diagnostic.get(key).is_some(),
            "diagnostic has no {key}: {diagnostic}"
        );
    }
    assert_eq!(diagnostic["severity"], "warning");
    assert_eq!(diagnostic["file"], "infra/release.yaml");
    assert_eq!(summary(&report, "files"), common::LAYOUT_FILES + 1);
    assert_eq!(summary(&report, "objects"), common::LAYOUT_OBJECTS + 1);
    assert_eq!(summary(&report, "layers"), common::LAYOUT_LAYERS);
    assert_eq!(summary(&report, "live_layers"), common::LAYOUT_LAYERS);
    assert!(report["summary"]["findings"].is_object());
}

#[test]
fn graph_formats_succeed() {
    let repo = TempRepo::flux_layout();
    let graph = |format: &str| {
        let run = fluxmend(command_args("graph", repo.path(), &["--format", format]));
        assert_eq!(run.code, 0, "graph --format {format}: {run:?}");
        run.stdout
    };
    let text = graph("text");
    assert!(text.contains("flux-system/apps"), "{text}");
    assert_eq!(
        text,
        fluxmend(command_args("graph", repo.path(), &[])).stdout,
        "text is the default"
    );

    let json: serde_json::Value = serde_json::from_str(&graph("json")).expect("graph json parses");
    assert_eq!(
        json["layers"].as_array().map(Vec::len),
        Some(common::LAYOUT_LAYERS as usize)
    );
    assert!(json["diagnostics"].is_array());

    let dot = graph("dot");
    assert!(dot.starts_with("digraph fluxmend {"), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    assert!(dot.contains("waits for"), "dependsOn edge missing: {dot}");

    let mermaid = graph("mermaid");
    assert!(mermaid.starts_with("flowchart LR"), "{mermaid}");
    assert!(
        mermaid.contains("-.->|waits for|"),
        "dependsOn edge missing: {mermaid}"
    );
}

/// `apps` with a FluxInstance in the `wait: true` layer `infra` that `apps` depends on: an FM001
/// error finding that has no fix (the layer has `spec.components`, which a move does not carry),
/// and no diagnostic.
fn repo_with_unfixable_error_finding() -> TempRepo {
    let repo = TempRepo::flux_layout();
    // A workload beside the instance (the layer is not the instance's own).
    repo.append(
        "clusters/prod/infra.yaml",
        "  wait: true\n  components:\n    - ../components/tls\n",
    )
    .write(
        "components/tls/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations:\n  example.net/tls: strict\n",
    )
    .write("infra/flux.yaml", common::FLUX_INSTANCE)
        .write(
            "infra/proxy.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: proxy\n  namespace: infra\nspec:\n  selector:\n    matchLabels:\n      app: proxy\n  template:\n    metadata:\n      labels:\n        app: proxy\n    spec:\n      containers:\n        - name: proxy\n          image: ghcr.io/example/proxy:1.0.0\n",
        );
    repo
}

/// A layout with an error diagnostic and nothing to fix: a `dependsOn` naming no layer.
fn repo_with_error_diagnostic() -> TempRepo {
    let repo = TempRepo::flux_layout();
    repo.append(
        "clusters/prod/infra.yaml",
        "  dependsOn:\n    - name: does-not-exist\n",
    );
    repo
}

/// `fix` exits 0 only when there is nothing to change *and* nothing stands at its `--fail-on`
/// (default `error`): 1 with a change, 1 with an error finding that has no fix, 1 with an error
/// diagnostic; `--fail-on never` accepts what stands, `--fail-on warning` fails on warnings.
#[test]
fn fix_exit_codes() {
    let clean = TempRepo::flux_layout().run("fix", &[]);
    assert_eq!(
        (clean.code, clean.stdout.as_str()),
        (0, ""),
        "{}",
        clean.stderr
    );
    assert!(
        clean.stderr.contains("nothing to change"),
        "{}",
        clean.stderr
    );
    assert!(!clean.stderr.contains("still standing"), "{}", clean.stderr);

    let change = TempRepo::with_flux_instance().run("fix", &[]);
    assert_eq!(change.code, 1, "{}", change.stderr);
    assert!(
        change.stdout.starts_with("diff --git "),
        "{}",
        change.stdout
    );

    let unfixable = repo_with_unfixable_error_finding();
    let run = unfixable.run("fix", &[]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{}", run.stderr);
    assert!(
        run.stderr.contains("FM001 error: ") && run.stderr.contains("    no fix: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "nothing to change\nstill standing at --fail-on error: 1 finding without a fix \
             (exit 1; `--fail-on never` accepts them)\n"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(unfixable.run("fix", &["--fail-on", "never"]).code, 0);

    let broken = repo_with_error_diagnostic();
    let run = broken.run("fix", &[]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""), "{}", run.stderr);
    assert!(
        run.stderr.contains("clusters/prod/infra.yaml:")
            && run.stderr.contains(": error: ")
            && run.stderr.contains("does-not-exist"),
        "the error diagnostic is shown: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("diagnostics: 1 error (`fluxmend check` lists them all)\n")
            && run
                .stderr
                .contains("still standing at --fail-on error: 1 diagnostic"),
        "{}",
        run.stderr
    );
    assert_eq!(broken.run("fix", &["--fail-on", "never"]).code, 0);

    let warning = repo_with_warning_only();
    let run = warning.run("fix", &[]);
    assert_eq!(
        run.code, 0,
        "a warning does not fail fix by default: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("diagnostics: 1 warning"),
        "{}",
        run.stderr
    );
    assert_eq!(warning.run("fix", &["--fail-on", "warning"]).code, 1);
}

/// `fix --format json` carries the diagnostics beside the findings, in the shape `check` uses.
#[test]
fn fix_json_has_diagnostics() {
    let repo = repo_with_error_diagnostic();
    let run = repo.run("fix", &["--format", "json"]);
    assert_eq!(run.code, 1);
    let report = run.json();
    let mut keys: Vec<&String> = report.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "applied",
            "branch",
            "commit",
            "diagnostics",
            "diff",
            "files",
            "findings",
            "kustomize_layers",
            "not_verified",
            "rollout_notes",
            "suppressed",
            "verified_by",
            "version"
        ],
        "{report:#}"
    );
    common::assert_diagnostic(
        &report,
        "clusters/prod/infra.yaml",
        "does-not-exist",
        "error",
    );
    let (_, check) = repo.check_json(&[]);
    assert_eq!(report["diagnostics"], check["diagnostics"]);
}

/// `--rule` takes ids and names, in any case, repeated or as a comma list.
#[test]
fn rule_accepts_ids_names_and_lists() {
    let repo = TempRepo::with_flux_instance();
    for rules in [
        &["--rule", "FM001"][..],
        &["--rule", "fm001"],
        &["--rule", "flux-instance-in-gated-layer"],
        &["--rule", "FM002,flux-instance-in-gated-layer"],
        &["--rule", "FM002", "--rule", "FM001"],
    ] {
        let run = check(&repo, rules);
        assert_eq!(run.code, 1, "{rules:?}: {}", run.stdout);
        assert!(
            run.stdout.contains("FM001 error: "),
            "{rules:?}: {}",
            run.stdout
        );
    }
    let only_fm002 = check(&repo, &["--rule", "disposable-workload-in-gated-layer"]);
    assert_eq!(only_fm002.code, 0, "{}", only_fm002.stdout);
    let fix = repo.run("fix", &["--rule", "flux-instance-in-gated-layer"]);
    assert_eq!(fix.code, 1, "{}", fix.stderr);
    assert!(!fix.stdout.is_empty());
}

/// A `--rule`, `--root` or `--source-root` that names nothing is a usage error (2), said on
/// stderr with what to do, not a run that checks nothing and passes.
#[test]
fn options_naming_nothing_exit_2() {
    let repo = TempRepo::with_flux_instance();
    let outside = tempfile::tempdir().unwrap();
    let outside = outside.path().to_str().unwrap();
    for (args, needle) in [
        (vec!["--rule", "FM999"], "no rule \"FM999\""),
        (vec!["--rule", "FM001,FM999"], "no rule \"FM999\""),
        (
            vec!["--rule", "flux-instance"],
            "`fluxmend rules` lists them",
        ),
        (
            vec!["--root", "no-such-layer"],
            "--root no-such-layer names no Flux Kustomization",
        ),
        (
            vec!["--root", "flux-system", "--root", "other/apps"],
            "--root other/apps",
        ),
        (
            vec!["--source-root", "no/such/dir"],
            "no such directory below PATH",
        ),
        (vec!["--source-root", "../.."], "lies outside PATH"),
        (vec!["--source-root", outside], "lies outside PATH"),
    ] {
        for cmd in ["check", "fix", "graph"] {
            if cmd == "graph" && args[0] == "--rule" {
                continue;
            }
            let run = fluxmend(command_args(cmd, repo.path(), &args));
            assert_eq!(run.code, 2, "{cmd} {args:?}: {run:?}");
            assert!(run.stdout.is_empty(), "{cmd} {args:?}: {}", run.stdout);
            assert!(
                run.stderr.contains(needle),
                "{cmd} {args:?}: {}",
                run.stderr
            );
        }
    }
    // What names something is accepted: a root by namespace/name, the root as source root.
    for args in [
        &["--root", "flux-system/flux-system"][..],
        &["--source-root", "."],
        &["--source-root", "./apps/"],
    ] {
        let run = check(&repo, args);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stdout);
        assert!(
            run.stdout.contains("FM001 error: "),
            "{args:?}: {}",
            run.stdout
        );
    }
}

/// A tree with no Flux object (empty, plain manifests, a tenant repository another one's Flux
/// applies, or PATH one level too deep) is not a silent pass, but the repository need not change:
/// a note says nothing was analysed, the text summary always shows it as a hint, and `check`
/// exits 0; `fix` has nothing to change.
#[test]
fn no_flux_object_is_said_but_passes() {
    let plain = TempRepo::empty();
    plain.write(
        "deploy.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    );
    let layout = TempRepo::flux_layout();
    for root in [
        TempRepo::empty().path().to_path_buf(),
        plain.path().to_path_buf(),
        layout.path().join("apps"),
    ] {
        let run = fluxmend(command_args("check", &root, &["--format", "json"]));
        assert_eq!(run.code, 0, "{}: {}", root.display(), run.stdout);
        let report = run.json();
        let d = common::assert_diagnostic(&report, "", "no Flux Kustomization", "note");
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .contains("Point PATH at the root")
        );
        // Shown without --show-notes: the summary's hint says it.
        let text = common::fluxmend_in(&root, ["check", "."]);
        assert_eq!(text.code, 0, "{}", text.stdout);
        assert!(
            common::unwrapped(&text.stdout).contains("hint: no Flux Kustomization"),
            "{}",
            text.stdout
        );
        let fix = fluxmend(command_args("fix", &root, &[]));
        assert_eq!(fix.code, 0, "{}", fix.stderr);
        assert!(fix.stderr.contains("nothing to change"), "{}", fix.stderr);
    }
    // Negative control: a tree with a layer has no such hint.
    let text = common::fluxmend_in(layout.path(), ["check", "."]);
    assert!(
        !text.stdout.contains("nothing was analysed"),
        "{}",
        text.stdout
    );
}
