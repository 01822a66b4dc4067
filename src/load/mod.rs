//! Load: walk a repository the way Flux packages it (its ignore rules), read the YAML files and
//! parse them, and set aside — with a note, not an error — what is not Kubernetes YAML.
//!
//! Each file has one job and imports only the files listed after it: `work_tree` (a repository
//! as its work tree holds it, walked), `revision` (a repository at a git revision), `git_tree`
//! (a revision's tree listed as its checkout would hold it), `assemble` (the repository a
//! listing describes: its files read, judged and parsed), `repo` (the loaded repository and its
//! indexes), `folder_files` (each folder's files, indexed), `resourceset` (the objects
//! ResourceSets generate), `objects` (a revision's blobs), `listing` (what a walk found),
//! `ignores` (Flux's default ignores and the configuration's `exclude`), `ignore_files` (the
//! repository's own ignore files), `file` (a parsed file and its index, what a path is below),
//! `read` (the safe reader).

mod assemble;
mod file;
mod folder_files;
mod git_tree;
mod ignore_files;
mod ignores;
mod listing;
mod objects;
pub mod read;
mod repo;
pub mod resourceset;
pub mod revision;
mod work_tree;

pub use file::{FileId, SourceFile, dir_prefix, file_id, is_within, parent_of};
pub use ignores::CONFIG_FILE;
pub use read::MAX_FILE_BYTES;
pub use repo::Repo;
pub use work_tree::LoadError;

/// `text` written at `root/rel`, the folders on the way created: the tests' repositories.
#[cfg(test)]
pub(crate) fn write_test_file(root: &std::path::Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
