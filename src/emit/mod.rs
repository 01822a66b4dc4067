//! Emit: one printer for every report (text for people, JSON for bots) and, for fixes, the
//! diff, in-place write and git commit.

pub mod apply;
pub mod commit;
pub mod error;
pub mod escape;
pub mod github;
pub mod graph;
pub mod json;
pub mod pr;
pub mod report;
pub mod sarif;
pub mod simulate;
pub mod text;
pub mod write;
