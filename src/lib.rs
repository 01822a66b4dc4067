//! fluxmend: find and rewrite Flux delivery trees that can lock themselves.
//!
//! Stages, one module each (with the repository's [`config`]): [`load`] the files, [`parse`] them into span trees, build the
//! [`model`] of objects, kustomize directories and Flux layers, run the [`rules`], [`verify`] their
//! fixes (at rest, and in motion through the [`rollout`] model) and [`emit`] the result.

// A repository must never make fluxmend panic: no `unwrap` (an `expect` states the invariant
// that rules the panic out); unit tests may unwrap (clippy.toml). Only `main` prints.
#![deny(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

pub mod changes;
pub mod config;
pub mod diagnostics;
pub mod edit;
pub mod emit;
pub mod load;
pub mod model;
pub mod parse;
pub mod platform;
pub mod rollout;
pub mod rules;
pub mod targets;
pub mod verify;
