//! The proxy role, driven in-process by a scripted conductor (raw JSON lines over
//! `jsonrpc::Channels`): `proxy/initialize` forwarded with the successor's version kept,
//! pass-through both ways as raw JSON, ids per hop, cancellation passed on as our own
//! `$/cancel_request`, hooks that answer locally, inject and drop, the order of answers and
//! notifications (v1 updates before the answer, v2 answer before `running`), malformed
//! envelopes; and the example proxy binary on real pipes.
#![cfg(feature = "unstable")]

use acp_rpc::jsonrpc::{Channels, Config};
use acp_rpc::proxy::{serve_proxy_over, Notification, PassThrough, ProxyContext, ProxyHandler, Request, Response};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The conductor's end of one proxy's connection.
struct Conductor {
    to_proxy: mpsc::Sender<Vec<u8>>,
    from_proxy: mpsc::Receiver<Vec<u8>>,
}

impl Conductor {
    fn start<H: ProxyHandler>(proxy: H) -> Self {
        Self::start_with(proxy, Config::default())
    }

    fn start_with<H: ProxyHandler>(proxy: H, config: Config) -> Self {
        Self::spawn(proxy, config).0
    }

    /// The conductor's end, and the task driving the proxy's connection.
    fn spawn<H: ProxyHandler>(proxy: H, config: Config) -> (Self, tokio::task::JoinHandle<std::io::Result<()>>) {
        let (to_proxy, incoming) = mpsc::channel(64);
        let (outgoing, from_proxy) = mpsc::channel(64);
        let (_, driver) = serve_proxy_over(Arc::new(proxy), Channels { incoming, outgoing }, config);
        (Conductor { to_proxy, from_proxy }, tokio::spawn(driver))
    }

    async fn send_text(&self, text: &str) {
        self.to_proxy.send(text.as_bytes().to_vec()).await.expect("proxy reads");
    }

    async fn send(&self, message: Value) {
        self.send_text(&message.to_string()).await;
    }

    /// The next message the proxy writes, as its text.
    async fn next_text(&mut self) -> String {
        String::from_utf8(self.from_proxy.recv().await.expect("proxy writes")).expect("utf-8")
    }

    async fn next(&mut self) -> Value {
        serde_json::from_str(&self.next_text().await).expect("JSON")
    }

    /// `proxy/initialize` of `version`, forwarded and answered by the test as the successor.
    async fn initialize(&mut self, version: u16) {
        self.send(json!({"jsonrpc": "2.0", "id": "init", "method": "proxy/initialize",
            "params": {"protocolVersion": version, "clientCapabilities": {}}}))
            .await;
        let forwarded = self.next().await;
        assert_eq!(forwarded["method"], "proxy/successor", "{forwarded}");
        assert_eq!(forwarded["params"]["method"], "initialize", "{forwarded}");
        self.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "result": {"protocolVersion": version}})).await;
        let answer = self.next().await;
        assert_eq!(answer, json!({"jsonrpc": "2.0", "id": "init", "result": {"protocolVersion": version}}));
    }

    /// Answers our own call `id` of the proxy with `result` (raw text).
    async fn answer(&self, id: &Value, result: &str) {
        self.send_text(&format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)).await;
    }
}

/// The raw text of the member at `path` in the JSON text `text`.
fn raw_at(text: &str, path: &[&str]) -> String {
    let mut text = text.to_string();
    for key in path {
        let object: HashMap<String, Box<RawValue>> = serde_json::from_str(&text).expect("an object");
        text = object.get(*key).unwrap_or_else(|| panic!("no {key} in {text}")).get().to_string();
    }
    text
}

const PROMPT_PARAMS: &str = r#"{"sessionId":"s1",  "prompt":[{"type":"text","text":"hi","_future":1}],"_meta":{"k":[1,2]},"unknownField":{"x":null}}"#;

