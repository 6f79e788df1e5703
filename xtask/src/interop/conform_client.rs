//! The `acp conform --client` scenarios of `cargo xtask interop` (`--only conform-client`): the
//! tool stands in for the agent of each client driver (see [`super`] for their contract) and
//! judges the client against every rule that binds a client:
//!
//! ```text
//! acp conform --client --protocol-version N -- CLIENT --protocol-version N --prompt {prompt} -- {agent}
//! ```
//!
//! for our `client` example, `interop/ts/client.mjs` (the TypeScript SDK) and
//! `interop/py/client.py` (the Python SDK), in protocol versions 1 and 2. A scenario passes when
//! `acp conform` exits 0 (every MUST rule exercised passes); a SHOULD rule that fails is named in
//! the PASS line, a finding. One is known: the Python driver subclasses the SDK's `Client`
//! protocol class, whose `ext_method` stub (agent-client-protocol 0.12.1, `acp/interfaces.py`)
//! returns `None`, so the SDK's router (`acp/client/router.py`, which calls `ext_method` when the
//! client has one) answers an unknown `_` request with a `null` result, not -32601
//! (`rpc.method-not-found`).
//!
//! The Python driver asked for version 2 is not a v2 client (the SDK speaks v1 only: the driver
//! puts 2 into a v1-shaped `initialize`), and the report says so: its two MUST failures are known
//! (see `known_must_failures`) and the scenario passes when they are the only ones.

use super::peers::{path_arg, peer_command, Env, Ours};
use super::scenario::{run_judged, Argv, ScenarioResult, Unavailable, TIMEOUT};
use crate::process::Finished;
use std::path::{Path, PathBuf};

/// Whose client driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Ours,
    Ts,
    Py,
}

const SCENARIOS: [(Client, u32); 6] =
    [(Client::Ours, 1), (Client::Ours, 2), (Client::Ts, 1), (Client::Ts, 2), (Client::Py, 1), (Client::Py, 2)];

fn name((client, version): (Client, u32)) -> String {
    let client = match client {
        Client::Ours => "our-client",
        Client::Ts => "ts-client",
        Client::Py => "py-client",
    };
    format!("conform-client: acp conform --client -> {client} v{version}")
}

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    SCENARIOS.iter().map(|s| name(*s)).collect()
}

/// Whether a selected scenario drives the TypeScript or the Python SDK's client (the peers
/// [`super::run_report`] installs).
pub(super) fn uses_ts(selected: &[String]) -> bool {
    SCENARIOS.iter().any(|s| s.0 == Client::Ts && selected.contains(&name(*s)))
}

pub(super) fn uses_py(selected: &[String]) -> bool {
    SCENARIOS.iter().any(|s| s.0 == Client::Py && selected.contains(&name(*s)))
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each.
pub(super) fn run(env: &Env, _cache: &Path, selected: &[String]) -> Vec<ScenarioResult> {
    let scenarios: Vec<(Client, u32)> = SCENARIOS.iter().copied().filter(|s| selected.contains(&name(*s))).collect();
    if scenarios.is_empty() {
        return Vec::new();
    }
    let acp = super::production::build_acp(&env.root);
    scenarios.into_iter().map(|s| run_one(env, &acp, s)).collect()
}

fn run_one(env: &Env, acp: &Result<PathBuf, String>, scenario: (Client, u32)) -> ScenarioResult {
    let name = name(scenario);
    let known = known_must_failures(scenario);
    run_judged(name, argv(env, acp, scenario).map(|argv| peer_command(env, &argv)), |run| judge(run, known))
}

/// MUST rules a driver is known to break, each with where its code does so: failing these (and
/// no other) is the client's real behaviour, which the verdict reports; failing any other fails.
fn known_must_failures((client, version): (Client, u32)) -> &'static [(&'static str, &'static str)] {
    match (client, version) {
        (Client::Py, 2) => &[
            (
                "schema.valid",
                "agent-client-protocol 0.12.1 speaks v1 only: its `initialize` for version 2 has v1's \
                 `clientInfo`/`clientCapabilities`, not v2's required `info`",
            ),
            (
                "rpc.reply",
                "as a v1 client it takes v2's prompt acknowledgement for the end of the turn and closes \
                 its agent with the stand-in's permission request unanswered",
            ),
        ],
        _ => &[],
    }
}

