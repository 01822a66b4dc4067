//! Emit: one printer for every report (text for people, JSON for bots) and, for fixes, the
//! diff, in-place write and git commit.

pub mod apply;
pub mod report;
pub mod simulate;
pub mod write;
