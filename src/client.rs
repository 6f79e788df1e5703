//! Connecting a client to an agent: the client asks for a protocol version in `initialize`
//! ([`ClientConnection::negotiate`] falls back to a lower version the agent answers) and decodes
//! the agent's requests and notifications with the version the agent answered. It keeps the
//! agent's `authMethods`, authenticates ([`ClientConnection::authenticate`]) and reports an
//! `auth_required` refusal as [`Error::AuthRequired`]. Cancelling
//! a session answers the agent's pending permission requests for it with `cancelled`. A prompt
//! ([`ClientConnection::prompt_v1`], [`ClientConnection::prompt_v2`]) completes when its turn
//! ends, once the client's handler has seen every update before that end.

use crate::agent::{V1, V2};
use crate::auth::{AuthMethod, AuthRequired};
use crate::connection::{BoxFuture, Config, Connection, Error, Pipe, Raw, RequestContext, Service, Transport};
use crate::dispatch;
use crate::session::{session_of, Context, Negotiated, Sessions};
use crate::sessions::{self, Routes};
use crate::spawn::{AgentProcess, SpawnOptions};
use crate::sync::lock;
use crate::turn::{TurnEnd, TurnWaiters};
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2, Version};
use serde_json::json;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncRead, AsyncWrite};

/// A client: the generated client-side handler traits of both versions (every method has a
/// default), or one version's handler alone, connected as [`V1`]`(client)` or [`V2`]`(client)`.
/// Implemented for those; not meant to be implemented by hand.
pub trait Client: Send + Sync + 'static {
    /// The protocol versions this client can decode the agent's messages with.
    const VERSIONS: &'static [Version];

    /// A request of the agent, decoded and handled; the result as JSON.
    fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> impl Future<Output = Result<serde_json::Value, RpcError>> + Send;

    /// A v1 notification of the agent, decoded.
    fn handle_v1(&self, note: v1::methods::client::Notification, cx: Context) -> impl Future<Output = ()> + Send;

    /// A v2 notification of the agent, decoded.
    fn handle_v2(&self, note: v2::methods::client::Notification, cx: Context) -> impl Future<Output = ()> + Send;
}

/// The `supported` versions of an unsupported-protocol-version error (v2's `ErrorCode`), read
/// from its `UnsupportedProtocolVersionErrorData`; `None` for any other error, or data of
/// another shape.
fn supported_versions(error: &RpcError) -> Option<Vec<u16>> {
    if error.code != v2::ErrorCode::UnsupportedProtocolVersion.code() {
        return None;
    }
    let data: v2::UnsupportedProtocolVersionErrorData = serde_json::from_value(error.data.clone()?).ok()?;
    Some(data.supported.iter().map(|v| v.0).collect())
}

fn not_spoken(version: Version) -> RpcError {
    RpcError::internal(format!("this client does not speak v{}", version.number()))
}

impl<T: v1::methods::client::Handler<Context> + v2::methods::client::Handler<Context> + 'static> Client for T {
    const VERSIONS: &'static [Version] = Version::ALL;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => dispatch::client::v1::request(self, method, params, cx).await,
            Version::V2 => dispatch::client::v2::request(self, method, params, cx).await,
        }
    }

    async fn handle_v1(&self, note: v1::methods::client::Notification, cx: Context) {
        v1::methods::client::dispatch_notification(self, note, cx).await
    }

    async fn handle_v2(&self, note: v2::methods::client::Notification, cx: Context) {
        v2::methods::client::dispatch_notification(self, note, cx).await
    }
}

impl<C: v1::methods::client::Handler<Context> + 'static> Client for V1<C> {
    const VERSIONS: &'static [Version] = &[Version::V1];

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => dispatch::client::v1::request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_v1(&self, note: v1::methods::client::Notification, cx: Context) {
        v1::methods::client::dispatch_notification(&self.0, note, cx).await
    }

    async fn handle_v2(&self, _: v2::methods::client::Notification, _: Context) {
        tracing::warn!("acp: a v2 notification ignored: {}", not_spoken(Version::V2));
    }
}

impl<C: v2::methods::client::Handler<Context> + 'static> Client for V2<C> {
    const VERSIONS: &'static [Version] = &[Version::V2];

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: Context,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V2 => dispatch::client::v2::request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_v1(&self, _: v1::methods::client::Notification, _: Context) {
        tracing::warn!("acp: a v1 notification ignored: {}", not_spoken(Version::V1));
    }

    async fn handle_v2(&self, note: v2::methods::client::Notification, cx: Context) {
        v2::methods::client::dispatch_notification(&self.0, note, cx).await
    }
}

