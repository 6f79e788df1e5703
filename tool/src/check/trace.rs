//! The official conductor's trace (`agent-client-protocol-conductor --trace FILE`, 5.0.0,
//! `src/trace.rs`): one event per line, `{"type": "request"|"notification", "protocol":
//! "acp"|"mcp", "from", "to", "id"?, "method", "params"}` or `{"type": "response", "from",
//! "to", "id", "is_error", "payload"}`, where `from` and `to` are `"Client"`, `"Proxy(N)"` or
//! `"Agent"`. The conductor traces messages between neighbours with `proxy/successor` already
//! unwrapped, so each pair of neighbours is one conversation: the pair (`Client`, `Proxy(0)`)
//! is read as link 0, (`Proxy(N-1)`, `Proxy(N)`) as link N, and the last proxy (or the client)
//! with `Agent` as the link after it; the predecessor is that conversation's client. MCP
//! messages are traced without their `mcp/message` carrier (inner method and params only), so
//! they are listed, not checked.

use acp_types::support::rpc::Role;
use serde_json::{Map, Value};
use std::collections::HashSet;

/// One event of the trace, as a record of [`super::Transcript`].
#[derive(Debug)]
pub(super) struct Event {
    /// The conversation (pair of neighbours).
    pub(super) link: u64,
    pub(super) from: Role,
    /// The JSON-RPC message rebuilt from the event.
    pub(super) message: Value,
    /// An MCP message (or the answer to one): not an ACP message.
    pub(super) mcp: bool,
}

/// What the trace names a component: its place in the chain (the client first, the agent last).
pub(crate) fn place(name: &str) -> Option<u64> {
    match name {
        "Client" => Some(0),
        "Agent" => Some(u64::MAX),
        _ => name.strip_prefix("Proxy(")?.strip_suffix(')')?.parse::<u64>().ok()?.checked_add(1),
    }
}

/// Whether `record` is an event of the official trace (and not a `{"from", "message"}` record).
pub(crate) fn is_event(record: &Map<String, Value>) -> bool {
    let component = |key: &str| record.get(key).and_then(Value::as_str).and_then(place).is_some();
    record.get("type").is_some_and(Value::is_string) && component("from") && component("to")
}

/// The event in `record` (see [`is_event`]); `mcp_requests`: the ids (JSON text) of the MCP
/// requests seen so far (the conductor's ids are unique over the trace), to tell their answers.
pub(super) fn event(record: &Map<String, Value>, mcp_requests: &mut HashSet<String>) -> Result<Event, String> {
    let at = |key: &str| record.get(key).and_then(Value::as_str).and_then(place).unwrap_or_default();
    let (from, to) = (at("from"), at("to"));
    if from == to {
        return Err(format!("`from` and `to` name the same component ({})", record["from"]));
    }
    let link = from.min(to);
    let sender = if from < to { Role::Client } else { Role::Agent };
    let mut message = Map::new();
    message.insert("jsonrpc".into(), "2.0".into());
    let id = record.get("id").cloned();
    let mcp = match record.get("type").and_then(Value::as_str) {
        Some(kind @ ("request" | "notification")) => {
            if kind == "request" {
                message.insert("id".into(), id.clone().ok_or("a request event without `id`")?);
            }
            let method = record.get("method").cloned().ok_or("an event without `method`")?;
            message.insert("method".into(), method);
            // The trace writes absent params as null.
            if let Some(params) = record.get("params").filter(|p| !p.is_null()) {
                message.insert("params".into(), params.clone());
            }
            let mcp = record.get("protocol").and_then(Value::as_str) == Some("mcp");
            if let (true, Some(id)) = (mcp, id.filter(|_| kind == "request")) {
                mcp_requests.insert(id.to_string());
            }
            mcp
        }
        Some("response") => {
            let id = id.ok_or("a response event without `id`")?;
            let payload = record.get("payload").cloned().unwrap_or(Value::Null);
            let error = record.get("is_error").and_then(Value::as_bool).unwrap_or(false);
            message.insert(if error { "error" } else { "result" }.into(), payload);
            let text = id.to_string();
            message.insert("id".into(), id);
            mcp_requests.remove(&text)
        }
        other => return Err(format!("unknown event type {}", other.map_or("(none)".into(), |t| format!("{t:?}")))),
    };
    Ok(Event { link, from: sender, message: Value::Object(message), mcp })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(record: Value, mcp: &mut HashSet<String>) -> Event {
        let Value::Object(record) = record else { panic!("an object") };
        assert!(is_event(&record));
        event(&record, mcp).expect("an event")
    }

    #[test]
    fn neighbours_are_links_and_the_predecessor_is_the_client() {
        let mut mcp = HashSet::new();
        let e = read(
            json!({"type":"request","protocol":"acp","from":"Client","to":"Proxy(0)","id":"a","method":"m","params":null}),
            &mut mcp,
        );
        assert_eq!((e.link, e.from, e.mcp), (0, Role::Client, false));
        assert_eq!(e.message, json!({"jsonrpc":"2.0","id":"a","method":"m"}));
        let e = read(
            json!({"type":"notification","protocol":"acp","from":"Agent","to":"Proxy(1)","method":"n","params":{}}),
            &mut mcp,
        );
        assert_eq!((e.link, e.from), (2, Role::Agent));
        let e = read(
            json!({"type":"response","from":"Proxy(0)","to":"Proxy(1)","id":3,"is_error":true,"payload":{"code":1,"message":"x"}}),
            &mut mcp,
        );
        assert_eq!((e.link, e.from), (1, Role::Client));
        assert_eq!(e.message["error"]["code"], 1);
        // MCP requests and their answers are told apart by id.
        let e = read(
            json!({"type":"request","protocol":"mcp","from":"Agent","to":"Client","id":7,"method":"tools/list","params":null}),
            &mut mcp,
        );
        assert!(e.mcp);
        let e = read(
            json!({"type":"response","from":"Client","to":"Agent","id":7,"is_error":false,"payload":{}}),
            &mut mcp,
        );
        assert!(e.mcp && mcp.is_empty());
        assert!(!is_event(json!({"from":"client","message":{}}).as_object().expect("object")));
    }
}
