//! The MCP-over-ACP binding on the wire, as plain JSON: the `mcp/message` envelope, the outcome
//! carrier of its response, the per-request MCP 2026-07-28 metadata, and the binding's outer
//! error codes. Raw JSON throughout: the generated structs drop unknown fields, and the inner
//! MCP message is opaque to ACP.
//!
//! Facts from the TypeScript SDK 2.4.0 (`dist/mcp/core.js`) and the schemas' descriptions
//! (`MessageMcpRequest`, `MessageMcpResponse`, `MessageMcpNotification`).

use acp_types::support::rpc::RpcError;
use serde_json::{json, Map, Value};

/// `mcp/message`: the request (consumer to provider) and the notification (provider to consumer).
pub const METHOD: &str = <acp_types::v1::methods::McpMessageRequest as acp_types::support::rpc::Method>::METHOD;

/// The only MCP revision the binding carries: stateless, every request self-describing.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// Inner `params._meta` key: the request's MCP protocol version (required).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// Inner `params._meta` key: the caller's MCP client capabilities (required, an object).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Inner `params._meta` key: the caller's MCP client info (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";

/// The outer ACP error codes of the binding (never inner MCP codes: an inner MCP error travels
/// inside a successful response, as [`Outcome::Error`]).
pub mod code {
    use acp_types::support::rpc::RpcError;

    /// A malformed envelope, or a duplicate active `(serverId, requestId)`.
    pub const INVALID_PARAMS: i32 = RpcError::INVALID_PARAMS;
    /// The ACP request was cancelled (`$/cancel_request`).
    pub const CANCELLED: i32 = RpcError::REQUEST_CANCELLED;
    /// A binding resource limit was exceeded (too many active requests on one server).
    pub const LIMIT: i32 = -33000;
    /// No server is registered under the `serverId`.
    pub const UNKNOWN_SERVER: i32 = -33001;
    /// The backend failed without a valid MCP outcome.
    pub const BACKEND_FAILED: i32 = -33002;
}

/// The inner MCP error code for an unsupported protocol version (MCP 2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;

/// The inner MCP codes of version errors (this one and the two before it, MCP 2026-07-28),
/// which the TypeScript bridge answers with HTTP 400.
pub(crate) const VERSION_ERRORS: [i32; 3] = [-32020, -32021, UNSUPPORTED_PROTOCOL_VERSION];

/// The inner outcome of one MCP request: what a successful `mcp/message` response carries.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The inner MCP result, as sent (any JSON, `null` included).
    Result(Value),
    /// The inner MCP error object (`code`, `message`, optional `data`, other fields kept).
    Error(Value),
}

impl Outcome {
    /// Reads a response carrier: `{"result": …}` or `{"error": {code, message, …}}`; `result`
    /// wins when both are there ("Receivers prefer `result` if both are present"). `None` when
    /// it is neither.
    pub fn from_carrier(carrier: &Value) -> Option<Outcome> {
        let object = carrier.as_object()?;
        if let Some(result) = object.get("result") {
            return Some(Outcome::Result(result.clone()));
        }
        object.get("error").filter(|e| is_error_object(e)).map(|e| Outcome::Error(e.clone()))
    }

    /// The response carrier: exactly one of `result` and `error`.
    pub fn to_carrier(&self) -> Value {
        match self {
            Outcome::Result(result) => json!({ "result": result }),
            Outcome::Error(error) => json!({ "error": error }),
        }
    }

    /// An inner error with `code` and `message`.
    pub fn error(code: i32, message: impl Into<String>) -> Outcome {
        Outcome::Error(json!({ "code": code, "message": message.into() }))
    }

    /// The inner error's code, when this is one.
    pub fn error_code(&self) -> Option<i64> {
        match self {
            Outcome::Error(e) => e.get("code").and_then(Value::as_i64),
            Outcome::Result(_) => None,
        }
    }
}

/// A whole `mcp/message` response carrier: the inner [`Outcome`] and the carrier's own `_meta`
/// (ACP metadata of this hop, not the inner MCP `_meta`). The schema's `MessageMcpResponse`:
/// "Carrier `_meta` is optional. Null or invalid values are treated as absent."; the
/// TypeScript SDK's `parseMcpOutcome` (`dist/mcp/core.js`) keeps it the same way.
#[derive(Debug, Clone, PartialEq)]
pub struct McpAnswer {
    /// The inner outcome.
    pub outcome: Outcome,
    /// The carrier's `_meta`: `None` when absent, `null`, or not an object.
    pub meta: Option<Map<String, Value>>,
}

impl McpAnswer {
    /// An answer without carrier `_meta`.
    pub fn new(outcome: Outcome) -> Self {
        McpAnswer { outcome, meta: None }
    }

    /// The answer with the carrier `_meta` `meta`.
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// Reads a response carrier as [`Outcome::from_carrier`] does, keeping its `_meta`.
    pub fn from_carrier(carrier: &Value) -> Option<McpAnswer> {
        let outcome = Outcome::from_carrier(carrier)?;
        Some(McpAnswer { outcome, meta: object_meta(carrier) })
    }

