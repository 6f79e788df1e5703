use acp_rpc::types::v1;
use acp_rpc::ClientContext;

struct Client;
impl v1::methods::client::Handler<ClientContext> for Client {} // no permissions, files or terminals

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (agent, args) = argv.split_first().ok_or("usage: minimal_client AGENT_CMD [ARGS…]")?;
    let (conn, driver, _child) = acp_rpc::client::spawn_agent(acp_rpc::V1(Client), agent, args, Default::default())?;
    tokio::spawn(driver);
    conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
    let cwd = std::env::current_dir()?.display().to_string();
    let mut session = conn.new_session_v1(v1::NewSessionRequest::new(cwd, vec![])).await?;
    let hello = v1::ContentBlock::from(v1::TextContent::new("hello".into()));
    let mut turn = session.prompt(vec![hello]).await;
    while let Some(update) = turn.next().await {
        println!("{}", serde_json::to_string(&update)?);
    }
    println!("stop reason: {}", turn.outcome().await?.stop_reason);
    Ok(())
}
