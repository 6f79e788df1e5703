//! What the generated method tables are made of: the method traits, a table row, and the
//! JSON-RPC error a peer expects when a message cannot be routed or decoded.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::fmt;

/// Request or notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageKind {
    /// Expects a response.
    Request,
    /// Expects none.
    Notification,
}

/// Whether a method is in the stable schema or only in `schema.unstable.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stability {
    /// In `schema.json`.
    Stable,
    /// Only in `schema.unstable.json` (feature `unstable`).
    Unstable,
}

/// One row of a version's method table; `S` is that version's generated `Side`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MethodInfo<S> {
    /// Wire name, e.g. `session/prompt`.
    pub name: &'static str,
    /// The side that receives it.
    pub side: S,
    /// Request or notification.
    pub kind: MessageKind,
    /// Stable or unstable.
    pub stability: Stability,
    /// Schema name of the params type.
    pub params: &'static str,
    /// Schema name of the response type (requests only).
    pub result: Option<&'static str>,
    /// The params name the session the message acts on: the params type has a required, non-null
    /// `sessionId`. Over Streamable HTTP, a POST of such a method received by the agent must carry
    /// the `Acp-Session-Id` header. Equal to [`Method::SESSION_SCOPED`] of the method's marker.
    pub session_scoped: bool,
}

/// The two ends of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The editor.
    Client,
    /// The agent.
    Agent,
}

impl Role {
    /// The other end.
    pub fn peer(self) -> Role {
        match self {
            Role::Client => Role::Agent,
            Role::Agent => Role::Client,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Client => "client",
            Role::Agent => "agent",
        })
    }
}

/// The receiving sides of one protocol version: generated per version (`vN::methods::Side`) from
/// the `x-side` values its methods use, so that no code matches side names by hand.
pub trait Side: Copy + Eq + Ord + std::hash::Hash + fmt::Debug + fmt::Display + Send + Sync + 'static {
    /// Every side of the version.
    const ALL: &'static [Self];
    /// The `x-side` value.
    fn name(self) -> &'static str;
    /// The end of a connection that receives this side's messages, when it is one (`protocol`
    /// methods such as `$/cancel_request` go both ways; `proxy` ones go to neither end).
    fn role(self) -> Option<Role>;
    /// Whether `role`'s end receives this side's messages: the side whose [`role`](Side::role)
    /// it is, and a side that goes both ways (`protocol`). The markers of a side received by the
    /// agent implement [`ToAgent`], those of one received by the client [`ToClient`].
    fn received_by(self, role: Role) -> bool;
    /// The side whose messages `role` receives, when the version has one.
    fn of_role(role: Role) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.role() == Some(role))
    }
}

/// One protocol version's tables as a type (`vN::methods::Tables`), for code that handles every
/// version the same way: the table, and decoding by side and kind.
pub trait Tables: 'static {
    /// The version's sides.
    type Side: Side;
    /// Every method of the version.
    const METHODS: &'static [MethodInfo<Self::Side>];
    /// Decodes a request or notification received by `side`, routed by `method`, and re-encodes
    /// its params; errors as the side's `Request::decode`.
    fn decode(
        side: Self::Side,
        kind: MessageKind,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Option<Value>, RpcError>;
    /// Decodes the result of a call to `method` received by `side`, and re-encodes it.
    fn decode_response(side: Self::Side, method: &str, result: Option<&RawValue>) -> Result<Value, RpcError>;
    /// Whether `role` receives `method` (a request or a notification) with params that name a
    /// session ([`MethodInfo::session_scoped`]) in this version, e.g. `session/prompt` for the
    /// agent; false for a method the version does not have.
    fn session_scoped(role: Role, method: &str) -> bool {
        Self::METHODS.iter().any(|m| m.session_scoped && m.name == method && m.side.received_by(role))
    }
}

/// A protocol method: implemented by one zero-sized marker type per method.
pub trait Method {
    /// Wire name.
    const METHOD: &'static str;
    /// The version's sides.
    type Side: Side;
    /// The side that receives it.
    const SIDE: Self::Side;
    /// Stable or unstable.
    const STABILITY: Stability;
    /// The params name the session the message acts on (a required, non-null `sessionId`): see
    /// [`MethodInfo::session_scoped`].
    const SESSION_SCOPED: bool;
    /// The params type.
    type Params: Serialize + DeserializeOwned + Send + 'static;
}

/// A method the agent receives (`x-side` `agent`, or `protocol`: those go both ways), so one that
/// a client sends: the bound that lets a client's handler context call only what its agent
/// receives. Implemented by each generated marker of such a method (every version), never by
/// hand; `M::SIDE.received_by(Role::Agent)` holds for each.
pub trait ToAgent: Method {}

