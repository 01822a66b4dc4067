//! Rollout: what Flux does on the cluster, step by step, when a change merges — the model of
//! Flux *in motion* that the transition gate and `fluxmend simulate` share. Rule-free: it reads
//! two models (the repository before and after) and plays the new revision through
//! kustomize-controller's reconcile of each layer (`internal/controller/kustomization_controller.go`):
//!
//! 1. **dependencies** — every `dependsOn` target must be Ready; when it reads the same source it
//!    must already have applied the new revision. Only such same-source chains order two layers;
//!    any other pair may go either way, and the worst order counts;
//! 2. **apply** — the new build is applied with server-side apply, which labels every object
//!    `kustomize.toolkit.fluxcd.io/name`/`namespace` with the applying layer (ownership moves to
//!    whichever layer applied an object last);
//! 3. **prune** (`prune: true`) — objects of the previous inventory missing from the new build are
//!    deleted, but only when the object in the cluster still carries *this* layer's labels and is
//!    not annotated `kustomize.toolkit.fluxcd.io/prune: disabled`,
//!    `kustomize.toolkit.fluxcd.io/reconcile: disabled` or `kustomize.toolkit.fluxcd.io/ssa:
//!    Ignore` (`deleteObjects`: `ssa.DeleteOptions` `Inclusions` are the owner labels,
//!    `Exclusions` those three, compared case-insensitively by fluxcd/pkg `ssa/utils`
//!    `AnyInMetadata`; `ssa: Ignore` since kustomize-controller v1.1.0);
//! 4. **health** — not modelled here; see [`failure`].
//!
//! A layer that leaves its parent's build is deleted by the parent's prune, and its own
//! inventory then follows its `deletionPolicy` (MirrorPrune: deleted when it prunes; Delete and
//! WaitForTermination: deleted; Orphan: kept). What a deletion means depends on the object:
//! a FluxInstance makes flux-operator uninstall Flux (`fluxinstance_uninstaller.go`), a
//! Namespace takes everything in it, a CRD every object of its kind, a PersistentVolumeClaim its
//! data; anything else applied again later is recreated.

//!
//! Each file has one job and imports only the files listed after it: `failure` (what a failing
//! object stalls), `play` (a change played cluster by cluster), `consequence` (what a deletion
//! means), `side` (one side of a change: live layers, what they apply, their order),
//! `clusters` (which cluster a layer belongs to), `annotations` (what an applied object carries,
//! prune exemptions), `outcome` (the rollout's steps and deletions).

mod consequence;
pub mod failure;
mod outcome;
mod play;
mod side;

pub use consequence::restarts_only;
pub use outcome::{
    ClusterRollout, Consequence, Deletion, LayerChange, LeaveOutcome, Leaving, Rollout, Step,
};
pub use play::{deletions, play};
