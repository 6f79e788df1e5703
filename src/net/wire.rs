//! What the transports read and write of the wire, shared by both ends: the media types, the
//! routing envelope of a message, which methods must name their session, and the canned error
//! answers.

use acp_types::support::rpc::{Role, Tables};
use acp_types::Version;
use serde::Deserialize;
use serde_json::value::RawValue;

/// The media type of the server-to-client streams.
pub(super) const EVENT_STREAM: &str = "text/event-stream";
/// The media type of POST bodies and of the `initialize` answer.
pub(super) const JSON: &str = "application/json";

/// Whether a POST of `method` must name its session (`Acp-Session-Id`): a request or notification
/// the agent receives whose params name a session (a required `sessionId`), in any protocol
/// version compiled in (unstable methods with the `unstable` feature). Read from the generated
/// tables ([`MethodInfo::session_scoped`](acp_types::support::rpc::MethodInfo::session_scoped)),
/// so it follows the schemas; the TypeScript SDK keeps the same set by hand
/// (`dist/transports/protocol.js`, `SESSION_SCOPED_METHODS`).
pub(super) fn requires_session_header(method: &str) -> bool {
    Version::ALL.iter().any(|version| match version {
        Version::V1 => acp_types::v1::methods::Tables::session_scoped(Role::Agent, method),
        Version::V2 => acp_types::v2::methods::Tables::session_scoped(Role::Agent, method),
    })
}

/// What a transport needs to know of a JSON-RPC message to route it, read without decoding the
/// rest.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Envelope {
    /// What the message is.
    pub(super) kind: Kind,
    /// The id's JSON text (`null` included), when the message has one.
    pub(super) id: Option<String>,
    /// The method, for requests and notifications.
    pub(super) method: Option<String>,
    /// `params.sessionId`, when it is a string.
    pub(super) session_id: Option<String>,
    /// `result.sessionId` of a response, when it is a string (a session just created).
    pub(super) result_session_id: Option<String>,
}

/// The kinds of JSON-RPC message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `method` and `id`.
    Request,
    /// `method`, no `id`.
    Notification,
    /// `id` and no `method`.
    Response,
    /// A JSON object that is none of these (left for the connection to answer).
    Other,
}

/// Why a body is not a routable message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotAMessage {
    /// Not JSON.
    Invalid,
    /// A JSON array: a batch, which ACP does not use.
    Batch,
    /// JSON, but neither an object nor an array.
    NotAnObject,
}

#[derive(Deserialize)]
struct Head<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
    #[serde(default, borrow)]
    result: Option<&'a RawValue>,
}

/// A member that is present, `null` included (serde's `Option` would make `null` absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct SessionOf {
    #[serde(rename = "sessionId")]
    session_id: Option<serde_json::Value>,
}

fn session_of(raw: Option<&RawValue>) -> Option<String> {
    let field: SessionOf = serde_json::from_str(raw?.get()).ok()?;
    match field.session_id? {
        serde_json::Value::String(id) => Some(id),
        _ => None,
    }
}

/// Reads what routing needs from one message's JSON text.
pub(super) fn envelope(bytes: &[u8]) -> Result<Envelope, NotAMessage> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        Some(b'[') => {
            return if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
                Err(NotAMessage::Batch)
            } else {
                Err(NotAMessage::Invalid)
            }
        }
        Some(b'{') => {}
        _ => {
            return if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() {
                Err(NotAMessage::NotAnObject)
            } else {
                Err(NotAMessage::Invalid)
            }
        }
    }
    let head: Head<'_> = match serde_json::from_slice(bytes) {
        Ok(head) => head,
        // An object with members of unexpected types (`"method": 5`) is still JSON: the
        // connection answers it as an invalid request.
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() => {
            return Ok(Envelope {
                kind: Kind::Other,
                id: None,
                method: None,
                session_id: None,
                result_session_id: None,
            })
        }
        Err(_) => return Err(NotAMessage::Invalid),
    };
    let kind = match (&head.method, head.id) {
        (Some(_), Some(_)) => Kind::Request,
        (Some(_), None) => Kind::Notification,
        (None, Some(_)) => Kind::Response,
        (None, None) => Kind::Other,
    };
    Ok(Envelope {
        kind,
        id: head.id.map(|id| id.get().to_string()),
        session_id: session_of(head.params),
        result_session_id: session_of(head.result),
        method: head.method,
    })
}

/// The error answer to a batch: one -32600 with `id: null` (what the TypeScript SDK sends).
pub(super) const BATCH_ERROR: &str =
    r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"JSON-RPC batches are not supported"}}"#;

/// The error answer to a WebSocket frame that is not JSON (a POST that is not gets a plain 400).
#[cfg(feature = "ws")]
pub(super) const PARSE_ERROR: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;

