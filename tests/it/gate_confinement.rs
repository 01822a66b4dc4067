//! The kustomize gate is confined (issue 12 item 5): a layer whose kustomizations reach outside
//! the repository or a URL is "not verified" without being built; builds have a time and a
//! memory limit, run in their own process group, and die with fluxmend; SIGTERM removes the
//! temporary trees; the copies are owner-only.

// A fake kubectl (a /bin/sh script), permissions and signals: unix only.
#![cfg(unix)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, TempRepo, tree};

/// `fluxmend fix ROOT` with `--verify kustomize`, extra environment, `TMPDIR` set to `tmp`.
fn fix(repo: &TempRepo, tmp: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--verify", "kustomize"])
        .arg(repo.path())
        .env("TMPDIR", tmp)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run fluxmend")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Temporary trees fluxmend left in `tmp`.
fn verify_trees(tmp: &Path) -> Vec<String> {
    std::fs::read_dir(tmp)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("fluxmend-verify-"))
        .collect()
}

/// A directory holding a fake `kustomize` running `script` (POSIX sh), for PATH.
fn fake_kustomize(script: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("kustomize");
    std::fs::write(&bin, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// A process is gone (or a zombie nobody waits for).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.split_whitespace().nth(2) == Some("Z"),
    }
}

/// A generator configuration reading a file outside the repository (absolute or climbing out):
/// not verified, never built.
#[test]
fn a_generator_reading_outside_the_root_is_not_verified() {
    for file in ["/etc/hostname", "../../../../../../../../etc/hostname"] {
        let repo = TempRepo::with_flux_instance();
        repo.append("apps/kustomization.yaml", "generators:\n  - gen.yaml\n")
            .write(
                "apps/gen.yaml",
                format!(
                    "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: host\nfiles:\n  - {file}\n"
                ),
            );
        let tmp = tempfile::tempdir().unwrap();
        let out = fix(&repo, tmp.path(), &[]);
        let err = common::unwrapped(&stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!(
                "not verified: layer flux-system/apps: apps/gen.yaml:6:5: `files` entry `{file}`"
            )),
            "{err}"
        );
    }
}

/// A patch fetched over HTTP: not verified, and nothing connects.
#[test]
fn a_patch_url_is_never_fetched() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/patch.yaml", listener.local_addr().unwrap());
    let repo = TempRepo::with_flux_instance();
    repo.append(
        "apps/kustomization.yaml",
        &format!("patches:\n  - path: {url}\n"),
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = fix(&repo, tmp.path(), &[]);
    let err = common::unwrapped(&stderr(&out));
    assert!(
        err.contains(&format!(
            "apps/kustomization.yaml:7:11: `patches[0].path` entry `{url}` is a URL (never fetched)"
        )),
        "{err}"
    );
    assert!(listener.accept().is_err(), "the URL was fetched");
}

/// A resource kustomize would try as a remote base (not in the repository), a Helm chart, and a
/// transformer configuration naming a file outside: each not verified.
#[test]
fn remote_bases_helm_charts_and_plugin_files_are_not_verified() {
    let cases = [
        (
            "resources:\n  - github.com/example/base?ref=v1\n",
            "names a git repository (kustomize would clone it; never fetched)",
        ),
        (
            "helmCharts:\n  - name: x\n    repo: https://charts.example.com\n",
            "`helmCharts`: a Helm chart, which the gate never inflates",
        ),
        (
            "transformers:\n  - plugin.yaml\n",
            "leaves the repository root",
        ),
    ];
    for (extra, why) in cases {
        let repo = TempRepo::with_flux_instance();
        if extra.starts_with("resources") {
            repo.append(
                "apps/kustomization.yaml",
                "  - github.com/example/base?ref=v1\n",
            );
        } else {
            repo.append("apps/kustomization.yaml", extra);
        }
        repo.write(
            "apps/plugin.yaml",
            "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: p\nfiles:\n  - ../../../../../etc/passwd\n",
        );
        let tmp = tempfile::tempdir().unwrap();
        let out = fix(&repo, tmp.path(), &[]);
        let err = common::unwrapped(&stderr(&out));
        assert!(
            err.contains("not verified: layer flux-system/apps") && err.contains(why),
            "{extra}: {err}"
        );
    }
}

