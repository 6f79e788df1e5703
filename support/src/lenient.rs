//! Lenient decoding, as the schemas ask for it with `x-deserialize-*` keywords.
//!
//! - `x-deserialize-default-on-error`: a field whose value fails to decode takes its default;
//! - `x-deserialize-skip-invalid-items`: an array item that fails to decode is dropped;
//! - `x-deserialize-default-on-null`: a `null` field takes its default.
//!
//! The generated code composes the small functions below into one `deserialize_with` function per
//! field shape. Every default taken and item dropped is recorded as a [`LenientEvent`] that
//! [`collect`] can return, so tools can warn about what was repaired.
//!
//! Recorded the same way: a value that no branch of the schema accepts and that a catch-all the
//! generator added keeps ([`LenientEvent::NotInSchema`]): a tag or enum value that a newer
//! revision of the schema may define. Nothing is repaired there (the value is written back as
//! received), but it is not this schema's.

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;

use crate::capture::{capture, Captured};
use crate::defaulted::Defaulted;
use crate::patch::Patch;

/// What lenient decoding did instead of failing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LenientEvent {
    /// A field failed to decode and took its default; `error` says why it failed.
    DefaultOnError {
        /// The decode error of the rejected value.
        error: String,
        /// The rejected value, as JSON text.
        value: String,
    },
    /// An array item failed to decode and was dropped.
    SkippedItem {
        /// Position of the item in the array as received.
        index: usize,
        /// The decode error of the rejected item.
        error: String,
    },
    /// A `null` field took its default.
    DefaultOnNull,
    /// A value that only a catch-all added by the generator accepts, kept as received: an enum
    /// value, or a union's tag value, that this schema does not list.
    NotInSchema {
        /// The Rust (and schema) name of the type that kept it, e.g. `ContentBlock`.
        ty: &'static str,
        /// The union's tag property (`type`, `sessionUpdate`); `None` for an enum value.
        tag: Option<&'static str>,
        /// The unknown value (the tag's, for a union), as JSON text: `"future_thing"`.
        value: String,
    },
}

thread_local! {
    static EVENTS: RefCell<Option<Vec<LenientEvent>>> = const { RefCell::new(None) };
}

fn record(event: LenientEvent) {
    EVENTS.with(|events| {
        if let Some(events) = events.borrow_mut().as_mut() {
            events.push(event);
        }
    });
}

/// Records a default taken outside a field's own `deserialize_with` (a union's lenient tag).
pub fn note_default_on_error(error: String, value: String) {
    record(LenientEvent::DefaultOnError { error, value });
}

/// Records a value kept by a catch-all the generator added; `value` is its JSON text.
pub fn note_not_in_schema(ty: &'static str, tag: Option<&'static str>, value: String) {
    record(LenientEvent::NotInSchema { ty, tag, value });
}

/// [`note_not_in_schema`] for a string value.
pub fn note_not_in_schema_str(ty: &'static str, tag: Option<&'static str>, value: &str) {
    if EVENTS.with(|events| events.borrow().is_some()) {
        note_not_in_schema(ty, tag, Value::from(value).to_string());
    }
}

/// Runs `f` and returns what it returned together with every lenient repair made while it ran on
/// this thread. Calls nest: an inner `collect` sees only its own events.
pub fn collect<R>(f: impl FnOnce() -> R) -> (R, Vec<LenientEvent>) {
    let outer = EVENTS.with(|events| events.borrow_mut().replace(Vec::new()));
    let result = f();
    let mine = EVENTS.with(|events| std::mem::replace(&mut *events.borrow_mut(), outer));
    (result, mine.unwrap_or_default())
}

/// Where this thread's record of events stands, to [`rewind`] to after an attempt that failed.
pub(crate) fn mark() -> usize {
    EVENTS.with(|events| events.borrow().as_ref().map_or(0, Vec::len))
}

/// Forgets the events recorded since `mark`.
pub(crate) fn rewind(mark: usize) {
    EVENTS.with(|events| {
        if let Some(events) = events.borrow_mut().as_mut() {
            events.truncate(mark);
        }
    });
}

