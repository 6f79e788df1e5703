//! The blocking API: a command's whole process group ends, grandchildren included.

#![cfg(target_os = "linux")]

use crate::common::{pids, running, stops, LIMIT};
use acp_process::{run_with_timeout, GroupChild};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `sh -c script` with stdout piped; the pids it prints first (`count` lines).
fn start(script: &str, count: usize) -> (GroupChild, Vec<u32>) {
    let mut command = Command::new("sh");
    command.args(["-c", script]).stdin(Stdio::null()).stdout(Stdio::piped());
    let mut child = GroupChild::spawn(&mut command).expect("spawn");
    let stdout = child.inner().stdout.take().expect("stdout piped");
    let lines: Vec<String> = BufReader::new(stdout).lines().take(count).map(|l| l.expect("a line")).collect();
    let pids = pids(&lines.join("\n"));
    assert_eq!(pids.len(), count, "{lines:?}");
    (child, pids)
}

#[test]
fn timeout_kills_the_process_group() {
    // The shell's background child would keep stdout open if only the shell were killed.
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & echo $!; sleep 30"]);
    let started = Instant::now();
    let run = run_with_timeout(&mut command, Duration::from_millis(300)).expect("run");
    assert!(run.timed_out);
    assert!(started.elapsed() < Duration::from_secs(10));
    let [grandchild] = pids(&run.stdout)[..] else { panic!("{run:?}") };
    assert!(stops(grandchild), "the background sleep outlived the timeout");
}

#[test]
fn what_an_exited_command_left_behind_is_killed() {
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & echo $!; echo oops >&2; exit 3"]);
    let started = Instant::now();
    let run = run_with_timeout(&mut command, LIMIT).expect("run");
    assert!(!run.timed_out);
    assert_eq!(run.status.and_then(|s| s.code()), Some(3));
    assert_eq!(run.stderr.trim(), "oops");
    // The straggler held stdout open: the run returns only because it was killed.
    assert!(started.elapsed() < Duration::from_secs(10));
    let [straggler] = pids(&run.stdout)[..] else { panic!("{run:?}") };
    assert!(stops(straggler));
}

#[test]
fn dropping_kills_the_group_with_its_grandchildren() {
    let (child, pids) = start("sleep 30 & echo $!; echo $$; sleep 30", 2);
    assert!(pids.iter().all(|&pid| running(pid)));
    drop(child);
    assert!(pids.iter().all(|&pid| stops(pid)), "processes left behind");
}

#[test]
fn ending_sends_sigterm_first_and_sigkill_after_the_grace() {
    // Polite: the shell and its child end on SIGTERM, well before the grace runs out.
    let (mut child, _) = start("sleep 30 & echo $!; wait", 1);
    let started = Instant::now();
    let status = child.end(LIMIT).expect("status");
    assert!(started.elapsed() < LIMIT / 2, "ended by SIGTERM, not after the grace");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGTERM));

    // Stubborn: SIGTERM ignored (the background child inherits that), so only SIGKILL ends them.
    let grace = Duration::from_millis(300);
    let (mut child, pids) = start("trap '' TERM; sleep 30 & echo $!; echo $$; wait", 2);
    let started = Instant::now();
    let status = child.end(grace).expect("status");
    assert!(started.elapsed() >= grace, "SIGKILL came before the grace ran out");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    assert!(pids.iter().all(|&pid| stops(pid)), "processes left behind");
}
