//! Interop scenarios of composition (mcp): see the module's scenarios.

use super::{Env, ScenarioResult};
use std::path::Path;

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    Vec::new()
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each.
pub(super) fn run(env: &Env, cache: &Path, selected: &[String]) -> Vec<ScenarioResult> {
    let _ = (env, cache, selected);
    Vec::new()
}
