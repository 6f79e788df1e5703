//! The generated method tables: every corpus message routes through `decode(method, params)` to
//! the right variant and re-encodes unchanged, the tables hold exactly the schema's methods, the
//! JSON-RPC errors a peer expects, and handler dispatch with its defaults.

use crate::types_common;
use types_common as common;

use acp_types::support::rpc::{MessageKind, MethodInfo, RpcError, Side, Tables};
use common::{corpus, json_eq};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn raw(value: &Value) -> Box<RawValue> {
    RawValue::from_string(value.to_string()).expect("valid JSON")
}

/// What decoding a message by method gave: the method it routed to and the re-encoded payload.
type Routed = Result<(String, Value), RpcError>;

/// Whether acp-types was built with its `unstable` feature: its tables then hold unstable rows.
/// (Asked of the tables, not of this package's feature: `--features acp-types/unstable` turns
/// on the types' alone.)
fn types_unstable() -> bool {
    acp_types::v1::methods::METHODS.iter().any(|m| m.stability == acp_types::support::rpc::Stability::Unstable)
}

/// Distinct `x-method` values and the number of `x-method` definitions of a committed schema.
fn schema_methods(version: &str) -> (BTreeSet<String>, usize) {
    let file = if types_unstable() { "schema.unstable.json" } else { "schema.json" };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("schema/{version}/{file}"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("schema")).expect("JSON");
    let defs = schema["$defs"].as_object().expect("$defs");
    let methods: Vec<String> = defs.values().filter_map(|d| d["x-method"].as_str().map(String::from)).collect();
    (methods.iter().cloned().collect(), methods.len())
}

fn check_table<S: Side>(version: &str, table: &[MethodInfo<S>]) {
    let (distinct, defs) = schema_methods(version);
    let names: BTreeSet<String> = table.iter().map(|m| m.name.to_string()).collect();
    assert_eq!(names, distinct, "{version}: table methods vs distinct x-method values");
    // Each request has a params and a result definition, each notification one.
    let requests = table.iter().filter(|m| m.kind == MessageKind::Request).count();
    assert_eq!(table.len() + requests, defs, "{version}: every x-method definition is a row's params or result");
    for m in table {
        assert_eq!(m.result.is_some(), m.kind == MessageKind::Request, "{}", m.name);
    }
}

