//! The integration tests, one binary: each module was a test binary of its own, and each compiled
//! `common` again. A rule's tests and snapshots are in `rules/<id>/`; `common` holds the helpers
//! (fixtures, running the built binary, throw-away repositories).
//!
//! A test that changes what the whole process shares (environment, working directory, signal
//! handlers) would need a binary of its own (`[[test]]` in Cargo.toml); none does: the tests set
//! environment and working directory on the child processes they spawn.

mod bad_input;
mod bots;
mod commit_failure;
mod commit_trust;
mod common;
mod config;
mod diff_applies;
mod edit_props;
mod exit_codes;
mod gate_confinement;
mod gate_escapes;
mod gates;
mod graph_snapshots;
mod guarantees;
mod honest_outcomes;
mod hostile;
mod hostile_reads;
mod hostile_sizes;
mod journal_trust;
mod kustomize_differential;
mod model_fleet;
mod output_escaping;
mod packaging;
mod phases;
mod real_layouts;
mod resourcesets;
mod revision;
mod rollout;
mod rules;
mod simulate;
mod suppressions;
mod text_output;
mod write_oracle;
mod write_races;