/// The answer to `initialize` in the version the connection agreed on: what
/// [`ClientConnection::negotiate`] returns. The caller goes on with that version's session API
/// (`new_session_v1` or `new_session_v2`, …).
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one value per connection
pub enum Initialized {
    /// The connection speaks v1.
    V1(v1::InitializeResponse),
    /// The connection speaks v2.
    V2(v2::InitializeResponse),
}

impl Initialized {
    /// The agreed version.
    pub fn version(&self) -> Version {
        match self {
            Initialized::V1(_) => Version::V1,
            Initialized::V2(_) => Version::V2,
        }
    }

    /// The authentication methods the agent listed (`authMethods`), in either version.
    pub fn auth_methods(&self) -> Vec<AuthMethod> {
        match self {
            Initialized::V1(answer) => AuthMethod::of_v1(&answer.auth_methods),
            Initialized::V2(answer) => AuthMethod::of_v2(answer.auth_methods.as_deref().unwrap_or_default()),
        }
    }
}

/// What [`ClientConnection::negotiate`] may ask for: the `initialize` request of each version
/// the caller is ready to speak (the two versions' requests have different fields), and
/// optionally a highest version. Only the request of the version actually asked for is sent.
#[derive(Debug, Clone, Default)]
pub struct Offer {
    v1: Option<v1::InitializeRequest>,
    v2: Option<v2::InitializeRequest>,
    at_most: Option<Version>,
}

impl Offer {
    /// Nothing offered yet.
    pub fn new() -> Self {
        Offer::default()
    }

    /// Offers v1, with this request (its `protocolVersion` is set when it is sent).
    pub fn v1(mut self, request: v1::InitializeRequest) -> Self {
        self.v1 = Some(request);
        self
    }

    /// Offers v2, with this request (its `protocolVersion` is set when it is sent).
    pub fn v2(mut self, request: v2::InitializeRequest) -> Self {
        self.v2 = Some(request);
        self
    }

    /// Asks for no version above `version`, and accepts no answer above it.
    pub fn at_most(mut self, version: Version) -> Self {
        self.at_most = Some(version);
        self
    }

    /// The versions to ask for, newest first: offered, spoken by the client's handler, and not
    /// above the maximum.
    fn candidates(&self, speaks: &[Version]) -> Vec<Version> {
        let mut versions: Vec<Version> = Version::ALL
            .iter()
            .copied()
            .filter(|v| match v {
                Version::V1 => self.v1.is_some(),
                Version::V2 => self.v2.is_some(),
            })
            .filter(|v| speaks.contains(v) && self.at_most.is_none_or(|most| *v <= most))
            .collect();
        versions.sort_by(|a, b| b.cmp(a));
        versions
    }

    /// The request of `version` as JSON.
    fn request(&self, version: Version) -> Result<serde_json::Value, Error> {
        let encoded = match version {
            Version::V1 => serde_json::to_value(&self.v1),
            Version::V2 => serde_json::to_value(&self.v2),
        };
        encoded.map_err(|e| Error::Invalid(format!("cannot encode the initialize request: {e}")))
    }
}

/// The client's end of a connection.
#[derive(Clone)]
pub struct ClientConnection {
    /// The underlying connection (typed calls: `conn.request::<v1::methods::SessionNew>(…)`).
    pub conn: Connection,
    version: Negotiated,
    sessions: Arc<Sessions>,
    turns: Arc<TurnWaiters>,
    routes: Arc<Routes>,
    /// The versions the client's handler speaks.
    speaks: &'static [Version],
    /// The `authMethods` of the agent's `initialize` answer.
    auth_methods: Arc<Mutex<Vec<AuthMethod>>>,
}

impl ClientConnection {
    /// `initialize` asking for v1 with `request` (its `protocolVersion` is set to 1 here); the
    /// agent's answer, or an error when it answers another version.
    pub async fn initialize_v1(&self, mut request: v1::InitializeRequest) -> Result<v1::InitializeResponse, Error> {
        request.protocol_version = v1::ProtocolVersion(1);
        self.initialize_typed(Version::V1, &request).await
    }

