//! The journal file being written: created exclusively, each line flushed before the step it
//! announces.

use std::fs::File;
use std::io::{self, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;

use crate::emit::error::EmitError;

use super::hooks;
use super::ops::Op;
use super::tree::Tree;

/// The journal's file name in the repository root.
pub const JOURNAL: &str = ".fluxmend-journal";

pub(super) const HEADER: &str = "fluxmend-journal 2";

/// The largest journal recovery reads: a bigger one is not fluxmend's.
pub(super) const MAX_JOURNAL: u64 = 16 << 20;

/// The journal being written.
pub(super) struct Journal {
    pub(super) file: File,
    pub(super) path: PathBuf,
    /// Test hook: stop the process (as a kill would) after this many more steps.
    pub(super) abort_after: Option<usize>,
}

impl Journal {
    pub(super) fn create(tree: &Tree) -> Result<Journal, EmitError> {
        let path = tree.root.join(JOURNAL);
        let file = tree.root_dir.create(JOURNAL, 0o600).map_err(|e| {
            if e.kind() == io::ErrorKind::AlreadyExists {
                EmitError::Journal(format!(
                    "{} exists: another fluxmend is writing this tree, or one was interrupted; \
                     run `fluxmend fix --write {}` to complete or roll it back",
                    path.display(),
                    tree.root.display()
                ))
            } else {
                anyhow::Error::new(e)
                    .context(format!("creating {}", path.display()))
                    .into()
            }
        })?;
        let mut j = Journal {
            file,
            path,
            abort_after: hooks::abort_after(),
        };
        j.line(HEADER)?;
        Ok(j)
    }

    /// The journal of an interrupted write, to append `abort` to.
    pub(super) fn reopen(tree: &Tree) -> Result<Journal, EmitError> {
        let path = tree.root.join(JOURNAL);
        let file = tree
            .root_dir
            .append(JOURNAL)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(Journal {
            file,
            path,
            abort_after: hooks::abort_after(),
        })
    }

    /// Append one line and flush it to disk.
    pub(super) fn line(&mut self, text: &str) -> Result<(), EmitError> {
        self.file
            .write_all(format!("{text}\n").as_bytes())
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("writing {}", self.path.display()))?;
        self.step();
        Ok(())
    }

    pub(super) fn op(&mut self, op: &Op) -> Result<(), EmitError> {
        self.line(&op.line())
    }

    /// Count one step; the test hook ends the process here without any clean-up, as SIGKILL
    /// would.
    pub(super) fn step(&mut self) {
        if let Some(n) = &mut self.abort_after {
            if *n == 0 {
                crate::platform::exit_at_once(86);
            }
            *n -= 1;
        }
    }
}
