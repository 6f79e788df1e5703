//! The client's end of a connection ([`ClientConnection`]): typed calls to the agent, the
//! agent's authentication methods and `authenticate`, and `session/cancel`, which answers the
//! agent's pending permission requests for that session `cancelled` (rule
//! `turn.cancel-permission`). Version negotiation, session handles and prompts are in the
//! sibling modules `negotiate` and `session`.

use super::routes::Routes;
use super::states::SessionStates;
use super::turn_end::TurnWaiters;
use crate::auth::{AuthMethod, AuthRequired};
use crate::error::{Error, Misuse};
use crate::jsonrpc::Connection;
use crate::lifecycle::{Negotiated, SessionWork};
use crate::sync::lock;
use acp_types::support::rpc::{Method as _, Request, RpcError, ToAgent};
use acp_types::{v1, v2, Version};
use std::sync::{Arc, Mutex};

/// The client's end of a connection: cheap to clone, usable from any task.
#[derive(Clone)]
pub struct ClientConnection {
    pub(super) conn: Connection,
    pub(super) version: Negotiated,
    /// The agent's requests running per session, answered `cancelled` by `session/cancel`.
    pub(super) work: Arc<SessionWork>,
    pub(super) turns: Arc<TurnWaiters>,
    pub(super) routes: Arc<Routes>,
    /// The state of each v2 session, from the schema's `x-state`.
    pub(super) states: Arc<SessionStates>,
    /// The versions the client's handler speaks.
    pub(super) speaks: &'static [Version],
    /// The `authMethods` of the agent's `initialize` answer.
    pub(super) auth_methods: Arc<Mutex<Vec<AuthMethod>>>,
}

impl ClientConnection {
    /// The negotiated version (`None` before `initialize`).
    pub fn version(&self) -> Option<Version> {
        self.version.get()
    }

    /// A copy of a v2 session's state (see [`v2::state::SessionState`]), for clients that do not
    /// hold its handle; `None` when no message of the agent named the session yet.
    pub fn session_state_v2(&self, session: &v2::SessionId) -> Option<v2::state::SessionState> {
        self.states.snapshot(&session.0)
    }

    /// Drops what the client keeps of a v2 session's state (a handle does so when dropped).
    pub fn forget_session_state_v2(&self, session: &v2::SessionId) {
        self.states.forget(&session.0);
    }

    /// The underlying JSON-RPC connection, for what has no typed call here (extension methods,
    /// `_vendor/…`; raw requests).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// A typed request to the agent (only methods the agent receives), with an `auth_required`
    /// (-32000) refusal reported as [`Error::AuthRequired`], carrying the agent's methods.
    pub async fn request<M: Request + ToAgent>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.conn.request::<M>(params).await.map_err(|e| self.refused(e))
    }

    /// An `auth_required` answer as [`Error::AuthRequired`]; any other error as it is.
    fn refused(&self, e: Error) -> Error {
        match e {
            Error::Peer(error) if error.code == RpcError::AUTH_REQUIRED => {
                Error::AuthRequired(Box::new(AuthRequired { error, methods: self.auth_methods() }))
            }
            other => other,
        }
    }

    /// The authentication methods the agent listed in its `initialize` answer (empty before
    /// `initialize`, or when it listed none).
    pub fn auth_methods(&self) -> Vec<AuthMethod> {
        lock(&self.auth_methods).clone()
    }

    /// Authenticates with the method `method_id` of the agent's `authMethods`: `authenticate`
    /// in v1, `auth/login` in v2. Sends nothing and fails when the agent did not list that
    /// method ([`Misuse::UnknownAuthMethod`]), or when it is not an `agent` method
    /// ([`Misuse::NotProtocolDriven`]: a `terminal` method runs the agent as an interactive
    /// process instead, and a type this client does not know is not called): "Clients MUST call
    /// this method only with a method whose type defines a protocol-driven login flow, and MUST
    /// NOT call it when `authMethods` was omitted or empty" (v2 `auth/login`).
    pub async fn authenticate(&self, method_id: &str) -> Result<(), Error> {
        let methods = self.auth_methods();
        let Some(method) = methods.iter().find(|m| m.id == method_id) else {
            return Err(Misuse::UnknownAuthMethod { id: method_id.to_string(), listed: methods }.into());
        };
        if !method.is_protocol_driven() {
            return Err(Misuse::NotProtocolDriven(method.clone()).into());
        }
        match self.version() {
            Some(Version::V1) => {
                let request = v1::AuthenticateRequest::new(v1::AuthMethodId(method_id.to_string()));
                self.conn.request::<v1::methods::Authenticate>(&request).await.map(|_| ())
            }
            Some(Version::V2) => {
                let request = v2::LoginAuthRequest::new(v2::AuthMethodId(method_id.to_string()));
                self.conn.request::<v2::methods::AuthLogin>(&request).await.map(|_| ())
            }
            None => Err(Misuse::NotInitialized { method: v1::methods::Authenticate::METHOD.into() }.into()),
        }
    }

    /// Sends `session/cancel` and answers the agent's pending requests for that session that
    /// wait on the user (permission requests) with `cancelled` (rule `turn.cancel-permission`).
    pub async fn cancel_session(&self, session_id: &str) -> Result<(), Error> {
        self.work.cancel(session_id);
        match self.version() {
            Some(Version::V2) => {
                let note = v2::CancelSessionNotification::new(v2::SessionId(session_id.to_string()));
                self.conn.notify::<v2::methods::SessionCancel>(&note).await
            }
            // Before `initialize` the agent refuses it either way; v1's params are the same.
            _ => {
                let note = v1::CancelNotification::new(v1::SessionId(session_id.to_string()));
                self.conn.notify::<v1::methods::SessionCancel>(&note).await
            }
        }
    }
}

impl std::fmt::Debug for ClientConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConnection")
            .field("version", &self.version())
            .field("speaks", &self.speaks)
            .field("closed", &self.conn.is_closed())
            .finish_non_exhaustive()
    }
}
