//! Starting an agent (or any command) in a process group of its own and ending it with everything
//! it started: the one way the ACP runtime (`acp_rpc::spawn`), `acp conform` and the developer
//! tasks (xtask) do it.
//!
//! Agents are often started through wrappers (`npx`, `uvx`, a shell script) that start a child
//! that starts the agent. Killing only the direct child leaves the agent running, so on Unix the
//! child runs in a process group of its own (`process_group(0)`: the group's id is the child's
//! pid) and the whole group is signalled. Elsewhere there is no group: only the direct child is
//! killed. Processes that leave the group on their own (`setsid`, daemons) are not reached.
//!
//! - Async, on tokio (feature `tokio`, on by default): [`spawn`] and [`spawn_command`] start an
//!   agent with piped stdin and stdout (the protocol) and its stderr passed through, captured in a
//!   bounded buffer of lines ([`StderrCapture`]) or discarded ([`Stderr`]).
//!   [`AgentProcess::shutdown`] ends it gracefully (stdin closed, a grace period, `SIGTERM`,
//!   another, `SIGKILL`); dropping the [`AgentProcess`] ends it without waiting, in the same order
//!   (stdin closed at once; the grace, `SIGTERM`, `SIGKILL` from a thread, which does not outlive
//!   this process: await `shutdown` before exiting). [`ProcessGroup::spawn`] starts any other
//!   command, with the stdio it sets, in a group of its own, which [`ProcessGroup::end`] and
//!   [`ProcessGroup::kill`] end (a terminal's command, a client under test).
//! - Blocking, on std alone: [`GroupChild`] starts a [`std::process::Command`] in a group of its
//!   own and ends the group ([`GroupChild::end`]; dropping it kills the group);
//!   [`run_with_timeout`] runs one to completion with its output captured, the group killed at
//!   the time limit. The developer tasks are synchronous, and a blocking API keeps them free of
//!   an async runtime (`default-features = false` builds no tokio at all).
//!
//! ```no_run
//! use acp_process::{spawn, SpawnOptions, Stderr};
//! use std::time::Duration;
//!
//! # async fn run() -> std::io::Result<()> {
//! // An agent behind a wrapper: `npx` and what it starts are in one group.
//! let options = SpawnOptions::new().stderr(Stderr::Capture).grace(Duration::from_secs(2));
//! let (agent, _stdin, _stdout) = spawn("npx", ["some-acp-agent"], &options)?;
//! // … speak the protocol over stdin/stdout; then end the whole group:
//! let status = agent.shutdown().await?;
//! # Ok(()) }
//!
//! // Blocking, without a runtime: the group is killed at the time limit.
//! let done = acp_process::run_with_timeout(std::process::Command::new("make").arg("check"), Duration::from_secs(60))?;
//! println!("{:?} in {:?}", done.status, done.elapsed);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! This crate depends on no generated code, so that the code generator can use it while the
//! generated crates are stale or broken.
//!
//! # A group's id, and when it is no longer signalled
//!
//! A group is signalled by its id (`killpg`), which is the direct child's pid; the kernel does not
//! give a pid to a new process while it is still a process's pid or a group's id. So:
//!
//! - Until the direct child is reaped, its pid, and with it the group's id, cannot be reused:
//!   signalling the group is safe.
//! - Once it is reaped, the id stays the group's as long as any process is left in it. The
//!   processes that the direct child left behind (an agent whose wrapper exited) are meant to be
//!   reached, so the group is still signalled while `killpg(group, 0)` finds one.
//! - The first time `killpg` answers that no process is left (`ESRCH`), the group is marked gone
//!   and never signalled again, nor once it was sent `SIGKILL`, which every end that completes
//!   does unless it saw the group go. Ending it again ([`run_with_timeout`] ends its command up to
//!   three times, a [`GroupChild`] is ended again when dropped) and dropping the handle later then
//!   send nothing, however long after, when the id may belong to an unrelated group.
//!
//! What remains is a window of a moment: after the direct child is reaped, between a check that
//! still finds a process in the group (or the signal before it) and the next signal, the last
//! process could exit and an unrelated process be given that very pid and make itself a group
//! leader (`setsid`, `setpgid`); that signal would then reach the unrelated group. The kernel
//! hands pids out in increasing order, so this takes the pid space to wrap around within those
//! few milliseconds (a poll is 20 ms). [`GroupChild::try_wait`] looks at the group when it reaps
//! the child, so a group empty by then is never signalled; but a handle whose child was reaped
//! while processes were left in the group, and which is ended or dropped only long after the last
//! of them exited, finds the group gone at its next check only if the id was not reused in
//! between: end such a handle (or drop it) soon. A pidfd would close the window for the direct
//! child, but there is none for a group.
//!
//! # Why not `process-wrap`
//!
//! `process-wrap` (watchexec's successor of `command-group`) wraps std and tokio commands to run
//! them in a process group, session or Windows job object, with kill-on-drop. It covers the
//! smallest part of what is needed here, and does not fit the rest:
//!
//! - It has no graceful end: `start_kill` sends `SIGKILL` to the group, and its kill-on-drop is
//!   tokio's `kill_on_drop` (`SIGKILL` to the direct child only). The `SIGTERM`, grace period,
//!   `SIGKILL` sequence, closing stdin first, the drop-time thread, and stderr capture would all
//!   still be written here.
//! - It cannot tell whether the group still has a process. Its `wait` and `try_wait` reap with
//!   `waitpid(-pgid)`, which sees only our own children, not the grandchildren that the wrapper
//!   started, so `killpg(group, 0)` from libc would stay anyway.
//! - Its `try_wait` reaps the direct child itself, behind the tokio `Child` it wraps, and the
//!   API hands out boxed `dyn ChildWrapper`s where the tokio `Child` is used directly here.
//! - Its current major version (10) needs Rust 1.87, above this workspace's 1.85, so an older
//!   major would be pinned. It would add `nix`, `indexmap` and `futures` (and `windows` on Windows)
//!   to the tree, for what std (`process_group(0)`, since 1.64) and one libc call (`killpg`,
//!   already in the tree) do.

#[cfg(feature = "tokio")]
mod agent;
mod blocking;
mod group;
#[cfg(feature = "tokio")]
mod own_group;

#[cfg(feature = "tokio")]
pub use agent::{spawn, spawn_command, AgentProcess, AgentStdin, SpawnOptions, Stderr, StderrCapture};
pub use blocking::{run_with_timeout, Finished, GroupChild};
#[cfg(feature = "tokio")]
pub use own_group::ProcessGroup;
