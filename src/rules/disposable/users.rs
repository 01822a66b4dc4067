//! What one layer uses of another's objects: the reasons `dependsOn` is needed between two
//! layers, and the live layers that use one object.

use std::collections::BTreeSet;

use rustc_hash::FxHashSet as HashSet;

use crate::model::{LayerId, Model, ObjectIdx, Rendered};
use crate::parse::Value;

use super::analysis::Analysis;
use super::objects::{chart_ref, ns_of, produced_secret};
use super::scalars::collect_scalars;

impl Analysis<'_, '_> {
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