/// A build over its memory limit ends as "not verified (build exceeded … MiB)" — set tiny here
/// through the test-only variable.
#[test]
fn a_build_over_its_memory_limit_is_not_verified() {
    let repo = TempRepo::with_flux_instance();
    let tmp = tempfile::tempdir().unwrap();
    let out = fix(
        &repo,
        tmp.path(),
        &[("FLUXMEND_TEST_BUILD_LIMITS", "60000,16")],
    );
    let err = common::unwrapped(&stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not verified: layer flux-system/apps: build exceeded 16 MiB"),
        "{err}"
    );
    assert!(verify_trees(tmp.path()).is_empty());
}

/// A build that never ends is killed, with its whole process group, at the time limit; the
/// temporary trees are removed.
#[test]
fn a_build_over_its_time_limit_is_killed_with_its_group() {
    let pids = tempfile::tempdir().unwrap();
    let log = pids.path().join("pids");
    let bin = fake_kustomize(&format!(
        "sleep 300 &\necho $! >> {log}\necho $$ >> {log}\nwait",
        log = log.display()
    ));
    let repo = TempRepo::with_flux_instance();
    let tmp = tempfile::tempdir().unwrap();
    let path = path_with(bin.path());
    let start = Instant::now();
    let out = fix(
        &repo,
        tmp.path(),
        &[("PATH", &path), ("FLUXMEND_TEST_BUILD_LIMITS", "300,1024")],
    );
    let err = common::unwrapped(&stderr(&out));
    assert!(start.elapsed() < Duration::from_secs(60), "{err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not verified: layer flux-system/apps: build exceeded 0.3 s"),
        "{err}"
    );
    assert!(verify_trees(tmp.path()).is_empty());
    let pids = std::fs::read_to_string(&log).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    for pid in pids.split_whitespace() {
        assert!(gone(pid), "build process {pid} still runs");
    }
}

/// SIGTERM while a build runs: the build's group is killed, the temporary trees removed, and
/// fluxmend ends by SIGTERM having written nothing.
#[test]
fn sigterm_kills_the_builds_and_removes_the_temporary_trees() {
    let pids = tempfile::tempdir().unwrap();
    let log = pids.path().join("pids");
    let bin = fake_kustomize(&format!(
        "sleep 300 &\necho $! >> {log}\nwait",
        log = log.display()
    ));
    let repo = TempRepo::with_flux_instance();
    let before = tree(repo.path());
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(["fix", "--write", "--verify", "kustomize"])
        .arg(repo.path())
        .env("TMPDIR", tmp.path())
        .env("PATH", path_with(bin.path()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while std::fs::read_to_string(&log).map_or(true, |s| s.is_empty()) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no build started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !verify_trees(tmp.path()).is_empty(),
        "a tree exists meanwhile"
    );
    // SAFETY: signalling our own child.
    unsafe { libc_kill(child.id() as i32, 15) };
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(15)
    );
    assert!(verify_trees(tmp.path()).is_empty(), "temporary trees left");
    std::thread::sleep(Duration::from_millis(200));
    for pid in std::fs::read_to_string(&log).unwrap().split_whitespace() {
        assert!(gone(pid), "build process {pid} still runs");
    }
    assert_eq!(tree(repo.path()), before, "nothing written");
}