    /// `initialize` asking for v2 with `request`; the agent's answer, or an error when it
    /// answers another version. Strict: it returns v2's answer or nothing, so an agent that
    /// answers 1 (as v1-only agents do) is an error naming both versions; the connection then
    /// speaks v1 if the client's handler does. [`ClientConnection::negotiate`] falls back instead.
    pub async fn initialize_v2(&self, mut request: v2::InitializeRequest) -> Result<v2::InitializeResponse, Error> {
        request.protocol_version = v2::ProtocolVersion(2);
        self.initialize_typed(Version::V2, &request).await
    }

    /// Version negotiation as the protocol defines it: asks for the newest version in `offer`
    /// (those with a request, spoken by the client's handler, not above [`Offer::at_most`]) with
    /// that version's request alone, and goes on with the version the agent answers when the
    /// handler speaks it: the agent answers "the latest protocol version supported by the
    /// agent" (v1 `InitializeResponse.protocolVersion`), "the highest protocol version
    /// supported by the agent that is at or below the version requested" (v2). A lower answer
    /// is accepted even without a request of its own in `offer`: the request is only what is
    /// sent.
    ///
    /// An agent that answers an error instead (some v1-only agents reject a version they do
    /// not know rather than answer 1) is asked again, once per lower version offered, with that
    /// version's request; a -32022 error that lists the agent's `supported` versions narrows
    /// the retry to those. The error of the last attempt is returned, or
    /// [`Error::NoCommonVersion`] (naming both sides) when the agent names no version the
    /// client speaks.
    ///
    /// After a fallback, the agent has read the newer version's request: a v1 agent asked with
    /// a v2 request sees v1's default client capabilities (no `fs`, no `terminal`: v2 has
    /// neither), not those of the v1 request in `offer`.
    pub async fn negotiate(&self, offer: Offer) -> Result<Initialized, Error> {
        let agreed = self.try_negotiate(offer).await;
        if agreed.is_err() {
            // No version agreed: the one last asked for is not the connection's.
            self.version.clear();
        }
        agreed
    }

    async fn try_negotiate(&self, offer: Offer) -> Result<Initialized, Error> {
        let candidates = offer.candidates(self.speaks);
        let Some(&newest) = candidates.first() else {
            return Err(Error::Invalid(format!(
                "nothing to negotiate: the offer has no request of a version this client's handler speaks ({}){}",
                self.speaks.iter().map(|v| format!("v{}", v.number())).collect::<Vec<_>>().join(", "),
                offer.at_most.map(|v| format!(" at most v{}", v.number())).unwrap_or_default(),
            )));
        };
        let at_most = offer.at_most.unwrap_or(newest);
        let mut ask = newest;
        loop {
            let (answer, answered) = match self.ask(ask, offer.request(ask)?).await {
                Ok(answered) => answered,
                Err(Error::Rpc(refused)) => {
                    let supported = supported_versions(&refused);
                    let lower = candidates
                        .iter()
                        .copied()
                        .find(|v| *v < ask && supported.as_ref().is_none_or(|s| s.contains(&v.number())));
                    match (lower, supported) {
                        (Some(lower), _) => {
                            tracing::info!(
                                "acp: initialize asking v{} refused ({refused}); asking v{}",
                                ask.number(),
                                lower.number()
                            );
                            ask = lower;
                            continue;
                        }
                        (None, Some(agent)) => {
                            return Err(Error::NoCommonVersion { asked: ask, agent, client: self.speaks })
                        }
                        (None, None) => return Err(Error::Rpc(refused)),
                    }
                }
                Err(other) => return Err(other),
            };
            let Some(version) = self.accept(answered, at_most) else {
                let agent = answered.and_then(|v| u16::try_from(v).ok()).into_iter().collect();
                return Err(Error::NoCommonVersion { asked: ask, agent, client: self.speaks });
            };
            return self.agreed(version, answer);
        }
    }

    /// `initialize` offering both versions: [`ClientConnection::negotiate`] with both requests
    /// (only the one of the version asked for is sent).
    pub async fn initialize_any(
        &self,
        v1_request: v1::InitializeRequest,
        v2_request: v2::InitializeRequest,
    ) -> Result<Initialized, Error> {
        self.negotiate(Offer::new().v1(v1_request).v2(v2_request)).await
    }

