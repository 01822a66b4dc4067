//! Helpers shared by the integration tests: the fixture trees, running the built binary, and
//! throw-away repositories with a small valid Flux layout.

// Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The crate root (`/work/main`).
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One repository tree of a fixture: `fixtures/<case>/<stage>/`.
#[derive(Clone, Debug)]
pub struct FixtureTree {
    pub case: String,
    /// `before` or `after`.
    pub stage: &'static str,
    pub root: PathBuf,
}

impl FixtureTree {
    /// `case/stage`, for messages.
    pub fn label(&self) -> String {
        format!("{}/{}", self.case, self.stage)
    }
}

/// Every `fixtures/*/before` (and `fixtures/*/after` when `with_after`), sorted by case.
pub fn fixture_trees(with_after: bool) -> Vec<FixtureTree> {
    let fixtures = manifest_dir().join("fixtures");
    let mut cases: Vec<String> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", fixtures.display()))
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    cases.sort();
    let stages: &[&'static str] = if with_after {
        &["before", "after"]
    } else {
        &["before"]
    };
    let mut trees = Vec::new();
    for case in cases {
        for &stage in stages {
            let root = fixtures.join(&case).join(stage);
            if root.is_dir() {
                trees.push(FixtureTree {
                    case: case.clone(),
                    stage,
                    root,
                });
            }
        }
    }
    assert!(
        !trees.is_empty(),
        "no fixture trees under {}",
        fixtures.display()
    );
    trees
}

/// What one run of the binary did.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as JSON (panics with the output when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// The process ended normally: exit 0 or 1, never a panic (101) or a signal.
    pub fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked"),
            "fluxmend panicked:\n{}",
            self.stderr
        );
        assert!(
            self.code == 0 || self.code == 1,
            "expected exit code 0 or 1, got {}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
    }
}

/// Run the built `fluxmend` binary with `args` (waits at most two minutes).
pub fn fluxmend<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    fluxmend_within(args, Duration::from_secs(120))
}

/// Run the binary; kill it and fail when it takes longer than `limit`.
pub fn fluxmend_within<I, S>(args: I, limit: Duration) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let args: Vec<_> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fluxmend"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn fluxmend");
    // Drain the pipes on threads so a large output cannot block the child.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s)
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).map(|_| s)
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fluxmend") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fluxmend {args:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout reader").expect("stdout is UTF-8"),
        stderr: err.join().expect("stderr reader").expect("stderr is UTF-8"),
    }
}

/// Objects in [`TempRepo::flux_layout`]: GitRepository + 3 Flux Kustomizations, the apps layer's
/// Namespace, ConfigMap and Deployment, the infra layer's Namespace.
pub const LAYOUT_OBJECTS: u64 = 8;
/// Layers in [`TempRepo::flux_layout`]: flux-system, apps, infra (all live).
pub const LAYOUT_LAYERS: u64 = 3;
/// YAML files fluxmend reads in [`TempRepo::flux_layout`].
pub const LAYOUT_FILES: u64 = 7;

const GOTK_SYNC: &str = "\
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m0s
  ref:
    branch: main
  url: https://github.com/example/fleet
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m0s
  path: ./clusters/prod
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

const FLUX_SYSTEM_KUSTOMIZATION: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - gotk-sync.yaml
";

const APPS_LAYER: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  wait: true
  dependsOn:
    - name: infra
  sourceRef:
    kind: GitRepository
    name: flux-system
";

const INFRA_LAYER: &str = "\
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: infra
  namespace: flux-system
spec:
  interval: 10m
  path: ./infra
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
";

/// `apps/kustomization.yaml`; tests append `  - file.yaml` lines to its resources.
pub const APPS_KUSTOMIZATION: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - app.yaml
";

const APPS_OBJECTS: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: demo
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: demo
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
spec:
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: nginx:1.27
";

const INFRA_NAMESPACE: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: infra
";

/// A throw-away repository in a temporary directory (removed on drop).
pub struct TempRepo {
    pub dir: tempfile::TempDir,
}

