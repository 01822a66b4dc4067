//! What the kustomize gate's sandbox holds for one layer: every kustomization the build
//! reaches, read by [`kustfile`] exactly as kustomize reads it and written back as canonical
//! JSON; every plugin configuration likewise; the files the build reads as data (resources,
//! patches, generator inputs), read safely from the repository. Nothing else is copied, so
//! nothing fluxmend did not read can reach kubectl. Every reference is checked before anything
//! is built: a URL, a git repository, an absolute path, a path climbing out of the root, or
//! anything fluxmend cannot read as kustomize does makes the layer "not verified", with the
//! place and the reason.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashSet as HashSet;
use serde_json::Value as Json;

use crate::load::Repo;
use crate::model::{KUSTOMIZATION_FILE_NAMES, Layer, Model, join};
use crate::parse::{Value, YamlFile};

use super::kustfile::{self, Ref, canonical};
use super::overlays::flux_overlays;
use super::schema::RefKind;

/// How a file enters the sandbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// Written by fluxmend: a kustomization or plugin configurations, as canonical JSON.
    Written(String),
    /// Copied from the repository (or the change being verified): data the build reads.
    Copied,
}

/// The files of one layer's builds and the builds themselves.
#[derive(Debug, Default)]
pub struct LayerPlan {
    pub files: BTreeMap<String, Entry>,
    /// Directories the builds run in (they exist even when empty).
    pub dirs: BTreeSet<String>,
    pub jobs: Vec<Job>,
}

/// One build: a variant directory, whether Flux generates its kustomization, and the fields
/// the Flux Kustomization adds (JSON object, empty when none).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Job {
    pub dir: String,
    pub generated: bool,
    pub overlays: String,
}

impl Job {
    /// Whether building it writes into the tree (so it cannot run beside other builds).
    pub fn writes(&self) -> bool {
        self.generated || !self.overlays.is_empty()
    }
}

/// How a directory is reached.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Mode {
    /// A kustomization (a build, a directory resource) or a component.
    Build,
    /// A directory of plugin configurations; their files are resolved from `loader`, the
    /// directory of the kustomization that lists it.
    Plugins { loader: String },
}

/// Plan the sandbox of `layer` of `model` (whose repository is `repo`: the one before the
/// change, or the one after it). `Err` is why the layer cannot be verified.
pub fn plan_layer(repo: &Repo, model: &Model, layer: &Layer) -> Result<LayerPlan, String> {
    let mut walk = Walk {
        repo,
        plan: LayerPlan::default(),
        visited: HashSet::default(),
    };
    let overlays = flux_overlays(model, layer)?;
    for v in &layer.variants {
        walk.plan.dirs.insert(v.dir.to_string());
        for component in &overlays.components {
            // Relative to the layer's path, as Flux appends them to its kustomization.
            let r = Ref {
                field: "spec.components".into(),
                text: component.clone(),
                kind: RefKind::Component,
                index: None,
                at: (0, 0),
            };
            walk.follow(&v.dir, "the Flux Kustomization", &r, &Mode::Build)?;
        }
        if v.generated {
            walk.generated(&v.dir)?;
        } else {
            walk.visit(&v.dir, &Mode::Build)?;
        }
        walk.plan.jobs.push(Job {
            dir: v.dir.to_string(),
            generated: v.generated,
            overlays: overlays.json.clone(),
        });
    }
    Ok(walk.plan)
}

struct Walk<'a> {
    repo: &'a Repo,
    plan: LayerPlan,
    visited: HashSet<(String, Mode)>,
}

impl<'a> Walk<'a> {
    fn add(&mut self, path: &str, entry: Entry) -> Result<(), String> {
        match self.plan.files.get(path) {
            Some(existing) if *existing != entry => Err(format!(
                "{path} is read both as data and as a kustomization or plugin configuration"
            )),
            Some(_) => Ok(()),
            None => {
                self.plan.files.insert(path.to_string(), entry);
                Ok(())
            }
        }
    }