    async fn initialize_typed<Q: serde::Serialize, A: serde::de::DeserializeOwned>(
        &self,
        version: Version,
        request: &Q,
    ) -> Result<A, Error> {
        let params = serde_json::to_value(request).map_err(|e| Error::Invalid(e.to_string()))?;
        let answer = self.initialize(version, params).await?;
        if self.version() != Some(version) {
            return Err(Error::Invalid(format!(
                "the agent answered protocol version {}, not {} (`negotiate` goes on with the version answered)",
                answer["protocolVersion"],
                version.number()
            )));
        }
        serde_json::from_value(answer)
            .map_err(|e| Error::Invalid(format!("the answer to initialize does not decode: {e}")))
    }

    /// Sends `initialize` asking for `version` with the given params (the matching version's
    /// `InitializeRequest` as JSON; `protocolVersion` is set here) and returns the agent's answer.
    /// From then on the agent's messages decode with the version it answered.
    pub async fn initialize(&self, version: Version, params: serde_json::Value) -> Result<serde_json::Value, Error> {
        let (answer, answered) = self.ask(version, params).await?;
        let newest = self.speaks.iter().copied().max().unwrap_or(version);
        match self.accept(answered, newest) {
            Some(v) => {
                self.remember_auth_methods(v, &answer);
                self.version.set(v);
                Ok(answer)
            }
            None => {
                self.version.clear();
                Err(Error::Invalid(format!(
                    "the agent answered protocol version {answered:?}, which this client does not speak"
                )))
            }
        }
    }

    /// Sends `initialize` asking for `version` with `params`; the answer, and the version number
    /// it names.
    async fn ask(
        &self,
        version: Version,
        params: serde_json::Value,
    ) -> Result<(serde_json::Value, Option<u64>), Error> {
        let mut params = match params {
            serde_json::Value::Object(params) => params,
            serde_json::Value::Null => serde_json::Map::new(),
            other => return Err(Error::Invalid(format!("initialize params must be a JSON object, not {other}"))),
        };
        if !self.speaks.contains(&version) {
            return Err(Error::Invalid(format!("this client's handler does not speak v{}", version.number())));
        }
        params.insert("protocolVersion".into(), json!(version.number()));
        // The agent's messages decode with the version asked for until it answers.
        self.version.set(version);
        let raw = serde_json::value::to_raw_value(&params).map_err(|e| Error::Invalid(e.to_string()))?;
        let answer = self.conn.request_raw("initialize", Some(&raw)).await?;
        let answer: serde_json::Value =
            serde_json::from_str(answer.get()).map_err(|e| Error::Invalid(e.to_string()))?;
        let answered = answer["protocolVersion"].as_u64();
        Ok((answer, answered))
    }

    /// The version an answer names, if the client's handler speaks it and it is not above
    /// `at_most`.
    fn accept(&self, answered: Option<u64>, at_most: Version) -> Option<Version> {
        let named = answered.and_then(|v| u16::try_from(v).ok()).and_then(Version::from_number);
        named.filter(|v| self.speaks.contains(v) && *v <= at_most)
    }

    /// The connection agrees on `version`: the answer decoded as that version's.
    fn agreed(&self, version: Version, answer: serde_json::Value) -> Result<Initialized, Error> {
        let decode = |e: serde_json::Error| Error::Invalid(format!("the answer to initialize does not decode: {e}"));
        let initialized = match version {
            Version::V1 => Initialized::V1(serde_json::from_value(answer).map_err(decode)?),
            Version::V2 => Initialized::V2(serde_json::from_value(answer).map_err(decode)?),
        };
        *lock(&self.auth_methods) = initialized.auth_methods();
        self.version.set(version);
        Ok(initialized)
    }

    /// Keeps the `authMethods` of an answer given as JSON (none when it does not decode).
    fn remember_auth_methods(&self, version: Version, answer: &serde_json::Value) {
        let methods = match version {
            Version::V1 => serde_json::from_value::<v1::InitializeResponse>(answer.clone())
                .map(|a| AuthMethod::of_v1(&a.auth_methods)),
            Version::V2 => serde_json::from_value::<v2::InitializeResponse>(answer.clone())
                .map(|a| AuthMethod::of_v2(a.auth_methods.as_deref().unwrap_or_default())),
        };
        *lock(&self.auth_methods) = methods.unwrap_or_default();
    }

