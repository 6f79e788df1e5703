//! The client's typed session API: a [`v1::Session`] or [`v2::Session`] per `session/new` (or
//! load, resume), and for each prompt its [`TurnUpdates`]: the typed updates of that turn as a
//! stream, then its outcome.
//!
//! ```no_run
//! # async fn run(conn: acp_rpc::client::ClientConnection) -> Result<(), acp_rpc::Error> {
//! use acp_rpc::client::{Initialized, Offer};
//! use acp_rpc::types::{v1, v2};
//! let info = v2::Implementation::new("my-client".into(), "1.0".into());
//! let offer = Offer::new()
//!     .v1(v1::InitializeRequest::new(v1::ProtocolVersion(1)))
//!     .v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info));
//! // The newest version both speak: v2 if the agent does, else v1.
//! let Initialized::V1(_) = conn.negotiate(offer).await? else { return Ok(()) /* the v2 API */ };
//! let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/work".into(), vec![])).await?;
//! let text = v1::ContentBlock::from(v1::TextContent::new("hello".into()));
//! let mut turn = session.prompt(vec![text]).await;
//! while let Some(update) = turn.next().await {
//!     println!("{update:?}");
//! }
//! println!("{}", turn.outcome().await?.stop_reason);
//! # Ok(()) }
//! ```
//!
//! The updates of a session reach its handle as well as the client's `session_update` handler,
//! after that handler has seen them; those that come between turns wait in the session
//! ([`v1::Session::next_update`]). A v1 prompt completes with its answer, once the handler has
//! seen every update before it (rule `turn.v1-updates-before-response`); a v2 prompt with the
//! `idle` that ends its turn ([`TurnEnd`]).

use super::connection::ClientConnection;
use super::turn_end::TurnEnd;
use crate::error::Error;
use std::future::Future;
use std::pin::Pin;
use tokio::sync::mpsc;

impl ClientConnection {
    /// `session/new` (v1), and a handle on the session its answer names.
    pub async fn new_session_v1(&self, request: acp_types::v1::NewSessionRequest) -> Result<v1::Session, Error> {
        let _opening = self.routes.opening();
        let answer = self.request::<acp_types::v1::methods::SessionNew>(&request).await?;
        // The updates the agent sent before its answer are routed (held) by now.
        self.conn.sync_notifications().await;
        Ok(v1::Session::open(self, answer.session_id))
    }

    /// `session/new` (v2), and a handle on the session its answer names.
    pub async fn new_session_v2(&self, request: acp_types::v2::NewSessionRequest) -> Result<v2::Session, Error> {
        let _opening = self.routes.opening();
        let answer = self.request::<acp_types::v2::methods::SessionNew>(&request).await?;
        self.conn.sync_notifications().await;
        self.states.apply(&answer.session_id.0, &answer);
        Ok(v2::Session::open(self, answer.session_id))
    }

    /// `session/load` (v1; the agent must advertise `loadSession`), and a handle on the session:
    /// the history the agent replays before answering comes first in its updates.
    pub async fn load_session_v1(&self, request: acp_types::v1::LoadSessionRequest) -> Result<v1::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        self.request::<acp_types::v1::methods::SessionLoad>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(v1::Session::open(self, id))
    }

    /// `session/resume` (v1), and a handle on the session.
    pub async fn resume_session_v1(&self, request: acp_types::v1::ResumeSessionRequest) -> Result<v1::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        self.request::<acp_types::v1::methods::SessionResume>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(v1::Session::open(self, id))
    }

    /// `session/resume` (v2), and a handle on the session: the replayed history and the state
    /// snapshot the agent sends before answering come first in its updates.
    pub async fn resume_session_v2(&self, request: acp_types::v2::ResumeSessionRequest) -> Result<v2::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        let answer = self.request::<acp_types::v2::methods::SessionResume>(&request).await?;
        self.conn.sync_notifications().await;
        self.states.apply(&id.0, &answer);
        Ok(v2::Session::open(self, id))
    }

    /// A v1 prompt turn: sends `session/prompt` and returns its answer (the stop reason, and
    /// usage where the agent reports it) once the client's handler has handled every update the
    /// agent sent before it.
    pub async fn prompt_v1(
        &self,
        prompt: &acp_types::v1::PromptRequest,
    ) -> Result<acp_types::v1::PromptResponse, Error> {
        let done = self.request::<acp_types::v1::methods::SessionPrompt>(prompt).await?;
        self.conn.sync_notifications().await;
        Ok(done)
    }

    /// A v2 prompt turn: sends `session/prompt` and waits for the end of the turn it starts:
    /// the first `idle` state update after this prompt's `running` (an `idle` snapshot before
    /// that, such as the one after `session/new`, is not counted), once the client's handler has
    /// handled it and every update before it.
    pub async fn prompt_v2(&self, prompt: &acp_types::v2::PromptRequest) -> Result<TurnEnd, Error> {
        // Waiting starts before the request: `running` may come before the answer.
        let waiting = self.turns.wait(&prompt.session_id.0);
        let answer = self.request::<acp_types::v2::methods::SessionPrompt>(prompt).await?;
        let mut waiting = waiting;
        tokio::select! {
            idle = &mut waiting.done => match idle {
                Ok(idle) => Ok(TurnEnd { message_id: answer.message_id, idle }),
                Err(_) => Err(Error::Closed),
            },
            _ = self.conn.closed() => Err(Error::Closed),
        }
    }
}

