//! The kustomize render gate: a second renderer, independent of fluxmend's model. The affected
//! Flux layers are built with a real `kustomize build` (or `kubectl kustomize`) over a temporary
//! copy of the repository, before and after the change, and must render the same multiset of
//! objects with identical content — Flux Kustomization objects of the touched layers excepted,
//! as in the builtin gate.
//!
//! * The copy holds what Flux would ship (the loader's view: `.sourceignore` and Flux's default
//!   ignores honoured, no `.git`, no symbolic links, nothing over the size cap); the user's tree
//!   is only read.
//! * A layer variant is built the way Flux builds it: when its path has no kustomization file,
//!   the one Flux generates (every `.yaml`/`.yml` below, subdirectories with their own
//!   kustomization as directory resources); the layer's `targetNamespace`, `namePrefix`,
//!   `nameSuffix`, `components`, `patches` and `images` written into it, as Flux's generator does.
//! * Affected: every live layer (before or after) whose object is in a changed file, whose
//!   inventory comes through a changed file, whose path holds a changed file, and every new
//!   layer.
//! * Not verified (reported, not a failure): a layer that reaches a remote or out-of-root
//!   resource (fluxmend never fetches), or whose build fails both before and after. Its objects
//!   (as the model knows them) are left out of the comparison.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::emit::apply::{self, FileChange};
use crate::load::{MAX_FILE_BYTES, Repo, parent_of};
use crate::model::{KUSTOMIZATION_FILE_NAMES, Layer, Model, ModelOptions, ObjectKey};
use crate::parse::{Value, YamlFile};

use super::yaml::show;

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

/// A kustomize renderer found on `PATH`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// `kustomize build --load-restrictor LoadRestrictionsNone DIR`
    Kustomize(PathBuf),
    /// `kubectl kustomize DIR --load-restrictor LoadRestrictionsNone`
    Kubectl(PathBuf),
}

impl Tool {
    /// `kustomize`, else `kubectl`, from `PATH`.
    pub fn find() -> Option<Tool> {
        find_on_path("kustomize")
            .map(Tool::Kustomize)
            .or_else(|| find_on_path("kubectl").map(Tool::Kubectl))
    }

    pub fn name(&self) -> &'static str {
        match self {
            Tool::Kustomize(_) => "kustomize build",
            Tool::Kubectl(_) => "kubectl kustomize",
        }
    }

    fn command(&self, dir: &Path) -> Command {
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
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Build `dir`: the rendered documents as data, or why the build failed. The build runs in
    /// its own process group with a memory limit, is killed (group and all) when it exceeds its
    /// time or output limit or when fluxmend is interrupted, and dies with fluxmend.
    fn build(&self, dir: &Path) -> Result<Vec<Value>, String> {
        use std::os::unix::process::CommandExt as _;
        let (timeout, mib) = build_limits();
        let mut command = self.command(dir);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::setpgid(0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let bytes = mib.saturating_mul(1 << 20);
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        if signal::pending() {
            return Err("interrupted".into());
        }
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.name()))?;
        let group = child.id() as libc::pid_t;
        let kill_group = || {
            // SAFETY: signalling the build's own process group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        };
        let out = child.stdout.take().expect("piped");
        let err = child.stderr.take().expect("piped");
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
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if signal::pending() => {
                    kill_group();
                    let _ = child.wait();
                    return Err("interrupted".into());
                }
                Ok(None) if start.elapsed() > timeout => {
                    // (A build printing more than the output limit blocks on its pipe and ends
                    // here too.)
                    kill_group();
                    let _ = child.wait();
                    return Err(exceeded(format!("{} s", seconds(timeout))));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => {
                    kill_group();
                    return Err(e.to_string());
                }
            }
        };
        // Whatever the build left running in its group goes with it.
        kill_group();
        let stdout = out.join().ok().and_then(Result::ok).unwrap_or_default();
        let stderr = err.join().ok().and_then(Result::ok).unwrap_or_default();
        if !status.success() {
            let msg = String::from_utf8_lossy(&stderr);
            if msg.contains("out of memory") || msg.contains("cannot allocate memory") {
                return Err(exceeded(format!("{mib} MiB")));
            }
            if let Some(sig) = std::os::unix::process::ExitStatusExt::signal(&status) {
                return Err(format!("{} was killed by signal {sig}", self.name()));
            }
            // Go's fatal errors end in a stack dump: its first line says what happened.
            let line = msg
                .lines()
                .find(|l| l.starts_with("fatal error:") || l.starts_with("Error:"))
                .or_else(|| msg.trim().lines().last())
                .unwrap_or("failed");
            return Err(line.trim().to_string());
        }
        if stdout.len() as u64 > BUILD_OUTPUT_BYTES {
            return Err(exceeded(format!(
                "{} MiB of output",
                BUILD_OUTPUT_BYTES >> 20
            )));
        }
        let text = String::from_utf8(stdout).map_err(|_| "output is not UTF-8".to_string())?;
        let (yaml, err) = YamlFile::parse(&text);
        if let Some(e) = err {
            return Err(format!("its output does not parse: {e}"));
        }
        yaml.docs
            .iter()
            .map(|d| yaml.value(d.root).map_err(|e| e.to_string()))
            .filter(|v| !matches!(v, Ok(Value::Null)))
            .collect()
    }
}

/// A duration in seconds for messages (`60`, `0.5`).
fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{:.1}", d.as_secs_f64())
    }
}

