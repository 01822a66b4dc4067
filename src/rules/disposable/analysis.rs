//! The analysis's memo: each object's classification, the names each object holds, and per
//! cluster an index of who names what, built once and asked by `bundle`, `needs` and `users`.
//! Here too: whether one object may refer to another, and how messages name an object.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rustc_hash::FxHashMap as HashMap;

use crate::model::{LayerId, Model, ObjectIdx, ObjectKey, Rendered, is_namespaced};

use super::catalogue::Catalogue;
use super::objects::{chart_ref, ns_of};
use super::scalars::{Scalars, object_scalars};

/// One object as a live layer of a cluster applies it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Entry {
    pub(super) object: ObjectIdx,
    pub(super) layer: LayerId,
    pub(super) variant: usize,
    pub(super) inv: usize,
}

/// Classification and reference analysis over one model, memoised. A rule that analyses
/// clusters in parallel gives each task its own memo over one [`Shared`].
pub struct Analysis<'m, 'r> {
    pub model: &'m Model<'r>,
    shared: Shared,
    /// The scalars of the objects asked about since the cluster last changed: kept with the
    /// cluster's index and dropped with it, so that memory holds one cluster's references.
    scalars: HashMap<ObjectIdx, Scalars<'m>>,
    /// The index of the cluster asked about last (layers come cluster by cluster).
    cluster: Option<(usize, Rc<Cluster<'m>>)>,
}

/// What every memo over one model shares, each part computed once whichever task asks first:
/// recomputed per cluster, the whole model's kinds and layers would be read once per cluster.
#[derive(Clone)]
pub struct Shared {
    catalogue: Arc<Catalogue>,
    /// The live layers of each cluster, in layer order.
    live_by_cluster: Arc<OnceLock<Vec<Vec<LayerId>>>>,
    /// Kind name → the API groups it is used with (built-in kinds, the catalogue's, the model's).
    groups_of_kind: Arc<OnceLock<HashMap<String, BTreeSet<String>>>>,
    /// Each object's classification, made once whichever cluster's task asks first.
    reasons: Arc<OnceLock<Reasons>>,
}

/// Why each object is disposable, if it is: classifying reads the object's tree, and a fleet's
/// shared bases are applied in every cluster (a third of FM002's classifications at 14k files
/// were of an object another cluster had classified). A byte per object; the reasons, of the
/// few disposable objects, beside.
struct Reasons {
    /// Per object: [`UNKNOWN`], [`NOT_DISPOSABLE`] or [`DISPOSABLE`] (its reason in `text`).
    state: Vec<AtomicU8>,
    text: Mutex<HashMap<ObjectIdx, String>>,
}

const UNKNOWN: u8 = 0;
const NOT_DISPOSABLE: u8 = 1;
const DISPOSABLE: u8 = 2;

impl Shared {
    pub fn of(model: &Model) -> Shared {
        // An error in the repository's section is the configuration's diagnostic
        // (`crate::config`); the rule runs with the built-in catalogue then.
        let (catalogue, _) = Catalogue::for_repo(model.repo);
        Shared {
            catalogue: Arc::new(catalogue),
            live_by_cluster: Arc::default(),
            groups_of_kind: Arc::default(),
            reasons: Arc::default(),
        }
    }

    /// The live layers of each cluster of `model` (the model these were made `of`), in layer
    /// order, indexed by cluster.
    pub fn live_by_cluster(&self, model: &Model) -> &[Vec<LayerId>] {
        self.live_by_cluster.get_or_init(|| {
            let mut by_cluster: Vec<Vec<LayerId>> = Vec::new();
            for (layer, l) in model.live_layers() {
                if by_cluster.len() <= l.cluster {
                    by_cluster.resize_with(l.cluster + 1, Vec::new);
                }
                by_cluster[l.cluster].push(layer);
            }
            by_cluster
        })
    }
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

/// What the live layers of one cluster apply, and who names what.
pub(super) struct Cluster<'m> {
    pub(super) entries: Vec<Entry>,
    /// Scalar value → the entries (indices into `entries`) whose objects hold it.
    pub(super) mentions: HashMap<Cow<'m, str>, Vec<usize>>,
}

impl<'m, 'r> Analysis<'m, 'r> {
    pub fn new(model: &'m Model<'r>) -> Self {
        Analysis::sharing(model, Shared::of(model))
    }

