//! The test kit (feature `mock`): a mock agent and a mock client, each scripted from JSON, for
//! the tests of clients and agents, in-process (over a pipe, no process) or as the `acp
//! mock-agent` / `acp mock-client` commands for tests in any language.
//!
//! - [`agent`]: [`MockAgent`], an agent that plays a script of turns (updates, tool calls,
//!   permission requests, file and terminal calls to the client, delays, errors, the stop
//!   reason, what to do on cancel) and records what it received; without a script it echoes;
//! - [`client`]: [`MockClient`], a client that plays a script of sessions and prompts, answers
//!   permissions by rule, serves an in-memory file system and scripted terminals, and reports
//!   every turn.
//!
//! Each module's docs give its script format.

pub mod agent;
pub mod client;
mod script_error;

pub use agent::{MockAgent, Received, ScriptError};
pub use client::{
    AgentCall, Cancel, Capabilities, ClientScript, FsCapabilities, MockClient, PermissionAnswer, PermissionRule,
    PromptScript, Report, RunError, SessionReport, SessionScript, TerminalScript, TurnReport,
};
