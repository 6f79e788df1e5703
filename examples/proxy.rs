//! A proxy that prefixes the text of the agent's messages it forwards (`--prefix TEXT`): every
//! `agent_message_chunk` (v1 and v2) and, in v2, the first text block of every whole
//! `agent_message` upsert (its content replaces the message's, so each one is prefixed once);
//! everything else passes through unchanged. A conductor runs it on
//! stdio: `acp conduct agent "proxy --prefix '> '" "echo_agent"`.

use acp_rpc::proxy::{serve_proxy_stdio, Notification, ProxyContext, ProxyHandler};
use acp_rpc::types::support::rpc::RpcError;
use acp_rpc::types::{v1, v2, Patch};

// ANCHOR: hook
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
        let _ = note.edit::<v2::methods::SessionUpdate>(|n| match &mut n.update {
            v2::SessionUpdate::AgentMessageChunk(chunk) => {
                if let v2::ContentBlock::Text(text) = &mut chunk.content {
                    text.text.insert_str(0, &self.0);
                }
            }
            v2::SessionUpdate::AgentMessage(message) => {
                if let Patch::Value(content) = &mut message.content {
                    let first = content.iter_mut().find_map(|block| match block {
                        v2::ContentBlock::Text(text) => Some(text),
                        _ => None,
                    });
                    if let Some(text) = first {
                        text.text.insert_str(0, &self.0);
                    }
                }
            }
            _ => {}
        });
        cx.client().forward_notification(note).await
    }
}
// ANCHOR_END: hook

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