#[tokio::test]
async fn proxy_initialize_is_forwarded_as_it_is_and_answered_with_the_successors_answer() {
    let mut c = Conductor::start(PassThrough);
    let params = r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true}},"_new":{"a":1}}"#;
    c.send_text(&format!(r#"{{"jsonrpc":"2.0","id":7,"method":"proxy/initialize","params":{params}}}"#)).await;
    let forwarded = c.next_text().await;
    let envelope: Value = serde_json::from_str(&forwarded).unwrap();
    assert_eq!(envelope["method"], "proxy/successor");
    assert_eq!(envelope["params"]["method"], "initialize");
    assert_eq!(raw_at(&forwarded, &["params", "params"]), params);
    let result = r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"_later":[1]},"authMethods":[]}"#;
    c.answer(&envelope["id"], result).await;
    let answer = c.next_text().await;
    assert_eq!(raw_at(&answer, &["id"]), "7");
    assert_eq!(raw_at(&answer, &["result"]), result);
}

#[tokio::test]
async fn a_plain_initialize_says_that_a_proxy_runs_under_a_conductor() {
    let mut c = Conductor::start(PassThrough);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})).await;
    let answer = c.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("conductor"), "{answer}");
    assert_eq!(answer["error"]["data"]["expected"], "proxy/initialize");
}

#[tokio::test]
async fn requests_before_proxy_initialize_are_refused_naming_the_rule() {
    let mut c = Conductor::start(PassThrough);
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}})).await;
    let answer = c.next().await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["error"]["data"]["rule"], "init.first", "{answer}");
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "proxy/successor", "params": {"method": "x"}})).await;
    assert_eq!(c.next().await["error"]["data"]["rule"], "init.first");
}

/// A proxy whose `initialize` hook changes what it may not, or nothing but capabilities.
enum Init {
    Capabilities,
    Version,
    NoForward,
}

impl ProxyHandler for Init {
    async fn initialize(&self, request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        match self {
            Init::NoForward => {
                Ok(Response::new(RawValue::from_string(r#"{"protocolVersion":2}"#.into()).unwrap(), None))
            }
            Init::Version => {
                let mut response = cx.agent().forward_request(request).await?;
                response.edit::<v2::methods::Initialize>(|r| r.protocol_version = v2::ProtocolVersion(1))?;
                Ok(response)
            }
            Init::Capabilities => {
                assert_eq!(request.version(), Some(acp_rpc::types::Version::V2));
                let mut response = cx.agent().forward_request(request).await?;
                assert!(response.edit::<v2::methods::Initialize>(|r| {
                    r.info.name = "via-proxy".into();
                })?);
                Ok(response)
            }
        }
    }
}

#[tokio::test]
async fn an_initialize_hook_may_change_capabilities_but_not_the_version_and_must_forward() {
    for (hook, rule) in [
        (Init::Capabilities, None),
        (Init::Version, Some("proxy.same-version")),
        (Init::NoForward, Some("proxy.forward-initialize")),
    ] {
        let mut c = Conductor::start(hook);
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "proxy/initialize", "params": {"protocolVersion": 2}}))
            .await;
        if rule != Some("proxy.forward-initialize") {
            let forwarded = c.next().await;
            c.answer(
                &forwarded["id"],
                r#"{"protocolVersion":2,"info":{"name":"agent","version":"1","_i":0},"_unknown":"kept"}"#,
            )
            .await;
        }
        let answer = c.next().await;
        match rule {
            None => {
                assert_eq!(answer["result"]["protocolVersion"], 2, "{answer}");
                assert_eq!(answer["result"]["info"], json!({"name": "via-proxy", "version": "1", "_i": 0}), "{answer}");
                assert_eq!(answer["result"]["_unknown"], "kept", "{answer}");
            }
            Some(rule) => {
                assert_eq!(answer["error"]["code"], -32603, "{answer}");
                assert_eq!(answer["error"]["data"]["rule"], rule, "{answer}");
            }
        }
    }
}

