//! `acp mock-client --script FILE -- AGENT_CMD…`: the scripted mock client of `acp_rpc::mock`
//! against an agent process, for agents' tests in any language. Prints each turn's updates, one
//! JSON line each, then `{"stopReason": …}` (as `examples/client.rs` does); the agent's stderr
//! passes through.

use acp_rpc::mock::{ClientScript, MockClient, Report, TurnReport};
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

/// Exit status 0: every turn ended; 1: the run failed (the agent's error, or it broke the
/// protocol or ended early); 2: the script or the agent command is unusable.
pub(crate) fn run(script: &Path, agent: &[String]) -> ExitCode {
    let text = match std::fs::read_to_string(script) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("acp mock-client: cannot read {}: {e}", script.display());
            return ExitCode::from(2);
        }
    };
    let script = match ClientScript::from_json(&text) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("acp mock-client: {}: {e}", script.display());
            return ExitCode::from(2);
        }
    };
    let Some((program, args)) = agent.split_first() else {
        eprintln!("acp mock-client: the agent command is missing (after --)");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("acp mock-client: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let client = MockClient::new(script);
    let outcome = runtime.block_on(async { client.run_spawned(program, args).await });
    runtime.shutdown_background();
    match outcome {
        Err(e) => {
            eprintln!("acp mock-client: cannot start {program}: {e}");
            ExitCode::from(2)
        }
        Ok(Ok(report)) => {
            print(&report);
            ExitCode::SUCCESS
        }
        Ok(Err(failed)) => {
            print(&failed.report);
            eprintln!("acp mock-client: {failed}");
            ExitCode::from(1)
        }
    }
}

/// The turns in order; a turn that failed has no stop reason line.
fn print(report: &Report) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for turn in report.turns() {
        let _ = write_turn(&mut out, turn);
    }
    let _ = out.flush();
}

fn write_turn(out: &mut impl Write, turn: &TurnReport) -> std::io::Result<()> {
    for update in &turn.updates {
        writeln!(out, "{update}")?;
    }
    match &turn.stop_reason {
        Some(stop) => writeln!(out, "{}", json!({ "stopReason": stop })),
        None => Ok(()),
    }
}
