//! The `terminal/*` methods served for real, as a client that advertises `terminal` must: each
//! `terminal/create` runs its command in the scratch directory (a shell line without `args`,
//! the program itself with them), both output streams go to one buffer cut from the front to
//! `outputByteLimit`, and `wait_for_exit`, `kill` and `release` act on the process. Every
//! terminal runs in its own process group, killed when it is released or the scenario ends.

use acp_rpc::spawn::ProcessGroup;
use acp_types::support::rpc::RpcError;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use tokio::io::AsyncReadExt;
use tokio::sync::watch;

/// What a terminal request is answered with: a result, or a JSON-RPC error code and message.
pub type Answer = Result<Value, (i64, String)>;

/// Output kept when the agent sets no `outputByteLimit`.
const DEFAULT_LIMIT: usize = 1 << 20;

/// How long, once the command exited, its output is read before the exit is reported: what it
/// left in the background may hold the pipes open for as long as it runs.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The terminals of one scenario, by id.
#[derive(Default)]
pub struct Terminals {
    next: u64,
    open: HashMap<String, Arc<Terminal>>,
}

struct Terminal {
    /// The command's process group.
    group: ProcessGroup,
    output: Arc<Mutex<Output>>,
    /// `None` while the command runs.
    exit: watch::Receiver<Option<ExitStatus>>,
}

#[derive(Default)]
struct Output {
    text: Vec<u8>,
    truncated: bool,
    limit: usize,
}

impl Output {
    /// Appends, then drops bytes from the front down to the limit, on a character boundary
    /// (`CreateTerminalRequest.outputByteLimit`: "the Client truncates from the beginning of the
    /// output [...] The Client MUST ensure truncation happens at a character boundary").
    fn push(&mut self, bytes: &[u8]) {
        self.text.extend_from_slice(bytes);
        if self.text.len() > self.limit {
            let mut cut = self.text.len() - self.limit;
            while cut < self.text.len() && (self.text[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.text.drain(..cut);
            self.truncated = true;
        }
    }
}

fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, (i64, String)> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or((i64::from(RpcError::INVALID_PARAMS), format!("`{name}` is missing or not a string")))
}

fn exit_json(status: &ExitStatus) -> Value {
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(status).map(signal_name);
    #[cfg(not(unix))]
    let signal: Option<String> = None;
    json!({ "exitCode": status.code(), "signal": signal })
}

#[cfg(unix)]
fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        n => format!("signal {n}"),
    }
}

