//! Why a call failed, by concern: what the peer answered ([`Error::Peer`],
//! [`Error::AuthRequired`]), what ended the connection ([`Error::Closed`]), what the peer got
//! wrong ([`Error::Protocol`], [`Error::NoCommonVersion`]), and what the local caller asked for
//! that the protocol does not allow ([`Error::Misuse`]: nothing was sent).

use crate::auth::{AuthMethod, AuthRequired};
use crate::rules::RuleId;
use acp_types::support::rpc::RpcError;
use acp_types::Version;
use std::fmt;

/// Why a call to the peer (or a step of the protocol's lifecycle) failed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The peer answered with a JSON-RPC error (its code, message and data as sent).
    Peer(RpcError),
    /// The agent refused the request until the client authenticates (`auth_required`, -32000),
    /// with the methods its `initialize` answer listed: authenticate with one of them
    /// (`ClientConnection::authenticate`) and ask again.
    AuthRequired(Box<AuthRequired>),
    /// The connection ended before the answer came: the peer closed its side, or writing to it
    /// failed. Nothing more can be sent on it; connect again.
    Closed,
    /// We cancelled the call (`$/cancel_request` was sent).
    Cancelled,
    /// The peer broke the protocol: its answer does not decode as the method's response, or is
    /// not a valid JSON-RPC response.
    Protocol(String),
    /// `initialize` found no protocol version that both sides speak.
    NoCommonVersion {
        /// The version the client asked for last (after a retry, the lower one).
        asked: Version,
        /// The agent's side: the version its answer named, or the versions its -32022 error
        /// listed as supported (empty when it named none).
        agent: Vec<u16>,
        /// The versions the client's handler speaks.
        client: &'static [Version],
    },
    /// The strict `initialize_v1` / `initialize_v2` asked for one version and the agent
    /// answered another, which the connection now speaks if the client's handler does (the
    /// answer is not returned: use `negotiate` to go on with the version answered).
    OtherVersion {
        /// The version asked for.
        asked: Version,
        /// The version the agent answered.
        answered: Version,
    },
    /// Not sent: the local caller asked for something the protocol or this connection does
    /// not allow.
    Misuse(Misuse),
}

/// What the local caller got wrong; nothing was sent. Where a rule of the protocol forbids the
/// call, its id in [`crate::rules`] is named.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Misuse {
    /// The client did not advertise the capability the call needs, named by its path in the
    /// `initialize` params (e.g. `clientCapabilities.fs.readTextFile`).
    NotAdvertised {
        /// The capability's path.
        capability: &'static str,
        /// The rule that gates the call (`cap.client-fs`, `cap.client-terminal`).
        rule: RuleId,
    },
    /// The helpers of one protocol version used on a connection that speaks another (e.g.
    /// `AgentContext::v1` in a v2 handler).
    WrongVersion {
        /// The version of the helpers.
        wanted: Version,
        /// The connection's.
        negotiated: Version,
    },
    /// A call that needs an agreed protocol version, before `initialize` agreed one (rule
    /// `init.first`).
    NotInitialized {
        /// What was called.
        method: String,
    },
    /// A version this side's handler does not speak was asked for.
    VersionNotSpoken {
        /// The version asked for.
        version: Version,
        /// The versions the handler speaks.
        speaks: &'static [Version],
    },
    /// `negotiate` with an offer that has no request of a version the handler speaks (at
    /// most [`Misuse::NothingToNegotiate::at_most`]).
    NothingToNegotiate {
        /// The versions the handler speaks.
        speaks: &'static [Version],
        /// The offer's highest version, if it set one.
        at_most: Option<Version>,
    },
    /// `authenticate` with a method the agent did not list in its `initialize` answer.
    UnknownAuthMethod {
        /// The id asked for.
        id: String,
        /// The methods the agent listed.
        listed: Vec<AuthMethod>,
    },
    /// `authenticate` with a method that defines no protocol-driven login flow: a `terminal`
    /// method (the client runs the agent as an interactive process instead) or a type this
    /// client does not know ("Clients MUST call this method only with a method whose type
    /// defines a protocol-driven login flow", v2 `auth/login`).
    NotProtocolDriven(AuthMethod),
    /// The params could not be encoded as JSON, or are not the JSON object a method takes.
    Params(String),
}

impl Error {
    /// The refusal, when the agent answered `auth_required` (-32000): its error and the
    /// methods the agent listed in `initialize`.
    pub fn auth_required(&self) -> Option<&AuthRequired> {
        match self {
            Error::AuthRequired(refused) => Some(refused),
            _ => None,
        }
    }

