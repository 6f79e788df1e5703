//! Speaking one version is one handler: an agent served as `V1(agent)` or `V2(agent)` and a
//! client connected as `V1(client)` implement that version's trait alone, and the other version is
//! never negotiated.

use acp_rpc::agent::Turn;
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Version};
use acp_rpc::{AgentContext, ClientContext, V1, V2};
use serde_json::json;

struct OnlyV1;
impl v1::methods::agent::Handler<AgentContext> for OnlyV1 {
    async fn initialize(&self, _: v1::InitializeRequest, _: AgentContext) -> Result<v1::InitializeResponse, RpcError> {
        Ok(v1::InitializeResponse::new(v1::ProtocolVersion(1)))
    }
}

struct OnlyV2;
impl v2::methods::agent::Handler<AgentContext> for OnlyV2 {
    async fn initialize(&self, _: v2::InitializeRequest, _: AgentContext) -> Result<v2::InitializeResponse, RpcError> {
        Ok(v2::InitializeResponse::new(v2::ProtocolVersion(2), v2::Implementation::new("two".into(), "0".into())))
    }
}
impl acp_rpc::agent::PromptTurn for OnlyV2 {
    async fn prompt_turn(&self, _: v2::PromptRequest, _: Turn) -> Result<v2::IdleStateUpdate, RpcError> {
        Ok(v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::EndTurn))
    }
}

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {}

fn connect<A: acp_rpc::agent::AgentHandler>(agent: A) -> acp_rpc::client::ClientConnection {
    let (a, b) = tokio::io::duplex(1 << 16);
    let (ar, aw) = tokio::io::split(a);
    let (br, bw) = tokio::io::split(b);
    // Served with every version: narrowed to what the agent speaks.
    tokio::spawn(acp_rpc::agent::serve(agent, Version::ALL, ar, aw, Default::default()).1);
    let (conn, driver) = acp_rpc::client::connect(V1(Client), br, bw, Default::default());
    tokio::spawn(driver);
    conn
}

#[tokio::test]
async fn a_v1_agent_answers_1_when_asked_for_2() {
    let conn = connect(V1(OnlyV1));
    let error = conn.initialize(Version::V2, json!({})).await.expect_err("the client speaks v1 only");
    assert!(error.to_string().contains("does not speak v2"), "{error}");
    let answer = conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect("v1");
    assert_eq!(answer.protocol_version, v1::ProtocolVersion(1));
}

#[tokio::test]
async fn a_v2_agent_refuses_v1_with_32022() {
    let conn = connect(V2(OnlyV2));
    let error = conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await.expect_err("v2 only");
    assert!(error.to_string().contains("-32022"), "{error}");
}