#[tokio::test]
async fn requests_answers_errors_and_notifications_pass_through_both_ways_as_raw_json() {
    let mut c = Conductor::start(PassThrough);
    c.initialize(1).await;

    // From the client: wrapped, params as they came, under an id of the proxy's own.
    c.send_text(&format!(r#"{{"jsonrpc":"2.0","id":"c-1","method":"session/prompt","params":{PROMPT_PARAMS}}}"#)).await;
    let forwarded = c.next_text().await;
    let envelope: Value = serde_json::from_str(&forwarded).unwrap();
    assert_eq!(
        (envelope["method"].as_str(), envelope["params"]["method"].as_str()),
        (Some("proxy/successor"), Some("session/prompt"))
    );
    assert_eq!(raw_at(&forwarded, &["params", "params"]), PROMPT_PARAMS);
    assert_ne!(envelope["id"], "c-1");
    let result = r#"{"stopReason":"end_turn","_meta":{"usage":{"t":3}},"future":[true]}"#;
    c.answer(&envelope["id"], result).await;
    let answer = c.next_text().await;
    assert_eq!(raw_at(&answer, &["id"]), r#""c-1""#);
    assert_eq!(raw_at(&answer, &["result"]), result);

    // An error comes back as the same value.
    c.send(json!({"jsonrpc": "2.0", "id": 2, "method": "session/load", "params": {"sessionId": "nope"}})).await;
    let forwarded = c.next().await;
    let error = json!({"code": -32002, "message": "no such session", "data": {"sessionId": "nope", "why": [1]}});
    c.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "error": error})).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 2, "error": error}));

    // From the agent: unwrapped (the envelope's `_meta` stays on its hop), under an id of the
    // proxy's own; the answer goes back to the envelope's id.
    let permission = r#"{"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[],"_x":{}}"#;
    c.send_text(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"proxy/successor","params":{{"method":"session/request_permission","params":{permission},"_meta":{{"hop":1}}}}}}"#
    ))
    .await;
    let plain = c.next_text().await;
    let request: Value = serde_json::from_str(&plain).unwrap();
    assert_eq!(request["method"], "session/request_permission");
    assert_eq!(raw_at(&plain, &["params"]), permission);
    let outcome = r#"{"outcome":{"outcome":"selected","optionId":"allow"},"_y":0}"#;
    c.answer(&request["id"], outcome).await;
    let answer = c.next_text().await;
    assert_eq!(raw_at(&answer, &["id"]), "2");
    assert_eq!(raw_at(&answer, &["result"]), outcome);

    // Notifications: from the client wrapped, from the agent unwrapped, params as they are.
    let cancel = r#"{"sessionId":"s1","_why":"user"}"#;
    c.send_text(&format!(r#"{{"jsonrpc":"2.0","method":"session/cancel","params":{cancel}}}"#)).await;
    let wrapped = c.next_text().await;
    assert_eq!(raw_at(&wrapped, &["method"]), r#""proxy/successor""#);
    assert!(!wrapped.contains(r#""id""#), "{wrapped}");
    assert_eq!(raw_at(&wrapped, &["params", "method"]), r#""session/cancel""#);
    assert_eq!(raw_at(&wrapped, &["params", "params"]), cancel);
    let update = r#"{"sessionId":"s1","update":{"sessionUpdate":"future_kind","x":1},"_meta":null}"#;
    c.send_text(&format!(
        r#"{{"jsonrpc":"2.0","method":"proxy/successor","params":{{"method":"session/update","params":{update}}}}}"#
    ))
    .await;
    let plain = c.next_text().await;
    assert_eq!(raw_at(&plain, &["method"]), r#""session/update""#);
    assert_eq!(raw_at(&plain, &["params"]), update);
}

#[tokio::test]
async fn ids_are_per_hop_even_when_both_directions_use_the_same_one() {
    let mut c = Conductor::start(PassThrough);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": "client-1", "method": "_a/x", "params": {"from": "client"}})).await;
    let to_agent = c.next().await;
    let ours = to_agent["id"].clone();
    // The conductor's own request with the id the proxy chose for its call: another id space.
    c.send(json!({"jsonrpc": "2.0", "id": ours, "method": "proxy/successor",
        "params": {"method": "_b/y", "params": {"from": "agent"}}}))
        .await;
    let to_client = c.next().await;
    assert_eq!(to_client["method"], "_b/y");
    assert_ne!(to_client["id"], ours);
    // Answered in the other order; each goes back to the id it came with.
    c.answer(&to_client["id"], r#"{"side":"client"}"#).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": ours, "result": {"side": "client"}}));
    c.answer(&ours, r#"{"side":"agent"}"#).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": "client-1", "result": {"side": "agent"}}));
}

#[tokio::test]
async fn a_cancelled_request_is_cancelled_downstream_with_our_id_and_answered_by_the_successor() {
    let mut c = Conductor::start(PassThrough);
    c.initialize(1).await;

    // From the client: the successor answers -32800 itself; that is the answer.
    c.send(
        json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
    )
    .await;
    let forwarded = c.next().await;
    c.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p"}})).await;
    let cancel = c.next().await;
    assert_eq!(
        cancel,
        json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": forwarded["id"]}})
    );
    let error = json!({"code": -32800, "message": "cancelled by the agent", "data": {"at": "turn"}});
    c.send(json!({"jsonrpc": "2.0", "id": forwarded["id"], "error": error})).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": "p", "error": error}));

    // From the agent: the client answers with a result after all; that is the answer.
    c.send(json!({"jsonrpc": "2.0", "id": 40, "method": "proxy/successor",
        "params": {"method": "session/request_permission", "params": {"sessionId": "s"}}}))
        .await;
    let plain = c.next().await;
    c.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 40}})).await;
    assert_eq!(c.next().await["params"], json!({"requestId": plain["id"]}));
    c.answer(&plain["id"], r#"{"outcome":{"outcome":"cancelled"}}"#).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 40, "result": {"outcome": {"outcome": "cancelled"}}}));

    // Each was answered once: the next message is the next request's.
    c.send(json!({"jsonrpc": "2.0", "id": "after", "method": "_x/ping"})).await;
    let next = c.next().await;
    assert_eq!(
        (next["method"].as_str(), next["params"]["method"].as_str()),
        (Some("proxy/successor"), Some("_x/ping"))
    );
}

// The clock is paused: it moves only when every task waits, so the grace passes at once and the
// instant of the answer is exact.
#[tokio::test(start_paused = true)]
async fn a_successor_that_never_answers_a_cancel_gets_one_cancelled_answer_after_the_grace() {
    let grace = Duration::from_secs(5);
    let mut c = Conductor::start_with(PassThrough, Config { cancel_grace: grace, ..Config::default() });
    c.initialize(1).await;
    c.send(
        json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}),
    )
    .await;
    let forwarded = c.next().await;
    c.send(json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": "p"}})).await;
    let cancelled_at = Instant::now();
    assert_eq!(c.next().await["params"], json!({"requestId": forwarded["id"]}));
    // No answer from the successor: the proxy answers -32800 itself, not before the grace.
    let answer = c.next().await;
    assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!("p"), json!(-32800)), "{answer}");
    assert!(cancelled_at.elapsed() >= grace);
    // The successor's late answer is dropped: no second answer, no second cancel.
    c.answer(&forwarded["id"], r#"{"stopReason":"cancelled"}"#).await;
    c.send(json!({"jsonrpc": "2.0", "id": "after", "method": "_x/ping"})).await;
    assert_eq!(c.next().await["params"], json!({"method": "_x/ping"}));
}

/// A proxy whose request hook, after forwarding, waits until its request is cancelled.
struct Stuck;

impl ProxyHandler for Stuck {
    async fn client_request(&self, request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        let response = cx.agent().forward_request(request).await;
        cx.cancelled().await;
        response
    }
}

#[tokio::test(start_paused = true)]
async fn the_connection_ends_when_the_conductor_leaves_even_with_a_hook_stuck_after_forwarding() {
    let (mut c, driver) = Conductor::spawn(Stuck, Config::default());
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "_x/wait"})).await;
    let forwarded = c.next().await;
    c.answer(&forwarded["id"], "{}").await;
    c.send_text(&update_from_agent(0, "agent_message_chunk")).await;
    drop(c.to_proxy);
    // The answer is held behind the stuck hook; the conductor leaving ends it all the same. (On
    // the paused clock a deadlock reaches this virtual hour at once, and fails.)
    let ended = tokio::time::timeout(Duration::from_secs(3600), driver).await;
    assert!(ended.expect("the connection ends").expect("the driver ends").is_ok());
}

