//! The text report for people: a headline per finding (`path:line:col: FM001 error: summary`)
//! with indented, wrapped detail, correct plurals, colour honouring `--color`, `NO_COLOR` and
//! `CLICOLOR_FORCE`, and a diff that is never coloured when piped.

mod common;

use std::process::Command;

use common::{TempRepo, fixture};

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
    for line in &lines[..lines.len() - 1] {
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
    let summary = stdout.lines().last().unwrap();
    assert_eq!(
        summary,
        "checked 28 files, 44 objects, 3 layers (3 live): findings: 7 warnings, 1 note; diagnostics: none"
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