unsafe extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// The copies are owner-only: every directory 0700, every file 0600.
#[test]
fn temporary_copies_are_owner_only() {
    let logdir = tempfile::tempdir().unwrap();
    let log = logdir.path().join("modes");
    let bin = fake_kustomize(&format!(
        "/usr/bin/find \"$TMPDIR\"/.. -printf '%m %y %p\\n' >> {}",
        log.display()
    ));
    let repo = TempRepo::with_flux_instance();
    let tmp = tempfile::tempdir().unwrap();
    let path = path_with(bin.path());
    let out = fix(&repo, tmp.path(), &[("PATH", &path)]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let modes = std::fs::read_to_string(&log).unwrap();
    assert!(modes.lines().count() > 5, "{modes}");
    for line in modes.lines() {
        let mut parts = line.splitn(3, ' ');
        let (mode, kind) = (parts.next().unwrap(), parts.next().unwrap());
        let want = if kind == "d" { "700" } else { "600" };
        assert_eq!(mode, want, "{line}");
    }
}

/// Each build runs in an environment of its own (issue 24 item 2): none of the user's
/// variables (a proxy, a kubeconfig, a canary), a `KUBECONFIG` of fluxmend's whose one server is
/// `127.0.0.1:0` (nothing can listen there), an empty private `HOME`
/// that is not the user's, no `PATH`, and a network namespace of its own (made here: the tests
/// run where one can be; elsewhere the report says the builds ran with the network reachable).
#[test]
fn builds_run_in_a_scrubbed_environment_without_network() {
    let logdir = tempfile::tempdir().unwrap();
    let log = logdir.path().join("env");
    let bin = fake_kustomize(&format!(
        "{{ /usr/bin/env; echo NETNS=$(/usr/bin/readlink /proc/self/ns/net); echo KUBESERVERS=$(/bin/grep -c server: \"$KUBECONFIG\")/$(/bin/grep -c 'server: https://127.0.0.1:0$' \"$KUBECONFIG\"); echo HOMEFILES=$(/bin/ls -A \"$HOME\" | /usr/bin/wc -l); }} >> {}",
        log.display()
    ));
    let repo = TempRepo::with_flux_instance();
    let tmp = tempfile::tempdir().unwrap();
    let path = path_with(bin.path());
    let out = fix(
        &repo,
        tmp.path(),
        &[
            ("PATH", &path),
            ("FLUXMEND_CANARY", "leaked"),
            ("HTTPS_PROXY", "http://127.0.0.1:9"),
            ("KUBECONFIG", "/root/.kube/config"),
            ("HOME", "/root"),
        ],
    );
    let err = stderr(&out);
    assert!(!err.contains("network isolation"), "{err}");
    let env = std::fs::read_to_string(&log).unwrap();
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let mut builds = 0;
    for block in env.split("HOMEFILES=").skip(1) {
        let files: usize = block.lines().next().unwrap().trim().parse().unwrap();
        assert_eq!(files, 0, "HOME is empty");
        builds += 1;
    }
    assert!(builds >= 2, "{env}");
    for line in env.lines() {
        let (name, value) = line.split_once('=').unwrap_or((line, ""));
        match name {
            "KUBECONFIG" => assert!(
                value.contains("fluxmend-verify-") && value.ends_with("kubeconfig"),
                "{line}"
            ),
            "KUBESERVERS" => assert_eq!(value, "1/1", "one server, port 0 of loopback"),
            "HOME" | "TMPDIR" | "USERPROFILE" => {
                assert!(value.contains("fluxmend-verify-"), "{line}");
            }
            "NETNS" => assert_ne!(value, ours.to_str().unwrap(), "same network namespace"),
            // What sh itself sets.
            "PWD" | "SHLVL" | "_" | "HOMEFILES" | "OLDPWD" => {}
            _ => panic!("variable {name} reached the build:\n{env}"),
        }
    }
}

/// fluxmend never runs a program of the repository (issue 24 item 2): with a relative entry in
/// `PATH` (the empty one of `PATH=:/usr/bin`, or `.`), the `kustomize` the gate looked up and the
/// `git` that `--commit` runs inside the work tree (here to sign) were the repository's own. Only
/// `PATH`'s absolute entries are searched: the real renderer builds, and the repository's
/// programs never run.
#[test]
fn programs_in_the_repository_never_run() {
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let repo = TempRepo::with_flux_instance();
    for name in ["kustomize", "kubectl", "git"] {
        repo.write(
            name,
            format!("#!/bin/sh\necho {name} >> {}\nexit 1\n", ran.display()),
        );
        std::fs::set_permissions(
            repo.path().join(name),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    let dir = repo.path();
    common::git(dir, &["init", "-q"]);
    common::git(dir, &["config", "user.name", "t"]);
    common::git(dir, &["config", "user.email", "t@t"]);
    common::git(dir, &["add", "-A"]);
    common::git(dir, &["commit", "-qm", "init"]);
    common::git(dir, &["config", "commit.gpgsign", "true"]);
    let path = format!(":.:{}", std::env::var("PATH").unwrap_or_default());
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
            .args(args)
            .current_dir(dir)
            .env("PATH", &path)
            .stdin(Stdio::null())
            .output()
            .expect("run fluxmend");
        stderr(&out)
    };
    let gate = run(&["fix", "--verify", "kustomize", "."]);
    // git itself ran, to sign: the signature fails here (no key), the commit is refused.
    let commit = run(&["fix", "--verify", "builtin", "--commit", "."]);
    assert!(
        !ran.exists(),
        "ran: {}\n{gate}\n{commit}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );
    assert!(gate.contains("verified: builtin + kustomize"), "{gate}");
    assert!(commit.contains("gpg"), "{commit}");
}
