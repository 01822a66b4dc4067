//! What counts as a disposable workload (FM002) and what it brings along.
//!
//! The catalogue is data: `rules/disposable.yaml`, embedded at build time, extended per
//! repository by the `disposable:` key of a `.fluxmend.yaml` file at the repository root. Each
//! matcher carries the reason shown in a finding. [`Analysis`] classifies objects and computes,
//! for one layer variant, the [`Bundle`]: the disposable workloads the layer health-gates, the
//! objects only they use (which move with them), and what stays behind.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::OnceLock;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::load::Repo;
use crate::model::{LayerId, Model, ObjectIdx, ObjectKey, Rendered, is_namespaced};
use crate::parse::{NodeId, NodeKind, ScalarStyle, VALUE_NODE_BUDGET, Value, YamlFile, is_null};

/// The built-in catalogue.
pub const BUILTIN: &str = include_str!("../../rules/disposable.yaml");

/// The repository file whose `disposable:` key extends the catalogue.
pub const REPO_FILE: &str = crate::load::CONFIG_FILE;

#[derive(Clone, Debug)]
struct ImageRule {
    reason: String,
    patterns: Vec<String>,
}

#[derive(Clone, Debug)]
struct ChartRule {
    reason: String,
    names: Vec<String>,
    source: Option<String>,
    when: Vec<(String, String)>,
}

#[derive(Clone, Debug)]
struct NamesRule {
    reason: String,
    names: Vec<String>,
}

#[derive(Clone, Debug)]
struct KindRule {
    reason: String,
    group: String,
    names: Vec<String>,
}

/// The matchers that make an object disposable.
#[derive(Clone, Debug)]
pub struct Catalogue {
    /// Label or annotation key: `"true"` marks an object disposable, `"false"` exempts it.
    pub opt_in: String,
    images: Vec<ImageRule>,
    charts: Vec<ChartRule>,
    values_image_charts: Vec<NamesRule>,
    kinds: Vec<KindRule>,
}