    /// The authentication methods the agent listed in its `initialize` answer (empty before
    /// `initialize`, or when it listed none).
    pub fn auth_methods(&self) -> Vec<AuthMethod> {
        lock(&self.auth_methods).clone()
    }

    /// Authenticates with the method `method_id` of the agent's `authMethods`: `authenticate`
    /// in v1, `auth/login` in v2. Sends nothing and fails when the agent did not list that
    /// method, or when it is not an `agent` method ([`AuthMethod::is_protocol_driven`]: a
    /// `terminal` method runs the agent as an interactive process instead, and a type this
    /// client does not know is not called): "Clients MUST call this method only with a method
    /// whose type defines a protocol-driven login flow, and MUST NOT call it when `authMethods`
    /// was omitted or empty" (v2 `auth/login`).
    pub async fn authenticate(&self, method_id: &str) -> Result<(), Error> {
        let methods = self.auth_methods();
        let Some(method) = methods.iter().find(|m| m.id == method_id) else {
            let listed = methods.iter().map(|m| m.to_string()).collect::<Vec<_>>();
            return Err(Error::Invalid(format!(
                "the agent did not list the auth method {method_id:?} in its initialize answer (it listed: {})",
                if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
            )));
        };
        if method.kind == "terminal" {
            return Err(Error::Invalid(format!(
                "the auth method {method} is a terminal method: the client runs the agent as an interactive process, not authenticate"
            )));
        }
        if !method.is_protocol_driven() {
            return Err(Error::Invalid(format!(
                "the auth method {method} is of a type this client does not know: it defines no login flow to call authenticate with"
            )));
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
            None => Err(Error::Invalid("authenticate before initialize".into())),
        }
    }

    /// A typed request to the agent, as [`Connection::request`], with an `auth_required`
    /// (-32000) refusal reported as [`Error::AuthRequired`], carrying the agent's methods.
    pub async fn request<M: acp_types::support::rpc::Request>(&self, params: &M::Params) -> Result<M::Response, Error> {
        self.conn.request::<M>(params).await.map_err(|e| self.refused(e))
    }

    /// An `auth_required` answer as [`Error::AuthRequired`]; any other error as it is.
    fn refused(&self, e: Error) -> Error {
        match e {
            Error::Rpc(error) if error.code == RpcError::AUTH_REQUIRED => {
                Error::AuthRequired(Box::new(AuthRequired { error, methods: self.auth_methods() }))
            }
            other => other,
        }
    }
    /// `session/new` (v1), and a handle on the session its answer names.
    pub async fn new_session_v1(&self, request: v1::NewSessionRequest) -> Result<sessions::v1::Session, Error> {
        let _opening = self.routes.opening();
        let answer = self.request::<v1::methods::SessionNew>(&request).await?;
        // The updates the agent sent before its answer are routed (held) by now.
        self.conn.sync_notifications().await;
        Ok(sessions::v1::Session::open(self, answer.session_id))
    }

    /// `session/new` (v2), and a handle on the session its answer names.
    pub async fn new_session_v2(&self, request: v2::NewSessionRequest) -> Result<sessions::v2::Session, Error> {
        let _opening = self.routes.opening();
        let answer = self.request::<v2::methods::SessionNew>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(sessions::v2::Session::open(self, answer.session_id))
    }

