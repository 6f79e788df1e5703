//! The messages a proxy's hooks get: a [`Request`] or [`Notification`] (a [`Message`] of either
//! kind) and a request's [`Response`], each kept as the raw JSON it arrived as, with typed access
//! on demand in the negotiated version's generated types. Nothing is decoded unless a hook asks,
//! and what no hook changed is forwarded byte for byte.

use super::merge::keep_unknown;
use crate::error::Error;
use crate::jsonrpc::Raw;
use acp_types::support::json::to_raw_value;
use acp_types::support::rpc::{self, decode_params, RpcError};
use acp_types::{v1, v2, Version};
use serde_json::value::RawValue;
use serde_json::Value;
use std::marker::PhantomData;

/// The kind of a [`Message`] that expects a response.
#[derive(Debug, Clone, Copy)]
pub enum RequestKind {}

/// The kind of a [`Message`] that expects none.
#[derive(Debug, Clone, Copy)]
pub enum NotificationKind {}

/// A request on its way through the proxy (from the client, or from the agent).
pub type Request = Message<RequestKind>;

/// A notification on its way through the proxy (from the client, or from the agent).
pub type Notification = Message<NotificationKind>;

mod sealed {
    pub trait Sealed {}
    impl Sealed for acp_types::v1::methods::Side {}
    impl Sealed for acp_types::v2::methods::Side {}
}

/// The protocol version a generated method table belongs to: implemented for each version's
/// `Side` (`v1::methods::Side`, `v2::methods::Side`), so that the version of a method marker is
/// known from its type. Sealed.
pub trait VersionOf: sealed::Sealed {
    /// The version.
    const VERSION: Version;
}

impl VersionOf for v1::methods::Side {
    const VERSION: Version = Version::V1;
}

impl VersionOf for v2::methods::Side {
    const VERSION: Version = Version::V2;
}

const _: () = assert!(Version::ALL.len() == 2, "a new version's `methods::Side` needs its `VersionOf` here");

/// A generated method marker of kind `K` (a request marker for a [`Request`], a notification
/// marker for a [`Notification`]), e.g. `v1::methods::SessionUpdate`. Implemented for every
/// generated marker, never by hand.
pub trait Marker<K>: rpc::Method {
    /// The version whose tables the marker is of.
    const VERSION: Version;
}

impl<M: rpc::Request> Marker<RequestKind> for M
where
    M::Side: VersionOf,
{
    const VERSION: Version = <M::Side as VersionOf>::VERSION;
}

impl<M: rpc::Notification> Marker<NotificationKind> for M
where
    M::Side: VersionOf,
{
    const VERSION: Version = <M::Side as VersionOf>::VERSION;
}

/// A request or notification (`K`: [`RequestKind`], [`NotificationKind`]) as the proxy
/// received it: its method, its params as raw JSON, and the protocol version its types are of.
/// Typed access is lazy: [`Message::decode`] reads the params as a marker's type when the
/// message is that marker's method in that marker's version; [`Message::edit`] and
/// [`Message::set`] change them. A message no hook changed is forwarded as it came.
pub struct Message<K> {
    method: String,
    params: Option<Raw>,
    version: Option<Version>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Message<K> {
    /// A message to send (an injected one): `params` as raw JSON (an object, an array, or none).
    /// Its version is none: [`Message::decode`] matches no marker; set it with
    /// [`Message::with_version`] to read it typed.
    pub fn new(method: impl Into<String>, params: Option<Raw>) -> Self {
        Message { method: method.into(), params, version: None, kind: PhantomData }
    }

    /// A message of `M` with typed params (an injected one, or a replacement).
    pub fn typed<M: Marker<K>>(params: &M::Params) -> Result<Self, Error> {
        let params = encode::<M>(params)?;
        Ok(Message { method: M::METHOD.into(), params: Some(params), version: Some(M::VERSION), kind: PhantomData })
    }

    /// The same message, read as of `version`.
    pub fn with_version(mut self, version: Option<Version>) -> Self {
        self.version = version;
        self
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The params, as raw JSON (`None` when the message has none).
    pub fn params(&self) -> Option<&RawValue> {
        self.params.as_deref()
    }

    /// The protocol version whose types the params are read in: the negotiated one (for the
    /// `initialize` that `proxy/initialize` forwards, the highest known version at or below the
    /// one asked for); `None` when there is none that this build knows.
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// Whether this is `M`'s method in `M`'s version.
    pub fn is<M: Marker<K>>(&self) -> bool {
        self.method == M::METHOD && self.version == Some(M::VERSION)
    }

    /// The params in `M`'s type, when this is `M` (see [`Message::is`]); `None` otherwise, so a
    /// hook can try the markers of every version in turn. Params that do not decode give the
    /// -32602 a peer expects (path and reason).
    pub fn decode<M: Marker<K>>(&self) -> Option<Result<M::Params, RpcError>> {
        self.is::<M>().then(|| decode_params(M::METHOD, self.params.as_deref()))
    }

    /// Changes the params with `f` in `M`'s type, when this is `M`; true when it was. Members
    /// that the generated types do not know are kept (they would be lost by decoding and
    /// encoding alone), and params that `f` left as they were stay the JSON text they came as.
    /// On an error the message is unchanged.
    pub fn edit<M: Marker<K>>(&mut self, f: impl FnOnce(&mut M::Params)) -> Result<bool, RpcError> {
        if !self.is::<M>() {
            return Ok(false);
        }
        let typed = decode_params(M::METHOD, self.params.as_deref())?;
        if let Some(edited) = edited(M::METHOD, self.params.as_deref(), typed, f)? {
            self.params = Some(edited);
        }
        Ok(true)
    }

    /// Replaces the params with `params` of `M` (the method becomes `M`'s). Only what the
    /// generated type holds is sent; [`Message::edit`] keeps unknown members.
    pub fn set<M: Marker<K>>(&mut self, params: &M::Params) -> Result<(), Error> {
        *self = Self::typed::<M>(params)?;
        Ok(())
    }

    /// Replaces the params with raw JSON (an object, an array, or none).
    pub fn set_raw(&mut self, params: Option<Raw>) {
        self.params = params;
    }

    /// The method and the params.
    pub fn into_parts(self) -> (String, Option<Raw>) {
        (self.method, self.params)
    }
}

impl<K> std::fmt::Debug for Message<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Message")
            .field("method", &self.method)
            .field("params", &self.params.as_deref().map(RawValue::get))
            .field("version", &self.version)
            .finish()
    }
}

