//! The agent's calls to the client, typed, on the handler's [`Context`]: what the client advertised
//! in `initialize` ([`Context::client_capabilities`]), and helpers for what agents do all the time
//! (report an update, ask permission, read and write a text file, run a terminal), each checking
//! the client capability it needs before anything is sent.
//!
//! Per version, because the methods differ: v1 has them all ([`ClientV1`]); the v2 schema has no
//! `fs/*` or `terminal/*` client methods (and its `ClientCapabilities` no `fs`/`terminal`), so
//! [`ClientV2`] reports updates and asks permission, neither of which a capability gates.

use crate::connection::Error;
use crate::session::Context;
use crate::turn::Turn;
use acp_types::support::rpc::{Method as _, Request};
use acp_types::{v1, v2, Version};

/// What the client advertised in `initialize`, in the negotiated version's types.
#[derive(Debug, Clone, PartialEq)]
// One per connection, matched on rather than moved about: boxing would only cost an allocation.
#[allow(clippy::large_enum_variant)]
pub enum ClientCapabilities {
    /// v1: `InitializeRequest.clientCapabilities` (`fs.readTextFile`, `fs.writeTextFile`,
    /// `terminal`, …), with the schema's defaults where the client left them out.
    V1(v1::ClientCapabilities),
    /// v2: `InitializeRequest.capabilities` (`auth`, `elicitation`; no `fs` or `terminal`).
    V2(v2::ClientCapabilities),
}

impl ClientCapabilities {
    /// The capabilities in an `initialize` request of `version`; `None` when the params do not
    /// decode (the request then fails anyway). Unreadable capabilities count as none advertised
    /// (the schema's `x-deserialize-default-on-error`).
    pub(crate) fn of_initialize(version: Version, params: Option<&serde_json::value::RawValue>) -> Option<Self> {
        use acp_types::support::rpc::decode_params;
        match version {
            Version::V1 => decode_params::<v1::InitializeRequest>("initialize", params)
                .ok()
                .map(|r| ClientCapabilities::V1(r.client_capabilities.into_inner())),
            Version::V2 => decode_params::<v2::InitializeRequest>("initialize", params)
                .ok()
                .map(|r| ClientCapabilities::V2(r.capabilities.into_inner())),
        }
    }
}

impl Context {
    /// What the client advertised in its `initialize` (the last successful one); `None` before
    /// it (the `initialize` handler has them in its params), and on the client's side of a
    /// connection.
    pub fn client_capabilities(&self) -> Option<ClientCapabilities> {
        self.advertised.get()
    }

    /// The v1 client, to call from a v1 handler: `let v1 = cx.v1()?;`. Fails with
    /// [`Error::WrongVersion`] on a v2 connection.
    pub fn v1(&self) -> Result<ClientV1<'_>, Error> {
        if self.version != Version::V1 {
            return Err(Error::WrongVersion { wanted: Version::V1, negotiated: self.version });
        }
        let capabilities = match self.client_capabilities() {
            Some(ClientCapabilities::V1(c)) => c,
            // No client initialized this side of the connection: nothing advertised.
            _ => v1::ClientCapabilities::new(),
        };
        Ok(ClientV1 { cx: self, capabilities })
    }

    /// The v2 client, to call from a v2 handler: `let v2 = cx.v2()?;`. Fails with
    /// [`Error::WrongVersion`] on a v1 connection.
    pub fn v2(&self) -> Result<ClientV2<'_>, Error> {
        if self.version != Version::V2 {
            return Err(Error::WrongVersion { wanted: Version::V2, negotiated: self.version });
        }
        let capabilities = match self.client_capabilities() {
            Some(ClientCapabilities::V2(c)) => c,
            _ => v2::ClientCapabilities::new(),
        };
        Ok(ClientV2 { cx: self, capabilities })
    }
}

/// The client of a v1 connection, as an agent's handler calls it ([`Context::v1`]). The calls
/// that a client capability gates fail with [`Error::NotAdvertised`], sending nothing, when the
/// client did not advertise it (`fs/read_text_file`: `fs.readTextFile`, `fs/write_text_file`:
/// `fs.writeTextFile`, `terminal/*`: `terminal`).
pub struct ClientV1<'cx> {
    cx: &'cx Context,
    capabilities: v1::ClientCapabilities,
}

