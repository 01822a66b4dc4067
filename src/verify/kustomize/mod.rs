//! The kustomize render gate: a second renderer, independent of fluxmend's model. The affected
//! Flux layers are built with a real `kustomize build` (or `kubectl kustomize`) in a sandbox,
//! before and after the change, and must render the same multiset of objects with identical
//! content — Flux Kustomization objects of the touched layers excepted, as in the builtin gate.
//!
//! * The sandbox ([`sandbox`]) holds only what fluxmend read: every kustomization and plugin
//!   configuration the builds reach, read as kustomize reads it ([`kustfile`]) and written back
//!   as canonical JSON, and the files the builds read as data, read safely from the repository
//!   (the loader's view: Flux's ignore rules, no link, nothing over the size limit). The user's
//!   tree is only read.
//! * A layer variant is built the way Flux builds it: when its path has no kustomization file,
//!   the one Flux generates (every `.yaml`/`.yml` below, subdirectories with their own
//!   kustomization as directory resources); the layer's `targetNamespace`, `namePrefix`,
//!   `nameSuffix`, `components`, `patches` and `images` written into it, as Flux's generator does.
//! * Each build runs confined, in an environment of its own ([`tool`]).
//! * Affected: every live layer (before or after) whose object is in a changed file, whose
//!   inventory comes through a changed file, whose path holds a changed file, and every new
//!   layer.
//! * Not verified (reported, not a failure): a layer whose build would reach a URL, a git
//!   repository, anything outside the repository, or anything fluxmend cannot read exactly as
//!   kustomize does; or whose build fails both before and after. Its objects (as the model
//!   knows them) are left out of the comparison.
//!
//! Each file has one job and imports only the files listed after it: `sandbox` (the sandbox's
//! files), `kustfile` (a kustomization or plugin configuration read as kustomize reads it),
//! `schema` (the fields kustomize knows), `go_yaml` (scalars and tags as go-yaml v2 reads them),
//! `tool` (running kustomize or kubectl confined).

mod go_yaml;
mod kustfile;
mod sandbox;
mod schema;
mod tool;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::changes::{self, FileChange};
use crate::load::Repo;
use crate::load::read::read_repo_file;
use crate::model::{KUSTOMIZATION_FILE_NAMES, Layer, Model, ModelOptions, ObjectKey};
use crate::parse::Value;
use crate::platform::{self, Network};

