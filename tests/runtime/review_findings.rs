//! Regression tests for the faults a review of the connection found: each once hung, deadlocked,
//! lost a message or put invalid JSON on the wire.

use acp_rpc::jsonrpc::{BoxFuture, Raw as RawV, RequestContext, Service};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, Config, Connection};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

struct Svc {
    seen: Arc<AtomicUsize>,
    call_peer: bool,
    conn: Connection,
}
impl Service for Svc {
    fn request(&self, _: String, _: Option<RawV>, _: RequestContext) -> BoxFuture<Result<RawV, RpcError>> {
        Box::pin(async { Err(RpcError::internal("no")) })
    }
    fn notification(&self, _: String, _: Option<RawV>, _: Connection) -> BoxFuture<()> {
        let (seen, call, conn) = (self.seen.clone(), self.call_peer, self.conn.clone());
        Box::pin(async move {
            if call && seen.load(Ordering::SeqCst) == 0 {
                conn.request_raw("ping", None).await.expect("peer answers");
            } else if !call {
                // Slow handlers let notifications queue up (the barrier test needs a backlog).
                tokio::time::sleep(Duration::from_millis(30)).await;
            }
            seen.fetch_add(1, Ordering::SeqCst);
        })
    }
}

/// The raw peer's ends of the pipe.
type PeerLines = tokio::io::Lines<BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>;
type PeerWrite = tokio::io::WriteHalf<tokio::io::DuplexStream>;

/// Nothing more is written to the peer within a short while.
async fn silent(lines: &mut PeerLines) {
    if let Ok(Ok(Some(line))) = tokio::time::timeout(Duration::from_millis(300), lines.next_line()).await {
        panic!("a response was answered: {line}");
    }
}

/// The call resolves, with an error, in time.
async fn fails(call: tokio::task::JoinHandle<Result<RawV, acp_rpc::Error>>) {
    let r = tokio::time::timeout(Duration::from_secs(3), call).await.expect("the pending call resolves").expect("task");
    assert!(matches!(r, Err(acp_rpc::Error::Protocol(_))), "{r:?}");
}

fn setup(cfg: Config, call_peer: bool) -> (Connection, Arc<AtomicUsize>, PeerLines, PeerWrite) {
    let (a, b) = tokio::io::duplex(1 << 20);
    let (ar, aw) = tokio::io::split(a);
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let (conn, driver) = Connection::new(ar, aw, cfg, move |conn| Svc { seen: s, call_peer, conn });
    tokio::spawn(driver);
    let (br, bw) = tokio::io::split(b);
    (conn, seen, BufReader::new(br).lines(), bw)
}

// F1: sync_notifications returns before queued notifications ran when the peer closes right after answering.
#[tokio::test]
async fn sync_notifications_after_peer_eof() {
    let (conn, seen, mut lines, mut w) = setup(Config::default(), false);
    let call = {
        let c = conn.clone();
        tokio::spawn(async move { c.request_raw("x", None).await })
    };
    lines.next_line().await.unwrap();
    let mut out = String::new();
    for _ in 0..5 {
        out.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n");
    }
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":1}\n");
    w.write_all(out.as_bytes()).await.unwrap();
    w.shutdown().await.unwrap();
    drop(w);
    call.await.unwrap().expect("answered");
    conn.sync_notifications().await;
    assert_eq!(seen.load(Ordering::SeqCst), 5, "sync_notifications returned early");
}

// F2: a too-long *response* leaves our call pending forever and we send an error carrying the peer's response id.
#[tokio::test]
async fn too_long_response_hangs_call() {
    let (conn, _, mut lines, mut w) = setup(Config { max_message_size: 1024, ..Config::default() }, false);
    let call = {
        let c = conn.clone();
        tokio::spawn(async move { c.request_raw("x", None).await })
    };
    lines.next_line().await.unwrap();
    let big = format!("{{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":\"{}\"}}\n", "x".repeat(4000));
    w.write_all(big.as_bytes()).await.unwrap();
    fails(call).await;
    silent(&mut lines).await;
}

