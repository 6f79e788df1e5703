//! What a live connection does with what it reads: the input is framed as a byte stream (with a
//! small size limit, so over-long lines happen), each line is classified as a connection does,
//! and requests, notifications and responses are decoded with the v1 or v2 tables of the agent
//! or the client side. The first byte picks version, side, limit and buffer size.
//!
//! Checked besides "no panic": framing agrees with splitting at `\n`; whatever would be written
//! back is valid JSON; decoding what a decode re-encodes gives the same value.

#![no_main]

use acp_rpc::jsonrpc::{classify, Incoming};
use acp_rpc::jsonrpc::framing::{scan_prefix, Frame, FrameReader};
use acp_types::support::rpc::RpcError;
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;
use serde_json::Value;
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// Runs a future that never waits (an in-memory reader) to completion.
fn now<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("an in-memory read waited"),
    }
}

/// The frames a reader gives for `input`.
fn frames(input: &[u8], max: usize, capacity: usize) -> Vec<Frame> {
    let mut reader = FrameReader::new(tokio::io::BufReader::with_capacity(capacity, input), max);
    let mut out = Vec::new();
    while let Some(frame) = now(reader.next()).expect("in-memory reads succeed") {
        out.push(frame);
    }
    out
}

/// The frames `input` should give: lines split at `\n`, a trailing `\r` dropped, blank lines
/// skipped, lines over `max` reported with their length and what their first 4 KiB say.
fn expected(input: &[u8], max: usize) -> Vec<Frame> {
    let mut pieces: Vec<&[u8]> = input.split(|b| *b == b'\n').collect();
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop();
    }
    let mut out = Vec::new();
    for piece in pieces {
        if piece.len() > max {
            out.push(Frame::TooLong { prefix: scan_prefix(&piece[..piece.len().min(4096)]), len: piece.len() });
            continue;
        }
        let line = piece.strip_suffix(b"\r").unwrap_or(piece);
        if !line.iter().all(u8::is_ascii_whitespace) {
            out.push(Frame::Line(line.to_vec()));
        }
    }
    out
}

fn json_ok(text: &str) {
    if let Err(e) = serde_json::from_str::<Value>(text) {
        panic!("would write invalid JSON ({e}): {text}");
    }
}

fn usable_id(id: &str) {
    let v: Value = serde_json::from_str(id).unwrap_or_else(|e| panic!("id {id} is not JSON: {e}"));
    assert!(v.is_string() || v.is_number() || v.is_null(), "unusable id {id}");
}

fn raw(v: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(v).expect("a Value encodes")
}

/// Decodes with one side's tables, re-encodes, and decodes that again: it must give the same.
macro_rules! round_trip {
    ($ty:path, $method:expr, $payload:expr, $encode:ident) => {{
        if let Ok(decoded) = <$ty>::decode($method, $payload) {
            let encoded = decoded.$encode().expect("a decoded value encodes");
            let again = <$ty>::decode($method, encoded.as_ref().map(raw).as_deref());
            match again {
                Ok(again) => assert_eq!(again, decoded, "decode(encode(x)) != x for {}", $method),
                Err(e) => panic!("re-encoded {} does not decode: {e}", $method),
            }
        }
    }};
}

macro_rules! by_version {
    ($v:ident, $side:ident, $incoming:expr, $pick:expr) => {{
        use acp_types::$v::methods::$side as m;
        match $incoming {
            Incoming::Request { method, params, .. } => {
                round_trip!(m::Request, &method, params.as_deref(), params);
            }
            Incoming::Notification { method, params } => {
                round_trip!(m::Notification, &method, params.as_deref(), params);
            }
            Incoming::Response { answer: Ok(result), .. } => {
                let rows = acp_types::$v::methods::METHODS;
                let method = rows[$pick % rows.len()].name;
                if let Ok(decoded) = m::Response::decode(method, Some(&result)) {
                    let encoded = decoded.result().expect("a decoded value encodes");
                    let again = m::Response::decode(method, Some(&raw(&encoded)));
                    assert!(again.is_ok(), "re-encoded {method} result does not decode: {again:?}");
                }
            }
            _ => {}
        }
    }};
}

fn handle(mode: u8, line: &[u8]) {
    let incoming = classify(line);
    match &incoming {
        Incoming::Request { id, method, .. } => {
            usable_id(id.get());
            json_ok(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, id.get()));
            json_ok(&serde_json::to_string(&RpcError::method_not_found(method)).expect("encodes"));
        }
        Incoming::Invalid { id, error } => {
            if let Some(id) = id {
                usable_id(id);
            }
            assert!(matches!(error.code, RpcError::PARSE_ERROR | RpcError::INVALID_REQUEST), "{error:?}");
            let error = serde_json::to_string(error).expect("encodes");
            json_ok(&format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.as_deref().unwrap_or("null")));
        }
        _ => {}
    }
    let pick = usize::from(mode >> 3);
    match mode & 3 {
        0 => by_version!(v1, agent, incoming, pick),
        1 => by_version!(v1, client, incoming, pick),
        2 => by_version!(v2, agent, incoming, pick),
        _ => by_version!(v2, client, incoming, pick),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, input)) = data.split_first() else { return };
    let max = 16 + usize::from(mode >> 2) * 8;
    let capacity = 1 + usize::from(mode & 0x0f);
    let got = frames(input, max, capacity);
    assert_eq!(got, expected(input, max), "framing with limit {max}");
    for frame in &got {
        if let Frame::Line(line) = frame {
            handle(mode, line);
        }
    }
    // And the whole input as one line, whatever it holds.
    handle(mode, input);
});
