//! The builds: each side's sandbox written to a temporary tree, and every layer variant built
//! there with kustomize, confined.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::load::Repo;
use crate::load::read::read_repo_file;
use crate::model::KUSTOMIZATION_FILE_NAMES;
use crate::parse::Value;
use crate::platform::{self, Network};

use super::overlays::job_kustomization;
use super::plan::LayerKey;
use super::sandbox::{Entry, Job, LayerPlan};
use super::tool::{BuildEnv, Tool};

/// The bytes of every file the plans copy, read from `repo` (the change applied, for the side
/// after it): a parsed YAML file as fluxmend holds it, any other file read safely from disk. A
/// file that cannot be read makes the layers needing it not verified.
pub(super) fn contents(
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
                        Ok(format!("{bom}{}", yaml.text()).into_bytes())
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
pub(super) type Jobs = (Vec<Job>, Vec<(LayerKey, usize)>);

/// Write the files and directories of every plan whose layer is verifiable below `root`.
pub(super) fn write_tree(
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
pub(super) type Built = (Result<Vec<Value>, String>, Network);

/// Run the jobs in one tree: those that only read it concurrently, then the ones that write a
/// kustomization file one at a time.
pub(super) fn run_jobs(
    tool: &Tool,
    root: &Path,
    env: &BuildEnv,
    jobs: &[Job],
) -> Result<Vec<Built>, String> {
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
pub(super) fn build_variant(
    tool: &Tool,
    root: &Path,
    env: &BuildEnv,
    job: &Job,
) -> Result<Built, String> {
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
    let text = match job_kustomization(original.as_deref(), &resources, &job.overlays) {
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
pub(super) struct Build {
    pub(super) layer: LayerKey,
    pub(super) docs: Result<Vec<Value>, String>,
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

/// A temporary directory (0700, random name, in the system temporary directory), removed on
/// drop — also when the gate ends by an error or a signal.
pub(super) struct TempTree {
    pub(super) _dir: tempfile::TempDir,
    pub(super) root: PathBuf,
}

impl TempTree {
    pub(super) fn new() -> Result<TempTree, String> {
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
