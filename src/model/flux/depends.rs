//! `dependsOn`: each entry resolved to the layer Flux would wait for (the nearest one where a
//! rootless model holds two of one name), a diagnostic where none defines it, and the cycles
//! whose layers wait on each other forever.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use crate::diagnostics::{Diagnostic, Severity};
use crate::load::parent_of;
use crate::model::{Model, Object};

use super::layer::{Layer, LayerId, LayerRef};
use super::operator::resource_set_file;

pub(super) fn resolve_dependencies(model: &mut Model) {
    let mut by_id: HashMap<(usize, &LayerRef), Vec<LayerId>> = HashMap::default();
    for (i, l) in model.layers.iter().enumerate() {
        by_id.entry((l.cluster, &l.id)).or_default().push(i);
    }
    // Clusters with a layer whose names the model may have wrong, or that applies a ResourceSet
    // the loader could not expand: a target missing there may be one of those layers' objects
    // under its real name, or a layer the ResourceSet generates.
    let uncertain: HashSet<usize> = model
        .layers
        .iter()
        .filter(|l| {
            l.variants.iter().any(|v| !v.unmodelled.is_empty())
                || l.inventory()
                    .any(|(_, r)| resource_set_file(model, r.object) == Some(None))
        })
        .map(|l| l.cluster)
        .collect();
    let mut resolved = Vec::new();
    let mut diagnostics = Vec::new();
    for layer in model.layers.iter() {
        let mut ids = Vec::new();
        for (dep, item) in &layer.depends_on {
            match by_id.get(&(layer.cluster, dep)) {
                Some(found) => ids.extend(closest(model, layer, found)),
                None if layer.live => {
                    let (severity, message) = if uncertain.contains(&layer.cluster) {
                        (
                            Severity::Note,
                            format!(
                                "{} dependsOn {dep}, which no modelled Flux Kustomization defines; a layer of this cluster is not fully modelled (or applies a ResourceSet fluxmend could not expand) and may define it",
                                layer.id
                            ),
                        )
                    } else {
                        (
                            Severity::Error,
                            format!(
                                "{} dependsOn {dep}, which no Flux Kustomization defines: it will stay DependencyNotReady",
                                layer.id
                            ),
                        )
                    };
                    let obj = layer.object.map(|o| model.object(o));
                    let file = obj.map(|o| model.repo.file(o.file));
                    let (line, col) =
                        file.map_or((1, 1), |f| f.yaml.line_col(f.yaml.node(*item).span.start));
                    diagnostics.push(
                        Diagnostic::new(severity, file.map_or("", |f| f.path.as_str()), message)
                            .at(line, col),
                    );
                }
                None => {}
            }
        }
        ids.sort_unstable();
        ids.dedup();
        resolved.push(ids);
    }
    for (layer, ids) in std::sync::Arc::make_mut(&mut model.layers)
        .iter_mut()
        .zip(resolved)
    {
        layer.depends_on_ids = ids;
    }
    // Cycles: the layers of a strongly connected component wait on each other forever.
    for mut cycle in dependency_cycles(&model.layers) {
        cycle.sort_unstable();
        let names: Vec<String> = cycle
            .iter()
            .map(|&i| model.layers[i].id.to_string())
            .collect();
        let layer = &model.layers[cycle[0]];
        let obj = layer.object.map(|o| model.object(o));
        diagnostics.push(
            Diagnostic::new(
                Severity::Error,
                obj.map_or("", |o| model.repo.file(o.file).path.as_str()),
                format!(
                    "dependsOn cycle: {} wait on each other and never become ready",
                    names.join(", ")
                ),
            )
            .at(obj.map_or(1, Object::line), 1),
        );
    }
    model.diagnostics.extend(diagnostics);
}

/// Of the layers a `dependsOn` entry names, the one Flux would wait for. In a cluster each name
/// is one object, but without a known root every layer shares one model cluster, so two real
/// clusters' `infra-configs` meet: keep those the referrer's own parent applies, else those
/// defined nearest to the referrer (the longest common directory of their files).
fn closest(model: &Model, layer: &Layer, found: &[LayerId]) -> Vec<LayerId> {
    if found.len() < 2 {
        return found.to_vec();
    }
    if layer.applied_by.is_some() {
        let siblings: Vec<LayerId> = found
            .iter()
            .copied()
            .filter(|&f| model.layers[f].applied_by == layer.applied_by)
            .collect();
        if !siblings.is_empty() {
            return siblings;
        }
    }
    let dir_of = |l: &Layer| {
        l.object
            .map(|o| parent_of(&model.repo.file(model.object(o).file).path))
    };
    let Some(own) = dir_of(layer) else {
        return found.to_vec();
    };
    let shared = |f: LayerId| {
        dir_of(&model.layers[f]).map_or(0, |d| {
            let (mut a, mut b) = (own.split('/'), d.split('/'));
            let mut n = 0;
            while let (Some(x), Some(y)) = (a.next(), b.next()) {
                if x != y {
                    break;
                }
                n += 1;
            }
            n
        })
    };
    let best = found.iter().map(|&f| shared(f)).max().unwrap_or(0);
    found
        .iter()
        .copied()
        .filter(|&f| shared(f) == best)
        .collect()
}

/// The `dependsOn` cycles: strongly connected components with more than one layer, or a layer
/// that depends on itself (Tarjan's algorithm, iterative: linear in layers and edges).
fn dependency_cycles(layers: &[Layer]) -> Vec<Vec<LayerId>> {
    const UNSEEN: usize = usize::MAX;
    let n = layers.len();
    let (mut index, mut low, mut on_stack) = (vec![UNSEEN; n], vec![0; n], vec![false; n]);
    let (mut stack, mut cycles, mut next) = (Vec::new(), Vec::new(), 0);
    for start in 0..n {
        if index[start] != UNSEEN {
            continue;
        }
        // (node, position in its edge list)
        let mut work = vec![(start, 0)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == UNSEEN {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = layers[v].depends_on_ids.get(*edge) {
                *edge += 1;
                if index[w] == UNSEEN {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || layers[v].depends_on_ids.contains(&v) {
                    cycles.push(component);
                }
            }
        }
    }
    cycles
}
