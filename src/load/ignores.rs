//! The ignore rules every walk applies besides the repository's own ignore files
//! (`ignore_files`): Flux source-controller's defaults and the configuration's `exclude`, the
//! same for the work tree and a revision's tree.

use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// fluxmend's configuration file, at the repository root: fluxmend's, not Flux's (its
/// diagnostics are the configuration's, `crate::config`).
pub const CONFIG_FILE: &str = ".fluxmend.yaml";

/// Flux source-controller's always-applied exclusions (fluxcd/pkg `sourceignore.ExcludeVCS`).
const FLUX_VCS_IGNORES: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];

/// Flux's other default exclusions (`ExcludeExt`, `ExcludeCI`, `ExcludeExtra`): dropped by
/// source-controller as soon as the repository has any `.sourceignore` file.
const FLUX_DEFAULT_IGNORES: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// The ignore rules every walk applies besides the repository's own ignore files: Flux's VCS
/// exclusions, its other defaults (which apply until a `.sourceignore` exists), and the
/// configuration's `exclude`, all relative to the root.
pub(super) struct Ignores {
    vcs: Gitignore,
    defaults: Gitignore,
    excluded: Gitignore,
    /// The configuration file stays whatever `exclude` says: its `disposable:` section is read
    /// from the loaded file.
    config: PathBuf,
}

impl Ignores {
    pub(super) fn new(root: &Path, exclude: &[String]) -> Ignores {
        let mut builder = GitignoreBuilder::new(root);
        for pattern in exclude {
            // The configuration keeps only patterns that parse.
            let _ = builder.add_line(None, pattern);
        }
        Ignores {
            vcs: ignore_matcher(root, FLUX_VCS_IGNORES),
            defaults: ignore_matcher(root, FLUX_DEFAULT_IGNORES),
            excluded: builder.build().unwrap_or_else(|_| Gitignore::empty()),
            config: root.join(CONFIG_FILE),
        }
    }

    /// Whether the walk leaves `path` (and what lies below it) out entirely.
    pub(super) fn leaves_out(&self, path: &Path, is_dir: bool) -> bool {
        let ignored = |m: &Gitignore| {
            matches!(
                m.matched_path_or_any_parents(path, is_dir),
                Match::Ignore(_)
            )
        };
        ignored(&self.vcs) || (path != self.config && ignored(&self.excluded))
    }

    /// Whether Flux's default ignores match `path` (they apply only without `.sourceignore`).
    pub(super) fn default_ignored(&self, path: &Path, is_dir: bool) -> bool {
        matches!(
            self.defaults.matched_path_or_any_parents(path, is_dir),
            Match::Ignore(_)
        )
    }
}

fn ignore_matcher(root: &Path, patterns: &[&str]) -> Gitignore {
    let mut builder = GitignoreBuilder::new(root);
    for pattern in patterns {
        builder
            .add_line(None, pattern)
            .expect("built-in ignore patterns are valid");
    }
    builder.build().expect("built-in ignore patterns are valid")
}
