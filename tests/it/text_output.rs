//! The text report for people: a headline per finding (`path:line:col: FM001 error: summary`)
//! with indented, wrapped detail, correct plurals, colour honouring `--color`, `NO_COLOR` and
//! `CLICOLOR_FORCE`, and a diff that is never coloured when piped.

use std::process::Command;

use crate::common::{self, TempRepo, fixture};

const ESC: char = '\u{1b}';

/// Run the binary in `dir` with `env` set and the colour variables otherwise unset; (stdout,
/// stderr).
fn run(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fluxmend"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR");
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("run fluxmend");
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_finding_is_a_headline_with_indented_wrapped_detail() {
    let dir = fixture("forgejo-runners-in-apps", "before");
    let (stdout, _) = run(&dir, &["check", "."], &[]);
    let headline = regex::Regex::new(r"^[^ :]+:\d+:\d+: FM\d{3} (error|warning|note): \S").unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(headline.is_match(lines[0]), "{stdout}");
    assert!(
        lines[0].starts_with("apps/base/forgejo/runner-bridge.yaml:27:1: FM002 warning: "),
        "{stdout}"
    );
    // Everything above the closing summary is a headline or its detail.
    let summary = lines
        .iter()
        .position(|l| l.starts_with("checked "))
        .unwrap();
    for line in &lines[..summary] {
        assert!(
            headline.is_match(line) || line.starts_with("    "),
            "neither a headline nor detail: {line}"
        );
        if line.starts_with("    ") {
            assert!(line.chars().count() <= 100, "not wrapped: {line}");
        }
    }
    // The layer's explanation (what a failure does) is given once, not per runner.
    assert_eq!(
        stdout.matches("When it fails, the layer turns").count(),
        1,
        "{stdout}"
    );
    assert!(stdout.contains("is said above"));
}

#[test]
fn counts_read_as_a_person_writes_them() {
    let dir = fixture("forgejo-runners-in-apps", "before");
    let (stdout, _) = run(&dir, &["check", "."], &[]);
    let stdout = unwrapped(&stdout);
    let summary = stdout.lines().last().unwrap();
    assert_eq!(
        summary,
        "checked 28 files, 44 objects, 3 layers (3 live): findings: 7 warnings, 1 note; diagnostics: none (note not shown: `--show-notes` or `-v` shows it)"
    );
    let repo = TempRepo::with_flux_instance();
    let (stdout, _) = run(repo.path(), &["check", "."], &[]);
    assert!(
        stdout.ends_with("findings: 1 error; diagnostics: none\n"),
        "{stdout}"
    );
    let (_, stderr) = run(repo.path(), &["fix", "."], &[]);
    assert!(!stderr.contains("(s)"), "{stderr}");
    let files = regex::Regex::new(r"(?m)^(\d+) (files?) to change").unwrap();
    let c = files.captures(&stderr).expect("a change");
    assert_eq!(c[1] == *"1", &c[2] == "file", "{stderr}");
    let empty = TempRepo::empty();
    empty.write(
        "one.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
    );
    let (stdout, _) = run(empty.path(), &["check", "."], &[]);
    assert!(
        stdout.contains("checked 1 file, 1 object, 0 layers (0 live)"),
        "{stdout}"
    );
}

#[test]
fn one_wording_for_a_fix_that_rides_on_another_finding() {
    let dir = fixture("forgejo-runners-in-apps", "before");
    let (_, stderr) = run(&dir, &["fix", "."], &[]);
    assert!(
        stderr.contains(
            "no fix: fixed together with the finding at apps/base/forgejo/runner-bridge.yaml:27"
        ),
        "{stderr}"
    );
    let dir = fixture("flux-instance-oci-provider", "before");
    let (_, stderr) = run(&dir, &["fix", "."], &[]);
    // Wrapped detail continues on lines indented by six.
    let unwrapped = stderr.replace("\n      ", " ");
    assert!(
        unwrapped.contains("no fix: fixed together with the finding at k8s/providers/docker/infrastructure/controllers/kustomization.yaml:14 (one change fixes both)"),
        "{stderr}"
    );
}