/// Hooks that answer locally, inject an update, and drop a notification.
struct Hooks;

impl ProxyHandler for Hooks {
    async fn client_request(&self, request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        if request.method() == "_proxy/later" {
            // Work that outlives the request, with its context: forwards after the answer.
            tokio::spawn(async move { cx.agent().forward_request(Request::new("_late/x", None)).await });
            return Ok(Response::new(RawValue::from_string("{}".into()).unwrap(), None));
        }
        if request.method() == "_proxy/hello" {
            return Ok(Response::new(RawValue::from_string(r#"{"from":"proxy"}"#.into()).unwrap(), cx.version()));
        }
        if let Some(prompt) = request.decode::<v1::methods::SessionPrompt>() {
            let prompt = prompt?;
            let text = v1::ContentBlock::from(v1::TextContent::new("[context from the proxy]".into()));
            let update = v1::SessionUpdate::AgentThoughtChunk(Box::new(v1::ContentChunk::new(text)));
            let note = v1::SessionNotification::new(prompt.session_id, update);
            cx.client().notify::<v1::methods::SessionUpdate>(&note).await?;
        }
        cx.agent().forward_request(request).await
    }

    async fn client_notification(&self, note: Notification, cx: ProxyContext) -> Result<(), RpcError> {
        if note.method().starts_with("_drop/") {
            return Ok(());
        }
        cx.agent().forward_notification(note).await
    }
}

#[tokio::test]
async fn a_hook_answers_locally_and_the_successor_never_sees_the_request() {
    let mut c = Conductor::start(Hooks);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": 3, "method": "_proxy/hello", "params": {}})).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 3, "result": {"from": "proxy"}}));
    c.send(json!({"jsonrpc": "2.0", "method": "_drop/this"})).await;
    c.send(json!({"jsonrpc": "2.0", "method": "_keep/this"})).await;
    assert_eq!(c.next().await["params"], json!({"method": "_keep/this"}));
}

#[tokio::test]
async fn a_forward_from_a_context_kept_beyond_its_request_holds_no_notification() {
    let mut c = Conductor::start(Hooks);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "_proxy/later"})).await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let late = c.next().await;
    assert_eq!(late["params"], json!({"method": "_late/x"}));
    c.answer(&late["id"], "{}").await;
    c.send_text(&update_from_agent(0, "agent_message_chunk")).await;
    assert_eq!(c.next().await["method"], "session/update");
}

