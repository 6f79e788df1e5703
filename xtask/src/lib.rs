//! The project's tooling, as a library so that tests can drive it: the generator ([`codegen`],
//! with its pipeline drawn at the top of that module) and one module per other command, the
//! drivers, which share [`process`] (and, for peers that listen on a port, [`listener`]; for
//! those that speak TLS, [`tls`]).

pub mod bench;
pub mod codegen;
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
