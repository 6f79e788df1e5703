//! Vendor extensions, typed: an agent and a client built on the module generated from
//! `schema/ext/example.json` (`acp_types::v1::ext::example`: a request and a notification
//! received by each end, `$ref`s into v1's `SessionId` and `ContentBlock`) exchange its methods
//! over an in-process connection, each registered next to its core handler with
//! `Extended(core, serve::…(handler))` and called through the contexts' typed `request` and
//! `notify`. Extension methods the extension does not name keep the core handler's answers.

use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::v1::{self, ext::example};
use acp_rpc::types::v2;
use acp_rpc::types::Version;
use acp_rpc::{AgentContext, ClientContext, Extended, V1, V2};
use serde_json::json;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

struct Agent;
impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
}

/// The agent's side of the extension: greets after asking the client to confirm, reporting
/// progress on the way; records the moods it is told.
struct Greeter {
    moods: UnboundedSender<(v1::SessionId, example::Mood)>,
}

impl example::methods::agent::Handler<AgentContext> for Greeter {
    async fn example_greet(
        &self,
        p: example::GreetRequest,
        cx: AgentContext,
    ) -> Result<example::GreetResponse, RpcError> {
        let ask = example::ConfirmRequest::new(p.session_id.clone(), format!("greet {}?", p.name));
        let answer = cx.request::<example::methods::ExampleConfirm>(&ask).await.map_err(|e| e.to_rpc())?;
        let mut progress = example::ProgressNotification::new(p.session_id, 100);
        progress.content = Some(v1::ContentBlock::from(v1::TextContent::new("greeting".into())));
        cx.notify::<example::methods::ExampleProgress>(&progress).await.map_err(|e| e.to_rpc())?;
        let greeting = if answer.confirmed { format!("hello, {}", p.name) } else { "no".into() };
        Ok(example::GreetResponse::new(greeting))
    }

    async fn example_mood(&self, p: example::MoodNotification, _: AgentContext) {
        let _ = self.moods.send((p.session_id, p.mood));
    }
}

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {}

/// The client's side of the extension: confirms (telling the agent its mood first) and records
/// the progress reported.
struct Confirmer {
    progress: UnboundedSender<example::ProgressNotification>,
}

impl example::methods::client::Handler<ClientContext> for Confirmer {
    async fn example_confirm(
        &self,
        p: example::ConfirmRequest,
        cx: ClientContext,
    ) -> Result<example::ConfirmResponse, RpcError> {
        let mood = example::MoodNotification::new(p.session_id, example::Mood::Happy);
        cx.notify::<example::methods::ExampleMood>(&mood).await.map_err(|e| e.to_rpc())?;
        Ok(example::ConfirmResponse::new(p.question == "greet Ada?"))
    }

    async fn example_progress(&self, p: example::ProgressNotification, _: ClientContext) {
        let _ = self.progress.send(p);
    }
}

struct Peers {
    conn: acp_rpc::client::ClientConnection,
    moods: UnboundedReceiver<(v1::SessionId, example::Mood)>,
    progress: UnboundedReceiver<example::ProgressNotification>,
}

/// The agent and the client, each with its side of the extension, over an in-process pipe;
/// initialized in v1.
async fn peers() -> Peers {
    let (moods_tx, moods) = unbounded_channel();
    let (progress_tx, progress) = unbounded_channel();
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = Extended(V1(Agent), example::serve::Agent(Greeter { moods: moods_tx }));
    tokio::spawn(acp_rpc::agent::serve(agent, &[Version::V1], ar, aw, Default::default()).1);
    let client = Extended(V1(Client), example::serve::Client(Confirmer { progress: progress_tx }));
    let (conn, driver) = acp_rpc::client::connect(client, br, bw, Default::default());
    tokio::spawn(driver);
    conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect("initialize");
    Peers { conn, moods, progress }
}

async fn next<T>(rx: &mut UnboundedReceiver<T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("in time").expect("sent")
}