impl TempRepo {
    pub fn empty() -> Self {
        TempRepo {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// A small valid `flux bootstrap` layout:
    ///
    /// * `clusters/prod/flux-system/` — GitRepository + Kustomization `flux-system` (path
    ///   `./clusters/prod`, which has no kustomization file: Flux generates one);
    /// * `clusters/prod/apps.yaml` — layer `apps`, `wait: true`, dependsOn `infra`, path `./apps`
    ///   (a kustomization listing `app.yaml`: Namespace, ConfigMap, Deployment);
    /// * `clusters/prod/infra.yaml` — layer `infra`, path `./infra` (generated: one Namespace).
    pub fn flux_layout() -> Self {
        let repo = TempRepo::empty();
        repo.write("clusters/prod/flux-system/gotk-sync.yaml", GOTK_SYNC)
            .write(
                "clusters/prod/flux-system/kustomization.yaml",
                FLUX_SYSTEM_KUSTOMIZATION,
            )
            .write("clusters/prod/apps.yaml", APPS_LAYER)
            .write("clusters/prod/infra.yaml", INFRA_LAYER)
            .write("apps/kustomization.yaml", APPS_KUSTOMIZATION)
            .write("apps/app.yaml", APPS_OBJECTS)
            .write("infra/namespace.yaml", INFRA_NAMESPACE);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write a file (creating its directories), replacing any previous content.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> &Self {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create dirs");
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        self
    }

    /// Append text to an existing file.
    pub fn append(&self, rel: &str, text: &str) -> &Self {
        let path = self.path().join(rel);
        let mut old = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {rel}: {e}"));
        old.push_str(text);
        std::fs::write(&path, old).expect("append");
        self
    }

    /// Create a symbolic link at `rel` pointing at `target` (as written).
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) -> &Self {
        let link = self.path().join(rel);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("create dirs");
        std::os::unix::fs::symlink(target, &link).unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self
    }

    /// `fluxmend check PATH --format json` (plus `extra` args); asserts the process did not panic.
    pub fn check_json(&self, extra: &[&str]) -> (Run, Value) {
        let mut args: Vec<&OsStr> = vec![OsStr::new("check"), self.path().as_os_str()];
        args.extend([OsStr::new("--format"), OsStr::new("json")]);
        args.extend(extra.iter().map(OsStr::new));
        let run = fluxmend(args);
        run.assert_no_panic();
        let json = run.json();
        (run, json)
    }

    /// `fluxmend graph PATH --format json`; asserts success.
    pub fn graph_json(&self) -> Value {
        let run = fluxmend([
            OsStr::new("graph"),
            self.path().as_os_str(),
            OsStr::new("--format"),
            OsStr::new("json"),
        ]);
        assert_eq!(run.code, 0, "graph failed:\n{}\n{}", run.stdout, run.stderr);
        run.json()
    }
}

/// The diagnostics of a `check --format json` report.
pub fn diagnostics(report: &Value) -> &[Value] {
    report["diagnostics"].as_array().map_or(&[], Vec::as_slice)
}

/// The one diagnostic for `file` whose message contains `needle` (panics, listing all
/// diagnostics, when there is none).
pub fn find_diagnostic<'a>(report: &'a Value, file: &str, needle: &str) -> &'a Value {
    diagnostics(report)
        .iter()
        .find(|d| d["file"] == file && d["message"].as_str().is_some_and(|m| m.contains(needle)))
        .unwrap_or_else(|| {
            panic!(
                "no diagnostic for {file:?} containing {needle:?}; diagnostics:\n{}",
                serde_json::to_string_pretty(&report["diagnostics"]).unwrap()
            )
        })
}

/// A summary count of a `check --format json` report.
pub fn summary(report: &Value, key: &str) -> u64 {
    report["summary"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.{key} missing: {}", report["summary"]))
}

/// The layer `namespace/name` of a `graph --format json` report (the first one, when several).
pub fn layer<'a>(graph: &'a Value, namespace: &str, name: &str) -> &'a Value {
    graph["layers"]
        .as_array()
        .expect("layers")
        .iter()
        .find(|l| l["namespace"] == namespace && l["name"] == name)
        .unwrap_or_else(|| panic!("no layer {namespace}/{name} in:\n{graph:#}"))
}

/// `(kind, namespace, name)` of every object in the layer's first variant, asserting that the
/// variant rendered without error.
pub fn inventory(layer: &Value) -> Vec<(String, String, String)> {
    let variant = &layer["variants"][0];
    assert!(
        variant["error"].is_null(),
        "variant has an error: {variant:#}"
    );
    variant["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| {
            let key = &o["object"];
            (
                key["kind"].as_str().unwrap_or_default().to_string(),
                key["namespace"].as_str().unwrap_or_default().to_string(),
                key["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The three layers of [`TempRepo::flux_layout`] are live and render what they should: `apps`
/// its Namespace, ConfigMap and Deployment plus `extra_apps` objects, `infra` its Namespace plus
/// `extra_infra`.
pub fn assert_layout_analysed(graph: &Value, extra_apps: usize, extra_infra: usize) {
    for name in ["flux-system", "apps", "infra"] {
        assert_eq!(
            layer(graph, "flux-system", name)["live"],
            true,
            "layer {name} is not live"
        );
    }
    let root = inventory(layer(graph, "flux-system", "flux-system"));
    for name in ["flux-system", "apps", "infra"] {
        assert!(
            root.contains(&("Kustomization".into(), "flux-system".into(), name.into())),
            "root does not apply {name}: {root:?}"
        );
    }
    let apps = inventory(layer(graph, "flux-system", "apps"));
    assert_eq!(apps.len(), 3 + extra_apps, "apps inventory: {apps:?}");
    assert!(
        apps.contains(&("Deployment".into(), "demo".into(), "web".into())),
        "{apps:?}"
    );
    let infra = inventory(layer(graph, "flux-system", "infra"));
    assert_eq!(infra.len(), 1 + extra_infra, "infra inventory: {infra:?}");
    assert!(
        infra.contains(&("Namespace".into(), String::new(), "infra".into())),
        "{infra:?}"
    );
}
