//! The guide's tour of `acp-types` (docs/src/generator/): a three-state field, a kept unknown
//! value, and a method table decoding and dispatching a request. Run: `cargo run --example
//! types_tour`.

use serde_json::value::RawValue;

fn patches() -> Result<(), serde_json::Error> {
    let line =
        r#"{"sessionId": "s1", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": null}}"#;
    // ANCHOR: patch
    use acp_types::v2::{SessionUpdate, ToolKind, UpdateSessionNotification};
    use acp_types::Patch;

    let note: UpdateSessionNotification = serde_json::from_str(line)?;
    if let SessionUpdate::ToolCallUpdate(update) = &note.update {
        match &update.title {
            Patch::Omitted => {}                        // leave the title as it is
            Patch::Null => println!("title cleared"),   // clear it
            Patch::Value(title) => println!("{title}"), // replace it
        }
    }
    // Unknown values and variants are kept, and written back exactly:
    assert_eq!(serde_json::from_str::<ToolKind>("\"_mykind\"")?, ToolKind::Unknown("_mykind".into()));
    // ANCHOR_END: patch
    assert_eq!(
        serde_json::to_string(&note)?,
        serde_json::to_string(&serde_json::from_str::<serde_json::Value>(line)?)?
    );
    Ok(())
}

// ANCHOR: dispatch
use acp_types::support::rpc::RpcError;
use acp_types::v1::methods::agent;
use acp_types::v1::{PromptRequest, PromptResponse, StopReason};

struct Echo;
impl agent::Handler for Echo {
    async fn session_prompt(&self, _: PromptRequest, _: ()) -> Result<PromptResponse, RpcError> {
        Ok(PromptResponse::new(StopReason::EndTurn))
    }
}

async fn answer(method: &str, params: &RawValue) -> Result<agent::Response, RpcError> {
    let request = agent::Request::decode(method, Some(params))?; // -32601, -32602 as a peer expects
    agent::dispatch_request(&Echo, request, ()).await // methods Echo leaves out answer -32601
}
// ANCHOR_END: dispatch

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    patches()?;
    let params = RawValue::from_string(r#"{"sessionId": "s1", "prompt": []}"#.into())?;
    println!("{:?}", answer("session/prompt", &params).await?);
    let new_session = RawValue::from_string(r#"{"cwd": "/", "mcpServers": []}"#.into())?;
    let refused = answer("session/new", &new_session).await.err().ok_or("session/new was answered")?;
    println!("session/new: {}", refused.code);
    Ok(())
}
