//! Large params handed over to the decoder (`decode_raw` with `RawParams::Owned`) have their
//! longest string moved, not copied (`support::moved`). The outcome must be the ordinary one in
//! every case: the value, the error, and the lenient repairs recorded (in any order).

use acp_types::support::lenient;
use acp_types::support::rpc::{RawParams, RpcError};
use acp_types::v1::methods::{agent, client};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// A long text with every kind of escape and some non-ASCII, about `len` bytes of JSON.
fn long_text(len: usize) -> String {
    "line \"quoted\" \\ tab\t é ✓ 😀 \u{1} end\n".chars().cycle().take(len / 2).collect()
}

type Outcome<T> = (Result<T, RpcError>, Vec<lenient::LenientEvent>);

/// The two outcomes agree: value, error and lenient repairs (compared without printing the
/// values, which hold the long text).
fn agree<T: PartialEq>(what: &str, params: &str, moved: Outcome<T>, ordinary: Outcome<T>) {
    let error = |r: &Result<T, RpcError>| r.as_ref().err().cloned();
    assert!(moved.0 == ordinary.0, "{what}: moved and copied differ: {:.300}", params);
    assert_eq!(error(&moved.0), error(&ordinary.0), "{what}: errors");
    // The same repairs; the general path may meet them in another order.
    let repairs = |events: Vec<lenient::LenientEvent>| {
        let mut events: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
        events.sort();
        events
    };
    assert_eq!(repairs(moved.1), repairs(ordinary.1), "{what}: lenient repairs");
}

/// Decodes `params` both ways, as a client receives a notification and as an agent receives a
/// request, and checks that they agree; the notification as decoded the ordinary way.
fn both_ways(method: &str, params: &str) -> Result<client::Notification, String> {
    let raw = || RawValue::from_string(params.to_string()).expect("valid JSON");
    let borrowed = raw();
    agree(
        &format!("notification {method}"),
        params,
        lenient::collect(|| client::Notification::decode_raw(method, RawParams::Owned(Some(raw())))),
        lenient::collect(|| client::Notification::decode(method, Some(&borrowed))),
    );
    agree(
        &format!("request {method}"),
        params,
        lenient::collect(|| agent::Request::decode_raw(method, RawParams::Owned(Some(raw())))),
        lenient::collect(|| agent::Request::decode(method, Some(&borrowed))),
    );
    client::Notification::decode(method, Some(&borrowed)).map_err(|e| e.message)
}

fn chunk(text: &Value) -> Value {
    json!({ "sessionId": "s", "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "text", "text": text } } })
}

#[test]
fn large_params_decode_the_same_moved_or_copied() {
    let text = Value::String(long_text(200_000));
    let cases: Vec<(&str, Value)> = vec![
        // The text of a chunk, the common case.
        ("session/update", chunk(&text)),
        // The same in a prompt, in a list.
        (
            "session/prompt",
            json!({ "sessionId": "s", "prompt": [{ "type": "text", "text": "hi" }, { "type": "text", "text": text }] }),
        ),
        // In free-form `_meta`, and as a key there.
        ("session/update", {
            let mut c = chunk(&json!("short"));
            c["_meta"] = json!({ "blob": text, "n": 1 });
            c
        }),
        ("session/update", {
            let mut c = chunk(&json!("short"));
            c["_meta"] = json!({ text.as_str().expect("text"): 1 });
            c
        }),
        // In a variant this version does not know (kept whole).
        (
            "session/update",
            json!({ "sessionId": "s", "update": { "sessionUpdate": "agent_message_chunk", "content": { "type": "hologram", "data": text } } }),
        ),
        // Under lenient fields, with repairs to record: an unknown status and a bad content item.
        (
            "session/update",
            json!({ "sessionId": "s", "update": {
            "sessionUpdate": "tool_call_update", "toolCallId": "t", "status": 7,
            "content": [{ "type": "content", "content": { "type": "text", "text": text } }, { "type": 5 }]
        } }),
        ),
        // Errors elsewhere in the message, and the long string where a number should be.
        ("session/update", {
            let mut c = chunk(&text);
            c["sessionId"] = json!(5);
            c
        }),
        ("session/update", json!({ "sessionId": text, "update": 1 })),
        // The stand-in itself in the message: declined, decoded the ordinary way.
        ("session/update", {
            let mut c = chunk(&text);
            c["_meta"] = json!({ "x": "\u{0}acp: moved string\u{0}" });
            c
        }),
        // By position: refused either way.
        ("session/update", json!(["s", text])),
    ];
    for (method, params) in &cases {
        let _ = both_ways(method, &params.to_string());
    }
    // A duplicate member, which only the one-pass decode refuses: refused moved too.
    let dup = chunk(&text).to_string().replacen(r#"{"sessionId":"s","#, r#"{"sessionId":"s","sessionId":"t","#, 1);
    let outcome = both_ways("session/update", &dup);
    assert!(outcome.is_err(), "duplicate sessionId accepted");
    // A lone surrogate in the long string: the ordinary error.
    let lone = chunk(&text).to_string().replacen("end", "\\ud800end", 1);
    let outcome = both_ways("session/update", &lone);
    assert!(outcome.is_err(), "lone surrogate accepted");
    // And the moved text arrives whole.
    let outcome = both_ways("session/update", &chunk(&text).to_string());
    let Ok(client::Notification::SessionUpdate(n)) = outcome else { panic!("not decoded") };
    let acp_types::v1::SessionUpdate::AgentMessageChunk(c) = n.update else { panic!("not a chunk") };
    let acp_types::v1::ContentBlock::Text(t) = c.content else { panic!("not text") };
    assert_eq!(Value::String(t.text), text);
}
