//! `graph`: the layers and what each applies, in the format asked for.

use fluxmend::emit::graph;

use crate::cli::{GraphArgs, GraphFormat};

use super::status::{ExitStatus, UsageError};
use super::steps::{build_model, load};

/// Run `graph`.
pub(crate) fn graph(args: &GraphArgs) -> Result<ExitStatus, UsageError> {
    let (repo, options, config) = load(&args.repo)?;
    let mut model = build_model(&repo, &options)?;
    let mut diagnostics = config.diagnostics;
    diagnostics.extend(model.all_diagnostics());
    model.diagnostics = fluxmend::diagnostics::dedup(diagnostics);
    print!(
        "{}",
        match args.format {
            GraphFormat::Text => graph::text(&model),
            GraphFormat::Json => graph::json(&model),
            GraphFormat::Dot => graph::dot(&model),
            GraphFormat::Mermaid => graph::mermaid(&model),
        }
    );
    Ok(ExitStatus::Success)
}