    /// The response carrier: exactly one of `result` and `error`, and `_meta` when there is one.
    pub fn to_carrier(&self) -> Value {
        let mut carrier = self.outcome.to_carrier();
        if let Some(meta) = &self.meta {
            carrier["_meta"] = Value::Object(meta.clone());
        }
        carrier
    }
}

impl From<Outcome> for McpAnswer {
    fn from(outcome: Outcome) -> Self {
        McpAnswer::new(outcome)
    }
}

/// The `_meta` of an object, when it is an object (null or anything else: absent).
fn object_meta(value: &Value) -> Option<Map<String, Value>> {
    value.get("_meta").and_then(Value::as_object).cloned()
}

/// The `_meta` of the `mcp/message` envelope that carried an inner request (ACP metadata of the
/// hop, apart from the inner MCP `params._meta`): the provider puts it in the rmcp request's
/// extensions, where a server handler reads it
/// (`context.extensions.get::<EnvelopeMeta>()`), as the TypeScript SDK hands its server handler
/// `envelopeMeta` (`dist/mcp/core.js`). Absent when the envelope had none.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EnvelopeMeta(pub Map<String, Value>);

/// An MCP error object: an integer `code` and a string `message`.
pub(crate) fn is_error_object(value: &Value) -> bool {
    value.get("code").is_some_and(|c| c.is_i64() || c.is_u64()) && value.get("message").is_some_and(Value::is_string)
}

/// One `mcp/message` envelope (request or notification), its inner params kept as received.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Envelope {
    pub(crate) server_id: String,
    pub(crate) request_id: String,
    pub(crate) method: String,
    /// The inner params: `None` when omitted or `null`.
    pub(crate) params: Option<Map<String, Value>>,
    /// The envelope's own `_meta` (schema `MessageMcpRequest`, `MessageMcpNotification`):
    /// `None` when omitted, `null` or not an object.
    pub(crate) meta: Option<Map<String, Value>>,
}

impl Envelope {
    /// Reads an envelope; a malformed one is -32602 naming the field.
    pub(crate) fn parse(params: Option<&serde_json::value::RawValue>) -> Result<Envelope, RpcError> {
        let bad = |path: &str, reason: &str| RpcError::invalid_params(METHOD, path, reason);
        let value: Value = match params {
            Some(raw) => serde_json::from_str(raw.get()).map_err(|e| bad("", &e.to_string()))?,
            None => return Err(bad("", "params are required (serverId, requestId, method)")),
        };
        let Value::Object(mut object) = value else {
            return Err(bad("", "params must be an object"));
        };
        let mut string = |key: &str| match object.remove(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(bad(key, "must be a string")),
            None => Err(bad(key, "is required")),
        };
        let (server_id, request_id, method) = (string("serverId")?, string("requestId")?, string("method")?);
        let params = match object.remove("params") {
            None | Some(Value::Null) => None,
            Some(Value::Object(params)) => Some(params),
            Some(_) => return Err(bad("params", "must be an object or null")),
        };
        let meta = match object.remove("_meta") {
            Some(Value::Object(meta)) => Some(meta),
            _ => None,
        };
        Ok(Envelope { server_id, request_id, method, params, meta })
    }

    /// The envelope as params of `mcp/message` (request or notification).
    pub(crate) fn to_value(&self) -> Value {
        let mut object = Map::new();
        object.insert("serverId".into(), Value::String(self.server_id.clone()));
        object.insert("requestId".into(), Value::String(self.request_id.clone()));
        object.insert("method".into(), Value::String(self.method.clone()));
        if let Some(params) = &self.params {
            object.insert("params".into(), Value::Object(params.clone()));
        }
        if let Some(meta) = &self.meta {
            object.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(object)
    }
}

/// Checks the inner request's MCP 2026-07-28 metadata as the TypeScript provider does: a string
/// protocol version (else inner -32602), exactly [`PROTOCOL_VERSION`] (else inner -32022 with
/// the versions supported), and client capabilities as an object (else inner -32602).
pub(crate) fn check_meta(params: Option<&Map<String, Value>>) -> Result<(), Outcome> {
    let meta = params.and_then(|p| p.get("_meta")).and_then(Value::as_object);
    let Some(version) = meta.and_then(|m| m.get(META_PROTOCOL_VERSION)).and_then(Value::as_str) else {
        return Err(Outcome::error(
            RpcError::INVALID_PARAMS,
            format!("Invalid params: missing {META_PROTOCOL_VERSION} in params._meta"),
        ));
    };
    if version != PROTOCOL_VERSION {
        return Err(Outcome::Error(json!({
            "code": UNSUPPORTED_PROTOCOL_VERSION,
            "message": "Unsupported protocol version",
            "data": { "supported": [PROTOCOL_VERSION], "requested": version },
        })));
    }
    if !meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES)).is_some_and(Value::is_object) {
        return Err(Outcome::error(
            RpcError::INVALID_PARAMS,
            format!("Invalid params: missing {META_CLIENT_CAPABILITIES} in params._meta"),
        ));
    }
    Ok(())
}