/// A field's value as it reaches a decoding step: its JSON text (borrowed from the input when it
/// can be), or a buffered [`Value`].
#[derive(Debug)]
pub enum Raw<'a> {
    /// The exact text of the value.
    Text(&'a str),
    /// The value itself.
    Value(Value),
}

/// The decoding step of one field: raw JSON in, typed value or error out.
pub type Step<T> = for<'a> fn(Raw<'a>) -> Result<T, serde_json::Error>;

/// Reads the field and decodes it with `decode`; with `on_error`, a failure gives `on_error()`
/// instead. Under [`optimistic`](super::optimistic), `direct` decodes it in place instead: the
/// same value when nothing needs a repair, and an error when something would.
///
/// The field's text is captured first (a scan, no copy when the input is borrowed) and decoded
/// from it. A failure there decodes again from a [`Value`], which gives the outcome and the error
/// message: an item dropped or a default taken is then recorded the same whichever way it went.
pub fn field<'de, D, T>(
    deserializer: D,
    on_error: Option<fn() -> T>,
    decode: impl Fn(Raw<'_>) -> Result<T, serde_json::Error>,
    direct: impl FnOnce(D) -> Result<T, D::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    if crate::policy::is_optimistic() {
        return direct(deserializer).inspect_err(|_| crate::policy::refuse());
    }
    captured_field(deserializer, on_error, decode)
}

/// [`field`] outside the optimistic pass: out of line, so that each field's decoder is small
/// where it runs.
#[cold]
#[inline(never)]
fn captured_field<'de, D, T>(
    deserializer: D,
    on_error: Option<fn() -> T>,
    decode: impl Fn(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    // Only the capture depends on the deserializer; the rest is compiled once per field type.
    let captured = if crate::policy::is_detailed() {
        Captured::Value(Value::deserialize(deserializer)?)
    } else {
        capture(deserializer)?
    };
    settle(captured, on_error, &decode).map_err(D::Error::custom)
}

/// The in-place decoding of a field whose `null` takes `default` (recorded, as
/// [`null_default`] does): `wrap` makes the field's value of any other.
pub fn direct_null_default<'de, D, X, T>(deserializer: D, default: fn() -> T, wrap: fn(X) -> T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    X: Deserialize<'de>,
{
    Ok(match Option::<X>::deserialize(deserializer)? {
        Some(value) => wrap(value),
        None => {
            record(LenientEvent::DefaultOnNull);
            default()
        }
    })
}

/// The in-place decoding of a [`Patch`] field: `null` is [`Patch::Null`].
pub fn direct_patch<'de, D, T>(deserializer: D) -> Result<Patch<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.map_or(Patch::Null, Patch::Value))
}

/// The outcome of a lenient field from what [`field`] captured.
fn settle<T>(
    captured: Captured<'_>,
    on_error: Option<fn() -> T>,
    decode: &dyn Fn(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    let mut out = None;
    settle_with(captured, on_error.is_some(), &mut |raw| decode(raw).map(|value| out = Some(value)))?;
    match (out, on_error) {
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default()),
        (None, None) => Err(serde::de::Error::custom("decoded nothing")),
    }
}

/// [`settle`] without its type (compiled once): `decode` leaves the value where `settle` finds
/// it; `Ok` with nothing decoded means the default was taken (and recorded).
fn settle_with(
    captured: Captured<'_>,
    defaults: bool,
    decode: &mut dyn FnMut(Raw<'_>) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    let raw = match captured {
        Captured::Text(text) => {
            let mark = mark();
            if decode(Raw::Text(&text)).is_ok() {
                return Ok(());
            }
            rewind(mark);
            serde_json::from_str(&text)?
        }
        Captured::Value(value) => value,
    };
    let shown = defaults.then(|| raw.to_string());
    match decode(Raw::Value(raw)) {
        Ok(()) => Ok(()),
        Err(error) => match shown {
            Some(value) => {
                record(LenientEvent::DefaultOnError { error: error.to_string(), value });
                Ok(())
            }
            None => Err(error),
        },
    }
}