#[test]
fn colour_follows_the_flag_and_the_environment() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let coloured = |args: &[&str], env: &[(&str, &str)]| run(&dir, args, env).0.contains(ESC);
    // Piped, `auto` is plain; CLICOLOR_FORCE forces colour, NO_COLOR turns it off.
    assert!(!coloured(&["check", "."], &[]));
    assert!(coloured(&["check", "."], &[("CLICOLOR_FORCE", "1")]));
    assert!(!coloured(&["check", "."], &[("NO_COLOR", "1")]));
    // The flag wins over the environment.
    assert!(coloured(
        &["check", ".", "--color", "always"],
        &[("NO_COLOR", "1")]
    ));
    assert!(!coloured(
        &["check", ".", "--color", "never"],
        &[("CLICOLOR_FORCE", "1")]
    ));
    // Styled text reads the same once the styles are stripped.
    let (plain, _) = run(&dir, &["check", "."], &[]);
    let (styled, _) = run(&dir, &["check", ".", "--color", "always"], &[]);
    let stripped = regex::Regex::new("\u{1b}\\[[0-9;]*m")
        .unwrap()
        .replace_all(&styled, "");
    assert_eq!(stripped, plain);
    // JSON is never styled.
    assert!(!coloured(
        &["check", ".", "--format", "json", "--color", "always"],
        &[]
    ));
}

#[test]
fn a_piped_diff_is_never_coloured() {
    let dir = fixture("flux-instance-oci-provider", "before");
    let (diff, report) = run(
        &dir,
        &["fix", ".", "--color", "always"],
        &[("CLICOLOR_FORCE", "1")],
    );
    assert!(
        diff.starts_with("--- a/") || diff.starts_with("diff "),
        "{diff}"
    );
    assert!(!diff.contains(ESC), "the diff goes to git apply as is");
    assert!(report.contains(ESC), "the report on stderr is coloured");
}

/// Text as one line per paragraph: wrapped lines continue indented by six.
fn unwrapped(text: &str) -> String {
    common::unwrapped(text)
}

#[test]
fn notes_are_counted_but_shown_only_when_asked() {
    // Two notes: the cluster layers read `replacements` fluxmend does not model.
    let dir = fixture("flux-instance-oci-provider", "before");
    let (stdout, _) = run(&dir, &["check", "."], &[]);
    assert!(!stdout.contains(": note: "), "{stdout}");
    assert!(
        unwrapped(&stdout)
            .contains("diagnostics: 2 notes (notes not shown: `--show-notes` or `-v` shows them)"),
        "{stdout}"
    );
    for shown in [
        &["--show-notes"][..],
        &["-v"],
        &["--verbose"],
        &["--fail-on", "note"],
    ] {
        let (stdout, _) = run(&dir, &[&["check", "."][..], shown].concat(), &[]);
        assert_eq!(stdout.matches(": note: ").count(), 2, "{shown:?}: {stdout}");
        assert!(!stdout.contains("not shown"), "{stdout}");
    }
    let (_, stderr) = run(&dir, &["fix", "."], &[]);
    assert!(!stderr.contains(": note: "), "{stderr}");
    let (_, stderr) = run(&dir, &["fix", ".", "-v"], &[]);
    assert_eq!(stderr.matches(": note: ").count(), 2, "{stderr}");
    // JSON keeps them.
    let (json, _) = run(&dir, &["check", ".", "--format", "json"], &[]);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["summary"]["diagnostics"]["note"], 2);
}

#[test]
fn quiet_leaves_the_headlines_alone() {
    let dir = fixture("forgejo-runners-in-apps", "before");
    let (stdout, _) = run(&dir, &["check", ".", "--quiet"], &[]);
    let headline = regex::Regex::new(r"^[^ :]+:\d+:\d+: FM\d{3} (error|warning|note): \S").unwrap();
    let paragraphs = unwrapped(&stdout);
    assert_eq!(
        paragraphs.lines().count(),
        7,
        "one line per warning (the note is not shown): {stdout}"
    );
    assert!(paragraphs.lines().all(|l| headline.is_match(l)), "{stdout}");
    let (stdout, _) = run(&dir, &["check", ".", "-q"], &[]);
    assert_eq!(unwrapped(&stdout), paragraphs);
    let (_, stderr) = run(&dir, &["fix", ".", "-q"], &[]);
    assert!(!stderr.contains("trade-off"), "{stderr}");
    assert!(
        stderr.contains("to change; verified"),
        "fix still says what it changes: {stderr}"
    );
}

