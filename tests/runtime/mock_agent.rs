//! The mock agent (`acp_rpc::mock::MockAgent`, feature `mock`) drives our client (`client::connect`
//! over an in-process pipe, with a test client that answers permission requests, keeps files in
//! memory and runs fake terminals): a scripted turn with a permission request, a file read and
//! write and a terminal in v1, the same script in v2 (whose schema has no `fs/*` or `terminal/*`
//! client methods: those steps are skipped and reported), the echo without a script, cancel
//! (`stop` and `finish`), the updates of `session/new` and the history replayed on `session/load`
//! (`onNewSession`, `onLoadSession`), and bad scripts named by their JSON pointer.
#![cfg(feature = "mock")]

use acp_rpc::client::ClientConnection;
use acp_rpc::mock::MockAgent;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::ClientContext;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The test client: the option id it chooses (`None`: it holds the request until the session is
/// cancelled), its files, and the terminal calls it got.
#[derive(Clone, Default)]
struct Client {
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    choose: Mutex<Option<String>>,
    files: Mutex<BTreeMap<String, String>>,
    terminal_calls: Mutex<Vec<String>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Client {
    fn choosing(option: &str) -> Self {
        let client = Client::default();
        *lock(&client.state.choose) = Some(option.into());
        lock(&client.state.files).insert("/project/notes.txt".into(), "old notes".into());
        client
    }

    fn terminal(&self, call: &str) {
        lock(&self.state.terminal_calls).push(call.into());
    }

    /// The option to choose; waits for the cancel when there is none.
    async fn choice(&self, cx: &ClientContext) -> Option<String> {
        let chosen = lock(&self.state.choose).clone();
        if chosen.is_none() {
            cx.cancelled().await;
        }
        chosen
    }
}

impl v1::methods::client::Handler<ClientContext> for Client {
    async fn session_request_permission(
        &self,
        _: v1::RequestPermissionRequest,
        cx: ClientContext,
    ) -> Result<v1::RequestPermissionResponse, RpcError> {
        let outcome = match self.choice(&cx).await {
            Some(id) => {
                v1::RequestPermissionOutcome::Selected(v1::SelectedPermissionOutcome::new(v1::PermissionOptionId(id)))
            }
            None => v1::RequestPermissionOutcome::Cancelled,
        };
        Ok(v1::RequestPermissionResponse::new(outcome))
    }

    async fn fs_read_text_file(
        &self,
        params: v1::ReadTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::ReadTextFileResponse, RpcError> {
        let content = lock(&self.state.files).get(&params.path).cloned();
        let content = content.ok_or_else(|| RpcError::new(RpcError::RESOURCE_NOT_FOUND, "Resource not found"))?;
        Ok(v1::ReadTextFileResponse::new(content))
    }

    async fn fs_write_text_file(
        &self,
        params: v1::WriteTextFileRequest,
        _: ClientContext,
    ) -> Result<v1::WriteTextFileResponse, RpcError> {
        lock(&self.state.files).insert(params.path, params.content);
        Ok(v1::WriteTextFileResponse::new())
    }

    async fn terminal_create(
        &self,
        params: v1::CreateTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::CreateTerminalResponse, RpcError> {
        let args = params.args.unwrap_or_default().join(" ");
        self.terminal(&format!("create {} {args}", params.command));
        Ok(v1::CreateTerminalResponse::new(v1::TerminalId("term-1".into())))
    }

    async fn terminal_wait_for_exit(
        &self,
        params: v1::WaitForTerminalExitRequest,
        _: ClientContext,
    ) -> Result<v1::WaitForTerminalExitResponse, RpcError> {
        self.terminal(&format!("wait {}", params.terminal_id.0));
        let mut exit = v1::WaitForTerminalExitResponse::new();
        exit.exit_code = 0.into();
        Ok(exit)
    }

    async fn terminal_output(
        &self,
        params: v1::TerminalOutputRequest,
        _: ClientContext,
    ) -> Result<v1::TerminalOutputResponse, RpcError> {
        self.terminal(&format!("output {}", params.terminal_id.0));
        Ok(v1::TerminalOutputResponse::new("test result: ok\n".into(), false))
    }

    async fn terminal_release(
        &self,
        params: v1::ReleaseTerminalRequest,
        _: ClientContext,
    ) -> Result<v1::ReleaseTerminalResponse, RpcError> {
        self.terminal(&format!("release {}", params.terminal_id.0));
        Ok(v1::ReleaseTerminalResponse::new())
    }
}

impl v2::methods::client::Handler<ClientContext> for Client {
    async fn session_request_permission(
        &self,
        _: v2::RequestPermissionRequest,
        cx: ClientContext,
    ) -> Result<v2::RequestPermissionResponse, RpcError> {
        let outcome = match self.choice(&cx).await {
            Some(id) => {
                v2::RequestPermissionOutcome::Selected(v2::SelectedPermissionOutcome::new(v2::PermissionOptionId(id)))
            }
            None => v2::RequestPermissionOutcome::Cancelled(v2::CancelledPermissionOutcome::default()),
        };
        Ok(v2::RequestPermissionResponse::new(outcome))
    }
}

/// A turn with a thought, a tool call, a permission request (`no` ends it `refusal`), a file read
/// and write, a terminal and a closing message.
fn edit_script() -> Value {
    json!({
        "turns": [{
            "match": { "text": "edit" },
            "steps": [
                { "thought": "Looking at the notes" },
                { "toolCall": { "id": "t1", "title": "Edit notes", "kind": "edit", "status": "pending" } },
                { "permission": {
                    "toolCall": "t1",
                    "options": [{ "id": "yes", "name": "Yes", "kind": "allow_once" }, { "id": "no", "kind": "reject_once" }],
                    "on": { "no": [{ "message": "Not editing." }, { "stop": "refusal" }] } } },
                { "readFile": { "path": "/project/notes.txt" } },
                { "writeFile": { "path": "/project/notes.txt", "content": "new notes" } },
                { "terminal": { "command": "cargo", "args": ["test"] } },
                { "toolCallUpdate": { "id": "t1", "status": "completed" } },
                { "message": "Edited." }
            ]
        }]
    })
}

/// The kind and the text (if any) of an update.
fn said(update: &impl serde::Serialize) -> (String, Option<String>) {
    let update = serde_json::to_value(update).expect("an update encodes");
    let kind = update["sessionUpdate"].as_str().unwrap_or_default().to_string();
    (kind, update["content"]["text"].as_str().map(str::to_owned))
}

fn v1_init() -> v1::InitializeRequest {
    let mut init = v1::InitializeRequest::new(v1::ProtocolVersion(1));
    init.client_capabilities.fs.read_text_file = true.into();
    init.client_capabilities.fs.write_text_file = true.into();
    init.client_capabilities.terminal = true.into();
    init
}

fn v2_init() -> v2::InitializeRequest {
    v2::InitializeRequest::new(v2::ProtocolVersion(2), v2::Implementation::new("test".into(), "0".into()))
}

async fn v1_session(agent: MockAgent, client: Client) -> (ClientConnection, acp_rpc::client::v1::Session) {
    let conn = agent.versions(&[Version::V1]).connect(client);
    conn.initialize_v1(v1_init()).await.expect("initialize");
    let session = conn.new_session_v1(v1::NewSessionRequest::new("/project".into(), vec![])).await.expect("session");
    (conn, session)
}

async fn v2_session(agent: MockAgent, client: Client) -> (ClientConnection, acp_rpc::client::v2::Session) {
    let conn = agent.connect(client);
    conn.initialize_v2(v2_init()).await.expect("initialize");
    let session = conn.new_session_v2(v2::NewSessionRequest::new("/project".into())).await.expect("session");
    (conn, session)
}

fn v1_text(text: &str) -> Vec<v1::ContentBlock> {
    vec![v1::ContentBlock::from(v1::TextContent::new(text.into()))]
}

fn v2_text(text: &str) -> Vec<v2::ContentBlock> {
    vec![v2::ContentBlock::from(v2::TextContent::new(text.into()))]
}

/// The updates of a v1 turn (kind, text) and its stop reason.
async fn v1_turn(session: &mut acp_rpc::client::v1::Session, text: &str) -> (Vec<(String, Option<String>)>, String) {
    let mut turn = session.prompt(v1_text(text)).await;
    let mut updates = Vec::new();
    while let Some(update) = turn.next().await {
        updates.push(said(&update));
    }
    let answer = turn.outcome().await.expect("the prompt's answer");
    (updates, serde_json::to_value(answer.stop_reason).expect("encodes").as_str().unwrap_or_default().to_string())
}

/// The agent's updates of a v2 turn (kind, text: state updates and the user message left out)
/// and its stop reason.
async fn v2_turn(session: &mut acp_rpc::client::v2::Session, text: &str) -> (Vec<(String, Option<String>)>, String) {
    let mut turn = session.prompt(v2_text(text)).await;
    let mut updates = Vec::new();
    while let Some(update) = turn.next().await {
        let (kind, text) = said(&update);
        if kind != "state_update" && !kind.starts_with("user_message") {
            updates.push((kind, text));
        }
    }
    let end = turn.outcome().await.expect("the turn's end");
    let idle = serde_json::to_value(&end.idle).expect("encodes");
    (updates, idle["stopReason"].as_str().unwrap_or_default().to_string())
}

fn kinds(updates: &[(String, Option<String>)]) -> Vec<&str> {
    updates.iter().map(|(k, _)| k.as_str()).collect()
}

fn texts(updates: &[(String, Option<String>)]) -> Vec<&str> {
    updates.iter().filter_map(|(_, t)| t.as_deref()).collect()
}

#[tokio::test]
async fn v1_a_scripted_turn_asks_permission_reads_writes_and_runs_a_terminal() {
    let agent = MockAgent::from_script(edit_script()).expect("a valid script");
    let received = agent.received();
    let client = Client::choosing("yes");
    let (_conn, mut session) = v1_session(agent, client.clone()).await;

    let (updates, stop) = v1_turn(&mut session, "please edit the notes").await;
    assert_eq!(stop, "end_turn");
    assert_eq!(
        kinds(&updates),
        [
            "agent_thought_chunk",
            "tool_call",
            "agent_message_chunk",
            "agent_message_chunk",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(texts(&updates), ["Looking at the notes", "old notes", "test result: ok\n(exit 0)", "Edited."]);
    assert_eq!(lock(&client.state.files)["/project/notes.txt"], "new notes");
    assert_eq!(
        *lock(&client.state.terminal_calls),
        ["create cargo test", "wait term-1", "output term-1", "release term-1"]
    );

    // What the agent received: the client's requests and its seven answers, the first the
    // permission's.
    let methods = received.methods();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    let answers = received.answers();
    assert_eq!(answers.len(), 7, "{answers:?}");
    assert_eq!(answers[0]["result"]["outcome"], json!({ "outcome": "selected", "optionId": "yes" }));
    assert_eq!(answers[1]["result"]["content"], "old notes");
    assert!(received.skipped().is_empty());
    let prompt = &received.params_of("session/prompt")[0];
    assert_eq!(prompt["prompt"][0]["text"], "please edit the notes");

    // The option `no` runs its own steps: a message, and the turn ends `refusal`.
    *lock(&client.state.choose) = Some("no".into());
    let (updates, stop) = v1_turn(&mut session, "edit again").await;
    assert_eq!(stop, "refusal");
    assert_eq!(texts(&updates), ["Looking at the notes", "Not editing."]);
}

#[tokio::test]
async fn v2_a_scripted_turn_asks_permission_and_skips_what_v2_has_no_methods_for() {
    let agent = MockAgent::from_script(edit_script()).expect("a valid script");
    let received = agent.received();
    let client = Client::choosing("yes");
    let (conn, mut session) = v2_session(agent, client.clone()).await;
    assert_eq!(conn.version(), Some(Version::V2));

    let (updates, stop) = v2_turn(&mut session, "please edit the notes").await;
    assert_eq!(stop, "end_turn");
    assert_eq!(kinds(&updates), ["agent_thought_chunk", "tool_call_update", "tool_call_update", "agent_message_chunk"]);
    assert_eq!(texts(&updates), ["Looking at the notes", "Edited."]);
    // The v2 schema has no fs/* or terminal/* client methods: nothing was sent, the steps say so.
    assert_eq!(lock(&client.state.files)["/project/notes.txt"], "old notes");
    assert!(lock(&client.state.terminal_calls).is_empty());
    let skipped = received.skipped();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(skipped.iter().all(|s| s.contains("v2 schema has no such client method")), "{skipped:?}");
    let answers = received.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["result"]["outcome"]["optionId"], "yes");

    *lock(&client.state.choose) = Some("no".into());
    let (updates, stop) = v2_turn(&mut session, "edit again").await;
    assert_eq!(stop, "refusal");
    assert_eq!(texts(&updates), ["Looking at the notes", "Not editing."]);
}

#[tokio::test]
async fn without_a_script_each_prompt_is_echoed_and_ends_end_turn() {
    let (_conn, mut session) = v1_session(MockAgent::echo(), Client::default()).await;
    let (updates, stop) = v1_turn(&mut session, "hello there").await;
    assert_eq!(
        (updates, stop.as_str()),
        (vec![("agent_message_chunk".into(), Some("hello there".into()))], "end_turn")
    );

    let (_conn, mut session) = v2_session(MockAgent::echo(), Client::default()).await;
    let (updates, stop) = v2_turn(&mut session, "hello v2").await;
    assert_eq!((updates, stop.as_str()), (vec![("agent_message_chunk".into(), Some("hello v2".into()))], "end_turn"));
}

#[tokio::test]
async fn a_prompt_no_turn_matches_is_echoed_and_turns_match_by_number() {
    let script = json!({ "turns": [
        { "match": { "turn": 2 }, "steps": [{ "message": "second" }], "stopReason": "max_tokens" },
        { "match": { "exact": "boom" }, "steps": [{ "error": { "code": -32000, "message": "scripted" } }] }
    ]});
    let (_conn, mut session) = v1_session(MockAgent::from_script(script).expect("valid"), Client::default()).await;
    assert_eq!(v1_turn(&mut session, "first").await.1, "end_turn");
    let (updates, stop) = v1_turn(&mut session, "anything").await;
    assert_eq!((texts(&updates), stop.as_str()), (vec!["second"], "max_tokens"));
    let mut turn = session.prompt(v1_text("boom")).await;
    while turn.next().await.is_some() {}
    let error = turn.outcome().await.expect_err("the scripted error");
    assert_eq!(error.to_rpc().code, -32000);
    assert_eq!(error.to_rpc().message, "scripted");
}

/// A turn that says `one` and waits for a long time (cut short by the cancel).
fn waiting_script() -> Value {
    json!({ "turns": [{ "steps": [{ "message": "one" }, { "delay": 600000 }, { "message": "never" }] }] })
}

#[tokio::test]
async fn v1_cancel_stops_the_turn_at_once() {
    let agent = MockAgent::from_script(waiting_script()).expect("valid");
    let received = agent.received();
    let (_conn, mut session) = v1_session(agent, Client::default()).await;
    let cancel = session.connection().clone();
    let id = session.id().0.clone();
    let mut turn = session.prompt(v1_text("go")).await;
    let (_, first) = said(&turn.next().await.expect("the first update"));
    assert_eq!(first.as_deref(), Some("one"));
    cancel.cancel_session(&id).await.expect("cancel");
    assert!(turn.next().await.is_none(), "nothing after the cancel");
    let answer = turn.outcome().await.expect("an answer");
    assert_eq!(answer.stop_reason, v1::StopReason::Cancelled);
    assert!(received.methods().contains(&"session/cancel".to_string()));
}

#[tokio::test]
async fn v2_cancel_stops_the_turn_at_once() {
    let (_conn, mut session) =
        v2_session(MockAgent::from_script(waiting_script()).expect("valid"), Client::default()).await;
    let cancel = session.connection().clone();
    let id = session.id().0.clone();
    let mut turn = session.prompt(v2_text("go")).await;
    loop {
        let (kind, text) = said(&turn.next().await.expect("an update before the cancel"));
        if kind == "agent_message_chunk" {
            assert_eq!(text.as_deref(), Some("one"));
            break;
        }
    }
    cancel.cancel_session(&id).await.expect("cancel");
    while let Some(update) = turn.next().await {
        assert_ne!(said(&update).1.as_deref(), Some("never"));
    }
    let end = turn.outcome().await.expect("the turn's end");
    assert_eq!(serde_json::to_value(&end.idle).expect("encodes")["stopReason"], "cancelled");
}

#[tokio::test]
async fn v1_cancel_with_on_cancel_finish_runs_the_remaining_steps() {
    // The client holds the permission request; the cancel answers it `cancelled` and the turn
    // goes on to its last message, then ends `cancelled`.
    let script = json!({ "turns": [{
        "onCancel": "finish",
        "steps": [
            { "message": "one" },
            { "permission": { "options": [{ "id": "yes", "kind": "allow_once" }], "on": { "yes": [{ "message": "allowed" }] } } },
            { "message": "two" }
        ]
    }]});
    let (_conn, mut session) = v1_session(MockAgent::from_script(script).expect("valid"), Client::default()).await;
    let cancel = session.connection().clone();
    let id = session.id().0.clone();
    let mut turn = session.prompt(v1_text("go")).await;
    assert_eq!(said(&turn.next().await.expect("the first update")).1.as_deref(), Some("one"));
    cancel.cancel_session(&id).await.expect("cancel");
    let mut rest = Vec::new();
    while let Some(update) = turn.next().await {
        rest.push(said(&update));
    }
    assert_eq!(texts(&rest), ["two"]);
    assert_eq!(turn.outcome().await.expect("an answer").stop_reason, v1::StopReason::Cancelled);
}

#[test]
fn a_bad_script_names_the_json_pointer_of_the_problem() {
    let pointer = |script: Value| MockAgent::from_script(script).expect_err("a bad script").pointer;
    // An unknown key, in a step's object.
    let unknown = json!({ "turns": [{ "steps": [{ "message": "a" }, { "toolCall": { "id": "t", "title": "x", "colour": "red" } }] }] });
    let at = pointer(unknown);
    assert_eq!(at, "/turns/0/steps/1/toolCall/colour");
    // A wrong type.
    assert_eq!(pointer(json!({ "turns": [{ "steps": [{ "delay": "soon" }] }] })), "/turns/0/steps/0/delay");
    // An unknown step.
    assert_eq!(pointer(json!({ "turns": [{ "steps": [{ "dance": 1 }] }] })), "/turns/0/steps/0");
    // An unknown top-level key, a bad stop reason, a match with two criteria, an option not offered.
    let error = MockAgent::from_script(json!({ "turn": [] })).expect_err("unknown key");
    assert!(error.message.contains("turn"), "{error}");
    assert_eq!(pointer(json!({ "turns": [{ "stopReason": "tired" }] })), "/turns/0/stopReason");
    assert_eq!(pointer(json!({ "turns": [{ "match": { "text": "a", "turn": 1 } }] })), "/turns/0/match");
    let not_offered = json!({ "turns": [{ "steps": [{ "permission": {
        "options": [{ "id": "yes", "kind": "allow_once" }], "on": { "maybe": [] } } }] }] });
    assert_eq!(pointer(not_offered), "/turns/0/steps/0/permission/on/maybe");
    // JSON that does not parse names its line.
    let error = MockAgent::from_json("{\n  \"turns\": [,]\n}").expect_err("not JSON");
    assert!(error.message.contains("line 2"), "{error}");
    // The display names the pointer.
    let error = MockAgent::from_script(json!({ "turns": [{ "steps": [{ "delay": -1 }] }] })).expect_err("negative");
    assert!(error.to_string().contains("/turns/0/steps/0/delay"), "{error}");
}

#[tokio::test]
async fn session_load_is_answered_only_when_scripted() {
    let load = |id: &str| v1::LoadSessionRequest::new(vec![], "/project".into(), v1::SessionId(id.into()));
    let agent = MockAgent::from_script(json!({ "loadSession": true })).expect("valid").versions(&[Version::V1]);
    let conn = agent.connect(Client::default());
    let answer = conn.initialize_v1(v1_init()).await.expect("initialize");
    assert_eq!(serde_json::to_value(&answer.agent_capabilities).expect("encodes")["loadSession"], true);
    let mut session = conn.load_session_v1(load("earlier")).await.expect("loaded");
    let (updates, stop) = v1_turn(&mut session, "again").await;
    assert_eq!((texts(&updates), stop.as_str()), (vec!["again"], "end_turn"));

    let conn = MockAgent::echo().versions(&[Version::V1]).connect(Client::default());
    conn.initialize_v1(v1_init()).await.expect("initialize");
    assert!(conn.load_session_v1(load("earlier")).await.is_err(), "not scripted");
}

#[tokio::test]
async fn scripted_auth_methods_are_offered_and_accepted() {
    let methods = json!([{ "id": "mock-login", "name": "Mock login" }]);
    let script = json!({ "initialize": { "v1": { "authMethods": methods }, "v2": { "authMethods": methods } } });
    let conn = MockAgent::from_script(script).expect("valid").versions(&[Version::V1]).connect(Client::default());
    conn.initialize_v1(v1_init()).await.expect("initialize");
    assert_eq!(conn.auth_methods().len(), 1);
    conn.authenticate("mock-login").await.expect("a scripted method");
    assert!(conn.authenticate("other").await.is_err(), "an unknown method is refused");
}

/// The updates waiting in a session, outside a turn (kind, text: a v2 `user_message`'s first
/// block's), and the `messageId`s they carry.
fn waiting<U: serde::Serialize>(mut next: impl FnMut() -> Option<U>) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let (mut updates, mut ids) = (Vec::new(), Vec::new());
    while let Some(update) = next() {
        let value = serde_json::to_value(&update).expect("an update encodes");
        let (kind, text) = said(&update);
        updates.push((kind, text.or_else(|| value["content"][0]["text"].as_str().map(str::to_owned))));
        ids.extend(value["messageId"].as_str().map(str::to_owned));
    }
    (updates, ids)
}

fn opening_script() -> Value {
    let commands = json!({ "sessionUpdate": "available_commands_update",
        "availableCommands": [{ "name": "test", "description": "Run the tests" }] });
    json!({
        "onNewSession": [{ "update": commands }, { "message": "Welcome." }],
        "onLoadSession": [{ "userMessage": "Fix the test" }, { "message": "Fixed." }],
    })
}

#[tokio::test]
async fn v1_on_new_session_and_on_load_session_send_their_updates_before_the_answer() {
    let agent = MockAgent::from_script(opening_script()).expect("valid");
    let received = agent.received();
    let (conn, mut session) = v1_session(agent, Client::default()).await;
    let (updates, _) = waiting(|| session.next_update());
    assert_eq!(kinds(&updates), ["available_commands_update", "agent_message_chunk"]);
    assert_eq!(texts(&updates), ["Welcome."]);
    // The turn's updates are its own: the opening ones were taken from the session.
    let (updates, stop) = v1_turn(&mut session, "hi").await;
    assert_eq!((texts(&updates), stop.as_str()), (vec!["hi"], "end_turn"));

    // `onLoadSession` implies `loadSession`; the replay is in the loaded session, under its id.
    let load = v1::LoadSessionRequest::new(vec![], "/project".into(), v1::SessionId("earlier".into()));
    let mut loaded = conn.load_session_v1(load).await.expect("loaded");
    assert_eq!(loaded.id(), &v1::SessionId("earlier".into()));
    let (updates, _) = waiting(|| loaded.next_update());
    assert_eq!(kinds(&updates), ["user_message_chunk", "agent_message_chunk"]);
    assert_eq!(texts(&updates), ["Fix the test", "Fixed."]);
    assert!(received.skipped().is_empty(), "{:?}", received.skipped());
}

#[tokio::test]
async fn v2_on_new_session_sends_its_updates_with_fresh_message_ids() {
    let script =
        json!({ "onNewSession": [{ "userMessage": "earlier" }, { "message": "Welcome." }, { "thought": "hm" }] });
    let (_conn, mut session) = v2_session(MockAgent::from_script(script).expect("valid"), Client::default()).await;
    let (updates, ids) = waiting(|| session.next_update());
    assert_eq!(kinds(&updates), ["user_message", "agent_message_chunk", "agent_thought_chunk"]);
    assert_eq!(texts(&updates), ["earlier", "Welcome.", "hm"]);
    assert_eq!(ids.len(), 3);
    assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2], "{ids:?}");
    let (updates, stop) = v2_turn(&mut session, "hi").await;
    assert_eq!((texts(&updates), stop.as_str()), (vec!["hi"], "end_turn"));
}

#[tokio::test]
async fn an_error_step_in_on_new_session_answers_session_new_with_it() {
    let script = json!({ "onNewSession": [{ "message": "a" }, { "error": { "code": -32000, "message": "no room" } }] });
    let conn = MockAgent::from_script(script).expect("valid").versions(&[Version::V1]).connect(Client::default());
    conn.initialize_v1(v1_init()).await.expect("initialize");
    let error = conn.new_session_v1(v1::NewSessionRequest::new("/project".into(), vec![])).await.expect_err("scripted");
    assert!(error.to_string().contains("no room"), "{error}");
}

#[test]
fn bad_session_steps_are_named_by_their_json_pointer() {
    let pointer = |script: Value| MockAgent::from_script(script).expect_err("a bad script").pointer;
    assert_eq!(pointer(json!({ "onNewSession": [{ "delay": "soon" }] })), "/onNewSession/0/delay");
    assert_eq!(
        pointer(json!({ "onNewSession": [{ "message": "a" }, { "stop": "end_turn" }] })),
        "/onNewSession/1/stop"
    );
    let nested = json!({ "onLoadSession": [{ "permission": {
        "options": [{ "id": "yes", "kind": "allow_once" }], "on": { "yes": [{ "stop": "refusal" }] } } }] });
    assert_eq!(pointer(nested), "/onLoadSession/0/permission/on/yes/0/stop");
    assert_eq!(pointer(json!({ "onLoadSession": [{ "update": { "kind": "x" } }] })), "/onLoadSession/0/update");
    let contradiction = json!({ "loadSession": false, "onLoadSession": [{ "message": "a" }] });
    assert_eq!(pointer(contradiction), "/onLoadSession");
    // In a turn, `stop` is a step like any other.
    assert!(MockAgent::from_script(json!({ "turns": [{ "steps": [{ "stop": "refusal" }] }] })).is_ok());
}
