//! The process groups of `acp-process`, one binary: a module per API.

/// Whether a process still runs, by its pid.
mod common;

/// The blocking API: `GroupChild` and `run_with_timeout`.
mod blocking_api;
/// The async API: `spawn` (an agent) and `ProcessGroup` (any command).
mod tokio_api;
