//! The agent's calls to the client, typed, per version, for what agents do all the time (report
//! an update, ask permission, read and write a text file, run a terminal), each checking the
//! client capability it needs before anything is sent.
//!
//! Per version, because the methods differ: v1 has them all ([`ClientV1`]); the v2 schema has no
//! `fs/*` or `terminal/*` client methods (and its `ClientCapabilities` no `fs`/`terminal`), so
//! [`ClientV2`] reports updates and asks permission, neither of which a capability gates.

use super::context::AgentContext;
use super::terminal::TerminalHandle;
use crate::error::{Error, Misuse};
use acp_types::{v1, v2, Version};

impl AgentContext {
    /// The v1 client, to call from a v1 handler: `let v1 = cx.v1()?;`. Fails with
    /// [`Misuse::WrongVersion`] on a v2 connection.
    pub fn v1(&self) -> Result<ClientV1<'_>, Error> {
        if self.version != Version::V1 {
            return Err(Misuse::WrongVersion { wanted: Version::V1, negotiated: self.version }.into());
        }
        Ok(ClientV1 { cx: self, capabilities: self.v1_capabilities() })
    }

    /// The v2 client, to call from a v2 handler: `let v2 = cx.v2()?;`. Fails with
    /// [`Misuse::WrongVersion`] on a v1 connection.
    pub fn v2(&self) -> Result<ClientV2<'_>, Error> {
        if self.version != Version::V2 {
            return Err(Misuse::WrongVersion { wanted: Version::V2, negotiated: self.version }.into());
        }
        Ok(ClientV2 { cx: self, capabilities: self.v2_capabilities() })
    }
}

/// The client of a v1 connection, as an agent's handler calls it ([`AgentContext::v1`]). The
/// calls that a client capability gates fail with [`Misuse::NotAdvertised`], sending nothing,
/// when the client did not advertise it (`fs/read_text_file`: `fs.readTextFile`,
/// `fs/write_text_file`: `fs.writeTextFile`, `terminal/*`: `terminal`). Other requests, with
/// every field: [`AgentContext::request`].
pub struct ClientV1<'cx> {
    cx: &'cx AgentContext,
    capabilities: v1::ClientCapabilities,
}

impl ClientV1<'_> {
    /// What the client advertised in `initialize`.
    pub fn capabilities(&self) -> &v1::ClientCapabilities {
        &self.capabilities
    }

    /// Sends a `session/update`.
    pub async fn update(&self, session: &v1::SessionId, update: v1::SessionUpdate) -> Result<(), Error> {
        let note = v1::SessionNotification::new(session.clone(), update);
        self.cx.notify::<v1::methods::SessionUpdate>(&note).await
    }

    /// Asks the user (`session/request_permission`) to allow the tool call, offering `options`;
    /// returns the outcome (`Cancelled` when the client gave up on it, e.g. after `session/cancel`).
    pub async fn ask_permission(
        &self,
        session: &v1::SessionId,
        tool_call: v1::ToolCallUpdate,
        options: Vec<v1::PermissionOption>,
    ) -> Result<v1::RequestPermissionOutcome, Error> {
        let asked = v1::RequestPermissionRequest::new(session.clone(), tool_call, options);
        Ok(self.cx.request::<v1::methods::SessionRequestPermission>(&asked).await?.outcome)
    }

    /// The content of a text file, as the client sees it (its unsaved edits included):
    /// `fs/read_text_file`, which needs `clientCapabilities.fs.readTextFile`. `path` is absolute.
    pub async fn read_text_file(&self, session: &v1::SessionId, path: impl Into<String>) -> Result<String, Error> {
        let asked = v1::ReadTextFileRequest::new(session.clone(), path.into());
        Ok(self.cx.request::<v1::methods::FsReadTextFile>(&asked).await?.content)
    }

    /// Writes a text file through the client (`fs/write_text_file`, which needs
    /// `clientCapabilities.fs.writeTextFile`). `path` is absolute.
    pub async fn write_text_file(
        &self,
        session: &v1::SessionId,
        path: impl Into<String>,
        content: impl Into<String>,
    ) -> Result<(), Error> {
        let asked = v1::WriteTextFileRequest::new(session.clone(), path.into(), content.into());
        self.cx.request::<v1::methods::FsWriteTextFile>(&asked).await.map(drop)
    }

    /// Runs `command` with `args` in a terminal of the client's (`terminal/create`, which needs
    /// `clientCapabilities.terminal`).
    pub async fn create_terminal<I>(
        &self,
        session: &v1::SessionId,
        command: impl Into<String>,
        args: I,
    ) -> Result<TerminalHandle, Error>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let mut asked = v1::CreateTerminalRequest::new(session.clone(), command.into());
        asked.args = Some(args.into_iter().map(Into::into).collect());
        self.create_terminal_with(asked).await
    }

    /// [`ClientV1::create_terminal`] with every field of the request (`env`, `cwd`,
    /// `outputByteLimit`).
    pub async fn create_terminal_with(&self, request: v1::CreateTerminalRequest) -> Result<TerminalHandle, Error> {
        let created = self.cx.request::<v1::methods::TerminalCreate>(&request).await?;
        Ok(TerminalHandle::new(self.cx.conn.clone(), request.session_id, created.terminal_id))
    }
}

/// The client of a v2 connection, as an agent's handler calls it ([`AgentContext::v2`], or the
/// shorter [`Turn`](super::turn::Turn) methods in a prompt turn). The v2 schema has no `fs/*` or
/// `terminal/*` client methods; what it has (updates, permission requests) no capability gates.
pub struct ClientV2<'cx> {
    cx: &'cx AgentContext,
    capabilities: v2::ClientCapabilities,
}

impl ClientV2<'_> {
    /// What the client advertised in `initialize`.
    pub fn capabilities(&self) -> &v2::ClientCapabilities {
        &self.capabilities
    }

    /// Sends a `session/update`.
    pub async fn update(&self, session: &v2::SessionId, update: v2::SessionUpdate) -> Result<(), Error> {
        let note = v2::UpdateSessionNotification::new(session.clone(), update);
        self.cx.notify::<v2::methods::SessionUpdate>(&note).await
    }

    /// Asks the user (`session/request_permission`), under `title`, to choose one of `options`;
    /// returns the outcome. Set the request's `description`/`subject` with
    /// [`AgentContext::request`] and `v2::methods::SessionRequestPermission`.
    pub async fn ask_permission(
        &self,
        session: &v2::SessionId,
        title: impl Into<String>,
        options: Vec<v2::PermissionOption>,
    ) -> Result<v2::RequestPermissionOutcome, Error> {
        let asked = v2::RequestPermissionRequest::new(session.clone(), title.into(), options);
        Ok(self.cx.request::<v2::methods::SessionRequestPermission>(&asked).await?.outcome)
    }
}