/// SIGINT and SIGTERM while the gate runs: noted, so that the builds are killed and the
/// temporary trees removed; the signal is raised again once the gate is done.
mod signal {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    static SIGNALLED: AtomicI32 = AtomicI32::new(0);
    /// How many gates run, and the dispositions to restore after the last.
    static ACTIVE: Mutex<(usize, Option<[libc::sigaction; 2]>)> = Mutex::new((0, None));
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    extern "C" fn note(sig: libc::c_int) {
        SIGNALLED.store(sig, Ordering::SeqCst);
    }

    /// Whether a signal arrived: stop and clean up.
    pub fn pending() -> bool {
        SIGNALLED.load(Ordering::SeqCst) != 0
    }

    /// Handlers installed while it lives.
    pub struct Guard;

    impl Guard {
        pub fn new() -> Guard {
            let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
            if active.0 == 0 {
                // SAFETY: installing a handler that only stores to an atomic.
                let saved = SIGNALS.map(|sig| unsafe {
                    let mut new: libc::sigaction = std::mem::zeroed();
                    new.sa_sigaction = note as *const () as libc::sighandler_t;
                    libc::sigemptyset(&mut new.sa_mask);
                    let mut old: libc::sigaction = std::mem::zeroed();
                    libc::sigaction(sig, &new, &mut old);
                    old
                });
                active.1 = Some(saved);
            }
            active.0 += 1;
            Guard
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
            active.0 -= 1;
            if active.0 > 0 {
                return;
            }
            if let Some(saved) = active.1.take() {
                for (sig, old) in SIGNALS.iter().zip(saved) {
                    // SAFETY: restoring the disposition saved above.
                    unsafe { libc::sigaction(*sig, &old, std::ptr::null_mut()) };
                }
            }
            let sig = SIGNALLED.swap(0, Ordering::SeqCst);
            if sig != 0 {
                // The temporary trees are gone (dropped before this guard): die of the signal
                // as the user asked.
                // SAFETY: plain libc calls.
                unsafe {
                    libc::signal(sig, libc::SIG_DFL);
                    libc::raise(sig);
                }
            }
        }
    }
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What the gate checked.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Layer variants built (before and after).
    pub builds: usize,
    /// Rendered objects compared (before the change).
    pub objects: usize,
    /// Layers that could not be checked, and why.
    pub not_verified: Vec<String>,
    /// Layers the change can alter: the ones the gate had to build.
    pub layers: usize,
    /// Of those, the layers kustomize built and compared; the rest are in `not_verified`.
    pub layers_built: usize,
    /// Each affected layer (`namespace/name`), and why it was not built, if it was not.
    pub per_layer: Vec<(String, Option<String>)>,
}

/// (cluster, namespace, name) of a layer.
type LayerKey = (usize, String, String);

fn layer_key(l: &Layer) -> LayerKey {
    (l.cluster, l.id.namespace.clone(), l.id.name.clone())
}

/// Run the gate over one changeset. SIGINT/SIGTERM meanwhile kill the builds, remove the
/// temporary trees, and then end the process by that signal.
pub fn check(
    tool: &Tool,
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    files: &[FileChange],
    allowed: &super::Allowed,
) -> Result<Outcome, String> {
    let _signals = signal::Guard::new();
    let result = check_confined(tool, repo, model, options, files, allowed);
    if signal::pending() {
        return Err("interrupted".into());
    }
    result
}

