//! The browser scenarios of `cargo xtask interop` (`--only browser`): web pages in headless
//! Chromium try to drive our listeners, `echo_agent --listen` and `acp conduct agent --listen`
//! (in front of `echo_agent`), each started with `--allow-origin` naming one origin.
//!
//! The page (`interop/browser/page.html`) is served by two local HTTP servers of this module
//! (two origins, `http://127.0.0.1:PORT`), and by the first also as `http://evil.test:PORT`
//! (Chromium's `--host-resolver-rules` maps the name to 127.0.0.1, as a DNS rebinding would).
//! From the foreign origins it tries `new WebSocket(…)` and `fetch` (`initialize`, then
//! `session/new` and a prompt), a `session/new` POST and a no-CORS POST, against `127.0.0.1`,
//! `localhost` and the rebound name; every try must fail, the listener must have refused each
//! (echo_agent's `ACP_LOG=debug` lines), and no agent connection may have started (echo_agent's
//! log; the conductor's `--trace` files, one per connection). Then the same page from the allowed
//! origin must complete a turn over WebSocket and one over Streamable HTTP (so the scenario
//! cannot pass with a listener that nothing reaches). Each page POSTs its outcomes to `/result`
//! on its own origin (`server`, this module's page server).
//!
//! The browser: `$ACP_VIEW_BROWSER` (CI sets it), else `tool/tests/view/chromium.sh`'s (it
//! installs Debian's `chromium` when missing), run with that script's flags.

use super::peers::{Env, Ours};
use super::report::{command_string, indent_rest};
use super::scenario::{ScenarioResult, Unavailable, Verdict, LISTEN_TIMEOUT};
use crate::listener::{Listener, NotListening};
use acp_process::GroupChild;
use serde_json::Value;
use server::PageServer;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

mod server;

/// The name the browser resolves to 127.0.0.1, as a rebinding attacker's would.
const REBOUND: &str = "evil.test";
/// `tool/tests/view/chromium.sh run`'s flags (what Chromium needs on these machines).
const CHROMIUM_FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];
/// How long one browser run may take to report every page's outcomes.
const BROWSE_TIMEOUT: Duration = Duration::from_secs(40);

/// The listener a scenario puts in front of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    EchoAgent,
    Conduct,
}

const SCENARIOS: [Served; 2] = [Served::EchoAgent, Served::Conduct];

impl Served {
    fn name(self) -> String {
        match self {
            Served::EchoAgent => "browser: web pages -> our-agent --listen".into(),
            Served::Conduct => "browser: web pages -> acp-conduct --listen -> our-agent".into(),
        }
    }
}

/// The names of this module's scenarios, in the order [`run`] runs them.
pub(super) fn names() -> Vec<String> {
    SCENARIOS.iter().map(|s| s.name()).collect()
}

/// Whether a selected scenario needs `acp`.
pub(super) fn uses_acp(selected: &[String]) -> bool {
    selected.contains(&Served::Conduct.name())
}

/// Runs the scenarios named in `selected` (a subset of [`names`]), one result each; `acp` is the
/// built `acp` binary when [`uses_acp`].
pub(super) fn run(env: &Env, acp: Option<&Result<PathBuf, String>>, selected: &[String]) -> Vec<ScenarioResult> {
    let chosen = SCENARIOS.iter().copied().filter(|s| selected.contains(&s.name()));
    chosen
        .map(|served| {
            let name = served.name();
            let started = Instant::now();
            let (verdict, line) = match scenario(env, acp, served) {
                Ok(summary) => {
                    (Verdict::Pass, format!("PASS {name} ({summary}, {:.1} s)", started.elapsed().as_secs_f64()))
                }
                Err(Unavailable::Skip(why)) => (Verdict::Skip, format!("SKIP {name} ({why})")),
                Err(Unavailable::Fail(why)) => (Verdict::Fail, format!("FAIL {name}: {}", indent_rest(&why))),
            };
            ScenarioResult { name, verdict, line }
        })
        .collect()
}

