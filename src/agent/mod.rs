//! The agent's role: serving an agent handler to a client, v1 and v2 in one binary. On
//! `initialize` the agent answers the highest version it supports that is at most the one
//! requested (when there is none: -32022 from an agent that speaks v2, its only version from a
//! v1-only one), and decodes everything after with that version's generated tables.
//!
//! - [`serve`], [`serve_over`], [`serve_stdio`]: an [`AgentHandler`] on a connection;
//! - [`AgentContext`]: what each handler gets: calls to the client, checked against what it
//!   advertised ([`AgentContext::v1`], [`AgentContext::v2`], [`AgentContext::request`]), and
//!   cancellation;
//! - [`PromptTurn`] and [`Turn`]: the v2 prompt turn, which outlives its request;
//! - [`TerminalHandle`]: a v1 terminal the client runs for the agent.
//!
//! The runtime keeps the protocol's lifecycle rules for the agent, each named by its id in
//! [`crate::rules`]: `init.first` (-32600 before `initialize`), `turn.v1-cancelled` (a v1
//! `session/prompt` answered while or after its session was cancelled ends `cancelled`,
//! whatever the handler returned), `turn.v2-user-message`, `turn.v2-running-idle` and
//! `turn.v2-cancelled` (v2 `session/prompt` is a turn the runtime runs: the user message is
//! inserted and reported, the request answered with its `messageId`, `running` and `idle`
//! reported around [`PromptTurn::prompt_turn`]), and `cap.client-fs` / `cap.client-terminal` (a
//! call the client did not advertise is not sent: [`Misuse::NotAdvertised`](crate::Misuse)).

mod calls;
mod context;
mod handler;
mod initialize;
mod prompt;
mod serve;
mod terminal;
mod turn;

pub use calls::{ClientV1, ClientV2};
pub use context::{AgentContext, ClientCapabilities};
pub use handler::{AgentHandler, PromptTurn};
pub use serve::{serve, serve_over, serve_stdio};
pub use terminal::TerminalHandle;
pub use turn::Turn;
