//! The chain's processes: a [`Component`] is a program and its arguments; [`start`] spawns them
//! all through `acp-process` (each in a process group of its own, so that what a component
//! starts, behind a wrapper such as `npx`, is ended with it) and [`Spawned::end`] ends them as
//! one unit: every stdin closed at once, then each group given the grace to exit by itself,
//! then `SIGTERM`, then `SIGKILL` ([`AgentProcess::shutdown`], all concurrently).

use std::ffi::{OsStr, OsString};
use std::io;
use tokio::process::ChildStdout;

use crate::spawn::{AgentProcess, AgentStdin, SpawnOptions};

/// One program of a chain: a proxy, or the agent at its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Component {
    program: OsString,
    args: Vec<OsString>,
    /// Set in its environment, over what it inherits.
    env: Vec<(OsString, OsString)>,
}

impl Component {
    /// `program args…`, run without a shell (split a command line into them first).
    pub fn new<I, S>(program: impl Into<OsString>, args: I) -> Component
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        Component { program: program.into(), args: args.into_iter().map(Into::into).collect(), env: Vec::new() }
    }

    /// Sets `key` to `value` in its environment (it inherits the conductor's otherwise).
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Component {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The program.
    pub fn program(&self) -> &OsStr {
        &self.program
    }

    /// Its arguments.
    pub fn args(&self) -> &[OsString] {
        &self.args
    }

    /// The program's name for messages.
    pub(super) fn name(&self) -> String {
        self.program.to_string_lossy().into_owned()
    }
}

/// A started component's protocol stream: its stdin (ours to write) and stdout (to read).
pub(super) struct Started {
    pub(super) stdin: AgentStdin,
    pub(super) stdout: ChildStdout,
}

/// The processes of a started chain.
pub(super) struct Spawned {
    processes: Vec<AgentProcess>,
}

/// Starts every component, first to last. If one cannot be started, those already started are
/// ended and the error names the component.
pub(super) async fn start(components: &[Component], options: &SpawnOptions) -> io::Result<(Spawned, Vec<Started>)> {
    if components.is_empty() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "a chain needs at least one component (the agent)"));
    }
    let mut spawned = Spawned { processes: Vec::with_capacity(components.len()) };
    let mut started = Vec::with_capacity(components.len());
    for (index, component) in components.iter().enumerate() {
        let mut command = tokio::process::Command::new(&component.program);
        command.args(&component.args).envs(component.env.iter().map(|(k, v)| (k, v)));
        match crate::spawn::spawn_command(command, options) {
            Ok((process, stdin, stdout)) => {
                spawned.processes.push(process);
                started.push(Started { stdin, stdout });
            }
            Err(e) => {
                drop(started);
                spawned.end().await;
                let name = component.name();
                return Err(io::Error::new(e.kind(), format!("cannot start component {index} (`{name}`): {e}")));
            }
        }
    }
    Ok((spawned, started))
}

impl Spawned {
    /// Ends every component at once: stdins closed together, then per group the grace,
    /// `SIGTERM`, `SIGKILL`; returns once every group is gone.
    pub(super) async fn end(self) {
        let endings: Vec<_> = self
            .processes
            .into_iter()
            .enumerate()
            .map(|(index, process)| {
                // Each closes its stdin as it starts: all at once.
                tokio::spawn(async move { (index, process.shutdown().await) })
            })
            .collect();
        for ending in endings {
            match ending.await {
                Ok((index, Ok(status))) => tracing::debug!("acp conductor: component {index} ended: {status}"),
                Ok((index, Err(e))) => tracing::warn!("acp conductor: component {index}: {e}"),
                Err(e) => tracing::warn!("acp conductor: ending a component failed: {e}"),
            }
        }
    }
}