/// `params` with the required metadata added to its `_meta`, keeping what the caller put there
/// (`withMcpRequestMeta` of the TypeScript SDK does the same).
pub(crate) fn with_meta(
    params: Option<Map<String, Value>>,
    capabilities: &Value,
    client_info: Option<&Value>,
) -> Map<String, Value> {
    let mut params = params.unwrap_or_default();
    let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    if let Value::Object(meta) = meta {
        meta.entry(META_PROTOCOL_VERSION).or_insert_with(|| Value::String(PROTOCOL_VERSION.into()));
        meta.entry(META_CLIENT_CAPABILITIES).or_insert_with(|| capabilities.clone());
        if let Some(info) = client_info {
            meta.entry(META_CLIENT_INFO).or_insert_with(|| info.clone());
        }
    }
    params
}

/// An outer binding error.
pub(crate) fn binding_error(code: i32, message: &str, data: Value) -> RpcError {
    RpcError::new(code, message).with_data(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_wins_over_error_and_bad_errors_are_no_outcome() {
        let both = json!({"result": 1, "error": {"code": 1, "message": "m"}});
        assert_eq!(Outcome::from_carrier(&both), Some(Outcome::Result(json!(1))));
        assert_eq!(Outcome::from_carrier(&json!({"result": null})), Some(Outcome::Result(Value::Null)));
        assert_eq!(Outcome::from_carrier(&json!({"error": {"code": "x", "message": "m"}})), None);
        assert_eq!(Outcome::from_carrier(&json!({})), None);
    }

    #[test]
    fn the_carrier_meta_is_kept_when_it_is_an_object() {
        let carrier = json!({"result": {"x": 1}, "_meta": {"trace": "t"}});
        let answer = McpAnswer::from_carrier(&carrier).unwrap();
        assert_eq!(answer.outcome, Outcome::Result(json!({"x": 1})));
        assert_eq!(answer.meta.as_ref().unwrap()["trace"], "t");
        assert_eq!(answer.to_carrier(), carrier);
        let error = json!({"error": {"code": 1, "message": "m"}, "_meta": {"k": [1]}});
        assert_eq!(McpAnswer::from_carrier(&error).unwrap().to_carrier(), error);
        for absent in [json!({"result": 1, "_meta": null}), json!({"result": 1, "_meta": 3}), json!({"result": 1})] {
            let answer = McpAnswer::from_carrier(&absent).unwrap();
            assert_eq!((answer.meta, answer.outcome), (None, Outcome::Result(json!(1))));
        }
        assert_eq!(McpAnswer::new(Outcome::Result(json!(1))).to_carrier(), json!({"result": 1}));
    }

    #[test]
    fn the_envelope_meta_is_kept_and_re_emitted() {
        let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap();
        let sent = json!({"serverId": "s", "requestId": "r", "method": "m", "_meta": {"hop": 1}});
        let envelope = Envelope::parse(Some(&raw(sent.clone()))).unwrap();
        assert_eq!(envelope.meta.as_ref().unwrap()["hop"], 1);
        assert_eq!(envelope.to_value(), sent);
        for absent in [json!(null), json!("x")] {
            let sent = json!({"serverId": "s", "requestId": "r", "method": "m", "_meta": absent});
            assert_eq!(Envelope::parse(Some(&raw(sent))).unwrap().meta, None);
        }
    }

    #[test]
    fn envelope_fields_are_checked_by_name() {
        let raw = |v: Value| serde_json::value::to_raw_value(&v).unwrap();
        let e = Envelope::parse(Some(&raw(json!({"serverId": 1, "requestId": "r", "method": "m"})))).unwrap_err();
        assert_eq!(e.code, RpcError::INVALID_PARAMS);
        assert!(e.data.unwrap().to_string().contains("serverId"));
        let e = Envelope::parse(Some(&raw(json!({"serverId": "s", "requestId": "r", "method": "m", "params": [1]}))));
        assert!(e.is_err());
        let ok = Envelope::parse(Some(&raw(json!({"serverId": "s", "requestId": "r", "method": "m", "params": null}))));
        assert_eq!(ok.unwrap().params, None);
    }

    #[test]
    fn meta_is_added_without_overriding() {
        let mut given = Map::new();
        given.insert("_meta".into(), json!({ META_PROTOCOL_VERSION: "2025-11-25", "x": 1 }));
        let params = with_meta(Some(given), &json!({}), Some(&json!({"name": "n"})));
        assert_eq!(params["_meta"][META_PROTOCOL_VERSION], "2025-11-25");
        assert_eq!(params["_meta"]["x"], 1);
        assert_eq!(params["_meta"][META_CLIENT_CAPABILITIES], json!({}));
        assert_eq!(check_meta(Some(&params)).unwrap_err().error_code(), Some(UNSUPPORTED_PROTOCOL_VERSION as i64));
        assert_eq!(check_meta(None).unwrap_err().error_code(), Some(-32602));
        assert!(check_meta(Some(&with_meta(None, &json!({}), None))).is_ok());
    }
}
