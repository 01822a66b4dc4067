//! Reading a kustomization file, and the configuration of a builtin plugin, exactly as
//! kustomize v5.5 reads it, so that what the gate hands kubectl is what fluxmend checked.
//!
//! kustomize turns the YAML into JSON (`sigs.k8s.io/yaml`, go-yaml v2's YAML 1.1 scalars) and
//! decodes that with Go's `encoding/json`, whose field names match **case-insensitively** (and,
//! beyond ASCII, through Unicode folding: `ſ` is an `s`); a kustomization is decoded strictly
//! (`api/types/kustomization.go`: an unknown field fails the build), a plugin configuration
//! leniently (unknown fields ignored, `api/internal/builtins`). The reader here knows every
//! field of both (`api/types`), finds each key as Go does, and refuses — as "not verified",
//! with the place and the reason — what it cannot read the same way: a tag (`!!binary` is
//! decoded to other bytes), a key that is not ASCII, two keys Go reads as one, a merge key, a
//! value of a type kustomize would refuse, a Helm chart. What it accepts it writes back as
//! canonical JSON, the only form of the file the gate's sandbox ever holds, and it lists every
//! reference to a file, a directory or a URL the build would follow.

use serde_json::{Map, Value as Json};

use crate::parse::{NodeId, NodeKind, ScalarStyle, YamlFile};

use super::go_yaml::{Plain, first_tag, resolve_plain};
use super::schema::{
    Field, HELM, KUSTOMIZATION, OBJECT_META, PLUGIN_DIRECTORY_FIELDS, PLUGINS, RefKind, Shape,
    refused,
};

/// One reference, as written.
#[derive(Clone, Debug)]
pub struct Ref {
    /// The field it is in (`resources`, `patches[0].path`).
    pub field: String,
    pub text: String,
    pub kind: RefKind,
    /// Its index in the field's list, when the field is a list of references.
    pub index: Option<usize>,
    /// Its line and column in the file.
    pub at: (usize, usize),
}

/// A document read: its canonical JSON and the references in it.
#[derive(Debug)]
pub struct Read {
    pub json: Json,
    pub refs: Vec<Ref>,
}

/// Why a document cannot be read as kustomize reads it: line, column, reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.reason)
    }
}

/// The canonical text of a document read (or written from one): the bytes the sandbox holds.
pub fn canonical(json: &Json) -> String {
    serde_json::to_string(json).expect("JSON values serialise") + "\n"
}

/// How many nodes one document may expand to (aliases included) before it is refused.
const NODE_BUDGET: usize = 100_000;

/// Read the kustomization document `root` of `yaml`. `plugins_only`: the directory is built for
/// plugin configurations, and may only place and name them.
pub fn read_kustomization(
    yaml: &YamlFile,
    root: NodeId,
    plugins_only: bool,
) -> Result<Read, Refusal> {
    let mut reader = Reader::new(yaml, false)?;
    let json = reader.read_struct(root, KUSTOMIZATION, "", true)?;
    if plugins_only
        && let Json::Object(map) = &json
        && let Some(field) = map
            .keys()
            .find(|k| !PLUGIN_DIRECTORY_FIELDS.contains(&k.as_str()))
    {
        return Err(reader.refusal(
            root,
            format!(
                "`{field}` in a kustomization built for plugin configurations (it could rewrite them after fluxmend read them)"
            ),
        ));
    }
    Ok(Read {
        json,
        refs: reader.refs,
    })
}

