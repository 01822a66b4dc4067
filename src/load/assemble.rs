//! The repository a listing describes: each YAML-named file read from where the listing came
//! from (`Contents`: the work tree, a revision's objects), judged — Kubernetes YAML, a Helm
//! chart's template or metadata, template text that is not YAML, unreadable — and parsed in
//! parallel; what is not Kubernetes YAML is set aside with a note, not an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use arcstr::ArcStr;
use rayon::prelude::*;

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
        // Read and parse in parallel (the bulk of the work), a batch at a time whose files keep
        // their texts and node records together; record in path order.
        let dirs = &repo.dirs;
        let loaded: Vec<Loaded> = candidates
            .into_par_iter()
            .chunks(FILES_STORED_TOGETHER)
            .flat_map_iter(|batch| {
                let mut loaded: Vec<Loaded> = batch
                    .into_iter()
                    .map(|rel| match contents.parsed(&rel) {
                        // The same bytes parsed by another load: readable, and judged as text
                        // the same.
                        Some(file) => match skip_reason(&rel, dirs, contents) {
                            Some(reason) => Loaded::Skipped(rel, reason, None),
                            None => Loaded::Parsed(file),
                        },
                        None => Repo::read_and_parse(rel, dirs, contents),
                    })
                    .collect();
                // Files another load parsed are shared with it, and keep their storage.
                let mut parsed_here: Vec<&mut YamlFile> = loaded
                    .iter_mut()
                    .filter_map(|l| match l {
                        Loaded::Parsed(file) => Arc::get_mut(file).map(|f| &mut f.yaml),
                        _ => None,
                    })
                    .collect();
                YamlFile::share_storage(&mut parsed_here);
                loaded
            })
            .collect();
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

    /// Read one YAML-named file and parse it, or say why it is skipped.
    fn read_and_parse(rel: String, dirs: &BTreeSet<ArcStr>, contents: &dyn Contents) -> Loaded {
        match contents.read(&rel) {
            Err(reason) => Loaded::Unreadable(rel, reason),
            Ok(text) => match skip_reason(&rel, dirs, contents) {
                Some(reason) => Loaded::Skipped(rel, reason, None),
                None => {
                    // `{{ … }}` in a string value or a comment is ordinary YAML that Flux
                    // applies as is: only a file that does not parse is judged a template
                    // (and only its text searched for one).
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
            },
        }
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
