//! Starting an agent as a child process and ending it, with everything it started.
//!
//! Agents are often started through wrappers (`npx`, `uvx`, a shell script) that start a child
//! that starts the agent. Killing only the direct child leaves the agent running, so on Unix the
//! child runs in a process group of its own and the whole group is signalled:
//! [`AgentProcess::shutdown`] closes the agent's stdin (its cue to exit), waits
//! [`SpawnOptions::grace`] for the group to exit, then sends `SIGTERM` to the group, waits
//! [`SpawnOptions::term_grace`], and sends `SIGKILL`. Dropping an [`AgentProcess`] cannot wait:
//! it closes stdin at once and leaves the grace, `SIGTERM` and `SIGKILL` to a thread, which does
//! not outlive this process (see there): await `shutdown` before exiting. Elsewhere only the
//! direct child is killed.
//!
//! The agent's stderr never reaches the protocol stream (stdout): it is passed through, captured
//! in a bounded buffer ([`StderrCapture`]), or discarded ([`Stderr`]).
//!
//! A command that is not an agent (a client's terminal command), with the stdio it sets, runs in
//! a group of its own the same way through [`ProcessGroup`].
//!
//! The implementation is the `acp-process` crate's, shared with the `acp` tool and the
//! developer tasks.

pub use acp_process::{
    spawn, spawn_command, AgentProcess, AgentStdin, ProcessGroup, SpawnOptions, Stderr, StderrCapture,
};
