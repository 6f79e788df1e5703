//! A terminal the client runs for a v1 agent: its output, its exit, and its release (also when
//! the handle is dropped, as the protocol asks).

use crate::error::Error;
use crate::jsonrpc::Connection;
use acp_types::v1;

/// A terminal the client runs for the agent ([`ClientV1::create_terminal`](super::calls::ClientV1::create_terminal)). Release it when done
/// ([`TerminalHandle::release`]); one dropped unreleased is released in the background.
pub struct TerminalHandle {
    conn: Connection,
    session_id: v1::SessionId,
    id: v1::TerminalId,
    released: bool,
}

impl TerminalHandle {
    pub(super) fn new(conn: Connection, session_id: v1::SessionId, id: v1::TerminalId) -> Self {
        TerminalHandle { conn, session_id, id, released: false }
    }

    /// The terminal's id (e.g. for a `terminal` tool call content).
    pub fn id(&self) -> &v1::TerminalId {
        &self.id
    }

    /// The output so far, whether it was truncated, and the exit status once the command exited
    /// (`terminal/output`).
    pub async fn output(&self) -> Result<v1::TerminalOutputResponse, Error> {
        let asked = v1::TerminalOutputRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.request::<v1::methods::TerminalOutput>(&asked).await
    }

    /// Waits until the command exits; its exit code or signal (`terminal/wait_for_exit`).
    pub async fn wait_for_exit(&self) -> Result<v1::WaitForTerminalExitResponse, Error> {
        let asked = v1::WaitForTerminalExitRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.request::<v1::methods::TerminalWaitForExit>(&asked).await
    }

    /// Kills the command, keeping the terminal (its output stays readable) (`terminal/kill`).
    pub async fn kill(&self) -> Result<(), Error> {
        let asked = v1::KillTerminalRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.request::<v1::methods::TerminalKill>(&asked).await.map(drop)
    }

    /// Kills the command if it still runs and frees the terminal (`terminal/release`).
    pub async fn release(mut self) -> Result<(), Error> {
        self.released = true;
        let asked = v1::ReleaseTerminalRequest::new(self.session_id.clone(), self.id.clone());
        self.conn.request::<v1::methods::TerminalRelease>(&asked).await.map(drop)
    }
}

impl Drop for TerminalHandle {
    fn drop(&mut self) {
        // "The Agent MUST release the terminal using `terminal/release` when it's no longer
        // needed" (v1 `ReleaseTerminalRequest`): also when a handler returned early with `?`.
        if self.released || self.conn.is_closed() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let asked = v1::ReleaseTerminalRequest::new(self.session_id.clone(), self.id.clone());
        let conn = self.conn.clone();
        runtime.spawn(async move {
            if let Err(e) = conn.request::<v1::methods::TerminalRelease>(&asked).await {
                tracing::warn!("acp: cannot release terminal {}: {e}", asked.terminal_id.0);
            }
        });
    }
}

impl std::fmt::Debug for TerminalHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TerminalHandle").field("session_id", &self.session_id).field("id", &self.id).finish()
    }
}
