//! Locks the adapter's caches and counters are kept under.

use std::sync::{Mutex, MutexGuard};

/// The value under `mutex`, also when a holder panicked: every value the adapter guards is
/// whole between statements (a cache entry, a time, a counter).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
