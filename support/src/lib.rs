//! Hand-written runtime support for the generated types (this crate is not generated, and lives
//! outside `generated/` for that reason), re-exported by `acp-types` as `acp_types::support`.
//! Change decoding here or in the generator (`xtask/`), never in `generated/`.
//!
//! The generated code refers to these items as `crate::support::…`: the version crates
//! (`acp-types-v1`, …) and the standalone crates written by `cargo xtask codegen --schema FILE
//! --out DIR` bind this crate under that name at their root (a standalone crate depends on it by
//! path), so there is one copy of this code, compiled one way.

mod defaulted;
pub mod json;
pub mod lenient;
mod meta;
pub mod moved;
mod patch;
pub mod rpc;
#[cfg(feature = "schemars")]
pub mod schema;
mod tracked;
pub mod union;

pub use defaulted::Defaulted;
pub use meta::Meta;
pub use patch::Patch;

/// A JSON object as a map, in its order (what [`Meta::to_map`] gives; a union's catch-all keeps its
/// object as a [`Meta`]).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Decodes a buffered JSON value (a union's body, a lenient field) and keeps the path of a failure
/// inside it: the error reads `content[0].text: missing field …`, which [`rpc::decode_params`]
/// joins onto the path of the value itself.
pub(crate) fn decode_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, serde_json::Error> {
    tracked::deserialize(value).map_err(with_path)
}

/// The error with its path as a prefix (not generic, so compiled once).
fn with_path((path, inner): (String, serde_json::Error)) -> serde_json::Error {
    if path.is_empty() || path == "." {
        inner
    } else {
        serde::de::Error::custom(format_args!("{path}: {inner}"))
    }
}

/// How this thread decodes the types' lenient fields and tagged unions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Lenient fields capture their text and decode it, repairing what fails; the default, and
    /// what `serde_json::from_str` gets.
    Exact,
    /// Lenient fields decode in place, as plain fields do; a value that would need a repair fails
    /// the whole decode instead, which [`json::from_str`] then runs again `Exact`.
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

/// Runs `f` with this thread's mode set to `mode`, and puts the one before back afterwards.
fn with_mode<R>(mode: Mode, f: impl FnOnce() -> R) -> R {
    struct Restore(Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            MODE.with(|m| m.set(self.0));
        }
    }
    let _restore = Restore(MODE.with(|m| m.replace(mode)));
    f()
}

/// Runs `f` with detailed decoding on this thread: tagged unions and lenient fields buffer their
/// value and decode it the general way, whose errors name the tag and the path inside (`content[0]
/// .text: missing field … (in sessionUpdate `tool_call`)`). Results are the same either way; only
/// the wording of errors differs. [`rpc::decode_params`] decodes in one pass first and again
/// under `detailed` after a failure.
pub fn detailed<R>(f: impl FnOnce() -> R) -> R {
    with_mode(Mode::Detailed, f)
}

/// Runs `f` with optimistic decoding on this thread (unless [`detailed`] is in force): lenient
/// fields decode in place, without capturing their text first, and a value that would need a
/// repair (a default taken, an item dropped) fails the decode instead. A decode that succeeds this
/// way gives exactly what the exact way gives; one that fails must be run again outside, which
/// [`json::from_str`] does.
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

/// `serde_json`'s message without its ` at line L column C` ending.
pub(crate) fn without_position(text: &str) -> &str {
    match text.rsplit_once(" at line ") {
        Some((head, tail))
            if tail.split_once(" column ").is_some_and(|(l, c)| {
                !l.is_empty() && !c.is_empty() && l.bytes().chain(c.bytes()).all(|b| b.is_ascii_digit())
            }) =>
        {
            head
        }
        _ => text,
    }
}

/// Receives a Rust type chosen by name at run time (see `visit_type` in each version module).
pub trait TypeVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the type; `name` is its schema name.
    fn visit<T>(self, name: &'static str) -> Self::Output
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static;
}