#[test]
fn a_diagnostic_several_clusters_read_is_reported_once() {
    // Two clusters apply one shared layer file whose source is another repository: one note.
    let repo = TempRepo::empty();
    for cluster in ["a", "b"] {
        repo.write(
            &format!("clusters/{cluster}/flux.yaml"),
            format!(
                "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\n  namespace: flux-system\nspec:\n  distribution: {{version: \"2.x\", registry: ghcr.io/fluxcd}}\n  sync:\n    kind: GitRepository\n    url: https://github.com/example/fleet\n    ref: refs/heads/main\n    path: clusters/{cluster}\n"
            ),
        )
        .write(
            &format!("clusters/{cluster}/kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ../../layers\n",
        );
    }
    repo.write(
        "layers/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - shared.yaml\n",
    )
    .write(
        "layers/shared.yaml",
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://github.com/example/apps\n  ref: {branch: main}\n---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: shared\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./deploy\n  prune: true\n  sourceRef: {kind: GitRepository, name: apps}\n",
    );
    let (text, _) = run(repo.path(), &["check", ".", "--show-notes"], &[]);
    let text = unwrapped(&text);
    assert_eq!(text.matches("is another repository").count(), 1, "{text}");
    let (json, _) = run(repo.path(), &["check", ".", "--format", "json"], &[]);
    assert_eq!(json.matches("is another repository").count(), 1, "{json}");
    let (sarif, _) = run(repo.path(), &["check", ".", "--format", "sarif"], &[]);
    assert_eq!(sarif.matches("is another repository").count(), 1, "{sarif}");
}

#[test]
fn every_line_is_wrapped_and_headlines_are_cut_at_a_clause() {
    // FM005's headline was one 200-character line.
    let dir = fixture("fm005-inline", "before");
    let (_, stderr) = run(&dir, &["fix", "."], &[]);
    for line in stderr.lines() {
        assert!(line.chars().count() <= 100, "not wrapped: {line}");
    }
    let headline = stderr.lines().next().unwrap();
    assert!(
        headline.starts_with("clusters/production/layers.yaml:41:3: FM005 note: "),
        "{stderr}"
    );
    // Never cut between a setting and its value.
    assert!(!headline.ends_with("wait:"), "{headline}");
    // A line is longer only when a headline's place alone takes the room: its first word
    // then follows on the same line, whatever its length.
    let dir = fixture("flux-instance-oci-provider", "before");
    let (stdout, _) = run(&dir, &["check", ".", "-v"], &[]);
    for line in stdout.lines() {
        let place_alone = line.rsplit_once(' ').is_some_and(|(head, _)| {
            ["error:", "warning:", "note:"]
                .iter()
                .any(|s| head.ends_with(s))
        });
        assert!(
            line.chars().count() <= 100 || place_alone,
            "not wrapped: {line}"
        );
    }
}

#[test]
fn a_tradeoff_is_said_once_per_rule_and_fix_kind() {
    // Two layers with healthChecks that wait: true ignores: two FM005 fixes of one kind.
    let repo = TempRepo::flux_layout();
    let with_checks = |layer: &str| {
        format!(
            "{}  wait: true\n  healthChecks:\n    - {{apiVersion: v1, kind: Namespace, name: {layer}}}\n",
            repo.read(&format!("clusters/prod/{layer}.yaml"))
                .replace("  wait: true\n", "")
        )
    };
    let (apps, infra) = (with_checks("apps"), with_checks("infra"));
    repo.write("clusters/prod/apps.yaml", apps)
        .write("clusters/prod/infra.yaml", infra);
    let (_, stderr) = run(repo.path(), &["fix", ".", "--rule", "FM005"], &[]);
    // A stale entry (a warning) and a redundant list (a note): both fixed, so both shown.
    assert_eq!(stderr.matches(": FM005 ").count(), 2, "{stderr}");
    assert_eq!(
        stderr.matches("trade-off: None on the cluster").count(),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("trade-off: as above").count(), 1, "{stderr}");
}

#[test]
fn a_path_without_a_root_gets_a_hint() {
    // The layers' folder alone: no FluxInstance sync, no bootstrap Kustomization.
    let repo = TempRepo::flux_layout();
    std::fs::remove_dir_all(repo.path().join("clusters/prod/flux-system")).unwrap();
    let (stdout, _) = run(repo.path(), &["check", "."], &[]);
    assert!(
        unwrapped(&stdout).contains("run at the repository's top level or pass --root"),
        "{stdout}"
    );
    let (stdout, _) = run(TempRepo::flux_layout().path(), &["check", "."], &[]);
    assert!(!stdout.contains("hint:"), "{stdout}");
}

/// `explain` prints a rule's document as a person reads it: the texts the report takes from it
/// are there, the lines that mark them for the report are not.
#[test]
fn explain_prints_the_report_texts_without_their_markers() {
    let run = common::fluxmend(["explain", "FM001"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("<!--"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("Health gating is lost for an object nobody consumes"),
        "{}",
        run.stdout
    );
}