fn check_confined(
    tool: &Tool,
    repo: &Repo,
    model: &Model,
    options: &ModelOptions,
    files: &[FileChange],
    allowed: &super::Allowed,
) -> Result<Outcome, String> {
    let after_repo = repo.with_changes(&apply::as_overlay(files));
    let after = Model::build(&after_repo, options);
    let changed: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();

    // Touched layers: their Flux Kustomization objects may differ.
    let mut touched: HashSet<LayerKey> = HashSet::default();
    for m in [model, &after] {
        for l in &m.layers {
            let in_changed = l
                .object
                .is_some_and(|o| changed.contains(m.repo.file(m.object(o).file).path.as_str()));
            if in_changed {
                touched.insert(layer_key(l));
            }
        }
    }
    let before_ids: HashSet<LayerKey> = model.layers.iter().map(layer_key).collect();
    touched.extend(
        after
            .layers
            .iter()
            .map(layer_key)
            .filter(|k| !before_ids.contains(k)),
    );

    // Affected layers: what the change can alter.
    let mut affected: BTreeSet<LayerKey> = touched.iter().cloned().collect();
    for m in [model, &after] {
        for (_, l) in m.live_layers() {
            let reads_changed = l.variants.iter().any(|v| {
                changed.iter().any(|p| below(p, &v.dir))
                    || v.inventory.iter().any(|r| {
                        changed.contains(m.repo.file(m.object(r.object).file).path.as_str())
                            || r.chain
                                .iter()
                                .any(|&f| changed.contains(m.repo.file(f).path.as_str()))
                    })
            });
            if reads_changed {
                affected.insert(layer_key(l));
            }
        }
    }

    // Layers that cannot be verified: remote or out-of-root resources.
    let mut outcome = Outcome::default();
    let mut unverifiable: BTreeMap<LayerKey, String> = BTreeMap::new();
    for m in [model, &after] {
        for (_, l) in m.live_layers() {
            if !affected.contains(&layer_key(l)) {
                continue;
            }
            for v in &l.variants {
                if let Some(reason) = unreachable_resource(m, l, &v.dir, v.generated) {
                    unverifiable.entry(layer_key(l)).or_insert(reason);
                }
            }
        }
    }

    // Two copies, before and after, built concurrently.
    let tmp = TempTree::new()?;
    let (before_root, after_root) = (tmp.root.join("before"), tmp.root.join("after"));
    let needed = needed_files(repo, &[model, &after], &affected, &unverifiable);
    copy_repo(repo, &before_root, &needed)?;
    copy_repo(repo, &after_root, &needed)?;
    apply_to_tree(&after_root, files)?;
    let (before_jobs, before_layers) = plan_builds(model, &affected, &unverifiable);
    let (after_jobs, after_layers) = plan_builds(&after, &affected, &unverifiable);
    let (before_docs, after_docs) = std::thread::scope(|s| {
        let b = s.spawn(|| run_jobs(tool, &before_root, &before_jobs));
        let a = run_jobs(tool, &after_root, &after_jobs);
        (
            b.join()
                .unwrap_or_else(|_| Err("a build thread panicked".into())),
            a,
        )
    });
    let (before_docs, after_docs) = (before_docs?, after_docs?);
    outcome.builds = before_jobs.len() + after_jobs.len();
    let assemble = |layers: Vec<(LayerKey, usize)>, docs: &[Result<Vec<Value>, String>]| {
        layers
            .into_iter()
            .map(|(layer, job)| Build {
                layer,
                docs: docs[job].clone(),
            })
            .collect::<Vec<_>>()
    };
    let mut before_builds = assemble(before_layers, &before_docs);
    let mut after_builds = assemble(after_layers, &after_docs);

    // Builds that fail on both sides cannot be verified; failing on one side is a failure.
    let failing: BTreeSet<LayerKey> = before_builds
        .iter()
        .chain(after_builds.iter())
        .filter(|b| b.docs.is_err())
        .map(|b| b.layer.clone())
        .collect();
    for key in failing {
        let err = |builds: &[Build]| {
            builds
                .iter()
                .filter(|b| b.layer == key)
                .find_map(|b| b.docs.as_ref().err().cloned())
        };
        let exists = |builds: &[Build]| builds.iter().any(|b| b.layer == key);
        let runaway = |e: &Option<String>| {
            e.as_ref()
                .filter(|e| e.starts_with("build exceeded"))
                .cloned()
        };
        if let Some(e) = runaway(&err(&before_builds)).or_else(|| runaway(&err(&after_builds))) {
            // A limit says nothing about the change: the layer is not verified, whichever side.
            unverifiable.insert(key.clone(), e);
            continue;
        }
        match (err(&before_builds), err(&after_builds)) {
            (Some(e), Some(_)) => {
                unverifiable.insert(key.clone(), format!("its build fails ({e})"));
            }
            (Some(e), None) if exists(&after_builds) => {
                return Err(format!(
                    "kustomize gate: layer {}/{} fails to build before the change ({e}) but builds after it",
                    key.1, key.2
                ));
            }
            (None, Some(e)) if exists(&before_builds) => {
                return Err(format!(
                    "kustomize gate: layer {}/{} no longer builds: {e}",
                    key.1, key.2
                ));
            }
            (Some(e), None) | (None, Some(e)) => {
                return Err(format!(
                    "kustomize gate: layer {}/{} does not build: {e}",
                    key.1, key.2
                ));
            }
            (None, None) => {}
        }
    }
    before_builds.retain(|b| !unverifiable.contains_key(&b.layer));
    after_builds.retain(|b| !unverifiable.contains_key(&b.layer));

    // Objects of unverifiable layers, as the model knows them, are not compared.
    let mut excluded: HashSet<(usize, String, String, String, String)> = HashSet::default();
    for m in [model, &after] {
        for l in &m.layers {
            if unverifiable.contains_key(&layer_key(l)) {
                for (_, r) in l.inventory() {
                    excluded.insert((
                        l.cluster,
                        r.key.api_version.to_string(),
                        r.key.kind.to_string(),
                        r.key.namespace.as_deref().unwrap_or_default().to_string(),
                        r.key.name.to_string(),
                    ));
                }
            }
        }
    }
    for (key, reason) in &unverifiable {
        outcome
            .not_verified
            .push(format!("layer {}/{}: {reason}", key.1, key.2));
    }
    outcome.layers = affected.len();
    outcome.layers_built = affected
        .iter()
        .filter(|k| !unverifiable.contains_key(*k))
        .count();
    outcome.per_layer = affected
        .iter()
        .map(|k| (format!("{}/{}", k.1, k.2), unverifiable.get(k).cloned()))
        .collect();

    let before_set = multiset(&before_builds, &touched, &excluded, allowed, false);
    let after_set = multiset(&after_builds, &touched, &excluded, allowed, true);
    outcome.objects = before_set.values().map(|(n, _)| n).sum();
    let counts = |m: &Multiset| -> BTreeMap<(usize, Value), usize> {
        m.iter().map(|(k, (n, _))| (k.clone(), *n)).collect()
    };
    if counts(&before_set) != counts(&after_set) {
        return Err(format!(
            "kustomize gate ({}): {}",
            tool.name(),
            describe(&before_set, &after_set)
        ));
    }
    Ok(outcome)
}

