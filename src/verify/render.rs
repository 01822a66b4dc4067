//! The render gate's comparison: every object the live layers render before is rendered after,
//! as often and with the same content, up to what the fixes intend ([`Allowed`]).

use std::collections::BTreeMap;

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::model::PRUNE_DISABLED;
use crate::model::{Layer, LayerId, LayerRef, Model, Name, ObjectIdx, ObjectKey};
use crate::parse::Value;
use crate::rules::{Gate, GateFailure};

/// What stands for an object's content when comparing before and after: an object of a file
/// the change does not touch is the same document on both sides, so its place is enough; an
/// object of a changed (or new) file is compared as data.
/// `P`: the file's path, owned where a failure names it, borrowed where counts decide.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Content<P> {
    Untouched(P, usize),
    Data(Value),
}

/// The content changes the fixes of a change intend, which the comparing gates accept: the
/// `prune: disabled` annotation on the objects a phase protects, and the canonical forms of
/// fixes whose purpose is a change of content.
#[derive(Debug, Default)]
pub struct Allowed {
    pub protects: Vec<ObjectKey>,
    pub normalise: Vec<crate::rules::Normalise>,
}

impl Allowed {
    /// What the given fixes intend.
    pub fn of<'a>(fixes: impl Iterator<Item = &'a crate::rules::Fix>) -> Allowed {
        let mut allowed = Allowed::default();
        for fix in fixes {
            allowed.protects.extend(fix.protects.iter().cloned());
            if let Some(n) = fix.normalise
                && !allowed.normalise.contains(&n)
            {
                allowed.normalise.push(n);
            }
        }
        allowed
    }

    /// An object's content as the comparison sees it: on the side after the change without
    /// its protection (when protected), and on both sides in the fixes' canonical forms.
    pub fn content(&self, key: &ObjectKey, value: Value, after: bool) -> Value {
        let value = if after && self.protects.contains(key) {
            without_protection(value)
        } else {
            value
        };
        self.normalise.iter().fold(value, |v, n| n(v))
    }
}

/// Every object the live layers apply, per cluster, with its content (its file's path
/// borrowed), handed to `each`: what must not change. The Flux Kustomizations named in
/// `skip_layer_objects` are left out (their specs are what a move edits), and so are the layers
/// in `alike` (see [`alike_layers`]).
fn each_rendered<'m>(
    model: &'m Model,
    skip_layer_objects: &HashSet<(usize, &str)>,
    changed: &HashSet<&str>,
    allowed: &Allowed,
    after: bool,
    alike: &HashSet<(usize, &LayerRef)>,
    mut each: impl FnMut(usize, &'m ObjectKey, Content<&'m str>),
) {
    for (_, layer) in model.live_layers() {
        if alike.contains(&(layer.cluster, &layer.id)) {
            continue;
        }
        for (_, r) in layer.inventory() {
            let is_flux_layer =
                r.key.group() == "kustomize.toolkit.fluxcd.io" && r.key.kind == "Kustomization";
            if is_flux_layer && skip_layer_objects.contains(&(layer.cluster, &*r.key.name)) {
                continue;
            }
            let obj = model.object(r.object);
            let file = model.repo.file(obj.file);
            let content = if changed.contains(file.path.as_str()) {
                let value = file.yaml.value(obj.root).unwrap_or(Value::Null);
                Content::Data(allowed.content(&r.key, value, after))
            } else {
                Content::Untouched(file.path.as_str(), obj.doc())
            };
            each(layer.cluster, &r.key, content);
        }
    }
}

/// An object rendered in a cluster, named by its text, with its content.
type Rendered = (usize, String, Content<String>);

/// [`each_rendered`] as a multiset keyed by the object's text, to name a difference.
fn rendered_multiset(
    model: &Model,
    skip_layer_objects: &HashSet<(usize, &str)>,
    changed: &HashSet<&str>,
    allowed: &Allowed,
    after: bool,
) -> BTreeMap<Rendered, usize> {
    let mut out = BTreeMap::new();
    each_rendered(
        model,
        skip_layer_objects,
        changed,
        allowed,
        after,
        &HashSet::default(),
        |cluster, key, content| {
            let content = match content {
                Content::Untouched(path, doc) => Content::Untouched(path.to_string(), doc),
                Content::Data(value) => Content::Data(value),
            };
            *out.entry((cluster, key.to_string(), content)).or_insert(0) += 1;
        },
    );
    out
}

/// The render gate's comparison: every object rendered before is rendered after, as often and
/// with the same content; `Err` names the first that is not (in the multisets' order).
pub(super) fn render_gate(
    model: &Model,
    after: &Model,
    touched: &HashSet<(usize, Name)>,
    changed: &HashSet<&str>,
    allowed: &Allowed,
    alike: &Alike,
) -> Result<(), GateFailure> {
    let skipped: HashSet<(usize, &str)> = touched
        .iter()
        .map(|(cluster, name)| (*cluster, name.as_str()))
        .collect();
    if same_rendered(model, after, &skipped, changed, allowed, alike) {
        return Ok(());
    }
    let before_set = rendered_multiset(model, &skipped, changed, allowed, false);
    let after_set = rendered_multiset(after, &skipped, changed, allowed, true);
    if before_set == after_set {
        return Ok(());
    }
    let missing = before_set.iter().find(|(k, n)| after_set.get(k) != Some(n));
    let extra = after_set.iter().find(|(k, n)| before_set.get(k) != Some(n));
    let describe = |e: Option<(&Rendered, &usize)>| {
        e.map_or("nothing".to_string(), |((_, key, _), n)| {
            format!("{key} ×{n}")
        })
    };
    Err(Gate::Render.fails(format!(
        "the objects rendered would change (before: {}; after: {})",
        describe(missing),
        describe(extra)
    )))
}

