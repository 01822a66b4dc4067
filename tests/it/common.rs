//! Helpers shared by the integration tests: the fixture trees, running the built binary, copying
//! and reading whole trees, git and `kubectl kustomize`, throw-away repositories with a small
//! valid Flux layout, and reading `check --format json` reports.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Every way `doc` departs from `def` (`Check`, `FixReport`, `Failure`, `Rollout`, `Graph`) of
/// the JSON v1 schema, `docs/schema/fluxmend-v1.json` (generated from the output types; a unit
/// test keeps it so). The published schema lets new fields in, since they do not raise the
/// version; here every definition is closed (`unevaluatedProperties: false`), so that a field
/// the schema does not describe fails too.
pub fn json_v1_errors(def: &str, doc: &Value) -> Vec<String> {
    let path = manifest_dir().join("docs/schema/fluxmend-v1.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut schema: Value = serde_json::from_str(&text).unwrap();
    let root = schema.as_object_mut().unwrap();
    assert!(
        root["$defs"].get(def).is_some(),
        "the schema defines no {def}"
    );
    root.remove("anyOf");
    root.insert("$ref".into(), format!("#/$defs/{def}").into());
    for d in root["$defs"].as_object_mut().unwrap().values_mut() {
        if d.get("properties").is_some() {
            d["unevaluatedProperties"] = false.into();
        }
    }
    let validator = jsonschema::draft202012::new(&schema).expect("the v1 schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// `doc` is a valid `def` of the JSON v1 schema ([`json_v1_errors`]).
pub fn assert_json_v1(def: &str, doc: &Value) {
    let errors = json_v1_errors(def, doc);
    assert!(
        errors.is_empty(),
        "not a valid v1 {def}: {errors:#?}\n{doc:#}"
    );
}

/// The crate root (`/work/main`).
pub fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `fixtures/<case>/<stage>/` (`stage` is `before` or `after`).
pub fn fixture(case: &str, stage: &str) -> PathBuf {
    manifest_dir().join("fixtures").join(case).join(stage)
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

/// How long a run of the binary may take unless a test says otherwise.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Run the built `fluxmend` binary with `args` (waits at most two minutes).
pub fn fluxmend<I, S>(args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    fluxmend_within(args, RUN_LIMIT)
}

/// Run the binary; kill it and fail when it takes longer than `limit`.
pub fn fluxmend_within<I, S>(args: I, limit: Duration) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(env!("CARGO_BIN_EXE_fluxmend"));
    command.args(args);
    run_command(command, limit)
}

/// Run the binary in `dir` (text output writes paths relative to the current directory).
pub fn fluxmend_in<I, S>(dir: &Path, args: I) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(env!("CARGO_BIN_EXE_fluxmend"));
    command.args(args).current_dir(dir);
    run_command(command, RUN_LIMIT)
}

/// Text as one line per paragraph: the report wraps detail lines, continuing them indented by six.
pub fn unwrapped(text: &str) -> String {
    text.replace("\n      ", " ")
}

/// Run the binary with `PATH` set to `path` (waits at most two minutes).
pub fn fluxmend_with_path<I, S>(args: I, path: &str) -> Run
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(env!("CARGO_BIN_EXE_fluxmend"));
    command.args(args).env("PATH", path);
    run_command(command, RUN_LIMIT)
}

/// The arguments `COMMAND ROOT REST…`: a subcommand, the repository it runs on, and the rest.
pub fn command_args<'a>(command: &'a str, root: &'a Path, rest: &[&'a str]) -> Vec<&'a OsStr> {
    let mut args = vec![OsStr::new(command), root.as_os_str()];
    args.extend(rest.iter().map(|&a| OsStr::new(a)));
    args
}

fn run_command(mut command: Command, limit: Duration) -> Run {
    let mut child = command
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
            panic!("{command:?} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().expect("stdout reader").expect("stdout is UTF-8"),
        stderr: err.join().expect("stderr reader").expect("stderr is UTF-8"),
    }
}

