//! One parsed YAML file of a repository, its index, and the directory of a path: the records
//! every part of the load names a file by, kept below the loaded repository so that the parts
//! that make one (a revision, the ResourceSets' generated files) need not import it.

use crate::parse::{ParseError, YamlFile};

/// Index of a file in `Repo::files`. 32 bits: model records name files by id (objects,
/// inventories' chains, kustomization entries), a fleet holds millions of them, and a
/// repository of 2^32 files would not fit in memory to begin with (issue 26).
pub type FileId = u32;

/// The id of the file at `index` in `Repo::files`.
pub fn file_id(index: usize) -> FileId {
    FileId::try_from(index).expect("a repository holds fewer than 2^32 files")
}

/// One parsed YAML file. `path` is relative to the repository root, `/`-separated.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub path: String,
    pub yaml: YamlFile,
    /// Set when the file did not parse to its end; its later documents are unknown and no fix
    /// may touch the file. Boxed: few files have one, and a fleet keeps a record per file.
    pub error: Option<Box<ParseError>>,
}

// A fleet keeps one `Arc<SourceFile>` a file (its two counts, then the record): within
// mimalloc's 96-byte size class, not the next (112).
const _: () = assert!(2 * std::mem::size_of::<usize>() + std::mem::size_of::<SourceFile>() <= 96);

/// `dir/`, or nothing for the root: what a path below `dir` starts with.
pub fn dir_prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

/// Whether the relative path `path` is the folder `dir` or below it (`""`: the root, which
/// holds everything).
pub fn is_within(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The directory part of a relative path (`""` for a top-level entry).
pub fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

#[cfg(test)]
mod tests {
    use super::is_within;

    /// A folder holds itself and what is below it, not a sibling whose name it begins
    /// (`a-b`, `a.b`, `ab`); the root holds everything.
    #[test]
    fn a_folder_holds_itself_and_what_is_below_it() {
        for (path, dir) in [
            ("a", "a"),
            ("a/b", "a"),
            ("a/b/c.yaml", "a/b"),
            ("x", ""),
            ("", ""),
        ] {
            assert!(is_within(path, dir), "{path} in {dir}");
        }
        for (path, dir) in [
            ("a-b", "a"),
            ("a.b/c", "a"),
            ("ab", "a"),
            ("a", "a/b"),
            ("", "a"),
        ] {
            assert!(!is_within(path, dir), "{path} not in {dir}");
        }
    }
}
