//! A peer that listens on a port, as the network scenarios and benchmarks run it: started with
//! stdin closed and stdout discarded, its URL read from the `listening on URL` line it prints on
//! stderr once bound (so port 0 works), its stderr kept for failure reports, and the process
//! group killed when the [`Listener`] is dropped.

use crate::process::describe;
use acp_process::GroupChild;
use std::io::{BufRead, BufReader};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What a listening peer prints on stderr once bound, followed by its URL.
pub const LISTENING: &str = "listening on ";

/// A running peer that printed its URL. Dropping it kills it and everything it spawned.
#[derive(Debug)]
pub struct Listener {
    /// Dropping it kills the group.
    child: GroupChild,
    /// The URL it printed (`http://127.0.0.1:PORT`).
    pub url: String,
    stderr: Arc<Mutex<String>>,
    /// The command, as a shell would read it.
    pub described: String,
}

/// Why a peer did not come to listen.
#[derive(Debug)]
pub enum NotListening {
    /// It exited first, with this status and stderr.
    Exited { status: ExitStatus, stderr: String },
    /// It printed no URL within the time limit (it was killed).
    TimedOut { stderr: String },
    /// It could not be started.
    Spawn(String),
}

impl Listener {
    /// Starts `command` and waits up to `timeout` for its `listening on URL` line.
    pub fn start(command: &mut Command, timeout: Duration) -> Result<Listener, NotListening> {
        command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
        let described = describe(command);
        let mut child =
            GroupChild::spawn(command).map_err(|e| NotListening::Spawn(format!("cannot run `{described}`: {e}")))?;
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        if let Some(pipe) = child.inner().stderr.take() {
            let kept = Arc::clone(&stderr);
            thread::spawn(move || {
                let mut tx = Some(tx);
                for line in BufReader::new(pipe).lines() {
                    let Ok(line) = line else { break };
                    let url = line.split_once(LISTENING).and_then(|(_, rest)| rest.split_whitespace().next());
                    if let Some(url) = url.map(str::to_string) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(url);
                        }
                    }
                    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                    kept.push_str(&line);
                    kept.push('\n');
                }
            });
        }
        let deadline = Instant::now() + timeout;
        let mut listener = Listener { child, url: String::new(), stderr, described };
        loop {
            match rx.recv_timeout(Duration::from_millis(50)) {
                Ok(url) => {
                    listener.url = url;
                    return Ok(listener);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Ok(Some(status)) = listener.child.try_wait() {
                // The reader may still be taking the last lines of a process that just exited.
                thread::sleep(Duration::from_millis(100));
                return Err(NotListening::Exited { status, stderr: listener.stderr() });
            }
            if Instant::now() >= deadline {
                let stderr = listener.stderr();
                return Err(NotListening::TimedOut { stderr });
            }
        }
    }

    /// Its process id (the group's leader: the server itself, whose memory the scale curves read).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The URL with another scheme: `ws://` for `http://`, `wss://` for `https://`.
    pub fn ws_url(&self) -> String {
        ws_url(&self.url)
    }
}

/// `http://host:port/path` as `ws://host:port/path` (`https` as `wss`); other URLs unchanged.
pub fn ws_url(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("http://") {
        format!("ws://{rest}")
    } else if let Some(rest) = url.strip_prefix("https://") {
        format!("wss://{rest}")
    } else {
        url.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_urls() {
        assert_eq!(ws_url("http://127.0.0.1:80"), "ws://127.0.0.1:80");
        assert_eq!(ws_url("https://h/acp"), "wss://h/acp");
        assert_eq!(ws_url("ws://h"), "ws://h");
    }

    #[cfg(unix)]
    #[test]
    fn reads_the_url_and_kills_on_drop() {
        let mut command = Command::new("sh");
        command
            .args(["-c", "echo starting >&2; echo 'INFO listening on http://127.0.0.1:4242 (http, ws)' >&2; sleep 30"]);
        let started = Instant::now();
        let listener = Listener::start(&mut command, Duration::from_secs(10)).unwrap();
        assert_eq!(listener.url, "http://127.0.0.1:4242");
        assert_eq!(listener.ws_url(), "ws://127.0.0.1:4242");
        drop(listener);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[cfg(unix)]
    #[test]
    fn an_exit_or_silence_is_reported() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo 'no such flag' >&2; exit 3"]);
        match Listener::start(&mut command, Duration::from_secs(10)) {
            Err(NotListening::Exited { status, stderr }) => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(stderr.trim(), "no such flag");
            }
            other => panic!("{other:?}"),
        }
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30"]);
        assert!(matches!(
            Listener::start(&mut command, Duration::from_millis(200)),
            Err(NotListening::TimedOut { .. })
        ));
    }
}