/// `fix --write` on a copy of `fixtures/<case>/before` writes exactly its `after/` tree, verified
/// by at least the builtin gates. Negative control: `check --rule RULE` finds `rule` in
/// `before/`; `check` (plus `after_check`) of the result neither reports it nor fails; a second
/// `fix` changes nothing.
pub fn assert_fix_writes_after_tree(case: &str, rule: &str, after_check: &[&str]) {
    let repo = TempRepo::copy_of(&fixture(case, "before"));
    let root = repo.path().to_str().unwrap();
    // A finding's headline: `path:line:col: FM001 error: …`.
    let tag = format!(": {rule} ");
    // A move off a pruning layer comes in two phases: `phase1/` is the protected tree, where the
    // finding stands and the move is offered next.
    if fixture(case, "phase1").is_dir() {
        let first = fluxmend(["fix", "--write", root]);
        assert_eq!(first.code, 1, "{case}: {}", first.stderr);
        assert!(
            first.stderr.contains("phase 1 of 2"),
            "{case}: {}",
            first.stderr
        );
        assert_eq!(
            tree(repo.path()),
            tree(&fixture(case, "phase1")),
            "{case}: phase 1 tree differs from phase1/"
        );
        let between = fluxmend(command_args("check", repo.path(), after_check));
        assert!(between.stdout.contains(&tag), "{case}: {}", between.stdout);
        let second = fluxmend(["fix", root]);
        assert!(
            second.stderr.contains("phase 2 of 2"),
            "{case}: {}",
            second.stderr
        );
    }
    let written = fluxmend(["fix", "--write", root]);
    let report = &written.stderr;
    assert_eq!(written.code, 1, "{case}: {report}");
    assert!(report.contains("verified: builtin"), "{case}: {report}");
    assert_eq!(
        tree(repo.path()),
        tree(&fixture(case, "after")),
        "{case}: written tree differs from after/"
    );
    // At `--fail-on note`: a finding the rule reports as a note (an FM005 list that changes
    // nothing) is still one it fixes.
    let before = fluxmend([
        "check",
        fixture(case, "before").to_str().unwrap(),
        "--rule",
        rule,
        "--fail-on",
        "note",
    ]);
    assert_eq!(before.code, 1);
    assert!(before.stdout.contains(&tag), "{case}: {}", before.stdout);
    let after = fluxmend(command_args("check", repo.path(), after_check));
    assert!(!after.stdout.contains(&tag), "{case}: {}", after.stdout);
    assert_eq!(after.code, 0, "{case}: {}", after.stdout);
    let again = fluxmend(["fix", root]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (0, ""),
        "{case}: second run"
    );
}

/// Copy the tree below `from` into `to`: directories, files, and symbolic links as links.
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from).follow_links(false) {
        let entry = entry.expect("walk the tree to copy");
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        let kind = entry.file_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target).expect("mkdir");
        } else if kind.is_symlink() {
            let link = std::fs::read_link(entry.path()).expect("read link");
            copy_link(link, &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A symbolic link at `at` to `link`, as written (the fixtures hold none: only the trees the unix
/// tests build do).
#[cfg(unix)]
fn copy_link(link: PathBuf, at: &Path) {
    std::os::unix::fs::symlink(link, at).expect("copy link");
}

#[cfg(not(unix))]
fn copy_link(link: PathBuf, at: &Path) {
    panic!(
        "cannot copy the symbolic link {} to {}: unix only",
        link.display(),
        at.display()
    );
}

/// Every file below `root`, relative path to bytes; a symbolic link (never followed) maps to its
/// target.
pub fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file() || e.file_type().is_symlink())
        .map(|e| {
            let bytes = if e.file_type().is_symlink() {
                std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
                    .into_bytes()
            } else {
                std::fs::read(e.path()).unwrap()
            };
            (relative(root, e.path()), bytes)
        })
        .collect()
}

/// Every directory below `root`, relative (`root` itself is `""`).
pub fn dirs(root: &Path) -> BTreeSet<String> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_dir())
        .map(|e| relative(root, e.path()))
        .collect()
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The paths whose bytes differ between two [`tree`]s (or that only one has), sorted.
pub fn differing_paths(
    a: &BTreeMap<String, Vec<u8>>,
    b: &BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    a.keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// `git ARGS…` in `dir`; asserts success and returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Commit everything in the work tree at `dir` (a git repository) as the tester.
pub fn commit_all(dir: &Path, message: &str) {
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            message,
        ],
    );
}