/// A method the client receives (`x-side` `client`, or `protocol`), so one that an agent sends:
/// the bound that lets an agent's handler context call only what its client receives.
/// Implemented by each generated marker of such a method, never by hand;
/// `M::SIDE.received_by(Role::Client)` holds for each.
pub trait ToClient: Method {}

/// A method a proxy receives (`x-side` `proxy`, e.g. `proxy/successor`), which neither end of a
/// client–agent connection does. Implemented by each generated marker of such a method, never by
/// hand; their [`Side::role`] is `None`. A method of any other `x-side` value implements none of
/// the three.
pub trait ToProxy: Method {}

/// Whether two wire names are the same, in a const context: code that routes one method of
/// every version by one name checks at build time that the versions agree on it
/// (`const _: () = assert!(same_wire_name(v1::…::METHOD, v2::…::METHOD));`).
pub const fn same_wire_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A method that expects a response.
pub trait Request: Method {
    /// The response (`result`) type.
    type Response: Serialize + DeserializeOwned + Send + 'static;
}

/// A method that expects no response.
pub trait Notification: Method {}

/// One receiving end of a vendor extension (`_vendor/…` methods generated from an extension
/// schema), served next to a core handler: implemented by the generated wrappers of an
/// extension's `serve` module (`serve::Agent(handler)`, `serve::Client(handler)`), which decode
/// with the extension's tables and call its handler trait. A runtime routes to it the methods
/// [`Extension::receives`] names and everything else to the core handler, so an extension method
/// it does not know keeps the core handler's behaviour (its `ext_method`, by default -32601).
pub trait Extension<Cx>: Send + Sync + 'static {
    /// The number of the core protocol version whose types the extension uses (`Some(1)` for one
    /// generated into `acp-types-v1`), or `None` when it names none: a runtime hands it messages
    /// of a connection of that version only.
    const VERSION: Option<u16> = None;
    /// Whether this end of the extension receives `method` as a message of `kind`.
    fn receives(method: &str, kind: MessageKind) -> bool;
    /// A request of a method it receives: decoded (-32602 for bad params), handled, and its
    /// result as JSON.
    fn request(
        &self,
        method: &str,
        params: RawParams<'static>,
        cx: Cx,
    ) -> impl std::future::Future<Output = Result<Value, RpcError>> + Send;
    /// A notification of a method it receives: decoded and handled; the error is a decoding one.
    fn notification(
        &self,
        method: &str,
        params: RawParams<'static>,
        cx: Cx,
    ) -> impl std::future::Future<Output = Result<(), RpcError>> + Send;
}

/// A JSON-RPC error object (`code`, `message`, `data`), as sent to or received from a peer.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RpcError {
    /// The error code: JSON-RPC's (-32700 … -32600) or one the ACP schemas define.
    pub code: i32,
    /// A short description.
    pub message: String,
    /// Anything that helps the peer act on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// Invalid JSON was received (-32700).
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON is not a valid request object (-32600).
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist or is not available (-32601).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters (-32602).
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error (-32603).
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The request was cancelled (-32800).
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// Authentication is required first (-32000).
    pub const AUTH_REQUIRED: i32 = -32000;
    /// A resource, such as a session or file, was not found (-32002).
    pub const RESOURCE_NOT_FOUND: i32 = -32002;

    /// An error with a code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    /// Adds `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32601 for a method this side does not have; the method name is in `data`.
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(Self::METHOD_NOT_FOUND, format!("method not found: {method}"))
            .with_data(json!({ "method": method }))
    }

    /// -32601 for a notification sent as a request, or the reverse.
    pub fn wrong_kind(method: &str, is: MessageKind) -> Self {
        let (is, sent) = match is {
            MessageKind::Request => ("a request", "a notification"),
            MessageKind::Notification => ("a notification", "a request"),
        };
        RpcError::new(Self::METHOD_NOT_FOUND, format!("{method} is {is}, not {sent}"))
            .with_data(json!({ "method": method, "expected": is }))
    }

    /// -32602 for params that do not decode; `data` has the path of the bad field and the reason.
    pub fn invalid_params(method: &str, path: &str, reason: &str) -> Self {
        let message = if path.is_empty() || path == "." {
            format!("invalid params for {method}: {reason}")
        } else {
            format!("invalid params for {method}: {path}: {reason}")
        };
        RpcError::new(Self::INVALID_PARAMS, message)
            .with_data(json!({ "method": method, "path": path, "reason": reason }))
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        RpcError::new(Self::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// The params (or result) of a message as a decoder receives them: borrowed, or handed over, in
/// which case the longest string of a large message becomes a `String` without being copied (see
/// [`decode_raw`]).
#[derive(Debug)]
pub enum RawParams<'a> {
    /// Decoded from the caller's text.
    Borrowed(Option<&'a RawValue>),
    /// The decoder's own.
    Owned(Option<Box<RawValue>>),
}

impl RawParams<'_> {
    /// The raw JSON, if any.
    pub fn get(&self) -> Option<&RawValue> {
        match self {
            RawParams::Borrowed(params) => *params,
            RawParams::Owned(params) => params.as_deref(),
        }
    }
}

impl<'a> From<Option<&'a RawValue>> for RawParams<'a> {
    fn from(params: Option<&'a RawValue>) -> Self {
        RawParams::Borrowed(params)
    }
}

