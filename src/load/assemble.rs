//! The repository a listing describes: each YAML-named file read from where the listing came
//! from (`Contents`: the work tree, a revision's objects), judged — Kubernetes YAML, a Helm
//! chart's template or metadata, template text that is not YAML, unreadable — and parsed in
//! parallel, each distinct text once (its copies share it); what is not Kubernetes YAML is set
//! aside with a note, not an error.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher as _;
use std::path::PathBuf;
use std::sync::Arc;

use arcstr::ArcStr;
use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use crate::diagnostics::{Diagnostic, Severity};
use crate::parse::YamlFile;

use super::file::{SourceFile, parent_of};
use super::folder_files::FolderFiles;
use super::listing::{EntryKind, Listing, WalkedEntry};
use super::repo::{Origin, Repo};

/// Where the contents of a listing's files come from: the work tree, or a git revision's
/// objects (`revision`).
pub(super) trait Contents: Sync {
    /// The text of a YAML file, or why it cannot be read (see `read::decode_text`).
    fn read(&self, rel: &str) -> Result<String, String>;
    /// Whether a file exists at `rel`, ignored or not (a Helm chart's `Chart.yaml`).
    fn is_file(&self, rel: &str) -> bool;
    /// The file at `rel` already parsed, when another load holds the same bytes at that path
    /// (the base revision and the work tree share most files): not read nor parsed again.
    fn parsed(&self, _rel: &str) -> Option<Arc<SourceFile>> {
        None
    }
}

/// Files parsed in one batch, whose texts, node records and documents are kept together
/// ([`YamlFile::share_storage`]): a few hundred kilobytes, sizes an allocator does not round up
/// by a tenth as it does a file's own.
const FILES_STORED_TOGETHER: usize = 256;

/// What reading one YAML-named file gave.
enum Loaded {
    Parsed(Arc<SourceFile>),
    /// Not Kubernetes YAML (a note): path, reason and where it stops being YAML, if known.
    Skipped(String, String, Option<(usize, usize)>),
    /// Could not be read as text (a warning): path and reason.
    Unreadable(String, String),
}

impl Loaded {
    /// What a file holding this one's text is at `rel`: its parsed text and nodes, or the
    /// verdict on its text, are the same.
    fn same_text_at(&self, rel: String) -> Loaded {
        match self {
            Loaded::Parsed(file) => Loaded::Parsed(Arc::new(SourceFile {
                path: rel,
                yaml: file.yaml.clone(),
                error: file.error.clone(),
            })),
            Loaded::Skipped(_, reason, at) => Loaded::Skipped(rel, reason.clone(), *at),
            Loaded::Unreadable(_, reason) => Loaded::Unreadable(rel, reason.clone()),
        }
    }
}

impl Repo {
    /// The repository a listing describes, its YAML files read from `contents` and parsed.
    pub(super) fn assemble(
        root: PathBuf,
        listing: Listing,
        contents: &dyn Contents,
        origin: Origin,
    ) -> Repo {
        let mut repo = Repo {
            root,
            files: Vec::new(),
            dirs: Arc::default(),
            diagnostics: Vec::new(),
            folder_files: FolderFiles::default(),
            other_files: BTreeSet::new(),
            generated: BTreeMap::new(),
            origin,
        };
        let Listing {
            mut entries,
            mut problems,
        } = listing;
        problems.sort();
        for (rel, message) in problems {
            repo.diagnostics
                .push(Diagnostic::new(Severity::Warning, &rel, message));
        }
        entries.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
        let has_sourceignore = entries
            .iter()
            .any(|e| e.rel == ".sourceignore" || e.rel.ends_with("/.sourceignore"));
        let mut candidates = Vec::new();
        for WalkedEntry {
            rel,
            kind,
            default_ignored,
        } in entries
        {
            if default_ignored && !has_sourceignore {
                continue;
            }
            match kind {
                EntryKind::Symlink => repo.diagnostics.push(Diagnostic::new(
                    Severity::Note,
                    &rel,
                    "symbolic link not followed (fluxmend never reads through a link)".into(),
                )),
                EntryKind::Dir => {
                    Arc::make_mut(&mut repo.dirs).insert(rel.into());
                }
                EntryKind::File if is_yaml_name(&rel) => candidates.push(rel),
                EntryKind::File => {
                    repo.other_files.insert(rel);
                }
            }
        }
        candidates.sort();
        let loaded = read_and_parse(candidates, &repo.dirs, contents);
        repo.files.reserve_exact(loaded.len());
        for outcome in loaded {
            match outcome {
                Loaded::Skipped(rel, reason, at) => {
                    let note = Diagnostic::new(Severity::Note, &rel, format!("skipped: {reason}"));
                    repo.diagnostics.push(match at {
                        Some((line, column)) => note.at(line, column),
                        None => note,
                    });
                    repo.other_files.insert(rel);
                }
                Loaded::Unreadable(rel, reason) => {
                    repo.diagnostics.push(Diagnostic::new(
                        Severity::Warning,
                        &rel,
                        format!("skipped: {reason}"),
                    ));
                    repo.other_files.insert(rel);
                }
                Loaded::Parsed(file) => {
                    if let Some(e) = &file.error {
                        repo.diagnostics.push(
                            Diagnostic::new(
                                Severity::Error,
                                &file.path,
                                format!("YAML does not parse: {}", e.message),
                            )
                            .at(e.line, e.column),
                        );
                    }
                    repo.files.push(file);
                }
            }
        }
        repo.finish()
    }
}