type Outcome<T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>;

/// A turn whose prompt is already on its way: the call is polled once here, which queues the
/// request (a later `cancel` from the same task is written after it).
async fn start<'s, U, T>(updates: &'s mut mpsc::UnboundedReceiver<U>, mut end: Outcome<T>) -> TurnUpdates<'s, U, T> {
    match std::future::poll_fn(|cx| std::task::Poll::Ready(end.as_mut().poll(cx))).await {
        std::task::Poll::Ready(outcome) => TurnUpdates { updates, end: None, outcome: Some(outcome) },
        std::task::Poll::Pending => TurnUpdates { updates, end: Some(end), outcome: None },
    }
}

/// One prompt turn: its updates, in order, then its outcome (`v1::PromptResponse` or
/// [`TurnEnd`]).
pub struct TurnUpdates<'s, U, T> {
    updates: &'s mut mpsc::UnboundedReceiver<U>,
    end: Option<Outcome<T>>,
    outcome: Option<Result<T, Error>>,
}

impl<U, T> TurnUpdates<'_, U, T> {
    /// The next update of the turn; `None` once the turn has ended and its updates were all
    /// taken.
    pub async fn next(&mut self) -> Option<U> {
        if let Ok(update) = self.updates.try_recv() {
            return Some(update);
        }
        let end = self.end.as_mut()?;
        tokio::select! {
            biased;
            update = self.updates.recv() => update,
            outcome = end => {
                // The turn ended after every update of it was routed: what is queued is all.
                self.end = None;
                self.outcome = Some(outcome);
                self.updates.try_recv().ok()
            }
        }
    }

    /// How the turn ended (updates not taken with [`TurnUpdates::next`] are dropped).
    pub async fn outcome(mut self) -> Result<T, Error> {
        if let Some(end) = self.end.take() {
            self.outcome = Some(end.await);
        }
        while self.updates.try_recv().is_ok() {}
        self.outcome.unwrap_or(Err(Error::Closed))
    }
}

macro_rules! session_handle {
    ($version:ident, $open:ident, $close:ident, $state:ty) => {
        /// A session of this version: prompts, cancel, and the updates that come between turns.
        pub struct Session {
            conn: ClientConnection,
            id: acp_types::$version::SessionId,
            updates: mpsc::UnboundedReceiver<acp_types::$version::SessionUpdate>,
            #[allow(dead_code)] // v1 keeps no state
            state: tokio::sync::watch::Receiver<$state>,
        }

        impl Session {
            pub(super) fn open(conn: &ClientConnection, id: acp_types::$version::SessionId) -> Self {
                let updates = conn.routes.$open(&id.0);
                let state = watch_state(conn, &id.0);
                Session { conn: conn.clone(), id, updates, state }
            }

            /// The session's id.
            pub fn id(&self) -> &acp_types::$version::SessionId {
                &self.id
            }

            /// An update that came outside a turn (after `session/new`, say), if one waits.
            pub fn next_update(&mut self) -> Option<acp_types::$version::SessionUpdate> {
                self.updates.try_recv().ok()
            }

            /// Sends `session/cancel`: the running turn ends `cancelled`, and the agent's pending
            /// permission requests for this session are answered `cancelled`.
            pub async fn cancel(&self) -> Result<(), Error> {
                self.conn.cancel_session(&self.id.0).await
            }

            /// The connection, for the session methods this handle has no shortcut for.
            pub fn connection(&self) -> &ClientConnection {
                &self.conn
            }

            /// `session/set_config_option`: sets one of the session's configuration options.
            pub async fn set_config_option(
                &self,
                request: acp_types::$version::SetSessionConfigOptionRequest,
            ) -> Result<acp_types::$version::SetSessionConfigOptionResponse, Error> {
                let answer =
                    self.conn.request::<acp_types::$version::methods::SessionSetConfigOption>(&request).await?;
                answered(&self.conn, &self.id.0, &answer);
                Ok(answer)
            }

            /// `session/close` (the agent ends the running turn first) and drops the handle.
            pub async fn close(self) -> Result<(), Error> {
                let request = acp_types::$version::CloseSessionRequest::new(self.id.clone());
                self.conn.request::<acp_types::$version::methods::SessionClose>(&request).await.map(|_| ())
            }
        }

        impl std::fmt::Debug for Session {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct("Session").field("id", &self.id).finish_non_exhaustive()
            }
        }

        impl Drop for Session {
            fn drop(&mut self) {
                self.conn.routes.$close(&self.id.0);
                forget(&self.conn, &self.id.0);
            }
        }
    };
}

