//! The async API, on tokio: an agent with piped stdin and stdout (the protocol), its stderr passed
//! through, captured or discarded, ended with its process group.

use crate::group::{Group, Signal, POLL};
use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWrite, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Notify;

/// A captured stderr line longer than this is cut (an agent could write one without a newline).
const MAX_LINE: usize = 64 * 1024;

/// Where the agent's stderr goes. Never into the protocol stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stderr {
    /// Passed through to this process's stderr.
    #[default]
    Inherit,
    /// Read line by line into a bounded buffer ([`AgentProcess::stderr`]); when it is full the
    /// oldest lines are dropped, so an agent that logs a lot never blocks on its stderr.
    Capture,
    /// Discarded (`/dev/null`).
    Null,
}

/// How to start and end an agent process ([`spawn`], [`spawn_command`]).
#[derive(Clone, Debug)]
pub struct SpawnOptions {
    stderr: Stderr,
    capture_lines: usize,
    grace: Duration,
    term_grace: Duration,
}

impl Default for SpawnOptions {
    fn default() -> Self {
        SpawnOptions {
            stderr: Stderr::Inherit,
            capture_lines: 1000,
            grace: Duration::from_secs(2),
            term_grace: Duration::from_millis(500),
        }
    }
}

impl SpawnOptions {
    /// The defaults: stderr passed through, 2 s of grace, 500 ms between `SIGTERM` and `SIGKILL`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where the agent's stderr goes ([`Stderr::Inherit`] by default).
    pub fn stderr(mut self, stderr: Stderr) -> Self {
        self.stderr = stderr;
        self
    }

    /// How many lines [`Stderr::Capture`] keeps (1000 by default, at least 1).
    pub fn capture_lines(mut self, lines: usize) -> Self {
        self.capture_lines = lines.max(1);
        self
    }

    /// How long [`AgentProcess::shutdown`] and a dropped [`AgentProcess`] wait after closing
    /// stdin before `SIGTERM` (2 s by default).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How long [`AgentProcess::shutdown`] and a dropped [`AgentProcess`] wait after `SIGTERM`
    /// before `SIGKILL` (500 ms by default).
    pub fn term_grace(mut self, term_grace: Duration) -> Self {
        self.term_grace = term_grace;
        self
    }
}

/// Starts `program args…` with piped stdin and stdout (the protocol) and stderr as `options`
/// says; on Unix in a new process group. Returns the process handle and the two ends of the
/// protocol stream. Must be called within a tokio runtime (an error otherwise).
pub fn spawn<I, S>(
    program: impl AsRef<OsStr>,
    args: I,
    options: &SpawnOptions,
) -> io::Result<(AgentProcess, AgentStdin, ChildStdout)>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut command = Command::new(program);
    command.args(args);
    spawn_command(command, options)
}

/// [`spawn`] for a prepared command (environment, working directory); its stdio and process
/// group are set here.
pub fn spawn_command(
    mut command: Command,
    options: &SpawnOptions,
) -> io::Result<(AgentProcess, AgentStdin, ChildStdout)> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(io::Error::other("spawning an agent needs a tokio runtime"));
    }
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    command.stderr(match options.stderr {
        Stderr::Inherit => Stdio::inherit(),
        Stderr::Capture => Stdio::piped(),
        Stderr::Null => Stdio::null(),
    });
    #[cfg(unix)]
    command.process_group(0);
    // Elsewhere there is no group: dropping the child kills it.
    #[cfg(not(unix))]
    command.kill_on_drop(true);
    let mut child = command.spawn()?;
    let Some(group) = Group::of(child.id()) else {
        let _ = child.start_kill();
        return Err(io::Error::other("the agent process has no usable pid"));
    };
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.start_kill();
        return Err(io::Error::other("the agent's stdio is not piped"));
    };
    let stderr = child.stderr.take().map(|pipe| StderrCapture::start(pipe, options.capture_lines));
    let stdin = AgentStdin { slot: Arc::new(Mutex::new(StdinSlot { pipe: Some(stdin), waker: None })) };
    let process = AgentProcess {
        child: Some(child),
        stdin: stdin.slot.clone(),
        stderr,
        grace: options.grace,
        term_grace: options.term_grace,
        group,
    };
    Ok((process, stdin, stdout))
}