    /// Why the loader did not read `path`, from its diagnostic.
    fn unread(&self, path: &str) -> String {
        let why = self
            .repo
            .diagnostics
            .iter()
            .find(|d| d.file() == path)
            .map_or("not read", |d| d.message.as_str());
        format!("{path} was not read by fluxmend ({why})")
    }

    /// The parsed YAML file at `path`, or why it cannot be used.
    fn parsed(&self, path: &str) -> Result<&'a YamlFile, String> {
        let repo: &'a Repo = self.repo;
        let Some(id) = repo.file_id(path) else {
            return Err(self.unread(path));
        };
        let file = repo.file(id);
        match &file.error {
            Some(e) => Err(format!("{path}:{e}: it does not parse as YAML")),
            None => Ok(&file.yaml),
        }
    }

    /// The directory `dir` as kustomize builds it: its kustomization and everything it names.
    fn visit(&mut self, dir: &str, mode: &Mode) -> Result<(), String> {
        if !self.visited.insert((dir.to_string(), mode.clone())) {
            return Ok(());
        }
        self.plan.dirs.insert(dir.to_string());
        let found: Vec<String> = KUSTOMIZATION_FILE_NAMES
            .iter()
            .filter_map(|n| join(dir, n))
            .filter(|p| self.repo.is_file(p))
            .collect();
        let shown = if dir.is_empty() { "." } else { dir };
        let path = match found.as_slice() {
            [] => return Err(format!("{shown} has no kustomization file")),
            [one] => one.clone(),
            _ => {
                return Err(format!(
                    "{shown} has several kustomization files ({}): kustomize refuses",
                    found.join(", ")
                ));
            }
        };
        let yaml = self.parsed(&path)?;
        let root = match yaml.docs() {
            [doc] => doc.root,
            docs => {
                return Err(format!(
                    "{path} holds {} YAML documents (a kustomization is one)",
                    docs.len()
                ));
            }
        };
        let plugins = matches!(mode, Mode::Plugins { .. });
        let read =
            kustfile::read_kustomization(yaml, root, plugins).map_err(|r| format!("{path}:{r}"))?;
        let mut json = read.json;
        for r in &read.refs {
            let inner = match (r.kind, mode) {
                (RefKind::Plugin, _) => Mode::Plugins {
                    loader: dir.to_string(),
                },
                (_, Mode::Plugins { .. }) => mode.clone(),
                _ => Mode::Build,
            };
            if r.kind == RefKind::Plugin
                && let Some(inline) = self.inline_plugins(dir, &path, r)?
            {
                // The entry is the configurations themselves: kubectl gets them as read.
                let slot = json
                    .get_mut(&r.field)
                    .and_then(|list| list.get_mut(r.index.expect("a list entry")))
                    .expect("the reference is in the document read");
                *slot = Json::String(inline);
                continue;
            }
            self.follow(dir, &path, r, &inner)?;
        }
        self.add(&path, Entry::Written(canonical(&json)))
    }

    /// A directory of a layer whose kustomization Flux generates: every YAML file below it,
    /// and each subdirectory with a kustomization file as a directory resource.
    fn generated(&mut self, dir: &str) -> Result<(), String> {
        let mut todo = vec![dir.to_string()];
        while let Some(d) = todo.pop() {
            self.plan.dirs.insert(d.clone());
            let has_kustomization = KUSTOMIZATION_FILE_NAMES
                .iter()
                .filter_map(|n| join(&d, n))
                .any(|p| self.repo.is_file(&p));
            if d != dir && has_kustomization {
                self.visit(&d, &Mode::Build)?;
                continue;
            }
            let files: Vec<String> = self
                .repo
                .files_in(&d)
                .map(|id| self.repo.file(id).path.clone())
                .collect();
            for path in files {
                self.parsed(&path)?;
                self.add(&path, Entry::Copied)?;
            }
            if let Some(skipped) = self.repo.skipped_yaml_in(&d).next() {
                return Err(format!(
                    "{}; Flux would build it as part of {}",
                    self.unread(skipped),
                    if dir.is_empty() { "." } else { dir }
                ));
            }
            todo.extend(self.repo.subdirs(&d).map(str::to_string));
        }
        Ok(())
    }

    /// Where a reference of the kustomization in `dir` leads, when it stays in the repository.
    fn local(dir: &str, r: &Ref) -> Result<String, String> {
        let text = r.text.as_str();
        if let Some(why) = remote(text) {
            return Err(why.into());
        }
        if text.starts_with('/') || text.starts_with('\\') {
            return Err("is an absolute path (outside the repository)".into());
        }
        join(dir, text).ok_or_else(|| "leaves the repository root".into())
    }

    /// Follow one reference of `file` (in `dir`).
    fn follow(&mut self, dir: &str, file: &str, r: &Ref, mode: &Mode) -> Result<(), String> {
        let place = |why: String| {
            let at = if r.at == (0, 0) {
                String::new()
            } else {
                format!(":{}:{}", r.at.0, r.at.1)
            };
            format!("{file}{at}: `{}` entry `{}` {why}", r.field, short(&r.text))
        };
        let loader = match mode {
            Mode::Plugins { loader } => loader.clone(),
            Mode::Build => dir.to_string(),
        };
        match r.kind {
            RefKind::Resource | RefKind::Plugin => {
                let path = Self::local(dir, r).map_err(place)?;
                if self.repo.is_dir(&path) {
                    self.visit(&path, mode)
                } else if self.repo.is_file(&path) {
                    match mode {
                        Mode::Plugins { loader } => self.plugin_file(loader, &path),
                        Mode::Build => self.data(&path),
                    }
                } else {
                    Err(place(
                        "is not in the repository (kustomize would try to fetch it)".into(),
                    ))
                }
            }
            RefKind::Component => {
                let path = Self::local(dir, r).map_err(place)?;
                if !self.repo.is_dir(&path) {
                    return Err(place("is not a directory of the repository".into()));
                }
                self.visit(&path, &Mode::Build)
            }
            RefKind::File => {
                let path = Self::local(&loader, r).map_err(place)?;
                self.data(&path)
            }
            RefKind::KeyFile => {
                let (_, source) = file_source(&r.text).map_err(place)?;
                let path = Self::local(
                    &loader,
                    &Ref {
                        text: source,
                        ..r.clone()
                    },
                )
                .map_err(place)?;
                self.data(&path)
            }
            RefKind::PatchOrPath => {
                // Checked as a path even when it is an inline patch: kustomize reads it as a
                // file when its parser disagrees.
                let path = Self::local(&loader, r).map_err(place)?;
                if inline_objects(&r.text) {
                    Ok(())
                } else {
                    self.data(&path)
                }
            }
        }
    }

    /// A file the build reads as data: copied when it is in the repository (a missing one
    /// fails the build in the sandbox as in Flux). A YAML file must have been parsed.
    fn data(&mut self, path: &str) -> Result<(), String> {
        if !self.repo.is_file(path) {
            return Ok(());
        }
        if is_yaml_name(path) {
            self.parsed(path)?;
        }
        self.add(path, Entry::Copied)
    }

    /// A `generators:`/`transformers:`/`validators:` entry that is the configurations
    /// themselves: their canonical text, or `None` when the entry is a path.
    fn inline_plugins(&mut self, dir: &str, file: &str, r: &Ref) -> Result<Option<String>, String> {
        if !inline_objects(&r.text) {
            return Ok(None);
        }
        let place = |why: String| {
            format!(
                "{file}:{}:{}: inline `{}` entry: {why}",
                r.at.0, r.at.1, r.field
            )
        };
        // kustomize reads the string as a path when its parser disagrees: it must be safe as
        // one too.
        Self::local(dir, r).map_err(place)?;
        let (yaml, error) = YamlFile::parse(&r.text);
        if let Some(e) = error {
            return Err(place(format!("{e}: it does not parse as YAML")));
        }
        let docs = self
            .plugin_docs(dir, "the inline configuration", &yaml)
            .map_err(place)?;
        Ok(Some(docs))
    }

    /// A file of plugin configurations, written canonically.
    fn plugin_file(&mut self, loader: &str, path: &str) -> Result<(), String> {
        let yaml = self.parsed(path)?;
        let docs = self.plugin_docs(loader, path, yaml)?;
        self.add(path, Entry::Written(docs))
    }

    /// The canonical text of the plugin configurations of `yaml`, their references followed
    /// from `loader`.
    fn plugin_docs(
        &mut self,
        loader: &str,
        label: &str,
        yaml: &YamlFile,
    ) -> Result<String, String> {
        let mut out = Vec::new();
        for doc in yaml.docs() {
            if matches!(yaml.value(doc.root), Ok(Value::Null)) {
                continue;
            }
            let read = kustfile::read_plugin(yaml, doc.root).map_err(|r| format!("{label}:{r}"))?;
            for r in &read.refs {
                let mode = Mode::Plugins {
                    loader: loader.to_string(),
                };
                self.follow(loader, label, r, &mode)?;
            }
            out.push(canonical(&read.json));
        }
        Ok(out.join("---\n"))
    }
}

