//! The pure message classifier: what one line from the peer is, judged from its JSON-RPC envelope
//! alone ([`Incoming`]), with the id checks and the answers owed to anything malformed. No I/O and
//! no connection state; fuzzed (`fuzz/fuzz_targets/line.rs`).

use super::framing::{nesting_exceeds, scan_prefix, MAX_DEPTH};
use acp_types::support::rpc::RpcError;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::raw::Raw;

/// One message as it arrives, before we know what it is (raw members borrowed from the line).
#[derive(Deserialize)]
struct Envelope<'a> {
    jsonrpc: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    method: Option<String>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    error: Option<RpcError>,
}

/// A member that is present, even with the value `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Whether JSON text is a usable request id: a string, a number or null.
pub(super) fn valid_id(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|v| v.is_string() || v.is_number() || v.is_null())
}

/// The canonical text of an id (`1` and `1.0` differ; key order inside objects does not matter).
pub(super) fn id_key(raw: &RawValue) -> String {
    serde_json::from_str::<serde_json::Value>(raw.get())
        .map(|v| v.to_string())
        .unwrap_or_else(|_| raw.get().to_string())
}

/// What one line from the peer is, judged from its envelope alone: what a connection does with
/// each complete line it reads (params and results stay raw; the service decodes them).
#[derive(Debug)]
pub enum Incoming {
    /// A request, to be answered.
    Request {
        /// The method name.
        method: String,
        /// The id (a string, a number or null), as received.
        id: Raw,
        /// The params, as received (`null` included).
        params: Option<Raw>,
    },
    /// A notification (`$/cancel_request` included).
    Notification {
        /// The method name.
        method: String,
        /// The params, as received.
        params: Option<Raw>,
    },
    /// A well-formed response: the answer to the call whose id this is, if it is one of ours.
    Response {
        /// The id's JSON text.
        id: Option<String>,
        /// The `result`, or the `error` the peer sent.
        answer: Result<Raw, RpcError>,
    },
    /// Shaped like a response but not a valid one. Never answered: it fails the call its id
    /// names, if that is one of ours.
    BadResponse {
        /// The id's JSON text.
        id: Option<String>,
        /// What is wrong with it (the call fails with this).
        reason: String,
    },
    /// A notification that cannot be handled (nested too deeply): logged, never answered.
    Dropped {
        /// Why, for the log.
        reason: String,
    },
    /// Anything else: answered with `error`, carrying the id when a usable one could be read.
    Invalid {
        /// The id's JSON text (a string, a number or null), if usable.
        id: Option<String>,
        /// The JSON-RPC error to send back (-32700 or -32600).
        error: RpcError,
    },
}

/// Params and results at least this long are moved to the front of the line they came in, whose
/// allocation they keep, rather than copied out of it (see [`classify_line`]); at the same size the
/// decoder moves their longest string out of that allocation in turn (`support::moved`), so the
/// message is never copied whole.
const IN_PLACE: usize = acp_types::support::moved::MOVE_MIN;

/// Classifies one line (see [`Incoming`]). Pure and total: any bytes give an answer. The fuzz
/// target's entry point (the runtime reads lines with [`classify_line`]).
#[cfg(any(fuzzing, test))]
pub fn classify(line: &[u8]) -> Incoming {
    classify_with(line, |raw| raw.to_owned())
}

/// [`classify`] for a line the caller gives up: long params or a long result (64 KiB or more)
/// keep the line's allocation instead of being copied out of it, so a large message is in
/// memory once, not twice, until it is decoded.
pub(super) fn classify_line(line: Vec<u8>) -> Incoming {
    let mut long = None;
    let mut incoming = classify_with(&line, |raw| {
        let text = raw.get();
        if text.len() < IN_PLACE {
            return raw.to_owned();
        }
        // `raw` borrows from `line`: its place there.
        let start = text.as_ptr() as usize - line.as_ptr() as usize;
        long = Some(start..start + text.len());
        RawValue::NULL.to_owned()
    });
    let (Some(range), Some(slot)) = (long, long_raw(&mut incoming)) else {
        return incoming;
    };
    let mut bytes = line;
    bytes.copy_within(range.clone(), 0);
    bytes.truncate(range.len());
    // The text was valid UTF-8 and JSON as part of the line, so neither check fails.
    match String::from_utf8(bytes).ok().and_then(|text| RawValue::from_string(text).ok()) {
        Some(raw) => *slot = raw,
        None => {
            let error = RpcError::new(RpcError::PARSE_ERROR, "parse error: not valid JSON");
            return Incoming::Invalid { id: None, error };
        }
    }
    incoming
}

