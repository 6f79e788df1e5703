//! The JSON reader and writer, the bottom layer of this crate: they know JSON text and
//! `serde_json`'s conventions, and nothing of the protocol's types or of the decoding policy.
//!
//! - `read`: a `serde::Deserializer` over JSON text that behaves as `serde_json`'s does;
//! - `write`: a `serde::Serializer` that writes what `serde_json::to_writer` writes;
//! - `scan`: finding the bytes a JSON string escapes, for both;
//! - `compat`: the raw-value token and the error text both share with `serde_json`.

mod compat;
mod read;
mod scan;
mod write;

pub(crate) use compat::{without_position, RAW_TOKEN};
pub(crate) use read::from_str as decode;
pub(crate) use write::write_str;
pub use write::{to_raw_value, to_vec, to_writer};

/// A JSON object as a map, in its order (what `Meta::to_map` gives; a union's catch-all keeps its
/// object as a `Meta`).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;
