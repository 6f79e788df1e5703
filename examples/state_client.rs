//! A v2 client that reads the session's state instead of collecting updates: after the turn, the
//! agent's messages (each one the chunks that built it) and the whole state as JSON. The state is
//! generated from the schema's `x-state` annotations (`acp_types::v2::state::SessionState`) and
//! kept by the runtime as the agent's messages arrive.
//!
//! `cargo run --example state_client -- target/debug/examples/echo_agent`

use acp_rpc::types::v2;
use acp_rpc::ClientContext;

struct Client;
impl v2::methods::client::Handler<ClientContext> for Client {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (agent, args) = argv.split_first().ok_or("usage: state_client AGENT_CMD [ARGS…]")?;
    let (conn, driver, _child) = acp_rpc::client::spawn_agent(acp_rpc::V2(Client), agent, args, Default::default())?;
    tokio::spawn(driver);
    let info = v2::Implementation::new("state-client".into(), "0.1.0".into());
    conn.initialize_v2(v2::InitializeRequest::new(v2::ProtocolVersion(2), info)).await?;
    let cwd = v2::AbsolutePath(std::env::current_dir()?.display().to_string());
    let mut session = conn.new_session_v2(v2::NewSessionRequest::new(cwd)).await?;
    let hello = v2::ContentBlock::from(v2::TextContent::new("hello".into()));
    let end = session.prompt(vec![hello]).await.outcome().await?;
    let state = session.state(); // what the agent's messages made of the session
    for (id, message) in state.agent_message.iter() {
        let blocks = message?.content.as_value().cloned().unwrap_or_default();
        let text: String = blocks
            .iter()
            .filter_map(|b| if let v2::ContentBlock::Text(t) = b { Some(t.text.as_str()) } else { None })
            .collect();
        println!("{id}: {text}");
    }
    println!("{} tool calls; the turn ended {:?}", state.tool_call.len(), end.idle.stop_reason);
    println!("{}", serde_json::to_string_pretty(&*state)?);
    Ok(())
}
