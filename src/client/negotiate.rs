//! Version negotiation as the client does it: `initialize` asking for a version
//! ([`ClientConnection::negotiate`] falls back to a lower version the agent answers or lists),
//! and the answer in the version agreed ([`Initialized`]). From then on the agent's messages
//! decode with that version.

use super::connection::ClientConnection;
use crate::auth::AuthMethod;
use crate::error::{Error, Misuse};
use crate::lifecycle::INITIALIZE;
use crate::sync::lock;
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2, Version};
use serde_json::json;

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
        encoded.map_err(|e| Misuse::Params(format!("cannot encode the initialize request: {e}")).into())
    }
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
            return Err(Misuse::NothingToNegotiate { speaks: self.speaks, at_most: offer.at_most }.into());
        };
        let at_most = offer.at_most.unwrap_or(newest);
        let mut ask = newest;
        loop {
            let (answer, answered) = match self.ask(ask, offer.request(ask)?).await {
                Ok(answered) => answered,
                Err(Error::Peer(refused)) => {
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
                        (None, None) => return Err(Error::Peer(refused)),
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
        let params = serde_json::to_value(request).map_err(|e| Misuse::Params(e.to_string()))?;
        let answer = self.initialize(version, params).await?;
        match self.version() {
            Some(answered) if answered != version => return Err(Error::OtherVersion { asked: version, answered }),
            _ => {}
        }
        serde_json::from_value(answer)
            .map_err(|e| Error::Protocol(format!("the answer to initialize does not decode: {e}")))
    }

    /// Sends `initialize` asking for `version` with the given params (the matching version's
    /// `InitializeRequest` as JSON; `protocolVersion` is set here) and returns the agent's answer.
    /// From then on the agent's messages decode with the version it answered.
    pub async fn initialize(&self, version: Version, params: serde_json::Value) -> Result<serde_json::Value, Error> {
        let (answer, answered) = match self.ask(version, params).await {
            Ok(asked) => asked,
            // Not sent: whatever was agreed before still holds.
            Err(misuse @ Error::Misuse(_)) => return Err(misuse),
            Err(refused) => {
                // Sent and not agreed: the version asked for is not the connection's.
                self.version.clear();
                return Err(refused);
            }
        };
        let newest = self.speaks.iter().copied().max().unwrap_or(version);
        match self.accept(answered, newest) {
            Some(v) => {
                self.remember_auth_methods(v, &answer);
                self.version.set(v);
                Ok(answer)
            }
            None => {
                self.version.clear();
                let agent = answered.and_then(|v| u16::try_from(v).ok()).into_iter().collect();
                Err(Error::NoCommonVersion { asked: version, agent, client: self.speaks })
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
            other => return Err(Misuse::Params(format!("initialize params must be a JSON object, not {other}")).into()),
        };
        if !self.speaks.contains(&version) {
            return Err(Misuse::VersionNotSpoken { version, speaks: self.speaks }.into());
        }
        params.insert("protocolVersion".into(), json!(version.number()));
        // The agent's messages decode with the version asked for until it answers.
        self.version.set(version);
        let raw = serde_json::value::to_raw_value(&params).map_err(|e| Misuse::Params(e.to_string()))?;
        let answer = self.conn.request_raw(INITIALIZE, Some(&raw)).await?;
        let answer: serde_json::Value = serde_json::from_str(answer.get())
            .map_err(|e| Error::Protocol(format!("the answer to initialize: {e}")))?;
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
        let decode = |e: serde_json::Error| Error::Protocol(format!("the answer to initialize does not decode: {e}"));
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
}