use super::yaml::show;
use sandbox::{Entry, Job, LayerPlan};
use tool::BuildEnv;
pub use tool::Tool;

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
    /// Why the builds could reach the network, when no network namespace could be made.
    pub network: Option<String>,
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
    let _signals = platform::SignalGuard::new();
    let result = check_confined(tool, repo, model, options, files, allowed);
    if platform::interrupted() {
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
    let after_repo = repo.with_changes(&changes::as_overlay(files));
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

    // Each side's sandbox, per affected layer: what cannot be read as kustomize reads it, or
    // would be fetched or read from outside, makes the layer not verified.
    let mut outcome = Outcome::default();
    let mut unverifiable: BTreeMap<LayerKey, String> = BTreeMap::new();
    let mut plans = |r: &Repo, m: &Model| -> Vec<(LayerKey, LayerPlan)> {
        let mut out = Vec::new();
        for (_, l) in m.live_layers() {
            let key = layer_key(l);
            if !affected.contains(&key) {
                continue;
            }
            match sandbox::plan_layer(r, m, l) {
                Ok(plan) => out.push((key, plan)),
                Err(why) => {
                    unverifiable.entry(key).or_insert(why);
                }
            }
        }
        out
    };
    let before_plans = plans(repo, model);
    let after_plans = plans(&after_repo, &after);
    let before_files = contents(repo, &before_plans, &mut unverifiable);
    let after_files = contents(&after_repo, &after_plans, &mut unverifiable);

    // Two trees, before and after, built concurrently.
    let tmp = TempTree::new()?;
    let (before_root, after_root) = (tmp.root.join("before"), tmp.root.join("after"));
    let env = BuildEnv::create(&tmp.root)
        .map_err(|e| format!("creating the builds' home in {}: {e}", tmp.root.display()))?;
    let (before_jobs, before_layers) =
        write_tree(&before_root, &before_plans, &before_files, &unverifiable)?;
    let (after_jobs, after_layers) =
        write_tree(&after_root, &after_plans, &after_files, &unverifiable)?;
    let (before_built, after_built) = std::thread::scope(|s| {
        let b = s.spawn(|| run_jobs(tool, &before_root, &env, &before_jobs));
        let a = run_jobs(tool, &after_root, &env, &after_jobs);
        (
            b.join()
                .unwrap_or_else(|_| Err("a build thread panicked".into())),
            a,
        )
    });
    let (before_built, after_built) = (before_built?, after_built?);
    outcome.builds = before_jobs.len() + after_jobs.len();
    outcome.network =
        before_built
            .iter()
            .chain(&after_built)
            .find_map(|(_, network)| match network {
                Network::Reachable(why) => Some(why.clone()),
                Network::Isolated => None,
            });
    let assemble = |layers: Vec<(LayerKey, usize)>,
                    built: &[(Result<Vec<Value>, String>, Network)]| {
        layers
            .into_iter()
            .map(|(layer, job)| Build {
                layer,
                docs: built[job].0.clone(),
            })
            .collect::<Vec<_>>()
    };
    let mut before_builds = assemble(before_layers, &before_built);
    let mut after_builds = assemble(after_layers, &after_built);

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

/// The bytes of every file the plans copy, read from `repo` (the change applied, for the side
/// after it): a parsed YAML file as fluxmend holds it, any other file read safely from disk. A
/// file that cannot be read makes the layers needing it not verified.
fn contents(
    repo: &Repo,
    plans: &[(LayerKey, LayerPlan)],
    unverifiable: &mut BTreeMap<LayerKey, String>,
) -> HashMap<String, Vec<u8>> {
    let mut out: HashMap<String, Vec<u8>> = HashMap::default();
    for (key, plan) in plans {
        for (path, entry) in &plan.files {
            let bytes = match entry {
                Entry::Written(text) => Ok(text.as_bytes().to_vec()),
                Entry::Copied if out.contains_key(path) => continue,
                Entry::Copied => match repo.file_id(path) {
                    Some(id) => {
                        let yaml = &repo.file(id).yaml;
                        let bom = if yaml.bom { "\u{feff}" } else { "" };
                        Ok(format!("{bom}{}", yaml.text).into_bytes())
                    }
                    None => read_repo_file(&repo.root, path)
                        .map_err(|e| format!("cannot read {path}: {e}")),
                },
            };
            match bytes {
                Ok(bytes) => match out.get(path) {
                    Some(existing) if *existing != bytes => {
                        unverifiable.entry(key.clone()).or_insert_with(|| {
                            format!("{path} is read both as data and as a kustomization or plugin configuration")
                        });
                    }
                    Some(_) => {}
                    None => {
                        out.insert(path.clone(), bytes);
                    }
                },
                Err(why) => {
                    unverifiable.entry(key.clone()).or_insert(why);
                }
            }
        }
    }
    out
}

/// The distinct jobs of one tree, and (layer, job index) per variant.
type Jobs = (Vec<Job>, Vec<(LayerKey, usize)>);

/// Write the files and directories of every plan whose layer is verifiable below `root`.
fn write_tree(
    root: &Path,
    plans: &[(LayerKey, LayerPlan)],
    files: &HashMap<String, Vec<u8>>,
    unverifiable: &BTreeMap<LayerKey, String>,
) -> Result<Jobs, String> {
    let mut jobs: Vec<Job> = Vec::new();
    let mut index: HashMap<Job, usize> = HashMap::default();
    let mut layers = Vec::new();
    let mut written: HashSet<&str> = HashSet::default();
    let mut made: HashSet<PathBuf> = HashSet::default();
    let mut dir = |path: PathBuf| -> Result<(), String> {
        if made.insert(path.clone()) {
            platform::private_dirs(&path)
                .map_err(|e| format!("creating {}: {e}", path.display()))?;
        }
        Ok(())
    };
    dir(root.to_path_buf())?;
    for (key, plan) in plans {
        if unverifiable.contains_key(key) {
            continue;
        }
        for d in &plan.dirs {
            dir(root.join(d))?;
        }
        for path in plan.files.keys() {
            if !written.insert(path.as_str()) {
                continue;
            }
            let target = root.join(path);
            dir(target.parent().expect("below the root").to_path_buf())?;
            let bytes = files.get(path).expect("every planned file has its content");
            platform::private_write(&target, bytes)
                .map_err(|e| format!("writing {}: {e}", target.display()))?;
        }
        for job in &plan.jobs {
            let i = *index.entry(job.clone()).or_insert_with(|| {
                jobs.push(job.clone());
                jobs.len() - 1
            });
            layers.push((key.clone(), i));
        }
    }
    Ok((jobs, layers))
}

/// What one job gave.
type Built = (Result<Vec<Value>, String>, Network);

/// Run the jobs in one tree: those that only read it concurrently, then the ones that write a
/// kustomization file one at a time.
fn run_jobs(tool: &Tool, root: &Path, env: &BuildEnv, jobs: &[Job]) -> Result<Vec<Built>, String> {
    let mut out: Vec<Option<Built>> = vec![None; jobs.len()];
    let readers: Vec<usize> = (0..jobs.len()).filter(|&i| !jobs[i].writes()).collect();
    let width = std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8));
    for chunk in readers.chunks(width) {
        let results: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&i| s.spawn(move || build_variant(tool, root, env, &jobs[i])))
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
        out[i] = Some(build_variant(tool, root, env, &jobs[i])?);
    }
    Ok(out.into_iter().map(|r| r.expect("every job ran")).collect())
}

