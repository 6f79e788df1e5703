//! Running a scripted turn's steps against the client, in either version: the steps build
//! wire-shaped JSON, decoded into the negotiated version's types before anything is sent.

use super::record::Received;
use super::script::{
    OnCancel, PermissionOption, PlanEntry, ReadFile, Step, StopReason, Terminal, ToolCall, ToolCallUpdate,
};
use crate::agent::AgentContext;
use crate::error::{Error, Misuse};
use acp_types::support::rpc::{Method, RpcError};
use acp_types::{v1, v2};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The session steps run in, per version: a prompt's turn, or `session/new` / `session/load`
/// before its answer.
pub(super) enum Side<'a> {
    V1 {
        cx: &'a AgentContext,
        session: &'a v1::SessionId,
    },
    /// `ids` gives the fresh `messageId` of each message (a turn's own in a turn).
    V2 {
        cx: &'a AgentContext,
        session: &'a v2::SessionId,
        ids: &'a (dyn Fn() -> v2::MessageId + Sync),
    },
}

fn context<'a>(side: &'a Side<'_>) -> &'a AgentContext {
    match side {
        Side::V1 { cx, .. } | Side::V2 { cx, .. } => cx,
    }
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, value: Value) -> Result<T, RpcError> {
    serde_json::from_value(value).map_err(|e| RpcError::internal(format!("mock agent: bad {what}: {e}")))
}

fn text(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

impl Side<'_> {
    /// Sends one `session/update`, given as the wire's update object (v2 chunks and user
    /// messages get a fresh `messageId` when they have none).
    pub(super) async fn update(&self, mut update: Map<String, Value>) -> Result<(), RpcError> {
        match self {
            Side::V1 { cx, session } => {
                let update: v1::SessionUpdate = decode("session update", Value::Object(update))?;
                cx.v1()?.update(session, update).await?;
            }
            Side::V2 { cx, session, ids } => {
                let kind = update.get("sessionUpdate").and_then(Value::as_str).unwrap_or_default();
                if (kind.ends_with("_chunk") || kind == "user_message") && !update.contains_key("messageId") {
                    update.insert("messageId".into(), json!(ids().0));
                }
                let update: v2::SessionUpdate = decode("session update", Value::Object(update))?;
                cx.v2()?.update(session, update).await?;
            }
        }
        Ok(())
    }

    fn is_v1(&self) -> bool {
        matches!(self, Side::V1 { .. })
    }

    async fn say(&self, said: &str) -> Result<(), RpcError> {
        self.update(chunk("agent_message_chunk", said)).await
    }
}

