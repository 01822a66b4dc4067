//! The patches kustomize and Flux apply on the way an object is rendered, and the object as
//! they leave it.

use crate::model::{Model, ObjectKey, join};

use super::dir::{KustomizeDir, PATCH_FIELDS};
use super::rendered::Rendered;

/// A patch kustomize applies on the way an object is rendered.
#[derive(Clone, Debug)]
pub struct PatchOnTheWay {
    /// The file the patch is written in (a patch file, or the kustomization file for an
    /// inline patch).
    pub file: String,
    /// Its `target`, when the entry has one.
    pub target: Option<crate::parse::Value>,
    /// The patch's text (strategic merge or JSON6902).
    pub body: String,
    /// Where the entry is written: the kustomization file and the entry's line.
    pub entry: (String, usize),
    /// The kustomization field it is listed under (`patches`, `patchesStrategicMerge`,
    /// `patchesJson6902`): kustomize runs the last after `namespace:` and the name prefixes.
    pub field: &'static str,
    /// `options.allowNameChange`: a strategic-merge patch may then rename its target.
    pub allow_name_change: bool,
}

impl PatchOnTheWay {
    /// Whether the patch may select `r` (whose content is `value`, written as `written`): see
    /// [`PatchOnTheWay::selection`]; no selector (a body that does not parse) may.
    pub fn may_select(
        &self,
        value: &crate::parse::Value,
        r: &Rendered,
        written: &ObjectKey,
    ) -> bool {
        self.selection(value, r, written) != Some(crate::model::patch::Selection::No)
    }

    /// Whether the patch selects `r` (whose content is `value`, written as `written`): by its
    /// current or its written identity, as kustomize matches either, and by the labels and
    /// annotations of its content. `None` without a selector (a body that does not parse).
    pub fn selection(
        &self,
        value: &crate::parse::Value,
        r: &Rendered,
        written: &ObjectKey,
    ) -> Option<crate::model::patch::Selection> {
        use crate::model::patch::{Labels, Selection};
        let selector = self.selector()?;
        let metadata = |field: &str| -> Labels {
            match value.path(&["metadata", field]) {
                Some(crate::parse::Value::Map(entries)) => entries
                    .iter()
                    .filter_map(|(k, v)| {
                        Some((k.as_str()?.to_string(), v.as_str().map(str::to_string)))
                    })
                    .collect(),
                _ => Labels::new(),
            }
        };
        let (labels, annotations) = (metadata("labels"), metadata("annotations"));
        let each = [&r.key, written].map(|key| selector.selects(key, &labels, &annotations));
        Some(if each.contains(&Selection::Yes) {
            Selection::Yes
        } else if each.contains(&Selection::Unknown) {
            Selection::Unknown
        } else {
            Selection::No
        })
    }

    /// The identity the patch gives an object it selects, if it renames: a JSON6902 `add` or
    /// `replace` of `/metadata/name` or `/metadata/namespace` with a string, or a strategic-merge
    /// patch allowed to change names that writes another `metadata.name`.
    pub fn renames(&self) -> Option<(Option<String>, Option<String>)> {
        use crate::model::patch::PatchBody;
        match PatchBody::parse(&self.body).ok()? {
            PatchBody::Json6902(ops) => {
                let (mut name, mut namespace) = (None, None);
                for op in ops.iter().filter(|o| o.op == "add" || o.op == "replace") {
                    let text = op
                        .value
                        .as_ref()
                        .and_then(|v| v.as_str())
                        .map(str::to_string);
                    match op.path.as_str() {
                        "/metadata/name" => name = text.or(name),
                        "/metadata/namespace" => namespace = text.or(namespace),
                        _ => {}
                    }
                }
                (name.is_some() || namespace.is_some()).then_some((name, namespace))
            }
            PatchBody::StrategicMerge(v) if self.allow_name_change && self.target.is_some() => {
                let name = v.str_at(&["metadata", "name"])?.to_string();
                Some((Some(name), None))
            }
            PatchBody::StrategicMerge(_) => None,
        }
    }

    /// The selector of the objects it patches: its `target`, or the object a strategic-merge
    /// patch names itself; `None` when the body does not parse.
    pub fn selector(&self) -> Option<crate::model::patch::Selector> {
        match &self.target {
            Some(t) => Some(crate::model::patch::Selector::from_value(t)),
            None => crate::model::patch::PatchBody::parse(&self.body)
                .ok()?
                .implicit_target(),
        }
    }
}