/// The listener's command: `--listen 127.0.0.1:0 --allow-origin ALLOWED`, and what tells its
/// agent connections apart: debug logs (echo_agent) or a trace file per connection (conductor).
fn listener_command(
    env: &Env,
    acp: Option<&Result<PathBuf, String>>,
    served: Served,
    allowed: &str,
    dir: &Path,
) -> Result<Command, Unavailable> {
    let echo = match env.ours.as_ref().expect("examples built") {
        Ours::Built { echo_agent: Some(path), .. } => path.clone(),
        Ours::Built { .. } => return Err(Unavailable::Skip("examples not built".into())),
        Ours::BuildFailed(message) => return Err(Unavailable::Fail(message.clone())),
    };
    let listen = ["--listen", "127.0.0.1:0", "--allow-origin", allowed];
    Ok(match served {
        Served::EchoAgent => {
            let mut command = Command::new(echo);
            command.args(listen).env("ACP_LOG", "debug");
            command
        }
        Served::Conduct => {
            let acp = match acp {
                Some(Ok(path)) => path,
                Some(Err(why)) => return Err(Unavailable::Fail(why.clone())),
                None => return Err(Unavailable::Fail("acp was not built".into())),
            };
            let mut command = Command::new(acp);
            command.args(["conduct", "agent"]).args(listen).arg("--trace").arg(dir.join("trace.jsonl"));
            command.arg(command_string(&[echo.to_string_lossy().into_owned()]));
            command
        }
    })
}

/// How many agent connections the listener started so far.
fn agent_connections(served: Served, listener: &Listener, dir: &Path) -> usize {
    // The log is read by a thread: let it catch up with what was written before the answers.
    thread::sleep(Duration::from_millis(200));
    match served {
        Served::EchoAgent => listener.stderr().matches("agent connection started").count(),
        Served::Conduct => std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("trace.jsonl."))
                    .count()
            })
            .unwrap_or(0),
    }
}

fn scenario(env: &Env, acp: Option<&Result<PathBuf, String>>, served: Served) -> Result<String, Unavailable> {
    let fail = |why: String| Unavailable::Fail(why);
    let browser = browser().map_err(fail)?;
    let foreign = PageServer::start().map_err(|e| fail(format!("page server: {e}")))?;
    let allowed = PageServer::start().map_err(|e| fail(format!("page server: {e}")))?;
    let allowed_origin = format!("http://127.0.0.1:{}", allowed.port);
    let dir = tempfile::tempdir().map_err(|e| fail(format!("temp dir: {e}")))?;
    let mut command = listener_command(env, acp, served, &allowed_origin, dir.path())?;
    let listener = Listener::start(&mut command, LISTEN_TIMEOUT).map_err(|e| fail(not_listening(e)))?;
    let port = listener.url.rsplit_once(':').and_then(|(_, p)| p.trim_end_matches('/').parse::<u16>().ok());
    let port = port.ok_or_else(|| fail(format!("no port in {}", listener.url)))?;
    let with_log =
        |why: String| fail(format!("{why}\n    listener: {}\n{}", listener.described, tail(&listener.stderr())));

    let blocked = browse(&browser, &blocked_page(foreign.port, port), &foreign, 2).map_err(with_log)?;
    let attempts = check_blocked(&blocked).map_err(with_log)?;
    let started = agent_connections(served, &listener, dir.path());
    if started != 0 {
        return Err(with_log(format!("{started} agent connection(s) started for foreign pages: {blocked:?}")));
    }
    if served == Served::EchoAgent {
        let refused = listener.stderr().matches("acp server: refused").count();
        if refused < attempts {
            return Err(with_log(format!("{refused} refusals logged for {attempts} attempts")));
        }
    }
    let page = format!(
        "http://127.0.0.1:{}/?mode=allowed&ws=ws://127.0.0.1:{port}/&http=http://127.0.0.1:{port}/",
        allowed.port
    );
    let turns = browse(&browser, &page, &allowed, 1).map_err(with_log)?;
    check_turns(&turns).map_err(with_log)?;
    let connections = agent_connections(served, &listener, dir.path());
    if connections < 2 {
        return Err(with_log(format!("{connections} agent connection(s) for two turns")));
    }
    let foreign_origin = format!("http://127.0.0.1:{}", foreign.port);
    Ok(format!(
        "{attempts} tries from {foreign_origin} and {REBOUND} refused, no agent connection; \
         from {allowed_origin} a turn over ws and one over http"
    ))
}

/// The foreign page's URL: its tries against the listener on `port`, then the rebound name's
/// page in a frame.
fn blocked_page(page_port: u16, port: u16) -> String {
    let rebound = format!(
        "http://{REBOUND}:{page_port}/?mode=blocked&ws=ws://{REBOUND}:{port}/,ws://127.0.0.1:{port}/&http=http://{REBOUND}:{port}/,http://127.0.0.1:{port}/"
    );
    format!(
        "http://127.0.0.1:{page_port}/?mode=blocked&ws=ws://127.0.0.1:{port}/,ws://localhost:{port}/&http=http://127.0.0.1:{port}/&frame={}",
        encode(&rebound)
    )
}