    /// `session/load` (v1; the agent must advertise `loadSession`), and a handle on the session:
    /// the history the agent replays before answering comes first in its updates.
    pub async fn load_session_v1(&self, request: v1::LoadSessionRequest) -> Result<sessions::v1::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        self.request::<v1::methods::SessionLoad>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(sessions::v1::Session::open(self, id))
    }

    /// `session/resume` (v1), and a handle on the session.
    pub async fn resume_session_v1(&self, request: v1::ResumeSessionRequest) -> Result<sessions::v1::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        self.request::<v1::methods::SessionResume>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(sessions::v1::Session::open(self, id))
    }

    /// `session/resume` (v2), and a handle on the session: the replayed history and the state
    /// snapshot the agent sends before answering come first in its updates.
    pub async fn resume_session_v2(&self, request: v2::ResumeSessionRequest) -> Result<sessions::v2::Session, Error> {
        let _opening = self.routes.opening();
        let id = request.session_id.clone();
        self.request::<v2::methods::SessionResume>(&request).await?;
        self.conn.sync_notifications().await;
        Ok(sessions::v2::Session::open(self, id))
    }

    pub(crate) fn routes(&self) -> &Routes {
        &self.routes
    }

    /// A v1 prompt turn: sends `session/prompt` and returns its answer (the stop reason, and
    /// usage where the agent reports it) once the client's handler has handled every update the
    /// agent sent before it.
    pub async fn prompt_v1(&self, prompt: &v1::PromptRequest) -> Result<v1::PromptResponse, Error> {
        let done = self.request::<v1::methods::SessionPrompt>(prompt).await?;
        self.conn.sync_notifications().await;
        Ok(done)
    }

    /// A v2 prompt turn: sends `session/prompt` and waits for the end of the turn it starts:
    /// the first `idle` state update after this prompt's `running` (an `idle` snapshot before
    /// that, such as the one after `session/new`, is not counted), once the client's handler has
    /// handled it and every update before it.
    pub async fn prompt_v2(&self, prompt: &v2::PromptRequest) -> Result<TurnEnd, Error> {
        // Waiting starts before the request: `running` may come before the answer.
        let waiting = self.turns.wait(&prompt.session_id.0);
        let answer = self.request::<v2::methods::SessionPrompt>(prompt).await?;
        let mut waiting = waiting;
        tokio::select! {
            idle = &mut waiting.done => match idle {
                Ok(idle) => Ok(TurnEnd { message_id: answer.message_id, idle }),
                Err(_) => Err(Error::Closed),
            },
            _ = self.conn.closed() => Err(Error::Closed),
        }
    }

    /// The negotiated version (`None` before `initialize`).
    pub fn version(&self) -> Option<Version> {
        self.version.get()
    }

    /// Sends `session/cancel` and answers the agent's pending requests for that session that
    /// wait on the user (permission requests) with `cancelled`.
    pub async fn cancel_session(&self, session_id: &str) -> Result<(), Error> {
        self.sessions.cancel(session_id);
        let params = serde_json::value::to_raw_value(&json!({ "sessionId": session_id }))
            .map_err(|e| Error::Invalid(e.to_string()))?;
        self.conn.notify_raw("session/cancel", Some(&params)).await
    }
}

struct ClientService<C> {
    client: Arc<C>,
    version: Negotiated,
    sessions: Arc<Sessions>,
    turns: Arc<TurnWaiters>,
    routes: Arc<Routes>,
    conn: Connection,
}

/// Runs `client` over `reader`/`writer` (the agent's stdout and stdin).
pub fn connect<C, R, W>(
    client: C,
    reader: R,
    writer: W,
    config: Config,
) -> (ClientConnection, impl Future<Output = std::io::Result<()>> + Send)
where
    C: Client,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    connect_over(client, Pipe { reader, writer }, config)
}

/// Runs `client` over any [`Transport`]: a [`Pipe`], or the [`Channels`](crate::connection::Channels) of a network transport
/// (see the `http`/`ws` features).
pub fn connect_over<C: Client, T: Transport>(
    client: C,
    transport: T,
    config: Config,
) -> (ClientConnection, impl Future<Output = std::io::Result<()>> + Send) {
    let client = Arc::new(client);
    let version = Negotiated::default();
    let sessions: Arc<Sessions> = Arc::default();
    let turns: Arc<TurnWaiters> = Arc::default();
    let routes: Arc<Routes> = Arc::default();
    let (v, s, t, r) = (version.clone(), sessions.clone(), turns.clone(), routes.clone());
    let (conn, driver) = Connection::over(transport, config, move |conn| ClientService {
        client,
        version: v,
        sessions: s,
        turns: t,
        routes: r,
        conn,
    });
    let auth_methods = Arc::default();
    (ClientConnection { conn, version, sessions, turns, routes, speaks: C::VERSIONS, auth_methods }, driver)
}

/// Spawns an agent process (`program args…`) with piped stdin/stdout (its stderr passes through)
/// and connects `client` to it: [`spawn_agent_with`] with the default [`SpawnOptions`].
pub fn spawn_agent<C: Client>(
    client: C,
    program: &str,
    args: &[String],
    config: Config,
) -> std::io::Result<(ClientConnection, impl Future<Output = std::io::Result<()>> + Send, AgentProcess)> {
    spawn_agent_with(client, program, args, config, &SpawnOptions::default())
}