/// Whether `path` is `dir` or below it (`""` is the root).
fn below(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Why a build of `dir` could read something outside the repository or fetch something: the
/// first reference of any kustomization it reaches (every one at or below `dir` for a generated
/// variant, and the layer's own `components`) to a URL, an absolute path, a path climbing out of
/// the root, a resource that is not in the repository (kustomize would try it as a remote), or a
/// Helm chart. `None` when every reference stays inside the repository.
fn unreachable_resource(
    model: &Model,
    layer: &Layer,
    dir: &str,
    generated: bool,
) -> Option<String> {
    let mut todo: Vec<String> = if generated {
        model
            .kustomize_dirs
            .keys()
            .filter(|d| below(d, dir))
            .cloned()
            .collect()
    } else {
        vec![dir.to_string()]
    };
    // The Flux Kustomization's own `components`, relative to the layer's path.
    if let Some(obj) = layer.object.map(|o| model.object(o))
        && let Ok(doc) = model.repo.file(obj.file).yaml.value(obj.root)
        && let Some(Value::Seq(items)) = doc.get("spec").and_then(|s| s.get("components"))
    {
        for c in items.iter().filter_map(Value::as_str) {
            match local_ref(model, dir, c, true) {
                Ok(Some(sub)) => todo.push(sub),
                Ok(None) => {}
                Err(why) => return Some(format!("component `{c}` {why}")),
            }
        }
    }
    let mut seen = HashSet::default();
    while let Some(d) = todo.pop() {
        if !seen.insert(d.clone()) {
            continue;
        }
        let Some(k) = model.kustomize_dirs.get(&d) else {
            continue;
        };
        let file = model.repo.file(k.file);
        let Ok(doc) = file.yaml.value(k.root) else {
            continue;
        };
        let mut refs = Vec::new();
        file_refs(&doc, &mut refs);
        for FileRef { field, text, kind } in refs {
            let why = match kind {
                RefKind::Helm => Some("is a Helm chart (never inflated)".to_string()),
                RefKind::Resource | RefKind::File | RefKind::Plugin => {
                    match local_ref(model, &d, &text, kind == RefKind::Resource) {
                        Ok(Some(sub)) => {
                            todo.push(sub);
                            None
                        }
                        Ok(None) if kind == RefKind::Plugin => plugin_refs(model, &d, &text).err(),
                        Ok(None) => None,
                        Err(why) => Some(why),
                    }
                }
            };
            match why {
                Some(why) if kind == RefKind::Resource && why.starts_with("is a URL") => {
                    return Some(format!(
                        "remote resource `{}` (never fetched)",
                        short(&text)
                    ));
                }
                Some(why) if kind == RefKind::Helm => {
                    return Some(format!("{}: `{text}` {why}", file.path));
                }
                Some(why) => {
                    return Some(format!(
                        "{}: `{field}` entry `{}` {why}",
                        file.path,
                        short(&text)
                    ));
                }
                None => {}
            }
        }
    }
    None
}

fn short(s: &str) -> String {
    if s.chars().count() <= 80 {
        s.to_string()
    } else {
        s.chars().take(77).collect::<String>() + "…"
    }
}

/// How kustomize reads a reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefKind {
    /// `resources`, `bases`, `components`: a file, a directory, or else a remote base.
    Resource,
    /// A file read as data (patches, generator files and envs, configurations, crds, openapi).
    File,
    /// A generator, transformer or validator configuration, which may name files itself.
    Plugin,
    /// `helmCharts` and friends.
    Helm,
}

/// One reference of a kustomization to something it reads.
struct FileRef {
    field: &'static str,
    text: String,
    kind: RefKind,
}

