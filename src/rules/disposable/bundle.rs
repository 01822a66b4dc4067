//! What a split of a layer variant moves: the disposable workloads it health-gates and, until
//! nothing changes, each object only they use (a ConfigMap, a Secret, a ServiceAccount and its
//! bindings, a chart source, a namespace-wide policy …); what stays behind.

use std::collections::BTreeSet;

use crate::model::{LayerId, Model, ObjectIdx, Rendered, is_namespaced};
use crate::parse::Value;

use super::analysis::{Analysis, Entry};
use super::objects::{is_core, is_rbac, ns_of, produced_secret};

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

impl Analysis<'_, '_> {
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
                Value::Str(..) => false,
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
