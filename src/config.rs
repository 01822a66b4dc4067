//! `.fluxmend.yaml` at the repository root: settings a team keeps with its repository, so that
//! every run (a laptop, CI, a bot) checks the same thing without repeating flags.
//!
//! ```yaml
//! rules:
//!   FM005: {enabled: false}
//!   disposable-workload-in-gated-layer: {severity: error}
//! roots: [flux-system/flux-system]
//! source-root: k8s
//! exclude: ["vendor/", "*.generated.yaml"]   # gitignore syntax; excluded files are not loaded
//! disposable: {…}                           # the FM002 catalogue extension (rules/FM002.md)
//! ```
//!
//! Command-line flags win over the file. Mistakes in it are error diagnostics at <file:line:column>
//! (an unknown key lists the valid ones); the rest of the file still applies.

use std::path::{Path, PathBuf};

use crate::diagnostics::{Diagnostic, Severity};
use crate::parse::{NodeId, NodeKind, YamlFile};
use crate::rules::Finding;

/// The configuration file's name (defined with the loader, which leaves it out of what Flux
/// reads).
pub use crate::load::CONFIG_FILE as FILE;

/// The top-level keys.
const KEYS: &[&str] = &["rules", "roots", "source-root", "exclude", "disposable"];

/// The keys of one rule's settings.
const RULE_KEYS: &[&str] = &["enabled", "severity"];

/// One rule's settings from `rules:`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleSetting {
    /// The rule's id (the file may name it by id or name).
    pub id: &'static str,
    /// `enabled: false` leaves the rule out unless `--rule`/`--select` names it.
    pub enabled: bool,
    /// The severity its findings get instead of the rule's own.
    pub severity: Option<Severity>,
}

/// The settings of `.fluxmend.yaml`, and what was wrong in it.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub rules: Vec<RuleSetting>,
    /// Flux Kustomizations to treat as roots (as `--root`).
    pub roots: Vec<String>,
    /// The artifact root of OCI/Bucket sources (as `--source-root`).
    pub source_root: Option<String>,
    /// gitignore patterns, relative to the repository root, of files and directories not to load.
    pub exclude: Vec<String>,
    /// Mistakes in the file (errors), reported with the other diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// The file as reports name it, relative to PATH (`.fluxmend.yaml`, `../.fluxmend.yaml`).
    pub file: String,
}

impl Config {
    /// The configuration of the repository at `root`: its `.fluxmend.yaml`, or the nearest one
    /// above it up to the git work tree's top level ([`discover`]); empty when there is none.
    pub fn read(root: &Path) -> Config {
        match discover(root) {
            Some(path) => Config::read_file(&path, root),
            None => Config {
                file: FILE.to_string(),
                ..Config::default()
            },
        }
    }

    /// The configuration in the file `path` (`--config FILE`, or the one discovered), its
    /// mistakes reported at the file as seen from `root`.
    pub fn read_file(path: &Path, root: &Path) -> Config {
        let mut config = match read_config_file(path) {
            Err(e) => Config::failed(1, 1, format!("cannot be read: {e}")),
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Config::parse(&text),
                Err(_) => Config::failed(1, 1, "is not UTF-8 text".into()),
            },
        };
        config.file = shown_from(root, path);
        for d in &mut config.diagnostics {
            if let Some(file) = d.place.file_mut()
                && file == FILE
            {
                file.clone_from(&config.file);
            }
        }
        config
    }

    fn failed(line: usize, column: usize, message: String) -> Config {
        Config {
            diagnostics: vec![error_at(line, column, message)],
            ..Config::default()
        }
    }

    /// The configuration in `text` (the content of `.fluxmend.yaml`).
    pub fn parse(text: &str) -> Config {
        let (yaml, error) = YamlFile::parse(text);
        if let Some(e) = error {
            return Config::failed(e.line, e.column, format!("does not parse: {}", e.message));
        }
        let mut reader = Reader {
            yaml: &yaml,
            config: Config::default(),
        };
        if let Some(doc) = yaml.docs().first() {
            reader.top(doc.root);
        }
        reader.config
    }

    /// The ids of the rules the file disables.
    pub fn disabled(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.rules.iter().filter(|r| !r.enabled).map(|r| r.id)
    }

    /// Give findings the severity the file sets for their rule.
    pub fn apply_severity(&self, findings: &mut [Finding]) {
        for f in findings {
            if let Some(severity) = self
                .rules
                .iter()
                .find(|r| r.id == f.rule)
                .and_then(|r| r.severity)
            {
                f.severity = severity;
            }
        }
    }
}

