//! `acp mock-agent [--script FILE] [--protocol-version N]`: the scripted mock agent of
//! `acp_rpc::mock` on stdio, for the tests of clients in any language. Without a script it echoes
//! each prompt back and ends the turn `end_turn`. The script's format is documented in
//! `acp_rpc::mock::MockAgent`'s module; a bad script is reported (with the JSON pointer of the
//! problem) before anything is read from stdin.

use acp_rpc::mock::MockAgent;
use acp_types::Version;
use std::path::Path;
use std::process::ExitCode;

/// What `acp mock-agent` was given.
pub struct Options<'a> {
    /// The script (JSON); none: the echo.
    pub script: Option<&'a Path>,
    /// Speak only this version (both by default).
    pub version: Option<Version>,
}

/// Loads the script: the agent, or the message to print (naming the file and where in it).
pub fn load(script: Option<&Path>) -> Result<MockAgent, String> {
    let Some(path) = script else { return Ok(MockAgent::echo()) };
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    MockAgent::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Serves the mock agent on stdin/stdout until the client closes stdin. Exit status: 0 then, 1
/// when the connection failed, 2 for a script that cannot be used.
pub fn run(options: Options<'_>) -> ExitCode {
    let agent = match load(options.script) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("acp mock-agent: {e}");
            return ExitCode::from(2);
        }
    };
    let agent = match options.version {
        Some(version) => agent.versions(&[version]),
        None => agent,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acp mock-agent: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(agent.serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("acp mock-agent: {e}");
            ExitCode::FAILURE
        }
    }
}