/// Every reference of a kustomization (or plugin configuration) document to a file, directory
/// or URL.
fn file_refs(doc: &Value, out: &mut Vec<FileRef>) {
    let Value::Map(entries) = doc else { return };
    let mut push = |field: &'static str, text: &str, kind: RefKind| {
        // Inline documents (generators, patches written in place) are not references.
        if !text.contains('\n') && !text.trim().is_empty() {
            out.push(FileRef {
                field,
                text: text.to_string(),
                kind,
            });
        }
    };
    // Fields that are lists of references, and what each reference is.
    const LISTS: &[(&str, RefKind)] = &[
        ("resources", RefKind::Resource),
        ("bases", RefKind::Resource),
        ("components", RefKind::Resource),
        ("crds", RefKind::File),
        ("configurations", RefKind::File),
        ("patchesStrategicMerge", RefKind::File),
        ("generators", RefKind::Plugin),
        ("transformers", RefKind::Plugin),
        ("validators", RefKind::Plugin),
    ];
    for (k, v) in entries {
        let Some(key) = k.as_str() else { continue };
        if let Some(&(field, kind)) = LISTS.iter().find(|(f, _)| *f == key) {
            for s in v.seq().iter().filter_map(Value::as_str) {
                push(field, s, kind);
            }
            continue;
        }
        match key {
            "helmCharts" | "helmChartInflationGenerator" | "helmGlobals" => {
                push("helmCharts", key, RefKind::Helm);
            }
            "openapi" => {
                if let Some(p) = v.get("path").and_then(Value::as_str) {
                    push("openapi", p, RefKind::File);
                }
            }
            "patches" | "patchesJson6902" | "replacements" => {
                let field = match key {
                    "patches" => "patches",
                    "patchesJson6902" => "patchesJson6902",
                    _ => "replacements",
                };
                for item in v.seq() {
                    if let Some(p) = item.get("path").and_then(Value::as_str) {
                        push(field, p, RefKind::File);
                    }
                }
            }
            "configMapGenerator" | "secretGenerator" => {
                let field = if key == "secretGenerator" {
                    "secretGenerator"
                } else {
                    "configMapGenerator"
                };
                for item in v.seq() {
                    let files = item.get("files").map(Value::seq).unwrap_or_default();
                    for f in files.iter().filter_map(Value::as_str) {
                        // `key=path` names the key; the path is after the first `=`.
                        push(
                            field,
                            f.split_once('=').map_or(f, |(_, p)| p),
                            RefKind::File,
                        );
                    }
                    let envs = item.get("envs").map(Value::seq).unwrap_or_default();
                    for e in envs.iter().filter_map(Value::as_str) {
                        push(field, e, RefKind::File);
                    }
                    if let Some(e) = item.get("env").and_then(Value::as_str) {
                        push(field, e, RefKind::File);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Resolve a reference of the kustomization in `dir`: `Ok(Some(dir))` for a directory to follow
/// (a kustomization), `Ok(None)` for a file in the repository, `Err(why)` for anything that
/// would read outside the repository or fetch. A resource that does not exist is refused too:
/// kustomize would try it as a remote base.
fn local_ref(
    model: &Model,
    dir: &str,
    text: &str,
    resource: bool,
) -> Result<Option<String>, String> {
    let text = text.trim();
    if text.contains("://") || text.starts_with("git@") || text.starts_with("ssh:") {
        return Err("is a URL (never fetched)".into());
    }
    if text.starts_with('/') {
        return Err("is an absolute path outside the repository".into());
    }
    let Some(path) = crate::model::join(dir, text.trim_start_matches("./")) else {
        return Err("leaves the repository root".into());
    };
    if model.repo.is_dir(&path) {
        return Ok(Some(path));
    }
    if model.repo.is_file(&path) || !resource {
        // A missing data file fails the build inside the copy, which holds only the repository.
        return Ok(None);
    }
    Err("is not in the repository (kustomize would try to fetch it)".into())
}

/// A plugin configuration file names files too (`files`, `envs`, `env`, `path`): each must stay
/// inside the repository.
fn plugin_refs(model: &Model, dir: &str, text: &str) -> Result<(), String> {
    let Some(path) = crate::model::join(dir, text.trim().trim_start_matches("./")) else {
        return Ok(());
    };
    let Some(id) = model.repo.file_id(&path) else {
        return Ok(());
    };
    let yaml = &model.repo.file(id).yaml;
    for d in &yaml.docs {
        let Ok(doc) = yaml.value(d.root) else {
            continue;
        };
        let mut found = Vec::new();
        nested_paths(&doc, &mut found);
        for p in found {
            if let Err(why) = local_ref(model, dir, &p, false) {
                return Err(format!(
                    "names `{}`, which {}",
                    short(&p),
                    why.trim_start_matches("is ")
                ));
            }
        }
    }
    Ok(())
}

/// Strings under `files`, `envs`, `env`, `path` keys anywhere in a document.
fn nested_paths(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Map(entries) => {
            for (k, x) in entries {
                match (k.as_str(), x) {
                    (Some("files" | "envs" | "env" | "path"), Value::Str(s, _)) => {
                        out.push(s.split_once('=').map_or(s.as_str(), |(_, p)| p).to_string());
                    }
                    (Some("files" | "envs"), Value::Seq(items)) => {
                        for s in items.iter().filter_map(Value::as_str) {
                            out.push(s.split_once('=').map_or(s, |(_, p)| p).to_string());
                        }
                    }
                    _ => nested_paths(x, out),
                }
            }
        }
        Value::Seq(items) => items.iter().for_each(|i| nested_paths(i, out)),
        _ => {}
    }
}

/// The rendered documents of one layer variant.
struct Build {
    layer: LayerKey,
    docs: Result<Vec<Value>, String>,
}

/// One directory to build: the variant directory, whether Flux generates its kustomization, and
/// the Flux overlays to add.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Job {
    dir: String,
    generated: bool,
    overlays: String,
}

impl Job {
    /// Whether building it writes into the tree (so it cannot run beside other builds).
    fn writes(&self) -> bool {
        self.generated || !self.overlays.is_empty()
    }
}

/// The builds of every variant of every affected, verifiable live layer of `model`: the distinct
/// jobs, and (layer, job index) per variant.
fn plan_builds(
    model: &Model,
    affected: &BTreeSet<LayerKey>,
    unverifiable: &BTreeMap<LayerKey, String>,
) -> (Vec<Job>, Vec<(LayerKey, usize)>) {
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: HashMap<Job, usize> = HashMap::default();
    let mut layers = Vec::new();
    for (_, l) in model.live_layers() {
        let key = layer_key(l);
        if !affected.contains(&key) || unverifiable.contains_key(&key) {
            continue;
        }
        let overlays = flux_overlays(model, l);
        for v in &l.variants {
            let job = Job {
                dir: v.dir.clone(),
                generated: v.generated,
                overlays: overlays.clone(),
            };
            let i = *index.entry(job.clone()).or_insert_with(|| {
                jobs.push(job);
                jobs.len() - 1
            });
            layers.push((key.clone(), i));
        }
    }
    (jobs, layers)
}

/// Run the jobs in one copied tree: those that only read it concurrently, then the ones that
/// write a kustomization file one at a time.
fn run_jobs(
    tool: &Tool,
    root: &Path,
    jobs: &[Job],
) -> Result<Vec<Result<Vec<Value>, String>>, String> {
    let mut out: Vec<Option<Result<Vec<Value>, String>>> = vec![None; jobs.len()];
    let readers: Vec<usize> = (0..jobs.len()).filter(|&i| !jobs[i].writes()).collect();
    let width = std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8));
    for chunk in readers.chunks(width) {
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&i| s.spawn(move || build_variant(tool, root, &jobs[i])))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("a build thread panicked".into()))
                })
                .collect()
        });
        for (&i, r) in chunk.iter().zip(results) {
            out[i] = Some(r?);
        }
    }
    for i in (0..jobs.len()).filter(|&i| jobs[i].writes()) {
        out[i] = Some(build_variant(tool, root, &jobs[i])?);
    }
    Ok(out.into_iter().map(|r| r.expect("every job ran")).collect())
}

