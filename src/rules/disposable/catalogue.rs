//! The catalogue's data: the matchers that make an object disposable, read from the built-in
//! `rules/disposable.yaml` and extended by a repository's `.fluxmend.yaml`. How they match is
//! `matching`; how their YAML is read, `reader`.

use std::sync::OnceLock;

use crate::load::Repo;
use crate::parse::{NodeId, YamlFile};

use super::reader::{CatalogueError, Reader, field};

/// The built-in catalogue.
pub const BUILTIN: &str = include_str!("../../../rules/disposable.yaml");

/// The repository file whose `disposable:` key extends the catalogue.
pub const REPO_FILE: &str = crate::load::CONFIG_FILE;

#[derive(Clone, Debug)]
pub(super) struct ImageRule {
    pub(super) reason: String,
    pub(super) patterns: Vec<String>,
}

#[derive(Clone, Debug)]
pub(super) struct ChartRule {
    pub(super) reason: String,
    pub(super) names: Vec<String>,
    pub(super) source: Option<String>,
    pub(super) when: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
pub(super) struct NamesRule {
    pub(super) reason: String,
    pub(super) names: Vec<String>,
}

#[derive(Clone, Debug)]
pub(super) struct KindRule {
    pub(super) reason: String,
    pub(super) group: String,
    pub(super) names: Vec<String>,
}

/// The matchers that make an object disposable.
#[derive(Clone, Debug)]
pub struct Catalogue {
    /// Label or annotation key: `"true"` marks an object disposable, `"false"` exempts it.
    pub opt_in: String,
    pub(super) images: Vec<ImageRule>,
    pub(super) charts: Vec<ChartRule>,
    pub(super) values_image_charts: Vec<NamesRule>,
    pub(super) kinds: Vec<KindRule>,
}

impl Catalogue {
    /// The built-in catalogue (`rules/disposable.yaml`).
    pub fn builtin() -> &'static Catalogue {
        static BUILT: OnceLock<Catalogue> = OnceLock::new();
        BUILT.get_or_init(|| {
            let (yaml, err) = YamlFile::parse(BUILTIN);
            assert!(
                err.is_none(),
                "rules/disposable.yaml does not parse: {err:?}"
            );
            let root = yaml
                .docs()
                .first()
                .expect("rules/disposable.yaml is empty")
                .root;
            let mut cat = Catalogue {
                opt_in: String::new(),
                images: Vec::new(),
                charts: Vec::new(),
                values_image_charts: Vec::new(),
                kinds: Vec::new(),
            };
            if let Err(e) = cat.extend_from(&yaml, root, "rules/disposable.yaml") {
                panic!("invalid built-in catalogue: {e}");
            }
            cat
        })
    }

    /// The built-in catalogue extended by the repository's `.fluxmend.yaml`, and the reason the
    /// repository file was not used, if it was not.
    pub fn for_repo(repo: &Repo) -> (Catalogue, Option<CatalogueError>) {
        let mut cat = Catalogue::builtin().clone();
        let Some(id) = repo.file_id(REPO_FILE) else {
            return (cat, None);
        };
        let file = repo.file(id);
        let fail = |line: usize, column: usize, message: String| CatalogueError {
            file: REPO_FILE.into(),
            line,
            column,
            message,
        };
        if let Some(e) = &file.error {
            return (
                cat,
                Some(fail(
                    e.line,
                    e.column,
                    format!("does not parse: {}", e.message),
                )),
            );
        }
        let Some(doc) = file.yaml.docs().first() else {
            return (cat, None);
        };
        let Some((_, section)) = file.yaml.entry(doc.root, "disposable") else {
            return (cat, None);
        };
        let mut extended = cat.clone();
        match extended.extend_from(&file.yaml, section, REPO_FILE) {
            Ok(()) => cat = extended,
            Err(e) => return (cat, Some(e)),
        }
        (cat, None)
    }

    /// Check a `disposable:` section of a configuration file: the first error, if any, so that
    /// the configuration reports it where it is written.
    pub fn check_section(
        yaml: &YamlFile,
        section: NodeId,
        file: &str,
    ) -> Result<(), CatalogueError> {
        Catalogue::builtin()
            .clone()
            .extend_from(yaml, section, file)
    }

    /// Parse a catalogue from YAML text (the shape of `rules/disposable.yaml`), extending the
    /// built-in one.
    pub fn from_text(text: &str, file: &str) -> Result<Catalogue, CatalogueError> {
        let (yaml, err) = YamlFile::parse(text);
        if let Some(e) = err {
            return Err(CatalogueError {
                file: file.into(),
                line: e.line,
                column: e.column,
                message: e.message,
            });
        }
        let mut cat = Catalogue::builtin().clone();
        if let Some(doc) = yaml.docs().first() {
            cat.extend_from(&yaml, doc.root, file)?;
        }
        Ok(cat)
    }

    fn extend_from(
        &mut self,
        yaml: &YamlFile,
        map: NodeId,
        file: &str,
    ) -> Result<(), CatalogueError> {
        let p = Reader { yaml, file };
        for (key, value) in p.entries(map)? {
            match key.as_str() {
                "optIn" => self.opt_in = p.string(value)?,
                "images" => {
                    for item in p.list(value)? {
                        let (reason, fields) = p.rule(item, &["match"])?;
                        let patterns = p.strings(p.required(item, &fields, "match")?)?;
                        self.images.push(ImageRule { reason, patterns });
                    }
                }
                "charts" => {
                    for item in p.list(value)? {
                        let (reason, fields) = p.rule(item, &["names", "source", "when"])?;
                        let names = p.strings(p.required(item, &fields, "names")?)?;
                        let source = match field(&fields, "source") {
                            Some(n) => Some(p.string(n)?),
                            None => None,
                        };
                        let mut when = Vec::new();
                        if let Some(list) = field(&fields, "when") {
                            for cond in p.list(list)? {
                                let c = p.entries(cond)?;
                                let get = |k: &str| {
                                    field(&c, k)
                                        .ok_or_else(|| p.error(cond, format!("`when` needs `{k}`")))
                                };
                                when.push((p.string(get("path")?)?, p.string(get("equals")?)?));
                            }
                        }
                        self.charts.push(ChartRule {
                            reason,
                            names,
                            source,
                            when,
                        });
                    }
                }
                "valuesImageCharts" => {
                    for item in p.list(value)? {
                        let (reason, fields) = p.rule(item, &["names"])?;
                        let names = p.strings(p.required(item, &fields, "names")?)?;
                        self.values_image_charts.push(NamesRule { reason, names });
                    }
                }
                "kinds" => {
                    for item in p.list(value)? {
                        let (reason, fields) = p.rule(item, &["group", "names"])?;
                        let group = p.string(p.required(item, &fields, "group")?)?;
                        let names = p.strings(p.required(item, &fields, "names")?)?;
                        self.kinds.push(KindRule {
                            reason,
                            group,
                            names,
                        });
                    }
                }
                other => {
                    return Err(p.error(
                        value,
                        format!(
                            "unknown key `{other}` (expected optIn, images, charts, valuesImageCharts, kinds)"
                        ),
                    ));
                }
            }
        }
        if self.opt_in.is_empty() {
            return Err(p.error(
                map,
                "`optIn` (the opt-in label/annotation key) is empty".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_catalogue_parses() {
        let c = Catalogue::builtin();
        assert_eq!(c.opt_in, "fluxmend.io/disposable");
        assert!(c.images.len() >= 10 && c.charts.len() >= 5 && c.kinds.len() >= 2);
    }
}