/// What reading one YAML-named file gave, before it is parsed.
enum Read {
    /// Its text, and the text's hash (identical texts are parsed once).
    Text(String, u64),
    /// Parsed by another load, skipped or unreadable: nothing left to do.
    Done(Loaded),
}

/// Read every candidate (in parallel), then parse each distinct text once (in parallel, a
/// batch at a time whose files keep their texts and node records together); a file whose text
/// an earlier one holds shares that file's parsed text and nodes. A fleet's clusters hold the
/// same files (`flux bootstrap` writes each its own `gotk-components.yaml`, hundreds of
/// kilobytes): parsed and kept once, as git keeps one blob (issue 26). In path order.
fn read_and_parse(
    candidates: Vec<String>,
    dirs: &BTreeSet<ArcStr>,
    contents: &dyn Contents,
) -> Vec<Loaded> {
    let read: Vec<(String, Read)> = candidates
        .into_par_iter()
        .map(|rel| {
            let read = match contents.parsed(&rel) {
                // The same bytes parsed by another load: readable, and judged as text the same.
                Some(file) => Read::Done(match skip_reason(&rel, dirs, contents) {
                    Some(reason) => Loaded::Skipped(rel.clone(), reason, None),
                    None => Loaded::Parsed(file),
                }),
                None => match contents.read(&rel) {
                    Err(reason) => Read::Done(Loaded::Unreadable(rel.clone(), reason)),
                    Ok(text) => match skip_reason(&rel, dirs, contents) {
                        Some(reason) => Read::Done(Loaded::Skipped(rel.clone(), reason, None)),
                        None => {
                            let hash = rustc_hash::FxBuildHasher.hash_one(text.as_str());
                            Read::Text(text, hash)
                        }
                    },
                },
            };
            (rel, read)
        })
        .collect();
    // The first file of each distinct text; the others name it. (A text whose hash another
    // text has is parsed on its own: a collision costs only the sharing.)
    let mut first_of: HashMap<u64, usize> = HashMap::default();
    let mut same_as: Vec<Option<usize>> = vec![None; read.len()];
    let text_of = |i: usize| match &read[i].1 {
        Read::Text(text, _) => Some(text),
        Read::Done(_) => None,
    };
    for i in 0..read.len() {
        let Read::Text(text, hash) = &read[i].1 else {
            continue;
        };
        let first = *first_of.entry(*hash).or_insert(i);
        if first != i && text_of(first) == Some(text) {
            same_as[i] = Some(first);
        }
    }
    drop(first_of);
    let mut loaded: Vec<Option<Loaded>> = Vec::with_capacity(read.len());
    let (mut to_parse, mut copies) = (Vec::new(), Vec::new());
    for ((i, (rel, r)), same_as) in read.into_iter().enumerate().zip(same_as) {
        loaded.push(None);
        match (r, same_as) {
            (Read::Done(l), _) => loaded[i] = Some(l),
            (Read::Text(..), Some(first)) => copies.push((i, rel, first)),
            (Read::Text(text, _), None) => to_parse.push((i, rel, text)),
        }
    }
    let parsed: Vec<(usize, Loaded)> = to_parse
        .into_par_iter()
        .chunks(FILES_STORED_TOGETHER)
        .flat_map_iter(|batch| {
            let mut parsed: Vec<(usize, Loaded)> = batch
                .into_iter()
                .map(|(i, rel, text)| (i, parse(rel, text)))
                .collect();
            let mut files: Vec<&mut YamlFile> = parsed
                .iter_mut()
                .filter_map(|(_, l)| match l {
                    Loaded::Parsed(file) => Arc::get_mut(file).map(|f| &mut f.yaml),
                    _ => None,
                })
                .collect();
            YamlFile::share_storage(&mut files);
            parsed
        })
        .collect();
    for (i, l) in parsed {
        loaded[i] = Some(l);
    }
    // Each copy is what its first became, under its own path.
    for (i, rel, first) in copies {
        loaded[i] = loaded[first].as_ref().map(|l| l.same_text_at(rel));
    }
    loaded.into_iter().flatten().collect()
}