/// `acp conform --client --protocol-version N -- DRIVER --protocol-version N --prompt {prompt} -- {agent}`.
fn argv(env: &Env, acp: &Result<PathBuf, String>, (client, version): (Client, u32)) -> Result<Argv, Unavailable> {
    let acp = acp.as_ref().map_err(|why| Unavailable::Fail(format!("cannot build acp: {why}")))?;
    let mut argv: Argv = vec![path_arg(acp), "conform".into(), "--client".into()];
    argv.extend(["--protocol-version".into(), version.to_string(), "--".into()]);
    match client {
        Client::Ours => match env.ours.as_ref() {
            Some(Ours::Built { client: Some(path), .. }) => argv.push(path_arg(path)),
            Some(Ours::BuildFailed(message)) => return Err(Unavailable::Fail(message.clone())),
            _ => return Err(Unavailable::Skip("examples not built".into())),
        },
        Client::Ts => argv.extend(["node".into(), path_arg(&env.root.join("interop").join("ts").join("client.mjs"))]),
        Client::Py => {
            let py = env.py.as_ref().ok_or_else(|| Unavailable::Fail("the Python SDK is not installed".into()))?;
            argv.extend([path_arg(&py.python), path_arg(&env.root.join("interop").join("py").join("client.py"))]);
        }
    }
    argv.extend(["--protocol-version".into(), version.to_string()]);
    argv.extend(["--prompt".into(), "{prompt}".into(), "--".into(), "{agent}".into()]);
    Ok(argv)
}

/// Exit 0 (every MUST rule exercised passes) and no MUST rule on a FAIL line; the summary line of
/// the report, with the SHOULD rules that fail (findings, as for agents: they do not fail the
/// scenario).
fn judge(run: &Finished, known: &[(&str, &str)]) -> Result<String, String> {
    if run.timed_out {
        return Err(format!("timed out after {} s (killed)", TIMEOUT.as_secs()));
    }
    let status = run.status.ok_or("acp conform's exit status unknown")?;
    let fails: Vec<&str> = run.stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    let must: Vec<&str> = fails.iter().copied().filter(|l| l.split_whitespace().nth(1) == Some("MUST")).collect();
    let rule = |line: &str| line.split_whitespace().nth(2).unwrap_or_default().to_string();
    let unknown: Vec<&str> = must.iter().copied().filter(|l| !known.iter().any(|(id, _)| *id == rule(l))).collect();
    let only_known = !must.is_empty() && unknown.is_empty() && status.code() == Some(1);
    if (!status.success() || !must.is_empty()) && !only_known {
        let why = unknown.first().copied().or_else(|| run.stdout.lines().last()).unwrap_or_default();
        return Err(format!("acp conform --client exited with {status}: {why}"));
    }
    let mut summary = run.stdout.lines().last().unwrap_or_default().to_string();
    if only_known {
        let why: Vec<String> = known
            .iter()
            .filter(|(id, _)| must.iter().any(|l| rule(l) == *id))
            .map(|(id, why)| format!("{id} ({why})"))
            .collect();
        summary.push_str(&format!("; the client's known MUST failures: {}", why.join("; ")));
    }
    let findings: Vec<&str> = fails
        .iter()
        .filter(|l| l.split_whitespace().nth(1) == Some("SHOULD"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    if !findings.is_empty() {
        summary.push_str(&format!("; SHOULD findings: {}", findings.join(", ")));
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_say_conform_client() {
        let mut names = names();
        assert!(names.iter().all(|n| n.starts_with("conform-client: ")));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), SCENARIOS.len());
        assert!(uses_ts(&names) && uses_py(&names));
        assert!(!uses_ts(&[name((Client::Py, 1))]));
    }

    fn finished(code: i32, stdout: &str) -> Finished {
        use std::os::unix::process::ExitStatusExt;
        Finished {
            status: Some(std::process::ExitStatus::from_raw(code << 8)),
            stdout: stdout.into(),
            stderr: String::new(),
            timed_out: false,
            elapsed: std::time::Duration::ZERO,
        }
    }

    #[test]
    fn a_should_finding_passes_a_must_failure_does_not() {
        let should = "FAIL  SHOULD  rpc.method-not-found  [turn v1, line 10] ...\n7 pass, 1 fail, 5 skip; fine";
        let summary = judge(&finished(0, should), &[]).unwrap();
        assert!(summary.ends_with("SHOULD findings: rpc.method-not-found"), "{summary}");
        let must = "FAIL  MUST    init.first  [turn v1, line 1] ...\n9 pass, 1 fail; a MUST rule fails";
        assert!(judge(&finished(1, must), &[]).unwrap_err().contains("init.first"));
        assert!(judge(&finished(3, "NO PROMPT  [turn v1] why\n0 pass"), &[]).is_err());
    }

    #[test]
    fn only_known_must_failures_pass_and_are_named() {
        let known = known_must_failures((Client::Py, 2));
        let both =
            "FAIL  MUST    schema.valid  [turn v2, line 1] ...\nFAIL  MUST    rpc.reply  [turn v2] ...\n8 pass, 2 fail";
        let summary = judge(&finished(1, both), known).unwrap();
        assert!(
            summary.contains("known MUST failures: schema.valid (") && summary.contains("rpc.reply ("),
            "{summary}"
        );
        assert!(!summary.contains("SHOULD findings"), "{summary}");
        let other =
            "FAIL  MUST    schema.valid  [turn v2, line 1] ...\nFAIL  MUST    init.first  [turn v2] ...\n8 pass";
        assert!(judge(&finished(1, other), known).unwrap_err().contains("init.first"));
        assert!(judge(&finished(1, both), known_must_failures((Client::Py, 1))).is_err());
    }
}