/// Routes every corpus case through the side module its method belongs to, and through the
/// version's [`Tables`], which must agree.
fn check_corpus<T: Tables>(version: &str, route: impl Fn(T::Side, &str, MessageKind, bool, &Value) -> Routed) {
    let table = T::METHODS;
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for case in corpus(version) {
        if case.unstable && !types_unstable() {
            continue;
        }
        let (kind, response) = match case.message.as_str() {
            "request" => (MessageKind::Request, false),
            "response" => (MessageKind::Request, true),
            _ => (MessageKind::Notification, false),
        };
        let Some(row) = table.iter().find(|m| m.name == case.method && m.kind == kind) else {
            failures.push(format!("{}: {} is not in the table", case.name, case.method));
            continue;
        };
        let raw = raw(&case.value);
        let by_tables = match response {
            false => T::decode(row.side, kind, &case.method, Some(&raw)).map(|p| p.unwrap_or(Value::Null)),
            true => T::decode_response(row.side, &case.method, Some(&raw)),
        };
        match (route(row.side, &case.method, kind, response, &case.value), by_tables) {
            (Ok((_, back)), Ok(tables)) if back != tables => {
                failures.push(format!("{}: the side module gave {back}, Tables {tables}", case.name))
            }
            (Ok(_), Err(e)) => failures.push(format!("{}: Tables: {e}", case.name)),
            (Ok((method, back)), _) if method == case.method && json_eq(&back, &case.value) => {
                seen.insert((case.method.clone(), row.side, kind, response));
            }
            (Ok((method, back)), _) => failures.push(format!("{}: routed to {method}, re-encoded {back}", case.name)),
            (Err(e), _) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    for m in table {
        for response in [false, true] {
            if response && m.kind != MessageKind::Request {
                continue;
            }
            if !seen.contains(&(m.name.to_string(), m.side, m.kind, response)) {
                failures.push(format!(
                    "no corpus {} for {} ({})",
                    if response { "response" } else { "params" },
                    m.name,
                    m.side
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{version}:\n{}", failures.join("\n"));
}

/// `side::Request`/`Notification`/`Response` of each side module, as a routing closure. The match
/// on the version's `Side` has no catch-all: a side added to a schema must be listed here.
macro_rules! route_sides {
    ($version:ident: $($variant:ident => $module:ident),*) => {
        |side: acp_types::$version::methods::Side, method: &str, kind: MessageKind, response: bool, value: &Value| -> Routed {
            use acp_types::$version::methods::Side;
            let raw = raw(value);
            match (side, kind, response) {
                $(
                    (Side::$variant, MessageKind::Request, false) => {
                        let r = acp_types::$version::methods::$module::Request::decode(method, Some(&raw))?;
                        Ok((r.method().to_string(), r.params()?.unwrap_or(Value::Null)))
                    }
                    (Side::$variant, MessageKind::Notification, _) => {
                        let n = acp_types::$version::methods::$module::Notification::decode(method, Some(&raw))?;
                        Ok((n.method().to_string(), n.params()?.unwrap_or(Value::Null)))
                    }
                    (Side::$variant, MessageKind::Request, true) => {
                        let r = acp_types::$version::methods::$module::Response::decode(method, Some(&raw))?;
                        Ok((r.method().unwrap_or("_ext").to_string(), r.result()?))
                    }
                )*
            }
        }
    };
}

/// Runs a future that never waits on anything external (the handlers below).
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

mod v1 {
    use super::*;
    use acp_types::v1::methods::{self, agent, client};
    use acp_types::v1::{PromptRequest, PromptResponse, StopReason};

    #[test]
    fn table_holds_the_schema_methods() {
        check_table("v1", methods::METHODS);
    }

    #[test]
    fn every_corpus_message_routes_by_method() {
        check_corpus::<methods::Tables>(
            "v1",
            route_sides!(v1: Agent => agent, Client => client, Protocol => protocol, Proxy => proxy),
        );
    }

    #[test]
    fn look_alike_params_are_routed_by_method() {
        // `session/close` and `logout` params differ only by `sessionId`; the method decides.
        let params = raw(&json!({ "sessionId": "s" }));
        assert!(matches!(agent::Request::decode("session/close", Some(&params)), Ok(agent::Request::SessionClose(_))));
        assert!(matches!(agent::Request::decode("logout", Some(&params)), Ok(agent::Request::Logout(_))));
        assert!(matches!(agent::Request::decode("logout", None), Ok(agent::Request::Logout(_))));
    }

    #[test]
    fn unknown_method_is_32601_with_the_name() {
        let e = agent::Request::decode("session/fly", None).expect_err("unknown");
        assert_eq!(e.code, RpcError::METHOD_NOT_FOUND);
        assert_eq!(e.data, Some(json!({ "method": "session/fly" })));
        // A client method sent to the agent is unknown there too.
        assert_eq!(agent::Request::decode("fs/read_text_file", None).expect_err("wrong side").code, -32601);
    }

    #[test]
    fn missing_required_params_is_32602() {
        let e = agent::Request::decode("session/prompt", None).expect_err("params required");
        assert_eq!(e.code, RpcError::INVALID_PARAMS);
        assert!(e.message.contains("missing params") && e.message.contains("sessionId"), "{e}");
    }

    #[test]
    fn wrong_type_in_params_is_32602_with_the_path() {
        let params = raw(&json!({ "sessionId": "s", "prompt": [{ "type": "text", "text": 5 }] }));
        let e = agent::Request::decode("session/prompt", Some(&params)).expect_err("bad params");
        assert_eq!(e.code, -32602);
        assert_eq!(e.data.as_ref().and_then(|d| d["path"].as_str()), Some("prompt[0].text"), "{e}");
        assert!(e.message.contains("invalid type"), "{e}");
        let params = raw(&json!({ "sessionId": "s", "update": { "sessionUpdate": "tool_call_update" } }));
        let e = client::Notification::decode("session/update", Some(&params)).expect_err("bad params");
        assert!(e.message.contains("update") && e.message.contains("toolCallId"), "{e}");
    }

    #[test]
    fn extension_methods_keep_name_and_params() {
        let params = raw(&json!({ "anything": [1, { "goes": null }] }));
        let r = agent::Request::decode("_acme/do", Some(&params)).expect("extension");
        assert_eq!(
            r,
            agent::Request::Ext {
                method: "_acme/do".into(),
                params: Some(json!({ "anything": [1, { "goes": null }] }))
            }
        );
        let n = client::Notification::decode("_acme/ping", None).expect("extension");
        assert_eq!(n.method(), "_acme/ping");
    }

    #[test]
    fn notification_as_request_and_the_reverse() {
        let params = raw(&json!({ "sessionId": "s" }));
        let e = agent::Request::decode("session/cancel", Some(&params)).expect_err("a notification");
        assert_eq!(e.code, -32601);
        assert!(e.message.contains("is a notification"), "{e}");
        let e = agent::Notification::decode("session/new", Some(&params)).expect_err("a request");
        assert!(e.message.contains("is a request"), "{e}");
    }

    struct Agent;

    impl agent::Handler for Agent {
        // Implementations may use `async fn`; the trait only asks for a `Send` future.
        async fn session_prompt(&self, params: PromptRequest, _: ()) -> Result<PromptResponse, RpcError> {
            assert_eq!(params.session_id.as_str(), "s");
            Ok(PromptResponse::new(StopReason::EndTurn))
        }
    }

    #[test]
    fn dispatch_calls_the_handler_and_defaults_answer_not_found() {
        let params = raw(&json!({ "sessionId": "s", "prompt": [] }));
        let request = agent::Request::decode("session/prompt", Some(&params)).expect("decodes");
        let response = block_on(agent::dispatch_request(&Agent, request, ())).expect("handled");
        assert_eq!(response.result().expect("encodes"), json!({ "stopReason": "end_turn" }));
        let request = agent::Request::decode("session/new", Some(&raw(&json!({ "cwd": "/", "mcpServers": [] }))))
            .expect("decodes");
        let e = block_on(agent::dispatch_request(&Agent, request, ())).expect_err("default");
        assert_eq!((e.code, e.data), (-32601, Some(json!({ "method": "session/new" }))));
        let ext = agent::Request::decode("_x", None).expect("extension");
        assert_eq!(block_on(agent::dispatch_request(&Agent, ext, ())).expect_err("default").code, -32601);
        let note =
            agent::Notification::decode("session/cancel", Some(&raw(&json!({ "sessionId": "s" })))).expect("decodes");
        block_on(agent::dispatch_notification(&Agent, note, ()));
    }
}

mod v2 {
    use super::*;
    use acp_types::v2::methods;

    #[test]
    fn table_holds_the_schema_methods() {
        check_table("v2", methods::METHODS);
    }

    #[test]
    fn every_corpus_message_routes_by_method() {
        check_corpus::<methods::Tables>(
            "v2",
            route_sides!(v2: Agent => agent, Client => client, Protocol => protocol, Proxy => proxy),
        );
    }
}

/// `MethodName` is the union of the versions' tables: every row's wire name decodes to a variant
/// that names it back and lists the row's version, every variant is some version's, and a name no
/// schema defines is `None`.
mod method_name {
    use acp_types::{v1, v2, MethodName, Version};

    #[test]
    fn every_table_name_round_trips() {
        let tables: [(Version, Vec<&str>); 2] = [
            (Version::V1, v1::methods::METHODS.iter().map(|m| m.name).collect()),
            (Version::V2, v2::methods::METHODS.iter().map(|m| m.name).collect()),
        ];
        for (version, names) in &tables {
            for &wire in names {
                let name = MethodName::of(wire).unwrap_or_else(|| panic!("{version}: {wire} has no MethodName"));
                assert_eq!(name.as_str(), wire);
                assert_eq!(name.to_string(), wire);
                assert!(name.versions().contains(version), "{wire}: {:?} lacks {version}", name.versions());
            }
        }
        for &name in MethodName::ALL {
            assert_eq!(MethodName::of(name.as_str()), Some(name));
            assert!(!name.versions().is_empty(), "{name} is in no version");
        }
        for unknown in ["_x/ping", "", "session/", "Initialize", "initialize "] {
            assert_eq!(MethodName::of(unknown), None, "{unknown:?}");
        }
    }
}
