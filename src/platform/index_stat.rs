//! The metadata git's index keeps of a file, where the system has it.

/// What git's index records of a file's metadata (`git status` compares it to tell a file
/// unchanged without reading it): change and modification times (seconds, nanoseconds),
/// device, inode, owner, group. `None` where the system has no such data (git then reads the
/// file to tell).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexStat {
    pub ctime: (i64, i64),
    pub mtime: (i64, i64),
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub gid: u32,
}

pub fn index_stat(m: &std::fs::Metadata) -> Option<IndexStat> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some(IndexStat {
            ctime: (m.ctime(), m.ctime_nsec()),
            mtime: (m.mtime(), m.mtime_nsec()),
            dev: m.dev(),
            ino: m.ino(),
            uid: m.uid(),
            gid: m.gid(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}
