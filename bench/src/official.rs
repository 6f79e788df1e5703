//! The runtime rows for the official runtime `agent-client-protocol` 5.2.0, doing the same work as
//! [`crate::ours`]: protocol v1 connections built with `Agent.v1()` / `Client.v1()`, typed
//! handlers for the real ACP messages, and the crate's own transports (`ByteStreams` over
//! `tokio::io::duplex` halves through `tokio_util::compat`, `Stdio` for the agent process and
//! `AcpAgent` for spawning it).
//!
//! Runtime: like `ours`, a tokio multi-thread runtime with 2 worker threads. The official crate
//! requires `Send` handlers, transports and connection futures, so no `LocalSet` is needed. It is
//! executor-agnostic: one connection (its transport reader and writer, dispatch loop and handlers)
//! is a single future, here `connect_to` / `connect_with` polled by one tokio task per side.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ContentBlock, InitializeRequest, InitializeResponse, SessionNotification, SessionUpdate, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{v1, AcpAgent, AcpAgentConfig, Agent, ByteStreams, Client, HandleDispatchFrom, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime")
}

/// The agent of the round-trip and notification rows: answers `initialize` (which also turns on
/// the crate's v1 guard that rejects other requests before initialization) and
/// `session/set_mode` with an empty response.
fn agent() -> v1::Builder<Agent, impl HandleDispatchFrom<Client> + 'static> {
    Agent
        .v1()
        .on_receive_request(
            async |initialize: InitializeRequest, responder, _cx| {
                responder.respond(InitializeResponse::new(initialize.protocol_version))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async |_: SetSessionModeRequest, responder, _cx| responder.respond(SetSessionModeResponse::new()),
            agent_client_protocol::on_receive_request!(),
        )
}

/// Counts `session/update` notifications and wakes the waiter at `target` (as in `ours`).
#[derive(Clone, Default)]
struct Counter {
    seen: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    target: Arc<AtomicUsize>,
    done: Arc<Notify>,
}

impl Counter {
    fn record(&self, n: &SessionNotification) {
        if let SessionUpdate::AgentMessageChunk(chunk) = &n.update {
            if let ContentBlock::Text(t) = &chunk.content {
                self.bytes.fetch_add(t.text.len(), Ordering::Relaxed);
            }
        }
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target.load(Ordering::Relaxed) {
            self.done.notify_one();
        }
    }
}

/// A v1 client whose typed `session/update` handler feeds `counter`.
fn client(counter: Counter) -> v1::Builder<Client, impl HandleDispatchFrom<Agent> + 'static> {
    Client.v1().on_receive_notification(
        async move |n: SessionNotification, _cx| {
            counter.record(&n);
            Ok(())
        },
        agent_client_protocol::on_receive_notification!(),
    )
}

fn params() -> SetSessionModeRequest {
    serde_json::from_value(crate::corpus::set_mode_params()).expect("params")
}

/// `n` `session/set_mode` round trips with `in_flight` outstanding at a time, client → agent over
/// `tokio::io::duplex`; returns the total time and the latency of each request.
///
/// The agent runs `Agent.v1()…connect_to(ByteStreams)` in a spawned task; the client runs
/// `Client.v1().connect_with(ByteStreams, …)`, initializes, and inside its foreground spawns
/// `in_flight` tasks that each send their share with `send_request(…).block_task()` on a clone
/// of the connection.
pub fn latencies(n: usize, in_flight: usize) -> (Duration, Vec<Duration>) {
    runtime().block_on(async {
        let (client_io, agent_io) = tokio::io::duplex(64 * 1024);
        let (agent_read, agent_write) = tokio::io::split(agent_io);
        let (client_read, client_write) = tokio::io::split(client_io);
        tokio::spawn(agent().connect_to(ByteStreams::new(agent_write.compat_write(), agent_read.compat())));
        let transport = ByteStreams::new(client_write.compat_write(), client_read.compat());
        Client
            .v1()
            .connect_with(transport, async |cx| {
                cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
                let params = params();
                let start = Instant::now();
                let mut workers = Vec::new();
                for w in 0..in_flight {
                    let cx = cx.clone();
                    let params = params.clone();
                    let share = n / in_flight + usize::from(w < n % in_flight);
                    workers.push(tokio::spawn(async move {
                        let mut lat = Vec::with_capacity(share);
                        for _ in 0..share {
                            let t = Instant::now();
                            cx.send_request(params.clone()).block_task().await.expect("answered");
                            lat.push(t.elapsed());
                        }
                        lat
                    }));
                }
                let mut all = Vec::with_capacity(n);
                for w in workers {
                    all.extend(w.await.expect("worker"));
                }
                Ok((start.elapsed(), all))
            })
            .await
            .expect("client connection")
    })
}