impl From<Option<Box<RawValue>>> for RawParams<'static> {
    fn from(params: Option<Box<RawValue>>) -> Self {
        RawParams::Owned(params)
    }
}

impl From<Box<RawValue>> for RawParams<'static> {
    fn from(params: Box<RawValue>) -> Self {
        RawParams::Owned(Some(params))
    }
}

/// Decodes the params (or result) of `method` from raw JSON; absent reads as `{}` when the type
/// accepts an empty object (all its fields optional), so a peer may omit them, and so does `null`
/// unless the type takes `null` itself (a unit result, an any-JSON value).
///
/// Every ACP params and result type is an object; serde would also fill a struct from an array
/// by position, which the schemas do not allow, so an array is refused up front.
pub fn decode_params<T: DeserializeOwned>(method: &str, params: Option<&RawValue>) -> Result<T, RpcError> {
    let mut out = None;
    params_passes(method, params, &mut |pass| run(pass, &mut out))?;
    out.ok_or_else(|| RpcError::internal("decoded nothing"))
}

/// One decoding pass over the params, as [`decode_params`] and [`decode_moved`] run them. The
/// passes are driven by non-generic code ([`params_passes`], [`moved_passes`]) through
/// `&mut dyn FnMut(Pass)`, so that only [`run`] is compiled once per params type.
enum Pass<'a> {
    /// The text `null`, plainly (a unit result type takes it).
    Null,
    /// The text, by `json::from_str`: the verdict.
    Text(&'a str),
    /// The value under `detailed`: the path and wording of an error.
    Detailed(Value),
}

/// A pass's failure: the path inside the params (empty when unknown) and the error.
type Failed = (String, serde_json::Error);

/// Runs `pass` for `T`, leaving the value in `out`.
fn run<T: DeserializeOwned>(pass: Pass<'_>, out: &mut Option<T>) -> Result<(), Failed> {
    let value = match pass {
        Pass::Null => crate::codec::decode::<T>("null").map_err(|e| (String::new(), e))?,
        Pass::Text(text) => crate::json::from_str::<T>(text).map_err(|e| (String::new(), e))?,
        Pass::Detailed(value) => crate::policy::detailed(|| crate::tracked::deserialize::<T>(value))?,
    };
    *out = Some(value);
    Ok(())
}