/// Build one directory of the copied tree as Flux would: write the kustomization Flux generates
/// (or add the layer's overlays to the existing one), build, and put the directory back.
fn build_variant(
    tool: &Tool,
    root: &Path,
    job: &Job,
) -> Result<Result<Vec<Value>, String>, String> {
    let (dir, generated, overlays) = (job.dir.as_str(), job.generated, job.overlays.as_str());
    let abs = if dir.is_empty() {
        root.to_path_buf()
    } else {
        root.join(dir)
    };
    if !abs.is_dir() {
        return Ok(Err(format!("{dir} does not exist")));
    }
    let existing = KUSTOMIZATION_FILE_NAMES
        .iter()
        .map(|n| abs.join(n))
        .find(|p| p.is_file());
    let (file, base) = match (&existing, generated) {
        (Some(file), false) => (file.clone(), None),
        _ => {
            let resources = generated_resources(&abs);
            let mut text =
                String::from("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n");
            if resources.is_empty() {
                text.push_str("resources: []\n");
            } else {
                text.push_str("resources:\n");
            }
            for r in &resources {
                let _ = writeln!(text, "- {}", json_string(r));
            }
            (abs.join("kustomization.yaml"), Some(text))
        }
    };
    let original = std::fs::read(&file).ok();
    let mut text = match &base {
        Some(generated) => Some(generated.clone()),
        None => original
            .as_ref()
            .map(|b| String::from_utf8_lossy(b).into_owned()),
    };
    if !overlays.is_empty() {
        match merge_overlays(text.as_deref().unwrap_or_default(), overlays) {
            Ok(merged) => text = Some(merged),
            Err(e) => return Ok(Err(e)),
        }
    }
    let write = base.is_some() || !overlays.is_empty();
    if write {
        private_write(&file, text.unwrap_or_default().as_bytes())?;
    }
    let result = tool.build(&abs);
    if write {
        match &original {
            Some(bytes) => private_write(&file, bytes),
            None => std::fs::remove_file(&file).map_err(|e| e.to_string()),
        }?;
    }
    Ok(result)
}