impl ClientV1<'_> {
    /// What the client advertised in `initialize`.
    pub fn capabilities(&self) -> &v1::ClientCapabilities {
        &self.capabilities
    }

    /// Any request to the client, checked against the capability it needs (if any): the way to
    /// the fields the shorter helpers leave out (`line`/`limit`, a terminal's `env`, …).
    pub async fn request<M: Request>(&self, params: &M::Params) -> Result<M::Response, Error> {
        v1_gate(M::METHOD, &self.capabilities)?;
        self.cx.request::<M>(params).await
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
        Ok(self.request::<v1::methods::SessionRequestPermission>(&asked).await?.outcome)
    }

    /// The content of a text file, as the client sees it (its unsaved edits included):
    /// `fs/read_text_file`, which needs `clientCapabilities.fs.readTextFile`. `path` is absolute.
    pub async fn read_text_file(&self, session: &v1::SessionId, path: impl Into<String>) -> Result<String, Error> {
        let asked = v1::ReadTextFileRequest::new(session.clone(), path.into());
        Ok(self.request::<v1::methods::FsReadTextFile>(&asked).await?.content)
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
        self.request::<v1::methods::FsWriteTextFile>(&asked).await.map(drop)
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
        let created = self.request::<v1::methods::TerminalCreate>(&request).await?;
        Ok(TerminalHandle {
            conn: self.cx.conn.clone(),
            session_id: request.session_id,
            id: created.terminal_id,
            released: false,
        })
    }
}

/// The v1 client capability `method` needs, by its path in the `initialize` params (the rules
/// `cap.client-fs` and `cap.client-terminal` that `acp check` holds agents to).
fn v1_gate(method: &str, capabilities: &v1::ClientCapabilities) -> Result<(), Error> {
    use v1::methods::{
        FsReadTextFile, FsWriteTextFile, TerminalCreate, TerminalKill, TerminalOutput, TerminalRelease,
        TerminalWaitForExit,
    };
    let terminal = [
        TerminalCreate::METHOD,
        TerminalKill::METHOD,
        TerminalOutput::METHOD,
        TerminalRelease::METHOD,
        TerminalWaitForExit::METHOD,
    ];
    let (needed, advertised) = match method {
        m if m == FsReadTextFile::METHOD => ("clientCapabilities.fs.readTextFile", *capabilities.fs.read_text_file),
        m if m == FsWriteTextFile::METHOD => ("clientCapabilities.fs.writeTextFile", *capabilities.fs.write_text_file),
        m if terminal.contains(&m) => ("clientCapabilities.terminal", *capabilities.terminal),
        _ => return Ok(()),
    };
    if advertised {
        Ok(())
    } else {
        Err(Error::NotAdvertised(needed))
    }
}

/// A terminal the client runs for the agent ([`ClientV1::create_terminal`]). Release it when done
/// ([`TerminalHandle::release`]); one dropped unreleased is released in the background.
pub struct TerminalHandle {
    conn: crate::Connection,
    session_id: v1::SessionId,
    id: v1::TerminalId,
    released: bool,
}

impl TerminalHandle {
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

/// The client of a v2 connection, as an agent's handler calls it ([`Context::v2`], or the
/// shorter [`Turn`] methods in a prompt turn). The v2 schema has no `fs/*` or `terminal/*`
/// client methods; what it has (updates, permission requests) no capability gates.
pub struct ClientV2<'cx> {
    cx: &'cx Context,
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
    /// [`Context::request`] and `v2::methods::SessionRequestPermission`.
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

impl Turn {
    /// What the client advertised in `initialize` (v2: `auth`, `elicitation`).
    pub fn client_capabilities(&self) -> v2::ClientCapabilities {
        match self.cx.client_capabilities() {
            Some(ClientCapabilities::V2(c)) => c,
            _ => v2::ClientCapabilities::new(),
        }
    }

    /// Asks the user (`session/request_permission`) in this turn's session, under `title`, to
    /// choose one of `options`; returns the outcome (`Cancelled` when the client gave up on it,
    /// e.g. after `session/cancel`).
    pub async fn ask_permission(
        &self,
        title: impl Into<String>,
        options: Vec<v2::PermissionOption>,
    ) -> Result<v2::RequestPermissionOutcome, Error> {
        let asked = v2::RequestPermissionRequest::new(self.session_id.clone(), title.into(), options);
        Ok(self.cx.request::<v2::methods::SessionRequestPermission>(&asked).await?.outcome)
    }
}
