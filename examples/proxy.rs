//! A proxy that prefixes the text of every `agent_message_chunk` it forwards (`--prefix TEXT`),
//! in v1 and v2 chains, and passes everything else through unchanged. A conductor runs it on
//! stdio: `acp conduct agent "proxy --prefix '> '" "echo_agent"`.

use acp_rpc::proxy::{serve_proxy_stdio, Notification, ProxyContext, ProxyHandler};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2};

struct Prefix(String);

impl ProxyHandler for Prefix {
    async fn agent_notification(&self, mut note: Notification, cx: ProxyContext) -> Result<(), RpcError> {
        // Each version's `session/update` in its own types; unknown fields are kept. An update
        // that does not decode passes unchanged.
        let _ = note.edit::<v1::methods::SessionUpdate>(|n| {
            if let v1::SessionUpdate::AgentMessageChunk(chunk) = &mut n.update {
                if let v1::ContentBlock::Text(text) = &mut chunk.content {
                    text.text.insert_str(0, &self.0);
                }
            }
        });
        let _ = note.edit::<v2::methods::SessionUpdate>(|n| {
            if let v2::SessionUpdate::AgentMessageChunk(chunk) = &mut n.update {
                if let v2::ContentBlock::Text(text) = &mut chunk.content {
                    text.text.insert_str(0, &self.0);
                }
            }
        });
        cx.client().forward_notification(note).await
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let prefix = match args.as_slice() {
        [flag, text] if flag == "--prefix" => text.clone(),
        _ => {
            eprintln!("usage: proxy --prefix TEXT");
            std::process::exit(2);
        }
    };
    serve_proxy_stdio(Prefix(prefix)).await
}
