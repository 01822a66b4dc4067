//! The allocator fluxmend runs on, and how it is told to give back what is freed.

use std::ffi::{c_int, c_long};

/// mimalloc (built without transparent huge pages): parsing allocates and frees millions of
/// short strings; against the system allocator it was faster at 10k and 100k files for about
/// the same peak memory (README, Performance). The binary and the benchmark make it their
/// global allocator and call [`release_freed_memory_promptly`] before any work.
pub type Allocator = mimalloc::MiMalloc;

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
