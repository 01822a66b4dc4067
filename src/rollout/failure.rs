//! Failure: what one failing object does to the delivery tree — which layers go `Ready=False`
//! (their health check includes it), which wait `DependencyNotReady` behind them, whose status it
//! masks, and whether a corrective commit can still reach the cluster.
//!
//! As kustomize-controller behaves: a layer health-checks everything it applies with
//! `wait: true`, or its `healthChecks` otherwise; a layer is not reconciled while a `dependsOn`
//! target is not Ready; a Flux Kustomization object is itself health-checked by a parent that
//! gates it (kstatus reads its Ready condition); a layer applies a new revision before its health
//! check, so a red layer still delivers corrections, unless its dependencies hold it or its source
//! rejects the revision. A FluxInstance waits on the root source it manages and reports
//! `Progressing` while that source fails.

use std::collections::BTreeSet;

use crate::model::{Layer, LayerId, LayerRef, Model, ObjectKey, Rendered};

/// An object named on the command line as `KIND/NAMESPACE/NAME` (or `KIND/NAME`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Target {
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl Target {
    /// The target naming a Flux source.
    pub fn source(s: &crate::model::SourceRef) -> Target {
        Target {
            kind: s.kind.to_string(),
            namespace: Some(s.namespace.to_string()),
            name: s.name.to_string(),
        }
    }

    /// Parse `KIND/NAMESPACE/NAME` or `KIND/NAME`.
    pub fn parse(text: &str) -> Result<Target, String> {
        let parts: Vec<&str> = text.split('/').collect();
        match parts.as_slice() {
            [kind, ns, name] if !kind.is_empty() && !ns.is_empty() && !name.is_empty() => {
                Ok(Target {
                    kind: kind.to_string(),
                    namespace: Some(ns.to_string()),
                    name: name.to_string(),
                })
            }
            [kind, name] if !kind.is_empty() && !name.is_empty() => Ok(Target {
                kind: kind.to_string(),
                namespace: None,
                name: name.to_string(),
            }),
            _ => Err(format!(
                "`{text}` is not KIND/NAMESPACE/NAME (or KIND/NAME for a cluster-scoped object), e.g. FluxInstance/flux-system/flux"
            )),
        }
    }

    fn matches(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        self.kind.eq_ignore_ascii_case(kind)
            && self.name == name
            && self.namespace.as_deref() == namespace
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{ns}/{}", self.kind, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// A layer's state while the targets fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// Ready=False, HealthCheckFailed: its health check includes a failing object.
    HealthCheckFailed {
        failing: Vec<String>,
        /// Other objects whose health its red status hides.
        masked: usize,
    },
    /// Not reconciled: a dependsOn target is not Ready.
    DependencyNotReady { waiting_for: Vec<LayerRef> },
}

/// One layer that is not Ready.
#[derive(Clone, Debug, PartialEq)]
pub struct Affected {
    pub layer: LayerRef,
    pub status: Status,
}

/// Whether a corrective commit to a failing object reaches the cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct Correction {
    pub target: String,
    /// The files a correction edits (one per variant of a placeholder path that defines it).
    pub files: Vec<String>,
    /// The layer that would apply the correction.
    pub applied_by: Option<LayerRef>,
    pub can_arrive: bool,
    pub why: String,
}

/// What the targets do to one cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterFailure {
    /// The root layer and the file that defines it.
    pub root: String,
    /// Layers that are not Ready, in layer order.
    pub affected: Vec<Affected>,
    /// Layers whose source rejects new revisions: they stay at the last one.
    pub frozen: Vec<LayerRef>,
    pub corrections: Vec<Correction>,
}

/// A failing object in one cluster, as (kind, namespace, name).
type Failing = (String, Option<String>, String);

/// How many objects of a layer's `inventory` (one variant) its red status hides while the
/// `failing` ones fail: the others it health-checks — everything it applies with `wait: true`,
/// the objects its `healthChecks` name otherwise (the rest is never checked, so nothing about
/// them is hidden). One count for `simulate` and for the rules that report a blast radius.
pub fn masked(layer: &Layer, inventory: &[Rendered], failing: impl Fn(&Rendered) -> bool) -> usize {
    inventory
        .iter()
        .filter(|r| layer.gates(&r.key) && !failing(r))
        .count()
}

/// Simulate `targets` failing, cluster by cluster (clusters none of them is in are left out).
pub fn simulate(model: &Model, targets: &[Target]) -> Vec<ClusterFailure> {
    crate::model::cluster_keys(model)
        .into_iter()
        .filter_map(|(cluster, root)| cluster_failure(model, cluster, root, targets))
        .collect()
}

/// The targets no live layer of any cluster applies or reads: naming one is a mistake (a typo,
/// the wrong namespace), not a failure that stalls nothing.
pub fn unknown<'t>(model: &Model, targets: &'t [Target]) -> Vec<&'t Target> {
    let layers: Vec<LayerId> = model.live_layers().map(|(id, _)| id).collect();
    targets
        .iter()
        .filter(|t| !applied_or_read(model, &layers, t))
        .collect()
}

