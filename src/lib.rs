//! `acp-rpc`: the runtime half of the toolkit. JSON-RPC 2.0 over newline-delimited JSON on any
//! tokio `AsyncRead`/`AsyncWrite`, with the protocol's types, methods and handler traits generated
//! in [`acp_types`].
//!
//! The roles, each with its own handler context:
//! - [`agent`]: serving an agent ([`agent::serve`]); its handlers get an [`AgentContext`] (calls to
//!   the client, checked against what the client advertised; cancellation; the v2 turn);
//! - [`client`]: connecting a client ([`client::connect`], [`client::spawn_agent`]) and driving
//!   sessions ([`client::ClientConnection`]); its handlers get a [`ClientContext`] (calls to the
//!   agent; cancellation);
//! - `proxy` (feature `unstable`): a component of a chain that a conductor runs, an agent to its
//!   predecessor and a client to its successor (`proxy::serve_proxy_stdio`); its hooks
//!   (`proxy::ProxyHandler`) pass every message through unchanged unless they change, answer,
//!   drop or add one, and get a `proxy::ProxyContext` (both sides, typed or raw).
//!
//! Beside them:
//! - [`rules`]: the protocol's rules (lifecycle, capability gating, ordering), one table with ids;
//!   the runtime keeps those it can, citing their ids (in its errors where it refuses something:
//!   `init.first`, `cap.client-fs`, `cap.client-terminal`), and the `acp` tool checks others'
//!   traffic against them;
//! - [`Error`] (and [`Misuse`]): why a call failed, by concern;
//! - [`auth`]: the agent's authentication methods and the `auth_required` refusal, as the client
//!   sees them;
//! - [`spawn`]: starting an agent process and ending it with everything it started;
//! - [`V1`], [`V2`]: a handler of one version alone;
//! - `net` (features `http` and `ws`): the same agents and clients over Streamable HTTP and
//!   WebSocket: `net::server::Server` serves one agent to many clients on one listener,
//!   `net::http::connect` and `net::ws::connect` connect a client;
//! - [`jsonrpc`]: the JSON-RPC layer under the roles (framing, a connection over any transport),
//!   for transports, tools and tests.
//!
//! The `acp` command (`check`, `tap`, `conform`) is the `acp-tool` package, beside this one.
//!
//! # Writing an agent
//!
//! Implement the generated handler trait of the version you speak (every method has a default
//! answer, -32601, so implement what you support) and serve it. On the handler's [`AgentContext`]:
//! `cx.v1()?` / `cx.v2()?` call the client (updates, permission, files, terminals), each checked
//! against what the client advertised; `cx.cancelled()` resolves when the request or its session is
//! cancelled. Session ids must be distinct.
//!
//! ```no_run
//! use acp_rpc::types::{support::rpc::RpcError, v1, Version};
//! use acp_rpc::AgentContext;
//!
//! struct Agent;
//! impl v1::methods::agent::Handler<AgentContext> for Agent {
//!     async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
//!         Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
//!     }
//!     async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
//!         let echo = v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(p.prompt[0].clone())));
//!         cx.v1()?.update(&p.session_id, echo).await?;
//!         Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
//!     }
//! }
//!
//! # async fn run() -> std::io::Result<()> {
//! acp_rpc::agent::serve_stdio(acp_rpc::V1(Agent), &[Version::V1]).await
//! # }
//! ```
//!
//! In v2 a prompt is a turn that outlives its request: implement
//! [`PromptTurn`](agent::PromptTurn) beside the v2 handler; the runtime answers `session/prompt`,
//! reports the user message, `running` and `idle`, and runs `prompt_turn` with a
//! [`Turn`](agent::Turn) whose cancellation `session/cancel` reaches. An agent that speaks both
//! versions implements both handlers and `PromptTurn`, and is served as it is.
//!
//! # Writing a client
//!
//! Implement the client handler of your version for what the agent asks of you (permission, files,
//! terminals; defaults refuse), spawn or connect the agent, and drive sessions: `negotiate` (or
//! the strict `initialize_v1` / `initialize_v2`), `authenticate` when the agent asks for it,
//! `new_session_v1` / `new_session_v2`, then per prompt a turn: its typed updates in order, then
//! its outcome. A spawned agent runs in its own process group, ended with it.
//!
//! ```no_run
//! use acp_rpc::types::v1;
//! use acp_rpc::ClientContext;
//!
//! struct Client;
//! impl v1::methods::client::Handler<ClientContext> for Client {}
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let (conn, driver, _agent) = acp_rpc::client::spawn_agent(acp_rpc::V1(Client), "my-agent", &[], Default::default())?;
//! tokio::spawn(driver);
//! conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
//! let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/work".into(), vec![])).await?;
//! let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hi".into()))]).await;
//! while let Some(update) = turn.next().await {
//!     println!("{:?}", update.tag());
//! }
//! println!("{}", turn.outcome().await?.stop_reason);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod agent;
pub mod auth;
pub mod client;
#[cfg(feature = "unstable")]
pub mod conductor;
#[cfg(feature = "unstable")]
mod envelope;
mod error;
mod extension;
pub mod jsonrpc;
mod lifecycle;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "mock")]
pub mod mock;
#[cfg(feature = "http")]
pub mod net;
#[cfg(feature = "unstable")]
pub mod proxy;
pub mod rules;
pub mod spawn;
mod sync;
mod versions;

pub use agent::AgentContext;
pub use client::ClientContext;
pub use error::{Error, Misuse};
pub use extension::Extended;
pub use jsonrpc::{Config, Connection};
pub use versions::{V1, V2};

pub use acp_types as types;
