//! One scenario run and judged: what a client run must show ([`Expect`]), running a prepared
//! command within [`TIMEOUT`] (`run_judged`) and the judgement on its output (`evaluate`).

use super::output::{parse_client_output, parse_v2_one_shot_output, parse_yolo_output, Turn};
use super::report::{details, indent_rest};
use crate::process::{describe, run_with_timeout, Finished};
use std::process::Command;
use std::time::Duration;

/// Wall-clock limit of one scenario; the client and everything it spawned are killed then.
pub const TIMEOUT: Duration = Duration::from_secs(60);
/// The prompt every scenario sends; `perm` makes the echo agents ask for permission first.
pub const PROMPT: &str = "hello perm world";
/// The prompt of the cancellation scenarios: `slow` makes the echo agents wait 10 s, which
/// `session/cancel` cuts short.
pub const SLOW_PROMPT: &str = "hello slow world";
/// How long after the slow prompt the client sends `session/cancel` (`--cancel-after`).
pub const CANCEL_AFTER: Duration = Duration::from_millis(500);
/// A cancelled turn must end before this: well before the 10 s that `slow` waits uncancelled.
pub const CANCELLED_WITHIN: Duration = Duration::from_secs(8);
/// How long a network agent may take to print `listening on URL`.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);

/// What a scenario's client run must show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0, the turn ended `end_turn`, the agent's text contains the prompt.
    EndTurn,
    /// The client sends [`SLOW_PROMPT`] and `session/cancel` [`CANCEL_AFTER`] later: exit 0, the
    /// turn ended `cancelled`, within [`CANCELLED_WITHIN`].
    Cancelled,
    /// The agent does not implement `method`: the client exits unsuccessfully, prints nothing on
    /// stdout and reports the error `code` on stderr (without naming another method).
    Rejected { method: &'static str, code: i64 },
}

/// The outcome of one scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Skip,
    Fail,
}

/// One scenario's verdict and its result line (with indented details on failure).
#[derive(Debug, Clone)]
pub struct ScenarioResult {
    pub name: String,
    pub verdict: Verdict,
    pub line: String,
}

/// A command line: program and arguments.
pub(super) type Argv = Vec<String>;

/// Why a scenario cannot run.
pub(super) enum Unavailable {
    Skip(String),
    Fail(String),
}

/// Runs a prepared scenario command (within [`TIMEOUT`]) and judges how it ran: its `PASS`,
/// `FAIL` (with the command and the ends of its output) or `SKIP` line.
pub(super) fn run_judged(
    name: String,
    prepared: Result<Command, Unavailable>,
    judge: impl FnOnce(&Finished) -> Result<String, String>,
) -> ScenarioResult {
    let (verdict, line) = match prepared {
        Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
        Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
        Ok(mut command) => {
            let described = describe(&command);
            match run_with_timeout(&mut command, TIMEOUT) {
                Err(why) => (Verdict::Fail, format!("FAIL {name}: cannot run `{described}`: {why}")),
                Ok(run) => match judge(&run) {
                    Ok(summary) => {
                        (Verdict::Pass, format!("PASS {name} ({summary}, {:.1} s)", run.elapsed.as_secs_f64()))
                    }
                    Err(why) => (
                        Verdict::Fail,
                        format!(
                            "FAIL {name}: {why} ({:.1} s)\n{}",
                            run.elapsed.as_secs_f64(),
                            details(&described, &run)
                        ),
                    ),
                },
            }
        }
    };
    ScenarioResult { name, verdict, line }
}

/// How a client reports the turn it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    /// The drivers' contract: updates as JSON lines, then `{"stopReason": ...}`
    /// ([`parse_client_output`]).
    Contract,
    /// `yolo_one_shot_client` ([`parse_yolo_output`]).
    YoloOneShot,
    /// `v2_one_shot_client` ([`parse_v2_one_shot_output`]).
    V2OneShot,
}

impl Output {
    pub(super) fn parse(self, stdout: &str, stderr: &str) -> Result<Turn, String> {
        match self {
            Output::Contract => parse_client_output(stdout).map(|transcript| transcript.turn()),
            Output::YoloOneShot => parse_yolo_output(stdout, stderr),
            Output::V2OneShot => parse_v2_one_shot_output(stdout, stderr),
        }
    }
}

