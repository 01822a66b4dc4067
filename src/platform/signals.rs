//! SIGINT and SIGTERM held off while children run and temporary trees exist, so that they are
//! cleaned up first; the signal is raised again afterwards.

/// SIGINT and SIGTERM while a guard lives: noted (see [`interrupted`]) instead of ending the
/// process, so that children are killed and temporary trees removed first; the signal is raised
/// again when the last guard drops. Without signals (Windows) the guard does nothing.
pub struct SignalGuard(());

/// Whether SIGINT or SIGTERM arrived while a [`SignalGuard`] lives: stop and clean up.
pub fn interrupted() -> bool {
    #[cfg(unix)]
    {
        unix::pending()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

impl SignalGuard {
    pub fn new() -> SignalGuard {
        #[cfg(unix)]
        unix::install();
        SignalGuard(())
    }
}

impl Default for SignalGuard {
    fn default() -> Self {
        SignalGuard::new()
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        #[cfg(unix)]
        unix::release();
    }
}

#[cfg(unix)]
mod unix {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicI32, Ordering};

    static SIGNALLED: AtomicI32 = AtomicI32::new(0);
    /// How many guards live, and the dispositions to restore after the last.
    static ACTIVE: Mutex<(usize, Option<[libc::sigaction; 2]>)> = Mutex::new((0, None));
    const SIGNALS: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

    extern "C" fn note(sig: libc::c_int) {
        SIGNALLED.store(sig, Ordering::SeqCst);
    }

    pub fn pending() -> bool {
        SIGNALLED.load(Ordering::SeqCst) != 0
    }

    pub fn install() {
        let mut active = ACTIVE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if active.0 == 0 {
            // SAFETY: installing a handler that only stores to an atomic.
            let saved = SIGNALS.map(|sig| unsafe {
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = note as *const () as libc::sighandler_t;
                libc::sigemptyset(&raw mut new.sa_mask);
                let mut old: libc::sigaction = std::mem::zeroed();
                libc::sigaction(sig, &raw const new, &raw mut old);
                old
            });
            active.1 = Some(saved);
        }
        active.0 += 1;
    }

    pub fn release() {
        let mut active = ACTIVE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        active.0 -= 1;
        if active.0 > 0 {
            return;
        }
        if let Some(saved) = active.1.take() {
            for (sig, old) in SIGNALS.iter().zip(saved) {
                // SAFETY: restoring the disposition saved above.
                unsafe { libc::sigaction(*sig, &raw const old, std::ptr::null_mut()) };
            }
        }
        let sig = SIGNALLED.swap(0, Ordering::SeqCst);
        if sig != 0 {
            // What the guard protected is cleaned up (dropped before it): die of the signal as
            // the user asked.
            // SAFETY: plain libc calls.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
        }
    }
}
