//! The client's typed session API (`acp_rpc::client`): `initialize_v1`/`initialize_v2` with the
//! version's own types, a handle per session, and each prompt's turn as a stream of typed updates,
//! in order, then its outcome.

#![cfg(feature = "mock")]

use acp_rpc::mock::MockAgent;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::ClientContext;
use serde_json::{json, Value};

/// Each word of a prompt as one chunk (v1 `max_tokens`, v2 `refusal`); `session/new` sends a
/// welcome (v1) or an idle snapshot (v2), `session/load` replays one user message.
fn words(opening: Value) -> Value {
    let words = |said: &[&str]| said.iter().map(|w| json!({ "message": w })).collect::<Vec<_>>();
    json!({
        "onNewSession": [opening],
        "onLoadSession": [{ "userMessage": "history" }],
        "turns": [
            { "match": { "exact": "one two three" }, "steps": words(&["one", "two", "three"]), "stopReason": "max_tokens" },
            { "match": { "exact": "a b" }, "steps": words(&["a", "b"]), "stopReason": "refusal" },
        ],
    })
}

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {}
impl v2::methods::client::Handler<ClientContext> for Client {}

fn connect(opening: Value, versions: &[Version]) -> acp_rpc::client::ClientConnection {
    MockAgent::from_script(words(opening)).expect("a valid script").versions(versions).connect(Client)
}

fn welcome() -> Value {
    json!({ "message": "welcome" })
}

fn idle() -> Value {
    json!({ "update": { "sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn" } })
}

fn text(update: &v1::SessionUpdate) -> Option<&str> {
    match update {
        v1::SessionUpdate::AgentMessageChunk(c) => match &c.content {
            v1::ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        },
        _ => None,
    }
}

#[tokio::test]
async fn a_v1_turn_streams_its_updates_in_order_then_its_answer() {
    let conn = connect(welcome(), Version::ALL);
    let answer = conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(7))).await.expect("initialize");
    assert_eq!(answer.protocol_version, v1::ProtocolVersion(1));
    let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/".into(), vec![])).await.expect("session");
    assert_eq!(session.id(), &v1::SessionId("mock-session-1".into()));
    for round in 0..2 {
        let prompt = vec![v1::ContentBlock::from(v1::TextContent::new("one two three".into()))];
        let mut turn = session.prompt(prompt).await;
        let mut seen = Vec::new();
        while let Some(update) = turn.next().await {
            seen.push(text(&update).unwrap_or_default().to_string());
        }
        // The update sent with `session/new` waits in the session, before the first turn's.
        let expected: &[&str] = if round == 0 { &["welcome", "one", "two", "three"] } else { &["one", "two", "three"] };
        assert_eq!(seen, expected, "round {round}");
        assert_eq!(turn.outcome().await.expect("answer").stop_reason, v1::StopReason::MaxTokens);
    }
}

#[tokio::test]
async fn a_v2_turn_ends_at_its_idle_not_at_the_snapshot_after_session_new() {
    let conn = connect(idle(), Version::ALL);
    let info = v2::Implementation::new("c".into(), "0".into());
    conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.expect("initialize");
    let mut session = conn.new_session_v2(v2::NewSessionRequest::new(v2::AbsolutePath("/".into()))).await.expect("new");
    let mut turn = session.prompt(vec![v2::ContentBlock::from(v2::TextContent::new("a b".into()))]).await;
    let mut tags = Vec::new();
    while let Some(update) = turn.next().await {
        tags.push(update.tag().unwrap_or("?").to_string());
    }
    // The snapshot is in the stream (it came first) but did not end the turn.
    let expected =
        ["state_update", "user_message", "state_update", "agent_message_chunk", "agent_message_chunk", "state_update"];
    assert_eq!(tags, expected);
    let end = turn.outcome().await.expect("end");
    assert_eq!(end.idle.stop_reason, v2::IdleStateUpdateStopReason::Refusal);
}

#[tokio::test]
async fn a_v2_session_keeps_its_state_from_the_updates() {
    let conn = connect(idle(), Version::ALL);
    let info = v2::Implementation::new("c".into(), "0".into());
    conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.expect("initialize");
    let mut session = conn.new_session_v2(v2::NewSessionRequest::new(v2::AbsolutePath("/".into()))).await.expect("new");
    let mut changes = session.state_changes();
    changes.mark_unchanged();
    let end = session
        .prompt(vec![v2::ContentBlock::from(v2::TextContent::new("a b".into()))])
        .await
        .outcome()
        .await
        .expect("end");
    assert!(changes.has_changed().expect("open"), "the turn changed the state");
    let state = session.state();
    // The turn's end is the state's `state` target.
    match state.state.get().expect("a state").expect("decodes") {
        v2::StateUpdate::Idle(idle) => assert_eq!(idle.stop_reason, end.idle.stop_reason),
        other => panic!("not idle: {other:?}"),
    }
    // Each step of the mock is a message of its own (one chunk each), in the order first seen.
    let texts: Vec<Vec<String>> = state
        .agent_message
        .iter()
        .map(|(_, m)| {
            let m = m.expect("decodes");
            let blocks = m.content.as_value().cloned().unwrap_or_default();
            blocks
                .iter()
                .map(|b| serde_json::to_value(b).expect("encodes")["text"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .collect();
    assert_eq!(texts, [["a"], ["b"]]);
    // The user's message, upserted by id.
    assert_eq!(state.user_message.len(), 1);
    assert!(state.unapplied.is_empty());
    let copy = conn.session_state_v2(session.id()).expect("kept");
    assert_eq!(&copy, &*state);
    drop(state);
    let id = session.id().clone();
    drop(session);
    assert!(conn.session_state_v2(&id).is_none(), "dropped with its handle");
}

#[tokio::test]
async fn initialize_v2_against_a_v1_agent_is_a_clear_error() {
    let conn = connect(welcome(), &[Version::V1]);
    let info = v2::Implementation::new("c".into(), "0".into());
    let error =
        conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await.expect_err("v1 only");
    assert!(error.to_string().contains("answered protocol version 1, not 2"), "{error}");
}

#[tokio::test]
async fn a_loaded_session_starts_with_the_history_the_agent_replayed() {
    let conn = connect(welcome(), Version::ALL);
    conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect("initialize");
    let load = v1::LoadSessionRequest::new(vec![], "/".into(), v1::SessionId("old".into()));
    let mut session = conn.load_session_v1(load).await.expect("load");
    let replayed = session.next_update().expect("the replayed message is the session's");
    assert_eq!(replayed.tag(), Some("user_message_chunk"));
    assert!(session.next_update().is_none());
}

#[tokio::test]
async fn initialize_any_answers_in_the_version_the_agent_chose() {
    let info = || v2::Implementation::new("c".into(), "0".into());
    let mut v1_request = v1::InitializeRequest::new(v1::ProtocolVersion(1));
    v1_request.client_capabilities.terminal = true.into();
    let both = connect(welcome(), Version::ALL);
    let answer = both.initialize_any(v1_request.clone(), v2::InitializeRequest::new(v2::ProtocolVersion(2), info()));
    assert!(matches!(answer.await.expect("v2"), acp_rpc::client::Initialized::V2(_)));
    let only_v1 = connect(welcome(), &[Version::V1]);
    let answer = only_v1.initialize_any(v1_request, v2::InitializeRequest::new(v2::ProtocolVersion(2), info()));
    assert!(matches!(answer.await.expect("v1"), acp_rpc::client::Initialized::V1(_)));
    assert_eq!(only_v1.version(), Some(Version::V1));
}