fn is_yaml_name(path: &str) -> bool {
    path.ends_with(".yaml") || path.ends_with(".yml")
}

/// Whether kustomize may take a string as objects rather than a path: it parses (for
/// fluxmend) as YAML with a document that is not a plain scalar.
fn inline_objects(text: &str) -> bool {
    let (yaml, _) = YamlFile::parse(text);
    yaml.docs().iter().any(|d| {
        !matches!(
            yaml.value(d.root),
            Ok(Value::Str(..) | Value::Null) | Err(_)
        )
    }) || text.contains('\n')
}

/// A generator `files:` entry as kustomize's `ParseFileSource` reads it: (key, path).
fn file_source(source: &str) -> Result<(String, String), String> {
    match source.matches('=').count() {
        0 => Ok((
            source.rsplit('/').next().unwrap_or(source).to_string(),
            source.to_string(),
        )),
        1 => match source.split_once('=') {
            Some((k, p)) if !k.is_empty() && !p.is_empty() => Ok((k.to_string(), p.to_string())),
            _ => Err("lacks its key or its path (kustomize refuses)".into()),
        },
        _ => Err("has a key or a path with `=` (kustomize refuses)".into()),
    }
}

/// Why kustomize would fetch `text` rather than read a local path: a URL (any scheme, as Go's
/// `url.Parse` finds one), or what `NewRepoSpecFromURL` takes for a git repository (`git::`,
/// `github.com/…`, `user@host:…`).
fn remote(text: &str) -> Option<&'static str> {
    let lower = text.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("http:") || lower.starts_with("https:") {
        return Some("is a URL (never fetched)");
    }
    let user = lower.find('@').is_some_and(|i| {
        lower.as_bytes()[0].is_ascii_alphabetic()
            && lower[..i]
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    if lower.starts_with("git::")
        || lower.starts_with("github.com/")
        || lower.starts_with("github.com:")
        || user
    {
        return Some("names a git repository (kustomize would clone it; never fetched)");
    }
    None
}

fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    if line.chars().count() <= 80 && !s.contains('\n') {
        line.to_string()
    } else {
        line.chars().take(77).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_remote_references_from_paths() {
        for text in [
            "https://example.com/x.yaml",
            "HTTP://example.com/x",
            "http:example.com/x",
            "git::https://example.com/repo",
            "GitHub.com/org/repo",
            "github.com:org/repo",
            "git@example.com:org/repo",
            "me@host:repo",
            "file:///tmp/repo",
            "ssh://git@example.com/repo",
        ] {
            assert!(remote(text).is_some(), "{text}");
        }
        for text in [
            "base",
            "../base/app.yaml",
            "a-b.c/d",
            "./x",
            "key=value.txt",
        ] {
            assert!(remote(text).is_none(), "{text}");
        }
    }

    #[test]
    fn strings_that_may_be_objects() {
        assert!(inline_objects("{apiVersion: builtin, kind: X}"));
        assert!(inline_objects("apiVersion: builtin\nkind: X\n"));
        assert!(inline_objects("a.yaml\n"));
        assert!(!inline_objects("transformers/prefix.yaml"));
        assert!(!inline_objects("./dir"));
    }
}
