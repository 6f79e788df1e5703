//! The runtime rows for `acp-rpc`: the agent and client ends of `acp_rpc::{agent, client}`.

use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, Version};
use acp_rpc::{AgentContext, ClientContext, Config};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Answers `initialize` (and wakes `initialized`) and `session/set_mode`.
#[derive(Default)]
struct Agent {
    initialized: Arc<Notify>,
}

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        self.initialized.notify_one();
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_set_mode(
        &self,
        _: v1::SetSessionModeRequest,
        _: AgentContext,
    ) -> Result<v1::SetSessionModeResponse, RpcError> {
        Ok(v1::SetSessionModeResponse::default())
    }
}
impl acp_rpc::types::v2::methods::agent::Handler<AgentContext> for Agent {}
impl acp_rpc::agent::PromptTurn for Agent {}

/// Counts `session/update` notifications and wakes the waiter at `target`.
#[derive(Clone, Default)]
struct Client {
    seen: Arc<AtomicUsize>,
    bytes: Arc<AtomicUsize>,
    target: Arc<AtomicUsize>,
    done: Arc<Notify>,
}

impl v1::methods::client::Handler<ClientContext> for Client {
    async fn session_update(&self, n: v1::SessionNotification, _: ClientContext) {
        if let v1::SessionUpdate::AgentMessageChunk(chunk) = &n.update {
            if let v1::ContentBlock::Text(t) = &chunk.content {
                self.bytes.fetch_add(t.text.len(), Ordering::Relaxed);
            }
        }
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 == self.target.load(Ordering::Relaxed) {
            self.done.notify_one();
        }
    }
}
impl acp_rpc::types::v2::methods::client::Handler<ClientContext> for Client {}

fn big_config() -> Config {
    Config { max_message_size: 256 * 1024 * 1024, ..Config::default() }
}

/// A client connected to an agent over in-memory pipes, initialized (v1).
async fn pair() -> acp_rpc::client::ClientConnection {
    let (client_io, agent_io) = tokio::io::duplex(64 * 1024);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (client_read, client_write) = tokio::io::split(client_io);
    let (_, agent_driver) =
        acp_rpc::agent::serve(Agent::default(), &[Version::V1], agent_read, agent_write, big_config());
    tokio::spawn(agent_driver);
    let (conn, driver) = acp_rpc::client::connect(Client::default(), client_read, client_write, big_config());
    tokio::spawn(driver);
    conn.initialize(Version::V1, serde_json::json!({})).await.expect("initialize");
    conn
}

fn params() -> v1::SetSessionModeRequest {
    serde_json::from_value(crate::corpus::set_mode_params()).expect("params")
}

/// `n` `session/set_mode` round trips with `in_flight` outstanding at a time; the latency of each.
pub fn latencies(n: usize, in_flight: usize) -> (Duration, Vec<Duration>) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let conn = pair().await;
        let params = params();
        let start = Instant::now();
        let mut workers = Vec::new();
        for w in 0..in_flight {
            let conn = conn.connection().clone();
            let params = params.clone();
            let share = n / in_flight + usize::from(w < n % in_flight);
            workers.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(share);
                for _ in 0..share {
                    let t = Instant::now();
                    conn.request::<v1::methods::SessionSetMode>(&params).await.expect("answered");
                    lat.push(t.elapsed());
                }
                lat
            }));
        }
        let mut all = Vec::with_capacity(n);
        for w in workers {
            all.extend(w.await.expect("worker"));
        }
        (start.elapsed(), all)
    })
}

/// The agent process of the notification row: `count` notifications to stdout, then exit.
pub fn notify_agent(count: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let agent = Agent::default();
        let initialized = agent.initialized.clone();
        let (conn, driver) =
            acp_rpc::agent::serve(agent, &[Version::V1], tokio::io::stdin(), tokio::io::stdout(), big_config());
        let driver = tokio::spawn(driver);
        // A client drops notifications that come before the version is agreed.
        initialized.notified().await;
        let update: v1::SessionNotification = serde_json::from_value(crate::corpus::chunk_params(64)).expect("update");
        for _ in 0..count {
            conn.notify::<v1::methods::SessionUpdate>(&update).await.expect("sent");
        }
        // Wait for the client to hang up after it counted everything.
        let _ = driver.await;
    });
}

/// The client of the notification row: spawns `exe notify-agent ours COUNT`, times `count`
/// notifications from the first to the last.
pub fn notify_client(exe: &std::path::Path, count: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let client = Client::default();
        client.target.store(count, Ordering::Relaxed);
        let done = client.done.clone();
        let args = vec!["notify-agent".to_string(), "ours".to_string(), count.to_string()];
        let start = Instant::now();
        let (conn, driver, child) =
            acp_rpc::client::spawn_agent(client, &exe.display().to_string(), &args, big_config()).expect("spawn");
        tokio::spawn(driver);
        conn.initialize(Version::V1, serde_json::json!({})).await.expect("initialize");
        done.notified().await;
        let elapsed = start.elapsed();
        drop(conn);
        let _ = child.shutdown().await;
        elapsed
    })
}

/// One `session/update` of about `size` bytes through framing and decoding (agent → client over
/// an in-memory pipe); the time until the handler has the decoded chunk.
pub fn large_message(size: usize) -> (Duration, u64) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let (agent_end, client_end) = tokio::io::duplex(64 * 1024);
        let (client_read, client_write) = tokio::io::split(client_end);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let client = Client::default();
        client.target.store(1, Ordering::Relaxed);
        let (done, bytes, target) = (client.done.clone(), client.bytes.clone(), client.target.clone());
        let (conn, driver) = acp_rpc::client::connect(client, client_read, client_write, big_config());
        tokio::spawn(driver);
        let agent = tokio::spawn(crate::corpus::answer_initialize(agent_read, agent_write));
        conn.initialize(Version::V1, serde_json::json!({})).await.expect("initialize");
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
        drop(conn);
        (elapsed, baseline)
    })
}
