//! The guide's test-kit samples (docs/src/testkit.md): the mock agent in process, and the mock
//! client played against it over a pipe. Run: `cargo run --features mock --example mock_kit`.

#[cfg(feature = "mock")]
mod kit {
    use acp_rpc::mock::{ClientScript, MockAgent, MockClient};
    use acp_rpc::types::v1;
    use acp_rpc::ClientContext;

    #[derive(Default)]
    struct MyClient;
    impl v1::methods::client::Handler<ClientContext> for MyClient {}

    pub async fn mock_agent() -> Result<(), Box<dyn std::error::Error>> {
        let script = r#"{ "turns": [ { "match": { "text": "hi" }, "steps": [ { "message": "Hello." } ] } ] }"#;
        // ANCHOR: mock_agent
        // In-process: no process, a pipe; `received` records everything the client sent.
        let agent = MockAgent::from_json(script)?;
        let received = agent.received();
        // A ClientConnection to drive as usual:
        let conn = agent.connect(acp_rpc::V1(MyClient));
        // ANCHOR_END: mock_agent
        conn.initialize_v1(v1::InitializeRequest::new(v1::ProtocolVersion(1))).await?;
        let mut session = conn.new_session_v1(v1::NewSessionRequest::new("/".into(), vec![])).await?;
        let mut turn = session.prompt(vec![v1::ContentBlock::from(v1::TextContent::new("hi".into()))]).await;
        while let Some(update) = turn.next().await {
            println!("mock agent sent: {}", serde_json::to_string(&update)?);
        }
        println!("the client sent: {:?}", received.methods());
        Ok(())
    }

    pub async fn mock_client() -> Result<(), Box<dyn std::error::Error>> {
        let script = r#"{ "protocolVersion": 1, "sessions": [ { "cwd": "/work", "prompts": [ { "text": "hi" } ] } ] }"#;
        let (client_end, agent_end) = tokio::io::duplex(1 << 16);
        let (agent_read, agent_write) = tokio::io::split(agent_end);
        let (_, agent) = MockAgent::echo().serve(agent_read, agent_write);
        tokio::spawn(agent);
        let (reader, writer) = tokio::io::split(client_end);
        // ANCHOR: mock_client
        let report = MockClient::new(ClientScript::from_json(script)?)
            .run_over(acp_rpc::jsonrpc::Pipe { reader, writer }) // or .run_spawned(program, args)
            .await?;
        assert_eq!(report.sessions[0].turns[0].stop_reason.as_deref(), Some("end_turn"));
        // ANCHOR_END: mock_client
        println!("mock client's report: {}", report.sessions[0].turns[0].agent_text());
        Ok(())
    }
}

#[cfg(feature = "mock")]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    kit::mock_agent().await?;
    kit::mock_client().await
}

#[cfg(not(feature = "mock"))]
fn main() {
    eprintln!("the test kit needs the feature: cargo run --features mock --example mock_kit");
    std::process::exit(2);
}
