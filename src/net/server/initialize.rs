//! Which message opens a connection: an `initialize` request, recognised as the TypeScript SDK
//! recognises it (for `POST` and WebSocket alike).

use crate::lifecycle::INITIALIZE;
use crate::net::{Envelope, Kind};

/// `jsonrpc: "2.0"`, an id and `method: "initialize"` (TypeScript `isInitializeRequest`).
pub(super) fn is_initialize(env: &Envelope, bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Version<'a> {
        #[serde(borrow)]
        jsonrpc: Option<&'a str>,
    }
    env.kind == Kind::Request
        && env.method.as_deref() == Some(INITIALIZE)
        && serde_json::from_slice::<Version<'_>>(bytes).is_ok_and(|v| v.jsonrpc == Some("2.0"))
}
