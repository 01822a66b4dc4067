//! Which directory a layer's source is in this repository (`--source`, `--source-root`, or
//! where its path resolves), and whether the source is another repository than this one.

use std::sync::Arc;

use arcstr::ArcStr;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use crate::model::{Model, ModelOptions, ObjectIdx};

use super::layer::{Layer, LayerId, SourceRef};
use super::operator::instance_sync;
use super::path::expand_path;
use super::read::layer_from_object;

/// The sources of a repository's layers: where each one's artifact root is here, memoised.
pub(super) struct Sources<'m> {
    options: &'m ModelOptions,
    /// (cluster, source) → its artifact root, once found.
    roots: HashMap<(usize, SourceRef), Option<String>>,
    /// How many Flux Kustomization objects read each source: a source shared by several layers
    /// is the repository's own. Counted once, shared by the walks of every root.
    readers: Arc<HashMap<SourceRef, usize>>,
}

/// `spec.url` of the source object a `sourceRef` names, when it is in this repository.
fn source_url(model: &Model, source: &SourceRef) -> Option<String> {
    let obj =
        model.object(model.find_object(&source.kind, &source.name, Some(&source.namespace))?);
    let yaml = &model.repo.file(obj.file).yaml;
    yaml.lookup(obj.root, &["spec", "url"])
        .and_then(|n| yaml.scalar(n))
        .map(str::to_string)
}

/// The revision a GitRepository checks out (`spec.ref`), as `kind value` in Flux's order of
/// precedence (commit, name, semver, tag, branch); `None` when unset or not defined here.
fn git_ref(model: &Model, source: &SourceRef) -> Option<String> {
    let obj =
        model.object(model.find_object(&source.kind, &source.name, Some(&source.namespace))?);
    let yaml = &model.repo.file(obj.file).yaml;
    ["commit", "name", "semver", "tag", "branch"]
        .iter()
        .find_map(|k| {
            yaml.lookup(obj.root, &["spec", "ref", k])
                .and_then(|n| yaml.scalar(n))
                .map(|v| format!("{k} {v}"))
        })
}

/// A repository URL without what does not tell repositories apart: scheme, user, `.git`, a
/// trailing `/`, case, and the `:` of scp-like `git@host:org/repo`.
fn normalize_url(url: &str) -> String {
    let url = url.trim().to_ascii_lowercase();
    let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
    let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
    let rest = match rest.split_once(':') {
        // `host:org/repo` (scp-like), not `host:port/…`.
        Some((host, path)) if !path.starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{host}/{path}")
        }
        _ => rest.to_string(),
    };
    let rest = rest.trim_end_matches('/');
    rest.strip_suffix(".git").unwrap_or(rest).to_string()
}

impl<'m> Sources<'m> {
    /// The sources of these Flux Kustomizations, none of whose roots is known yet.
    pub(super) fn new(model: &Model, options: &'m ModelOptions, flux_ks: &[ObjectIdx]) -> Self {
        // Each Flux Kustomization's spec read on its own (a fleet has thousands), then counted.
        let sources: Vec<SourceRef> = flux_ks
            .par_iter()
            .map(|&idx| layer_from_object(model, idx, &model.object(idx).key, 0, None).source)
            .collect();
        let mut readers: HashMap<SourceRef, usize> = HashMap::default();
        for source in sources {
            *readers.entry(source).or_default() += 1;
        }
        Sources {
            options,
            roots: HashMap::default(),
            readers: Arc::new(readers),
        }
    }

    /// The sources as a walk of one root of its own knows them: the readers counted, no
    /// artifact root found yet (those are per cluster, and each root is a cluster).
    pub(super) fn fork(&self) -> Self {
        Sources {
            options: self.options,
            roots: HashMap::default(),
            readers: self.readers.clone(),
        }
    }

    /// The directory of this repository that a layer's source holds (its artifact root): the
    /// `--source` mapping, the repository root for a GitRepository, `--source-root`, or the
    /// shallowest directory where `path` resolves; `None` when it resolves nowhere.
    pub(super) fn root(
        &mut self,
        model: &Model,
        cluster: usize,
        source: &SourceRef,
        path: &str,
    ) -> Option<String> {
        if let Some(dir) = self.mapped_source(source) {
            return Some(dir.to_string());
        }
        if source.kind == "GitRepository" {
            return Some(String::new());
        }
        if let Some(root) = &self.options.source_root {
            return Some(root.clone());
        }
        let key = (cluster, source.clone());
        if let Some(done) = self.roots.get(&key) {
            return done.clone();
        }
        // The artifact root is the directory the paths resolve against: the shallowest one that
        // has this layer's path.
        let found = std::iter::once("")
            .chain(model.repo.dirs.iter().map(ArcStr::as_str))
            .filter(|d| expand_path(model, d, path, &mut false).is_ok_and(|v| !v.is_empty()))
            .min_by_key(|d| {
                (
                    if d.is_empty() {
                        0
                    } else {
                        d.matches('/').count() + 1
                    },
                    *d,
                )
            })
            .map(str::to_string);
        self.roots.insert(key, found.clone());
        found
    }