#[tokio::test]
async fn both_ends_exchange_the_extension_typed() {
    let mut peers = peers().await;
    let greet = example::GreetRequest::new(v1::SessionId::from("s1"), "Ada".into());
    let answer = peers.conn.request::<example::methods::ExampleGreet>(&greet).await.expect("greet");
    assert_eq!(answer.greeting, "hello, Ada");
    // The client's notification reached the agent's extension handler, typed.
    assert_eq!(next(&mut peers.moods).await, (v1::SessionId::from("s1"), example::Mood::Happy));
    // The agent's notification reached the client's, with its core `ContentBlock`.
    let progress = next(&mut peers.progress).await;
    assert_eq!((progress.session_id.as_str(), progress.percent), ("s1", 100));
    match progress.content {
        Some(v1::ContentBlock::Text(text)) => assert_eq!(text.text, "greeting"),
        other => panic!("content {other:?}"),
    }
}

#[tokio::test]
async fn the_wire_carries_the_schemas_names() {
    let peers = peers().await;
    let raw = serde_json::value::to_raw_value(&json!({"sessionId": "s2", "name": "Bob"})).expect("json");
    let answer = peers.conn.connection().request_raw("_example/greet", Some(&raw)).await.expect("greet");
    let answer: serde_json::Value = serde_json::from_str(answer.get()).expect("json");
    assert_eq!(answer, json!({"greeting": "no"}));
}

#[tokio::test]
async fn bad_params_of_an_extension_method_are_32602() {
    let peers = peers().await;
    let raw = serde_json::value::to_raw_value(&json!({"sessionId": "s3"})).expect("json");
    let error = peers.conn.connection().request_raw("_example/greet", Some(&raw)).await.expect_err("no name");
    let error = error.to_rpc();
    assert_eq!(error.code, -32602, "{error:?}");
    assert!(error.message.contains("name"), "{error:?}");
}

#[tokio::test]
async fn other_extension_methods_keep_the_core_answer() {
    let peers = peers().await;
    let raw = serde_json::value::to_raw_value(&json!({"sessionId": "s4", "question": "?"})).expect("json");
    // A method of the extension's client side, sent to the agent, and a method nobody names: the
    // core handler's `ext_method`, whose default is method-not-found.
    for method in ["_example/confirm", "_example/unknown"] {
        let error = peers.conn.connection().request_raw(method, Some(&raw)).await.expect_err(method);
        assert_eq!(error.to_rpc().code, -32601, "{method}: {error}");
    }
}

struct AgentV2;
impl v2::methods::agent::Handler<AgentContext> for AgentV2 {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("two".into(), "0".into())))
    }
}
impl acp_rpc::agent::PromptTurn for AgentV2 {}

struct ClientV2;
impl v2::methods::client::Handler<ClientContext> for ClientV2 {}

/// The example extension is v1's (its types are v1's): on a v2 connection its methods are the
/// core handler's, -32601 by default.
#[tokio::test]
async fn an_extension_of_v1_is_not_served_on_a_v2_connection() {
    let (moods, _) = unbounded_channel();
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    let agent = Extended(V2(AgentV2), example::serve::Agent(Greeter { moods }));
    tokio::spawn(acp_rpc::agent::serve(agent, &[Version::V2], ar, aw, Default::default()).1);
    let (conn, driver) = acp_rpc::client::connect(V2(ClientV2), br, bw, Default::default());
    tokio::spawn(driver);
    let info = v2::Implementation::new("client".into(), "0".into());
    conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.expect("initialize");
    // Params the extension would refuse with -32602 (no `name`): the answer says who took them.
    let raw = serde_json::value::to_raw_value(&json!({"sessionId": "s5"})).expect("json");
    let error = conn.connection().request_raw("_example/greet", Some(&raw)).await.expect_err("not on v2");
    assert_eq!(error.to_rpc().code, -32601, "{error}");
}
