//! A tokio child whose stdio the caller sets, in a process group of its own: for commands that
//! are not agents (a terminal's command, a client under test), ended with everything they
//! started.

use crate::group::{Group, Signal, POLL};
use std::io;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::process::{Child, Command};

/// The process group of a child started by [`ProcessGroup::spawn`]. Clones share it: once one
/// has killed the group, or found it gone, none signals its id again (see the crate docs).
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// let mut command = tokio::process::Command::new("sh");
/// command.args(["-c", "sleep 60 & sleep 60"]).stdout(std::process::Stdio::piped());
/// let (mut child, group) = acp_process::ProcessGroup::spawn(&mut command)?;
/// // … read its output; then end it, the background `sleep` included:
/// group.end(&mut child, std::time::Duration::from_millis(500)).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ProcessGroup {
    group: Arc<Mutex<Group>>,
}

impl ProcessGroup {
    /// Starts `command`, with the stdio it has set, in a process group of its own (on Unix;
    /// elsewhere the child alone, killed when dropped). Must be called within a tokio runtime.
    pub fn spawn(command: &mut Command) -> io::Result<(Child, ProcessGroup)> {
        #[cfg(unix)]
        command.process_group(0);
        #[cfg(not(unix))]
        command.kill_on_drop(true);
        let mut child = command.spawn()?;
        match Group::of(child.id()) {
            Some(group) => Ok((child, ProcessGroup { group: Arc::new(Mutex::new(group)) })),
            None => {
                let _ = child.start_kill();
                Err(io::Error::other("the child has no usable pid"))
            }
        }
    }

    /// Kills the group (`SIGKILL`) without waiting, even once the direct child has exited and
    /// been reaped: what it left running in the group (`sleep 99 &`) is still reached. Once
    /// killed, the group is not signalled again.
    pub fn kill(&self) {
        self.lock().signal_group(Signal::Kill);
    }

    /// Ends `child` (the one [`ProcessGroup::spawn`] returned with this group) and its group:
    /// `SIGTERM` to the group, up to `grace` for it to be gone, then `SIGKILL` to the group and
    /// the child; returns the child's exit status. A group found gone or killed already is not
    /// signalled.
    pub async fn end(&self, child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
        let running = {
            let mut group = self.lock();
            let running = !group.ended() && group.alive(child);
            if running {
                group.signal(child, Signal::Term);
            }
            running
        };
        if running {
            let deadline = tokio::time::Instant::now() + grace;
            while self.lock().alive(child) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(POLL).await;
            }
            let mut group = self.lock();
            if group.alive(child) {
                group.signal(child, Signal::Kill);
            }
        }
        child.wait().await
    }

    fn lock(&self) -> MutexGuard<'_, Group> {
        // A panic while signalling leaves the group's flags as they were: still usable.
        self.group.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