/// Build one directory of the tree as Flux would: write the kustomization Flux generates (or
/// add the layer's overlays to the directory's own), build, and put the directory back.
fn build_variant(tool: &Tool, root: &Path, env: &BuildEnv, job: &Job) -> Result<Built, String> {
    let abs = if job.dir.is_empty() {
        root.to_path_buf()
    } else {
        root.join(&job.dir)
    };
    let existing = KUSTOMIZATION_FILE_NAMES
        .iter()
        .map(|n| abs.join(n))
        .find(|p| p.is_file());
    if !job.writes() {
        let built = tool.build(&abs, env);
        return Ok((built.docs, built.network));
    }
    let (file, original) = match (&existing, job.generated) {
        (Some(file), false) => (
            file.clone(),
            Some(
                std::fs::read_to_string(file)
                    .map_err(|e| format!("reading {}: {e}", file.display()))?,
            ),
        ),
        _ => (abs.join("kustomization.yaml"), None),
    };
    let resources = if job.generated {
        generated_resources(&abs)
    } else {
        Vec::new()
    };
    let text = match sandbox::job_kustomization(original.as_deref(), &resources, &job.overlays) {
        Ok(text) => text,
        Err(e) => return Ok((Err(e), Network::Reachable("not run".into()))),
    };
    let write = |bytes: &[u8]| {
        platform::private_write(&file, bytes)
            .map_err(|e| format!("writing {}: {e}", file.display()))
    };
    write(text.as_bytes())?;
    let built = tool.build(&abs, env);
    match &original {
        Some(text) => write(text.as_bytes())?,
        None => std::fs::remove_file(&file).map_err(|e| e.to_string())?,
    }
    Ok((built.docs, built.network))
}

/// The rendered documents of one layer variant.
struct Build {
    layer: LayerKey,
    docs: Result<Vec<Value>, String>,
}

/// The `resources` of the kustomization Flux generates for `dir`: every `.yaml`/`.yml` below
/// it in walk order, and each subdirectory that has a kustomization file as a directory
/// resource (not descended into). Public for the tests that build fixtures as Flux does.
pub fn generated_resources(dir: &Path) -> Vec<String> {
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
        let dir = platform::private_temp_dir("fluxmend-verify-").map_err(|e| {
            format!(
                "cannot create a temporary directory in {}: {e}",
                std::env::temp_dir().display()
            )
        })?;
        let root = dir.path().to_path_buf();
        Ok(TempTree { _dir: dir, root })
    }
}
