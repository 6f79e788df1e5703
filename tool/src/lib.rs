//! The engine of the `acp` command, as a library so that tests and fuzz targets drive it the way
//! the command does.
//!
//! - [`check`]: validation of recorded or live traffic against the generated types and tables;
//! - [`tap`]: a byte-exact proxy between a client on stdin/stdout and an agent it starts, that
//!   logs and checks every line;
//! - the protocol's rules beyond the schemas are one table, [`acp_rpc::rules`], which the runtime keeps too;
//! - [`conform`]: drives an agent through scenarios and gives a verdict per rule;
//! - [`state`]: the client's session state replayed from transcripts (the schema's `x-state`);
//! - [`view`]: a transcript drawn as an interactive HTML page with the checker's findings on it.

pub mod check;
pub mod conform;
pub mod input;
pub mod mock_agent;
pub mod state;
pub mod tap;
pub mod view;
