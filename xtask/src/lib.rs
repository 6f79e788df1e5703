//! The project's tooling, as a library so that tests can drive it: one module per command, the
//! drivers, which share [`process`] (and, for peers that listen on a port, [`listener`]; for those that speak TLS, [`tls`]). The
//! generator itself is the `acp-codegen` package (`xtask/codegen/`, its pipeline drawn at the top
//! of its `lib.rs`); [`codegen`] and [`diff`] are its commands.

pub mod bench;
pub mod codegen;
pub mod diff;
pub mod files;
pub mod fuzz;
pub mod history;
pub mod interop;
pub mod listener;
pub mod process;
pub mod schema;
pub mod stats;
pub mod tls;

use std::path::PathBuf;

/// The workspace root (the parent of `xtask/`).
pub fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