/// Whether a corrective commit reaches `target` in `cluster` while it fails: the one answer
/// `simulate --fail` prints and the rules quote. `None` when no live layer of the cluster
/// applies or reads it.
pub fn correction_of(model: &Model, cluster: usize, target: &Target) -> Option<Correction> {
    cluster_failure(model, cluster, String::new(), std::slice::from_ref(target))
        .and_then(|c| c.corrections.into_iter().next())
}

/// Whether one of `layers` applies `t`, reads it as its source, or is it.
fn applied_or_read(model: &Model, layers: &[LayerId], t: &Target) -> bool {
    layers.iter().any(|&id| {
        let l = model.layer(id);
        l.inventory()
            .any(|(_, r)| t.matches(&r.key.kind, r.key.namespace.as_deref(), &r.key.name))
            || t.matches(&l.source.kind, Some(&l.source.namespace), &l.source.name)
            || t.matches("Kustomization", Some(&l.id.namespace), &l.id.name)
    })
}

fn layers_of(model: &Model, cluster: usize) -> Vec<LayerId> {
    model
        .live_layers()
        .filter(|(_, l)| l.cluster == cluster)
        .map(|(id, _)| id)
        .collect()
}

fn key_of(k: &ObjectKey) -> Failing {
    (
        k.kind.to_string(),
        k.namespace.as_ref().map(ToString::to_string),
        k.name.to_string(),
    )
}