/// Whether [`rendered_multiset`] is the same before and after, decided without writing a key:
/// the same count per (cluster, object key, content), with the object key itself rather than its
/// text. Two keys with the same text can differ (the text leaves out the `apiVersion`), so equal
/// counts here imply equal multisets there, never the reverse: a `false` is only a reason to
/// compare the multisets themselves.
fn same_rendered(
    model: &Model,
    after: &Model,
    skip_layer_objects: &HashSet<(usize, &str)>,
    changed: &HashSet<&str>,
    allowed: &Allowed,
    alike: &Alike,
) -> bool {
    let mut counts: HashMap<(usize, &ObjectKey, Content<&str>), i64> = HashMap::default();
    for (m, is_after, step) in [(model, false, 1), (after, true, -1)] {
        each_rendered(
            m,
            skip_layer_objects,
            changed,
            allowed,
            is_after,
            alike,
            |cluster, key, content| {
                *counts.entry((cluster, key, content)).or_insert(0) += step;
            },
        );
    }
    counts.values().all(|&n| n == 0)
}

/// Layers (cluster, identity) of the model before a change, each alike after it.
pub(super) type Alike<'m> = HashSet<(usize, &'m LayerRef)>;

/// The layers (cluster, identity) that render and apply alike before and after: one live layer
/// so named on each side, applying the same objects in the same order, each from the same
/// document of a file the change leaves alone, in the same apply context. Each adds the same
/// objects with the same content to both sides of [`same_rendered`]'s counts, and the same
/// context to each of its objects in the apply-context gate, so both gates leave it out: a fix
/// changes a few layers of a fleet, and counting every object of every other layer in a table of
/// a million entries was most of the render gate's cost (and the apply-context gate's memory).
pub(super) fn alike_layers<'m>(
    model: &'m Model,
    after: &Model,
    changed: &HashSet<&str>,
) -> Alike<'m> {
    // Each (cluster, identity) with its layer, when exactly one live layer has it.
    fn unique<'a>(m: &'a Model) -> HashMap<(usize, &'a LayerRef), Option<LayerId>> {
        let mut by: HashMap<(usize, &LayerRef), Option<LayerId>> = HashMap::default();
        for (id, layer) in m.live_layers() {
            by.entry((layer.cluster, &layer.id))
                .and_modify(|known| *known = None)
                .or_insert(Some(id));
        }
        by
    }
    let after_layers = unique(after);
    unique(model)
        .into_par_iter()
        .filter(|(key, id)| {
            let (Some(before_id), Some(Some(after_id))) = (id, after_layers.get(key)) else {
                return false;
            };
            renders_alike(
                (model, model.layer(*before_id)),
                (after, after.layer(*after_id)),
                changed,
            )
        })
        .map(|(key, _)| key)
        .collect()
}

/// Where an object is written: its file's path and its document.
fn place<'m>(model: &'m Model, object: ObjectIdx) -> (&'m str, usize) {
    let obj = model.object(object);
    (model.repo.file(obj.file).path.as_str(), obj.doc())
}

/// Whether two layers apply the same objects (same keys) in the same order, each from the
/// same document of the same file, none of them changed, in the same apply context.
fn renders_alike(
    (model, layer): (&Model, &Layer),
    (after, after_layer): (&Model, &Layer),
    changed: &HashSet<&str>,
) -> bool {
    if layer.spec.apply_context != after_layer.spec.apply_context {
        return false;
    }
    let (mut before_items, mut after_items) = (layer.inventory(), after_layer.inventory());
    loop {
        match (before_items.next(), after_items.next()) {
            (None, None) => return true,
            (Some((_, b)), Some((_, a))) => {
                let (path, doc) = place(model, b.object);
                if b.key != a.key || changed.contains(path) || place(after, a.object) != (path, doc)
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// An object's content without the `prune: disabled` annotation a protecting phase adds (and
/// without `annotations` when that was its only entry): what must equal the content before.
pub fn without_protection(value: Value) -> Value {
    let Value::Map(mut entries) = value else {
        return value;
    };
    for (k, metadata) in &mut entries {
        if k.as_str() != Some("metadata") {
            continue;
        }
        let Value::Map(meta) = metadata else { continue };
        for (mk, annotations) in meta.iter_mut() {
            if mk.as_str() != Some("annotations") {
                continue;
            }
            if let Value::Map(a) = annotations {
                a.retain(|(ak, av)| {
                    !(ak.as_str() == Some(PRUNE_DISABLED.0)
                        && av.as_str() == Some(PRUNE_DISABLED.1))
                });
            }
        }
        meta.retain(|(mk, v)| {
            !(mk.as_str() == Some("annotations") && *v == Value::Map(Vec::new()))
        });
    }
    Value::Map(entries)
}
