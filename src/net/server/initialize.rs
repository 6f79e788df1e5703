//! Which message opens a connection: an `initialize` request, recognised as the TypeScript SDK
//! recognises it (for `POST` and WebSocket alike).

use crate::net::{Envelope, Kind};
use acp_types::MethodName;

/// `jsonrpc: "2.0"`, an id and `method: "initialize"` (TypeScript `isInitializeRequest`).
pub(super) fn is_initialize(env: &Envelope, bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Version<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a str>,
    }
    env.kind == Kind::Request
        && matches!(env.method.as_deref().and_then(MethodName::of), Some(MethodName::Initialize))
        && serde_json::from_slice::<Version<'_>>(bytes).is_ok_and(|v| v.jsonrpc == Some("2.0"))
}
