//! Checking ACP traffic against the protocol: every message is decoded with the method tables of
//! the negotiated version and re-encoded, and the result says whether it is valid, where it is
//! wrong, or what decoding changed. This is the engine of `acp check` and `acp tap`.
//!
//! A transcript has one JSON object per line: a bare JSON-RPC message, or a record
//! `{"from": "client"|"agent", "message": {…}}` whose other keys (a timestamp, say) are ignored.
//! `acp tap` also writes `{"from": …, "line": "…"}` for a line that was not JSON, so that the
//! transcript keeps it and `check` reports it. A record with a `link` belongs to one link of a
//! chain (see [`Transcript`]).
//!
//! Composition: `proxy/initialize` opens a connection as `initialize` does, and the message a
//! `proxy/successor` envelope wraps is checked as a message of its own conversation (see
//! `envelope`), its findings given at their paths inside the envelope.

mod chain;
mod checker;
mod diff;
#[cfg(feature = "unstable")]
mod envelope;
mod ext;
mod not_in_schema;
mod pending;
mod report;
mod rules;
mod schema;
mod tables;
pub(crate) mod trace;
pub(crate) mod wire;

pub use acp_types::support::rpc::Role;
pub use chain::Transcript;
pub use checker::{Checker, MAX_PENDING};
pub use diff::json_equal;
pub use ext::ExtSchemas;
pub use report::{Difference, Kind, Problem, Report, RuleResult, RuleViolation, Status, Summary, Warning};