/// `dir` made a git repository on `main` whose one commit holds everything in it.
pub fn init_and_commit_all(dir: &Path, message: &str) {
    git(dir, &["init", "-q", "-b", "main"]);
    commit_all(dir, message);
}

/// A git repository holding `fixtures/<case>/before` in one commit on `main`.
pub fn git_repo_with(case: &str) -> TempRepo {
    let repo = TempRepo::copy_of(&fixture(case, "before"));
    init_and_commit_all(repo.path(), "init");
    repo
}

/// `kubectl kustomize DIR --load-restrictor LoadRestrictionsNone` (how Flux builds): its output,
/// or its trimmed stderr when the build fails.
pub fn try_kubectl_kustomize(dir: &Path) -> Result<String, String> {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .args(["--load-restrictor", "LoadRestrictionsNone"])
        .output()
        .expect("kubectl (1.32, kustomize v5.5) must be installed");
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8(out.stdout).expect("kubectl output is UTF-8"))
}

/// [`try_kubectl_kustomize`], asserting that the build succeeds.
pub fn kubectl_kustomize(dir: &Path) -> String {
    try_kubectl_kustomize(dir)
        .unwrap_or_else(|e| panic!("kubectl kustomize {}: {e}", dir.display()))
}

/// Objects in [`TempRepo::flux_layout`]: GitRepository + 3 Flux Kustomizations, the apps layer's
/// Namespace, ConfigMap and Deployment, the infra layer's Namespace.
pub const LAYOUT_OBJECTS: u64 = 8;
/// Layers in [`TempRepo::flux_layout`]: flux-system, apps, infra (all live).
pub const LAYOUT_LAYERS: u64 = 3;
/// YAML files fluxmend reads in [`TempRepo::flux_layout`].
pub const LAYOUT_FILES: u64 = 7;

/// The bootstrap root of `clusters/prod`: GitRepository and Flux Kustomization `flux-system`.
pub const GOTK_SYNC: &str = "\
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

/// A FluxInstance syncing `clusters/prod`: in a `wait: true` layer, an FM001 finding.
pub const FLUX_INSTANCE: &str = "\
apiVersion: fluxcd.controlplane.io/v1
kind: FluxInstance
metadata:
  name: flux
  namespace: flux-system
spec:
  distribution:
    version: \"2.x\"
  sync:
    kind: GitRepository
    url: https://github.com/example/fleet
    ref: refs/heads/main
    path: clusters/prod
";

/// A "billion laughs" ConfigMap `name`: 16 levels of 9 aliases (9^16 leaves when expanded).
pub fn alias_bomb(name: &str) -> String {
    let mut text = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n");
    text.push_str("  a: &a [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n");
    let names: Vec<char> = "abcdefghijklmnopq".chars().collect();
    for pair in names.windows(2) {
        let items = vec![format!("*{}", pair[0]); 9].join(", ");
        text.push_str(&format!("  {}: &{} [{items}]\n", pair[1], pair[1]));
    }
    text
}