// F3: a malformed response (both result and error / error without message) leaves the call pending and is answered.
#[tokio::test]
async fn malformed_response_hangs_call() {
    for bad in [
        r#"{"jsonrpc":"2.0","id":0,"result":1,"error":{"code":1,"message":"m"}}"#,
        r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32000}}"#,
    ] {
        let (conn, _, mut lines, mut w) = setup(Config::default(), false);
        let call = {
            let c = conn.clone();
            tokio::spawn(async move { c.request_raw("x", None).await })
        };
        lines.next_line().await.unwrap();
        w.write_all(format!("{bad}\n").as_bytes()).await.unwrap();
        fails(call).await;
        silent(&mut lines).await;
    }
}

// F4: a notification handler awaiting the peer while notifications keep coming must not block
// the reader (it once did when the bounded notification queue filled up).
#[tokio::test]
async fn notification_queue_deadlock() {
    let (_conn, seen, mut lines, mut w) = setup(Config::default(), true);
    let n = "{\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n";
    w.write_all(n.as_bytes()).await.unwrap();
    let req: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    // More than the 1024-entry bound the queue once had.
    w.write_all(n.repeat(1500).as_bytes()).await.unwrap();
    w.write_all(format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":1}}\n", req["id"]).as_bytes()).await.unwrap();
    for _ in 0..100 {
        if seen.load(Ordering::SeqCst) == 1501 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    panic!("deadlock: only {} notifications handled", seen.load(Ordering::SeqCst));
}

// F5: session/cancel right behind session/prompt is lost (registration happens only when the handler first runs).
struct WaitAgent;
impl v1::methods::agent::Handler<AgentContext> for WaitAgent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_prompt(&self, _: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        cx.cancelled().await;
        Ok(v1::PromptResponse::new(v1::StopReason::Cancelled))
    }
}
impl v2::methods::agent::Handler<AgentContext> for WaitAgent {}
impl acp_rpc::agent::PromptTurn for WaitAgent {}

#[tokio::test]
async fn session_cancel_right_after_prompt_is_lost() {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (_, driver) = acp_rpc::agent::serve(WaitAgent, &[Version::V1], ar, aw, Config::default());
    tokio::spawn(driver);
    let (br, mut w) = tokio::io::split(b);
    let mut lines = BufReader::new(br).lines();
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n")
        .await
        .unwrap();
    lines.next_line().await.unwrap();
    let p = json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}});
    let c = json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}});
    w.write_all(format!("{p}\n{c}\n").as_bytes()).await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(3), lines.next_line()).await;
    assert!(r.is_ok(), "session/cancel was lost: the prompt never ends");
}

// F6: the id found in an over-long line is echoed unvalidated: invalid JSON / object ids go on the wire.
#[tokio::test]
async fn too_long_request_id_echoed_raw() {
    for id in ["tru\"e", "{\"a\":1}"] {
        let (_conn, _, mut lines, mut w) = setup(Config { max_message_size: 64, ..Config::default() }, false);
        let line = format!("{{\"id\":{id},\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"{}\"}}\n", "x".repeat(200));
        w.write_all(line.as_bytes()).await.unwrap();
        // An unusable id gets no answer at all (there is nothing the peer could match it to).
        silent(&mut lines).await;
    }
    let (_conn, _, mut lines, mut w) = setup(Config { max_message_size: 64, ..Config::default() }, false);
    let line = format!("{{\"id\":\"q7\",\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":\"{}\"}}\n", "x".repeat(200));
    w.write_all(line.as_bytes()).await.unwrap();
    let back: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!((back["id"].clone(), back["error"]["code"].clone()), (json!("q7"), json!(-32600)));
}

#[tokio::test]
async fn error_without_message_hangs_call() {
    let (conn, _, mut lines, mut w) = setup(Config::default(), false);
    let call = {
        let c = conn.clone();
        tokio::spawn(async move { c.request_raw("x", None).await })
    };
    lines.next_line().await.unwrap();
    w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32000}}\n").await.unwrap();
    fails(call).await;
    silent(&mut lines).await;
}