impl Model<'_> {
    /// Every patch kustomize applies on the way `r` is rendered (the `patches`,
    /// `patchesStrategicMerge` and `patchesJson6902` entries of each kustomization file in its
    /// chain, outermost first): what can change the object after the document the model reads,
    /// so a rule that trusts a field there can tell when it cannot.
    pub fn patches_on_the_way(&self, r: &Rendered) -> Vec<PatchOnTheWay> {
        r.chain
            .iter()
            .filter_map(|&file| {
                let dir = crate::load::parent_of(&self.repo.file(file).path);
                self.kustomize_dirs.get(dir).filter(|k| k.file == file)
            })
            .flat_map(|k| self.kustomization_patches(k))
            .collect()
    }

    /// The `patches`, `patchesStrategicMerge` and `patchesJson6902` entries of one
    /// kustomization, in the order it lists them.
    pub fn kustomization_patches(&self, k: &KustomizeDir) -> Vec<PatchOnTheWay> {
        let mut out = Vec::new();
        let source = self.repo.file(k.file);
        let dir = k.dir.as_str();
        let yaml = &source.yaml;
        for field in PATCH_FIELDS {
            let Some(list) = yaml.lookup(k.root, &[field]) else {
                continue;
            };
            for &item in yaml.items(list) {
                let target = yaml
                    .lookup(item, &["target"])
                    .and_then(|t| yaml.value(t).ok());
                let inline = yaml.lookup(item, &["patch"]).and_then(|n| yaml.scalar(n));
                let path = yaml
                    .lookup(item, &["path"])
                    .and_then(|n| yaml.scalar(n))
                    .or_else(|| yaml.scalar(item).filter(|_| *field != "patches"));
                let (file, body) = match (inline, path.and_then(|p| join(dir, p))) {
                    (Some(text), _) => (source.path.clone(), text.to_string()),
                    (None, Some(path)) => match self.repo.file_id(&path) {
                        Some(id) => (path, self.repo.file(id).yaml.text().to_string()),
                        None => continue,
                    },
                    // `patchesStrategicMerge` may hold the patch itself as a string.
                    (None, None) => match yaml.scalar(item) {
                        Some(text) => (source.path.clone(), text.to_string()),
                        None => continue,
                    },
                };
                let entry = (
                    source.path.clone(),
                    yaml.line_of(yaml.node(item).span.start),
                );
                let allow_name_change = yaml
                    .lookup(item, &["options", "allowNameChange"])
                    .and_then(|n| yaml.value(n).ok())
                    .and_then(|v| v.as_bool())
                    == Some(true);
                out.push(PatchOnTheWay {
                    file,
                    target,
                    body,
                    entry,
                    field,
                    allow_name_change,
                });
            }
        }
        out
    }

    /// The object `r` as Flux applies it, as far as the model knows: its document with the
    /// patches on its way applied (innermost kustomization first, each in its order), then the
    /// `spec.patches` of `layer`. A patch whose target may select it is applied; one that does
    /// not parse is left out.
    pub fn content(
        &self,
        layer: Option<&crate::model::Layer>,
        r: &Rendered,
    ) -> Result<crate::parse::Value, crate::parse::AliasBudgetExceeded> {
        let obj = self.object(r.object);
        let mut value = self.repo.file(obj.file).yaml.value(obj.root)?;
        let inner_first = r.chain.iter().rev().filter_map(|&file| {
            let dir = crate::load::parent_of(&self.repo.file(file).path);
            self.kustomize_dirs.get(dir).filter(|k| k.file == file)
        });
        let patches = inner_first
            .flat_map(|k| self.kustomization_patches(k))
            .chain(layer.map(|l| self.layer_patches(l)).unwrap_or_default());
        for p in patches {
            let Ok(body) = crate::model::patch::PatchBody::parse(&p.body) else {
                continue;
            };
            if p.may_select(&value, r, &obj.key) {
                body.apply(&mut value);
            }
        }
        Ok(value)
    }

    /// The `spec.patches` of a Flux Kustomization: Flux applies them to everything its build
    /// renders, after the kustomize patches.
    pub fn layer_patches(&self, layer: &crate::model::Layer) -> Vec<PatchOnTheWay> {
        let Some(obj) = layer.object.map(|o| self.object(o)) else {
            return Vec::new();
        };
        let source = self.repo.file(obj.file);
        layer
            .spec
            .patches
            .iter()
            .map(|p| PatchOnTheWay {
                file: source.path.clone(),
                target: p.target.clone(),
                body: p.body.clone(),
                entry: (
                    source.path.clone(),
                    source.yaml.line_of(source.yaml.node(p.item).span.start),
                ),
                field: "patches",
                allow_name_change: p.allow_name_change,
            })
            .collect()
    }
}