/// The `resources` of the kustomization Flux generates for `dir`: every `.yaml`/`.yml` below
/// it in walk order, and each subdirectory that has a kustomization file as a directory
/// resource (not descended into).
fn generated_resources(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter();
    while let Some(Ok(entry)) = walk.next() {
        if entry.depth() == 0 {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(dir)
            .expect("below")
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if entry.file_type().is_dir() {
            if KUSTOMIZATION_FILE_NAMES
                .iter()
                .any(|n| entry.path().join(n).is_file())
            {
                out.push(rel);
                walk.skip_current_dir();
            }
        } else if rel.ends_with(".yaml") || rel.ends_with(".yml") {
            out.push(rel);
        }
    }
    out
}

/// What a Flux Kustomization layers on top of the build, as top-level kustomization fields in
/// JSON (one per line; empty when there is nothing).
fn flux_overlays(model: &Model, layer: &Layer) -> String {
    let Some(obj) = layer.object.map(|o| model.object(o)) else {
        return String::new();
    };
    let Ok(doc) = model.repo.file(obj.file).yaml.value(obj.root) else {
        return String::new();
    };
    let Some(spec) = doc.get("spec") else {
        return String::new();
    };
    let mut out = String::new();
    for (flux, kustomize) in [
        ("targetNamespace", "namespace"),
        ("namePrefix", "namePrefix"),
        ("nameSuffix", "nameSuffix"),
    ] {
        if let Some(v) = spec.str_at(&[flux]).filter(|s| !s.is_empty()) {
            let _ = writeln!(out, "{kustomize}: {}", json_string(v));
        }
    }
    for key in ["components", "patches", "images"] {
        if let Some(v @ Value::Seq(items)) = spec.get(key)
            && !items.is_empty()
        {
            let _ = writeln!(out, "{key}: {}", to_json(v));
        }
    }
    out
}

/// Add the overlay fields to a kustomization: a field the file already has is replaced
/// (`namespace`, prefixes) or extended (`components`, `patches`, `images`).
fn merge_overlays(base: &str, overlays: &str) -> Result<String, String> {
    let (yaml, err) = YamlFile::parse(base);
    if err.is_some() || yaml.docs.is_empty() {
        return Err("the kustomization file does not parse".into());
    }
    let root = yaml.docs[0].root;
    let doc = yaml
        .value(root)
        .map_err(|e| format!("the kustomization file: {e}"))?;
    let Value::Map(mut entries) = doc else {
        return Err("the kustomization file is not a mapping".into());
    };
    let (extra, _) = YamlFile::parse(overlays);
    let Some(Value::Map(add)) = extra.docs.first().and_then(|d| extra.value(d.root).ok()) else {
        return Err("overlays".into());
    };
    for (k, v) in add {
        match entries.iter_mut().find(|(ek, _)| *ek == k) {
            Some((_, Value::Seq(existing))) if matches!(v, Value::Seq(_)) => {
                existing.extend(v.seq().iter().cloned());
            }
            Some((_, slot)) => *slot = v,
            None => entries.push((k, v)),
        }
    }
    Ok(to_json(&Value::Map(entries)) + "\n")
}

/// JSON (which YAML reads as the same data) for a value: plain scalars keep YAML's core-schema
/// types (numbers, booleans, null), quoted ones are strings.
fn to_json(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Str(s, true) => json_string(s),
        Value::Str(s, false) => {
            let is_number = s.parse::<i64>().is_ok()
                || (s.parse::<f64>().is_ok_and(f64::is_finite)
                    && s.chars().all(|c| c.is_ascii_digit() || ".-+eE".contains(c))
                    && s.chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit() || c == '-'));
            if is_number || s == "true" || s == "false" {
                s.clone()
            } else {
                json_string(s)
            }
        }
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(to_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!(
                    "{}: {}",
                    json_string(&match k {
                        Value::Str(s, _) => s.clone(),
                        other => to_json(other),
                    }),
                    to_json(v)
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string is JSON")
}

/// (cluster, document) → how often the affected layers render it.
type Multiset = BTreeMap<(usize, Value), (usize, BTreeSet<String>)>;

fn multiset(
    builds: &[Build],
    touched: &HashSet<LayerKey>,
    excluded: &HashSet<(usize, String, String, String, String)>,
    allowed: &super::Allowed,
    after: bool,
) -> Multiset {
    let mut out: Multiset = BTreeMap::new();
    for b in builds {
        let Ok(docs) = &b.docs else { continue };
        for d in docs {
            let s = |keys: &[&str]| d.str_at(keys).unwrap_or_default().to_string();
            let (api, kind, ns, name) = (
                s(&["apiVersion"]),
                s(&["kind"]),
                s(&["metadata", "namespace"]),
                s(&["metadata", "name"]),
            );
            let flux_layer = kind == "Kustomization"
                && api.starts_with("kustomize.toolkit.fluxcd.io/")
                && touched.iter().any(|(c, lns, lname)| {
                    *c == b.layer.0 && *lname == name && (ns.is_empty() || *lns == ns)
                });
            let key = ObjectKey {
                api_version: api.as_str().into(),
                kind: kind.as_str().into(),
                namespace: (!ns.is_empty()).then(|| ns.as_str().into()),
                name: name.as_str().into(),
            };
            if flux_layer || excluded.contains(&(b.layer.0, api, kind, ns, name)) {
                continue;
            }
            let doc = allowed.content(&key, d.clone(), after);
            let entry = out
                .entry((b.layer.0, doc))
                .or_insert_with(|| (0, BTreeSet::new()));
            entry.0 += 1;
            entry.1.insert(format!("{}/{}", b.layer.1, b.layer.2));
        }
    }
    out
}

fn identity(v: &Value) -> String {
    let s = |keys: &[&str]| v.str_at(keys).unwrap_or_default().to_string();
    let ns = s(&["metadata", "namespace"]);
    format!(
        "{} {}{}",
        s(&["kind"]),
        if ns.is_empty() {
            String::new()
        } else {
            format!("{ns}/")
        },
        s(&["metadata", "name"])
    )
}

/// Which object changed, and how.
fn describe(before: &Multiset, after: &Multiset) -> String {
    let only = |a: &Multiset, b: &Multiset| -> Vec<(usize, Value, usize, BTreeSet<String>)> {
        a.iter()
            .filter_map(|((c, v), (n, layers))| {
                let other = b.get(&(*c, v.clone())).map_or(0, |(m, _)| *m);
                (*n > other).then(|| (*c, v.clone(), n - other, layers.clone()))
            })
            .collect()
    };
    let gone = only(before, after);
    let new = only(after, before);
    let layers = |l: &BTreeSet<String>| l.iter().cloned().collect::<Vec<_>>().join(", ");
    let mut lines = Vec::new();
    let mut used = vec![false; new.len()];
    for (c, v, n, ls) in &gone {
        let same_kind_name = |w: &Value| {
            w.str_at(&["kind"]) == v.str_at(&["kind"])
                && w.str_at(&["metadata", "name"]) == v.str_at(&["metadata", "name"])
        };
        match new
            .iter()
            .enumerate()
            .find(|(i, (c2, w, _, _))| !used[*i] && c2 == c && same_kind_name(w))
        {
            Some((i, (_, w, _, ls2))) => {
                used[i] = true;
                lines.push(format!(
                    "{} (layer {}) changes: {}",
                    identity(v),
                    layers(ls),
                    first_difference(v, w, "")
                        .map(|(p, a, b)| format!("{p}: {} → {}", shown(&a), shown(&b)))
                        .unwrap_or_else(|| "its content differs".into()),
                ));
                let _ = ls2;
            }
            None => lines.push(format!(
                "{} is rendered {n} time(s) fewer after the change (was in layer {})",
                identity(v),
                layers(ls)
            )),
        }
    }
    for (i, (_, v, n, ls)) in new.iter().enumerate() {
        if !used[i] {
            lines.push(format!(
                "{} is rendered {n} more time(s) after the change (layer {})",
                identity(v),
                layers(ls)
            ));
        }
    }
    lines.truncate(5);
    lines.join("; ")
}

fn shown(v: &Option<Value>) -> String {
    v.as_ref().map_or("(absent)".into(), show)
}

/// The first path where two values differ: (path, before, after).
fn first_difference(
    a: &Value,
    b: &Value,
    path: &str,
) -> Option<(String, Option<Value>, Option<Value>)> {
    if a == b {
        return None;
    }
    let join = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Map(x), Value::Map(y)) => {
            for (k, v) in x {
                let key = k.as_str().unwrap_or("?");
                match y.iter().find(|(k2, _)| k2 == k) {
                    Some((_, w)) => {
                        if let Some(d) = first_difference(v, w, &join(key)) {
                            return Some(d);
                        }
                    }
                    None => return Some((join(key), Some(v.clone()), None)),
                }
            }
            y.iter()
                .find(|(k, _)| !x.iter().any(|(k2, _)| k2 == k))
                .map(|(k, w)| (join(k.as_str().unwrap_or("?")), None, Some(w.clone())))
        }
        (Value::Seq(x), Value::Seq(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (v, w))| first_difference(v, w, &format!("{path}[{i}]"))),
        _ => Some((
            if path.is_empty() {
                ".".into()
            } else {
                path.into()
            },
            Some(a.clone()),
            Some(b.clone()),
        )),
    }
}

