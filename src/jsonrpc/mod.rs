//! The JSON-RPC 2.0 layer under the roles, for transports, tools and tests: most users need none
//! of it (the [`agent`](crate::agent) and [`client`](crate::client) modules build on it). One
//! connection: correlation of our requests with their responses, concurrent handling of the
//! peer's requests (a handler may await requests to the peer: the reading loop never waits on a
//! handler), notifications handled one at a time in arrival order, `$/cancel_request` both ways,
//! and the JSON-RPC error a peer expects for anything malformed. The connection keeps serving
//! after every fault; it ends when the peer closes its side.
//!
//! One job per module: `connection` holds the [`Connection`] handle and the state its tasks
//! share; `config` its [`Config`]; `service` the [`Service`] that handles the peer's messages and
//! what it gets ([`RequestContext`]); `raw` the [`Raw`] JSON text of params and results;
//! `framing` cuts the byte stream into lines (linear time, bounded size; its limits are
//! [`MAX_DEPTH`] and [`PREFIX`]); `classify` judges a line alone (pure); `reader` reads the
//! transport and routes each line; `handlers` runs the peer's requests; `notifications` queues
//! the peer's notifications (each a `note`) and handles them in order (and the holds relayed
//! answers put in that order); `pending` the calls awaiting an answer; `calls` makes our calls
//! and correlates the answers; `relay` the calls made for a peer's peer (answers kept in order,
//! cancellation passed on); `writer` owns the write queue; `driver` starts these tasks
//! ([`Connection::new`], [`Connection::over`]) and closes them in order; `transport` is what the
//! reader reads and the writer writes (a pipe, or message channels).
//!
//! What is public here is for those who work below the roles: a [`Transport`] of their own
//! ([`Source`], [`Sink`], or [`Channels`] fed by a network listener), and a peer that speaks raw
//! JSON-RPC ([`Connection::new`] with a [`Service`], as a test's hostile peer or a tool's
//! recorder does). The framing and the classifier stay inside; a build with `--cfg fuzzing`
//! (`cargo xtask fuzz`) makes them public for the fuzz targets.

mod calls;
mod classify;
mod config;
mod connection;
mod driver;
#[cfg(fuzzing)]
pub mod framing;
#[cfg(not(fuzzing))]
pub(crate) mod framing;
mod handlers;
mod note;
mod notifications;
mod pending;
mod raw;
mod reader;
mod relay;
mod service;
mod transport;
mod writer;

#[cfg(fuzzing)]
pub use classify::{classify, Incoming};
pub use config::Config;
pub use connection::Connection;
pub use framing::{MAX_DEPTH, PREFIX};
pub use raw::Raw;
pub use relay::NotificationHold;
pub use service::{BoxFuture, RequestContext, Service};
#[cfg(feature = "ws")]
pub(crate) use transport::message_frame;
pub use transport::{ChannelSource, Channels, Pipe, PipeWriter, Sink, Source, Transport};