/// Read one builtin plugin configuration (a document of a `generators:`/`transformers:`/
/// `validators:` file or inline string): `apiVersion: builtin`, a kind kustomize knows, its
/// fields as the plugin reads them (unknown ones dropped, as kustomize ignores them).
pub fn read_plugin(yaml: &YamlFile, root: NodeId) -> Result<Read, Refusal> {
    let mut reader = Reader::new(yaml, true)?;
    let node = reader.mapping(root)?;
    let exact = |key: &str| {
        yaml.entries(node)
            .iter()
            .find(|(k, _)| yaml.scalar(*k) == Some(key))
            .map(|(_, v)| v)
    };
    // kyaml reads these three exactly as spelled: another spelling would be read differently.
    for (k, _) in yaml.entries(node) {
        if let Some(key) = yaml.scalar(k)
            && ["apiVersion", "kind", "metadata"]
                .iter()
                .any(|f| f.eq_ignore_ascii_case(key) && *f != key)
        {
            return Err(reader.refusal(
                k,
                format!("`{key}`: kustomize reads it only spelled in lower camel case"),
            ));
        }
    }
    let api = exact("apiVersion").and_then(|n| yaml.scalar(n));
    let kind = exact("kind")
        .and_then(|n| yaml.scalar(n))
        .unwrap_or_default();
    if api != Some("builtin") {
        return Err(reader.refusal(
            root,
            format!(
                "plugin `{kind}` is not `apiVersion: builtin` (kustomize runs only its builtin plugins here)"
            ),
        ));
    }
    let fields = match PLUGINS.iter().find(|(k, _)| *k == kind) {
        Some((_, Some(fields))) => *fields,
        Some((_, None)) => return Err(reader.refusal(root, format!("{kind}: {}", refused(HELM)))),
        None => {
            return Err(reader.refusal(
                root,
                format!("`{kind}` is not a builtin plugin of kustomize v5.5"),
            ));
        }
    };
    let mut json = reader.read_struct(node, fields, "", false)?;
    let Json::Object(map) = &mut json else {
        unreachable!("a struct reads to an object")
    };
    map.insert("apiVersion".into(), Json::String("builtin".into()));
    map.insert("kind".into(), Json::String(kind.into()));
    if !map.contains_key("metadata")
        && let Some(meta) = exact("metadata")
    {
        let meta = reader.read(meta, OBJECT_META, "metadata")?;
        map.insert("metadata".into(), meta);
    }
    Ok(Read {
        json,
        refs: reader.refs,
    })
}

struct Reader<'a> {
    yaml: &'a YamlFile,
    refs: Vec<Ref>,
    budget: usize,
    /// A plugin configuration: unknown fields are ignored (kustomize decodes it leniently).
    lenient: bool,
}