fn chunk(kind: &str, said: &str) -> Map<String, Value> {
    let mut update = Map::new();
    update.insert("sessionUpdate".into(), json!(kind));
    update.insert("content".into(), text(said));
    update
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// Inserts the `Some` fields.
fn with(mut map: Map<String, Value>, fields: &[(&str, Option<Value>)]) -> Map<String, Value> {
    for (key, value) in fields {
        if let Some(value) = value {
            map.insert((*key).into(), value.clone());
        }
    }
    map
}

fn content(said: &Option<String>) -> Option<Value> {
    said.as_deref().map(|t| json!([{ "type": "content", "content": text(t) }]))
}

/// How a run of steps ended early.
pub(super) enum Ended {
    Stop(StopReason),
    Error(RpcError),
}

impl From<RpcError> for Ended {
    fn from(e: RpcError) -> Self {
        Ended::Error(e)
    }
}

impl From<Error> for Ended {
    fn from(e: Error) -> Self {
        Ended::Error(e.into())
    }
}

type Run<'a> = Pin<Box<dyn Future<Output = Result<(), Ended>> + Send + 'a>>;

/// Runs `steps`; `Err` when one ended the turn (a stop, an error, a cancel, a cancelled
/// permission request).
pub(super) fn run<'a>(side: &'a Side<'a>, steps: &'a [Step], on_cancel: OnCancel, received: &'a Received) -> Run<'a> {
    Box::pin(async move {
        for step in steps {
            if on_cancel == OnCancel::Stop && context(side).is_cancelled() {
                return Err(Ended::Stop(StopReason::Cancelled));
            }
            step_once(side, step, on_cancel, received).await?;
        }
        Ok(())
    })
}

/// A client call that the client did not advertise was not sent: the step is skipped.
fn skipped(received: &Received, what: &str, result: Result<(), Error>) -> Result<(), Ended> {
    match result {
        Err(Error::Misuse(Misuse::NotAdvertised { .. })) => {
            received.skip(format!("{what}: the client did not advertise it"));
            Ok(())
        }
        other => Ok(other?),
    }
}

async fn step_once(side: &Side<'_>, step: &Step, on_cancel: OnCancel, received: &Received) -> Result<(), Ended> {
    let v1_only = |what: &str| received.skip(format!("{what}: the v2 schema has no such client method"));
    match step {
        Step::Message(said) => side.say(said).await?,
        Step::Thought(said) => side.update(chunk("agent_thought_chunk", said)).await?,
        Step::UserMessage(said) => match side {
            Side::V1 { .. } => side.update(chunk("user_message_chunk", said)).await?,
            Side::V2 { .. } => {
                let update = json!({ "sessionUpdate": "user_message", "content": [text(said)] });
                side.update(object(update)).await?
            }
        },
        Step::Plan(entries) => side.update(plan(entries, side.is_v1())).await?,
        Step::ToolCall(call) => side.update(tool_call(call, side.is_v1())).await?,
        Step::ToolCallUpdate(call) => side.update(tool_call_update(call)).await?,
        Step::Update(update) => side.update(update.clone()).await?,
        Step::Permission(permission) => {
            let chosen = ask(side, &permission.tool_call, &permission.title, &permission.options).await?;
            let Some(chosen) = chosen else {
                // Cancelled: the turn ends here, or (`finish`) goes on without the options' steps.
                return match on_cancel {
                    OnCancel::Stop => Err(Ended::Stop(StopReason::Cancelled)),
                    OnCancel::Finish => Ok(()),
                };
            };
            if let Some(steps) = permission.on.get(&chosen) {
                run(side, steps, on_cancel, received).await?;
            }
        }
        Step::ReadFile(read) => match side {
            Side::V1 { cx, session } => read_file(side, cx, session, read, received).await?,
            Side::V2 { .. } => v1_only("readFile"),
        },
        Step::WriteFile(write) => match side {
            Side::V1 { cx, session } => {
                let result = cx.v1()?.write_text_file(session, write.path.clone(), write.content.clone()).await;
                skipped(received, <v1::methods::FsWriteTextFile as Method>::METHOD, result)?;
            }
            Side::V2 { .. } => v1_only("writeFile"),
        },
        Step::Terminal(terminal) => match side {
            Side::V1 { cx, session } => return run_terminal(side, cx, session, terminal, received).await,
            Side::V2 { .. } => v1_only("terminal"),
        },
        Step::Delay(ms) => {
            let sleep = tokio::time::sleep(Duration::from_millis(*ms));
            match on_cancel {
                OnCancel::Finish => sleep.await,
                OnCancel::Stop => tokio::select! {
                    _ = sleep => {}
                    _ = context(side).cancelled() => return Err(Ended::Stop(StopReason::Cancelled)),
                },
            }
        }
        Step::Error(e) => {
            let mut error = RpcError::new(e.code, e.message.clone());
            error.data = e.data.clone();
            return Err(Ended::Error(error));
        }
        Step::Stop(reason) => return Err(Ended::Stop(*reason)),
    }
    Ok(())
}

/// Step `plan`: v1's `plan`, v2's `plan_update` of a list of items.
fn plan(entries: &[PlanEntry], v1: bool) -> Map<String, Value> {
    let entries: Vec<Value> =
        entries.iter().map(|e| json!({ "content": e.content, "priority": e.priority, "status": e.status })).collect();
    object(match v1 {
        true => json!({ "sessionUpdate": "plan", "entries": entries }),
        false => json!({
            "sessionUpdate": "plan_update",
            "plan": { "type": "items", "planId": "mock-plan", "entries": entries },
        }),
    })
}

/// Step `toolCall`: v1's `tool_call`; v2 has only `tool_call_update`, which also starts one.
fn tool_call(call: &ToolCall, v1: bool) -> Map<String, Value> {
    let kind = if v1 { "tool_call" } else { "tool_call_update" };
    let update = json!({ "sessionUpdate": kind, "toolCallId": call.id, "title": call.title });
    let fields = [
        ("kind", call.kind.clone().map(Value::String)),
        ("status", call.status.clone().map(Value::String)),
        ("content", content(&call.text)),
        ("rawInput", call.raw_input.clone()),
    ];
    with(object(update), &fields)
}

/// Step `toolCallUpdate`: the fields the step gives.
fn tool_call_update(call: &ToolCallUpdate) -> Map<String, Value> {
    let update = json!({ "sessionUpdate": "tool_call_update", "toolCallId": call.id });
    let fields = [
        ("title", call.title.clone().map(Value::String)),
        ("status", call.status.clone().map(Value::String)),
        ("content", content(&call.text)),
        ("rawOutput", call.raw_output.clone()),
    ];
    with(object(update), &fields)
}

/// Step `readFile` (v1): `fs/read_text_file`, and the text said back when the step asks.
async fn read_file(
    side: &Side<'_>,
    cx: &AgentContext,
    session: &v1::SessionId,
    read: &ReadFile,
    received: &Received,
) -> Result<(), Ended> {
    let mut request = v1::ReadTextFileRequest::new(session.clone(), read.path.clone());
    request.line = read.line.into();
    request.limit = read.limit.into();
    let result = cx.request::<v1::methods::FsReadTextFile>(&request).await;
    let read_text = match result {
        Ok(answer) => Some(answer.content),
        Err(e) => {
            skipped(received, <v1::methods::FsReadTextFile as Method>::METHOD, Err(e))?;
            None
        }
    };
    if let (Some(said), true) = (read_text, read.say) {
        side.say(&said).await?;
    }
    Ok(())
}

/// Step `terminal` (v1): create, wait for the exit, read the output, release; the output and
/// the exit said back when the step asks.
async fn run_terminal(
    side: &Side<'_>,
    cx: &AgentContext,
    session: &v1::SessionId,
    terminal: &Terminal,
    received: &Received,
) -> Result<(), Ended> {
    let mut request = v1::CreateTerminalRequest::new(session.clone(), terminal.command.clone());
    request.args = Some(terminal.args.clone());
    request.cwd = terminal.cwd.clone().into();
    request.output_byte_limit = terminal.output_byte_limit.into();
    let handle = match cx.v1()?.create_terminal_with(request).await {
        Ok(handle) => handle,
        Err(e) => return skipped(received, <v1::methods::TerminalCreate as Method>::METHOD, Err(e)),
    };
    let exit = handle.wait_for_exit().await?;
    let output = handle.output().await?;
    handle.release().await?;
    if terminal.say {
        let code = exit.exit_code.as_value().map_or("none".to_string(), u32::to_string);
        let cut = if output.truncated { ", truncated" } else { "" };
        side.say(&format!("{}(exit {code}{cut})", output.output)).await?;
    }
    Ok(())
}

/// `session/request_permission`: the chosen option's id, `None` when cancelled.
async fn ask(
    side: &Side<'_>,
    tool_call: &str,
    title: &str,
    options: &[PermissionOption],
) -> Result<Option<String>, Ended> {
    let options: Vec<Value> = options
        .iter()
        .map(|o| json!({ "optionId": o.id, "name": o.name.clone().unwrap_or_else(|| o.id.clone()), "kind": o.kind.wire() }))
        .collect();
    let outcome = match side {
        Side::V1 { cx, session } => {
            let call: v1::ToolCallUpdate = decode("tool call", json!({ "toolCallId": tool_call, "title": title }))?;
            let options: Vec<v1::PermissionOption> = decode("permission options", Value::Array(options))?;
            let outcome = cx.v1()?.ask_permission(session, call, options).await?;
            serde_json::to_value(outcome)
        }
        Side::V2 { cx, session, .. } => {
            let options: Vec<v2::PermissionOption> = decode("permission options", Value::Array(options))?;
            serde_json::to_value(cx.v2()?.ask_permission(session, title, options).await?)
        }
    };
    let outcome = outcome.map_err(|e| RpcError::internal(format!("mock agent: permission outcome: {e}")))?;
    match outcome.get("outcome").and_then(Value::as_str) {
        Some("selected") => Ok(outcome.get("optionId").and_then(Value::as_str).map(str::to_owned)),
        _ => Ok(None),
    }
}

/// The echo: the prompt's text as one agent message.
pub(super) fn echo(said: &str) -> Map<String, Value> {
    chunk("agent_message_chunk", said)
}