/// `.fluxmend.yaml` in `root` or, inside a git work tree, in the nearest directory above it up
/// to the top level: one file serves a repository whether fluxmend runs on its top level or on
/// the folder that holds the Flux tree. Outside git only `root` itself is looked in, so that a
/// file in a home directory never applies by accident.
pub fn discover(root: &Path) -> Option<PathBuf> {
    let start = root.canonicalize().ok()?;
    let top = start
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(&start);
    start
        .ancestors()
        .take_while(|dir| dir.starts_with(top))
        .map(|dir| dir.join(FILE))
        .find(|file| file.is_file())
}

/// `path` as seen from `root` (`../.fluxmend.yaml`), `/`-separated; as given when that cannot be
/// said.
fn shown_from(root: &Path, path: &Path) -> String {
    let (Ok(root), Ok(file)) = (root.canonicalize(), path.canonicalize()) else {
        return path.display().to_string();
    };
    let common = root
        .components()
        .zip(file.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts = vec!["..".to_string(); root.components().count() - common];
    parts.extend(
        file.components()
            .skip(common)
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

fn error_at(line: usize, column: usize, message: String) -> Diagnostic {
    Diagnostic::new(Severity::Error, FILE, message).at(line, column)
}

struct Reader<'y> {
    yaml: &'y YamlFile,
    config: Config,
}

impl Reader<'_> {
    fn error(&mut self, node: NodeId, message: String) {
        let (line, column) = self.yaml.line_col(self.yaml.node(node).span.start);
        self.config
            .diagnostics
            .push(error_at(line, column, message));
    }

    /// A null or empty value: the key is written but sets nothing.
    fn is_empty(&self, node: NodeId) -> bool {
        self.yaml
            .scalar(node)
            .is_some_and(|s| s.is_empty() || s == "~" || s == "null")
    }

    fn is_mapping(&self, node: NodeId) -> bool {
        let id = self.yaml.resolve(node).unwrap_or(node);
        matches!(self.yaml.node(id).kind, NodeKind::Mapping { .. })
    }

    fn top(&mut self, root: NodeId) {
        if self.is_empty(root) {
            return;
        }
        if !self.is_mapping(root) {
            self.error(root, format!("expected a mapping of {}", KEYS.join(", ")));
            return;
        }
        for (key, value) in self.yaml.entries(root) {
            let name = self.yaml.scalar(key).unwrap_or_default();
            match name {
                "rules" => self.rules(value),
                "roots" => self.config.roots = self.strings(value, "roots"),
                "source-root" => match self.yaml.scalar(value) {
                    Some(dir) if !dir.is_empty() => self.config.source_root = Some(dir.into()),
                    _ => self.error(value, "`source-root` takes a directory".into()),
                },
                "exclude" => {
                    let patterns = self.strings(value, "exclude");
                    self.exclude(value, patterns);
                }
                "disposable" => {
                    if let Err(e) =
                        crate::rules::disposable::Catalogue::check_section(self.yaml, value, FILE)
                    {
                        self.config.diagnostics.push(error_at(
                            e.line,
                            e.column,
                            format!(
                                "disposable: {}; FM002 runs with the built-in catalogue only",
                                e.message
                            ),
                        ));
                    }
                }
                other => self.error(
                    key,
                    format!("unknown key `{other}` (valid keys: {})", KEYS.join(", ")),
                ),
            }
        }
    }

    /// A list of strings (or one string).
    fn strings(&mut self, node: NodeId, key: &str) -> Vec<String> {
        if self.is_empty(node) {
            return Vec::new();
        }
        if let Some(one) = self.yaml.scalar(node) {
            return vec![one.to_string()];
        }
        let mut out = Vec::new();
        for &item in self.yaml.items(node) {
            match self.yaml.scalar(item) {
                Some(s) if !s.is_empty() => out.push(s.to_string()),
                _ => self.error(item, format!("`{key}` takes a list of strings")),
            }
        }
        if out.is_empty() && self.yaml.items(node).is_empty() {
            self.error(node, format!("`{key}` takes a list of strings"));
        }
        out
    }

    /// Keep the patterns gitignore accepts.
    fn exclude(&mut self, node: NodeId, patterns: Vec<String>) {
        for pattern in patterns {
            let mut builder = ignore::gitignore::GitignoreBuilder::new("/");
            match builder.add_line(None, &pattern) {
                Ok(_) => self.config.exclude.push(pattern),
                Err(e) => self.error(node, format!("exclude: {pattern:?} is not a pattern: {e}")),
            }
        }
    }

    fn rules(&mut self, node: NodeId) {
        if self.is_empty(node) {
            return;
        }
        if !self.is_mapping(node) {
            self.error(
                node,
                "`rules` takes a mapping of rule ids or names to settings".into(),
            );
            return;
        }
        for (key, value) in self.yaml.entries(node) {
            let name = self.yaml.scalar(key).unwrap_or_default();
            let Some(rule) = crate::rules::by_id(name) else {
                self.error(
                    key,
                    format!(
                        "rules: no rule {name:?} (give an id such as FM002 or a name; `fluxmend rules` lists them)"
                    ),
                );
                continue;
            };
            let mut setting = RuleSetting {
                id: rule.meta().id,
                enabled: true,
                severity: None,
            };
            if !self.is_mapping(value) {
                self.error(
                    value,
                    format!("rules.{name} takes a mapping of {}", RULE_KEYS.join(", ")),
                );
                continue;
            }
            for (k, v) in self.yaml.entries(value) {
                let field = self.yaml.scalar(k).unwrap_or_default();
                let text = self.yaml.scalar(v).unwrap_or_default();
                match field {
                    "enabled" => match text {
                        "true" => setting.enabled = true,
                        "false" => setting.enabled = false,
                        _ => self.error(v, format!("rules.{name}.enabled takes true or false")),
                    },
                    "severity" => match text {
                        "error" => setting.severity = Some(Severity::Error),
                        "warning" => setting.severity = Some(Severity::Warning),
                        "note" => setting.severity = Some(Severity::Note),
                        _ => self.error(
                            v,
                            format!("rules.{name}.severity takes error, warning or note"),
                        ),
                    },
                    other => self.error(
                        k,
                        format!(
                            "rules.{name}: unknown key `{other}` (valid keys: {})",
                            RULE_KEYS.join(", ")
                        ),
                    ),
                }
            }
            self.config.rules.retain(|r| r.id != setting.id);
            self.config.rules.push(setting);
        }
    }
}

/// The bytes of a configuration file, read as every repository file is (no link followed,
/// regular files only, within the size limit), from the directory that holds it.
fn read_config_file(path: &Path) -> Result<Vec<u8>, crate::load::read::ReadError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    crate::load::read::read_repo_file(dir, &name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(config: &Config) -> Vec<(usize, usize, &str)> {
        config
            .diagnostics
            .iter()
            .map(|d| {
                let (line, column) = d.place.position().unwrap();
                (line, column, d.message.as_str())
            })
            .collect()
    }

    #[test]
    fn a_full_file_reads() {
        let config = Config::parse(
            "rules:\n  FM005: {enabled: false}\n  disposable-workload-in-gated-layer:\n    severity: error\nroots: [flux-system]\nsource-root: k8s\nexclude:\n  - vendor/\n",
        );
        assert!(config.diagnostics.is_empty(), "{:?}", config.diagnostics);
        assert_eq!(config.disabled().collect::<Vec<_>>(), ["FM005"]);
        assert_eq!(
            config.rules[1],
            RuleSetting {
                id: "FM002",
                enabled: true,
                severity: Some(Severity::Error)
            }
        );
        assert_eq!(config.roots, ["flux-system"]);
        assert_eq!(config.source_root.as_deref(), Some("k8s"));
        assert_eq!(config.exclude, ["vendor/"]);
    }

    #[test]
    fn mistakes_are_placed_and_list_the_valid_keys() {
        let config = Config::parse(
            "rule:\n  FM002: {enabled: false}\nrules:\n  FM999: {}\n  FM001: {enabled: no, level: x}\n",
        );
        let found = places(&config);
        assert_eq!(found[0].0, 1);
        assert_eq!(found[0].1, 1);
        assert!(found[0].2.contains(
            "unknown key `rule` (valid keys: rules, roots, source-root, exclude, disposable)"
        ));
        assert_eq!((found[1].0, found[1].1), (4, 3));
        assert!(found[1].2.contains("no rule \"FM999\""));
        assert_eq!((found[2].0, found[2].1), (5, 20));
        assert!(found[2].2.contains("enabled takes true or false"));
        assert_eq!((found[3].0, found[3].1), (5, 24));
        assert!(
            found[3]
                .2
                .contains("unknown key `level` (valid keys: enabled, severity)")
        );
        assert!(config.rules.iter().all(|r| r.enabled));
    }

    #[test]
    fn a_catalogue_mistake_is_a_diagnostic_of_the_file() {
        let config = Config::parse("disposable:\n  images:\n    - match: ci/agent\n");
        let found = places(&config);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 3);
        assert!(
            found[0].2.contains("every matcher needs a `reason`"),
            "{found:?}"
        );
        assert!(
            Config::parse("a: [").diagnostics[0]
                .message
                .contains("does not parse")
        );
    }
}