/// Plain decoding of a required field whose type would otherwise accept absence (`Option`,
/// `serde_json::Value`): with `deserialize_with`, serde reports a missing field instead of
/// filling in `None`/`null`.
pub fn required<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<T, D::Error> {
    T::deserialize(deserializer)
}

/// Plain decoding.
pub fn value<T: DeserializeOwned>(raw: Raw<'_>) -> Result<T, serde_json::Error> {
    match raw {
        Raw::Text(text) => crate::codec::decode(text),
        Raw::Value(value) => crate::tracked::decode_value(value),
    }
}

/// An array whose invalid items are dropped (each one recorded).
pub fn items<T: DeserializeOwned>(raw: Raw<'_>) -> Result<Vec<T>, serde_json::Error> {
    match raw {
        Raw::Text(text) => {
            let items: Vec<&serde_json::value::RawValue> = crate::codec::decode(text)?;
            Ok(items
                .into_iter()
                .enumerate()
                .filter_map(|(index, item)| {
                    let mark = mark();
                    match crate::codec::decode::<T>(item.get()) {
                        Ok(item) => Some(item),
                        // Again from a value, which decides and words the error.
                        Err(_) => {
                            rewind(mark);
                            let item = serde_json::from_str::<Value>(item.get()).map_err(|e| e.to_string());
                            keep(
                                index,
                                item.and_then(|item| {
                                    crate::tracked::decode_value::<T>(item).map_err(|e| e.to_string())
                                }),
                            )
                        }
                    }
                })
                .collect())
        }
        Raw::Value(Value::Array(items)) => Ok(items
            .into_iter()
            .enumerate()
            .filter_map(|(index, item)| keep(index, crate::tracked::decode_value::<T>(item).map_err(|e| e.to_string())))
            .collect()),
        Raw::Value(other) => Err(serde_json::Error::invalid_type(unexpected(&other), &"an array")),
    }
}

/// The item, or `None` with the drop recorded.
fn keep<T>(index: usize, item: Result<T, String>) -> Option<T> {
    item.map_err(|error| record(LenientEvent::SkippedItem { index, error })).ok()
}

fn is_null(raw: &Raw<'_>) -> bool {
    match raw {
        Raw::Text(text) => *text == "null",
        Raw::Value(value) => value.is_null(),
    }
}

/// `null` becomes `default()` (recorded); anything else goes to `decode`.
pub fn null_default<T>(
    raw: Raw<'_>,
    default: fn() -> T,
    decode: impl FnOnce(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    if is_null(&raw) {
        record(LenientEvent::DefaultOnNull);
        Ok(default())
    } else {
        decode(raw)
    }
}

/// An `Option` field: `null` is `None`.
pub fn option<T>(
    raw: Raw<'_>,
    decode: impl FnOnce(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<Option<T>, serde_json::Error> {
    if is_null(&raw) {
        Ok(None)
    } else {
        decode(raw).map(Some)
    }
}

/// A [`Patch`] field (only called when present): `null` is [`Patch::Null`].
pub fn patch<T>(
    raw: Raw<'_>,
    decode: impl FnOnce(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<Patch<T>, serde_json::Error> {
    if is_null(&raw) {
        Ok(Patch::Null)
    } else {
        decode(raw).map(Patch::Value)
    }
}

/// A [`Defaulted`] field that is present.
pub fn explicit<T>(
    raw: Raw<'_>,
    decode: impl FnOnce(Raw<'_>) -> Result<T, serde_json::Error>,
) -> Result<Defaulted<T>, serde_json::Error> {
    decode(raw).map(Defaulted::explicit)
}

fn unexpected(value: &Value) -> serde::de::Unexpected<'_> {
    use serde::de::Unexpected;
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Unexpected::Signed(i),
            (_, Some(u), _) => Unexpected::Unsigned(u),
            (_, _, Some(f)) => Unexpected::Float(f),
            _ => Unexpected::Other("number"),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}