/// The params or result an [`Incoming`] carries, if any.
fn long_raw(incoming: &mut Incoming) -> Option<&mut Raw> {
    match incoming {
        Incoming::Request { params, .. } | Incoming::Notification { params, .. } => params.as_mut(),
        Incoming::Response { answer: Ok(result), .. } => Some(result),
        _ => None,
    }
}

/// [`classify`], with `own` making the owned copy of the params or result (only one of them is
/// kept by any [`Incoming`]).
fn classify_with(line: &[u8], own: impl FnOnce(&RawValue) -> Raw) -> Incoming {
    if nesting_exceeds(line, MAX_DEPTH) {
        return too_deep(line);
    }
    let first = line.iter().find(|b| !b.is_ascii_whitespace());
    let envelope = match (first, serde_json::from_slice::<Envelope>(line)) {
        (Some(b'{'), Ok(envelope)) => envelope,
        (_, envelope) => return not_a_message(line, envelope.err()),
    };
    // Responses first: they are never answered, whatever is wrong with them.
    if envelope.method.is_none() && (envelope.result.is_some() || envelope.error.is_some()) {
        let id = envelope.id.as_ref().map(|id| id.get().to_string());
        let answer = match (envelope.result, envelope.error) {
            _ if envelope.jsonrpc.as_deref() != Some("2.0") => None,
            (Some(result), None) => Some(Ok(own(result))),
            (None, Some(error)) => Some(Err(error)),
            _ => None,
        };
        return match answer {
            Some(answer) => Incoming::Response { id, answer },
            None => Incoming::BadResponse { id, reason: BAD_RESPONSE.into() },
        };
    }
    let id_ok = envelope.id.as_ref().is_none_or(|id| valid_id(id.get()));
    if envelope.jsonrpc.as_deref() != Some("2.0") || !id_ok {
        let id = envelope.id.as_ref().filter(|_| id_ok).map(|id| id.get().to_string());
        let error = RpcError::new(
            RpcError::INVALID_REQUEST,
            "invalid request: needs \"jsonrpc\": \"2.0\" and a string, number or null id",
        );
        return Incoming::Invalid { id, error };
    }
    match envelope {
        Envelope { method: Some(method), id: Some(id), params, .. } => {
            Incoming::Request { method, id: id.to_owned(), params: params.map(own) }
        }
        Envelope { method: Some(method), id: None, params, .. } => {
            Incoming::Notification { method, params: params.map(own) }
        }
        Envelope { id, .. } => Incoming::Invalid {
            id: id.map(|id| id.get().to_string()),
            error: RpcError::new(RpcError::INVALID_REQUEST, "not a JSON-RPC request, notification or response"),
        },
    }
}

/// A line that is not one message object. Not JSON at all: -32700; JSON, but not a message (a
/// batch, a number, duplicate members): -32600, with the id where there is a usable one.
/// Something shaped like a response is never answered.
fn not_a_message(line: &[u8], envelope_error: Option<serde_json::Error>) -> Incoming {
    let value = match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(value) => value,
        Err(_) => {
            let what = if std::str::from_utf8(line).is_err() { "UTF-8" } else { "JSON" };
            let error = RpcError::new(RpcError::PARSE_ERROR, format!("parse error: not valid {what}"));
            return Incoming::Invalid { id: None, error };
        }
    };
    let reason = envelope_error.map(|e| e.to_string()).unwrap_or_default();
    let duplicate = reason.strip_prefix("duplicate field `").and_then(|r| r.split('`').next());
    // With two ids there is none to answer to.
    let id = value.get("id").map(|id| id.to_string()).filter(|id| valid_id(id) && duplicate != Some("id"));
    if value.get("method").is_none() && (value.get("result").is_some() || value.get("error").is_some()) {
        return Incoming::BadResponse { id, reason: BAD_RESPONSE.into() };
    }
    let message = if value.is_array() {
        "invalid request: a batch (JSON array); ACP sends one message object per line".to_string()
    } else if let Some(member) = duplicate {
        format!("invalid request: duplicate member `{member}`")
    } else {
        "not a JSON-RPC request, notification or response".to_string()
    };
    Incoming::Invalid { id, error: RpcError::new(RpcError::INVALID_REQUEST, message) }
}

