//! The GitHub Action's shell steps and the pre-commit hooks, run as their files say, in a test
//! repository (no network: the install, upload and push steps are not run).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{git, git_repo_with, manifest_dir};
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

/// Run a step's script as the runner does (`bash -e {0}`), its `env` with `${{ inputs.X }}`
/// replaced by `inputs`; returns the exit code and what it wrote to $GITHUB_OUTPUT.
fn run_step(step: &Yaml, inputs: &BTreeMap<&str, &str>, repo: &Path, temp: &Path) -> (i32, String) {
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
            let name = v.trim_start_matches("${{ inputs.").trim_end_matches(" }}");
            let value = inputs
                .get(name)
                .copied()
                .unwrap_or_else(|| panic!("input {name}"));
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
    )
}

#[test]
fn action_checks_uploads_sarif_and_commits_the_fix() {
    let action = load("action.yml");
    let steps = action["runs"]["steps"].as_vec().unwrap();
    let step = |id: &str| steps.iter().find(|s| s["id"].as_str() == Some(id)).unwrap();
    let mut inputs = BTreeMap::new();
    for (k, v) in action["inputs"].as_hash().unwrap() {
        inputs.insert(k.as_str().unwrap(), v["default"].as_str().unwrap());
    }
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif"))
        })
        .expect("an upload-sarif step");
    assert_eq!(
        upload["with"]["sarif_file"].as_str(),
        Some("${{ runner.temp }}/fluxmend.sarif")
    );

    let repo = git_repo_with("flux-instance-oci-provider");
    let temp = tempfile::tempdir().unwrap();
    let (code, output) = run_step(step("check"), &inputs, repo.path(), temp.path());
    assert_eq!(code, 0, "the check step passes its exit code on: {output}");
    assert_eq!(output, "exit-code=1\n");
    let sarif: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(temp.path().join("fluxmend.sarif")).unwrap())
            .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(!sarif["runs"][0]["results"].as_array().unwrap().is_empty());

    inputs.insert("fix", "true");
    let (code, output) = run_step(step("fix"), &inputs, repo.path(), temp.path());
    assert_eq!(code, 0, "{output}");
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    assert_eq!(output, format!("commit={head}"));
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        inputs["branch"]
    );
    let body = std::fs::read_to_string(temp.path().join("fluxmend-pr.md")).unwrap();
    assert!(body.starts_with("## Findings"), "{body}");

    // A PATH that does not exist: exit 2 fails the step, nothing to upload.
    inputs.insert("path", "no-such-dir");
    let (code, output) = run_step(step("check"), &inputs, repo.path(), temp.path());
    assert_ne!(code, 0);
    assert_eq!(output, "exit-code=2\n");
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
