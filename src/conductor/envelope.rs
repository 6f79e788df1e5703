//! The `proxy/successor` envelope as the conductor sees it: the method names it routes by, taking
//! a component's envelope apart (a malformed one is -32602), wrapping a message for a proxy, and
//! the -32600 refusals for an envelope or a `proxy/initialize` where none belongs.

use acp_types::support::rpc::{Method, RpcError};
use acp_types::{v1, v2};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::jsonrpc::Raw;

/// `initialize`, which the agent at the end of the chain receives.
pub(super) const INITIALIZE: &str = crate::lifecycle::INITIALIZE;
/// `proxy/initialize`, which every component with a successor receives instead of `initialize`.
pub(super) const PROXY_INITIALIZE: &str = <v1::methods::ProxyInitialize as Method>::METHOD;
/// `proxy/successor`, request and notification alike.
pub(super) const PROXY_SUCCESSOR: &str = <v1::methods::ProxySuccessorRequest as Method>::METHOD;

const _: () = {
    use acp_types::support::rpc::same_wire_name;
    assert!(same_wire_name(PROXY_INITIALIZE, <v2::methods::ProxyInitialize as Method>::METHOD));
    assert!(same_wire_name(PROXY_SUCCESSOR, <v2::methods::ProxySuccessorRequest as Method>::METHOD));
    assert!(same_wire_name(PROXY_SUCCESSOR, <v1::methods::ProxySuccessorNotification as Method>::METHOD));
    assert!(same_wire_name(PROXY_SUCCESSOR, <v2::methods::ProxySuccessorNotification as Method>::METHOD));
};

/// The message inside an envelope: its method and its params (raw, as sent). The envelope's own
/// `_meta` is hop-local and stays behind (schema `ProxySuccessorRequest`).
pub(super) struct Inner {
    pub(super) method: String,
    pub(super) params: Option<Raw>,
}

/// Takes a component's envelope apart. Its `params` must be an object with a string `method`
/// and, if any, `params` that are an object or an array (`null` and omitted both mean none);
/// anything else is -32602 naming the field, and the chain goes on serving.
pub(super) fn open(params: Option<&RawValue>) -> Result<Inner, RpcError> {
    #[derive(Deserialize)]
    struct Envelope<'a> {
        method: String,
        #[serde(default, borrow)]
        params: Option<&'a RawValue>,
    }
    let bad = |path: &str, reason: &str| RpcError::invalid_params(PROXY_SUCCESSOR, path, reason);
    let Some(params) = params else {
        return Err(bad("", "the envelope needs params: {\"method\": …, \"params\": …}"));
    };
    let envelope: Envelope<'_> = serde_json::from_str(params.get()).map_err(|e| bad("", &e.to_string()))?;
    let inner = match envelope.params {
        None => None,
        Some(p) if matches!(p.get().trim_start().as_bytes().first(), Some(b'{' | b'[')) => Some(p.to_owned()),
        Some(_) => return Err(bad("params", "the wrapped message's params must be an object or an array")),
    };
    Ok(Inner { method: envelope.method, params: inner })
}

/// The envelope of `method` and `params` for a proxy: a message from its successor.
pub(super) fn wrap(method: &str, params: Option<&RawValue>) -> Raw {
    let method = serde_json::to_string(method).unwrap_or_else(|_| "\"\"".into());
    let text = match params {
        Some(p) => format!(r#"{{"method":{method},"params":{}}}"#, p.get()),
        None => format!(r#"{{"method":{method}}}"#),
    };
    // A JSON string and raw JSON text make valid JSON.
    RawValue::from_string(text).unwrap_or_else(|_| RawValue::from_string("{}".into()).expect("valid JSON"))
}

/// -32600 for a `proxy/successor` request from the editor, from the agent, or wrapped in another
/// envelope: only the conductor and the proxies it initialized exchange envelopes (the official
/// conductor 5.0.0 answers the same: `reject_misplaced_successor_message`, conductor.rs:1232-1261).
pub(super) fn misplaced() -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!("`{PROXY_SUCCESSOR}` is only exchanged between the conductor and the proxies it initialized"),
    )
}

/// -32600 for a `proxy/initialize` that does not come from the conductor (official conductor
/// 5.0.0: `initialize_proxy_from_outside`, conductor.rs:1263-1269).
pub(super) fn initialize_from_outside() -> RpcError {
    RpcError::new(RpcError::INVALID_REQUEST, format!("`{PROXY_INITIALIZE}` requests are only sent by the conductor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Raw {
        RawValue::from_string(text.into()).expect("json")
    }

    #[test]
    fn an_envelope_opens_to_its_method_and_raw_params() {
        let inner = open(Some(&raw(r#"{"method":"session/prompt","params":{"b":1, "a":[2]},"_meta":{"x":1}}"#)))
            .expect("well formed");
        assert_eq!(inner.method, "session/prompt");
        assert_eq!(inner.params.expect("params").get(), r#"{"b":1, "a":[2]}"#);
        for none in [r#"{"method":"m"}"#, r#"{"method":"m","params":null}"#] {
            assert!(open(Some(&raw(none))).expect("well formed").params.is_none(), "{none}");
        }
    }

    #[test]
    fn a_malformed_envelope_is_invalid_params() {
        for bad in [r#"{"params":{}}"#, r#"{"method":3}"#, r#"{"method":"m","params":5}"#, "[]", r#""m""#] {
            let error = open(Some(&raw(bad))).err().expect(bad);
            assert_eq!(error.code, RpcError::INVALID_PARAMS, "{bad}");
        }
        assert_eq!(open(None).err().map(|e| e.code), Some(RpcError::INVALID_PARAMS));
    }

    #[test]
    fn wrapping_keeps_the_params_as_sent() {
        assert_eq!(wrap("a/b", Some(&raw(r#"{"z":1,"y":2}"#))).get(), r#"{"method":"a/b","params":{"z":1,"y":2}}"#);
        assert_eq!(wrap("a\"b", None).get(), r#"{"method":"a\"b"}"#);
    }
}