/// Spawns an agent process (`program args…`, on Unix in a process group of its own, stderr as
/// `options` says) and connects `client` to it. Dropping the returned [`AgentProcess`] ends the
/// agent with its whole group; [`AgentProcess::shutdown`] does so gracefully.
pub fn spawn_agent_with<C: Client>(
    client: C,
    program: &str,
    args: &[String],
    config: Config,
    options: &SpawnOptions,
) -> std::io::Result<(ClientConnection, impl Future<Output = std::io::Result<()>> + Send, AgentProcess)> {
    let (process, stdin, stdout) = crate::spawn::spawn(program, args, options)?;
    let (conn, driver) = connect(client, stdout, stdin, config);
    Ok((conn, driver, process))
}

/// -32600 for a request of the agent before the client sent `initialize`: no version is
/// negotiated to decode it with.
fn not_initialized(method: &str) -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!("{method} before initialize: the client has not sent initialize, so no protocol version is agreed"),
    )
    .with_data(json!({ "method": method }))
}

/// The answer to a permission request whose turn was cancelled (the same in v1 and v2).
fn cancelled_outcome() -> Raw {
    serde_json::value::to_raw_value(&json!({ "outcome": { "outcome": "cancelled" } })).unwrap_or_else(|_| {
        // Encoding a literal cannot fail; an empty object keeps the signature total.
        serde_json::value::RawValue::from_string("{}".into()).unwrap_or_default()
    })
}

impl<C: Client> Service for ClientService<C> {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let client = self.client.clone();
        let version = self.version.get();
        let sessions = self.sessions.clone();
        // Registered now, while the reader is still on this message: a `session/cancel` right
        // behind it must find it.
        let turn = cx.cancel.child_token();
        let registered = session_of(params.as_deref()).map(|s| sessions.register(s, turn.clone()));
        Box::pin(async move {
            let _registered = registered;
            let work = async {
                let Some(version) = version else {
                    return Err(not_initialized(&method));
                };
                let ccx = Context { conn: cx.conn, version, cancel: turn.clone(), advertised: Default::default() };
                let result = client.handle_request(version, &method, params, ccx).await?;
                acp_types::support::json::to_raw_value(&result).map_err(|e| RpcError::internal(e.to_string()))
            };
            if method == "session/request_permission" {
                tokio::select! {
                    answer = work => answer,
                    _ = turn.cancelled() => Ok(cancelled_outcome()),
                }
            } else {
                work.await
            }
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, _conn: Connection) -> BoxFuture<()> {
        let Some(version) = self.version.get() else {
            tracing::warn!("acp: notification {method} ignored: {}", not_initialized(&method));
            return Box::pin(async {});
        };
        let client = self.client.clone();
        let (turns, routes) = (self.turns.clone(), self.routes.clone());
        let cx =
            Context { conn: self.conn.clone(), version, cancel: Default::default(), advertised: Default::default() };
        Box::pin(async move {
            let ignored = |e: RpcError| tracing::warn!("acp: notification {method} ignored: {e}");
            match version {
                Version::V1 => match v1::methods::client::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => {
                        // A copy for the session's handle, if it has one.
                        let routed = match &n {
                            v1::methods::client::Notification::SessionUpdate(u) if routes.wants_v1(&u.session_id.0) => {
                                Some((u.session_id.0.clone(), u.update.clone()))
                            }
                            _ => None,
                        };
                        client.handle_v1(n, cx).await;
                        if let Some((session, update)) = routed {
                            routes.send_v1(&session, update);
                        }
                    }
                    Err(e) => ignored(e),
                },
                Version::V2 => match v2::methods::client::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => {
                        let (routed, state) = match &n {
                            v2::methods::client::Notification::SessionUpdate(u) => {
                                let session = &u.session_id.0;
                                let state = match &u.update {
                                    v2::SessionUpdate::StateUpdate(state) => Some((session.clone(), state.clone())),
                                    _ => None,
                                };
                                (routes.wants_v2(session).then(|| (session.clone(), u.update.clone())), state)
                            }
                            _ => (None, None),
                        };
                        client.handle_v2(n, cx).await;
                        // After the handler: a prompt that ends here sees its updates handled
                        // (and routed to its session's handle).
                        if let Some((session, update)) = routed {
                            routes.send_v2(&session, update);
                        }
                        if let Some((session, state)) = state {
                            turns.observe(&session, &state);
                        }
                    }
                    Err(e) => ignored(e),
                },
            }
        })
    }
}
