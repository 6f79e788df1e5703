//! An agent for the network tests (`tests/net_server.rs`, `net_tls`): echoes each prompt's first block
//! as one chunk and ends the turn, in v1 and v2.

use acp_rpc::agent::Turn;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2};
use acp_rpc::AgentContext;

/// Echoes each prompt's text as one chunk, in v1 and v2.
pub struct Echo;

impl v1::methods::agent::Handler<AgentContext> for Echo {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId("s1".into())))
    }
    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        let chunk = v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(p.prompt[0].clone())));
        cx.v1()?.update(&p.session_id, chunk).await?;
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}

impl v2::methods::agent::Handler<AgentContext> for Echo {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("t".into(), "0".into())))
    }
    async fn session_new(&self, _: v2::NewSessionRequest, _: AgentContext) -> Result<v2::NewSessionResponse, RpcError> {
        Ok(v2::NewSessionResponse::new(v2::SessionId("s1".into())))
    }
}

impl acp_rpc::agent::PromptTurn for Echo {
    async fn prompt_turn(&self, prompt: v2::PromptRequest, turn: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        let block =
            prompt.prompt.first().cloned().unwrap_or(v2::ContentBlock::from(v2::TextContent::new(String::new())));
        let chunk = v2::ContentChunk::new(turn.new_message_id(), block);
        turn.update(v2::SessionUpdate::AgentMessageChunk(Box::new(chunk))).await.map_err(|e| e.to_rpc())?;
        Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
    }
}
