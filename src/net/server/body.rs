//! Bodies in and out: a POST body read to a limit, the plain/JSON/empty answers, and the SSE
//! stream of one outbound stream.

use super::conn::Lease;
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{HeaderMap, Response, StatusCode};
use std::convert::Infallible;
use std::time::Duration;

/// The body of every answer.
pub(super) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(super) fn text(status: StatusCode, message: impl Into<String>) -> Response<Body> {
    let mut res = Response::new(Full::new(Bytes::from(message.into())).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    res
}

pub(super) fn json(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut res = Response::new(Full::new(body.into()).boxed_unsync());
    *res.status_mut() = status;
    res.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(crate::net::JSON));
    res
}

pub(super) fn empty(status: StatusCode) -> Response<Body> {
    let mut res = Response::new(Empty::new().boxed_unsync());
    *res.status_mut() = status;
    res
}

pub(super) fn too_large(limit: usize) -> Response<Body> {
    text(StatusCode::PAYLOAD_TOO_LARGE, format!("Request body exceeds {limit} bytes"))
}

/// Whether a declared `Content-Length` is over `limit` (refused before reading a byte).
pub(super) fn declared_too_large(headers: &HeaderMap, limit: usize) -> bool {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
}

pub(super) enum ReadError {
    TooLarge,
    /// The client went away, or sent a malformed body.
    Broken,
}

/// Reads a body, holding at most `limit` bytes: past it the reading stops.
pub(super) async fn read_limited(body: Incoming, limit: usize) -> Result<Bytes, ReadError> {
    match Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ReadError::TooLarge),
        Err(_) => Err(ReadError::Broken),
    }
}

/// An SSE answer that streams what `lease` yields, `data: <json>\n\n` per message, with a `:`
/// comment every `keep_alive`. A message is taken from its queue only when hyper asks for the
/// next chunk, so what a client has not read stays queued (and counted) in its connection.
pub(super) fn sse(lease: Lease, keep_alive: Duration) -> Response<Body> {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + keep_alive, keep_alive);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let events = futures_util::stream::unfold((lease, ticks), |(lease, mut ticks)| async move {
        let chunk = tokio::select! {
            message = lease.next() => {
                let message = message?;
                let mut event = Vec::with_capacity(message.len() + 8);
                event.extend_from_slice(b"data: ");
                event.extend_from_slice(&message);
                event.extend_from_slice(b"\n\n");
                Bytes::from(event)
            }
            _ = ticks.tick() => Bytes::from_static(b":\n\n"),
        };
        Some((chunk, (lease, ticks)))
    });
    let body = StreamBody::new(events.map(|chunk| Ok::<_, Infallible>(Frame::data(chunk))));
    let mut res = Response::new(body.boxed_unsync());
    let headers = res.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(crate::net::EVENT_STREAM));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    res
}
