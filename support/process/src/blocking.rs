//! The blocking API, on std alone: a command in a process group of its own, and running one to
//! completion under a time limit.

use crate::group::{Group, POLL};
use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

/// How long [`run_with_timeout`] waits for the output once the command and its group are gone.
const COLLECT: Duration = Duration::from_secs(5);

/// A child started in a process group of its own. Dropping it kills the group (`SIGKILL`) and
/// reaps the child, as [`GroupChild::end`] with no grace does, unless the group was ended
/// already or found gone: a group is signalled only until then (see the crate docs).
#[derive(Debug)]
pub struct GroupChild {
    child: Child,
    group: Group,
}

impl GroupChild {
    /// Starts `command`, with the stdio it has set, in a process group of its own (on Unix).
    pub fn spawn(command: &mut Command) -> io::Result<GroupChild> {
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(command, 0);
        let mut child = command.spawn()?;
        match Group::of(Some(child.id())) {
            Some(group) => Ok(GroupChild { child, group }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(io::Error::other("the process has no usable pid"))
            }
        }
    }

    /// The direct child, for its pipes (`stdout`, `stderr`): ending it is this handle's job.
    pub fn inner(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The direct child's pid.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The id of the process group (the direct child's pid).
    #[cfg(unix)]
    pub fn process_group(&self) -> i32 {
        self.group.id()
    }

    /// The direct child's exit status if it has exited (the rest of the group may still run).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        if status.is_some() {
            // Reaped: from now on the group's id is safe to signal only while a process is left
            // in it. Look now, so that a group already empty is never signalled later.
            self.group.alive(&mut self.child);
        }
        Ok(status)
    }

    /// Ends the group, also what the direct child left behind once it exited: `SIGTERM`, up to
    /// `grace` for the group to go, then `SIGKILL` (at once with no grace); then reaps the direct
    /// child. Its exit status, `None` when it cannot be read.
    ///
    /// Only the first end signals the group (and none once the group was found empty): later
    /// ones, and the drop, only return the status.
    pub fn end(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.group.end_blocking(&mut self.child, grace);
        self.child.wait().ok()
    }
}

impl Drop for GroupChild {
    fn drop(&mut self) {
        self.end(Duration::ZERO);
    }
}

/// A finished (or killed) run of [`run_with_timeout`].
#[derive(Debug)]
pub struct Finished {
    /// `None` when the status could not be read after a kill.
    pub status: Option<ExitStatus>,
    /// The time limit ran out and the command was killed.
    pub timed_out: bool,
    /// What the command wrote to stdout (lossy UTF-8).
    pub stdout: String,
    /// What the command wrote to stderr (lossy UTF-8).
    pub stderr: String,
    /// From the start to the end of the command.
    pub elapsed: Duration,
}

/// Runs `command` with stdin closed and stdout and stderr captured (invalid UTF-8 replaced). At
/// `timeout` its process group is killed (`SIGKILL`: a command past its time limit is taken to
/// hang). Processes that a command which exited left in its group are killed too: they would
/// hold the pipes open.
pub fn run_with_timeout(command: &mut Command, timeout: Duration) -> io::Result<Finished> {
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = GroupChild::spawn(command)?;
    let stdout = drain(child.child.stdout.take());
    let stderr = drain(child.child.stderr.take());

    let deadline = started + timeout;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(POLL),
            Ok(None) => {
                timed_out = true;
                break child.end(Duration::ZERO);
            }
            Err(_) => break child.end(Duration::ZERO),
        }
    };
    let elapsed = started.elapsed();
    child.end(Duration::ZERO);
    Ok(Finished { status, timed_out, stdout: collect(stdout), stderr: collect(stderr), elapsed })
}

/// Reads `pipe` to its end on a thread (both pipes at once, or a full one would block the child).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    rx
}

fn collect(rx: mpsc::Receiver<Vec<u8>>) -> String {
    match rx.recv_timeout(COLLECT) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => "(output lost: a process outside the command's process group kept the pipe open)".into(),
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// `sleep 30` in a process group of its own.
    fn sleeper() -> GroupChild {
        GroupChild::spawn(Command::new("sleep").arg("30")).expect("spawn sleep")
    }

    /// Whether `child` still runs after a signal sent to it would have arrived.
    fn survives(child: &mut GroupChild) -> bool {
        thread::sleep(Duration::from_millis(200));
        matches!(child.child.try_wait(), Ok(None))
    }

    #[test]
    fn an_ended_group_is_not_signalled_again() {
        // In a group of its own, which no end of another group may reach.
        let mut bystander = sleeper();
        // Ended while it runs: SIGKILL, then the group is done with.
        let mut child = sleeper();
        child.end(Duration::ZERO).expect("status");
        // The kernel may now give the group's id to another group: pretend it gave it to the
        // bystander's. Ending again (as `run_with_timeout` does) and the drop must not reach it.
        child.group.reuse_id(bystander.process_group());
        child.end(Duration::ZERO).expect("the status, kept");
        drop(child);
        assert!(survives(&mut bystander), "a reused group id was signalled");
    }

    #[test]
    fn a_group_found_empty_is_not_signalled_again() {
        let mut bystander = sleeper();
        let mut child = GroupChild::spawn(&mut Command::new("true")).expect("spawn true");
        // Reaped, and the group (`true` alone) then found empty.
        while child.try_wait().expect("try_wait").is_none() {
            thread::sleep(POLL);
        }
        child.group.reuse_id(bystander.process_group());
        drop(child);
        assert!(survives(&mut bystander), "a reused group id was signalled");
    }
}
