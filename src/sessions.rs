//! The client's typed session API: a [`v1::Session`] or [`v2::Session`] per `session/new`, and
//! for each prompt a [`Turn`]: the typed updates of that turn as a stream, then its outcome.
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
//! ([`v1::Session::next_update`]).

use crate::client::ClientConnection;
use crate::connection::Error;
use crate::sync::lock;
use crate::turn::TurnEnd;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use tokio::sync::mpsc;

/// Where each session's updates go, per version (only sessions with a handle). While a
/// `session/new` is in flight, updates of sessions without a handle are held, so that the new
/// handle gets those its session sent before the answer.
#[derive(Default)]
pub(crate) struct Routes {
    v1: Mutex<Route<acp_types::v1::SessionUpdate>>,
    v2: Mutex<Route<acp_types::v2::SessionUpdate>>,
    opening: AtomicUsize,
}

struct Route<U> {
    to: HashMap<String, mpsc::UnboundedSender<U>>,
    held: HashMap<String, Vec<U>>,
}

impl<U> Default for Route<U> {
    fn default() -> Self {
        Route { to: HashMap::new(), held: HashMap::new() }
    }
}

impl<U> Route<U> {
    fn wants(&self, session: &str, opening: bool) -> bool {
        opening || self.to.contains_key(session)
    }

    fn send(&mut self, session: &str, update: U, opening: bool) {
        match self.to.get(session) {
            Some(tx) => {
                if let Err(mpsc::error::SendError(_)) = tx.send(update) {
                    self.to.remove(session); // the handle was dropped
                }
            }
            None if opening => self.held.entry(session.to_string()).or_default().push(update),
            None => {}
        }
    }

    /// A handle for `session`: its channel, with what was held for it first.
    fn open(&mut self, session: &str) -> mpsc::UnboundedReceiver<U> {
        let (tx, rx) = mpsc::unbounded_channel();
        for update in self.held.remove(session).unwrap_or_default() {
            let _ = tx.send(update);
        }
        self.to.insert(session.to_string(), tx);
        rx
    }
}

/// Counts a `session/new` in flight; the last one to end drops what no handle claimed.
pub(crate) struct Opening<'a>(&'a Routes);

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.0.opening.fetch_sub(1, Ordering::SeqCst) == 1 {
            lock(&self.0.v1).held.clear();
            lock(&self.0.v2).held.clear();
        }
    }
}

impl Routes {
    /// Holds updates of sessions without a handle until the returned guard is dropped.
    pub(crate) fn opening(&self) -> Opening<'_> {
        self.opening.fetch_add(1, Ordering::SeqCst);
        Opening(self)
    }

    fn is_opening(&self) -> bool {
        self.opening.load(Ordering::SeqCst) > 0
    }

    /// Whether an update of `session` is wanted (a handle, or a `session/new` in flight).
    pub(crate) fn wants_v1(&self, session: &str) -> bool {
        lock(&self.v1).wants(session, self.is_opening())
    }

    pub(crate) fn wants_v2(&self, session: &str) -> bool {
        lock(&self.v2).wants(session, self.is_opening())
    }

    pub(crate) fn send_v1(&self, session: &str, update: acp_types::v1::SessionUpdate) {
        lock(&self.v1).send(session, update, self.is_opening());
    }

    pub(crate) fn send_v2(&self, session: &str, update: acp_types::v2::SessionUpdate) {
        lock(&self.v2).send(session, update, self.is_opening());
    }
}

type Outcome<T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send>>;

/// A turn whose prompt is already on its way: the call is polled once here, which queues the
/// request (a later `cancel` from the same task is written after it).
async fn start<'s, U, T>(updates: &'s mut mpsc::UnboundedReceiver<U>, mut end: Outcome<T>) -> Turn<'s, U, T> {
    match std::future::poll_fn(|cx| std::task::Poll::Ready(end.as_mut().poll(cx))).await {
        std::task::Poll::Ready(outcome) => Turn { updates, end: None, outcome: Some(outcome) },
        std::task::Poll::Pending => Turn { updates, end: Some(end), outcome: None },
    }
}

/// One prompt turn: its updates, in order, then its outcome (`v1::PromptResponse` or
/// [`TurnEnd`]).
pub struct Turn<'s, U, T> {
    updates: &'s mut mpsc::UnboundedReceiver<U>,
    end: Option<Outcome<T>>,
    outcome: Option<Result<T, Error>>,
}

impl<U, T> Turn<'_, U, T> {
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

    /// How the turn ended (updates not taken with [`Turn::next`] are dropped).
    pub async fn outcome(mut self) -> Result<T, Error> {
        if let Some(end) = self.end.take() {
            self.outcome = Some(end.await);
        }
        while self.updates.try_recv().is_ok() {}
        self.outcome.unwrap_or(Err(Error::Closed))
    }
}

macro_rules! session_handle {
    ($version:ident) => {
        /// A session of this version: prompts, cancel, and the updates that come between turns.
        pub struct Session {
            conn: ClientConnection,
            /// The session's id.
            pub id: acp_types::$version::SessionId,
            updates: mpsc::UnboundedReceiver<acp_types::$version::SessionUpdate>,
        }

        impl Session {
            pub(crate) fn open(conn: &ClientConnection, id: acp_types::$version::SessionId) -> Self {
                let updates = lock(&conn.routes().$version).open(&id.0);
                Session { conn: conn.clone(), id, updates }
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
                self.conn.request::<acp_types::$version::methods::SessionSetConfigOption>(&request).await
            }

            /// `session/close` (the agent ends the running turn first) and drops the handle.
            pub async fn close(self) -> Result<(), Error> {
                let request = acp_types::$version::CloseSessionRequest::new(self.id.clone());
                self.conn.request::<acp_types::$version::methods::SessionClose>(&request).await.map(|_| ())
            }
        }

        impl Drop for Session {
            fn drop(&mut self) {
                lock(&self.conn.routes().$version).to.remove(&self.id.0);
            }
        }
    };
}

/// The v1 session API.
pub mod v1 {
    use super::*;
    use acp_types::v1 as acp;
    session_handle!(v1);

    impl Session {
        /// Sends `session/prompt` (queued when this returns); the turn's updates and then its
        /// answer (stop reason, usage).
        pub async fn prompt(
            &mut self,
            prompt: Vec<acp::ContentBlock>,
        ) -> Turn<'_, acp::SessionUpdate, acp::PromptResponse> {
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
    use acp_types::v2 as acp;
    session_handle!(v2);

    impl Session {
        /// Sends `session/prompt` (queued when this returns); the turn's updates and then its
        /// end: the message id of the prompt and the `idle` update with the stop reason (and
        /// usage where reported).
        pub async fn prompt(&mut self, prompt: Vec<acp::ContentBlock>) -> Turn<'_, acp::SessionUpdate, TurnEnd> {
            let conn = self.conn.clone();
            let request = acp::PromptRequest::new(self.id.clone(), prompt);
            start(&mut self.updates, Box::pin(async move { conn.prompt_v2(&request).await })).await
        }
    }
}
