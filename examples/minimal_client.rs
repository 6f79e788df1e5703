use acp_rpc::types::{v1, v2, Version};
use acp_rpc::Context;

struct Client;

impl v1::methods::client::Handler<Context> for Client {
    async fn session_update(&self, n: v1::SessionNotification, _: Context) {
        println!("{}", serde_json::to_string(&n.update).unwrap_or_default());
    }
}
impl v2::methods::client::Handler<Context> for Client {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (agent, args) = argv.split_first().ok_or("usage: minimal_client AGENT_CMD [ARGS…]")?;
    let (conn, driver, _child) = acp_rpc::client::spawn_agent(Client, agent, args, Default::default())?;
    tokio::spawn(driver);
    conn.initialize(Version::V1, serde_json::json!({})).await?;
    let new = v1::NewSessionRequest::new(std::env::current_dir()?.display().to_string(), vec![]);
    let session = conn.conn.request::<v1::methods::SessionNew>(&new).await?;
    let hello = vec![v1::ContentBlock::Text(v1::TextContent::new("hello".into()))];
    // Completes when the turn ends, after every update of it was printed.
    let done = conn.prompt_v1(&v1::PromptRequest::new(session.session_id, hello)).await?;
    println!("stop reason: {}", done.stop_reason);
    Ok(())
}