/// A temporary directory (0700, random name, in the system temporary directory), removed on
/// drop — also when the gate ends by an error or a signal.
struct TempTree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl TempTree {
    fn new() -> Result<TempTree, String> {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::Builder::new()
            .prefix("fluxmend-verify-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| {
                format!(
                    "cannot create a temporary directory in {}: {e}",
                    std::env::temp_dir().display()
                )
            })?;
        let root = dir.path().to_path_buf();
        Ok(TempTree { _dir: dir, root })
    }
}

/// Make `dir` and its missing parents, owner-only (0700): the copies can hold Secrets.
fn private_dirs(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("creating {}: {e}", dir.display()))
}

/// Write a file of the copy, owner-only (0600), never through a link.
fn private_write(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The files the builds of the affected layers can read: everything below a generated variant
/// directory; for every kustomization reached, the files of its directory and every file or
/// directory any of its string values names (resources, components, patches, generator files…),
/// followed recursively.
fn needed_files(
    repo: &Repo,
    models: &[&Model],
    affected: &BTreeSet<LayerKey>,
    unverifiable: &BTreeMap<LayerKey, String>,
) -> BTreeSet<String> {
    let all: Vec<&str> = repo
        .files
        .iter()
        .map(|f| f.path.as_str())
        .chain(repo.other_files())
        .collect();
    let mut by_dir: HashMap<&str, Vec<&str>> = HashMap::default();
    for p in &all {
        by_dir.entry(parent_of(p)).or_default().push(p);
    }
    let mut files: BTreeSet<String> = BTreeSet::new();
    let mut todo: Vec<String> = Vec::new();
    for m in models {
        for (_, l) in m.live_layers() {
            let key = layer_key(l);
            if !affected.contains(&key) || unverifiable.contains_key(&key) {
                continue;
            }
            for v in &l.variants {
                if v.generated {
                    files.extend(
                        all.iter()
                            .filter(|p| below(p, &v.dir))
                            .map(|p| p.to_string()),
                    );
                    todo.extend(
                        m.kustomize_dirs
                            .keys()
                            .filter(|d| below(d, &v.dir))
                            .cloned(),
                    );
                } else {
                    todo.push(v.dir.clone());
                }
            }
        }
    }
    let mut done: HashSet<String> = HashSet::default();
    while let Some(dir) = todo.pop() {
        if !done.insert(dir.clone()) {
            continue;
        }
        files.extend(
            by_dir
                .get(dir.as_str())
                .into_iter()
                .flatten()
                .map(|p| p.to_string()),
        );
        let mut strings = Vec::new();
        for m in models {
            let Some(k) = m.kustomize_dirs.get(&dir) else {
                continue;
            };
            if let Ok(doc) = m.repo.file(k.file).yaml.value(k.root) {
                collect_strings(&doc, &mut strings);
            }
        }
        for s in strings {
            // Only what names an existing path counts (URLs, globs and plain values do not).
            let Some(path) = crate::model::join(&dir, s.trim_start_matches("./")) else {
                continue;
            };
            if repo.is_dir(&path) {
                todo.push(path);
            } else if repo.is_file(&path) {
                files.insert(path);
            }
        }
    }
    files
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Str(s, _) if !s.contains('\n') && !s.is_empty() => out.push(s.clone()),
        Value::Seq(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, x)| collect_strings(x, out)),
        _ => {}
    }
}

/// Copy `only` (paths in the loader's view: what Flux would ship) into `to`; only regular files
/// are read, and nothing is ever written below the repository root.
fn copy_repo(repo: &Repo, to: &Path, only: &BTreeSet<String>) -> Result<(), String> {
    let mut made: HashSet<String> = HashSet::default();
    for rel in only.iter().map(String::as_str) {
        let src = repo.root.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue;
        };
        if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
            continue;
        }
        let parent = parent_of(rel);
        if made.insert(parent.to_string()) {
            private_dirs(&to.join(parent))?;
        }
        let bytes = read_no_follow(&src).map_err(|e| format!("reading {}: {e}", src.display()))?;
        private_write(&to.join(rel), &bytes)?;
    }
    Ok(())
}

/// A regular file's bytes, refusing a symbolic link (which the loader never follows either).
fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    let mut bytes = Vec::new();
    f.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Apply a changeset to the copied tree.
fn apply_to_tree(root: &Path, files: &[FileChange]) -> Result<(), String> {
    for f in files {
        if f.path.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(format!("unsafe path {}", f.path));
        }
        let target = root.join(&f.path);
        match &f.after {
            Some(text) => {
                private_dirs(target.parent().expect("below the root"))?;
                private_write(&target, text.as_bytes())?;
            }
            None => {
                let _ = std::fs::remove_file(&target);
            }
        }
    }
    Ok(())
}
