//! The allocator fluxmend runs on, and how it is told to give back what is freed.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_int, c_long};

/// mimalloc (built without transparent huge pages) for blocks under [`LARGE`]: parsing
/// allocates and frees millions of short strings; against the system allocator it was faster at
/// 10k and 100k files for about the same peak memory (README, Performance). On Unix, blocks of
/// [`LARGE`] or more are pages of their own ([`pages`]). The binary and the benchmark make it
/// their global allocator and call [`release_freed_memory_promptly`] before any work.
pub struct Allocator;

/// The size from which a block is mapped on its own. Blocks this large are few: a batch of
/// files' texts and node records, kept for the whole run, and a model's tables, built and
/// dropped once per model. In mimalloc each of their size classes has pages of its own, which
/// stay resident around a freed block until every block of the page is freed: 2 MB of `fix`'s
/// peak at 14k files, a twentieth of it (issue 26). Mapped on their own, they are given back as
/// they are freed, and a block that grows (a vector doubling) is moved by the page table rather
/// than copied. Elsewhere than on Unix, every block is mimalloc's.
#[cfg_attr(not(unix), allow(dead_code))]
const LARGE: usize = 64 * 1024;

/// Whether a block is mapped on its own rather than mimalloc's. Mapped pages are aligned to a
/// page (4 KiB at least): a block asking for more is mimalloc's.
#[cfg(unix)]
fn mapped(layout: Layout) -> bool {
    layout.size() >= LARGE && layout.align() <= 4096
}

