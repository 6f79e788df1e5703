//! The test kit (feature `mock`): a mock agent and a mock client, scripted from JSON, for tests of
//! clients and agents.

mod agent;

pub use agent::{MockAgent, Received, ScriptError};

mod client;

pub use client::{
    AgentCall, Cancel, Capabilities, ClientScript, ClientScriptError, FsCapabilities, MockClient, PermissionAnswer,
    PermissionRule, PromptScript, Report, RunError, SessionReport, SessionScript, TerminalScript, TurnReport,
};
