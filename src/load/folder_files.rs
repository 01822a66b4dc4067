//! Each folder's YAML files, found by the folder's path without keeping a copy of it.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::HashTable;
use rustc_hash::FxBuildHasher;

use super::file::{FileId, SourceFile, is_within, parent_of};

/// The YAML files directly in each folder: their ids in path order, one run per folder in
/// `ids`. A folder is found by its path's hash and recognised by its first file's folder, so
/// no folder path is stored: a map keyed by the paths was a copy of every folder's path and a
/// list header each, rebuilt for every re-modelled variant of the repository (issue 26).
#[derive(Clone, Debug, Default)]
pub(super) struct FolderFiles {
    /// Each folder's (start, length) in `ids`.
    runs: HashTable<(u32, u32)>,
    ids: Vec<u32>,
}

fn hash(dir: &str) -> u64 {
    FxBuildHasher.hash_one(dir)
}

impl FolderFiles {
    /// The index of `files` (sorted by path), the files `leave_out` names not in it.
    pub(super) fn of(
        files: &[Arc<SourceFile>],
        leave_out: impl Fn(&SourceFile) -> bool,
    ) -> FolderFiles {
        let mut index = FolderFiles {
            runs: HashTable::new(),
            ids: Vec::with_capacity(files.len()),
        };
        // In path order a folder's files come in runs split only by its subfolders' files: the
        // folders whose files are still coming are the current folder and its ancestors, a
        // stack; a folder is complete when a file outside it comes.
        let mut open: Vec<(&str, Vec<u32>)> = Vec::new();
        for (id, file) in files.iter().enumerate() {
            if leave_out(file) {
                continue;
            }
            let dir = parent_of(&file.path);
            while let Some((top, _)) = open.last()
                && !is_within(dir, top)
            {
                let (top, run) = open.pop().expect("a folder on the stack");
                index.add(files, top, run);
            }
            match open.last_mut() {
                Some((top, run)) if *top == dir => run.push(id as u32),
                _ => open.push((dir, vec![id as u32])),
            }
        }
        while let Some((top, run)) = open.pop() {
            index.add(files, top, run);
        }
        index
    }

    /// Take in the files of `dir`, all of them.
    fn add(&mut self, files: &[Arc<SourceFile>], dir: &str, run: Vec<u32>) {
        let start = self.ids.len() as u32;
        let len = run.len() as u32;
        self.ids.extend(run);
        let ids = &self.ids;
        let folder_of =
            |&(start, _): &(u32, u32)| hash(parent_of(&files[ids[start as usize] as usize].path));
        self.runs.insert_unique(hash(dir), (start, len), folder_of);
    }

    /// The files directly in `dir`, in path order (`files`: those the index was made of).
    pub(super) fn of_folder<'a>(
        &'a self,
        files: &[Arc<SourceFile>],
        dir: &str,
    ) -> impl ExactSizeIterator<Item = FileId> + 'a {
        let found = self.runs.find(hash(dir), |&(start, _)| {
            parent_of(&files[self.ids[start as usize] as usize].path) == dir
        });
        let (start, len) = found.map_or((0, 0), |&(start, len)| (start as usize, len as usize));
        self.ids[start..start + len].iter().map(|&id| id as FileId)
    }
}