#[tokio::test]
async fn a_hook_injects_a_session_update_before_passing_the_prompt_on() {
    let mut c = Conductor::start(Hooks);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": 9, "method": "session/prompt",
        "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}}))
        .await;
    let injected = c.next().await;
    assert_eq!(injected["method"], "session/update", "{injected}");
    assert!(injected.get("id").is_none());
    assert_eq!(injected["params"]["sessionId"], "s1");
    assert_eq!(injected["params"]["update"]["content"]["text"], "[context from the proxy]");
    let forwarded = c.next().await;
    assert_eq!(forwarded["params"]["method"], "session/prompt");
    c.answer(&forwarded["id"], r#"{"stopReason":"end_turn"}"#).await;
    assert_eq!(c.next().await["result"]["stopReason"], "end_turn");
}

/// A proxy whose hooks take a while (they yield to the scheduler) on the way back: the
/// notifications from the agent before passing them on, or the answers after the successor gave
/// them.
enum Slow {
    Notifications,
    Answers,
}

async fn take_a_while() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

impl ProxyHandler for Slow {
    async fn client_request(&self, request: Request, cx: ProxyContext) -> Result<Response, RpcError> {
        let response = cx.agent().forward_request(request).await;
        if let Slow::Answers = self {
            take_a_while().await;
        }
        response
    }

    async fn agent_notification(&self, note: Notification, cx: ProxyContext) -> Result<(), RpcError> {
        if let Slow::Notifications = self {
            take_a_while().await;
        }
        cx.client().forward_notification(note).await
    }
}

fn update_from_agent(n: usize, state: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"proxy/successor","params":{{"method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"{state}","n":{n}}}}}}}}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_updates_before_the_answer_go_on_before_it() {
    let mut c = Conductor::start(Slow::Notifications);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}))
        .await;
    let forwarded = c.next().await;
    // The successor's updates and its answer, in one burst.
    for n in 0..20 {
        c.send_text(&update_from_agent(n, "agent_message_chunk")).await;
    }
    c.answer(&forwarded["id"], r#"{"stopReason":"end_turn"}"#).await;
    for n in 0..20 {
        let update = c.next().await;
        assert_eq!(update["params"]["update"]["n"], n, "{update}");
    }
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 5, "result": {"stopReason": "end_turn"}}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_v2_turn_passes_through_answer_first_then_running_to_idle() {
    let mut c = Conductor::start(Slow::Answers);
    c.initialize(2).await;
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}))
        .await;
    let forwarded = c.next().await;
    // The answer at once, then the turn's updates, in one burst.
    c.answer(&forwarded["id"], r#"{"messageId":"m1"}"#).await;
    let states = ["user_message", "state_update", "agent_message_chunk", "state_update"];
    for (n, state) in states.iter().enumerate() {
        c.send_text(&update_from_agent(n, state)).await;
    }
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": 5, "result": {"messageId": "m1"}}));
    for (n, state) in states.iter().enumerate() {
        let update = c.next().await;
        assert_eq!(
            (update["params"]["update"]["n"].clone(), update["params"]["update"]["sessionUpdate"].clone()),
            (json!(n), json!(state))
        );
    }
}