/// A temporary directory outside any repository holding `cm.yaml`, a ConfigMap `outside`.
pub fn outside_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(
        dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\n",
    )
    .unwrap();
    dir
}

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

    /// [`TempRepo::flux_layout`] with [`FLUX_INSTANCE`] in `apps/flux.yaml`, listed in the
    /// `wait: true` layer `apps`: one FM001 finding.
    pub fn with_flux_instance() -> Self {
        let repo = TempRepo::flux_layout();
        repo.write("apps/flux.yaml", FLUX_INSTANCE)
            .append("apps/kustomization.yaml", "  - flux.yaml\n");
        repo
    }

    /// [`TempRepo::with_flux_instance`] with the instance already annotated
    /// `kustomize.toolkit.fluxcd.io/prune: disabled`: FM001's fix is then the move itself, in
    /// one step, although `apps` prunes.
    pub fn with_protected_flux_instance() -> Self {
        let repo = TempRepo::with_flux_instance();
        repo.write(
            "apps/flux.yaml",
            FLUX_INSTANCE.replace(
                "  namespace: flux-system\n",
                "  namespace: flux-system\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
            ),
        );
        repo
    }

    /// A copy of the tree below `from` (see [`copy_tree`]).
    pub fn copy_of(from: &Path) -> Self {
        let repo = TempRepo::empty();
        copy_tree(from, repo.path());
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

    /// The text of a file.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Append text to an existing file.
    pub fn append(&self, rel: &str, text: &str) -> &Self {
        let path = self.path().join(rel);
        let mut old = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {rel}: {e}"));
        old.push_str(text);
        std::fs::write(&path, old).expect("append");
        self
    }

    /// Replace `from` by `to` in an existing file; `from` must be there (a test that edits
    /// nothing would pass for the wrong reason).
    pub fn replace(&self, rel: &str, from: &str, to: &str) -> &Self {
        let old = self.read(rel);
        assert!(old.contains(from), "{rel} does not hold {from:?}");
        self.write(rel, old.replacen(from, to, 1))
    }

    /// Create a symbolic link at `rel` pointing at `target` (as written).
    #[cfg(unix)]
    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) -> &Self {
        let link = self.path().join(rel);
        std::fs::create_dir_all(link.parent().expect("parent")).expect("create dirs");
        std::os::unix::fs::symlink(target, &link).unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self
    }

    /// `fluxmend COMMAND PATH REST…`; asserts the process did not panic (exit 0 or 1).
    pub fn run(&self, command: &str, rest: &[&str]) -> Run {
        self.run_within(command, rest, RUN_LIMIT)
    }

    /// [`TempRepo::run`], failing when it takes longer than `limit`.
    pub fn run_within(&self, command: &str, rest: &[&str], limit: Duration) -> Run {
        let run = fluxmend_within(command_args(command, self.path(), rest), limit);
        run.assert_no_panic();
        run
    }

    /// `fluxmend check PATH --format json` (plus `extra` args); asserts the process did not panic.
    pub fn check_json(&self, extra: &[&str]) -> (Run, Value) {
        let run = self.run("check", &[&["--format", "json"][..], extra].concat());
        let json = run.json();
        (run, json)
    }

    /// `fluxmend graph PATH --format json`; asserts success.
    pub fn graph_json(&self) -> Value {
        let run = fluxmend(command_args("graph", self.path(), &["--format", "json"]));
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

/// [`find_diagnostic`], asserting its severity.
pub fn assert_diagnostic<'a>(
    report: &'a Value,
    file: &str,
    needle: &str,
    severity: &str,
) -> &'a Value {
    let diagnostic = find_diagnostic(report, file, needle);
    assert_eq!(diagnostic["severity"], severity, "{diagnostic:#}");
    diagnostic
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

/// One YAML document (canonical text) without the `kustomize.toolkit.fluxcd.io/prune: disabled`
/// annotation a phased move adds (and without `annotations` when that was its only entry), in
/// canonical form: what must equal the document before the move.
pub fn strip_protection(doc: &str) -> String {
    use yaml_rust2::Yaml;
    let mut y = yaml_rust2::YamlLoader::load_from_str(doc)
        .unwrap()
        .remove(0);
    if let Yaml::Hash(root) = &mut y
        && let Some(Yaml::Hash(meta)) = root.get_mut(&Yaml::String("metadata".into()))
    {
        let key = Yaml::String("annotations".into());
        if let Some(Yaml::Hash(a)) = meta.get_mut(&key) {
            let prune = Yaml::String("kustomize.toolkit.fluxcd.io/prune".into());
            if a.get(&prune) == Some(&Yaml::String("disabled".into())) {
                a.remove(&prune);
            }
            if a.is_empty() {
                meta.remove(&key);
            }
        }
    }
    let mut s = String::new();
    yaml_rust2::YamlEmitter::new(&mut s).dump(&y).unwrap();
    s
}

