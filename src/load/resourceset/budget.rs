//! What the expansion of one ResourceSet may use (rendered bytes, template steps, nodes, nesting)
//! and why a ResourceSet is not expanded: a limit passed is a warning, something not modelled a
//! note.

/// How deep `if` and `range` blocks may nest (each level is a recursion of the renderer).
pub const MAX_TEMPLATE_DEPTH: usize = 64;
/// How much text one ResourceSet may render (nested `range`s grow as a power).
pub const MAX_RENDERED_BYTES: usize = 32 << 20;
/// How many template nodes one ResourceSet may run (a `range` with an empty body prints
/// nothing, however long it runs).
pub const MAX_TEMPLATE_STEPS: usize = 50_000_000;
/// How many nodes a ResourceSet may have, and its objects together: thousands of input sets
/// fit, an expansion that would exhaust memory does not.
pub const MAX_NODES: usize = 2_000_000;

/// Why a ResourceSet is not expanded.
#[derive(Debug)]
pub(super) enum NotExpanded {
    /// Something fluxmend does not model (a note).
    Unsupported(String),
    /// A limit of the module documentation (a warning).
    Limit(String),
}

impl From<String> for NotExpanded {
    fn from(why: String) -> NotExpanded {
        NotExpanded::Unsupported(why)
    }
}

impl From<&str> for NotExpanded {
    fn from(why: &str) -> NotExpanded {
        NotExpanded::Unsupported(why.to_string())
    }
}

/// What the expansion of one ResourceSet may still use.
pub(super) struct Budget {
    pub(super) bytes: usize,
    pub(super) steps: usize,
    pub(super) nodes: usize,
}

impl Budget {
    pub(super) fn new() -> Budget {
        Budget {
            bytes: MAX_RENDERED_BYTES,
            steps: MAX_TEMPLATE_STEPS,
            nodes: MAX_NODES,
        }
    }

    pub(super) fn nodes(&mut self, n: usize) -> Result<(), NotExpanded> {
        self.nodes = self.nodes.checked_sub(n).ok_or_else(|| {
            NotExpanded::Limit(format!("it generates more than {MAX_NODES} nodes"))
        })?;
        Ok(())
    }
}
