//! Flux Operator `ResourceSet`s: flux-operator generates objects — Flux Kustomizations,
//! HelmReleases, sources — from each set's `resources` (and `resourcesTemplate`, `steps`)
//! templates, once per input set, with `<< inputs.x >>` Go templates. Flux applies what is
//! generated, so the loader generates it too: one read-only file per ResourceSet, holding the
//! documents flux-operator would build (as `flux-operator build rset` does,
//! `internal/builder/resourceset.go`), named after the ResourceSet it comes from.
//!
//! Expanded: inline `spec.inputs`, and `spec.inputsFrom` naming a `Static`
//! ResourceSetInputProvider of the repository (its `defaultValues`), combined with the `Flatten`
//! strategy; templates whose actions are input references piped through `default`, `quote`,
//! `squote`, `slugify`, `lower`, `upper`, `trim`, `toString`, `int`, `replace`, `trimPrefix`,
//! `trimSuffix`, with `if`/`else`/`end` and `range $x := …`/`end` (Go's truth: an unquoted
//! `false`, `0` or `null` input, and empty values, are false). What cannot be expanded — inputs
//! from a cluster or a remote service, the `Permute` strategy, the generated `id`, `with`,
//! `define`, other functions — is a note, never an error, and nothing is generated for that
//! ResourceSet.
//!
//! Each file has one job and imports only the files listed after it: `expand` (a repository's
//! ResourceSets into generated files), `build` (one ResourceSet's documents), `render` (a
//! template rendered), `run` (a parsed template run: blocks, pipelines, operands), `functions`
//! (the template functions), `parse` (a template's text into nodes), `inputs` (the input sets),
//! `budget` (the limits, and why a ResourceSet is not expanded).

mod budget;
mod build;
mod expand;
mod functions;
mod inputs;
mod parse;
mod render;
mod run;

pub use budget::{MAX_NODES, MAX_RENDERED_BYTES, MAX_TEMPLATE_DEPTH, MAX_TEMPLATE_STEPS};
pub(super) use expand::expand;
pub use expand::generated_path;
pub use render::render;