    /// The directory `--source` maps this source to, if any.
    fn mapped_source(&self, source: &SourceRef) -> Option<&str> {
        self.options.sources.iter().find_map(|(name, dir)| {
            let parts: Vec<&str> = name.split('/').collect();
            let matches = match parts.as_slice() {
                [n] => *n == source.name,
                [ns, n] => *ns == source.namespace && *n == source.name,
                [kind, ns, n] => {
                    *kind == source.kind && *ns == source.namespace && *n == source.name
                }
                _ => false,
            };
            matches.then_some(dir.as_str())
        })
    }

    /// Why a layer's source is another repository than this one, if it is. The root layer's
    /// source is this repository; a GitRepository is another when its URL differs from the
    /// root source's (or, with either URL unknown, when its path does not exist here); an
    /// OCIRepository defined here whose URL is not the root source's; an OCIRepository, Bucket
    /// or other artifact when its path resolves nowhere here (see
    /// [`Sources::root`]) and no `--source-root` says where it was pushed from. A
    /// source `--source` maps to a directory is never external.
    pub(super) fn external(
        &mut self,
        model: &Model,
        layers: &[Layer],
        id: LayerId,
    ) -> Option<String> {
        let layer = &layers[id];
        let mut root = id;
        while let Some(parent) = layers[root].applied_by {
            root = parent;
        }
        let root_layer = &layers[root];
        // Without any root (no FluxInstance sync, no bootstrap Kustomization, no --root) every
        // layer is walked as one; the repository's own source is then created outside it, so a
        // source defined here that only this layer reads is a tenant's or an app's repository.
        let rootless = root == id
            && layer.created_by_instance.is_none()
            && self.options.roots.is_empty()
            && !(layer.id.name == "flux-system" && layer.id.namespace == "flux-system");
        if rootless
            && self.readers.get(&layer.source).copied().unwrap_or(0) <= 1
            && let Some(url) = source_url(model, &layer.source)
        {
            return Some(format!(
                "{url}, a source only this layer reads (this repository has no root to compare with)"
            ));
        }
        if root == id
            || layer.source == root_layer.source
            || layer.source.name.is_empty()
            || self.mapped_source(&layer.source).is_some()
        {
            return None;
        }
        let url = source_url(model, &layer.source);
        if layer.source.kind == "GitRepository" {
            let root_url = match root_layer.created_by_instance {
                Some(instance) => instance_sync(model, instance).and_then(|s| s.url),
                None => source_url(model, &root_layer.source),
            };
            // The same repository at another revision (a tenant's branch) is another tree.
            let other_ref = match (
                git_ref(model, &layer.source),
                (root_layer.created_by_instance.is_none())
                    .then(|| git_ref(model, &root_layer.source))
                    .flatten(),
            ) {
                (Some(own), Some(root)) if own != root => Some(format!("{own}, not {root}")),
                _ => None,
            };
            return match (url, root_url) {
                (Some(url), Some(root_url)) if normalize_url(&url) != normalize_url(&root_url) => {
                    Some(format!("{url}, not {root_url}"))
                }
                (Some(url), Some(_)) => other_ref.map(|r| format!("{url} at {r}")),
                // This repository arrives as an artifact (OCI, Bucket): a Git repository with a
                // URL of its own is another.
                (Some(url), None) if root_layer.source.kind != "GitRepository" => Some(format!(
                    "{url}, while this repository arrives as {} {}",
                    root_layer.source.kind, root_layer.source.name
                )),
                // This repository's own source is not defined here (a bootstrap placeholder): a
                // Git source checking out a revision other than the usual default branch is
                // another tree than the one being analysed (a tenant's branch).
                (Some(url), None)
                    if git_ref(model, &layer.source).is_some_and(|r| {
                        !matches!(r.as_str(), "branch main" | "branch master")
                    }) =>
                {
                    Some(format!(
                        "{url} at {}, and this repository's own source is not defined here to compare with",
                        git_ref(model, &layer.source).unwrap_or_default()
                    ))
                }
                (url, _) => expand_path(model, "", &layer.path, &mut false)
                    .is_ok_and(|v| v.is_empty())
                    .then(|| match url {
                        Some(url) => format!("{url}; spec.path `{}` is not here", layer.path),
                        None => format!("not defined here; spec.path `{}` is not here", layer.path),
                    }),
            };
        }
        // An OCI artifact defined here with its own URL is another artifact than the root's
        // (the same repository pushed twice under two names is rare; a tenant's or an app's
        // manifests pushed by their own pipeline are common), whatever its path.
        if layer.source.kind == "OCIRepository"
            && let Some(url) = &url
        {
            let root_url = match root_layer.created_by_instance {
                Some(instance) => instance_sync(model, instance).and_then(|s| s.url),
                None => source_url(model, &root_layer.source),
            };
            if root_url
                .as_ref()
                .is_none_or(|r| normalize_url(r) != normalize_url(url))
            {
                return Some(match root_url {
                    Some(r) => format!("{url}, not {r}"),
                    None => format!("{url}, an artifact of its own"),
                });
            }
        }
        let (cluster, source, path) = (layer.cluster, layer.source.clone(), layer.path.clone());
        self.root(model, cluster, &source, &path)
            .is_none()
            .then(|| {
                format!(
                    "{}spec.path `{path}` resolves nowhere here",
                    url.map(|u| format!("{u}; ")).unwrap_or_default()
                )
            })
    }
}