    /// A memo of its own over what `shared` holds for `model`.
    pub fn sharing(model: &'m Model<'r>, shared: Shared) -> Self {
        Analysis {
            model,
            shared,
            scalars: HashMap::default(),
            cluster: None,
        }
    }

    /// An object as messages name it: `Kind/namespace/name`, with the API group after the kind
    /// (`ServiceAccount.talos.dev/…`) when a custom resource's kind name is also used by another
    /// group — a built-in kind, a catalogue kind or another object of the repository.
    pub fn key_text(&self, key: &ObjectKey) -> String {
        let group = key.group();
        let groups = self.shared.groups_of_kind.get_or_init(|| {
            let mut map: HashMap<String, BTreeSet<String>> = HashMap::default();
            let pairs = BUILTIN_KINDS
                .iter()
                .map(|&(g, k)| (g.to_string(), k.to_string()))
                .chain(
                    self.shared
                        .catalogue
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
        let model = self.model;
        let reasons = self.shared.reasons.get_or_init(|| Reasons {
            state: (0..model.objects.len())
                .map(|_| AtomicU8::new(UNKNOWN))
                .collect(),
            text: Mutex::default(),
        });
        let text = || reasons.text.lock().unwrap_or_else(PoisonError::into_inner);
        match reasons.state[idx as usize].load(Ordering::Acquire) {
            NOT_DISPOSABLE => return None,
            DISPOSABLE => return text().get(&idx).cloned(),
            _ => {}
        }
        // Two tasks may classify one object at once: both find the same.
        let r = self.shared.catalogue.classify(model, idx);
        if let Some(reason) = &r {
            text().insert(idx, reason.clone());
        }
        let state = if r.is_some() {
            DISPOSABLE
        } else {
            NOT_DISPOSABLE
        };
        reasons.state[idx as usize].store(state, Ordering::Release);
        r
    }

    /// Every scalar value of an object outside its own `metadata`: the names it may refer to.
    pub(super) fn scalars(&mut self, idx: ObjectIdx) -> &Scalars<'m> {
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
    pub(super) fn refers(&mut self, from: &Rendered, to: &Rendered) -> bool {
        let name = self.model.object(to.object).key.name.clone();
        self.refers_named(from, to, &name)
    }

    /// [`Self::refers`] for a name `to` stands for: its own, or the Secret it produces.
    pub(super) fn refers_named(&mut self, from: &Rendered, to: &Rendered, name: &str) -> bool {
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
    pub(super) fn cluster(&mut self, cluster: usize) -> Rc<Cluster<'m>> {
        if let Some((c, index)) = &self.cluster
            && *c == cluster
        {
            return index.clone();
        }
        self.cluster = None;
        self.scalars.clear();
        let model = self.model;
        let by_cluster = self.shared.live_by_cluster(model);
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

    pub(super) fn rendered(&self, e: &Entry) -> &'m Rendered {
        &self.model.layers[e.layer].variants[e.variant].inventory[e.inv]
    }

    /// The objects of live layers of the cluster that refer to `to`.
    pub(super) fn referrers(&mut self, cluster: usize, to: &Rendered) -> Vec<Entry> {
        let name = self.model.object(to.object).key.name.clone();
        self.referrers_named(cluster, to, &name)
    }

    /// The objects of live layers of the cluster that name `name`, which `to` stands for, where
    /// they may refer to `to` (the same namespace for a namespaced `to`).
    pub(super) fn referrers_named(
        &mut self,
        cluster: usize,
        to: &Rendered,
        name: &str,
    ) -> Vec<Entry> {
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
    pub(super) fn chart_users(&mut self, cluster: usize, source: &Rendered) -> Vec<Entry> {
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
}
