//! The async API: an agent's whole process group ends (gracefully, or when the handle is
//! dropped), and its stderr is captured in a bounded buffer.

#![cfg(all(target_os = "linux", feature = "tokio"))]

use crate::common::{pids, running, LIMIT};
use acp_process::{spawn, AgentProcess, AgentStdin, SpawnOptions, Stderr};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::ChildStdout;

/// Starts `sh -c script`; the pids it prints first on stdout (`count` lines).
async fn start(script: &str, count: usize, options: &SpawnOptions) -> (AgentProcess, AgentStdin, Vec<u32>) {
    let (process, stdin, stdout) = spawn("sh", ["-c", script], options).expect("spawn");
    let pids = read_pids(stdout, count).await;
    (process, stdin, pids)
}

async fn read_pids(stdout: ChildStdout, count: usize) -> Vec<u32> {
    let mut lines = BufReader::new(stdout).lines();
    let mut text = String::new();
    for _ in 0..count {
        let line = tokio::time::timeout(LIMIT, lines.next_line()).await.expect("in time").expect("read");
        text.push_str(&line.expect("a line"));
        text.push('\n');
    }
    pids(&text)
}

async fn stops(pid: u32) -> bool {
    let deadline = tokio::time::Instant::now() + LIMIT;
    while running(pid) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// A wrapper that starts a child in the background and exits once its stdin closes: `read`
/// returns at the end of the input.
const POLITE: &str = "sleep 600 & echo $!; echo $$; read line; kill $!";
/// One that ignores `SIGTERM` and its end of input (its children inherit the former).
const STUBBORN: &str = "trap '' TERM; sleep 600 & echo $!; echo $$; wait";

#[tokio::test]
async fn shutdown_lets_the_group_exit_when_stdin_closes() {
    let (process, _stdin, pids) = start(POLITE, 2, &SpawnOptions::new().grace(LIMIT)).await;
    assert!(pids.iter().all(|&pid| running(pid)));
    let status = tokio::time::timeout(LIMIT, process.shutdown()).await.expect("in time").expect("status");
    assert!(status.success(), "ended by itself, not by a signal: {status:?}");
    for pid in pids {
        assert!(stops(pid).await, "{pid} left behind");
    }
}

#[tokio::test]
async fn shutdown_kills_what_ignores_sigterm_after_the_grace() {
    let options = SpawnOptions::new().grace(Duration::from_millis(200)).term_grace(Duration::from_millis(200));
    let (process, _stdin, pids) = start(STUBBORN, 2, &options).await;
    let started = tokio::time::Instant::now();
    let status = tokio::time::timeout(LIMIT, process.shutdown()).await.expect("in time").expect("status");
    assert!(started.elapsed() >= Duration::from_millis(400), "grace, then term grace, then SIGKILL");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    for pid in pids {
        assert!(stops(pid).await, "{pid} left behind");
    }
}

#[tokio::test]
async fn dropping_gives_the_grace_then_sigterm_then_sigkill() {
    // Ignores `SIGTERM` and its end of input: only `SIGKILL`, after the grace and the term grace,
    // ends it.
    let options = SpawnOptions::new().grace(Duration::from_millis(300)).term_grace(Duration::from_millis(300));
    let (process, _stdin, pids) = start(STUBBORN, 2, &options).await;
    drop(process);
    for pid in pids {
        assert!(stops(pid).await, "{pid} left behind");
    }

    // Ignores its end of input, ends on `SIGTERM`: it is sent once the grace is over (here far
    // shorter than the wait for the stop, and `SIGKILL` far later).
    let options = SpawnOptions::new().grace(Duration::from_millis(200)).term_grace(4 * LIMIT);
    let (process, _stdin, pids) = start("sleep 600 & echo $!; echo $$; wait", 2, &options).await;
    drop(process);
    for pid in pids {
        assert!(stops(pid).await, "{pid} outlived SIGTERM (was it sent after the grace?)");
    }
}

/// A stand-in for a conductor: it starts a component in a session (so a process group) of its
/// own, which no signal to its own group reaches, and ends it when its stdin closes, as the
/// official conductor does. A `SIGTERM` before the end of input ends the shell and leaves the
/// component running. The component prints its pid once it is in its session (`setsid` execs
/// `sh`, which execs `sleep`: one pid, `$!`).
const CONDUCTOR: &str = "setsid sh -c 'echo $$; exec sleep 600' & echo $$; read line; kill $!; wait";

/// Kills what a failed test left behind (the component is in no group we signal).
struct Reap(Vec<u32>);

impl Drop for Reap {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if running(pid) {
                if let Ok(pid) = libc::pid_t::try_from(pid) {
                    // SAFETY: `kill` takes two integers and touches no memory of this process.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
        }
    }
}

#[tokio::test]
async fn dropping_lets_a_conductor_end_its_own_groups_on_end_of_input() {
    let (process, _stdin, pids) = start(CONDUCTOR, 2, &SpawnOptions::new().grace(LIMIT)).await;
    let _reap = Reap(pids.clone());
    assert!(pids.iter().all(|&pid| running(pid)));
    drop(process);
    for pid in pids {
        assert!(stops(pid).await, "{pid} left behind: was the conductor signalled before its stdin closed?");
    }
}

#[tokio::test]
async fn shutdown_lets_a_conductor_end_its_own_groups_on_end_of_input() {
    let (process, _stdin, pids) = start(CONDUCTOR, 2, &SpawnOptions::new().grace(LIMIT)).await;
    let _reap = Reap(pids.clone());
    let status = tokio::time::timeout(LIMIT, process.shutdown()).await.expect("in time").expect("status");
    assert!(status.success(), "ended by itself, not by a signal: {status:?}");
    for pid in pids {
        assert!(stops(pid).await, "{pid} left behind");
    }
}

#[tokio::test]
async fn closing_stdin_fails_later_writes() {
    let (process, mut stdin, _) = start("echo $$; cat >/dev/null", 1, &SpawnOptions::new()).await;
    stdin.write_all(b"before\n").await.expect("written");
    process.close_stdin();
    let err = stdin.write_all(b"after\n").await.expect_err("closed");
    assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    // `cat` saw the end of its input: the group is gone within the grace.
    let status = tokio::time::timeout(LIMIT, process.shutdown()).await.expect("in time").expect("status");
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn captured_stderr_keeps_the_newest_lines() {
    const LINES: usize = 10_000;
    let script = format!("i=0; while [ $i -lt {LINES} ]; do echo \"line $i\" >&2; i=$((i+1)); done; echo done");
    let options = SpawnOptions::new().stderr(Stderr::Capture).capture_lines(100).grace(LIMIT);
    let (process, _stdin, stdout) = spawn("sh", ["-c", script.as_str()], &options).expect("spawn");
    let capture = process.stderr().expect("captured");
    // Stdout gets its line although ~100 KB went to stderr first, more than a pipe holds: nobody
    // reads the capture yet, and the buffer drops old lines instead of blocking the writer.
    let mut lines = BufReader::new(stdout).lines();
    let done = tokio::time::timeout(LIMIT, lines.next_line()).await.expect("in time").expect("read");
    assert_eq!(done.as_deref(), Some("done"));
    assert!(process.shutdown().await.expect("status").success());
    // The reader may still be behind on the pipe, pushing lines while they are taken: the bound
    // is on what is held at once, so wait until it has read all.
    let deadline = tokio::time::Instant::now() + LIMIT;
    while !capture.is_ended() {
        assert!(tokio::time::Instant::now() < deadline, "stderr ends");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut kept = Vec::new();
    while let Some(line) = tokio::time::timeout(LIMIT, capture.next_line()).await.expect("stderr ends") {
        kept.push(line);
    }
    assert_eq!(kept.len(), 100, "bounded");
    assert_eq!(kept.last().map(String::as_str), Some(format!("line {}", LINES - 1).as_str()));
    assert_eq!(capture.dropped(), (LINES - 100) as u64, "only the oldest were dropped");
    assert!(capture.is_ended());

    let options = SpawnOptions::new().stderr(Stderr::Null);
    let (process, _stdin, _stdout) = spawn("sh", ["-c", "echo x >&2"], &options).expect("spawn");
    assert!(process.stderr().is_none());
}

#[test]
fn spawning_needs_a_tokio_runtime() {
    let err = spawn("true", [""; 0], &SpawnOptions::new()).expect_err("no runtime");
    assert!(err.to_string().contains("tokio runtime"), "{err}");
}

/// `ProcessGroup`: a command with its own stdio, ended with what it left in the background.
mod process_group {
    use super::*;
    use acp_process::ProcessGroup;
    use std::process::Stdio;

    async fn start(script: &str) -> (tokio::process::Child, ProcessGroup, Vec<u32>) {
        let mut command = tokio::process::Command::new("sh");
        command.args(["-c", script]).stdin(Stdio::null()).stdout(Stdio::piped());
        let (mut child, group) = ProcessGroup::spawn(&mut command).expect("spawn");
        let pids = read_pids(child.stdout.take().expect("piped"), 2).await;
        (child, group, pids)
    }

    #[tokio::test]
    async fn end_terminates_the_command_and_its_background_children() {
        let (mut child, group, pids) = start("sleep 600 & echo $!; echo $$; wait").await;
        let status = tokio::time::timeout(LIMIT, group.end(&mut child, LIMIT)).await.expect("in time").expect("status");
        assert!(!status.success(), "ended by SIGTERM: {status:?}");
        for pid in pids {
            assert!(stops(pid).await, "{pid} left behind");
        }
    }

    #[tokio::test]
    async fn end_kills_what_ignores_sigterm_after_the_grace() {
        let (mut child, group, pids) = start(STUBBORN).await;
        let grace = Duration::from_millis(200);
        tokio::time::timeout(LIMIT, group.end(&mut child, grace)).await.expect("in time").expect("status");
        for pid in pids {
            assert!(stops(pid).await, "{pid} left behind");
        }
    }

    #[tokio::test]
    async fn kill_reaches_the_group_after_the_command_exited() {
        let (mut child, group, pids) = start("sleep 600 >/dev/null & echo $!; echo $$").await;
        tokio::time::timeout(LIMIT, child.wait()).await.expect("in time").expect("status");
        assert!(running(pids[0]), "the background sleep runs on");
        group.clone().kill();
        assert!(stops(pids[0]).await, "{} left behind", pids[0]);
        group.kill(); // killed already: sends nothing
    }
}
