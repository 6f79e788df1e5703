//! CORS for the origins a [`Server`](super::Server) allows: the preflight answer (`OPTIONS`),
//! and the headers on every other answer that let a page read it. Requests from other origins
//! never get here (the guard refused them), so they get none of these headers.

use super::body::{self, Body};
use hyper::header::{
    HeaderMap, HeaderValue, ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, VARY,
};
use hyper::{Response, StatusCode};

/// What a browser client sends besides the headers it may always send.
const ALLOW_HEADERS: &str = "Acp-Connection-Id, Acp-Session-Id, Authorization, Content-Type";
/// The profile's headers of an answer, which a page reads only when told it may.
const EXPOSE_HEADERS: &str = "Acp-Connection-Id, Acp-Session-Id";
const ALLOW_METHODS: &str = "GET, POST, DELETE";
/// How long a browser may keep a preflight's answer, in seconds.
const MAX_AGE: &str = "600";

/// The answer to a preflight from the allowed `origin`.
pub(super) fn preflight(origin: &HeaderValue) -> Response<Body> {
    let mut res = body::empty(StatusCode::NO_CONTENT);
    let headers = res.headers_mut();
    allow(origin, headers);
    headers.insert(ACCESS_CONTROL_ALLOW_METHODS, HeaderValue::from_static(ALLOW_METHODS));
    headers.insert(ACCESS_CONTROL_ALLOW_HEADERS, HeaderValue::from_static(ALLOW_HEADERS));
    headers.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static(MAX_AGE));
    res
}

/// Lets a page of the allowed `origin` read an answer, the connection and session ids included.
pub(super) fn allow(origin: &HeaderValue, headers: &mut HeaderMap) {
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin.clone());
    headers.insert(VARY, HeaderValue::from_static("Origin"));
    headers.insert(ACCESS_CONTROL_EXPOSE_HEADERS, HeaderValue::from_static(EXPOSE_HEADERS));
}
