//! The generated `x-state` reducer (`acp_types::v2::state::SessionState`): a prompt turn's
//! updates applied to a session's state. No reference implementation keeps v2 session state (the
//! official crates and the TypeScript SDK leave it to each client), so the row compares applying
//! with decoding the same updates, which every client does anyway; and a second row checks that
//! appending stays linear in the length of a message (no copy of the message per chunk).

use acp_types::v2;
use acp_types::v2::state::SessionState;
use serde_json::json;

/// A turn: `running`, then `chunks` agent message chunks of one message interleaved with a tool
/// call created, patched and completed, terminal output, usage, then `idle`.
pub fn turn(chunks: usize) -> Vec<String> {
    let mut lines = vec![json!({"sessionUpdate": "state_update", "state": "running"}).to_string()];
    for i in 0..chunks {
        lines.push(
            json!({"sessionUpdate": "agent_message_chunk", "messageId": "m1", "content": {"type": "text", "text": format!("word{i} ")}})
                .to_string(),
        );
        if i % 50 == 0 {
            let id = format!("t{}", i / 200);
            lines.push(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "title": "run", "status": "in_progress"})
                    .to_string(),
            );
            lines.push(
                json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "term", "data": "line of output\n"})
                    .to_string(),
            );
            lines.push(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed"}).to_string(),
            );
            lines.push(json!({"sessionUpdate": "usage_update", "used": i, "size": 100000}).to_string());
        }
    }
    lines.push(json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}).to_string());
    lines
}

/// The updates, decoded once.
pub fn decoded(lines: &[String]) -> Vec<v2::SessionUpdate> {
    lines.iter().map(|l| serde_json::from_str(l).expect("a valid update")).collect()
}

/// Decodes every update (what a client does before applying).
pub fn decode_all(lines: &[String]) -> usize {
    lines.iter().filter(|l| acp_types::support::json::from_str::<v2::SessionUpdate>(l).is_ok()).count()
}

/// Applies every update to a new state; the number of agent messages, so the work is used.
pub fn apply_all(updates: &[v2::SessionUpdate]) -> usize {
    let mut state = SessionState::default();
    for u in updates {
        state.apply(u);
    }
    assert!(state.state.raw().is_some());
    state.agent_message.len() + state.tool_call.len()
}