/// The passes of [`decode_params`] (not generic: compiled once).
fn params_passes(
    method: &str,
    params: Option<&RawValue>,
    run: &mut dyn FnMut(Pass<'_>) -> Result<(), Failed>,
) -> Result<(), RpcError> {
    let text = match params.map(RawValue::get) {
        None => "{}",
        // A `null` result is the value of a unit response type (requests whose schema result is
        // `null`, in the earliest drafts); any other type reads it as `{}`.
        Some("null") => match run(Pass::Null) {
            Ok(()) => return Ok(()),
            Err(_) => "{}",
        },
        Some(text) => text,
    };
    if text.trim_start().starts_with('[') {
        return Err(RpcError::invalid_params(method, "", BY_POSITION));
    }
    // One pass, the common case; after a failure, again under `detailed` for the path and wording.
    let mark = crate::lenient::mark();
    let (_, error) = match run(Pass::Text(text)) {
        Ok(()) => return Ok(()),
        Err(failed) => failed,
    };
    crate::lenient::rewind(mark);
    // The verdict is the first pass's; the detailed pass only words it. It decodes from a
    // `Value`, as union bodies and lenient fields do under `detailed` (one more way to decode
    // every type would double what this crate compiles).
    let detailed = serde_json::from_str::<Value>(text).map(|value| run(Pass::Detailed(value)));
    crate::lenient::rewind(mark);
    match detailed {
        Ok(Err((path, error))) => Err(params_error(method, params.is_none(), path, &error)),
        // A `Value` keeps the last of duplicate members, which the first pass refuses.
        Ok(Ok(())) | Err(_) => Err(params_error(method, params.is_none(), String::new(), &error)),
    }
}

/// [`decode_params`], borrowed or owned. Owned params of [`MOVE_MIN`](crate::moved::MOVE_MIN)
/// bytes or more are decoded with their longest string moved out of the text rather than copied
/// (`support::moved`): the result is the same, and the message is in memory once instead of twice
/// while it is decoded.
pub fn decode_raw<T: DeserializeOwned>(method: &str, params: RawParams<'_>) -> Result<T, RpcError> {
    match params {
        RawParams::Owned(Some(raw)) if raw.get().len() >= crate::moved::MOVE_MIN => decode_moved(method, raw),
        params => decode_params(method, params.get()),
    }
}

/// [`decode_raw`] for a large message of our own: the rest of it decoded in one pass for the
/// verdict (duplicate members refused, errors as usual), then again from a `Value` that the moved
/// string is put into. Whatever the split declines is decoded from the untouched text.
fn decode_moved<T: DeserializeOwned>(method: &str, raw: Box<RawValue>) -> Result<T, RpcError> {
    let mut out = None;
    moved_passes(method, raw, &mut |pass| run(pass, &mut out))?;
    out.ok_or_else(|| RpcError::internal("decoded nothing"))
}

/// The passes of [`decode_moved`] (not generic: compiled once).
fn moved_passes(
    method: &str,
    raw: Box<RawValue>,
    run: &mut dyn FnMut(Pass<'_>) -> Result<(), Failed>,
) -> Result<(), RpcError> {
    // Refused by position there; the verdict pass below would fill a struct from it.
    if raw.get().trim_start().starts_with('[') {
        return params_passes(method, Some(&raw), run);
    }
    let split = match crate::moved::split(raw) {
        Ok(split) => split,
        Err(raw) => return params_passes(method, Some(&raw), run),
    };
    let mark = crate::lenient::mark();
    let verdict = run(Pass::Text(&split.rest)).map_err(|(_, error)| error);
    crate::lenient::rewind(mark);
    let rest = verdict.and_then(|()| serde_json::from_str::<Value>(&split.rest));
    let mut value = match rest {
        Ok(value) => value,
        Err(_) => return params_passes(method, Some(split.whole()), run),
    };
    if let Err(split) = split.fill(&mut value) {
        return params_passes(method, Some(split.whole()), run);
    }
    // From a `Value`, under `detailed` (as union bodies and lenient fields decode there).
    run(Pass::Detailed(value)).map_err(|(path, error)| params_error(method, false, path, &error))
}

/// The -32602 for a decode error at `path` (not generic, so compiled once).
fn params_error(method: &str, absent: bool, path: String, error: &serde_json::Error) -> RpcError {
    let reason = error.to_string();
    // serde_json appends " at line L column C", which says nothing to a peer; keep the rest.
    let reason = crate::codec::without_position(&reason);
    if absent {
        RpcError::invalid_params(method, "", &format!("missing params ({reason})"))
    } else {
        let (path, reason) = join_nested(path, reason);
        RpcError::invalid_params(method, &path, reason)
    }
}

/// Why an array is refused as params or result.
const BY_POSITION: &str = "an array where an object is expected (ACP passes params and results by name)";

/// Values decoded from a buffer (union bodies, lenient fields) report their inner path as a
/// `path: ` prefix of the reason (see `support::decode_value`); moves those prefixes onto `path`.
fn join_nested(mut path: String, mut reason: &str) -> (String, &str) {
    fn is_path(s: &str) -> bool {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars().all(|c| c.is_alphanumeric() || matches!(c, '_' | '$' | '-' | '.' | '[' | ']' | '?'))
    }
    while let Some((head, rest)) = reason.split_once(": ") {
        if !is_path(head) {
            break;
        }
        if path.is_empty() || path == "." {
            path = head.to_string();
        } else if head.starts_with('[') {
            path.push_str(head);
        } else {
            path.push('.');
            path.push_str(head);
        }
        reason = rest;
    }
    (path, reason)
}

/// Encodes params or a result as a JSON value.
pub fn encode<T: Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::internal(format!("cannot encode: {e}")))
}

/// Raw params as an owned value (extension methods keep them as received).
pub fn raw_to_value(params: Option<&RawValue>) -> Option<Value> {
    params.and_then(|p| serde_json::from_str(p.get()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).expect("JSON")
    }

    /// A unit result type, as the earliest drafts' `null` responses get.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Unit(());

    #[derive(Debug, Default, PartialEq, serde::Deserialize)]
    struct AllOptional {
        #[serde(default)]
        a: Option<String>,
    }

    #[test]
    fn null_is_a_unit_result_and_an_empty_object_for_the_rest() {
        assert_eq!(decode_params::<Unit>("authenticate", Some(&raw("null"))), Ok(Unit(())));
        assert_eq!(decode_params::<AllOptional>("m", Some(&raw("null"))), Ok(AllOptional::default()));
        assert_eq!(decode_params::<AllOptional>("m", None), Ok(AllOptional::default()));
        assert_eq!(decode_params::<Value>("_x", Some(&raw("null"))), Ok(Value::Null));
        assert_eq!(decode_params::<Unit>("authenticate", Some(&raw("{}"))).map_err(|e| e.code), Err(-32602));
    }
}