/// Checks a finished client run against what the scenario expects (for [`Expect::EndTurn`]: exit
/// 0, readable output, `end_turn`, the prompt echoed). Returns the summary for the PASS line.
pub(super) fn evaluate(run: &Finished, output: Output, expect: Expect) -> Result<String, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or_else(|| "client exit status unknown".to_string())?;
    match expect {
        Expect::EndTurn if status.success() => check_turn(&output.parse(&run.stdout, &run.stderr)?, PROMPT),
        Expect::Cancelled if status.success() => check_cancelled(&output.parse(&run.stdout, &run.stderr)?, run.elapsed),
        Expect::EndTurn | Expect::Cancelled => {
            match run.stderr.lines().rev().map(str::trim).find(|line| !line.is_empty()) {
                Some(line) => Err(format!("client exited with {status}: {line}")),
                None => Err(format!("client exited with {status}")),
            }
        }
        Expect::Rejected { method, code } => check_rejected(status.success(), &run.stdout, &run.stderr, method, code),
    }
}

/// The judgement on a client's account of the turn, separate from process handling for unit tests.
pub(super) fn check_turn(turn: &Turn, prompt: &str) -> Result<String, String> {
    let stop = turn.stop_reason.as_deref().unwrap_or("null");
    if stop != "end_turn" {
        return Err(format!("stopReason {stop}, expected end_turn"));
    }
    if !turn.agent_text.contains(prompt) {
        return Err(format!("the agent's text {:?} does not contain the prompt {prompt:?}", turn.agent_text));
    }
    Ok(match turn.updates {
        Some(n) => format!("{n} update{}, stopReason {stop}", if n == 1 { "" } else { "s" }),
        None => format!("stopReason {stop}"),
    })
}

/// The judgement on a cancelled turn: `cancelled`, and sooner than the uncancelled `slow` wait.
pub(super) fn check_cancelled(turn: &Turn, elapsed: Duration) -> Result<String, String> {
    let stop = turn.stop_reason.as_deref().unwrap_or("null");
    if stop != "cancelled" {
        return Err(format!(
            "stopReason {stop}, expected cancelled ({} ms after the prompt)",
            CANCEL_AFTER.as_millis()
        ));
    }
    if elapsed >= CANCELLED_WITHIN {
        return Err(format!(
            "the cancelled turn took {:.1} s, expected under {} s (session/cancel did not cut `slow` short)",
            elapsed.as_secs_f64(),
            CANCELLED_WITHIN.as_secs()
        ));
    }
    Ok(match turn.updates {
        Some(n) => format!("{n} update{}, stopReason cancelled", if n == 1 { "" } else { "s" }),
        None => "stopReason cancelled".into(),
    })
}

/// The judgement on a client run that must fail on `method` with error `code`: not exit 0,
/// nothing on stdout (no update, no stop reason), and a stderr line with the code that names no
/// other method (our client's error names none; should it name one, it must be `method`).
pub(super) fn check_rejected(
    succeeded: bool,
    stdout: &str,
    stderr: &str,
    method: &str,
    code: i64,
) -> Result<String, String> {
    if succeeded {
        return Err(format!("client exited 0, expected it to fail on {method} with {code}"));
    }
    if !stdout.trim().is_empty() {
        return Err(format!("client printed on stdout, expected nothing before {method} failed with {code}"));
    }
    let code_text = code.to_string();
    let Some(line) = stderr.lines().map(str::trim).find(|line| line.contains(&code_text)) else {
        return Err(format!("stderr reports no error {code} (expected for {method})"));
    };
    let is_method = |word: &&str| *word == "initialize" || *word == "authenticate" || word.starts_with("session/");
    let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '/'));
    if let Some(other) = words.filter(is_method).find(|word| *word != method) {
        return Err(format!("the error {code} is {other}'s, expected {method}'s: {line}"));
    }
    Ok(format!("{method} answered {code} as expected: {line}"))
}