/// The result of a request (the successor's or the predecessor's, or a hook's own answer), as
/// raw JSON, with typed access on demand like [`Message`].
pub struct Response {
    result: Raw,
    version: Option<Version>,
}

impl Response {
    /// A result as raw JSON, read as of `version`.
    pub fn new(result: Raw, version: Option<Version>) -> Self {
        Response { result, version }
    }

    /// A hook's own answer to a request of `M`.
    pub fn typed<M: Marker<RequestKind> + rpc::Request>(result: &M::Response) -> Result<Self, RpcError> {
        let result = to_raw_value(result).map_err(|e| RpcError::internal(format!("cannot encode the result: {e}")))?;
        Ok(Response { result, version: Some(M::VERSION) })
    }

    /// The result, as raw JSON.
    pub fn result(&self) -> &RawValue {
        &self.result
    }

    /// The protocol version whose types the result is read in (see [`Message::version`]).
    pub fn version(&self) -> Option<Version> {
        self.version
    }

    /// The result in the response type of `M`, the method of the request it answers: `None`
    /// when `M` is of another version than the response. A result that does not decode is an
    /// error naming the field.
    pub fn decode<M: Marker<RequestKind> + rpc::Request>(&self) -> Option<Result<M::Response, RpcError>> {
        (self.version == Some(M::VERSION)).then(|| decode_params(M::METHOD, Some(&self.result)))
    }

    /// Changes the result with `f` in the response type of `M` (see [`Message::edit`]); true
    /// when `M` is of the response's version.
    pub fn edit<M: Marker<RequestKind> + rpc::Request>(
        &mut self,
        f: impl FnOnce(&mut M::Response),
    ) -> Result<bool, RpcError> {
        if self.version != Some(M::VERSION) {
            return Ok(false);
        }
        let typed = decode_params(M::METHOD, Some(&self.result))?;
        if let Some(edited) = edited(M::METHOD, Some(&self.result), typed, f)? {
            self.result = edited;
        }
        Ok(true)
    }

    /// The result as raw JSON.
    pub fn into_raw(self) -> Raw {
        self.result
    }
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response").field("result", &self.result.get()).field("version", &self.version).finish()
    }
}

/// `original` (the JSON text `typed` was decoded from) changed by `f`, with the members the types
/// do not know kept; `None` when `f` changed nothing.
fn edited<T: serde::Serialize>(
    method: &str,
    original: Option<&RawValue>,
    mut typed: T,
    f: impl FnOnce(&mut T),
) -> Result<Option<Raw>, RpcError> {
    let decoded = to_value(&typed)?;
    f(&mut typed);
    let mut edited = to_value(&typed)?;
    if edited == decoded {
        return Ok(None);
    }
    let original = original.map_or(Ok(Value::Null), |p| serde_json::from_str(p.get()));
    let original = original.map_err(|e| RpcError::invalid_params(method, "", &e.to_string()))?;
    keep_unknown(&original, &decoded, &mut edited);
    to_raw_value(&edited).map(Some).map_err(|e| RpcError::internal(format!("cannot encode: {e}")))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|e| RpcError::internal(format!("cannot encode: {e}")))
}

pub(super) fn encode<M: rpc::Method>(params: &M::Params) -> Result<Raw, Error> {
    to_raw_value(params)
        .map_err(|e| crate::Misuse::Params(format!("cannot encode the params of {}: {e}", M::METHOD)).into())
}