/// The v1 session API.
pub mod v1 {
    use super::*;
    use acp_types::v1 as acp;
    session_handle!(v1, open_v1, close_v1, ());

    /// v1 has no `x-state`: an answer changes no kept state.
    fn answered<T>(_: &ClientConnection, _: &str, _: &T) {}

    fn forget(_: &ClientConnection, _: &str) {}

    fn watch_state(_: &ClientConnection, _: &str) -> tokio::sync::watch::Receiver<()> {
        tokio::sync::watch::Sender::new(()).subscribe()
    }

    impl Session {
        /// Sends `session/prompt` (queued when this returns); the turn's updates and then its
        /// answer (stop reason, usage).
        pub async fn prompt(
            &mut self,
            prompt: Vec<acp::ContentBlock>,
        ) -> TurnUpdates<'_, acp::SessionUpdate, acp::PromptResponse> {
            let conn = self.conn.clone();
            let request = acp::PromptRequest::new(self.id.clone(), prompt);
            start(&mut self.updates, Box::pin(async move { conn.prompt_v1(&request).await })).await
        }

        /// `session/set_mode`: switches the session to one of its modes.
        pub async fn set_mode(&self, mode: acp::SessionModeId) -> Result<acp::SetSessionModeResponse, Error> {
            let request = acp::SetSessionModeRequest::new(self.id.clone(), mode);
            self.conn.request::<acp::methods::SessionSetMode>(&request).await
        }
    }
}

/// The v2 session API.
pub mod v2 {
    use super::*;
    use acp_types::support::state::Stateful;
    use acp_types::v2 as acp;
    use acp_types::v2::state::SessionState;
    use tokio::sync::watch;
    session_handle!(v2, open_v2, close_v2, SessionState);

    /// An answer of the agent that the schema says changes the session's state.
    fn answered<T: Stateful>(conn: &ClientConnection, session: &str, answer: &T) {
        conn.states.apply(session, answer);
    }

    fn forget(conn: &ClientConnection, session: &str) {
        conn.states.forget(session);
    }

    fn watch_state(conn: &ClientConnection, session: &str) -> watch::Receiver<SessionState> {
        conn.states.watch(session)
    }

    impl Session {
        /// The session's state as the agent's messages so far made it (see [`SessionState`]:
        /// messages by id with their content, tool calls, plans, the `state` of the turn, usage,
        /// …). A read lock: drop it before awaiting.
        ///
        /// ```no_run
        /// # async fn run(mut session: acp_rpc::client::v2::Session) -> Result<(), acp_rpc::Error> {
        /// use acp_rpc::types::v2;
        /// let text = v2::ContentBlock::from(v2::TextContent::new("hello".into()));
        /// session.prompt(vec![text]).await.outcome().await?;
        /// let state = session.state();
        /// for (id, message) in state.agent_message.iter() {
        ///     println!("{id}: {:?}", message.map(|m| m.content));
        /// }
        /// # Ok(()) }
        /// ```
        pub fn state(&self) -> watch::Ref<'_, SessionState> {
            self.state.borrow()
        }

        /// The session's state as a stream of changes: `changed().await` on the receiver
        /// returns once a message changed it.
        pub fn state_changes(&self) -> watch::Receiver<SessionState> {
            self.state.clone()
        }

        /// Sends `session/prompt` (queued when this returns); the turn's updates and then its
        /// end: the message id of the prompt and the `idle` update with the stop reason (and
        /// usage where reported).
        pub async fn prompt(&mut self, prompt: Vec<acp::ContentBlock>) -> TurnUpdates<'_, acp::SessionUpdate, TurnEnd> {
            let conn = self.conn.clone();
            let request = acp::PromptRequest::new(self.id.clone(), prompt);
            start(&mut self.updates, Box::pin(async move { conn.prompt_v2(&request).await })).await
        }
    }
}
