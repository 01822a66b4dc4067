//! The apply-context gate: the render gate compares *what* is applied; this compares *how*. For
//! every object rendered both before and after a change, the settings of the Flux Kustomization
//! that applies it which decide where and as whom it lands, what is substituted and decrypted in
//! it, what may delete it and whether it is reconciled at all must be the same. A fix may change
//! which layer applies an object and its `wait`; nothing else about how it is applied.

use std::collections::BTreeMap;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::hash_map::Entry;

use super::render::Alike;
use crate::model::{ApplyContext, Model, ObjectKey};
use crate::parse::Value;
use crate::rules::{Gate, GateFailure};

/// One layer's values of [`crate::model::APPLY_CONTEXT`], normalised as Flux defaults them
/// ([`crate::model::FluxSpec::apply_context`]).
type Context = ApplyContext;

/// Per (cluster, object), every context it is applied in, with a layer that applies it so.
/// A layer's context is built once and shared by its objects.
fn contexts(model: &Model) -> BTreeMap<(usize, String), BTreeMap<Context, String>> {
    let mut out: BTreeMap<(usize, String), BTreeMap<Context, String>> = BTreeMap::new();
    for (_, layer) in model.live_layers() {
        let ctx = layer.spec.apply_context.clone();
        for (_, r) in layer.inventory() {
            out.entry((layer.cluster, r.key.to_string()))
                .or_default()
                .entry(ctx.clone())
                .or_insert_with(|| layer.id.to_string());
        }
    }
    out
}

/// A value as a reader would write it.
fn show(v: &Value) -> String {
    match v {
        Value::Null => "unset".into(),
        Value::Str(s, _) => s.clone(),
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(show).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", show(k), show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// An object as [`contexts`] keys it, its text `kind/namespace/name` unwritten: (cluster, kind,
/// namespace, name).
type Place<'m> = (usize, &'m str, Option<&'m str>, &'m str);

/// An object's [`Place`] in a layer of `cluster`; `None` when its kind, namespace or name holds
/// a `/`. Without one, the text `kind/namespace/name` (or `kind/name`) names exactly one
/// (kind, namespace, name), so these keys group the objects as [`contexts`] does.
fn place(cluster: usize, key: &ObjectKey) -> Option<Place<'_>> {
    let namespace = key.namespace.as_deref();
    let slashed = key.kind.contains('/')
        || key.name.contains('/')
        || namespace.is_some_and(|n| n.contains('/'));
    (!slashed).then_some((cluster, &*key.kind, namespace, &*key.name))
}

/// The contexts an object is applied in, as indexes into the contexts both sides share.
#[derive(Default)]
struct Seen {
    first: u32,
    more: Vec<u32>,
}

impl Seen {
    fn add(&mut self, id: u32) {
        if self.first != id && !self.more.contains(&id) {
            self.more.push(id);
        }
    }

    fn same(&self, other: &Seen) -> bool {
        self.more.len() == other.more.len()
            && (self.first == other.first || other.more.contains(&self.first))
            && self
                .more
                .iter()
                .all(|id| *id == other.first || other.more.contains(id))
    }
}

/// Per object of `only`, the contexts it is applied in on one side, told apart by equality (as
/// the maps of [`contexts`] tell them apart).
fn places<'m>(
    model: &'m Model,
    only: &HashSet<Place<'_>>,
    shared: &mut HashMap<&'m Context, u32>,
) -> HashMap<Place<'m>, Seen> {
    let mut out: HashMap<Place<'m>, Seen> = HashMap::default();
    for (_, layer) in model.live_layers() {
        let next = shared.len() as u32;
        let id = *shared.entry(&layer.spec.apply_context).or_insert(next);
        for (_, r) in layer.inventory() {
            let Some(place) = place(layer.cluster, &r.key).filter(|p| only.contains(p)) else {
                continue;
            };
            match out.entry(place) {
                Entry::Occupied(mut seen) => seen.get_mut().add(id),
                Entry::Vacant(vacant) => {
                    vacant.insert(Seen {
                        first: id,
                        more: Vec::new(),
                    });
                }
            }
        }
    }
    out
}

/// Whether every object applied both before and after is applied in the same contexts: what
/// [`check`] asks, without writing the keys and the layers it names on failure. Only the objects
/// of a layer that is not `alike` can be applied otherwise: every layer applying any other object
/// applies it on both sides, in the same context. `false` when an object's kind, namespace or
/// name holds a `/` ([`place`]).
fn same_contexts<'m>(before: &'m Model, after: &'m Model, alike: &Alike) -> bool {
    let mut differing: HashSet<Place<'m>> = HashSet::default();
    for model in [before, after] {
        for (_, layer) in model.live_layers() {
            let is_alike = alike.contains(&(layer.cluster, &layer.id));
            for (_, r) in layer.inventory() {
                let Some(place) = place(layer.cluster, &r.key) else {
                    return false;
                };
                if !is_alike {
                    differing.insert(place);
                }
            }
        }
    }
    let mut shared = HashMap::default();
    let was = places(before, &differing, &mut shared);
    let now = places(after, &differing, &mut shared);
    was.iter()
        .all(|(place, seen)| now.get(place).is_none_or(|other| seen.same(other)))
}

/// `Err` names the first object (present before and after) applied in another context after the
/// change: the setting, its value before and after, and the layers.
/// `alike`: the layers that apply alike on both sides ([`super::render::alike_layers`]).
pub fn check(before: &Model, after: &Model, alike: &Alike) -> Result<(), GateFailure> {
    if same_contexts(before, after, alike) {
        return Ok(());
    }
    let after_contexts = contexts(after);
    for (key, was) in contexts(before) {
        let Some(now) = after_contexts.get(&key) else {
            continue;
        };
        if was.keys().eq(now.keys()) {
            continue;
        }
        let lost = was.iter().find(|(c, _)| !now.contains_key(*c));
        let gained = now.iter().find(|(c, _)| !was.contains_key(*c));
        let (field, old, new) = match (lost, gained) {
            (Some((l, _)), Some((g, _))) => l
                .iter()
                .zip(g.iter())
                .find(|(a, b)| a.1 != b.1)
                .map_or(("context", "?".to_string(), "?".to_string()), |(a, b)| {
                    (a.0, show(&a.1), show(&b.1))
                }),
            (Some(_), None) => ("context", "one of its layers".into(), "gone".into()),
            _ => ("context", "as before".into(), "one more layer".into()),
        };
        let by = |e: Option<(&Context, &String)>| e.map_or("-".to_string(), |(_, l)| l.clone());
        return Err(Gate::ApplyContext.fails(format!(
            "{} would be applied with {field} {new} (by {}) instead of {old} (by {})",
            key.1,
            by(gained),
            by(lost)
        )));
    }
    Ok(())
}
