//! Hand-written runtime support for the generated types (this crate is not generated, and lives
//! outside `generated/` for that reason), re-exported by `acp-types` as `acp_types::support`.
//! Change decoding here or in the generator (`xtask/`), never in `generated/`.
//!
//! The generated code refers to these items as `crate::support::…`: the version crates
//! (`acp-types-v1`, …) and the standalone crates written by `cargo xtask codegen --schema FILE
//! --out DIR` bind this crate under that name at their root (a standalone crate depends on it by
//! path), so there is one copy of this code, compiled one way.
//!
//! What users meet of it are the field types of the generated structs: [`Patch`] keeps "omitted"
//! apart from `null`, [`Defaulted`] remembers whether a field with a schema default was present,
//! [`Meta`] is `_meta`; and [`rpc`], the method tables and error type.
//!
//! ```
//! use acp_types_support::Patch;
//!
//! #[derive(serde::Deserialize, serde::Serialize)]
//! struct Update {
//!     #[serde(default, skip_serializing_if = "Patch::is_omitted")]
//!     title: Patch<String>,
//! }
//!
//! let cleared: Update = serde_json::from_str(r#"{"title":null}"#)?;
//! assert!(cleared.title.is_null());
//! let untouched: Update = serde_json::from_str("{}")?;
//! assert!(untouched.title.is_omitted());
//! assert_eq!(serde_json::to_string(&untouched)?, "{}");
//! # Ok::<(), serde_json::Error>(())
//! ```

// The layers, each using only those above it in this list (no module imports one below it):
// `codec` (the JSON reader and writer), `defaulted`, `patch`; `policy` (the decoding mode);
// `capture` and `tracked` (generic decoding helpers); `lenient`, `meta`, then `union`; `json`
// (the two-pass entry point); `moved`, then `rpc`; `state` (the `x-state` interpreter) uses none.
mod capture;
mod codec;
mod defaulted;
pub mod json;
pub mod lenient;
mod meta;
pub mod moved;
mod patch;
mod policy;
pub mod rpc;
#[cfg(feature = "schemars")]
pub mod schema;
pub mod state;
mod tracked;
pub mod union;

pub use codec::JsonObject;
pub use defaulted::Defaulted;
pub use meta::Meta;
pub use patch::Patch;
pub use policy::{detailed, optimistic};

/// Receives a Rust type chosen by name at run time (see `visit_type` in each version module).
pub trait TypeVisitor {
    /// What the visit produces.
    type Output;
    /// Called with the type; `name` is its schema name.
    fn visit<T>(self, name: &'static str) -> Self::Output
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static;
}
