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
//! Each file has one job and imports only the files listed after it: `compare` (each side's
//! objects as a multiset, the first difference), `build` (the temporary trees, each variant
//! built), `plan` (the layers a change touches and affects), `sandbox` (the sandbox's files),
//! `overlays` (what the Flux Kustomization adds to a build), `kustfile` (a kustomization or
//! plugin configuration read as kustomize reads it, its canonical text), `schema` (the fields
//! kustomize knows), `go_yaml` (scalars and tags as go-yaml v2 reads them), `tool` (running
//! kustomize or kubectl confined).

mod build;
mod compare;
mod go_yaml;
mod kustfile;
mod overlays;
mod plan;
mod sandbox;
mod schema;
mod tool;

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet as HashSet;

use crate::changes::{self, FileChange};
use crate::load::Repo;
use crate::model::{Model, ModelOptions};
use crate::parse::Value;
use crate::platform::{self, Network};

pub use build::generated_resources;
use sandbox::LayerPlan;
use tool::BuildEnv;
pub use tool::Tool;

use build::{Build, TempTree, contents, run_jobs, write_tree};
use compare::{Multiset, describe, multiset};
use plan::{LayerKey, layer_key, touched_and_affected};

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
    let after = model.build_variant(&after_repo, options);
    let changed: BTreeSet<&str> = files.iter().map(|f| f.path.as_str()).collect();

    let (touched, affected) = touched_and_affected(model, &after, &changed);

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

    settle_failures(&before_builds, &after_builds, &mut unverifiable)?;
    before_builds.retain(|b| !unverifiable.contains_key(&b.layer));
    after_builds.retain(|b| !unverifiable.contains_key(&b.layer));

    let excluded = excluded_objects(model, &after, &unverifiable);
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

/// Builds that fail on both sides, or hit a limit, make their layer not verified; a build that
/// fails on one side only is the gate's failure.
fn settle_failures(
    before_builds: &[Build],
    after_builds: &[Build],
    unverifiable: &mut BTreeMap<LayerKey, String>,
) -> Result<(), String> {
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
        if let Some(e) = runaway(&err(before_builds)).or_else(|| runaway(&err(after_builds))) {
            // A limit says nothing about the change: the layer is not verified, whichever side.
            unverifiable.insert(key.clone(), e);
            continue;
        }
        match (err(before_builds), err(after_builds)) {
            (Some(e), Some(_)) => {
                unverifiable.insert(key.clone(), format!("its build fails ({e})"));
            }
            (Some(e), None) if exists(after_builds) => {
                return Err(format!(
                    "kustomize gate: layer {}/{} fails to build before the change ({e}) but builds after it",
                    key.1, key.2
                ));
            }
            (None, Some(e)) if exists(before_builds) => {
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
    Ok(())
}

/// Objects of unverifiable layers, as the model knows them: they are not compared.
fn excluded_objects(
    model: &Model,
    after: &Model,
    unverifiable: &BTreeMap<LayerKey, String>,
) -> HashSet<(usize, String, String, String, String)> {
    let mut excluded = HashSet::default();
    for m in [model, after] {
        for l in m.layers.iter() {
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
    excluded
}