/// Parse one file's text, or say why it is skipped.
fn parse(rel: String, text: String) -> Loaded {
    // `{{ … }}` in a string value or a comment is ordinary YAML that Flux applies as is: only a
    // file that does not parse is judged a template (and only its text searched for one).
    let (yaml, error) = YamlFile::parse_owned(text);
    match error {
        Some(e) if has_template_syntax(yaml.text()) => Loaded::Skipped(
            rel,
            format!(
                "template text ({{{{ }}}} or {{% %}}) that is not YAML: {}",
                e.message
            ),
            Some((e.line, e.column)),
        ),
        error => Loaded::Parsed(Arc::new(SourceFile {
            path: rel,
            yaml,
            error: error.map(Box::new),
        })),
    }
}

fn is_yaml_name(path: &str) -> bool {
    path.ends_with(".yaml")
        || path.ends_with(".yml")
        || path.ends_with("/Kustomization")
        || path == "Kustomization"
}

/// Whether a file holds template syntax (Helm/Go `{{ }}`, Jinja `{% %}`).
fn has_template_syntax(text: &str) -> bool {
    text.contains("{{") && (text.contains("}}") || text.contains("{{-")) || text.contains("{%")
}

/// Why a YAML-named file is not Kubernetes YAML that Flux would apply, whatever its text: a Helm
/// chart's templates and metadata. (Template text elsewhere is judged once parsed.)
fn skip_reason(rel: &str, dirs: &BTreeSet<ArcStr>, contents: &dyn Contents) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if let Some(i) = parts.iter().position(|p| *p == "templates") {
        let chart_dir = parts[..i].join("/");
        let chart = if chart_dir.is_empty() {
            "Chart.yaml".to_string()
        } else {
            format!("{chart_dir}/Chart.yaml")
        };
        if contents.is_file(&chart) || dirs.contains(format!("{chart_dir}/charts").as_str()) {
            return Some("Helm chart template".into());
        }
    }
    let name = parts.last().copied().unwrap_or_default();
    let sibling_chart = || {
        let dir = parent_of(rel);
        contents.is_file(&if dir.is_empty() {
            "Chart.yaml".to_string()
        } else {
            format!("{dir}/Chart.yaml")
        })
    };
    if name == "Chart.yaml" || name == "values.yaml" && sibling_chart() {
        return Some("Helm chart metadata".into());
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::load::{Repo, write_test_file as write};

    /// Files with the same text are parsed once and share it (the same bytes in memory), each
    /// under its own path and judged by it: a copy in a Helm chart's templates is skipped, a
    /// copy of a file that does not parse has its error, a copy of template text is skipped
    /// where it is, and a text that differs only by its BOM is its own.
    #[test]
    fn identical_texts_are_parsed_once_and_judged_by_their_own_paths() {
        let tmp = tempfile::tempdir().unwrap();
        let config_map = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
        let broken = "a: [1\n";
        let template = "{{- if .Values.x }}\na: 1\n{{- end }}\n";
        for rel in [
            "a/cm.yaml",
            "b/cm.yaml",
            "c/copy.yml",
            "chart/templates/cm.yaml",
        ] {
            write(tmp.path(), rel, config_map);
        }
        write(tmp.path(), "chart/Chart.yaml", "name: chart\n");
        write(tmp.path(), "d/bom.yaml", &format!("\u{feff}{config_map}"));
        for rel in ["e/broken.yaml", "f/broken.yaml"] {
            write(tmp.path(), rel, broken);
        }
        for rel in ["g/t.yaml", "h/t.yaml"] {
            write(tmp.path(), rel, template);
        }
        let repo = Repo::load(tmp.path()).unwrap();
        let file = |rel: &str| repo.file(repo.file_id(rel).unwrap());
        let first = file("a/cm.yaml");
        for rel in ["b/cm.yaml", "c/copy.yml"] {
            let copy = file(rel);
            assert_eq!(copy.path, rel);
            assert_eq!(
                copy.yaml.text().as_ptr(),
                first.yaml.text().as_ptr(),
                "{rel}"
            );
            assert_eq!(copy.yaml.docs(), first.yaml.docs());
        }
        let bom = file("d/bom.yaml");
        assert!(bom.yaml.bom && !first.yaml.bom);
        assert_eq!(bom.yaml.text(), first.yaml.text());
        assert_ne!(bom.yaml.text().as_ptr(), first.yaml.text().as_ptr());
        assert!(repo.file_id("chart/templates/cm.yaml").is_none());
        let (e, f) = (file("e/broken.yaml"), file("f/broken.yaml"));
        assert!(e.error.is_some() && e.error == f.error);
        assert!(repo.file_id("g/t.yaml").is_none() && repo.file_id("h/t.yaml").is_none());
        let said = |rel: &str, what: &str| {
            repo.diagnostics
                .iter()
                .any(|d| d.file() == rel && d.message.contains(what))
        };
        assert!(said("chart/templates/cm.yaml", "Helm chart template"));
        for rel in ["g/t.yaml", "h/t.yaml"] {
            assert!(said(rel, "template text"), "{rel}: {:?}", repo.diagnostics);
        }
        for rel in ["e/broken.yaml", "f/broken.yaml"] {
            assert!(said(rel, "does not parse"), "{rel}: {:?}", repo.diagnostics);
        }
    }
}
