//! The v2 prompt turn, run by the runtime. In v2 a `session/prompt` is answered as soon as the
//! user message is inserted (the answer carries its `messageId`); the turn runs on after it and
//! is reported through `session/update`: `running` when its foreground work starts, `idle` with a
//! `stopReason` when it ends (rule `turn.v2-running-idle`; `cancelled` after a cancel, rule
//! `turn.v2-cancelled`). Turns of one session run one after the other; a turn is dropped when the
//! connection closes.

use super::context::{Advertised, AgentContext};
use super::handler::AgentHandler;
use super::turn::{MessageIds, Turn};
use crate::jsonrpc::{Raw, RequestContext};
use crate::lifecycle::{SessionWork, SESSION_PROMPT};
use crate::sync::lock;
use acp_types::support::rpc::{decode_params, RpcError};
use acp_types::support::Patch;
use acp_types::{v2, Version};
use futures_util::FutureExt as _;
use serde_json::json;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The turns of one agent connection: one at a time per session, and the `messageId`s of
/// inserted messages.
#[derive(Default)]
pub(super) struct Turns {
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    ids: Arc<MessageIds>,
}

impl Turns {
    /// The lock that orders `session`'s turns.
    pub(super) fn of(&self, session: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = lock(&self.locks);
        // Locks nobody holds or waits for are dropped here, so the map stays as large as the
        // sessions with turns in flight.
        locks.retain(|_, l| Arc::strong_count(l) > 1);
        locks.entry(session.to_string()).or_default().clone()
    }
}

/// A v2 `session/prompt`: the prompt checked, the user message inserted and reported, the
/// answer (its `messageId`) returned, and the turn started once the answer is queued.
pub(super) async fn v2_prompt<A: AgentHandler>(
    agent: Arc<A>,
    params: Option<Raw>,
    request: RequestContext,
    turns: &Turns,
    work: &Arc<SessionWork>,
    advertised: &Advertised,
) -> Result<serde_json::Value, RpcError> {
    let prompt: v2::PromptRequest = decode_params(SESSION_PROMPT, params.as_deref())?;
    if prompt.prompt.is_empty() {
        // "Clients MUST NOT send an empty array. Agents MAY reject one with `-32602` without
        // inserting it." (v2 `PromptRequest.prompt`)
        return Err(RpcError::invalid_params(SESSION_PROMPT, "prompt", "an empty prompt (minItems: 1)"));
    }
    let message_id = turns.ids.next();
    let cancel = CancellationToken::new();
    let registered = work.register(prompt.session_id.0.clone(), cancel.clone());
    let context = AgentContext::new(request.connection().clone(), Version::V2, cancel, advertised.clone());
    let turn = Turn::new(context, prompt.session_id.clone(), message_id.clone(), turns.ids.clone());
    let mut inserted = v2::UserMessage::new(message_id.clone());
    inserted.content = Patch::Value(prompt.prompt.clone());
    turn.update(v2::SessionUpdate::UserMessage(inserted)).await.map_err(|e| e.to_rpc())?;
    let serial = turns.of(&prompt.session_id.0);
    request.after_response(async move {
        let _registered = registered;
        let _serial = serial.lock_owned().await;
        run_turn(&*agent, prompt, turn).await;
    });
    acp_types::support::rpc::encode(&v2::PromptResponse::new(message_id))
}

/// The turn: `running`, the handler, `idle` with its stop reason.
async fn run_turn<A: AgentHandler>(agent: &A, prompt: v2::PromptRequest, turn: Turn) {
    let state = v2::SessionUpdate::from;
    if turn.is_cancelled() {
        return; // cancelled while queued behind another turn: no foreground work started
    }
    if turn.update(state(v2::StateUpdate::Running(v2::RunningStateUpdate::new()))).await.is_err() {
        return; // the connection is gone
    }
    let conn = turn.context().connection().clone();
    let cancel = turn.context().cancellation().clone();
    let grace = conn.cancel_grace();
    let work = AssertUnwindSafe(agent.handle_turn(prompt, turn.clone())).catch_unwind();
    let outcome = tokio::select! {
        done = work => done.unwrap_or_else(|_| Err(RpcError::internal("the prompt turn panicked"))),
        _ = async { cancel.cancelled().await; tokio::time::sleep(grace).await } => {
            Err(RpcError::new(RpcError::REQUEST_CANCELLED, "the turn did not stop within the grace period"))
        }
        _ = conn.closed() => return,
    };
    let stop = match outcome {
        _ if turn.is_cancelled() => v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::Cancelled),
        Ok(idle) => idle,
        Err(e) => {
            let mut error = v2::ErrorStopReason::new();
            error.error = Patch::Value(v2::Error::new(error_code(e.code), e.message.clone()));
            v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::Error(Box::new(error)))
        }
    };
    if let Err(e) = turn.update(state(v2::StateUpdate::Idle(Box::new(stop)))).await {
        tracing::warn!("acp: cannot report the end of a turn: {e}");
    }
}

/// A JSON-RPC error code as v2's `ErrorCode` (a named one where the schema names it).
fn error_code(code: i32) -> v2::ErrorCode {
    serde_json::from_value(json!(code)).unwrap_or(v2::ErrorCode::Other(code))
}
