//! The GitHub Action's shell steps and the pre-commit hooks, run as their files say, in a test
//! repository (no network: the install, upload and push steps are not run).

// The action and the hooks run bash steps with a unix PATH.
#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{git, git_repo_with, manifest_dir};
use yaml_rust2::{Yaml, YamlLoader};

fn load(file: &str) -> Yaml {
    let text = std::fs::read_to_string(manifest_dir().join(file)).unwrap();
    YamlLoader::load_from_str(&text).unwrap().remove(0)
}

fn bin_dir() -> String {
    Path::new(env!("CARGO_BIN_EXE_fluxmend"))
        .parent()
        .unwrap()
        .display()
        .to_string()
}

/// Run a step's script as the runner does (`bash -e {0}`), its `env` with each `${{ X }}`
/// replaced by `context[X]` (`inputs.path`, `github.event_name`, `steps.target.outputs.bin`…);
/// returns the exit code and what it wrote to $`GITHUB_OUTPUT`.
fn run_step(
    step: &Yaml,
    context: &BTreeMap<String, String>,
    repo: &Path,
    temp: &Path,
) -> (i32, String, String) {
    let output = temp.join("github_output");
    std::fs::write(&output, "").unwrap();
    let mut command = Command::new("bash");
    command
        .args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
        .arg(step["run"].as_str().unwrap())
        .current_dir(repo)
        .env(
            "PATH",
            format!("{}:{}", bin_dir(), std::env::var("PATH").unwrap()),
        )
        .env("RUNNER_TEMP", temp)
        .env("GITHUB_OUTPUT", &output);
    if let Some(env) = step["env"].as_hash() {
        for (k, v) in env {
            let v = v.as_str().unwrap();
            let value = match v.strip_prefix("${{ ").and_then(|e| e.strip_suffix(" }}")) {
                Some(expression) => context
                    .get(expression)
                    .unwrap_or_else(|| panic!("no value for {expression} in the test's context")),
                None => v,
            };
            command.env(k.as_str().unwrap(), value);
        }
    }
    let out = command.output().unwrap();
    assert!(
        out.stderr.is_empty()
            || !String::from_utf8_lossy(&out.stderr).contains("command not found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap(),
        std::fs::read_to_string(&output).unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Every step's inputs at their defaults, `github.*` as on a push to the repository itself, and
/// the built binary where the install step would have put the released one.
fn push_context(action: &Yaml) -> BTreeMap<String, String> {
    let mut context = BTreeMap::new();
    for (k, v) in action["inputs"].as_hash().unwrap() {
        context.insert(
            format!("inputs.{}", k.as_str().unwrap()),
            v["default"].as_str().unwrap().to_string(),
        );
    }
    for (k, v) in [
        ("github.event_name", "push"),
        ("github.repository", "example/fleet"),
        ("github.event.pull_request.head.repo.full_name", ""),
        ("github.token", "unused"),
        ("steps.target.outputs.bin", env!("CARGO_BIN_EXE_fluxmend")),
    ] {
        context.insert(k.to_string(), v.to_string());
    }
    context
}

#[test]
fn action_checks_uploads_sarif_and_commits_the_fix() {
    let action = load("action.yml");
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let step = |id: &str| steps.iter().find(|s| s["id"].as_str() == Some(id)).unwrap();
    let mut context = push_context(&action);
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("an upload-sarif step");
    assert_eq!(
        upload["with"]["sarif_file"].as_str(),
        Some("${{ runner.temp }}/fluxmend.sarif")
    );
    // Optional, and never from a fork's pull request (its token cannot upload).
    let condition = upload["if"].as_str().unwrap();
    assert!(
        condition.contains("inputs.upload-sarif == 'true'")
            && condition.contains("github.event.pull_request.head.repo.fork"),
        "{condition}"
    );

    let repo = git_repo_with("flux-instance-oci-provider");
    let temp = tempfile::tempdir().unwrap();
    let (code, output, _) = run_step(step("check"), &context, repo.path(), temp.path());
    assert_eq!(code, 0, "the check step passes its exit code on: {output}");
    assert_eq!(output, "exit-code=1\n");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(temp.path().join("fluxmend.sarif")).unwrap())
            .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(!sarif["runs"][0]["results"].as_array().unwrap().is_empty());

    context.insert("inputs.fix".into(), "true".into());
    let (code, _, _) = run_step(step("refuse"), &context, repo.path(), temp.path());
    assert_eq!(code, 0, "fix mode runs on a push");
    let (code, output, _) = run_step(step("fix"), &context, repo.path(), temp.path());
    assert_eq!(code, 0, "{output}");
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_eq!(output, format!("commit={head}"));
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        context["inputs.branch"]
    );
    let body = std::fs::read_to_string(temp.path().join("fluxmend-pr.md")).unwrap();
    assert!(body.starts_with("## Findings"), "{body}");

    // A PATH that does not exist: exit 2 fails the step, nothing to upload.
    context.insert("inputs.path".into(), "no-such-dir".into());
    let (code, output, _) = run_step(step("check"), &context, repo.path(), temp.path());
    assert_ne!(code, 0);
    assert_eq!(output, "exit-code=2\n");
}

#[test]
fn fix_mode_is_refused_on_a_pull_request_from_a_fork() {
    let action = load("action.yml");
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let refuse = steps
        .iter()
        .find(|s| s["id"].as_str() == Some("refuse"))
        .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let mut context = push_context(&action);
    let mut run = |fix: &str, event: &str, head: &str| {
        context.insert("inputs.fix".into(), fix.into());
        context.insert("github.event_name".into(), event.into());
        context.insert(
            "github.event.pull_request.head.repo.full_name".into(),
            head.into(),
        );
        run_step(refuse, &context, temp.path(), temp.path())
    };
    let (code, _, stdout) = run("true", "pull_request", "someone/fleet");
    assert_eq!(code, 1, "a fork's pull request cannot commit or push");
    assert!(
        stdout.contains("fix mode is refused on a pull request from a fork"),
        "{stdout}"
    );
    assert_eq!(run("true", "pull_request_target", "someone/fleet").0, 1);
    assert_eq!(
        run("true", "pull_request", "example/fleet").0,
        0,
        "the repository's own branch"
    );
    assert_eq!(
        run("false", "pull_request", "someone/fleet").0,
        0,
        "check mode runs on forks"
    );
}

/// Every `uses:` of a step in `file` (a workflow or action.yml).
fn uses(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(manifest_dir().join(file)).unwrap();
    text.lines()
        .filter_map(|l| l.trim().trim_start_matches("- ").strip_prefix("uses: "))
        .map(|u| u.split(" #").next().unwrap().trim().to_string())
        .collect()
}

/// The workflows and the action: what zizmor and actionlint lint in `.ci/run`.
fn workflow_files() -> Vec<String> {
    let mut files = vec!["action.yml".to_string()];
    for entry in std::fs::read_dir(manifest_dir().join(".github/workflows")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        files.push(format!(".github/workflows/{name}"));
    }
    files.sort();
    files
}

#[test]
fn every_action_is_pinned_by_commit_and_no_expression_reaches_a_script() {
    let pinned = regex::Regex::new(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$").unwrap();
    for file in workflow_files() {
        for u in uses(&file) {
            assert!(
                u == "./" || pinned.is_match(&u),
                "{file}: `uses: {u}` is not pinned by a commit SHA"
            );
        }
        // `${{ }}` inside `run:` is template injection: values pass through `env:`.
        let doc = load(&file);
        let mut scripts = Vec::new();
        let steps = |s: &Yaml| s.as_vec().cloned().unwrap_or_default();
        scripts.extend(steps(&doc["runs"]["steps"]));
        if let Some(jobs) = doc["jobs"].as_hash() {
            for job in jobs.values() {
                scripts.extend(steps(&job["steps"]));
            }
        }
        for step in scripts {
            if let Some(run) = step["run"].as_str() {
                assert!(
                    !run.contains("${{"),
                    "{file}: an expression in `run:`: {run}"
                );
            }
        }
    }
    // The current upload-sarif.
    assert!(
        uses("action.yml")
            .iter()
            .any(|u| u.starts_with("github/codeql-action/upload-sarif@")),
    );
}

#[test]
fn the_action_installs_what_the_release_publishes() {
    let cargo = std::fs::read_to_string(manifest_dir().join("Cargo.toml")).unwrap();
    let field = |name: &str| {
        cargo
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} = \"")))
            .map(|v| v.trim_end_matches('"').to_string())
            .unwrap()
    };
    let action = load("action.yml");
    // The version the action installs is the crate's: a release bumps both.
    assert_eq!(
        action["inputs"]["version"]["default"].as_str(),
        Some(field("version").as_str())
    );
    let text = std::fs::read_to_string(manifest_dir().join("action.yml")).unwrap();
    assert!(
        text.contains(&format!(
            "RELEASES: {}/releases/download",
            field("repository")
        )),
        "action.yml downloads from the crate's repository"
    );
    // Every target the action may ask for is one the release builds.
    let release =
        std::fs::read_to_string(manifest_dir().join(".github/workflows/release.yml")).unwrap();
    let target = regex::Regex::new(r"target=([a-z0-9_]+-[a-z0-9_-]+);").unwrap();
    let asked: Vec<&str> = target
        .captures_iter(&text)
        .map(|c| c.get(1).unwrap().as_str())
        .collect();
    assert_eq!(
        asked.len(),
        5,
        "Linux and macOS on x86_64 and arm64, Windows"
    );
    for t in asked {
        assert!(
            release.contains(&format!("- target: {t}\n")),
            "the release does not build {t}"
        );
    }
    // `cargo install` from the registry: a license file matching the manifest.
    assert_eq!(field("license"), "Apache-2.0");
    let license = std::fs::read_to_string(manifest_dir().join("LICENSE")).unwrap();
    assert!(license.contains("Apache License") && license.contains("Version 2.0, January 2004"));
}