const BAD_RESPONSE: &str = "the peer's response is not a valid JSON-RPC response";

/// A line nested deeper than [`MAX_DEPTH`]: refused before any parsing, handled like an
/// over-long one (the id and whether it is a call come from its first bytes).
fn too_deep(line: &[u8]) -> Incoming {
    let prefix = scan_prefix(line);
    let id = prefix.id.filter(|id| valid_id(id));
    let reason = format!("JSON nested more than {MAX_DEPTH} levels deep");
    match (prefix.has_method, id) {
        (true, None) => Incoming::Dropped { reason: format!("a notification with {reason}") },
        (false, Some(id)) => {
            Incoming::BadResponse { id: Some(id), reason: format!("the peer's response has {reason}") }
        }
        (_, id) => Incoming::Invalid {
            id,
            error: RpcError::new(RpcError::INVALID_REQUEST, format!("invalid request: {reason}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deep(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn lines_nested_too_deeply_are_judged_by_their_first_bytes() {
        let request = format!(r#"{{"jsonrpc":"2.0","id":"a","method":"m","params":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(
            classify(request.as_bytes()),
            Incoming::Invalid { id: Some(id), error } if id == r#""a""# && error.code == RpcError::INVALID_REQUEST
        ));
        let note = format!(r#"{{"jsonrpc":"2.0","method":"m","params":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(classify(note.as_bytes()), Incoming::Dropped { .. }));
        let response = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{}}}"#, deep(MAX_DEPTH + 1));
        assert!(matches!(
            classify(response.as_bytes()),
            Incoming::BadResponse { id: Some(id), reason } if id == "3" && reason.contains("nested more than 100")
        ));
        // Within the limit, the same request is a request.
        let fine = format!(r#"{{"jsonrpc":"2.0","id":"a","method":"m","params":{}}}"#, deep(MAX_DEPTH - 1));
        assert!(matches!(classify(fine.as_bytes()), Incoming::Request { .. }));
    }

    #[test]
    fn two_ids_leave_none_to_answer_to() {
        let Incoming::Invalid { id, error } = classify(br#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#) else {
            panic!("not refused");
        };
        assert_eq!((id, error.message.as_str()), (None, "invalid request: duplicate member `id`"));
    }

    /// `classify_line` (long params and results moved within the line) judges every line as
    /// `classify` (copies) does, on both sides of the in-place threshold.
    #[test]
    fn classifying_an_owned_line_gives_what_classifying_a_borrowed_one_gives() {
        // `{"text":"…"}` of exactly `len` bytes; escapes and non-ASCII text in the longer ones.
        let text = |len: usize| {
            let mixed = "\\u00e9é".repeat(len.saturating_sub(11) / 9);
            format!(r#"{{"text":"{mixed}{}"}}"#, "x".repeat(len.saturating_sub(11 + mixed.len())))
        };
        assert_eq!((text(IN_PLACE - 1).len(), text(IN_PLACE).len()), (IN_PLACE - 1, IN_PLACE));
        let mut lines = Vec::new();
        for body in [text(11), text(IN_PLACE - 1), text(IN_PLACE), text(3 * IN_PLACE), "null".into()] {
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":7,"method":"m","params":{body}}}"#));
            lines.push(format!(r#"{{"params": {body} ,"method":"m","jsonrpc":"2.0"}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":"r","result":{body}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":"r","result":{body},"error":{{"code":1,"message":"m"}}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","id":[1],"method":"m","params":{body}}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{body},"params":1}}"#));
            lines.push(format!(r#"{{"jsonrpc":"2.0","method":"m","params":{body}"#));
        }
        let mut long = 0;
        for line in &lines {
            let (borrowed, owned) = (classify(line.as_bytes()), classify_line(line.clone().into_bytes()));
            assert_eq!(format!("{borrowed:?}"), format!("{owned:?}"), "{line}");
            if let Incoming::Request { params: Some(p), .. } | Incoming::Notification { params: Some(p), .. } = owned {
                long += usize::from(p.get().len() >= IN_PLACE);
            }
        }
        assert_eq!(long, 4, "a request and a notification with each of the two long params");
    }
}