/// `fix` (dry run, paths relative to PATH) on `fixtures/<case>/before`, then — for a move done in
/// two phases — on its `phase1/`: each run with the snapshot-name suffix it is kept under
/// (`""`, `"-phase2"`). Every run must be a diff (exit 1).
pub fn fix_runs(case: &str, extra: &[&str]) -> Vec<(&'static str, Run)> {
    let mut runs = Vec::new();
    for (stage, suffix) in [("before", ""), ("phase1", "-phase2")] {
        let dir = fixture(case, stage);
        if !dir.is_dir() {
            continue;
        }
        // Run inside the tree: the report's paths are then relative to its root.
        let run = fluxmend_in(
            &dir,
            command_args(
                "fix",
                Path::new("."),
                &[extra, &["--diff-prefix", "."]].concat(),
            ),
        );
        assert_eq!(
            run.code, 1,
            "{case}/{stage}: a diff is exit 1\n{}",
            run.stderr
        );
        runs.push((suffix, run));
    }
    runs
}

/// `check PATH --format json`: its exit code and the findings of `rule`.
pub fn rule_findings(root: &Path, rule: &str) -> (i32, Vec<Value>) {
    let run = fluxmend(["check", root.to_str().unwrap(), "--format", "json"]);
    let findings = run.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .cloned()
        .collect();
    (run.code, findings)
}

/// Negative control of a rule: `check` on `fixtures/<case>/before` exits 0 without a `rule`
/// finding.
pub fn assert_no_finding_of(rule: &str, case: &str) {
    let (code, findings) = rule_findings(&fixture(case, "before"), rule);
    assert_eq!(code, 0, "{case}: {findings:#?}");
    assert!(findings.is_empty(), "{case}: {findings:#?}");
}

/// A rule that offers no fix: `fix` on `case` prints no diff and says why, `explain` prints its
/// document (`# ID name`) and `rules` lists it.
pub fn assert_unfixable_and_documented(rule: &str, name: &str, case: &str) {
    let root = fixture(case, "before");
    let fix = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--rule",
        rule,
        "--show-notes",
    ]);
    fix.assert_no_panic();
    assert_eq!(fix.stdout, "", "no diff: {}", fix.stderr);
    assert!(fix.stderr.contains("no fix: "), "{}", fix.stderr);
    let explain = fluxmend(["explain", rule]);
    assert_eq!(explain.code, 0);
    assert!(
        explain.stdout.contains(&format!("# {rule} {name}")),
        "{}",
        explain.stdout
    );
    let rules = fluxmend(["rules"]);
    assert!(rules.stdout.contains(rule), "{}", rules.stdout);
}

/// The first finding of `fix PATH --format json --rule RULE`, and the description of its fix
/// (empty when it has none).
pub fn first_finding_and_fix(root: &Path, rule: &str) -> (Value, String) {
    let report = fluxmend([
        "fix",
        root.to_str().unwrap(),
        "--format",
        "json",
        "--rule",
        rule,
    ])
    .json();
    let finding = report["findings"][0].clone();
    assert_eq!(finding["rule"], rule, "{report}");
    let description = finding["fix"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (finding, description)
}

/// `namespace/name` of a layer of `graph --format json`.
pub fn layer_id(layer: &Value) -> String {
    format!(
        "{}/{}",
        layer["namespace"].as_str().unwrap(),
        layer["name"].as_str().unwrap()
    )
}