#[tokio::test]
async fn a_notification_from_the_client_goes_on_before_the_request_behind_it() {
    let mut c = Conductor::start(PassThrough);
    c.initialize(1).await;
    c.send(json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}})).await;
    c.send(json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}}))
        .await;
    assert_eq!(c.next().await["params"]["method"], "session/cancel");
    assert_eq!(c.next().await["params"]["method"], "session/prompt");
}

#[tokio::test]
async fn malformed_envelopes_get_the_right_error_and_the_connection_keeps_serving() {
    let mut c = Conductor::start(PassThrough);
    c.initialize(1).await;
    let cases = [
        (json!({"params": {}}), -32602, Some("method")),
        (json!({"method": 5}), -32602, Some("method")),
        (json!({"method": "session/update", "params": "text"}), -32602, Some("params")),
        (json!({"method": "session/update", "params": 3}), -32602, Some("params")),
        (json!(["session/update"]), -32602, None),
        (json!({"method": "proxy/successor", "params": {"method": "x"}}), -32600, None),
        (json!({"method": "proxy/initialize", "params": {}}), -32600, None),
    ];
    for (n, (params, code, path)) in cases.into_iter().enumerate() {
        c.send(json!({"jsonrpc": "2.0", "id": n, "method": "proxy/successor", "params": params})).await;
        // A malformed notification is dropped (nothing to answer).
        c.send(json!({"jsonrpc": "2.0", "method": "proxy/successor", "params": params})).await;
        let answer = c.next().await;
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (json!(n), json!(code)),
            "{params}: {answer}"
        );
        if let Some(path) = path {
            assert_eq!(answer["error"]["data"]["path"], path, "{answer}");
        }
    }
    c.send(json!({"jsonrpc": "2.0", "id": "ok", "method": "proxy/successor", "params": {"method": "_x/fine"}})).await;
    let plain = c.next().await;
    assert_eq!(plain["method"], "_x/fine");
    assert!(plain.get("params").is_none(), "{plain}");
    c.answer(&plain["id"], "{}").await;
    assert_eq!(c.next().await, json!({"jsonrpc": "2.0", "id": "ok", "result": {}}));
}

