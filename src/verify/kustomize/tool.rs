//! The renderer the gate runs (`kustomize build` or `kubectl kustomize`) and how one build
//! runs: confined ([`platform::spawn_confined`]: its own process group, a memory limit, death
//! with fluxmend, a network namespace where one can be made), with a time and an output limit,
//! and in an environment of its own — no variable of the user's (no proxy, no `GODEBUG`), an
//! empty private `HOME`, a `KUBECONFIG` of its own that reaches no server (a kubectl wrapper may
//! otherwise contact the cluster of `~/.kube/config`), no `PATH` (kustomize finds no `git` to
//! clone with).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::parse::{Value, YamlFile};
use crate::platform::{self, Network};

/// How long one build may take, and how much memory (`RLIMIT_DATA`) it may use, before it counts
/// as not verified. A build only reads a few files: a minute and a GiB are far beyond what a real
/// one needs (kubectl 1.32 peaks at ~50 MiB on the fixtures) and stop a YAML bomb early.
const BUILD_TIMEOUT: Duration = Duration::from_secs(60);
const BUILD_MEMORY_MIB: u64 = 1024;
/// The most output a build may print (more is a runaway).
const BUILD_OUTPUT_BYTES: u64 = 256 << 20;

/// The limits of one build: `FLUXMEND_TEST_BUILD_LIMITS=MILLISECONDS,MIB` overrides them so the
/// tests can make a small build exceed them.
fn build_limits() -> (Duration, u64) {
    std::env::var("FLUXMEND_TEST_BUILD_LIMITS")
        .ok()
        .and_then(|v| {
            let (ms, mib) = v.split_once(',')?;
            Some((
                Duration::from_millis(ms.trim().parse().ok()?),
                mib.trim().parse().ok()?,
            ))
        })
        .unwrap_or((BUILD_TIMEOUT, BUILD_MEMORY_MIB))
}

/// A kubeconfig whose one server is port 0 of the loopback address: `kubectl kustomize` dials
/// its server although it renders offline (strace, kubectl 1.32: `127.0.0.1:8080` with
/// `KUBECONFIG=/dev/null`, where another process may listen), and nothing can listen on port 0,
/// so the dial fails on the spot and reaches no process.
const UNREACHABLE_KUBECONFIG: &str = "apiVersion: v1
kind: Config
clusters:
  - name: none
    cluster:
      server: https://127.0.0.1:0
contexts:
  - name: none
    context:
      cluster: none
current-context: none
";

/// What every build runs with: an empty private `HOME` (also its working directory and
/// `TMPDIR`) and the [`UNREACHABLE_KUBECONFIG`] beside it.
pub struct BuildEnv {
    home: PathBuf,
    kubeconfig: PathBuf,
}

impl BuildEnv {
    /// Both made in `dir`, a private directory of fluxmend's.
    pub fn create(dir: &Path) -> std::io::Result<BuildEnv> {
        let home = dir.join("home");
        platform::private_dirs(&home)?;
        let kubeconfig = dir.join("kubeconfig");
        platform::private_write(&kubeconfig, UNREACHABLE_KUBECONFIG.as_bytes())?;
        Ok(BuildEnv { home, kubeconfig })
    }
}

/// A kustomize renderer found on `PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `kustomize build --load-restrictor LoadRestrictionsNone DIR`
    Kustomize(PathBuf),
    /// `kubectl kustomize DIR --load-restrictor LoadRestrictionsNone`
    Kubectl(PathBuf),
}

/// What one build gave, and how well it was kept from the network.
pub struct Built {
    pub docs: Result<Vec<Value>, String>,
    pub network: Network,
}

