//! Reading each directory's kustomization file into a [`KustomizeDir`], and where its entries
//! point.

use arcstr::ArcStr;
use rustc_hash::FxHashMap as HashMap;

use rayon::prelude::*;

use crate::diagnostics::{Diagnostic, Severity};
use crate::model::{Model, Name, join};

use super::builtin::KUSTOMIZATION_FILE_NAMES;
use super::dir::{KustomizeDir, RefTarget, ResourceRef};
use super::transformers;

pub(in crate::model) fn parse_dirs(
    model: &Model,
    diagnostics: &mut Vec<Diagnostic>,
) -> HashMap<Name, Box<KustomizeDir>> {
    // Directories are independent: read their kustomization files in parallel, keep the order.
    let parsed: Vec<(Option<Box<KustomizeDir>>, Vec<Diagnostic>)> = model
        .repo
        .dirs
        .par_iter()
        .map(|dir| {
            let mut diagnostics = Vec::new();
            (
                parse_dir(model, dir, &mut diagnostics).map(Box::new),
                diagnostics,
            )
        })
        .collect();
    let mut dirs = HashMap::default();
    for (parsed, diags) in parsed {
        diagnostics.extend(diags);
        if let Some(k) = parsed {
            dirs.insert(k.dir.clone(), k);
        }
    }
    dirs
}

/// The kustomization file of `dir`, if it has a usable one.
fn parse_dir(
    model: &Model,
    dir: &ArcStr,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<KustomizeDir> {
    let repo = model.repo;
    let file = KUSTOMIZATION_FILE_NAMES
        .iter()
        .find_map(|name| repo.file_id(&join(dir, name).unwrap_or_default()))?;
    let source = repo.file(file);
    let yaml = &source.yaml;
    let Some(doc) = yaml.docs().first() else {
        if source.error.is_none() {
            diagnostics.push(Diagnostic::new(
                Severity::Error,
                &source.path,
                "kustomization file is empty".into(),
            ));
        }
        return None;
    };
    let root = doc.root;
    if !matches!(
        yaml.resolve(root).map(|r| yaml.node(r).kind),
        Some(crate::parse::NodeKind::Mapping { .. })
    ) {
        // A list or a scalar: kustomize cannot unmarshal it into a Kustomization.
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                &source.path,
                format!(
                    "this kustomization file is not a mapping; kustomize and Flux will fail to build {}",
                    if dir.is_empty() { "the repository root" } else { dir }
                ),
            )
            .at(yaml.line_of(yaml.node(root).span.start), 1),
        );
        return None;
    }
    let scalar = |key: &str| {
        yaml.lookup(root, &[key])
            .and_then(|n| yaml.scalar(n))
            .map(str::to_string)
    };
    let kind = scalar("kind");
    let api = scalar("apiVersion");
    let component = kind.as_deref() == Some("Component");
    let is_kustomize = match (&api, &kind) {
        (Some(a), _) if !a.starts_with("kustomize.config.k8s.io/") => false,
        (_, Some(k)) => k == "Kustomization" || k == "Component",
        // No apiVersion and no kind: kustomize reads the file as a Kustomization.
        (_, None) => true,
    };
    if !is_kustomize {
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                &source.path,
                format!(
                    "this kustomization file is not a kustomize Kustomization ({} {}); kustomize and Flux will fail to build {}",
                    api.as_deref().unwrap_or("no apiVersion"),
                    kind.as_deref().unwrap_or("no kind"),
                    if dir.is_empty() { "the repository root" } else { dir }
                ),
            )
            .at(yaml.line_of(yaml.node(root).span.start), 1),
        );
        return None;
    }
    let refs = |field: &str, diagnostics: &mut Vec<Diagnostic>| -> Vec<ResourceRef> {
        let Some(list) = yaml.lookup(root, &[field]) else {
            return Vec::new();
        };
        yaml.items(list)
            .iter()
            .filter_map(|&item| {
                let text = yaml.scalar(item)?;
                let target = resolve_ref(model, dir, text);
                let (line, col) = yaml.line_col(yaml.node(item).span.start);
                match &target {
                    RefTarget::Missing(path) => diagnostics.push(
                        Diagnostic::new(Severity::Error, &source.path, format!("{field} entry `{text}` does not exist ({path})")).at(line, col),
                    ),
                    RefTarget::OutsideRoot => diagnostics.push(
                        Diagnostic::new(Severity::Error, &source.path, format!("{field} entry `{text}` leaves the repository root")).at(line, col),
                    ),
                    RefTarget::Remote(_) => diagnostics.push(
                        Diagnostic::new(Severity::Note, &source.path, format!("{field} entry `{text}` is remote; not fetched, its objects are not modelled")).at(line, col),
                    ),
                    _ => {}
                }
                Some(ResourceRef { item, target })
            })
            .collect()
    };
    let mut resources = refs("resources", diagnostics);
    resources.extend(refs("bases", diagnostics));
    // Kept as long as the model: without the room the list grew into.
    let resources = resources.into_boxed_slice();
    let components = refs("components", diagnostics).into_boxed_slice();
    Some(KustomizeDir {
        dir: dir.clone().into(),
        file,
        root,
        component,
        resources,
        components,
        namespace: scalar("namespace")
            .filter(|n| !n.is_empty())
            .map(Name::from),
        name_prefix: scalar("namePrefix").map(Name::from).unwrap_or_default(),
        name_suffix: scalar("nameSuffix").map(Name::from).unwrap_or_default(),
        generated: Vec::new(),
        transformers: Some(transformers::read(repo, dir, &source.path, yaml, root))
            .filter(|t| !t.is_empty())
            .map(Box::new),
    })
}

/// What a `resources`/`components` entry `text` of the directory `dir` points at.
fn resolve_ref(model: &Model, dir: &str, text: &str) -> RefTarget {
    let is_remote = text.contains("://")
        || text.starts_with("git@")
        || text.starts_with("github.com/")
        || text.starts_with("gitlab.com/")
        || text.starts_with("bitbucket.org/");
    if is_remote {
        return RefTarget::Remote(text.into());
    }
    let Some(path) = join(dir, text) else {
        return RefTarget::OutsideRoot;
    };
    if let Some(dir) = model.repo.dir_path(&path) {
        RefTarget::Dir(dir.clone().into())
    } else if let Some(id) = model.repo.file_id(&path) {
        RefTarget::File(id)
    } else if model.repo.is_file(&path) {
        RefTarget::OtherFile(path.into())
    } else {
        RefTarget::Missing(path.into())
    }
}