#[test]
fn a_typed_edit_changes_what_it_changes_keeps_unknown_members_and_leaves_the_rest_as_it_came() {
    let text = r#"{"sessionId":"s", "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","_c":1},"_u":[2]},"_p":true}"#;
    let note = || Notification::new("session/update", Some(RawValue::from_string(text.into()).unwrap()));
    // Another version's marker, or another method's, matches nothing.
    let mut v2_note = note().with_version(Some(acp_rpc::types::Version::V2));
    assert!(!v2_note.edit::<v1::methods::SessionUpdate>(|_| unreachable!()).unwrap());
    assert!(v2_note.decode::<v1::methods::SessionUpdate>().is_none());
    let mut v1_note = note().with_version(Some(acp_rpc::types::Version::V1));
    assert!(!v1_note.edit::<v1::methods::SessionCancel>(|_| unreachable!()).unwrap());
    // An edit that changes nothing leaves the text as it came.
    assert!(v1_note.edit::<v1::methods::SessionUpdate>(|_| {}).unwrap());
    assert_eq!(v1_note.params().unwrap().get(), text);
    // One that changes something keeps the members the types do not know.
    v1_note
        .edit::<v1::methods::SessionUpdate>(|n| {
            if let v1::SessionUpdate::AgentMessageChunk(chunk) = &mut n.update {
                if let v1::ContentBlock::Text(content) = &mut chunk.content {
                    content.text = "b".into();
                }
            }
        })
        .unwrap();
    let edited: Value = serde_json::from_str(v1_note.params().unwrap().get()).unwrap();
    assert_eq!(
        edited,
        json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "b", "_c": 1}, "_u": [2]}, "_p": true})
    );
    // Params that do not decode are an error naming the field, and the message is unchanged.
    let mut bad =
        Notification::new("session/update", Some(RawValue::from_string(r#"{"sessionId":1}"#.into()).unwrap()))
            .with_version(Some(acp_rpc::types::Version::V1));
    let error = bad.edit::<v1::methods::SessionUpdate>(|_| {}).unwrap_err();
    assert_eq!(error.code, -32602);
    assert_eq!(bad.params().unwrap().get(), r#"{"sessionId":1}"#);
}

/// The example proxy on real pipes, with the test as its conductor.
async fn example_proxy(version: u16, chunk: &str) -> String {
    let path = example_path("proxy");
    let mut child = tokio::process::Command::new(path)
        .args(["--prefix", ">> "])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the proxy example runs");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || -> Value { serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap() };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "proxy/initialize", "params": {"protocolVersion": version}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let forwarded = next().await;
    let answer = json!({"jsonrpc": "2.0", "id": forwarded["id"], "result": {"protocolVersion": version}});
    stdin.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
    assert_eq!(next().await["result"]["protocolVersion"], version);
    let update = format!(
        r#"{{"jsonrpc":"2.0","method":"proxy/successor","params":{{"method":"session/update","params":{{"sessionId":"s","update":{chunk}}}}}}}"#
    );
    stdin.write_all(format!("{update}\n").as_bytes()).await.unwrap();
    let out = lines.next_line().await.unwrap().unwrap();
    drop(stdin);
    let _ = child.wait().await;
    raw_at(&out, &["params", "update"])
}

fn example_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::current_exe().ok().and_then(|p| p.parent()?.parent().map(|d| d.join("examples")));
    let path = dir.expect("target dir").join(name);
    if !path.exists() {
        let status = std::process::Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--package", "acp-rpc", "--features", "unstable", "--example", name])
            .status()
            .expect("cargo");
        assert!(status.success(), "cannot build example {name}");
    }
    path
}

#[tokio::test]
async fn the_example_prefixes_agent_message_chunks_in_v1_and_v2_and_keeps_unknown_fields() {
    let v1_chunk =
        r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hello","_new":1},"later":true}"#;
    let update: Value = serde_json::from_str(&example_proxy(1, v1_chunk).await).unwrap();
    assert_eq!(update["content"]["text"], ">> hello", "{update}");
    assert_eq!((update["content"]["_new"].clone(), update["later"].clone()), (json!(1), json!(true)), "{update}");
    let v2_chunk =
        r#"{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"hi"},"x":[1]}"#;
    let update: Value = serde_json::from_str(&example_proxy(2, v2_chunk).await).unwrap();
    assert_eq!(update["content"]["text"], ">> hi", "{update}");
    assert_eq!(update["x"], json!([1]), "{update}");
    // Other updates pass as they came, byte for byte.
    let thought = r#"{"content":{"text":"hmm","type":"text"},  "sessionUpdate":"agent_thought_chunk"}"#;
    assert_eq!(example_proxy(1, thought).await, thought);
    let image =
        r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA==","mimeType":"image/png"}}"#;
    assert_eq!(example_proxy(2, image).await, image);
}