fn cluster_failure(
    model: &Model,
    cluster: usize,
    root: String,
    targets: &[Target],
) -> Option<ClusterFailure> {
    let layers = layers_of(model, cluster);
    let present: Vec<&Target> = targets
        .iter()
        .filter(|t| applied_or_read(model, &layers, t))
        .collect();
    if present.is_empty() {
        return None;
    }
    let mut failing: BTreeSet<Failing> = present
        .iter()
        .map(|t| (t.kind.clone(), t.namespace.clone(), t.name.clone()))
        .collect();
    let source_fails = |failing: &BTreeSet<Failing>, id: LayerId| {
        let s = &model.layer(id).source;
        failing.iter().any(|(k, ns, n)| {
            k.eq_ignore_ascii_case(&s.kind) && ns.as_deref() == Some(&s.namespace) && *n == s.name
        })
    };
    // A FluxInstance waits on the root source it manages.
    for &id in &layers {
        let l = model.layer(id);
        if let Some(instance) = l.created_by_instance
            && source_fails(&failing, id)
        {
            failing.insert(key_of(&model.object(instance).key));
        }
    }
    let mut status: Vec<Option<Status>> = vec![None; model.layers.len()];
    loop {
        let mut changed = false;
        for &id in &layers {
            let l = model.layer(id);
            let gated_failing: Vec<String> = l
                .inventory()
                .filter(|(_, r)| l.gates(&r.key) && failing.contains(&key_of(&r.key)))
                .map(|(_, r)| r.key.to_string())
                .collect();
            let next = if gated_failing.is_empty() {
                let waiting: Vec<LayerRef> = l
                    .depends_on_ids
                    .iter()
                    .filter(|&&d| status[d].is_some())
                    .map(|&d| model.layer(d).id.clone())
                    .collect();
                let listed = listed_failing(l, &failing);
                if !waiting.is_empty() {
                    Some(Status::DependencyNotReady {
                        waiting_for: waiting,
                    })
                } else if !listed.is_empty() {
                    Some(Status::HealthCheckFailed {
                        failing: dedup(listed),
                        masked: 0,
                    })
                } else {
                    None
                }
            } else {
                // Within the variants (placeholder bindings) that hold a failing object: the
                // others never meet it on one cluster.
                let fails = |r: &Rendered| failing.contains(&key_of(&r.key));
                let masked: usize = l
                    .variants
                    .iter()
                    .filter(|v| v.inventory.iter().any(|r| l.gates(&r.key) && fails(r)))
                    .map(|v| masked(l, &v.inventory, fails))
                    .max()
                    .unwrap_or(0);
                Some(Status::HealthCheckFailed {
                    failing: dedup(gated_failing),
                    masked,
                })
            };
            if next != status[id] {
                // A layer that is not Ready fails the health check of a parent that gates it.
                if next.is_some() {
                    failing.insert((
                        "Kustomization".into(),
                        Some(l.id.namespace.to_string()),
                        l.id.name.to_string(),
                    ));
                }
                status[id] = next;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let affected = layers
        .iter()
        .filter_map(|&id| {
            status[id].clone().map(|s| Affected {
                layer: model.layer(id).id.clone(),
                status: s,
            })
        })
        .collect();
    let frozen = layers
        .iter()
        .filter(|&&id| source_fails(&failing, id))
        .map(|&id| model.layer(id).id.clone())
        .collect();
    let corrections = present
        .iter()
        .map(|t| correction(model, &layers, &status, &failing, t))
        .collect();
    Some(ClusterFailure {
        root,
        affected,
        frozen,
        corrections,
    })
}

/// The failing objects a layer without `wait` names in its healthChecks list and does not apply
/// itself: kustomize-controller polls every entry whichever layer applies it, so another
/// layer's failing object holds this one too (a gate `fix --strategy health-checks` may
/// create, shown by `simulate`).
fn listed_failing(l: &crate::model::Layer, failing: &BTreeSet<Failing>) -> Vec<String> {
    if l.wait {
        return Vec::new();
    }
    l.health_checks
        .iter()
        .filter(|hc| !l.inventory().any(|(_, r)| hc.matches(&r.key)))
        .filter_map(|hc| {
            let (_, namespace, name) = failing.iter().find(|(kind, namespace, name)| {
                hc.kind.eq_ignore_ascii_case(kind)
                    && hc.name == *name
                    && hc
                        .namespace
                        .as_ref()
                        .is_none_or(|ns| namespace.as_ref() == Some(ns))
            })?;
            Some(match namespace {
                Some(ns) => format!("{}/{ns}/{name}", hc.kind),
                None => format!("{}/{name}", hc.kind),
            })
        })
        .collect()
}

fn dedup(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v.dedup();
    v
}

/// Where a correction of `t` is written and whether its layer can deliver it.
fn correction(
    model: &Model,
    layers: &[LayerId],
    status: &[Option<Status>],
    failing: &BTreeSet<Failing>,
    t: &Target,
) -> Correction {
    // The layer that applies the object, or — for what a FluxInstance generates (its root source
    // and root Kustomization) — the layer that applies the instance.
    let applying = layers.iter().find_map(|&id| {
        let l = model.layer(id);
        l.inventory()
            .find(|(_, r)| t.matches(&r.key.kind, r.key.namespace.as_deref(), &r.key.name))
            .map(|(_, r)| (id, r.object, false))
    });
    let generated = || {
        layers.iter().find_map(|&id| {
            let l = model.layer(id);
            let instance = l.created_by_instance?;
            let generates = t.matches(&l.source.kind, Some(&l.source.namespace), &l.source.name)
                || t.matches("Kustomization", Some(&l.id.namespace), &l.id.name);
            if !generates {
                return None;
            }
            layers.iter().find_map(|&by| {
                model
                    .layer(by)
                    .inventory()
                    .find(|(_, r)| r.object == instance)
                    .map(|_| (by, instance, true))
            })
        })
    };
    let Some((by, object, through_instance)) = applying.or_else(generated) else {
        return Correction {
            target: t.to_string(),
            files: Vec::new(),
            applied_by: None,
            can_arrive: false,
            why: "no layer applies it from this repository (created outside Git, or by a FluxInstance that no layer applies): only a change on the cluster corrects it".into(),
        };
    };
    let layer = model.layer(by);
    // Every variant's definition of the object (the instance, for what it generates).
    let key = model.object(object).key.clone();
    let mut files: Vec<String> = layer
        .inventory()
        .filter(|(_, r)| model.object(r.object).key == key)
        .map(|(_, r)| model.repo.file(model.object(r.object).file).path.clone())
        .collect();
    files.sort();
    files.dedup();
    let via = if through_instance {
        format!(
            "it is generated by the FluxInstance, so a correction edits the instance, which {} applies",
            layer.id
        )
    } else {
        format!("{} applies it", layer.id)
    };
    let s = &layer.source;
    let source_failing = failing.iter().any(|(k, ns, n)| {
        k.eq_ignore_ascii_case(&s.kind) && ns.as_deref() == Some(&s.namespace) && *n == s.name
    });
    let (can_arrive, why) = if source_failing {
        (
            false,
            format!(
                "{via} from {s}, and {s} is what fails: it rejects every new revision, the correcting one included. Only a change outside Git recovers (a direct edit of {s} on the cluster, or a second, independently delivered source for the instance)"
            ),
        )
    } else if let Some(Status::DependencyNotReady { waiting_for }) = &status[by] {
        let names: Vec<String> = waiting_for.iter().map(ToString::to_string).collect();
        (
            false,
            format!(
                "{via}, but {} is not reconciled while {} is not Ready: the correction waits behind the failure it corrects",
                layer.id,
                names.join(", ")
            ),
        )
    } else {
        // A FluxInstance's failure may break the root source it owns; when this layer reads
        // that source, the correction then cannot arrive (what `--fail SOURCE` shows).
        let owned = model
            .is_flux_instance(object)
            .then(|| model.instance_source(object))
            .flatten()
            .filter(|owned| *owned == layer.source);
        let unless = owned.map_or(String::new(), |owned| {
            format!(
                ", unless the failure breaks the root source {owned} the instance owns, which {} reads (`fluxmend simulate --fail {owned}` shows that self-lock)",
                layer.id
            )
        });
        (
            true,
            format!(
                "{via}; it applies a new revision before its health check, so a corrective commit arrives{unless}"
            ),
        )
    };
    Correction {
        target: t.to_string(),
        files,
        applied_by: Some(layer.id.clone()),
        can_arrive,
        why,
    }
}