#[test]
fn pre_commit_hooks_run_as_declared() {
    let hooks = load(".pre-commit-hooks.yaml");
    let hooks = hooks.as_vec().unwrap();
    let entry = |id: &str| {
        hooks.iter().find(|h| h["id"].as_str() == Some(id)).unwrap()["entry"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for h in hooks {
        assert_eq!(h["pass_filenames"].as_bool(), Some(false));
        assert_eq!(h["language"].as_str(), Some("rust"));
    }
    let repo = git_repo_with("flux-instance-oci-provider");
    // pre-commit runs `entry` from the repository's top level.
    let run = |entry: &str| {
        Command::new("bash")
            .args(["-c", &format!("{entry} .")])
            .current_dir(repo.path())
            .env(
                "PATH",
                format!("{}:{}", bin_dir(), std::env::var("PATH").unwrap()),
            )
            .output()
            .unwrap()
    };
    let check = run(&entry("fluxmend-check"));
    assert_eq!(check.status.code(), Some(1), "findings fail the hook");
    let fix = run(&entry("fluxmend-fix"));
    assert_eq!(
        fix.status.code(),
        Some(1),
        "a written fix fails the hook, so it is reviewed"
    );
    assert!(!git(repo.path(), &["status", "--porcelain"]).is_empty());
}