impl Terminals {
    /// `terminal/create`: starts the command; its id.
    pub fn create(&mut self, params: &Value, scratch: &Path) -> Answer {
        let command = str_param(params, "command")?;
        let args: Vec<String> = params
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        // The scratch directory, or a directory inside it the agent names.
        let cwd = params
            .get("cwd")
            .and_then(Value::as_str)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute() && p.starts_with(scratch) && p.is_dir())
            .unwrap_or_else(|| scratch.to_path_buf());
        let limit = params
            .get("outputByteLimit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let mut cmd = if args.is_empty() {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.arg("-c").arg(command);
            cmd
        } else {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(&args);
            cmd
        };
        for var in params.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(name), Some(value)) = (var["name"].as_str(), var["value"].as_str()) {
                cmd.env(name, value);
            }
        }
        cmd.current_dir(&cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
        let (mut child, group) = ProcessGroup::spawn(&mut cmd)
            .map_err(|e| (i64::from(RpcError::INTERNAL_ERROR), format!("cannot run {command}: {e}")))?;
        let output = Arc::new(Mutex::new(Output { limit, ..Output::default() }));
        let readers: Vec<_> = [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        .map(|mut stream| {
            let output = Arc::clone(&output);
            tokio::spawn(async move {
                let mut buf = [0u8; 8192];
                while let Ok(n @ 1..) = stream.read(&mut buf).await {
                    output.lock().unwrap_or_else(|p| p.into_inner()).push(&buf[..n]);
                }
            })
        })
        .collect();
        let (tx, exit) = watch::channel(None);
        tokio::spawn(async move {
            let status = child.wait().await;
            // The output is complete once both streams are drained, unless a process the command
            // left behind keeps them open: then it is what came within `DRAIN` (reading goes on).
            let drained = tokio::time::Instant::now() + DRAIN;
            for reader in readers {
                let _ = tokio::time::timeout_at(drained, reader).await;
            }
            if let Ok(status) = status {
                let _ = tx.send(Some(status));
            }
        });
        let id = format!("term-{}", self.next);
        self.next += 1;
        self.open.insert(id.clone(), Arc::new(Terminal { group, output, exit }));
        Ok(json!({ "terminalId": id }))
    }

    fn get(&self, params: &Value) -> Result<Arc<Terminal>, (i64, String)> {
        let id = str_param(params, "terminalId")?;
        self.open
            .get(id)
            .cloned()
            .ok_or((i64::from(RpcError::RESOURCE_NOT_FOUND), format!("no terminal {id} (never created, or released)")))
    }

    /// `terminal/output`: the output so far, and the exit status once it exited.
    pub fn output(&self, params: &Value) -> Answer {
        let terminal = self.get(params)?;
        let exit = terminal.exit.borrow().as_ref().map(exit_json);
        let output = terminal.output.lock().unwrap_or_else(|p| p.into_inner());
        let mut answer = json!({ "output": String::from_utf8_lossy(&output.text), "truncated": output.truncated });
        if let Some(exit) = exit {
            answer["exitStatus"] = exit;
        }
        Ok(answer)
    }

    /// `terminal/wait_for_exit`: a future that answers once the command exits (run apart, so that
    /// the conversation goes on meanwhile).
    pub fn wait_for_exit(&self, params: &Value) -> Result<impl std::future::Future<Output = Answer>, (i64, String)> {
        let mut exit = self.get(params)?.exit.clone();
        Ok(async move {
            match exit.wait_for(Option::is_some).await {
                Ok(status) => Ok(status.as_ref().map(exit_json).unwrap_or_default()),
                Err(_) => Err((
                    i64::from(RpcError::INTERNAL_ERROR),
                    "the terminal's process could not be waited for".to_string(),
                )),
            }
        })
    }

    /// `terminal/kill`: kills the command; the terminal stays until released.
    pub fn kill(&self, params: &Value) -> Answer {
        self.get(params)?.kill();
        Ok(json!({}))
    }

    /// `terminal/release`: kills the command if it still runs and forgets the terminal.
    pub fn release(&mut self, params: &Value) -> Answer {
        let terminal = self.get(params)?;
        terminal.kill();
        if let Some(id) = params.get("terminalId").and_then(Value::as_str) {
            self.open.remove(id);
        }
        Ok(json!({}))
    }

    /// Kills every terminal (the scenario ends).
    pub fn kill_all(&mut self) {
        for (_, terminal) in self.open.drain() {
            terminal.kill();
        }
    }
}

