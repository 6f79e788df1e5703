//! The decode/encode corpus: the messages of a realistic prompt turn, taken from the test corpus
//! (`tests/corpus/vN.json`, validated against the schemas), as JSON-RPC lines.

use serde_json::{json, Value};

/// The schema types a prompt turn is made of.
const TURN: &[&str] = &[
    "InitializeRequest",
    "InitializeResponse",
    "NewSessionRequest",
    "NewSessionResponse",
    "PromptRequest",
    "PromptResponse",
    "SessionNotification",
    "UpdateSessionNotification",
    "RequestPermissionRequest",
    "RequestPermissionResponse",
];

/// One message: its schema type and its params (or result) as JSON text.
pub struct Message {
    pub type_name: String,
    pub payload: String,
}

/// The stable corpus cases of `version` whose type is in a prompt turn. Each `session/update`
/// case appears once; chunks dominate real turns, so the text chunks are repeated 8 times.
pub fn turn(version: u16) -> Vec<Message> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/corpus/");
    let text = std::fs::read_to_string(format!("{path}v{version}.json")).expect("corpus");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("corpus JSON");
    let mut out = Vec::new();
    for case in cases {
        let type_name = case["type"].as_str().unwrap_or_default();
        if case["unstable"] == json!(true) || !TURN.contains(&type_name) {
            continue;
        }
        let payload = case["value"].to_string();
        let update = case["value"]["update"]["sessionUpdate"].as_str().unwrap_or_default();
        let copies = if update.ends_with("_chunk") { 8 } else { 1 };
        for _ in 0..copies {
            out.push(Message { type_name: type_name.to_string(), payload: payload.clone() });
        }
    }
    out
}

/// `session/set_mode` params: the request of the round-trip rows.
pub fn set_mode_params() -> Value {
    json!({ "sessionId": "sess-1", "modeId": "code" })
}

/// A `session/update` notification carrying an agent message chunk of `len` bytes of text.
pub fn chunk_params(len: usize) -> Value {
    let text: String = "lorem ipsum dolor sit amet, ".chars().cycle().take(len).collect();
    json!({
        "sessionId": "sess-1",
        "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": text } }
    })
}

/// Writes a `session/update` line whose text chunk is `len` bytes, in 64 KiB pieces, never holding it whole, so that
/// the peak memory of the large-message row is the receiver's.
pub async fn write_notification<W: tokio::io::AsyncWrite + Unpin>(write: &mut W, len: usize) {
    use tokio::io::AsyncWriteExt;
    let head = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess-1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""#;
    write.write_all(head.as_bytes()).await.expect("write");
    let piece: Vec<u8> = b"lorem ipsum dolor sit amet, ".iter().copied().cycle().take(64 * 1024).collect();
    let mut left = len;
    while left > 0 {
        let n = left.min(piece.len());
        write.write_all(&piece[..n]).await.expect("write");
        left -= n;
    }
    write.write_all(b"\"}}}}\n").await.expect("write");
    write.flush().await.expect("flush");
}

/// The large-message rows send one `session/update` of this size through the same path before
/// they take their memory baseline, in both libraries: the first message of a connection pages in
/// the code that decodes it (about 1 MiB of ours, mostly the generated decoders, and 0.8 MiB more
/// for the large-message path: `/proc/self/smaps` shows it in the binary's text), which a message
/// of any size would pay once and which is not the message's memory. 64 KiB takes our
/// large-message path (`support::moved::MOVE_MIN`).
pub const WARM_UP: usize = 64 * 1024;

/// A fake agent on the other end of a pipe: answers the client's `initialize` (v1) and hands
/// back its two halves.
pub async fn answer_initialize<R, W>(read: R, mut write: W) -> (tokio::io::BufReader<R>, W)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut read = tokio::io::BufReader::new(read);
    let mut line = String::new();
    read.read_line(&mut line).await.expect("initialize arrives");
    let request: Value = serde_json::from_str(&line).expect("initialize is JSON");
    let answer = json!({ "jsonrpc": "2.0", "id": request["id"], "result": { "protocolVersion": 1 } });
    write.write_all(format!("{answer}\n").as_bytes()).await.expect("answer");
    write.flush().await.expect("flush");
    (read, write)
}
