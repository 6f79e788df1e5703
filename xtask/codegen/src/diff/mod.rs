//! `cargo xtask diff OLD NEW`: what changed between two protocol revisions, per method and per
//! direction, and which pairing of old and new peers each change breaks.
//!
//! Reads only the IR (two lowered single-file protocols). `methods` pairs the methods; `compare`
//! walks both revisions in parallel from each method's params and result, so types are matched by
//! where they are used, not by name; `types` compares one pair of types; [`report`] holds the
//! findings and [`render`] prints them; `state` compares the `x-state` / `x-scope` annotations; `cargo xtask diff` (in
//! `xtask`) resolves `v1`, files and `REV:PATH` and picks the format.

mod compare;
mod methods;
pub mod render;
pub mod report;
mod state;
mod types;

use crate::ir::Protocol;
pub use report::{Finding, Report, Rule, Severity};

/// Compares two lowered single-file protocols.
pub fn diff(old: &Protocol, new: &Protocol) -> Report {
    let mut report = compare::Comparison::new(old, new).report();
    let state = state::findings(old, new);
    if !state.is_empty() {
        report.findings.extend(state);
        report.findings.sort_by(|a, b| (b.severity, &a.method, &a.location).cmp(&(a.severity, &b.method, &b.location)));
    }
    report
}
