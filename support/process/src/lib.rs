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
//!   another, `SIGKILL`); dropping the [`AgentProcess`] ends it without waiting (`SIGTERM` at once,
//!   `SIGKILL` after the grace period, from a thread).
//! - Blocking, on std alone: [`GroupChild`] starts a [`std::process::Command`] in a group of its
//!   own and ends the group ([`GroupChild::end`]; dropping it kills the group);
//!   [`run_with_timeout`] runs one to completion with its output captured, the group killed at
//!   the time limit. The developer tasks are synchronous, and a blocking API keeps them free of
//!   an async runtime (`default-features = false` builds no tokio at all).
//!
//! This crate depends on no generated code, so that the code generator can use it while the
//! generated crates are stale or broken.
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
pub use agent::{spawn, spawn_command, AgentProcess, AgentStdin, SpawnOptions, Stderr, StderrCapture};
pub use blocking::{run_with_timeout, Finished, GroupChild};