impl Tool {
    /// `kustomize`, else `kubectl`, from `PATH` (its absolute entries).
    pub fn find() -> Option<Tool> {
        platform::find_program("kustomize")
            .map(Tool::Kustomize)
            .or_else(|| platform::find_program("kubectl").map(Tool::Kubectl))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Tool::Kustomize(_) => "kustomize build",
            Tool::Kubectl(_) => "kubectl kustomize",
        }
    }

    /// The command for `dir`, in the environment of its own described in the module
    /// documentation.
    fn command(&self, dir: &Path, env: &BuildEnv) -> Command {
        let home = &env.home;
        let mut cmd = match self {
            Tool::Kustomize(bin) => {
                let mut c = Command::new(bin);
                c.arg("build").arg(dir);
                c
            }
            Tool::Kubectl(bin) => {
                let mut c = Command::new(bin);
                c.arg("kustomize").arg(dir);
                c
            }
        };
        cmd.args(["--load-restrictor", "LoadRestrictionsNone"]);
        cmd.env_clear();
        for name in platform::ESSENTIAL_ENV {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.env("HOME", home)
            .env("USERPROFILE", home)
            .env("TMPDIR", home)
            .env("KUBECONFIG", &env.kubeconfig)
            .current_dir(home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Build `dir`: the rendered documents as data, or why the build failed. The build is
    /// killed (with all it started) when it exceeds its time or output limit or when fluxmend
    /// is interrupted.
    pub fn build(&self, dir: &Path, env: &BuildEnv) -> Built {
        let (timeout, mib) = build_limits();
        let fail = |why: String, network: Network| Built {
            docs: Err(why),
            network,
        };
        if platform::interrupted() {
            return fail("interrupted".into(), Network::Reachable("not run".into()));
        }
        let command = self.command(dir, env);
        let mut confined = match platform::spawn_confined(command, mib.saturating_mul(1 << 20)) {
            Ok(c) => c,
            Err(e) => {
                return fail(
                    format!("cannot run {}: {e}", self.name()),
                    Network::Reachable("not run".into()),
                );
            }
        };
        let network = confined.network.clone();
        let out = confined.child.stdout.take().expect("piped");
        let err = confined.child.stderr.take().expect("piped");
        let out = std::thread::spawn(move || {
            let mut s = Vec::new();
            out.take(BUILD_OUTPUT_BYTES + 1)
                .read_to_end(&mut s)
                .map(|_| s)
        });
        let err = std::thread::spawn(move || {
            let mut s = Vec::new();
            err.take(1 << 20).read_to_end(&mut s).map(|_| s)
        });
        let start = Instant::now();
        let exceeded = |what: String| format!("build exceeded {what}");
        let status = loop {
            match confined.child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if platform::interrupted() => {
                    confined.kill_all();
                    let _ = confined.child.wait();
                    return fail("interrupted".into(), network);
                }
                Ok(None) if start.elapsed() > timeout => {
                    // (A build printing more than the output limit blocks on its pipe and ends
                    // here too.)
                    confined.kill_all();
                    let _ = confined.child.wait();
                    return fail(exceeded(format!("{} s", seconds(timeout))), network);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => {
                    confined.kill_all();
                    return fail(e.to_string(), network);
                }
            }
        };
        // Whatever the build left running in its group goes with it.
        confined.kill_all();
        let stdout = out.join().ok().and_then(Result::ok).unwrap_or_default();
        let stderr = err.join().ok().and_then(Result::ok).unwrap_or_default();
        let docs = if !status.success() {
            let msg = String::from_utf8_lossy(&stderr);
            if msg.contains("out of memory") || msg.contains("cannot allocate memory") {
                Err(exceeded(format!("{mib} MiB")))
            } else if let Some(sig) = platform::exit_signal(&status) {
                Err(format!("{} was killed by signal {sig}", self.name()))
            } else {
                // Go's fatal errors end in a stack dump: its first line says what happened.
                let line = msg
                    .lines()
                    .find(|l| l.starts_with("fatal error:") || l.starts_with("Error:"))
                    .or_else(|| msg.trim().lines().last())
                    .unwrap_or("failed");
                Err(line.trim().to_string())
            }
        } else if stdout.len() as u64 > BUILD_OUTPUT_BYTES {
            Err(exceeded(format!(
                "{} MiB of output",
                BUILD_OUTPUT_BYTES >> 20
            )))
        } else {
            parse_output(stdout)
        };
        Built { docs, network }
    }
}

fn parse_output(stdout: Vec<u8>) -> Result<Vec<Value>, String> {
    let text = String::from_utf8(stdout).map_err(|_| "output is not UTF-8".to_string())?;
    let (yaml, err) = YamlFile::parse(&text);
    if let Some(e) = err {
        return Err(format!("its output does not parse: {e}"));
    }
    yaml.docs()
        .iter()
        .map(|d| yaml.value(d.root).map_err(|e| e.to_string()))
        .filter(|v| !matches!(v, Ok(Value::Null)))
        .collect()
}

/// A duration in seconds for messages (`60`, `0.5`).
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}
