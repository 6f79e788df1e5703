//! What `acp conform` runs: the options its command line gives.

use acp_types::Version;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The versions to drive (both by default).
    pub versions: Vec<Version>,
    /// The text of the prompt turn.
    pub prompt: String,
    /// The text of a prompt that keeps the agent busy (the cancelled turn); none: cancel rules SKIP.
    pub cancel_prompt: Option<String>,
    /// The text of a prompt that makes the agent ask for permission and use `fs/*` and
    /// `terminal/*`; `{cwd}` in it stands for the session's working directory.
    pub tool_prompt: Option<String>,
    /// The `authMethods` id to `authenticate` with (v2: `auth/login`) before sessions are created.
    pub auth: Option<String>,
    /// Every wait.
    pub timeout: Duration,
    /// JSON output.
    pub json: bool,
    /// The agent command.
    pub agent: Vec<String>,
    /// `--ext`: extension schemas the agent's vendor messages are checked against.
    pub ext: Option<std::sync::Arc<crate::check::ExtSchemas>>,
}
