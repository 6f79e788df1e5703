use acp_rpc::types::{support::rpc::RpcError, v1, Version};
use acp_rpc::AgentContext;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
struct Agent(AtomicU64);

impl v1::methods::agent::Handler<AgentContext> for Agent {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
    async fn session_new(&self, _: v1::NewSessionRequest, _: AgentContext) -> Result<v1::NewSessionResponse, RpcError> {
        Ok(v1::NewSessionResponse::new(v1::SessionId(format!("s{}", self.0.fetch_add(1, Ordering::Relaxed)))))
    }
    async fn session_prompt(&self, p: v1::PromptRequest, cx: AgentContext) -> Result<v1::PromptResponse, RpcError> {
        for block in p.prompt {
            let echo = v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(block)));
            let note = v1::SessionNotification::new(p.session_id.clone(), echo);
            cx.notify::<v1::methods::SessionUpdate>(&note).await.map_err(|e| e.to_rpc())?;
        }
        Ok(v1::PromptResponse::new(v1::StopReason::EndTurn))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    // v1 only: one handler, served as `V1(…)`.
    acp_rpc::agent::serve_stdio(acp_rpc::V1(Agent::default()), &[Version::V1]).await
}
