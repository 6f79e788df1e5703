//! Lenient decoding, as the schemas ask for it with `x-deserialize-*` keywords.
//!
//! - `x-deserialize-default-on-error`: a field whose value fails to decode takes its default;
//! - `x-deserialize-skip-invalid-items`: an array item that fails to decode is dropped;
//! - `x-deserialize-default-on-null`: a `null` field takes its default.
//!
//! The generated code composes the small functions below into one `deserialize_with` function per
//! field shape. Every default taken and item dropped is recorded as a [`LenientEvent`] that
//! [`collect`] can return, so tools can warn about what was repaired.

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;
use std::cell::RefCell;

use super::{Defaulted, Patch};

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

/// Runs `f` and returns what it returned together with every lenient repair made while it ran on
/// this thread. Calls nest: an inner `collect` sees only its own events.
pub fn collect<R>(f: impl FnOnce() -> R) -> (R, Vec<LenientEvent>) {
    let outer = EVENTS.with(|events| events.borrow_mut().replace(Vec::new()));
    let result = f();
    let mine = EVENTS.with(|events| std::mem::replace(&mut *events.borrow_mut(), outer));
    (result, mine.unwrap_or_default())
}

/// The decoding step of one field: raw JSON in, typed value or error out.
pub type Step<T> = fn(Value) -> Result<T, serde_json::Error>;

/// Reads the field as raw JSON and decodes it with `decode`; with `on_error`, a failure gives
/// `on_error()` instead (the raw value is needed to recover, hence the buffering).
pub fn field<'de, D, T>(
    deserializer: D,
    on_error: Option<fn() -> T>,
    decode: impl FnOnce(Value) -> Result<T, serde_json::Error>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let raw = Value::deserialize(deserializer)?;
    let shown = on_error.map(|_| raw.to_string());
    match decode(raw) {
        Ok(value) => Ok(value),
        Err(error) => match (on_error, shown) {
            (Some(default), Some(value)) => {
                record(LenientEvent::DefaultOnError { error: error.to_string(), value });
                Ok(default())
            }
            _ => Err(D::Error::custom(error)),
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
pub fn value<T: DeserializeOwned>(raw: Value) -> Result<T, serde_json::Error> {
    super::decode_value(raw)
}

/// An array whose invalid items are dropped (each one recorded).
pub fn items<T: DeserializeOwned>(raw: Value) -> Result<Vec<T>, serde_json::Error> {
    match raw {
        Value::Array(items) => Ok(items
            .into_iter()
            .enumerate()
            .filter_map(|(index, item)| match super::decode_value::<T>(item) {
                Ok(item) => Some(item),
                Err(error) => {
                    record(LenientEvent::SkippedItem { index, error: error.to_string() });
                    None
                }
            })
            .collect()),
        other => Err(serde_json::Error::invalid_type(unexpected(&other), &"an array")),
    }
}

/// `null` becomes `default()` (recorded); anything else goes to `decode`.
pub fn null_default<T>(
    raw: Value,
    default: fn() -> T,
    decode: impl FnOnce(Value) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    if raw.is_null() {
        record(LenientEvent::DefaultOnNull);
        Ok(default())
    } else {
        decode(raw)
    }
}

/// An `Option` field: `null` is `None`.
pub fn option<T>(
    raw: Value,
    decode: impl FnOnce(Value) -> Result<T, serde_json::Error>,
) -> Result<Option<T>, serde_json::Error> {
    if raw.is_null() {
        Ok(None)
    } else {
        decode(raw).map(Some)
    }
}

/// A [`Patch`] field (only called when present): `null` is [`Patch::Null`].
pub fn patch<T>(
    raw: Value,
    decode: impl FnOnce(Value) -> Result<T, serde_json::Error>,
) -> Result<Patch<T>, serde_json::Error> {
    if raw.is_null() {
        Ok(Patch::Null)
    } else {
        decode(raw).map(Patch::Value)
    }
}

/// A [`Defaulted`] field that is present.
pub fn explicit<T>(
    raw: Value,
    decode: impl FnOnce(Value) -> Result<T, serde_json::Error>,
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