    /// The peer's JSON-RPC error, when the peer answered with one.
    pub fn peer(&self) -> Option<&RpcError> {
        match self {
            Error::Peer(e) => Some(e),
            Error::AuthRequired(refused) => Some(&refused.error),
            _ => None,
        }
    }

    /// The error as a JSON-RPC error object, e.g. to pass a failure on to our own peer: the
    /// peer's error as it is, a cancellation as -32800, anything else as -32603 with this
    /// error's text.
    pub fn to_rpc(&self) -> RpcError {
        match self {
            Error::Peer(e) => e.clone(),
            Error::AuthRequired(refused) => refused.error.clone(),
            Error::Cancelled => RpcError::new(RpcError::REQUEST_CANCELLED, "request cancelled"),
            _ => RpcError::internal(self.to_string()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Peer(e) => write!(f, "the peer answered with an error: {e}"),
            Error::AuthRequired(refused) => refused.fmt(f),
            Error::Closed => f.write_str("connection closed: the peer ended it (or it stopped reading); connect again"),
            Error::Cancelled => f.write_str("request cancelled"),
            Error::Protocol(why) => {
                write!(f, "the peer broke the protocol: {why} (`acp check` on a recording of the session shows where)")
            }
            Error::NoCommonVersion { asked, agent, client } => {
                let agent = agent.iter().map(u16::to_string).collect::<Vec<_>>();
                write!(
                    f,
                    "no protocol version in common: the client asked for {} and speaks {}; the agent speaks {} \
                     (offer a version the agent speaks, or upgrade one side)",
                    asked.number(),
                    numbers(client),
                    if agent.is_empty() { "none that it named".to_string() } else { agent.join(", ") },
                )
            }
            Error::OtherVersion { asked, answered } => write!(
                f,
                "the agent answered protocol version {}, not {} (`negotiate` goes on with the version answered)",
                answered.number(),
                asked.number()
            ),
            Error::Misuse(misuse) => misuse.fmt(f),
        }
    }
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Misuse::NotAdvertised { capability, rule } => write!(
                f,
                "not sent: the client did not advertise {capability} in initialize (rule {rule}); check \
                 `client_capabilities()` first"
            ),
            Misuse::WrongVersion { wanted, negotiated } => write!(
                f,
                "not sent: the v{} helpers on a connection that speaks v{}; use `v{}()`",
                wanted.number(),
                negotiated.number(),
                negotiated.number()
            ),
            Misuse::NotInitialized { method } => {
                write!(f, "not sent: {method} before initialize (rule init.first); initialize first")
            }
            Misuse::VersionNotSpoken { version, speaks } => {
                write!(
                    f,
                    "not sent: this handler does not speak v{} (it speaks {}); connect a handler of that version",
                    version.number(),
                    numbers(speaks)
                )
            }
            Misuse::NothingToNegotiate { speaks, at_most } => write!(
                f,
                "nothing to negotiate: the offer has no request of a version this client's handler speaks ({}){}; \
                 add one with `Offer::v1` / `Offer::v2`",
                numbers(speaks),
                at_most.map(|v| format!(" at most v{}", v.number())).unwrap_or_default(),
            ),
            Misuse::UnknownAuthMethod { id, listed } => {
                let listed = listed.iter().map(AuthMethod::to_string).collect::<Vec<_>>();
                write!(
                    f,
                    "not sent: the agent did not list the auth method {id:?} in its initialize answer (it listed: {})",
                    if listed.is_empty() { "none".to_string() } else { listed.join(", ") }
                )
            }
            Misuse::NotProtocolDriven(method) if method.kind == "terminal" => write!(
                f,
                "not sent: the auth method {method} is a terminal method: the client runs the agent as an \
                 interactive process, not authenticate"
            ),
            Misuse::NotProtocolDriven(method) => write!(
                f,
                "not sent: the auth method {method} is of a type this client does not know: it defines no login \
                 flow to call authenticate with"
            ),
            Misuse::Params(why) => write!(f, "not sent: {why}; pass params that encode as a JSON object"),
        }
    }
}

fn numbers(versions: &[Version]) -> String {
    versions.iter().map(|v| v.number().to_string()).collect::<Vec<_>>().join(", ")
}

impl std::error::Error for Error {}

impl From<RpcError> for Error {
    fn from(e: RpcError) -> Self {
        Error::Peer(e)
    }
}

impl From<Misuse> for Error {
    fn from(misuse: Misuse) -> Self {
        Error::Misuse(misuse)
    }
}

/// So that `?` passes a failed call on from a handler (see [`Error::to_rpc`]).
impl From<Error> for RpcError {
    fn from(e: Error) -> Self {
        e.to_rpc()
    }
}
