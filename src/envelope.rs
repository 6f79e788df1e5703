//! The `proxy/successor` envelope, shared by the proxy role and the conductor (feature
//! `unstable`): the wire names of the proxy methods, taking an envelope apart ([`unwrap`], with
//! the error a peer expects for a malformed one or for a message that never crosses a hop inside
//! one), and putting a message in one ([`wrap`], params as raw text). Each role keeps its own
//! refusals of envelopes that arrive where none belongs.
//!
//! The envelope's `_meta` is the hop's own: it is not carried into the message inside. The
//! wrapped message's `params`, omitted or `null`, mean none (schema `ProxySuccessorRequest.params`:
//! "Omitted and `null` are equivalent and mean the wrapped request has no params").

use acp_types::support::rpc::{same_wire_name, Method, RpcError};
use acp_types::{v1, v2, MethodName};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;

use crate::error::{Error, Misuse};
use crate::jsonrpc::Raw;
use crate::rules::RuleId;

/// `proxy/successor` (request and notification alike, the same in every version).
pub(crate) const PROXY_SUCCESSOR: &str = v1::methods::ProxySuccessorRequest::METHOD;
/// `proxy/initialize`, which every component with a successor receives instead of `initialize`.
pub(crate) const PROXY_INITIALIZE: &str = v1::methods::ProxyInitialize::METHOD;

const _: () = assert!(
    same_wire_name(PROXY_SUCCESSOR, v2::methods::ProxySuccessorRequest::METHOD)
        && same_wire_name(PROXY_SUCCESSOR, v1::methods::ProxySuccessorNotification::METHOD)
        && same_wire_name(PROXY_SUCCESSOR, v2::methods::ProxySuccessorNotification::METHOD)
        && same_wire_name(PROXY_INITIALIZE, v2::methods::ProxyInitialize::METHOD),
    "v1 and v2 name the proxy methods apart"
);

/// The message inside an envelope: its method, and its params as sent (absent and `null`
/// alike: none).
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) method: String,
    pub(crate) params: Option<Raw>,
}

/// The params of an envelope, raw members borrowed (`_meta` and unknown members ignored).
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    method: Option<&'a RawValue>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// -32602 naming the field and the rule (`proxy.successor-params`).
fn invalid(path: &str, reason: &str) -> RpcError {
    let mut error = RpcError::invalid_params(PROXY_SUCCESSOR, path, reason);
    if let Some(serde_json::Value::Object(data)) = &mut error.data {
        data.insert("rule".into(), json!(RuleId::ProxySuccessorParams));
    }
    error
}

/// The message a `proxy/successor` envelope (its `params`) carries: -32602 naming the field
/// and the rule for a malformed envelope (not an object, no string `method`, inner `params`
/// neither an object, an array nor `null`), -32600 for a message that never crosses a hop
/// inside an envelope (a second envelope, `proxy/initialize`, `$/cancel_request`), as the
/// official conductor answers a `proxy/successor` wrapped in another one
/// (agent-client-protocol-conductor 5.0.0, `reject_misplaced_successor_message`, conductor.rs:1232-1261).
pub(crate) fn unwrap(params: Option<&RawValue>) -> Result<Inner, RpcError> {
    let Some(params) = params.filter(|p| p.get().trim_start().starts_with('{')) else {
        return Err(invalid("", "the envelope must be an object with `method` and `params`"));
    };
    let envelope: Envelope<'_> = serde_json::from_str(params.get()).map_err(|e| invalid("", &e.to_string()))?;
    let method = envelope.method.ok_or_else(|| invalid("method", "missing: the envelope names the method it wraps"))?;
    let method: String =
        serde_json::from_str(method.get()).map_err(|_| invalid("method", "expected the method name, a string"))?;
    // `Option` reads `null` as `None`: omitted and `null` alike are no params.
    let params = match envelope.params.map(|p| p.get().trim_start()) {
        None => None,
        Some(text) if text.starts_with('{') || text.starts_with('[') => envelope.params.map(RawValue::to_owned),
        Some(_) => return Err(invalid("params", "must be an object, an array or null")),
    };
    // `$/cancel_request` cancels a request of its own hop, never one behind another hop.
    use acp_types::MethodName::{CancelRequest, ProxyInitialize, ProxySuccessor};
    if matches!(MethodName::of(&method), Some(ProxySuccessor | ProxyInitialize | CancelRequest)) {
        return Err(RpcError::new(
            RpcError::INVALID_REQUEST,
            format!("{method} inside a {PROXY_SUCCESSOR} envelope: it is only exchanged between a conductor and its proxies, never carried across a hop"),
        )
        .with_data(json!({ "method": PROXY_SUCCESSOR, "inner": method })));
    }
    Ok(Inner { method, params })
}