/// The agent process of the notification row: `Agent.v1()` on the crate's `Stdio` transport
/// sends `count` `session/update` notifications (`send_notification`), then keeps serving until
/// the client hangs up (`incoming_closed`).
pub fn notify_agent(count: usize) {
    runtime().block_on(async {
        let update: SessionNotification = serde_json::from_value(crate::corpus::chunk_params(64)).expect("update");
        agent()
            .connect_with(Stdio::new(), async |cx| {
                for _ in 0..count {
                    cx.send_notification(update.clone())?;
                }
                // Wait for the client to hang up after it counted everything.
                cx.incoming_closed().await;
                Ok(())
            })
            .await
            .expect("agent connection");
    });
}

/// The client of the notification row: `Client.v1().connect_with(AcpAgent, …)` spawns
/// `exe notify-agent official COUNT` (the crate's process transport: piped stdin/stdout/stderr)
/// and sends `initialize`; the time from before the spawn until the `session/update` handler has
/// seen `count` notifications. Returning from the foreground then shuts the agent down the
/// crate's way (stdin closed, the agent exits on EOF; SIGTERM/SIGKILL only if it does not).
pub fn notify_client(exe: &std::path::Path, count: usize) -> Duration {
    runtime().block_on(async {
        let counter = Counter::default();
        counter.target.store(count, Ordering::Relaxed);
        let done = counter.done.clone();
        let start = Instant::now();
        let agent = AcpAgent::new(AcpAgentConfig::new(exe).args(["notify-agent", "official", &count.to_string()]));
        client(counter)
            .connect_with(agent, async |cx| {
                // As every ACP client does first (the agent's notifications do not wait for it).
                cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
                done.notified().await;
                Ok(start.elapsed())
            })
            .await
            .expect("client connection")
    })
}

/// One `session/update` of about `size` bytes through the official client's framing and decoding
/// (a fake agent writes it into `tokio::io::duplex` in 64 KiB pieces after answering
/// `initialize`); the time from the start of writing until the typed `session/update` handler
/// has the decoded chunk. The crate has no message-size limit to configure (its byte transport
/// reads whole lines with `futures::io::BufReader::lines`).
pub fn large_message(size: usize) -> (Duration, u64) {
    runtime().block_on(async {
        let (agent_end, client_end) = tokio::io::duplex(64 * 1024);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let counter = Counter::default();
        counter.target.store(1, Ordering::Relaxed);
        let (done, bytes, target) = (counter.done.clone(), counter.bytes.clone(), counter.target.clone());
        let agent = tokio::spawn(crate::corpus::answer_initialize(agent_read, agent_write));
        let transport = ByteStreams::new(client_write.compat_write(), client_read.compat());
        client(counter)
            .connect_with(transport, async |cx| {
                cx.send_request(InitializeRequest::new(ProtocolVersion::V1)).block_task().await?;
                let (_agent_read, mut agent_write) = agent.await.expect("agent");
                crate::corpus::write_notification(&mut agent_write, crate::corpus::WARM_UP).await;
                done.notified().await;
                target.store(2, Ordering::Relaxed);
                let baseline = crate::reset_peak();
                let start = Instant::now();
                let writer = tokio::spawn(async move {
                    crate::corpus::write_notification(&mut agent_write, size).await;
                    agent_write
                });
                done.notified().await;
                let elapsed = start.elapsed();
                assert!(bytes.load(Ordering::Relaxed) >= size, "the chunk arrived whole");
                let _ = writer.await;
                Ok((elapsed, baseline))
            })
            .await
            .expect("client connection")
    })
}