/// A catalogue file that cannot be read as one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct CatalogueError {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
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
                .docs
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
        let Some(doc) = file.yaml.docs.first() else {
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
        if let Some(doc) = yaml.docs.first() {
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

    /// The catalogue reason an image is a disposable workload's, if it is one.
    pub fn image_reason(&self, image: &str) -> Option<&str> {
        let repo = image_repository(image);
        self.images
            .iter()
            .find(|r| r.patterns.iter().any(|p| glob(p, &repo)))
            .map(|r| r.reason.as_str())
    }

    /// Why an object is disposable (shown in the finding), or `None`. Namespaces and CRDs
    /// never are: what they hold would go with them.
    pub fn classify(&self, model: &Model, idx: ObjectIdx) -> Option<String> {
        let obj = model.object(idx);
        if obj.key.is_namespace() || obj.key.is_crd() {
            return None;
        }
        let yaml = &model.repo.file(obj.file).yaml;
        for (what, keys) in [
            ("label", ["metadata", "labels"]),
            ("annotation", ["metadata", "annotations"]),
        ] {
            let value = yaml
                .lookup(obj.root, &keys)
                .and_then(|m| yaml.entry(m, &self.opt_in))
                .and_then(|(_, v)| yaml.scalar(v));
            match value {
                Some("true") => return Some(format!("{what} {}: \"true\"", self.opt_in)),
                Some("false") => return None,
                _ => {}
            }
        }
        let group = obj.key.group();
        if let Some(rule) = self
            .kinds
            .iter()
            .find(|k| k.group == group && k.names.iter().any(|n| *n == obj.key.kind))
        {
            return Some(format!("{} ({})", obj.key.kind, rule.reason));
        }
        if obj.key.is_helm_release() {
            return self.classify_release(model, idx);
        }
        let pod_spec: &[&str] = match (group, obj.key.kind.as_str()) {
            ("", "Pod") => &["spec"],
            ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
            | ("batch", "Job") => &["spec", "template", "spec"],
            ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
            // KEDA runs one Job per queued CI job.
            ("keda.sh", "ScaledJob") => &["spec", "jobTargetRef", "template", "spec"],
            _ => return None,
        };
        let spec = yaml.lookup(obj.root, pod_spec)?;
        let containers = yaml.lookup(spec, &["containers"])?;
        yaml.items(containers).iter().find_map(|&c| {
            let image = yaml.lookup(c, &["image"]).and_then(|n| yaml.scalar(n))?;
            let reason = self.image_reason(image)?;
            Some(format!("runs image {image}: {reason}"))
        })
    }

    fn classify_release(&self, model: &Model, idx: ObjectIdx) -> Option<String> {
        let obj = model.object(idx);
        let yaml = &model.repo.file(obj.file).yaml;
        let chart = model.helm_chart(idx)?;
        let values = yaml
            .lookup(obj.root, &["spec", "values"])
            .and_then(|n| yaml.value(n).ok())
            .unwrap_or(Value::Null);
        for rule in &self.charts {
            if !rule.names.contains(&chart) {
                continue;
            }
            if let Some(source) = &rule.source
                && !chart_source_url(model, idx).is_some_and(|u| u.contains(source.as_str()))
            {
                continue;
            }
            let holds = rule.when.iter().all(|(path, equals)| {
                let keys: Vec<&str> = path.split('.').collect();
                values.path(&keys).and_then(Value::as_str) == Some(equals.as_str())
            });
            if holds {
                return Some(format!("HelmRelease of chart {chart}: {}", rule.reason));
            }
        }
        if let Some(generic) = self
            .values_image_charts
            .iter()
            .find(|r| r.names.contains(&chart))
        {
            let mut images = Vec::new();
            values_images(&values, &mut images);
            for image in images {
                if let Some(reason) = self.image_reason(&image) {
                    return Some(format!(
                        "HelmRelease of chart {chart} ({}) whose values run image {image}: {reason}",
                        generic.reason
                    ));
                }
            }
        }
        None
    }
}

fn field(fields: &[(String, NodeId)], key: &str) -> Option<NodeId> {
    fields.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Reads catalogue YAML by node, so that errors carry lines.
struct Reader<'a> {
    yaml: &'a YamlFile,
    file: &'a str,
}

impl Reader<'_> {
    fn error(&self, node: NodeId, message: String) -> CatalogueError {
        let (line, column) = self.yaml.line_col(self.yaml.node(node).span.start);
        CatalogueError {
            file: self.file.into(),
            line,
            column,
            message,
        }
    }

    fn entries(&self, map: NodeId) -> Result<Vec<(String, NodeId)>, CatalogueError> {
        let id = self.yaml.resolve(map).unwrap_or(map);
        let NodeKind::Mapping { entries, .. } = self.yaml.node(id).kind else {
            return Err(self.error(map, "expected a mapping".into()));
        };
        entries
            .iter()
            .map(|&(k, v)| {
                let key = self
                    .yaml
                    .scalar(k)
                    .ok_or_else(|| self.error(k, "expected a plain key".into()))?;
                Ok((key.to_string(), v))
            })
            .collect()
    }

    fn list(&self, node: NodeId) -> Result<Vec<NodeId>, CatalogueError> {
        let id = self.yaml.resolve(node).unwrap_or(node);
        match self.yaml.node(id).kind {
            NodeKind::Sequence { items, .. } => Ok(items.to_vec()),
            _ => Err(self.error(node, "expected a list".into())),
        }
    }

    fn string(&self, node: NodeId) -> Result<String, CatalogueError> {
        self.yaml
            .scalar(node)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .ok_or_else(|| self.error(node, "expected a non-empty string".into()))
    }

    /// A list of strings (or one string).
    fn strings(&self, node: NodeId) -> Result<Vec<String>, CatalogueError> {
        if self.yaml.scalar(node).is_some() {
            return Ok(vec![self.string(node)?]);
        }
        let out: Vec<String> = self
            .list(node)?
            .into_iter()
            .map(|i| self.string(i))
            .collect::<Result<_, _>>()?;
        if out.is_empty() {
            return Err(self.error(node, "expected at least one string".into()));
        }
        Ok(out)
    }

    /// A matcher: its required `reason` and its other fields (only `allowed` ones).
    fn rule(
        &self,
        item: NodeId,
        allowed: &[&str],
    ) -> Result<(String, Vec<(String, NodeId)>), CatalogueError> {
        let fields = self.entries(item)?;
        for (k, v) in &fields {
            if k != "reason" && !allowed.contains(&k.as_str()) {
                return Err(self.error(
                    *v,
                    format!(
                        "unknown key `{k}` (expected reason, {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let reason = field(&fields, "reason")
            .ok_or_else(|| self.error(item, "every matcher needs a `reason`".into()))?;
        Ok((self.string(reason)?, fields))
    }

    fn required(
        &self,
        item: NodeId,
        fields: &[(String, NodeId)],
        key: &str,
    ) -> Result<NodeId, CatalogueError> {
        field(fields, key).ok_or_else(|| self.error(item, format!("missing `{key}`")))
    }
}

/// An image reference's repository: without tag or digest, `docker.io/` and `library/` removed.
pub fn image_repository(image: &str) -> String {
    let image = image.split('@').next().unwrap_or(image);
    let last_slash = image.rfind('/').map_or(0, |i| i + 1);
    let repo = match image[last_slash..].find(':') {
        Some(i) => &image[..last_slash + i],
        None => image,
    };
    let repo = repo
        .strip_prefix("docker.io/")
        .or_else(|| repo.strip_prefix("index.docker.io/"))
        .unwrap_or(repo);
    repo.strip_prefix("library/").unwrap_or(repo).to_string()
}

/// `*` matches any run of characters (`/` included); everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// Images named in Helm values: `image: repo:tag` scalars and `repository:` (+ `tag:`) mappings.
fn values_images(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Map(entries) => {
            if let Some(repo) = value.str_at(&["repository"]) {
                let image = match value.str_at(&["tag"]) {
                    Some(tag) => format!("{repo}:{tag}"),
                    None => repo.to_string(),
                };
                if !out.contains(&image) {
                    out.push(image);
                }
            }
            for (k, v) in entries {
                if k.as_str() == Some("image")
                    && let Some(s) = v.as_str()
                    && !out.iter().any(|o| o == s)
                {
                    out.push(s.to_string());
                }
                values_images(v, out);
            }
        }
        Value::Seq(items) => items.iter().for_each(|i| values_images(i, out)),
        _ => {}
    }
}

/// The URL of the source a HelmRelease's chart comes from (HelmRepository, OCIRepository, …).
fn chart_source_url(model: &Model, idx: ObjectIdx) -> Option<String> {
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let scalar = |keys: &[&str]| yaml.lookup(obj.root, keys).and_then(|n| yaml.scalar(n));
    let (kind, name, ns) =
        if let Some(kind) = scalar(&["spec", "chart", "spec", "sourceRef", "kind"]) {
            (
                kind,
                scalar(&["spec", "chart", "spec", "sourceRef", "name"])?,
                scalar(&["spec", "chart", "spec", "sourceRef", "namespace"]),
            )
        } else {
            (
                scalar(&["spec", "chartRef", "kind"])?,
                scalar(&["spec", "chartRef", "name"])?,
                scalar(&["spec", "chartRef", "namespace"]),
            )
        };
    let ns = ns.or(obj.key.namespace.as_deref());
    let target = model.object(model.find_object(kind, name, ns)?);
    let tyaml = &model.repo.file(target.file).yaml;
    tyaml
        .lookup(target.root, &["spec", "url"])
        .and_then(|n| tyaml.scalar(n))
        .map(str::to_string)
}

/// One object as a live layer of a cluster applies it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    object: ObjectIdx,
    layer: LayerId,
    variant: usize,
    inv: usize,
}

/// The disposable workloads of one layer variant and what moves with them.
#[derive(Clone, Debug, Default)]
pub struct Bundle {
    /// Disposable objects the layer health-gates: (inventory index, reason).
    pub gated: Vec<(usize, String)>,
    /// Every disposable object of the variant, gated or not.
    pub disposable: BTreeSet<ObjectIdx>,
    /// What a split moves: the gated disposable objects and the ConfigMaps, Secrets,
    /// ServiceAccounts, PersistentVolumeClaims and RBAC objects only they use.
    pub moved: BTreeSet<ObjectIdx>,
    /// Namespaces that hold only disposable objects and what moves with them: they stay (a
    /// Namespace is never moved), but they are part of the runners' world and mask nothing.
    pub own_namespaces: BTreeSet<ObjectIdx>,
    /// Inventory indices of everything else: what a split leaves in the old layer. A failure
    /// masks those of them the layer health-checks ([`crate::rollout::failure::masked`]).
    pub staying: Vec<usize>,
}

/// Classification and reference analysis over one model, memoised.
pub struct Analysis<'m, 'r> {
    pub model: &'m Model<'r>,
    pub catalogue: Catalogue,
    reasons: HashMap<ObjectIdx, Option<String>>,
    /// The scalars of the objects asked about since the cluster last changed: kept with the
    /// cluster's index and dropped with it, so that memory holds one cluster's references.
    scalars: HashMap<ObjectIdx, Scalars<'m>>,
    /// The index of the cluster asked about last (layers come cluster by cluster).
    cluster: Option<(usize, Rc<Cluster<'m>>)>,
    /// The live layers of each cluster, in layer order.
    live_by_cluster: OnceCell<Vec<Vec<LayerId>>>,
    /// Kind name → the API groups it is used with (built-in kinds, the catalogue's, the model's).
    groups_of_kind: OnceCell<HashMap<String, BTreeSet<String>>>,
}

/// Kinds of the built-in API groups whose names custom resources reuse (a `talos.dev`
/// ServiceAccount, …): a message names the group of such a custom resource.
const BUILTIN_KINDS: &[(&str, &str)] = &[
    ("", "ConfigMap"),
    ("", "Namespace"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("apps", "DaemonSet"),
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("batch", "CronJob"),
    ("batch", "Job"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
];

/// Every scalar value of an object outside its own `metadata`, borrowed from its file's text
/// (owned only when merge keys or repeated keys make the data differ from the tree).
type Scalars<'m> = HashSet<Cow<'m, str>>;

/// What the live layers of one cluster apply, and who names what.
struct Cluster<'m> {
    entries: Vec<Entry>,
    /// Scalar value → the entries (indices into `entries`) whose objects hold it.
    mentions: HashMap<Cow<'m, str>, Vec<usize>>,
}

fn ns_of(r: &Rendered) -> &str {
    r.key.namespace.as_deref().unwrap_or("default")
}

fn is_core(r: &Rendered, kinds: &[&str]) -> bool {
    r.key.group().is_empty() && kinds.contains(&r.key.kind.as_str())
}

fn is_rbac(r: &Rendered, kinds: &[&str]) -> bool {
    r.key.group() == "rbac.authorization.k8s.io" && kinds.contains(&r.key.kind.as_str())
}

impl<'m, 'r> Analysis<'m, 'r> {
    pub fn new(model: &'m Model<'r>) -> Self {
        // An error in the repository's section is the configuration's diagnostic
        // (`crate::config`); the rule runs with the built-in catalogue then.
        let (catalogue, _) = Catalogue::for_repo(model.repo);
        Analysis {
            model,
            catalogue,
            reasons: HashMap::default(),
            scalars: HashMap::default(),
            cluster: None,
            live_by_cluster: OnceCell::new(),
            groups_of_kind: OnceCell::new(),
        }
    }

    /// An object as messages name it: `Kind/namespace/name`, with the API group after the kind
    /// (`ServiceAccount.talos.dev/…`) when a custom resource's kind name is also used by another
    /// group — a built-in kind, a catalogue kind or another object of the repository.
    pub fn key_text(&self, key: &ObjectKey) -> String {
        let group = key.group();
        let groups = self.groups_of_kind.get_or_init(|| {
            let mut map: HashMap<String, BTreeSet<String>> = HashMap::default();
            let pairs = BUILTIN_KINDS
                .iter()
                .map(|&(g, k)| (g.to_string(), k.to_string()))
                .chain(
                    self.catalogue
                        .kinds
                        .iter()
                        .flat_map(|r| r.names.iter().map(|n| (r.group.clone(), n.clone()))),
                )
                .chain(
                    self.model
                        .objects
                        .iter()
                        .map(|o| (o.key.group().to_string(), o.key.kind.to_string())),
                );
            for (g, k) in pairs {
                map.entry(k).or_default().insert(g);
            }
            map
        });
        let ambiguous = groups
            .get(key.kind.as_str())
            .is_some_and(|gs| gs.iter().any(|g| g != group));
        if group.is_empty() || !ambiguous {
            return key.to_string();
        }
        match &key.namespace {
            Some(ns) => format!("{}.{group}/{ns}/{}", key.kind, key.name),
            None => format!("{}.{group}/{}", key.kind, key.name),
        }
    }

    /// Why an object is disposable, if it is.
    pub fn disposable(&mut self, idx: ObjectIdx) -> Option<String> {
        if let Some(r) = self.reasons.get(&idx) {
            return r.clone();
        }
        let r = self.catalogue.classify(self.model, idx);
        self.reasons.insert(idx, r.clone());
        r
    }

    /// Every scalar value of an object outside its own `metadata`: the names it may refer to.
    fn scalars(&mut self, idx: ObjectIdx) -> &Scalars<'m> {
        let model = self.model;
        self.scalars
            .entry(idx)
            .or_insert_with(|| object_scalars(model, idx))
    }

    /// Whether an object names `name` anywhere outside its own metadata.
    pub fn mentions(&mut self, idx: ObjectIdx, name: &str) -> bool {
        self.scalars(idx).contains(name)
    }

    /// Whether `from` names `to` (by its name as written) and may refer to it: same namespace
    /// for namespaced objects.
    fn refers(&mut self, from: &Rendered, to: &Rendered) -> bool {
        let name = self.model.object(to.object).key.name.clone();
        self.refers_named(from, to, &name)
    }

    /// [`Self::refers`] for a name `to` stands for: its own, or the Secret it produces.
    fn refers_named(&mut self, from: &Rendered, to: &Rendered, name: &str) -> bool {
        if from.object == to.object {
            return false;
        }
        let to_namespaced = is_namespaced(&to.key.api_version, &to.key.kind);
        let from_namespaced = is_namespaced(&from.key.api_version, &from.key.kind);
        if to_namespaced && (!from_namespaced || ns_of(from) != ns_of(to)) {
            return false;
        }
        self.scalars(from.object).contains(name)
    }

    /// The index of a cluster. Building the next one drops the last one's, and the scalars
    /// cached with it.
    fn cluster(&mut self, cluster: usize) -> Rc<Cluster<'m>> {
        if let Some((c, index)) = &self.cluster
            && *c == cluster
        {
            return index.clone();
        }
        self.cluster = None;
        self.scalars.clear();
        let model = self.model;
        let by_cluster = self.live_by_cluster.get_or_init(|| {
            let mut by_cluster: Vec<Vec<LayerId>> = Vec::new();
            for (layer, l) in model.live_layers() {
                if by_cluster.len() <= l.cluster {
                    by_cluster.resize_with(l.cluster + 1, Vec::new);
                }
                by_cluster[l.cluster].push(layer);
            }
            by_cluster
        });
        let mut entries = Vec::new();
        for &layer in by_cluster.get(cluster).map_or(&[][..], Vec::as_slice) {
            for (variant, v) in model.layers[layer].variants.iter().enumerate() {
                for inv in 0..v.inventory.len() {
                    entries.push(Entry {
                        object: v.inventory[inv].object,
                        layer,
                        variant,
                        inv,
                    });
                }
            }
        }
        let mut mentions: HashMap<Cow<'m, str>, Vec<usize>> = HashMap::default();
        for (i, e) in entries.iter().enumerate() {
            for s in self.scalars(e.object) {
                mentions.entry(s.clone()).or_default().push(i);
            }
        }
        let index = Rc::new(Cluster { entries, mentions });
        self.cluster = Some((cluster, index.clone()));
        index
    }

    fn rendered(&self, e: &Entry) -> &'m Rendered {
        &self.model.layers[e.layer].variants[e.variant].inventory[e.inv]
    }

    /// The objects of live layers of the cluster that refer to `to`.
    fn referrers(&mut self, cluster: usize, to: &Rendered) -> Vec<Entry> {
        let name = self.model.object(to.object).key.name.clone();
        self.referrers_named(cluster, to, &name)
    }

    /// The objects of live layers of the cluster that name `name`, which `to` stands for, where
    /// they may refer to `to` (the same namespace for a namespaced `to`).
    fn referrers_named(&mut self, cluster: usize, to: &Rendered, name: &str) -> Vec<Entry> {
        let c = self.cluster(cluster);
        let mut out = Vec::new();
        for &i in c.mentions.get(name).map_or(&[][..], Vec::as_slice) {
            let e = c.entries[i];
            if self.refers_named(self.rendered(&e), to, name) {
                out.push(e);
            }
        }
        out
    }

    /// The objects of live layers of the cluster that use the chart source `source`: the
    /// HelmReleases whose `chartRef`/`chart.spec.sourceRef` name it (in any namespace), and
    /// whatever names it in its own namespace.
    fn chart_users(&mut self, cluster: usize, source: &Rendered) -> Vec<Entry> {
        let model = self.model;
        let name = model.object(source.object).key.name.clone();
        let c = self.cluster(cluster);
        let mut out = Vec::new();
        for &i in c.mentions.get(name.as_str()).map_or(&[][..], Vec::as_slice) {
            let e = c.entries[i];
            let from = self.rendered(&e);
            let names_it = chart_ref(model, from).is_some_and(|(kind, n, ns)| {
                kind == source.key.kind.as_str() && n == name.as_str() && ns == ns_of(source)
            });
            if names_it || self.refers_named(from, source, &name) {
                out.push(e);
            }
        }
        out
    }

    /// The disposable workloads of a layer variant and what moves with them.
    pub fn bundle(&mut self, layer_id: LayerId, vi: usize) -> Bundle {
        let model = self.model;
        let layer = model.layer(layer_id);
        let variant = &layer.variants[vi];
        let inventory = &variant.inventory;
        let mut b = Bundle::default();
        for (i, r) in inventory.iter().enumerate() {
            if let Some(reason) = self.disposable(r.object) {
                b.disposable.insert(r.object);
                if layer.gates(&r.key) {
                    b.gated.push((i, reason));
                    b.moved.insert(r.object);
                }
            }
        }
        if b.gated.is_empty() {
            return b;
        }
        let here = |e: &Entry| e.layer == layer_id && e.variant == vi;
        loop {
            let mut changed = false;
            for r in inventory {
                if b.moved.contains(&r.object) {
                    continue;
                }
                let take = if is_core(
                    r,
                    &[
                        "ConfigMap",
                        "Secret",
                        "PersistentVolumeClaim",
                        "ServiceAccount",
                    ],
                ) {
                    let is_sa = r.key.kind == "ServiceAccount";
                    let referrers: Vec<Entry> = self
                        .referrers(layer.cluster, r)
                        .into_iter()
                        .filter(|e| {
                            !(is_sa
                                && is_rbac(
                                    self.rendered(e),
                                    &["RoleBinding", "ClusterRoleBinding"],
                                ))
                        })
                        .collect();
                    !referrers.is_empty()
                        && referrers
                            .iter()
                            .all(|e| here(e) && b.moved.contains(&e.object))
                } else if is_rbac(r, &["RoleBinding", "ClusterRoleBinding"]) {
                    self.binds_only_moved(r, inventory, &b.moved)
                } else if is_chart_source(r) {
                    let users = self.chart_users(layer.cluster, r);
                    !users.is_empty()
                        && users.iter().all(|e| here(e) && b.moved.contains(&e.object))
                } else if let Some(secret) = produced_secret(model, r) {
                    let users = self.referrers_named(layer.cluster, r, &secret);
                    !users.is_empty()
                        && users.iter().all(|e| here(e) && b.moved.contains(&e.object))
                } else if is_custom(r) {
                    // A custom resource named like a runner (a `talos.dev` ServiceAccount that
                    // produces the runner's talosconfig Secret), or named by moved objects only.
                    let name = model.object(r.object).key.name.clone();
                    let named_like = b.gated.iter().any(|&(i, _)| {
                        let g = &inventory[i];
                        ns_of(g) == ns_of(r) && model.object(g.object).key.name == name
                    });
                    let users = self.referrers(layer.cluster, r);
                    (named_like || !users.is_empty())
                        && users.iter().all(|e| here(e) && b.moved.contains(&e.object))
                } else if namespace_wide_policy(model, r) {
                    // It serves every pod of its namespace: the runners', when they are all the
                    // namespace holds.
                    self.holds_only_runners(layer.cluster, ns_of(r), |e| {
                        here(e) && b.moved.contains(&e.object)
                    })
                } else if is_rbac(r, &["Role", "ClusterRole"]) {
                    let bindings: Vec<Entry> = self
                        .referrers(layer.cluster, r)
                        .into_iter()
                        .filter(|e| self.role_ref(self.rendered(e), r))
                        .collect();
                    !bindings.is_empty()
                        && bindings
                            .iter()
                            .all(|e| here(e) && b.moved.contains(&e.object))
                } else {
                    false
                };
                if take {
                    b.moved.insert(r.object);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        for r in inventory {
            if r.key.is_namespace()
                && self.holds_only_runners(layer.cluster, &r.key.name, |e| {
                    here(e) && b.moved.contains(&e.object)
                })
            {
                b.own_namespaces.insert(r.object);
            }
        }
        b.staying = inventory
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                !b.disposable.contains(&r.object)
                    && !b.moved.contains(&r.object)
                    && !b.own_namespaces.contains(&r.object)
            })
            .map(|(i, _)| i)
            .collect();
        b
    }

    /// Whether the live layers of the cluster apply runners in namespace `ns` and, namespace-wide
    /// policies aside, nothing else: everything there is disposable or `ours` (what moves with
    /// them).
    fn holds_only_runners(
        &mut self,
        cluster: usize,
        ns: &str,
        ours: impl Fn(&Entry) -> bool,
    ) -> bool {
        let model = self.model;
        let c = self.cluster(cluster);
        let mut runners = false;
        for e in c.entries.iter().copied() {
            let other = self.rendered(&e);
            if other.key.namespace.as_deref() != Some(ns) || namespace_wide_policy(model, other) {
                continue;
            }
            if !(ours(&e) || self.disposable(e.object).is_some()) {
                return false;
            }
            runners = true;
        }
        runners
    }

    /// A (Cluster)RoleBinding whose subjects are all ServiceAccounts that move, or that a moved
    /// object names when no ServiceAccount object of that name exists (a chart creates it).
    fn binds_only_moved(
        &mut self,
        binding: &Rendered,
        inventory: &[Rendered],
        moved: &BTreeSet<ObjectIdx>,
    ) -> bool {
        let model = self.model;
        let obj = model.object(binding.object);
        let yaml = &model.repo.file(obj.file).yaml;
        let Some(subjects) = yaml.lookup(obj.root, &["subjects"]) else {
            return false;
        };
        let items = yaml.items(subjects);
        if items.is_empty() {
            return false;
        }
        for &s in items {
            let get = |k: &str| yaml.lookup(s, &[k]).and_then(|n| yaml.scalar(n));
            if get("kind") != Some("ServiceAccount") {
                return false;
            }
            let (Some(name), ns) = (get("name"), get("namespace")) else {
                return false;
            };
            let ns = ns.or(binding.key.namespace.as_deref());
            let in_ns = |r: &Rendered| {
                ns.is_none_or(|ns| {
                    Some(ns) == r.key.namespace.as_deref()
                        || Some(ns) == model.object(r.object).key.namespace.as_deref()
                })
            };
            let objects: Vec<&Rendered> = inventory
                .iter()
                .filter(|sa| {
                    is_core(sa, &["ServiceAccount"])
                        && model.object(sa.object).key.name == name
                        && in_ns(sa)
                })
                .collect();
            let bound = if objects.is_empty() {
                let mut named = false;
                for m in inventory
                    .iter()
                    .filter(|m| moved.contains(&m.object) && in_ns(m))
                {
                    if self.mentions(m.object, name) {
                        named = true;
                        break;
                    }
                }
                named
            } else {
                objects.iter().all(|sa| moved.contains(&sa.object))
            };
            if !bound {
                return false;
            }
        }
        true
    }

    /// Whether a (Cluster)RoleBinding's `roleRef` names this (Cluster)Role.
    fn role_ref(&self, binding: &Rendered, role: &Rendered) -> bool {
        if !is_rbac(binding, &["RoleBinding", "ClusterRoleBinding"]) {
            return false;
        }
        let model = self.model;
        let obj = model.object(binding.object);
        let yaml = &model.repo.file(obj.file).yaml;
        let get = |k: &str| {
            yaml.lookup(obj.root, &["roleRef", k])
                .and_then(|n| yaml.scalar(n))
        };
        get("kind") == Some(role.key.kind.as_str())
            && get("name") == Some(model.object(role.object).key.name.as_str())
            && (role.key.kind == "ClusterRole" || ns_of(binding) == ns_of(role))
    }

    /// What the objects `from` need of the layer's objects that stay (are not `moved`): each as
    /// "Kind/ns/name" (their Namespace, something they name, the CRD of their kind).
    pub fn needs(
        &mut self,
        layer_id: LayerId,
        vi: usize,
        from: &BTreeSet<ObjectIdx>,
        moved: &BTreeSet<ObjectIdx>,
    ) -> Vec<String> {
        let model = self.model;
        let inventory = &model.layer(layer_id).variants[vi].inventory;
        let mut out: Vec<String> = Vec::new();
        let staying: Vec<&Rendered> = inventory
            .iter()
            .filter(|r| !moved.contains(&r.object))
            .collect();
        let moved: Vec<&Rendered> = inventory
            .iter()
            .filter(|r| from.contains(&r.object))
            .collect();
        for r in staying {
            let needed = if r.key.is_namespace() {
                moved
                    .iter()
                    .any(|m| m.key.namespace.as_deref() == Some(r.key.name.as_str()))
            } else if r.key.is_crd() {
                let obj = model.object(r.object);
                let yaml = &model.repo.file(obj.file).yaml;
                let kind = yaml
                    .lookup(obj.root, &["spec", "names", "kind"])
                    .and_then(|n| yaml.scalar(n));
                moved.iter().any(|m| Some(m.key.kind.as_str()) == kind)
            } else {
                let mut any = false;
                for m in &moved {
                    let chart_source = chart_ref(model, m).is_some_and(|(kind, name, ns)| {
                        kind == r.key.kind.as_str()
                            && name == model.object(r.object).key.name.as_str()
                            && ns == ns_of(r)
                    });
                    if chart_source || self.refers(m, r) {
                        any = true;
                        break;
                    }
                }
                any
            };
            if needed {
                let s = self.key_text(&r.key);
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// What layer `consumer` uses of what layer `producer` applies, each as "Kind/ns/name (how)":
    /// an object it names in the same namespace (also through the Secret an ExternalSecret,
    /// SealedSecret or Certificate produces), a chart source its releases read, the Namespace
    /// its objects live in, the CRD of a kind it applies, what a HelmRelease creates (a name
    /// that starts with the release's, a `<release>.<namespace>` host), and what its Flux
    /// Kustomization names besides its `dependsOn` (a source, a `substituteFrom` ConfigMap or
    /// Secret, a decryption or kubeConfig Secret, a health check).
    pub fn consumed(&mut self, producer: LayerId, consumer: LayerId) -> Vec<String> {
        let model = self.model;
        let p = model.layer(producer);
        let c = model.layer(consumer);
        let produced: Vec<&Rendered> = p.variants.iter().flat_map(|v| &v.inventory).collect();
        let using: Vec<&Rendered> = c.variants.iter().flat_map(|v| &v.inventory).collect();
        let mut layer_names = HashSet::default();
        if let Some(o) = c.object {
            let obj = model.object(o);
            let yaml = &model.repo.file(obj.file).yaml;
            if let Some(Value::Map(spec)) = yaml
                .lookup(obj.root, &["spec"])
                .and_then(|n| yaml.value(n).ok())
            {
                for (k, v) in &spec {
                    if k.as_str() != Some("dependsOn") {
                        collect_scalars(v, &mut layer_names);
                    }
                }
            }
        }
        let mut out = Vec::new();
        for r in produced {
            let name = model.object(r.object).key.name.to_string();
            let how = if r.key.is_namespace() {
                using
                    .iter()
                    .any(|o| o.key.namespace.as_deref() == Some(r.key.name.as_str()))
                    .then_some("its objects live there")
            } else if r.key.is_crd() {
                let obj = model.object(r.object);
                let yaml = &model.repo.file(obj.file).yaml;
                let get = |k: &[&str]| yaml.lookup(obj.root, k).and_then(|n| yaml.scalar(n));
                let (group, kind) = (get(&["spec", "group"]), get(&["spec", "names", "kind"]));
                using
                    .iter()
                    .any(|o| Some(o.key.group()) == group && Some(o.key.kind.as_str()) == kind)
                    .then_some("it applies objects of that kind")
            } else {
                let mut names = vec![name.clone()];
                names.extend(produced_secret(model, r));
                let release = r.key.is_helm_release().then(|| {
                    let obj = model.object(r.object);
                    let yaml = &model.repo.file(obj.file).yaml;
                    let own = yaml
                        .lookup(obj.root, &["spec", "releaseName"])
                        .and_then(|n| yaml.scalar(n))
                        .unwrap_or(&name)
                        .to_string();
                    (own, ns_of(r).to_string())
                });
                let mut how = None;
                for o in &using {
                    if names.iter().any(|n| self.refers_named(o, r, n)) {
                        how = Some("names it");
                    } else if chart_ref(model, o).is_some_and(|(kind, n, ns)| {
                        kind == r.key.kind.as_str() && n == name && ns == ns_of(r)
                    }) {
                        how = Some("a release reads its chart");
                    } else if let Some((rel, ns)) = &release {
                        let host = format!("{rel}.{ns}");
                        let dash = format!("{rel}-");
                        if self
                            .scalars(o.object)
                            .iter()
                            .any(|s| s == rel || s.starts_with(&dash) || s.contains(&host))
                        {
                            how = Some("names what the release creates");
                        }
                    }
                    if how.is_some() {
                        break;
                    }
                }
                how.or_else(|| {
                    names
                        .iter()
                        .any(|n| layer_names.contains(n))
                        .then_some("its Flux Kustomization names it")
                })
            };
            if let Some(how) = how {
                let s = format!("{} ({how})", self.key_text(&r.key));
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// The other live layers of the cluster that use `r`, an object layer `producer` applies:
    /// their objects name it (or the Secret it produces) where they may refer to it, read it as
    /// a chart source, live in it (a Namespace) or are of the kind it defines (a CRD). A Flux
    /// Kustomization that names it in its spec (a decryption Secret, a source) counts for the
    /// layer it defines; `producer`'s own Flux Kustomization does not count (a
    /// `commonMetadata` label with the app's name uses nothing).
    pub fn users(&mut self, producer: LayerId, r: &Rendered) -> BTreeSet<LayerId> {
        let model = self.model;
        let cluster = model.layer(producer).cluster;
        let mut out = BTreeSet::new();
        let mut named = self.chart_users(cluster, r);
        if let Some(secret) = produced_secret(model, r) {
            named.extend(self.referrers_named(cluster, r, &secret));
        }
        for e in named {
            let defined = model.layers.iter().position(|l| l.object == Some(e.object));
            let user = defined.unwrap_or(e.layer);
            if user == producer || !model.layer(user).live {
                continue;
            }
            // A Flux Kustomization names other layers in `dependsOn` and labels what it applies
            // in `commonMetadata`: neither uses an object.
            if defined.is_some() && !flux_spec_names(model, e.object, r) {
                continue;
            }
            // A reference that says its kind (`{kind: OCIRepository, name: x}`) is not one to
            // a PodMonitor named `x`.
            if names_as_kind(model, e.object, r) {
                out.insert(user);
            }
        }
        let obj = model.object(r.object);
        let yaml = &model.repo.file(obj.file).yaml;
        let get = |k: &[&str]| yaml.lookup(obj.root, k).and_then(|n| yaml.scalar(n));
        let is_namespace = r.key.is_namespace();
        let crd = r
            .key
            .is_crd()
            .then(|| (get(&["spec", "group"]), get(&["spec", "names", "kind"])));
        if is_namespace || crd.is_some() {
            let c = self.cluster(cluster);
            for e in &c.entries {
                let o = self.rendered(e);
                let uses = if is_namespace {
                    o.key.namespace.as_deref() == Some(r.key.name.as_str())
                } else {
                    crd == Some((Some(o.key.group()), Some(o.key.kind.as_str())))
                };
                if uses && e.layer != producer {
                    out.insert(e.layer);
                }
            }
        }
        out
    }

    /// Pairs (from, to) where an object on one side of the split names one on the other.
    pub fn cross_references(
        &mut self,
        layer_id: LayerId,
        vi: usize,
        bundle: &Bundle,
    ) -> Vec<(String, String)> {
        let model = self.model;
        let inventory = &model.layer(layer_id).variants[vi].inventory;
        let mut out = Vec::new();
        for a in inventory {
            for b in inventory {
                if bundle.moved.contains(&a.object) != bundle.moved.contains(&b.object)
                    && self.refers(a, b)
                {
                    out.push((self.key_text(&a.key), self.key_text(&b.key)));
                }
            }
        }
        out
    }
}

/// Whether object `from` names `r` (or the Secret it produces) outside its own metadata other
/// than in a mapping whose `kind` says it is another kind of object.
fn names_as_kind(model: &Model, from: ObjectIdx, r: &Rendered) -> bool {
    fn walk(v: &Value, names: &[&str], kinds: &[&str]) -> bool {
        match v {
            Value::Map(entries) => {
                let named = entries
                    .iter()
                    .any(|(_, v)| matches!(v, Value::Str(s, _) if names.contains(&s.as_str())));
                let other_kind = entries.iter().any(|(k, v)| {
                    k.as_str() == Some("kind")
                        && matches!(v, Value::Str(s, _) if !kinds.contains(&s.as_str()))
                });
                (named && !other_kind)
                    || entries
                        .iter()
                        .any(|(_, v)| !matches!(v, Value::Str(..)) && walk(v, names, kinds))
            }
            Value::Seq(items) => items.iter().any(|i| walk(i, names, kinds)),
            Value::Str(s, _) => names.contains(&s.as_str()),
            Value::Null => false,
        }
    }
    let obj = model.object(from);
    let yaml = &model.repo.file(obj.file).yaml;
    let own = model.object(r.object).key.name.to_string();
    let secret = produced_secret(model, r);
    let mut names = vec![own.as_str()];
    names.extend(secret.as_deref());
    let mut kinds = vec![r.key.kind.as_str()];
    if secret.is_some() {
        kinds.push("Secret");
    }
    let Ok(Value::Map(entries)) = yaml.value(obj.root) else {
        return false;
    };
    // The object's own `kind` is no reference: top-level values are looked into, not matched.
    entries.iter().any(|(k, v)| {
        k.as_str() != Some("metadata") && !matches!(v, Value::Str(..)) && walk(v, &names, &kinds)
    })
}

/// Whether Flux Kustomization `ks` names `r` (or the Secret it produces) in its spec, outside
/// `dependsOn` and `commonMetadata`.
fn flux_spec_names(model: &Model, ks: ObjectIdx, r: &Rendered) -> bool {
    let obj = model.object(ks);
    let yaml = &model.repo.file(obj.file).yaml;
    let Some(Value::Map(spec)) = yaml
        .lookup(obj.root, &["spec"])
        .and_then(|n| yaml.value(n).ok())
    else {
        return false;
    };
    let mut names = HashSet::default();
    for (k, v) in &spec {
        if !matches!(k.as_str(), Some("dependsOn" | "commonMetadata")) {
            collect_scalars(v, &mut names);
        }
    }
    names.contains(model.object(r.object).key.name.as_str())
        || produced_secret(model, r).is_some_and(|s| names.contains(&s))
}

/// A network policy for every pod of its namespace: a NetworkPolicy whose `podSelector` is
/// empty, a CiliumNetworkPolicy whose `endpointSelector` is.
fn namespace_wide_policy(model: &Model, r: &Rendered) -> bool {
    let selector: &[&str] = match (r.key.group(), r.key.kind.as_str()) {
        ("networking.k8s.io", "NetworkPolicy") => &["spec", "podSelector"],
        ("cilium.io", "CiliumNetworkPolicy") => &["spec", "endpointSelector"],
        _ => return false,
    };
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    yaml.lookup(obj.root, selector)
        .and_then(|n| yaml.value(n).ok())
        .is_some_and(|v| match v {
            Value::Map(entries) => entries.iter().all(|(_, v)| match v {
                Value::Map(m) => m.is_empty(),
                Value::Seq(s) => s.is_empty(),
                Value::Null => true,
                _ => false,
            }),
            Value::Null => true,
            _ => false,
        })
}

/// A Flux chart source (what a HelmRelease's `chartRef` or `chart.spec.sourceRef` names).
fn is_chart_source(r: &Rendered) -> bool {
    r.key.group() == "source.toolkit.fluxcd.io"
        && matches!(
            r.key.kind.as_str(),
            "HelmRepository" | "OCIRepository" | "GitRepository" | "Bucket" | "HelmChart"
        )
}

/// A namespaced custom resource that is not Flux's own: built-in groups have no dot or end in
/// `.k8s.io`; Flux objects (layers, sources, releases) are never carried along by a name.
fn is_custom(r: &Rendered) -> bool {
    let group = r.key.group();
    group.contains('.')
        && !group.ends_with(".k8s.io")
        && !group.ends_with("fluxcd.io")
        && !group.ends_with("fluxcd.controlplane.io")
        && is_namespaced(&r.key.api_version, &r.key.kind)
}

/// The chart source a HelmRelease names: (kind, name, namespace), the namespace defaulting to
/// the release's own.
fn chart_ref<'a>(model: &'a Model, r: &'a Rendered) -> Option<(&'a str, &'a str, &'a str)> {
    if r.key.kind != "HelmRelease" || r.key.group() != "helm.toolkit.fluxcd.io" {
        return None;
    }
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let base: &[&str] = if yaml.lookup(obj.root, &["spec", "chartRef"]).is_some() {
        &["spec", "chartRef"]
    } else {
        &["spec", "chart", "spec", "sourceRef"]
    };
    let get = |k: &str| {
        let keys: Vec<&str> = base.iter().copied().chain([k]).collect();
        yaml.lookup(obj.root, &keys).and_then(|n| yaml.scalar(n))
    };
    Some((
        get("kind")?,
        get("name")?,
        get("namespace").unwrap_or(ns_of(r)),
    ))
}

/// The Secret an object produces in its own namespace: an ExternalSecret's `spec.target.name`
/// (default: its own name), a SealedSecret's name, a cert-manager Certificate's `secretName`.
/// What a runner reads then comes from it, so it belongs to the runner as a Secret would.
fn produced_secret(model: &Model, r: &Rendered) -> Option<String> {
    let obj = model.object(r.object);
    let yaml = &model.repo.file(obj.file).yaml;
    let scalar = |keys: &[&str]| {
        yaml.lookup(obj.root, keys)
            .and_then(|n| yaml.scalar(n))
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    match (r.key.group(), r.key.kind.as_str()) {
        ("external-secrets.io", "ExternalSecret") => {
            Some(scalar(&["spec", "target", "name"]).unwrap_or_else(|| obj.key.name.to_string()))
        }
        ("bitnami.com", "SealedSecret") => Some(obj.key.name.to_string()),
        ("cert-manager.io", "Certificate") => scalar(&["spec", "secretName"]),
        _ => None,
    }
}

fn collect_scalars(v: &Value, out: &mut HashSet<String>) {
    match v {
        Value::Str(s, _) => {
            out.insert(s.clone());
        }
        Value::Seq(items) => items.iter().for_each(|i| collect_scalars(i, out)),
        Value::Map(entries) => entries.iter().for_each(|(_, v)| collect_scalars(v, out)),
        Value::Null => {}
    }
}

/// Every scalar value of an object outside its own `metadata` (what [`collect_scalars`] finds
/// in the object's data), borrowed from the file's text: converting every object of a fleet to
/// data to copy its strings out was FM002's largest cost in time and memory.
fn object_scalars<'m>(model: &'m Model, idx: ObjectIdx) -> Scalars<'m> {
    let obj = model.object(idx);
    let yaml = &model.repo.file(obj.file).yaml;
    let mut out = HashSet::default();
    let mut budget = VALUE_NODE_BUDGET;
    match borrowed_scalars(yaml, obj.root, Top::Object, &mut budget, &mut out) {
        Ok(()) => out,
        // The data is not converted past the budget: nothing is named.
        Err(Walk::Budget) => HashSet::default(),
        // Merge keys or repeated keys: read the data as conversion builds it.
        Err(Walk::Data) => {
            let mut owned = HashSet::default();
            if let Ok(Value::Map(entries)) = yaml.value(obj.root) {
                for (k, v) in &entries {
                    if k.as_str() != Some("metadata") {
                        collect_scalars(v, &mut owned);
                    }
                }
            }
            owned.into_iter().map(Cow::Owned).collect()
        }
    }
}

/// Where [`borrowed_scalars`] is in an object.
#[derive(Clone, Copy, PartialEq)]
enum Top {
    /// The object's root: its `metadata` is left out.
    Object,
    /// Inside a value whose scalars are collected.
    Collect,
    /// Inside `metadata`: only counted against the budget.
    Skip,
}

/// Why [`borrowed_scalars`] stopped.
enum Walk {
    /// Over [`VALUE_NODE_BUDGET`] nodes, where [`YamlFile::value`] refuses the conversion.
    Budget,
    /// A mapping whose data is not its entries as written (a merge key, a key that repeats or
    /// may repeat as data: null, an alias, a collection): the tree is not the data.
    Data,
}

/// The scalars of node `id` as [`YamlFile::value`] converts it (nulls left out, aliases
/// followed, every node visited counted against `budget` the same way), borrowed from the text.
fn borrowed_scalars<'y>(
    yaml: &'y YamlFile,
    id: NodeId,
    top: Top,
    budget: &mut usize,
    out: &mut Scalars<'y>,
) -> Result<(), Walk> {
    *budget = budget.checked_sub(1).ok_or(Walk::Budget)?;
    match yaml.node(id).kind {
        NodeKind::Scalar { style, tag, .. } => {
            let text = yaml.scalar_text(id);
            let null = style == ScalarStyle::Plain
                && tag != Some("tag:yaml.org,2002:str")
                && is_null(text);
            if top == Top::Collect && !null {
                out.insert(Cow::Borrowed(text));
            }
        }
        NodeKind::Alias { target: Some(t) } => borrowed_scalars(yaml, t, top, budget, out)?,
        NodeKind::Alias { target: None } => {}
        NodeKind::Sequence { items, .. } => {
            // An object whose root is a sequence names nothing (it is no mapping).
            let inner = if top == Top::Collect {
                Top::Collect
            } else {
                Top::Skip
            };
            for &item in items {
                borrowed_scalars(yaml, item, inner, budget, out)?;
            }
        }
        NodeKind::Mapping { entries, .. } => {
            if !plain_keys(yaml, entries) {
                return Err(Walk::Data);
            }
            for &(k, v) in entries {
                let inner = match top {
                    Top::Object if yaml.scalar_text(k) == "metadata" => Top::Skip,
                    Top::Skip => Top::Skip,
                    _ => Top::Collect,
                };
                borrowed_scalars(yaml, k, Top::Skip, budget, out)?;
                borrowed_scalars(yaml, v, inner, budget, out)?;
            }
        }
    }
    Ok(())
}

/// Whether a mapping's data is its entries as written: every key a scalar (no alias, no
/// collection), none null or the merge key `<<`, no two alike.
fn plain_keys(yaml: &YamlFile, entries: &[(NodeId, NodeId)]) -> bool {
    let mut keys: Vec<&str> = Vec::with_capacity(entries.len());
    for &(k, _) in entries {
        let NodeKind::Scalar { style, .. } = yaml.node(k).kind else {
            return false;
        };
        let text = yaml.scalar_text(k);
        if text == "<<" || (style == ScalarStyle::Plain && is_null(text)) {
            return false;
        }
        keys.push(text);
    }
    if keys.len() <= 16 {
        return (1..keys.len()).all(|i| !keys[..i].contains(&keys[i]));
    }
    let mut seen = HashSet::default();
    keys.iter().all(|k| seen.insert(*k))
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

    #[test]
    fn image_repositories_and_globs() {
        assert_eq!(
            image_repository("data.forgejo.org/forgejo/runner:11.1.2"),
            "data.forgejo.org/forgejo/runner"
        );
        assert_eq!(image_repository("docker.io/library/nginx:1"), "nginx");
        assert_eq!(
            image_repository("localhost:5000/ci/runner@sha256:abc"),
            "localhost:5000/ci/runner"
        );
        assert!(glob("*/forgejo/runner", "code.forgejo.org/forgejo/runner"));
        assert!(!glob("*/forgejo/runner", "forgejo/runner"));
        assert!(glob("*/drone-runner-*", "drone/drone-runner-kube"));
        assert!(!glob(
            "*/actions-runner",
            "ghcr.io/falcondev-oss/github-actions-cache-server"
        ));
        let c = Catalogue::builtin();
        for (image, matched) in [
            ("code.forgejo.org/forgejo/runner:6.3.1", true),
            ("gitea/act_runner:0.2.11", true),
            ("docker.gitea.com/act_runner:nightly", true),
            ("ghcr.io/actions/actions-runner:2.327.1", true),
            ("summerwind/actions-runner-dind:latest", true),
            ("gitlab/gitlab-runner:alpine", true),
            ("registry.gitlab.com/gitlab-org/gitlab-runner:v17", true),
            ("woodpeckerci/woodpecker-agent:v3", true),
            ("buildkite/agent:3", true),
            ("drone/drone-runner-kube:latest", true),
            ("jenkins/inbound-agent:latest", true),
            ("vegardit/gitea-act-runner:dind-rootless-0.2.13", true),
            ("ghcr.io/rpenziol/gitea-actions-runner-dind:latest", true),
            ("ghcr.io/falcondev-oss/github-actions-cache-server:8", false),
            ("codeberg.org/forgejo/forgejo:11", false),
            ("docker:28.3.2-dind", false),
            ("ghcr.io/renovatebot/renovate:41", false),
            ("my-runner:1", false),
        ] {
            assert_eq!(c.image_reason(image).is_some(), matched, "{image}");
        }
    }

    #[test]
    fn repository_catalogue_errors_carry_lines() {
        let err = Catalogue::from_text("images:\n  - match: [a/b]\n", "x.yaml").unwrap_err();
        assert_eq!(
            (err.line, err.message.as_str()),
            (2, "every matcher needs a `reason`")
        );
        let err = Catalogue::from_text("imgs: []\n", "x.yaml").unwrap_err();
        assert!(err.message.contains("unknown key `imgs`"), "{err}");
        let c = Catalogue::from_text(
            "images:\n  - reason: in-house runner\n    match: registry.example.com/ci/runner\n",
            "x.yaml",
        )
        .unwrap();
        assert_eq!(
            c.image_reason("registry.example.com/ci/runner:3"),
            Some("in-house runner")
        );
    }
}