/// A running agent: its process (on Unix, its process group) and, with [`Stderr::Capture`], its
/// stderr.
///
/// Dropping it ends the agent without waiting, since `drop` cannot await, in the order
/// [`AgentProcess::shutdown`] does: it closes the agent's stdin at once, and a short-lived thread
/// gives the group [`SpawnOptions::grace`] to exit by itself, then sends `SIGTERM`, and `SIGKILL`
/// after [`SpawnOptions::term_grace`] (a thread rather than a task, so that it also runs while the
/// tokio runtime shuts down). No signal comes first: an agent that starts processes in groups of
/// their own (a conductor's components) ends them on end of input, and a signal would end it
/// before it could. The thread does not outlive this process, so a program that exits right
/// after the drop leaves the agent only its closed stdin: await [`AgentProcess::shutdown`] before
/// exiting, to give the agent its chance to exit by itself and to know that it is gone.
///
/// Processes that leave the group on their own (`setsid`, daemons) are not reached.
#[derive(Debug)]
pub struct AgentProcess {
    /// `None` once shut down.
    child: Option<Child>,
    stdin: Arc<Mutex<StdinSlot>>,
    stderr: Option<StderrCapture>,
    grace: Duration,
    term_grace: Duration,
    group: Group,
}

impl AgentProcess {
    /// The pid of the direct child (the wrapper, when the agent is started through one), while it
    /// has not been waited for.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// The id of the agent's process group (the direct child's pid).
    #[cfg(unix)]
    pub fn process_group(&self) -> i32 {
        self.group.id()
    }

    /// The agent's captured stderr ([`Stderr::Capture`]; `None` otherwise).
    pub fn stderr(&self) -> Option<StderrCapture> {
        self.stderr.clone()
    }

    /// Closes the agent's stdin now, its cue to exit (writes to the [`AgentStdin`] then fail with
    /// `BrokenPipe`): for a caller that reads what the agent still writes before
    /// [`AgentProcess::shutdown`], which closes it too.
    pub fn close_stdin(&self) {
        close_stdin(&self.stdin);
    }

    /// Ends the agent: closes its stdin, waits up to [`SpawnOptions::grace`] for the group to
    /// exit, then sends `SIGTERM` to the group, waits up to [`SpawnOptions::term_grace`], and
    /// sends `SIGKILL` (and waits up to `term_grace` again for the group to be gone). Returns the
    /// direct child's exit status.
    ///
    /// Dropping this future before it completes ends the agent as dropping the handle does.
    pub async fn shutdown(mut self) -> io::Result<ExitStatus> {
        close_stdin(&self.stdin);
        if !self.wait_group(self.grace).await {
            self.signal(Signal::Term);
            if !self.wait_group(self.term_grace).await {
                self.signal(Signal::Kill);
                // `SIGKILL` cannot be ignored; this waits only for the kernel to end them.
                self.wait_group(self.term_grace).await;
            }
        }
        let Some(child) = self.child.as_mut() else {
            return Err(io::Error::other("the agent process was already shut down"));
        };
        // Reaped already unless it outlived the waits above; its own children are reaped by
        // whoever inherited them.
        let status = child.wait().await;
        self.child = None;
        status
    }