/// A scenario that ends without [`Terminals::kill_all`] (an early return, a panic) leaves no
/// command behind either.
impl Drop for Terminals {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Terminal {
    /// Kills the whole process group, even once the command itself has exited: what it started
    /// in the background (`sleep 99 >/dev/null &`) is still in the group.
    fn kill(&self) {
        self.group.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_from_the_front_on_a_character_boundary() {
        let mut output = Output { limit: 4, ..Output::default() };
        output.push(b"ab");
        assert!(!output.truncated);
        output.push("cdé".as_bytes());
        // "abcdé" is 6 bytes; its last 4 ("cdé") start on a character.
        assert_eq!(String::from_utf8_lossy(&output.text), "cdé");
        assert!(output.truncated);
        output.push(b"x");
        // "cdéx" is 5 bytes: one byte goes.
        assert_eq!(String::from_utf8_lossy(&output.text), "déx");
        let mut output = Output { limit: 3, ..Output::default() };
        output.push("aébc".as_bytes());
        // Cutting 2 of 5 bytes would split "é": the cut moves past it, keeping less than the limit.
        assert_eq!(String::from_utf8_lossy(&output.text), "bc");
    }

    #[tokio::test]
    async fn a_command_runs_in_the_directory_and_its_exit_is_reported() {
        let dir = std::env::temp_dir().canonicalize().unwrap_or_else(|_| std::env::temp_dir());
        let mut terminals = Terminals::default();
        let params = json!({ "sessionId": "s", "command": "pwd; echo out; echo err >&2; exit 3" });
        let created = terminals.create(&params, &dir).map_err(|e| e.1);
        let id = created.as_ref().map(|c| c["terminalId"].clone()).unwrap_or_default();
        assert!(id.is_string(), "{created:?}");
        let ask = json!({ "sessionId": "s", "terminalId": id });
        let exit = match terminals.wait_for_exit(&ask) {
            Ok(wait) => wait.await,
            Err(e) => Err(e),
        };
        assert_eq!(exit.map_err(|e| e.1), Ok(json!({ "exitCode": 3, "signal": null })));
        let output = terminals.output(&ask).map_err(|e| e.1).unwrap_or_default();
        let text = output["output"].as_str().unwrap_or_default();
        assert!(text.starts_with(&format!("{}\n", dir.display())), "{output}");
        assert!(text.contains("out") && text.contains("err"), "{output}");
        assert_eq!(output["exitStatus"]["exitCode"], 3, "{output}");
        assert!(terminals.release(&ask).is_ok());
        assert!(terminals.output(&ask).is_err(), "released terminals are gone");
    }

    #[tokio::test]
    async fn kill_ends_a_running_command_with_a_signal() {
        let dir = std::env::temp_dir();
        let mut terminals = Terminals::default();
        let created = terminals.create(&json!({ "sessionId": "s", "command": "sleep", "args": ["30"] }), &dir);
        let id = created.map(|c| c["terminalId"].clone()).unwrap_or_default();
        let ask = json!({ "sessionId": "s", "terminalId": id });
        assert!(terminals.kill(&ask).is_ok());
        let exit = match terminals.wait_for_exit(&ask) {
            Ok(wait) => tokio::time::timeout(std::time::Duration::from_secs(5), wait).await.ok(),
            Err(_) => None,
        };
        assert_eq!(exit.and_then(Result::ok).map(|e| e["signal"].clone()), Some(json!("SIGKILL")));
    }

    /// A command that exited while what it left in the background still holds its output open:
    /// its exit is reported all the same (the release then kills the rest of its group).
    #[cfg(unix)]
    #[tokio::test]
    async fn the_exit_is_reported_while_a_background_process_holds_the_output() {
        let dir = std::env::temp_dir();
        let mut terminals = Terminals::default();
        let created = terminals.create(&json!({ "sessionId": "s", "command": "sleep 30 & echo started" }), &dir);
        let id = created.map(|c| c["terminalId"].clone()).unwrap_or_default();
        let ask = json!({ "sessionId": "s", "terminalId": id });
        let exit = match terminals.wait_for_exit(&ask) {
            Ok(wait) => tokio::time::timeout(std::time::Duration::from_secs(10), wait).await.ok(),
            Err(_) => None,
        };
        assert_eq!(exit.and_then(Result::ok).map(|e| e["exitCode"].clone()), Some(json!(0)));
        let output = terminals.output(&ask).map_err(|e| e.1).unwrap_or_default();
        assert_eq!(output["output"], "started\n", "{output}");
        assert!(terminals.release(&ask).is_ok());
    }

    /// What a command left running in the background (its output elsewhere, so the command's
    /// exit is reported) is killed with the terminal's group on release.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn release_kills_what_the_command_left_in_the_background() {
        let dir = std::env::temp_dir().canonicalize().unwrap_or_else(|_| std::env::temp_dir());
        let pidfile = dir.join(format!("acp-terminal-test-{}.pid", std::process::id()));
        let command = format!("sleep 30 >/dev/null 2>&1 & echo $! > {}", pidfile.display());
        let mut terminals = Terminals::default();
        let created = terminals.create(&json!({ "sessionId": "s", "command": command }), &dir);
        let ask =
            json!({ "sessionId": "s", "terminalId": created.map(|c| c["terminalId"].clone()).unwrap_or_default() });
        let exit = match terminals.wait_for_exit(&ask) {
            Ok(wait) => tokio::time::timeout(std::time::Duration::from_secs(5), wait).await.ok(),
            Err(_) => None,
        };
        assert_eq!(exit.and_then(Result::ok).map(|e| e["exitCode"].clone()), Some(json!(0)));
        let pid: i32 = std::fs::read_to_string(&pidfile).ok().and_then(|p| p.trim().parse().ok()).unwrap_or(0);
        let _ = std::fs::remove_file(&pidfile);
        assert!(pid > 0, "the background pid was not written");
        // Running (or stopped), not gone and not a zombie left for a parent that does not reap.
        let alive = || {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
                .unwrap_or(false)
        };
        assert!(alive(), "the background sleep should still run before release");
        assert!(terminals.release(&ask).is_ok());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while alive() && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(!alive(), "the background sleep {pid} outlived its terminal's release");
    }
}