/// The read buffer of a WebSocket, both ends: 16 KiB rather than tungstenite's 128 KiB default.
/// tungstenite zero-fills the unused capacity of its read buffer (up to this size) before every
/// read (`FrameCodec::read_in`, tungstenite 0.28 `src/protocol/frame/mod.rs`), so the default
/// cost a turn of the bench's round trips about 128 K instructions of `memset` per message, 72 %
/// of the agent's instructions under callgrind, and each socket holds the buffer for its life.
/// A larger message still fits: the buffer grows to the frame's length, 16 KiB a read.
#[cfg(feature = "ws")]
pub(super) const WS_READ_BUFFER: usize = 16 << 10;

/// The WebSocket settings of both ends: messages and frames up to `limit` bytes, the read buffer
/// of [`WS_READ_BUFFER`].
#[cfg(feature = "ws")]
pub(super) fn ws_config(limit: usize) -> tokio_tungstenite::tungstenite::protocol::WebSocketConfig {
    tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(WS_READ_BUFFER)
        .max_message_size(Some(limit))
        .max_frame_size(Some(limit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_types::support::rpc::RpcError;

    /// An error answer without an id, as built from its code.
    fn error_answer(code: i32, message: &str) -> serde_json::Value {
        serde_json::json!({ "jsonrpc": "2.0", "id": null, "error": { "code": code, "message": message } })
    }

    #[test]
    fn the_fixed_error_answers_carry_the_named_codes() {
        let parsed = |text: &str| serde_json::from_str::<serde_json::Value>(text).expect("JSON");
        let batch = error_answer(RpcError::INVALID_REQUEST, "JSON-RPC batches are not supported");
        assert_eq!(parsed(BATCH_ERROR), batch);
        #[cfg(feature = "ws")]
        assert_eq!(parsed(PARSE_ERROR), error_answer(RpcError::PARSE_ERROR, "Parse error"));
    }

    #[test]
    fn session_scoped_methods_come_from_the_schemas() {
        // Those the TypeScript SDK 2.4.0 lists, but `session/set_model` (in no schema now), and
        // those of v2 and the unstable schemas it does not list.
        let mut scoped = vec![
            "session/cancel",
            "session/close",
            "session/delete",
            "session/load",
            "session/prompt",
            "session/resume",
            "session/set_config_option",
            "session/set_mode",
            "terminal/cancel",
            "tool_call/cancel",
        ];
        // The tables have the unstable methods when acp-types' `unstable` feature is on, which
        // another crate of the build may turn on without this crate's: ask them, not `cfg!`.
        let unstable = acp_types::v1::methods::Tables::METHODS.iter().any(|m| m.name == "session/fork");
        if unstable {
            scoped.extend([
                "session/archive",
                "session/fork",
                "session/set_title",
                "session/status",
                "session/unarchive",
            ]);
        }
        for method in scoped {
            assert!(requires_session_header(method), "{method}");
        }
        // No session yet or at all, received by the client, not a method: no header needed.
        let unscoped = [
            "initialize",
            "session/new",
            "session/list",
            "session/set_model",
            "$/cancel_request",
            "session/update",
            "session/request_permission",
            "fs/read_text_file",
            "_vendor/session",
        ];
        for method in unscoped {
            assert!(!requires_session_header(method), "{method}");
        }
        if !unstable {
            assert!(!requires_session_header("session/fork"));
        }
    }

    #[test]
    fn envelopes() {
        let e =
            envelope(br#"{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#)
                .unwrap();
        assert_eq!((e.kind, e.id.as_deref(), e.session_id.as_deref()), (Kind::Request, Some("1"), Some("s1")));
        let e = envelope(br#"{"jsonrpc":"2.0","id":null,"result":{"sessionId":"s2"}}"#).unwrap();
        assert_eq!(
            (e.kind, e.id.as_deref(), e.result_session_id.as_deref()),
            (Kind::Response, Some("null"), Some("s2"))
        );
        let e =
            envelope(b"{\n\"jsonrpc\":\"2.0\",\"method\":\"session/cancel\",\"params\":{\"sessionId\":7}}").unwrap();
        assert_eq!((e.kind, e.session_id), (Kind::Notification, None));
        assert_eq!(envelope(br#"{"method":5}"#).unwrap().kind, Kind::Other);
        assert_eq!(envelope(b"[1,2]"), Err(NotAMessage::Batch));
        assert_eq!(envelope(b"[1,"), Err(NotAMessage::Invalid));
        assert_eq!(envelope(b"42"), Err(NotAMessage::NotAnObject));
        assert_eq!(envelope(b"{"), Err(NotAMessage::Invalid));
    }
}
