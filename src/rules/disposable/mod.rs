//! What counts as a disposable workload (FM002) and what it brings along.
//!
//! The catalogue is data: `rules/disposable.yaml`, embedded at build time, extended per
//! repository by the `disposable:` key of a `.fluxmend.yaml` file at the repository root. Each
//! matcher carries the reason shown in a finding. [`Analysis`] classifies objects and computes,
//! for one layer variant, the [`Bundle`]: the disposable workloads the layer health-gates, the
//! objects only they use (which move with them), and what stays behind.
//!
//! Each file has one job and imports only the files listed after it: `needs` (what crosses a
//! split), `users` (what one layer uses of another's objects), `bundle` (what a split moves),
//! `analysis` (the memo and the index of who names what), `objects` (what an object says about
//! the objects it uses), `scalars` (the names an object holds), `matching` (whether an object
//! is disposable), `catalogue` (the matchers), `reader` (the catalogue's YAML).

mod analysis;
mod bundle;
mod catalogue;
mod matching;
mod needs;
mod objects;
mod reader;
mod scalars;
mod users;

pub use analysis::{Analysis, Shared};
pub use bundle::Bundle;
pub use catalogue::{BUILTIN, Catalogue, REPO_FILE};
pub use matching::image_repository;
pub use reader::CatalogueError;