// SAFETY: every block is given back to the allocator that gave it: [`mapped`] depends on the
// layout alone, which the caller passes unchanged to `dealloc` and `realloc`; a block whose
// side changes on `realloc` is copied to the other and given back to its own.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        #[cfg(unix)]
        if mapped(layout) {
            return pages::map(layout.size());
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        #[cfg(unix)]
        if mapped(layout) {
            // Fresh pages are zeroed by the system.
            return pages::map(layout.size());
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        #[cfg(unix)]
        if mapped(layout) {
            // SAFETY: `ptr` was mapped with this size (the caller's contract).
            return unsafe { pages::unmap(ptr, layout.size()) };
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        #[cfg(unix)]
        {
            // SAFETY: `new_size`, rounded up to the alignment, does not overflow (the caller's
            // contract).
            let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            match (mapped(layout), mapped(new)) {
                (false, false) => {}
                // SAFETY: `ptr` was mapped with `layout`'s size (the caller's contract).
                (true, true) => return unsafe { pages::remap(ptr, layout.size(), new_size) },
                // SAFETY: the new block holds what is copied; the old one is given back to its
                // own allocator, and only once the copy is made.
                _ => unsafe {
                    let moved = self.alloc(new);
                    if !moved.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    return moved;
                },
            }
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

/// Blocks that are pages of their own, mapped and unmapped by the system (which rounds a
/// length up to whole pages).
#[cfg(unix)]
mod pages {
    /// `len` bytes of fresh, zeroed pages; null when the system has none.
    pub(super) fn map(len: usize) -> *mut u8 {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        // SAFETY: a new anonymous mapping; nothing existing is touched.
        let at = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, -1, 0) };
        if at == libc::MAP_FAILED {
            std::ptr::null_mut()
        } else {
            at.cast()
        }
    }

    /// Give back the pages of a block of `len` bytes.
    ///
    /// # Safety
    /// `at` was returned by [`map`] or [`remap`] for `len` bytes, and is not used again.
    pub(super) unsafe fn unmap(at: *mut u8, len: usize) {
        // SAFETY: the block's own pages (the caller's contract). A failure leaves them mapped:
        // memory not given back, nothing unsound.
        unsafe { libc::munmap(at.cast(), len) };
    }

    /// The block of `len` bytes at `at` resized to `new_len`, its bytes kept: moved by the page
    /// table where the system can (Linux), else copied; null, the block untouched, when the
    /// system has no pages.
    ///
    /// # Safety
    /// As [`unmap`]'s, unless null is returned.
    pub(super) unsafe fn remap(at: *mut u8, len: usize, new_len: usize) -> *mut u8 {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the block's own pages (the caller's contract), which may move.
            let moved = unsafe { libc::mremap(at.cast(), len, new_len, libc::MREMAP_MAYMOVE) };
            if moved == libc::MAP_FAILED {
                std::ptr::null_mut()
            } else {
                moved.cast()
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let moved = map(new_len);
            if !moved.is_null() {
                // SAFETY: both blocks hold what is copied; the old one's pages are then given
                // back (the caller's contract).
                unsafe {
                    std::ptr::copy_nonoverlapping(at, moved, len.min(new_len));
                    unmap(at, len);
                }
            }
            moved
        }
    }
}

/// `mi_option_purge_delay` in the `mi_option_t` of mimalloc v3 (`include/mimalloc.h`), the
/// version the `mimalloc` crate builds; its Rust bindings do not name it.
const MI_OPTION_PURGE_DELAY: c_int = 15;

unsafe extern "C" {
    fn mi_option_set(option: c_int, value: c_long);
}

/// How long, in milliseconds, mimalloc keeps a freed page before giving it back to the system.
/// Its own default (a second) is about as long as a check lasts: what loading and modelling had
/// freed stayed resident under what came next, 4.4 MB of `check`'s peak at 14k files (issue
/// 26). Given back at once, every page that empties costs an `madvise` and a TLB shootdown on
/// the other cores, and is faulted in again when reused: 6% of `check`'s CPU samples at 142k
/// files. At 10 ms, in two sittings of interleaved runs on the benchmark fleets, `check` at 142k
/// files took 5–15% less time than at 0 and `fix` 5%, for 0.3% more peak RSS at 142k and 2–4% at
/// 14k (one `fix` run in eleven at 142k peaked 13% higher).
const PURGE_DELAY_MS: c_long = 10;

/// Make mimalloc give freed pages back after [`PURGE_DELAY_MS`], not after its default second.
pub fn release_freed_memory_promptly() {
    // SAFETY: sets one of mimalloc's options, a plain store it reads when it purges.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS) };
}

#[cfg(test)]
mod tests {
    use std::ffi::{c_int, c_long};

    unsafe extern "C" {
        fn mi_version() -> c_int;
        fn mi_option_get(option: c_int) -> c_long;
        fn mi_option_set(option: c_int, value: c_long);
    }

    /// A block keeps its bytes however it is resized: within mimalloc, into pages of its own,
    /// from pages to larger pages (moved by the page table), and back into mimalloc.
    #[test]
    fn a_block_keeps_its_bytes_across_every_kind_of_resize() {
        use std::alloc::{GlobalAlloc as _, Layout};
        let allocator = super::Allocator;
        let pattern = |i: usize| (i % 251) as u8;
        let sizes = [
            100,
            1000,
            super::LARGE,
            3 * super::LARGE + 17,
            40 << 20,
            5000,
            10,
        ];
        // SAFETY: each block is used within its size and given back once, with its layout.
        unsafe {
            let mut layout = Layout::from_size_align(sizes[0], 8).unwrap();
            let mut block = allocator.alloc(layout);
            assert!(!block.is_null());
            for i in 0..layout.size() {
                *block.add(i) = pattern(i);
            }
            for &size in &sizes[1..] {
                block = allocator.realloc(block, layout, size);
                assert!(!block.is_null(), "{} -> {size}", layout.size());
                let kept = layout.size().min(size);
                assert!(
                    (0..kept).all(|i| *block.add(i) == pattern(i)),
                    "{} -> {size}",
                    layout.size()
                );
                layout = Layout::from_size_align(size, 8).unwrap();
                for i in kept..size {
                    *block.add(i) = pattern(i);
                }
            }
            allocator.dealloc(block, layout);
        }
    }

    /// Zeroed blocks are zeroed on either side, and a block asking for more than a page's
    /// alignment gets it.
    #[test]
    fn zeroed_and_overaligned_blocks_are_what_was_asked() {
        use std::alloc::{GlobalAlloc as _, Layout};
        let allocator = super::Allocator;
        for (size, align) in [
            (64, 8),
            (super::LARGE, 8),
            (1 << 20, 4096),
            (1 << 20, 1 << 16),
        ] {
            let layout = Layout::from_size_align(size, align).unwrap();
            // SAFETY: the block is read within its size and given back once, with its layout.
            unsafe {
                let block = allocator.alloc_zeroed(layout);
                assert!(!block.is_null());
                assert_eq!(block as usize % align, 0, "{size} aligned to {align}");
                assert!((0..size).all(|i| *block.add(i) == 0), "{size} zeroed");
                allocator.dealloc(block, layout);
            }
        }
    }

    /// The option number is mimalloc v3's: another major version may number its options
    /// otherwise, and this one would then set some other option without a word.
    #[test]
    fn the_purge_delay_option_is_mimalloc_v3s() {
        // SAFETY: plain reads and stores of mimalloc's options.
        unsafe {
            assert_eq!(mi_version() / 10_000, 3, "mimalloc {}", mi_version());
            let before = mi_option_get(super::MI_OPTION_PURGE_DELAY);
            mi_option_set(super::MI_OPTION_PURGE_DELAY, 37);
            assert_eq!(mi_option_get(super::MI_OPTION_PURGE_DELAY), 37);
            mi_option_set(super::MI_OPTION_PURGE_DELAY, before);
        }
    }
}
