//! The decoding policy: how this thread decodes the types' lenient fields and tagged unions
//! (exact, optimistic or detailed), and whether an optimistic pass can be trusted. This module
//! owns the mode; the lenient fields and unions read it, and `json::from_str` and
//! `rpc::decode_params` set it.

/// How this thread decodes the types' lenient fields and tagged unions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Lenient fields capture their text and decode it, repairing what fails; the default, and
    /// what `serde_json::from_str` gets.
    Exact,
    /// Lenient fields decode in place, as plain fields do; a value that would need a repair fails
    /// the whole decode instead, which [`json::from_str`](crate::json::from_str) then runs again `Exact`.
    Optimistic,
    /// Unions and lenient fields buffer their value (see [`detailed`]).
    Detailed,
}

thread_local! {
    static MODE: std::cell::Cell<Mode> = const { std::cell::Cell::new(Mode::Exact) };
    /// Set when a lenient field refused a value under [`optimistic`], or an untagged union's
    /// branch a key twice: the union may have swallowed that error and taken another branch than
    /// the exact way takes, so the result cannot be trusted.
    static REFUSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that the [`optimistic`] pass cannot be trusted (see `REFUSED`).
pub(crate) fn refuse() {
    REFUSED.with(|r| r.set(true));
}

/// Whether the [`optimistic`] pass was noted untrusted since the last call (and clears the note).
pub(crate) fn take_refused() -> bool {
    REFUSED.with(|r| r.replace(false))
}

/// Puts the mode before back when dropped.
struct Restore(Mode);

impl Drop for Restore {
    fn drop(&mut self) {
        MODE.with(|m| m.set(self.0));
    }
}

/// Sets this thread's mode; the guard puts the one before back (not generic: compiled once).
fn enter(mode: Mode) -> Restore {
    Restore(MODE.with(|m| m.replace(mode)))
}

/// Runs `f` with this thread's mode set to `mode`, and puts the one before back afterwards.
fn with_mode<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    let _restore = enter(mode);
    f()
}

/// Runs `f` with detailed decoding on this thread: tagged unions and lenient fields buffer their
/// value and decode it the general way, whose errors name the tag and the path inside (`content[0]
/// .text: missing field … (in sessionUpdate `tool_call`)`). Results are the same either way; only
/// the wording of errors differs. `rpc::decode_params` decodes in one pass first and again
/// under `detailed` after a failure.
pub fn detailed<R>(f: impl FnOnce() -> R) -> R {
    with_mode(Mode::Detailed, f)
}

/// Runs `f` with optimistic decoding on this thread (unless [`detailed`] is in force): lenient
/// fields decode in place, without capturing their text first, and a value that would need a
/// repair (a default taken, an item dropped) fails the decode instead. A decode that succeeds this
/// way gives exactly what the exact way gives; one that fails must be run again outside, which
/// [`json::from_str`](crate::json::from_str) does.
pub fn optimistic<R>(f: impl FnOnce() -> R) -> R {
    if is_detailed() {
        return f();
    }
    with_mode(Mode::Optimistic, f)
}

/// Whether [`detailed`] is in force on this thread.
#[inline]
pub(crate) fn is_detailed() -> bool {
    MODE.with(std::cell::Cell::get) == Mode::Detailed
}

/// Whether [`optimistic`] is in force on this thread.
#[inline]
pub(crate) fn is_optimistic() -> bool {
    MODE.with(std::cell::Cell::get) == Mode::Optimistic
}