impl<'a> Reader<'a> {
    fn new(yaml: &'a YamlFile, lenient: bool) -> Result<Reader<'a>, Refusal> {
        if let Some((line, column)) = first_tag(yaml.text()) {
            return Err(Refusal {
                line,
                column,
                reason: "a tag (`!…`): go-yaml decodes tagged values (`!!binary`, …) into other bytes than fluxmend reads".into(),
            });
        }
        Ok(Reader {
            yaml,
            refs: Vec::new(),
            budget: NODE_BUDGET,
            lenient,
        })
    }

    fn at(&self, id: NodeId) -> (usize, usize) {
        self.yaml.line_col(self.yaml.node(id).span.start)
    }

    fn refusal(&self, id: NodeId, reason: String) -> Refusal {
        let (line, column) = self.at(id);
        Refusal {
            line,
            column,
            reason,
        }
    }

    /// Follow aliases, counting the node against the budget.
    fn resolve(&mut self, id: NodeId) -> Result<NodeId, Refusal> {
        self.budget = self
            .budget
            .checked_sub(1)
            .ok_or_else(|| self.refusal(id, format!("expands to more than {NODE_BUDGET} nodes")))?;
        self.yaml
            .resolve(id)
            .ok_or_else(|| self.refusal(id, "an alias to an unknown anchor".into()))
    }

    fn mapping(&mut self, id: NodeId) -> Result<NodeId, Refusal> {
        let node = self.resolve(id)?;
        match self.yaml.node(node).kind {
            NodeKind::Mapping { .. } => Ok(node),
            _ => Err(self.refusal(id, "not a mapping".into())),
        }
    }

    /// A scalar: its text and, when plain, what go-yaml makes of it (`None` when quoted or
    /// block: a string).
    fn scalar(&mut self, id: NodeId) -> Result<Option<(String, Option<Plain>)>, Refusal> {
        let node = self.resolve(id)?;
        let NodeKind::Scalar { style, .. } = self.yaml.node(node).kind else {
            return Ok(None);
        };
        let text = self.yaml.scalar_text(node).to_string();
        let plain = (style == ScalarStyle::Plain).then(|| resolve_plain(&text));
        Ok(Some((text, plain)))
    }

    /// A string-typed value: `Ok(None)` for null (Go leaves the field empty).
    fn string(&mut self, id: NodeId, field: &str) -> Result<Option<String>, Refusal> {
        match self.scalar(id)? {
            Some((_, Some(Plain::Null))) => Ok(None),
            Some((text, None | Some(Plain::Str))) => Ok(Some(text)),
            Some((text, Some(_))) => Err(self.refusal(
                id,
                format!("`{field}: {text}` is not a string to kustomize (quote it)"),
            )),
            None => Err(self.refusal(id, format!("`{field}` is not a string"))),
        }
    }

    fn read(&mut self, id: NodeId, shape: Shape, field: &str) -> Result<Json, Refusal> {
        let resolved = self.resolve(id)?;
        if matches!(
            self.yaml.node(resolved).kind,
            NodeKind::Scalar {
                style: ScalarStyle::Plain,
                ..
            }
        ) && resolve_plain(self.yaml.scalar_text(resolved)) == Plain::Null
        {
            return Ok(Json::Null);
        }
        Ok(match shape {
            Shape::Refused(why) => return Err(self.refusal(id, format!("`{field}`: {why}"))),
            Shape::Str => self.string(id, field)?.map_or(Json::Null, Json::String),
            Shape::Bool => match self.scalar(id)? {
                Some((_, Some(Plain::Bool(b)))) => Json::Bool(b),
                _ => {
                    return Err(
                        self.refusal(id, format!("`{field}` is not a boolean to kustomize"))
                    );
                }
            },
            Shape::Int => match self.scalar(id)? {
                Some((_, Some(Plain::Int(i)))) => Json::from(i),
                _ => {
                    return Err(
                        self.refusal(id, format!("`{field}` is not an integer to kustomize"))
                    );
                }
            },
            Shape::Ref(kind) => {
                let Some(text) = self.string(id, field)? else {
                    return Ok(Json::Null);
                };
                let at = self.at(id);
                self.refs.push(Ref {
                    field: field.to_string(),
                    text: text.clone(),
                    kind,
                    index: None,
                    at,
                });
                Json::String(text)
            }
            Shape::Strs | Shape::Refs(_) => {
                let items = self.items(id, field)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let f = format!("{field}[{i}]");
                    let Some(text) = self.string(item, &f)? else {
                        return Err(self.refusal(item, format!("`{f}` is empty")));
                    };
                    if let Shape::Refs(kind) = shape {
                        let at = self.at(item);
                        self.refs.push(Ref {
                            field: field.to_string(),
                            text: text.clone(),
                            kind,
                            index: Some(i),
                            at,
                        });
                    }
                    out.push(Json::String(text));
                }
                Json::Array(out)
            }
            Shape::List(item_shape) => {
                let items = self.items(id, field)?;
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    out.push(self.read(item, *item_shape, &format!("{field}[{i}]"))?);
                }
                Json::Array(out)
            }
            Shape::StrMap | Shape::BoolMap | Shape::OpenApi => {
                let node = self.mapping(id)?;
                let mut out = Map::new();
                for (k, v) in self.yaml.entries(node) {
                    let key = self.map_key(k, field)?;
                    let f = format!("{field}.{key}");
                    let value = if let Shape::BoolMap = shape {
                        match self.scalar(v)? {
                            Some((_, Some(Plain::Bool(b)))) => Json::Bool(b),
                            _ => {
                                return Err(
                                    self.refusal(v, format!("`{f}` is not a boolean to kustomize"))
                                );
                            }
                        }
                    } else {
                        let text = self.string(v, &f)?;
                        if let (Shape::OpenApi, "path", Some(text)) = (shape, key.as_str(), &text) {
                            let at = self.at(v);
                            self.refs.push(Ref {
                                field: f.clone(),
                                text: text.clone(),
                                kind: RefKind::File,
                                index: None,
                                at,
                            });
                        }
                        text.map_or(Json::Null, Json::String)
                    };
                    out.insert(key, value);
                }
                Json::Object(out)
            }
            Shape::Struct(fields) => self.read_struct(id, fields, field, !self.lenient)?,
        })
    }

    fn items(&mut self, id: NodeId, field: &str) -> Result<Vec<NodeId>, Refusal> {
        let node = self.resolve(id)?;
        match self.yaml.node(node).kind {
            NodeKind::Sequence { items, .. } => Ok(items.to_vec()),
            _ => Err(self.refusal(id, format!("`{field}` is not a list"))),
        }
    }

    /// A key of a Go map (`map[string]…`): a string as go-yaml makes it.
    fn map_key(&mut self, k: NodeId, field: &str) -> Result<String, Refusal> {
        match self.scalar(k)? {
            Some((text, None | Some(Plain::Str))) => Ok(text),
            Some((text, Some(_))) => Err(self.refusal(
                k,
                format!("the key `{text}` in `{field}` is not a string to go-yaml (quote it)"),
            )),
            None => Err(self.refusal(k, format!("a key in `{field}` is not a scalar"))),
        }
    }

    /// A Go struct: each key found as `encoding/json` finds it (case-insensitively); a key
    /// that is not ASCII, two keys naming one field, a merge key are refused; an unknown key
    /// fails the build (`strict`) or is ignored.
    fn read_struct(
        &mut self,
        id: NodeId,
        fields: &[Field],
        field: &str,
        strict: bool,
    ) -> Result<Json, Refusal> {
        let node = self.mapping(id)?;
        let mut out = Map::new();
        let mut seen: Vec<(&'static str, String)> = Vec::new();
        for (k, v) in self.yaml.entries(node) {
            let Some((key, plain)) = self.scalar(k)? else {
                return Err(self.refusal(k, "a key that is not a scalar".into()));
            };
            if key == "<<" && plain.is_some() {
                return Err(self.refusal(k, "a merge key (`<<`): not read by the gate".into()));
            }
            if !key.is_ascii() {
                return Err(self.refusal(
                    k,
                    format!(
                        "the key `{key}` is not ASCII: Go's JSON folds such keys onto field names (`ſ` reads as `s`)"
                    ),
                ));
            }
            let Some(&(name, shape)) = fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(&key))
            else {
                if strict {
                    let path = if field.is_empty() {
                        key.clone()
                    } else {
                        format!("{field}.{key}")
                    };
                    return Err(self.refusal(
                        k,
                        format!("unknown field `{path}` (kustomize refuses the file)"),
                    ));
                }
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(self.refusal(
                    k,
                    format!("the key `{key}` repeats `{first}`: Go reads both as `{name}`"),
                ));
            }
            seen.push((name, key));
            let path = if field.is_empty() {
                name.to_string()
            } else {
                format!("{field}.{name}")
            };
            let value = self.read(v, shape, &path)?;
            if !value.is_null() {
                out.insert(name.to_string(), value);
            }
        }
        Ok(Json::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kustomization(text: &str) -> Result<Read, Refusal> {
        let (yaml, error) = YamlFile::parse(text);
        assert!(error.is_none(), "{error:?}");
        read_kustomization(&yaml, yaml.docs()[0].root, false)
    }

    #[test]
    fn reads_keys_as_go_does_and_writes_them_canonically() {
        let read = kustomization(
            "Resources:\n  - a.yaml\nNAMEPREFIX: p-\nconfigMapGenerator:\n  - Name: x\n    FILES: [k=v.txt]\npatches:\n  - Path: p.yaml\n    TARGET: {Kind: Deployment}\n",
        )
        .unwrap();
        assert_eq!(
            read.json,
            serde_json::json!({
                "resources": ["a.yaml"],
                "namePrefix": "p-",
                "configMapGenerator": [{"name": "x", "files": ["k=v.txt"]}],
                "patches": [{"path": "p.yaml", "target": {"kind": "Deployment"}}],
            })
        );
        let refs: Vec<(&str, &str, RefKind)> = read
            .refs
            .iter()
            .map(|r| (r.field.as_str(), r.text.as_str(), r.kind))
            .collect();
        assert_eq!(
            refs,
            [
                ("resources", "a.yaml", RefKind::Resource),
                ("configMapGenerator[0].files", "k=v.txt", RefKind::KeyFile),
                ("patches[0].path", "p.yaml", RefKind::File),
            ]
        );
    }

    #[test]
    fn refuses_what_go_would_read_differently() {
        for (text, why) in [
            ("resources: [a]\nResources: [b]\n", "repeats `resources`"),
            ("re\u{17f}ources: [a]\n", "not ASCII"),
            ("resources: [!!binary L2V0Yw==]\n", "a tag"),
            ("resources: !!seq [a]\n", "a tag"),
            ("namePrefix: yes\n", "not a string to kustomize"),
            ("replicas: [{name: a, count: '3'}]\n", "not an integer"),
            ("helmCharts: [{name: x}]\n", "Helm chart"),
            ("resourcez: [a]\n", "unknown field `resourcez`"),
            ("base: &b {namePrefix: x}\n<<: *b\n", "unknown field"),
            ("<<: {namePrefix: x}\n", "merge key"),
        ] {
            let e = kustomization(text).unwrap_err();
            assert!(e.reason.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn plugin_configurations_are_builtin_and_lenient() {
        let parse = |text: &str| {
            let (yaml, error) = YamlFile::parse(text);
            assert!(error.is_none());
            read_plugin(&yaml, yaml.docs()[0].root)
        };
        let read = parse(
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\nPath: x.yaml\nextra: ignored\n",
        )
        .unwrap();
        assert_eq!(
            read.json,
            serde_json::json!({"apiVersion": "builtin", "kind": "PatchTransformer", "metadata": {"name": "p"}, "path": "x.yaml"})
        );
        assert_eq!(read.refs[0].kind, RefKind::File);
        for (text, why) in [
            (
                "apiVersion: v1\nkind: ConfigMap\n",
                "not `apiVersion: builtin`",
            ),
            ("apiVersion: builtin\nkind: Exec\n", "not a builtin plugin"),
            (
                "apiVersion: builtin\nKind: PatchTransformer\n",
                "lower camel case",
            ),
            (
                "apiVersion: builtin\nkind: HelmChartInflationGenerator\n",
                "Helm chart",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.reason.contains(why), "{text}: {e}");
        }
    }

    #[test]
    fn resolves_plain_scalars_as_go_yaml_v2() {
        for (s, want) in [
            ("yes", Plain::Bool(true)),
            ("Off", Plain::Bool(false)),
            ("~", Plain::Null),
            ("0x1F", Plain::Int(31)),
            ("017", Plain::Int(15)),
            ("0b101", Plain::Int(5)),
            ("1_000", Plain::Int(1000)),
            ("-3", Plain::Int(-3)),
            ("1.20", Plain::Number),
            (".5", Plain::Number),
            ("1e3", Plain::Number),
            ("99999999999999999999", Plain::Number),
            ("1.2.3", Plain::Str),
            ("2024-01-01", Plain::Str),
            ("v1", Plain::Str),
            ("-", Plain::Str),
            ("0x", Plain::Str),
        ] {
            assert_eq!(resolve_plain(s), want, "{s}");
        }
    }
}