/// The params of a `proxy/successor` envelope carrying `method` with `params` (as they are).
pub(crate) fn wrap(method: &str, params: Option<&RawValue>) -> Result<Raw, Error> {
    let method = serde_json::to_string(method).map_err(|e| Misuse::Params(e.to_string()))?;
    let text = match params {
        Some(params) => format!(r#"{{"method":{method},"params":{}}}"#, params.get()),
        None => format!(r#"{{"method":{method}}}"#),
    };
    RawValue::from_string(text).map_err(|e| Misuse::Params(e.to_string()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Raw {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn wraps_and_unwraps_params_as_they_are() {
        let params = raw(r#"{ "b":1,  "a":[2] ,"_x":null}"#);
        let wrapped = wrap("session/prompt", Some(&params)).unwrap();
        assert_eq!(wrapped.get(), r#"{"method":"session/prompt","params":{ "b":1,  "a":[2] ,"_x":null}}"#);
        let inner = unwrap(Some(&wrapped)).unwrap();
        assert_eq!(inner.method, "session/prompt");
        assert_eq!(inner.params.unwrap().get(), params.get());
        assert_eq!(wrap("x", None).unwrap().get(), r#"{"method":"x"}"#);
        assert_eq!(wrap("a\"b", None).unwrap().get(), r#"{"method":"a\"b"}"#);
    }

    #[test]
    fn meta_and_null_params_are_not_carried() {
        for none in [
            r#"{"method":"m","params":null,"_meta":{"hop":1}}"#,
            r#"{"method":"m"}"#,
            r#"{"method":"m","params": null }"#,
        ] {
            assert!(unwrap(Some(&raw(none))).unwrap().params.is_none(), "{none}");
        }
    }

    #[test]
    fn malformed_envelopes_are_refused_by_field() {
        let code = |text: &str| unwrap(Some(&raw(text))).unwrap_err();
        let e = code(r#"{"params":{}}"#);
        let data = e.data.unwrap();
        assert_eq!(
            (e.code, &data["path"], &data["rule"]),
            (-32602, &json!("method"), &json!("proxy.successor-params"))
        );
        let e = code(r#"{"method":"m","params":5}"#);
        assert_eq!((e.code, e.data.unwrap()["path"].clone()), (-32602, json!("params")));
        assert_eq!(code(r#"{"method":"m","params":"null"}"#).code, -32602);
        assert_eq!(code(r#"{"method":7}"#).code, -32602);
        assert_eq!(code(r#"[1]"#).code, -32602);
        assert_eq!(code(r#""m""#).code, -32602);
        assert_eq!(unwrap(None).unwrap_err().code, -32602);
        assert_eq!(code(r#"{"method":"proxy/successor","params":{"method":"x"}}"#).code, -32600);
        assert_eq!(code(r#"{"method":"proxy/initialize","params":{}}"#).code, -32600);
        assert_eq!(code(r#"{"method":"$/cancel_request","params":{"requestId":1}}"#).code, -32600);
    }
}
