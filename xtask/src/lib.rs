//! The generator pipeline and the project's tooling, as a library so that tests can drive it.
//!
//! schema/vN/*.json ──[`model`]──▶ JSON Schema model ──[`lower`]──▶ [`ir`] ──[`emit`]──▶ generated/
//!                                                                         └──[`diff`]──▶ report

pub mod bench;
pub mod codegen;
pub mod diff;
pub mod emit;
pub mod emit_crates;
pub mod emit_methods;
pub mod fuzz;
pub mod interop;
pub mod ir;
pub mod lower;
pub mod merge;
pub mod model;
pub mod naming;
pub mod process;
pub mod samples;
pub mod schema;
pub mod stats;

use std::path::PathBuf;

/// The workspace root (the parent of `xtask/`).
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
