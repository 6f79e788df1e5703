//! The runtime's one way to take a `std` mutex. Its locks are short and nothing that holds one
//! leaves the guarded state half-changed on a panic, so a poisoned lock is taken as it is.

use std::sync::{Mutex, MutexGuard};

/// `m` locked, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
