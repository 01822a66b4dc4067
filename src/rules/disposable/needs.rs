//! What a split leaves crossing it: what the moved objects need of those that stay, and the
//! pairs of objects on either side where one names the other.

use std::collections::BTreeSet;

use crate::model::{LayerId, ObjectIdx, Rendered};

use super::analysis::Analysis;
use super::bundle::Bundle;
use super::objects::{chart_ref, ns_of};

impl Analysis<'_, '_> {
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