    /// Waits up to `limit` for the group to be gone; true when it is.
    async fn wait_group(&mut self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if !self.alive() {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// False once the group is gone (found empty, it is never signalled again: see [`Group`]).
    fn alive(&mut self) -> bool {
        let AgentProcess { child, group, .. } = self;
        child.as_mut().is_some_and(|child| group.alive(child))
    }

    fn signal(&mut self, signal: Signal) {
        if let Some(child) = self.child.as_mut() {
            self.group.signal(child, signal);
        }
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        // `None` after a completed shutdown: the group is not signalled again.
        let Some(child) = self.child.take() else { return };
        close_stdin(&self.stdin);
        // The group as a shutdown cut short left it: found gone or killed, it is not signalled.
        end_in_background(child, self.group.clone(), self.grace, self.term_grace);
    }
}

/// What dropping an [`AgentProcess`] does once its stdin is closed, from a thread: up to `grace`
/// for the group to exit by itself, then `SIGTERM`, up to `term_grace`, then `SIGKILL`: the
/// steps of [`AgentProcess::shutdown`], without the waiting caller. A signal at once would end a
/// wrapper before it ends what it started in groups of its own (a conductor's components), which
/// it does on end of input.
fn end_in_background(mut child: Child, mut group: Group, grace: Duration, term_grace: Duration) {
    // Ended already (a shutdown cut short after `SIGKILL`), or gone: nothing to send. Tokio's
    // orphan queue reaps the child.
    if group.ended() || !group.alive(&mut child) {
        return;
    }
    // For when the thread cannot start (the closure, with the thread's group, is then dropped).
    let mut fallback = group.clone();
    let end_later = move || {
        if !group.wait_blocking(&mut child, grace) {
            group.signal(&mut child, Signal::Term);
            if !group.wait_blocking(&mut child, term_grace) {
                group.signal(&mut child, Signal::Kill);
            }
        }
        // Reap the direct child if it goes soon; otherwise tokio's orphan queue does.
        let deadline = std::time::Instant::now() + term_grace;
        while let Ok(None) = child.try_wait() {
            if std::time::Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(POLL);
        }
    };
    if std::thread::Builder::new().name("acp-agent-end".into()).spawn(end_later).is_err() {
        // No thread to wait with: no grace either. The child went with the closure (elsewhere
        // than on Unix, dropping it killed it).
        fallback.signal_group(Signal::Kill);
    }
}

#[derive(Debug)]
struct StdinSlot {
    /// `None` once closed.
    pipe: Option<ChildStdin>,
    /// The writer waiting on a full pipe, woken when the pipe is closed under it.
    waker: Option<Waker>,
}

fn close_stdin(slot: &Mutex<StdinSlot>) {
    let (pipe, waker) = {
        let mut slot = lock(slot);
        (slot.pipe.take(), slot.waker.take())
    };
    drop(pipe);
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The agent's stdin, which the [`AgentProcess`] can close under the connection writing to it
/// (closing it is the agent's cue to exit). Writes after that fail with `BrokenPipe`.
#[derive(Debug)]
pub struct AgentStdin {
    slot: Arc<Mutex<StdinSlot>>,
}

impl AgentStdin {
    fn poll_pipe<T>(
        &self,
        cx: &mut Context<'_>,
        closed: io::Result<T>,
        op: impl FnOnce(Pin<&mut ChildStdin>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let mut slot = lock(&self.slot);
        let Some(pipe) = slot.pipe.as_mut() else {
            return Poll::Ready(closed);
        };
        let poll = op(Pin::new(pipe), cx);
        if poll.is_pending() {
            slot.waker = Some(cx.waker().clone());
        }
        poll
    }
}

fn closed_pipe() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the agent's stdin was closed")
}

impl AsyncWrite for AgentStdin {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_pipe(cx, Err(closed_pipe()), |pipe, cx| pipe.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_pipe(cx, Err(closed_pipe()), |pipe, cx| pipe.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_pipe(cx, Err(closed_pipe()), |pipe, cx| pipe.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_pipe(cx, Ok(()), |pipe, cx| pipe.poll_shutdown(cx))
    }
}

/// The agent's stderr lines ([`Stderr::Capture`]), read by a task as they come and kept in a
/// bounded buffer (the oldest dropped first). Clones share the buffer: a line taken by one is
/// gone for the others.
#[derive(Clone, Debug)]
pub struct StderrCapture {
    inner: Arc<Captured>,
}

#[derive(Debug)]
struct Captured {
    state: Mutex<CaptureState>,
    changed: Notify,
    capacity: usize,
}

#[derive(Debug, Default)]
struct CaptureState {
    lines: VecDeque<String>,
    dropped: u64,
    ended: bool,
}

impl StderrCapture {
    fn start(pipe: ChildStderr, capacity: usize) -> Self {
        let capture = StderrCapture {
            inner: Arc::new(Captured {
                state: Mutex::new(CaptureState::default()),
                changed: Notify::new(),
                capacity: capacity.max(1),
            }),
        };
        tokio::spawn(capture.clone().read(pipe));
        capture
    }

    /// The next line (without its line ending; invalid UTF-8 replaced), waiting for one; `None`
    /// once the agent closed its stderr and every line was taken.
    pub async fn next_line(&self) -> Option<String> {
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            // Registered before looking, so a line pushed in between still wakes us.
            changed.as_mut().enable();
            {
                let mut state = lock(&self.inner.state);
                if let Some(line) = state.lines.pop_front() {
                    return Some(line);
                }
                if state.ended {
                    return None;
                }
            }
            changed.await;
        }
    }

    /// The lines buffered now, taken out of the buffer.
    pub fn take_lines(&self) -> Vec<String> {
        lock(&self.inner.state).lines.drain(..).collect()
    }

    /// How many lines were dropped because the buffer was full.
    pub fn dropped(&self) -> u64 {
        lock(&self.inner.state).dropped
    }

    /// True once the agent's stderr is closed (lines may still be buffered).
    pub fn is_ended(&self) -> bool {
        lock(&self.inner.state).ended
    }

    async fn read(self, pipe: ChildStderr) {
        let mut reader = BufReader::new(pipe);
        let mut line = Vec::new();
        loop {
            let buf = match reader.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => {
                    // The runtime's target from before this crate, which `RUST_LOG=acp_rpc=…`
                    // filters select.
                    tracing::debug!(target: "acp_rpc::spawn", "acp: cannot read the agent's stderr: {e}");
                    break;
                }
            };
            if buf.is_empty() {
                if !line.is_empty() {
                    self.push(&line);
                }
                break;
            }
            let (end, newline) = match memchr::memchr(b'\n', buf) {
                Some(i) => (i, true),
                None => (buf.len(), false),
            };
            let room = MAX_LINE.saturating_sub(line.len());
            line.extend_from_slice(&buf[..end.min(room)]);
            reader.consume(end + usize::from(newline));
            if newline {
                self.push(&line);
                line.clear();
            }
        }
        lock(&self.inner.state).ended = true;
        self.inner.changed.notify_waiters();
    }

    fn push(&self, line: &[u8]) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = String::from_utf8_lossy(line).into_owned();
        {
            let mut state = lock(&self.inner.state);
            if state.lines.len() >= self.inner.capacity {
                state.lines.pop_front();
                state.dropped += 1;
            }
            state.lines.push_back(line);
        }
        self.inner.changed.notify_waiters();
    }
}

/// Locks `mutex` even if a thread panicked while holding it: every value kept behind these locks
/// is whole after each update, so a panic elsewhere leaves nothing half-written.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::blocking::GroupChild;

    #[tokio::test]
    async fn a_dropped_agent_whose_group_was_found_empty_signals_nothing() {
        // In a group of its own, which no end of another group may reach.
        let mut bystander = GroupChild::spawn(std::process::Command::new("sleep").arg("30")).expect("spawn sleep");
        let (mut process, _stdin, _stdout) = spawn("true", [""; 0], &SpawnOptions::new()).expect("spawn true");
        // As a shutdown cut short would have: the group (`true` alone) found empty.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while process.alive() {
            assert!(tokio::time::Instant::now() < deadline, "`true` ends");
            tokio::time::sleep(POLL).await;
        }
        // The kernel may now give the id to another group: pretend it gave it to the bystander's.
        process.group.reuse_id(bystander.process_group());
        drop(process);
        std::thread::sleep(Duration::from_millis(200));
        assert!(matches!(bystander.try_wait(), Ok(None)), "a reused group id was signalled");
    }
}