/// Every try of every page failed (a no-CORS POST is only sent: the listener's log or trace says
/// the rest); how many tries there were.
fn check_blocked(pages: &[Value]) -> Result<usize, String> {
    let mut attempts = 0;
    for page in pages {
        let results = page["results"].as_array().ok_or_else(|| format!("no results: {page}"))?;
        for result in results {
            attempts += 1;
            let outcome = result["outcome"].as_str().unwrap_or_default();
            let failed =
                outcome.starts_with("refused") || (outcome == "sent: opaque" && result["kind"] == "fetch no-cors");
            if !failed {
                return Err(format!("a try from {} was not refused: {result}", page["origin"]));
            }
        }
    }
    match attempts {
        0 => Err(format!("the pages tried nothing: {pages:?}")),
        n => Ok(n),
    }
}

/// The allowed page's tries each completed a turn.
fn check_turns(pages: &[Value]) -> Result<(), String> {
    let results =
        pages.first().and_then(|p| p["results"].as_array()).ok_or_else(|| format!("no results: {pages:?}"))?;
    let turns = results.iter().filter(|r| {
        r["outcome"].as_str().is_some_and(|o| o.starts_with("turn: end_turn: ") && o.contains("hello browser"))
    });
    match turns.count() {
        2 => Ok(()),
        _ => Err(format!("the allowed origin's page did not complete its two turns: {results:?}")),
    }
}

/// Loads `url` in headless Chromium until `server` got `pages` results (or the time is up).
fn browse(browser: &Path, url: &str, server: &PageServer, pages: usize) -> Result<Vec<Value>, String> {
    let profile = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let log = profile.path().join("chromium.log");
    let stderr = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut command = Command::new(browser);
    command
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
        .arg(format!("--host-resolver-rules=MAP {REBOUND} 127.0.0.1"))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr);
    let mut child = GroupChild::spawn(&mut command).map_err(|e| format!("cannot run {}: {e}", browser.display()))?;
    let results = server.wait_for(pages, BROWSE_TIMEOUT);
    child.end(Duration::from_millis(500));
    results.ok_or_else(|| {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        format!(
            "{url}: {} of {pages} page(s) reported within {} s\n    chromium:\n{}",
            server.results().len(),
            BROWSE_TIMEOUT.as_secs(),
            tail(&said)
        )
    })
}

/// The browser: `$ACP_VIEW_BROWSER`, else what `chromium.sh` finds or installs.
fn browser() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("ACP_VIEW_BROWSER") {
        return Ok(PathBuf::from(path));
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tool/tests/view/chromium.sh");
    let out = Command::new(&script).stdin(Stdio::null()).output().map_err(|e| format!("{}: {e}", script.display()))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match out.status.success() && !path.is_empty() {
        true => Ok(PathBuf::from(path)),
        false => Err(format!("no browser: {}", String::from_utf8_lossy(&out.stderr).trim())),
    }
}

fn not_listening(e: NotListening) -> String {
    match e {
        NotListening::Exited { status, stderr } => {
            format!("the listener exited ({status}) before listening\n{}", tail(&stderr))
        }
        NotListening::TimedOut { stderr } => format!("the listener printed no URL in time\n{}", tail(&stderr)),
        NotListening::Spawn(why) => why,
    }
}

fn tail(text: &str) -> String {
    crate::process::tail(text, 15).lines().map(|l| format!("      {l}")).collect::<Vec<_>>().join("\n")
}

/// `text` as a query parameter's value.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_tries_all_fail_and_turns_all_complete() {
        let refused = serde_json::json!([{ "origin": "o", "results": [
            { "kind": "websocket", "outcome": "refused: closed 1006" },
            { "kind": "fetch no-cors", "outcome": "sent: opaque" },
        ] }]);
        assert_eq!(check_blocked(refused.as_array().unwrap()), Ok(2));
        let served = serde_json::json!([{ "origin": "o", "results": [
            { "kind": "websocket", "outcome": "turn: end_turn: hello browser" },
        ] }]);
        assert!(check_blocked(served.as_array().unwrap()).is_err());
        assert!(check_turns(served.as_array().unwrap()).is_err(), "one turn of two");
        assert!(check_blocked(&[]).is_err(), "nothing tried");
        assert_eq!(encode("a:/?b=c,d"), "a%3A%2F%3Fb%3Dc%2Cd");
    }
}
