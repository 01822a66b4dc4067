//! Reading a repository never goes beyond it, never hangs and never reads without bound
//! (issue 24 items 3 and 7): generator files (`configMapGenerator`/`secretGenerator` `files`,
//! `envs`, `env`) through a symbolic link — to an outside file (whose content would leak as the
//! hash in the generated name), through a linked directory, to `/dev/zero` — a FIFO, an
//! oversized file; and a FIFO named `*.yaml` in the tree. Each is refused with a diagnostic
//! naming the file; `check` ends; nothing outside is read.

// FIFOs and symbolic links: unix only.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use crate::common::{
    self, TempRepo, assert_diagnostic, command_args, fluxmend_within, inventory, layer,
};

/// A watchdog, not a measurement: a hang is the failure these tests guard against.
const WATCHDOG: Duration = Duration::from_secs(60);

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

unsafe extern "C" {
    #[link_name = "mkfifo"]
    fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
}

/// `apps` gains a generator `leak` reading `source` (a `files:` entry, or `envs:` when `env`).
fn with_generator(source: &str, env: bool) -> TempRepo {
    let repo = TempRepo::flux_layout();
    let field = if env { "envs" } else { "files" };
    repo.append(
        "apps/kustomization.yaml",
        &format!("configMapGenerator:\n  - name: leak\n    namespace: demo\n    {field}:\n      - {source}\n"),
    );
    repo
}

fn check(repo: &TempRepo) -> serde_json::Value {
    let run = fluxmend_within(
        command_args("check", repo.path(), &["--format", "json"]),
        WATCHDOG,
    );
    run.assert_no_panic();
    run.json()
}

/// The generated ConfigMap `leak-…` is not in the layer's inventory: its data was not read.
fn assert_not_generated(repo: &TempRepo) {
    let graph = repo.graph_json();
    let leaked: Vec<_> = inventory(layer(&graph, "flux-system", "apps"))
        .into_iter()
        .filter(|(_, _, name)| name.starts_with("leak"))
        .collect();
    assert!(
        leaked.is_empty(),
        "generated from an unread file: {leaked:?}"
    );
}

#[test]
fn generator_files_are_never_read_through_a_link() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "TOKEN=outside\n").unwrap();
    let mut tried = 0;
    for (source, env) in [
        ("secret", false),
        ("secret", true),
        ("linked/secret", false),
    ] {
        let repo = with_generator(source, env);
        repo.symlink(outside.path().join("secret"), "apps/secret")
            .symlink(outside.path(), "apps/linked");
        let report = check(&repo);
        assert_diagnostic(&report, "apps/kustomization.yaml", "symbolic link", "error");
        assert_not_generated(&repo);
        tried += 1;
    }
    // A link to a device: never read (it would never end).
    let repo = with_generator("zero", false);
    repo.symlink("/dev/zero", "apps/zero");
    let report = check(&repo);
    assert_diagnostic(&report, "apps/kustomization.yaml", "symbolic link", "error");
    tried += 1;
    assert_eq!(tried, 4);
}

#[test]
fn generator_files_are_regular_files_within_the_size_limit() {
    // A FIFO: never opened (it would block).
    let repo = with_generator("pipe", false);
    mkfifo(&repo.path().join("apps/pipe"));
    let report = check(&repo);
    assert_diagnostic(
        &report,
        "apps/kustomization.yaml",
        "named pipe (FIFO), not a regular file",
        "error",
    );
    assert_not_generated(&repo);
    // Over the limit that YAML files have (a sparse GiB costs no disk).
    let repo = with_generator("huge.bin", false);
    let file = std::fs::File::create(repo.path().join("apps/huge.bin")).unwrap();
    file.set_len(1 << 30).unwrap();
    let report = check(&repo);
    assert_diagnostic(
        &report,
        "apps/kustomization.yaml",
        "1073741824 bytes is over the 8388608 byte limit",
        "error",
    );
    assert_not_generated(&repo);
}

/// A FIFO named like YAML is skipped with a warning; `check` ends and analyses the rest.
#[test]
fn a_fifo_named_yaml_does_not_hang_check() {
    let repo = TempRepo::with_flux_instance();
    // `infra` has no kustomization file: Flux would read every YAML file there.
    mkfifo(&repo.path().join("infra/pipe.yaml"));
    let report = check(&repo);
    assert_diagnostic(
        &report,
        "infra/pipe.yaml",
        "named pipe (FIFO), not a regular file",
        "warning",
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["rule"] == "FM001"),
        "the rest is analysed: {findings:?}"
    );
}

/// The repository's ignore files are read as every other file (issue 24 items 3 and 7): the
/// walker would open them itself, through links and without a limit — a `.gitignore` linked to
/// `/dev/zero` took 6 GB, a FIFO named `.sourceignore` hung `check`, a link to an outside file
/// decided what was analysed. Each is skipped with a diagnostic naming it, ignores nothing, and
/// the rest is analysed.
#[test]
fn ignore_files_are_never_read_through_a_link_nor_without_bound() {
    let outside = tempfile::tempdir().unwrap();
    // Read, this would ignore the only object of the generated layer `infra`.
    std::fs::write(outside.path().join("patterns"), "namespace.yaml\n").unwrap();
    let repo = TempRepo::with_flux_instance();
    repo.symlink(outside.path().join("patterns"), "infra/.gitignore")
        .symlink("/dev/zero", "clusters/.gitignore")
        .write("apps/sub/cm.yaml", "");
    mkfifo(&repo.path().join(".sourceignore"));
    let file = std::fs::File::create(repo.path().join("apps/sub/.gitignore")).unwrap();
    file.set_len(1 << 30).unwrap();
    let report = check(&repo);
    for (file, why) in [
        ("infra/.gitignore", "symbolic link"),
        ("clusters/.gitignore", "symbolic link"),
        (".sourceignore", "named pipe (FIFO), not a regular file"),
        (
            "apps/sub/.gitignore",
            "1073741824 bytes is over the 8388608 byte limit",
        ),
    ] {
        let d = common::find_diagnostic(&report, file, why);
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .contains("it ignores nothing"),
            "{d:#}"
        );
    }
    let graph = repo.graph_json();
    assert!(
        inventory(layer(&graph, "flux-system", "infra"))
            .iter()
            .any(|(kind, _, name)| kind == "Namespace" && name == "infra"),
        "the outside patterns were applied"
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["rule"] == "FM001"),
        "the rest is analysed: {findings:?}"
    );
}
