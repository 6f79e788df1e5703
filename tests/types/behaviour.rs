//! What the generated types promise beyond round trips: lenient decoding exactly where the schema
//! asks for it (each `x-deserialize-*` keyword on a bad value), open enums and catch-all unions
//! that keep what they do not know (the schema's catch-alls, and those the generator adds to v1's
//! closed types, which record what they keep), three-state patch fields, schema defaults, and
//! errors for a known tag with a bad body.

#[allow(unused_imports)]
use acp_types::lenient::{collect, LenientEvent};
#[allow(unused_imports)]
use acp_types::{Defaulted, Meta, Patch};
#[allow(unused_imports)]
use serde_json::{json, Value};

/// Decodes as a peer's bytes are: with `serde_json::from_str` (lenient fields captured, then
/// repaired), after checking that the runtime's way (`support::json::from_str`: in place first,
/// again the exact way if that fails) gives the same value, error and repairs.
#[allow(dead_code)]
fn decode<T: serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(value: Value) -> Result<T, String> {
    let text = value.to_string();
    let exact = || serde_json::from_str::<T>(&text).map_err(|e| e.to_string());
    let fast = collect(|| acp_types::support::json::from_str::<T>(&text).map_err(|e| e.to_string()));
    assert_eq!(collect(exact), fast, "support::json::from_str and serde_json::from_str differ on {text}");
    exact()
}

mod v1 {
    use super::*;
    use acp_types::v1::*;

    #[test]
    fn untagged_branches_tried_on_text_agree_with_the_value_way_on_a_key_twice() {
        // Decoded from a `Value` (the exact way), the last `text` wins and the first branch takes
        // the object; read from the text, the first branch refuses the key twice and the second
        // would take it. The fast pass must not answer with the second.
        let text = r#"{"uri":"file:///a","text":"one","text":"two","blob":"AA=="}"#;
        let exact: EmbeddedResourceResource = serde_json::from_str(text).unwrap();
        assert!(matches!(&exact, EmbeddedResourceResource::TextResourceContents(t) if t.text == "two"), "{exact:?}");
        assert_eq!(acp_types::support::json::from_str::<EmbeddedResourceResource>(text).unwrap(), exact);
        // Without the key twice, the second branch is the one the text way takes.
        let blob = r#"{"uri":"file:///a","blob":"AA==","mimeType":"image/png"}"#;
        let fast: EmbeddedResourceResource = acp_types::support::json::from_str(blob).unwrap();
        assert!(matches!(fast, EmbeddedResourceResource::BlobResourceContents(_)));
        assert_eq!(fast, serde_json::from_str(blob).unwrap());
    }

    #[test]
    fn default_on_error_takes_the_default() {
        // `terminal` (x-deserialize-default-on-error, default false) and `fs` (an object default).
        let (caps, events) = collect(|| decode::<ClientCapabilities>(json!({ "terminal": "yes", "fs": 7 })));
        let caps = caps.expect("lenient fields never fail");
        assert!(!*caps.terminal);
        assert!(!*caps.fs.read_text_file && !*caps.fs.write_text_file);
        assert_eq!(events.len(), 2, "{events:?}");
        let rejected: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                LenientEvent::DefaultOnError { value, .. } => Some(value.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(rejected, ["\"yes\"", "7"], "in the order the fields arrived");
        // A repaired field is the schema default again: not written back.
        assert_eq!(serde_json::to_value(&caps).expect("encodes"), json!({}));
    }

    #[test]
    fn default_on_error_on_a_patch_field_leaves_it_omitted() {
        let value = json!({ "sessionId": "s", "update": { "sessionUpdate": "tool_call_update", "toolCallId": "t", "title": 5 } });
        let note: SessionNotification = decode(value).expect("decodes");
        let SessionUpdate::ToolCallUpdate(update) = note.update else { panic!("wrong variant") };
        assert!(update.title.is_omitted());
    }

    #[test]
    fn fields_without_the_keyword_stay_strict() {
        // `cwd` carries no lenient keyword: a wrong type is an error, not a default.
        let err = decode::<NewSessionRequest>(json!({ "cwd": 5, "mcpServers": [] })).expect_err("strict");
        assert!(err.contains("invalid type"), "{err}");
    }

    #[test]
    fn skip_invalid_items_drops_only_the_bad_item() {
        // A priority of the wrong JSON type fails the item; an unknown string does not (below).
        let value = json!({ "entries": [
            { "content": "a", "priority": "high", "status": "pending" },
            { "content": "b", "priority": 3, "status": "pending" },
            { "content": "c", "priority": "low", "status": "completed" }
        ]});
        let (plan, events) = collect(|| decode::<Plan>(value));
        let plan = plan.expect("decodes");
        let kept: Vec<&str> = plan.entries.iter().map(|e| e.content.as_str()).collect();
        assert_eq!(kept, ["a", "c"]);
        assert!(matches!(&events[..], [LenientEvent::SkippedItem { index: 1, .. }]), "{events:?}");
    }

    #[test]
    fn skip_invalid_items_keeps_an_item_with_an_unknown_value() {
        let value = json!({ "entries": [{ "content": "b", "priority": "urgent", "status": "pending" }] });
        let (plan, events) = collect(|| decode::<Plan>(value.clone()));
        let plan = plan.expect("decodes");
        assert_eq!(plan.entries[0].priority, PlanEntryPriority::Other("urgent".into()));
        let expected = LenientEvent::NotInSchema { ty: "PlanEntryPriority", tag: None, value: "\"urgent\"".into() };
        assert_eq!(events, vec![expected]);
        assert_eq!(serde_json::to_value(&plan).expect("encodes"), value);
    }

    #[test]
    fn default_on_error_keeps_an_unknown_string_and_defaults_a_wrong_type() {
        // `ToolCallUpdate.status` carries x-deserialize-default-on-error.
        let update = |status: Value| json!({ "sessionId": "s", "update": { "sessionUpdate": "tool_call_update", "toolCallId": "t", "status": status } });
        let (note, events) = collect(|| decode::<SessionNotification>(update(json!("paused"))));
        let note = note.expect("decodes");
        let SessionUpdate::ToolCallUpdate(u) = &note.update else { panic!("wrong variant") };
        assert_eq!(u.status, Patch::Value(ToolCallStatus::Other("paused".into())));
        assert!(
            matches!(&events[..], [LenientEvent::NotInSchema { ty: "ToolCallStatus", tag: None, .. }]),
            "{events:?}"
        );
        assert_eq!(serde_json::to_value(&note).expect("encodes"), update(json!("paused")));
        // A number is not a string at all: the default (omitted) stands in for it.
        let (note, events) = collect(|| decode::<SessionNotification>(update(json!(42))));
        let SessionUpdate::ToolCallUpdate(u) = &note.expect("decodes").update else { panic!("wrong variant") };
        assert!(u.status.is_omitted());
        assert!(matches!(&events[..], [LenientEvent::DefaultOnError { value, .. }] if value == "42"), "{events:?}");
    }

    #[test]
    fn default_on_null_takes_the_default() {
        let (req, events) = collect(|| decode::<NewSessionRequest>(json!({ "cwd": "/w", "mcpServers": null })));
        assert_eq!(req.expect("decodes").mcp_servers, vec![]);
        assert_eq!(events, vec![LenientEvent::DefaultOnNull]);
        // Absent is still an error: the field is required.
        assert!(decode::<NewSessionRequest>(json!({ "cwd": "/w" })).is_err());
    }

    #[test]
    fn defaults_apply_on_decode_and_presence_is_kept() {
        let omitted: ClientCapabilities = decode(json!({})).expect("decodes");
        assert!(!*omitted.terminal && omitted.terminal.is_implicit());
        let explicit: ClientCapabilities = decode(json!({ "terminal": false })).expect("decodes");
        assert!(!explicit.terminal.is_implicit());
        assert_eq!(serde_json::to_value(&omitted).expect("encodes"), json!({}));
        assert_eq!(serde_json::to_value(&explicit).expect("encodes"), json!({ "terminal": false }));
        // Structs are `#[non_exhaustive]` (a later schema's field must not break this code): made
        // with `new`/`default` and set field by field.
        let mut caps = ClientCapabilities::default();
        caps.terminal = Defaulted::from(true);
        assert_eq!(serde_json::to_value(&caps).expect("encodes"), json!({ "terminal": true }));
    }

    #[test]
    fn closed_enums_keep_unknown_values_and_record_them() {
        // The schema lists three priorities; the generator adds the catch-all `Other`.
        let (kept, events) = collect(|| decode::<PlanEntryPriority>(json!("urgent")));
        assert_eq!(kept, Ok(PlanEntryPriority::Other("urgent".into())));
        assert_eq!(events.len(), 1, "{events:?}");
        // `ToolKind` has a value `other`, so its added catch-all is `Unknown`.
        assert_eq!(decode::<ToolKind>(json!("other")), Ok(ToolKind::Other));
        assert_eq!(decode::<ToolKind>(json!("_mykind")), Ok(ToolKind::Unknown("_mykind".into())));
        // A known value records nothing; a value of the wrong JSON type is still an error.
        assert_eq!(collect(|| decode::<PlanEntryPriority>(json!("high"))).1, vec![]);
        let err = decode::<PlanEntryPriority>(json!(3)).expect_err("not a string");
        assert!(err.contains("invalid type: integer `3`"), "{err}");
    }

    #[test]
    fn closed_unions_keep_unknown_variants_whole_and_record_them() {
        let value = json!({ "sessionId": "s", "update": { "sessionUpdate": "future_thing", "z": 1, "a": { "y": [1, null], "b": true } } });
        let (note, events) = collect(|| decode::<SessionNotification>(value.clone()));
        let note = note.expect("kept by the added catch-all");
        let SessionUpdate::Other(object) = &note.update else { panic!("expected the catch-all, got {note:?}") };
        assert_eq!(object.get("sessionUpdate"), Some(json!("future_thing")));
        let expected = LenientEvent::NotInSchema {
            ty: "SessionUpdate",
            tag: Some("sessionUpdate"),
            value: "\"future_thing\"".into(),
        };
        assert_eq!(events, vec![expected]);
        // Written back as received, key order included.
        assert_eq!(serde_json::to_string(&note).expect("encodes"), value.to_string());
        // A known tag with a bad body is still an error, and so is a tag that is not a string.
        assert!(decode::<ContentBlock>(json!({ "type": "text", "text": 5 })).is_err());
        assert!(decode::<ContentBlock>(json!({ "type": 5 })).is_err());
    }

    #[test]
    fn an_added_catch_all_comes_after_the_untagged_branches() {
        // The schema's untagged stdio branch still takes what it accepts, a `type` beside it or not.
        let stdio = json!({ "type": "stdio", "name": "fs", "command": "/bin/mcp", "args": [], "env": [] });
        let (server, events) = collect(|| decode::<McpServer>(stdio));
        assert!(matches!(server, Ok(McpServer::Stdio(_))), "{server:?}");
        assert_eq!(events, vec![]);
        // What no branch accepts, the added catch-all keeps.
        let ws = json!({ "type": "websocket", "name": "w", "url": "wss://x" });
        let (server, events) = collect(|| decode::<McpServer>(ws.clone()));
        assert_eq!(server, Ok(McpServer::Other(Meta::try_from(ws).expect("an object"))));
        assert!(matches!(&events[..], [LenientEvent::NotInSchema { ty: "McpServer", tag: Some("type"), .. }]));
    }

    #[test]
    fn request_ids_of_each_kind() {
        for id in [json!(null), json!(7), json!("abc")] {
            let decoded: RequestId = decode(id.clone()).expect("decodes");
            assert_eq!(serde_json::to_value(&decoded).expect("encodes"), id);
        }
        assert_eq!(decode::<RequestId>(json!(7)).expect("decodes"), RequestId::Number(7));
        assert!(decode::<RequestId>(json!(true)).is_err());
    }

    #[test]
    fn untagged_stdio_mcp_server_beside_tagged_ones() {
        let stdio: McpServer =
            decode(json!({ "name": "fs", "command": "/bin/mcp", "args": [], "env": [] })).expect("decodes");
        assert!(matches!(stdio, McpServer::Stdio(_)));
        let http: McpServer =
            decode(json!({ "type": "http", "name": "h", "url": "https://x", "headers": [] })).expect("decodes");
        assert!(matches!(http, McpServer::Http(_)));
    }
}

mod v2 {
    use super::*;
    use acp_types::v2::*;

    #[test]
    fn open_enum_keeps_an_unknown_value() {
        let kind: ToolKind = decode(json!("_mykind")).expect("open enum");
        assert_eq!(kind, ToolKind::Unknown("_mykind".into()));
        assert_eq!(serde_json::to_value(&kind).expect("encodes"), json!("_mykind"));
        // A known value is never the catch-all, whatever its spelling in Rust.
        assert_eq!(decode::<ToolKind>(json!("other")).expect("decodes"), ToolKind::Other);
    }

    #[test]
    fn catch_all_keeps_the_whole_payload() {
        let block = json!({ "type": "_acme/chart", "spec": { "x": [1, 2, { "y": null }] }, "title": "t" });
        let decoded: ContentBlock = decode(block.clone()).expect("catch-all");
        let ContentBlock::Other(object) = &decoded else { panic!("expected the catch-all, got {decoded:?}") };
        assert_eq!(object.get("type"), Some(json!("_acme/chart")));
        assert_eq!(serde_json::to_string(&decoded).expect("encodes"), block.to_string());
    }

    #[test]
    fn known_tag_with_invalid_body_is_an_error() {
        let err = decode::<ContentBlock>(json!({ "type": "text", "text": 5 })).expect_err("not a catch-all");
        assert!(err.contains("type `text`") && err.contains("invalid type"), "{err}");
        let err = decode::<ContentBlock>(json!({ "text": "no tag" })).expect_err("tag required");
        assert!(err.contains("missing or non-string field `type`"), "{err}");
    }

    #[test]
    fn a_tag_twice_is_refused_in_one_pass_and_the_last_wins_in_general() {
        use acp_types::support::rpc::decode_params;
        let text = r#"{"type":"image","data":"AA==","mimeType":"image/png","type":"text","text":"a"}"#;
        let err = serde_json::from_str::<ContentBlock>(text).expect_err("one pass sees `type` twice");
        assert!(err.to_string().contains("duplicate field `type`"), "{err}");
        // The general path reads the object whole, where the last `type` stands.
        let block: ContentBlock = acp_types::support::detailed(|| serde_json::from_str(text)).expect("general path");
        assert!(matches!(&block, ContentBlock::Text(t) if t.text == "a"), "{block:?}");
        // decode_params keeps the first pass's verdict, like a struct's duplicate field.
        let raw = serde_json::value::RawValue::from_string(text.to_string()).expect("raw");
        let err = decode_params::<ContentBlock>("test", Some(&raw)).expect_err("refused");
        assert_eq!(err.message, "invalid params for test: duplicate field `type` (in type `image`)");
    }

    #[test]
    fn a_tag_read_late_or_escaped_decodes_the_same() {
        let expected: ContentBlock = decode(json!({ "type": "text", "text": "a" })).expect("decodes");
        for text in [r#"{"text":"a","type":"text"}"#, r#"{"t\u0079pe":"text","te\u0078t":"a"}"#] {
            let block: ContentBlock = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(block, expected, "{text}");
        }
        // Not a string: the general path decides (no catch-all takes a number tag).
        let err = decode::<ContentBlock>(json!({ "type": 5, "text": "a" })).expect_err("bad tag");
        assert!(err.contains("missing or non-string field `type`"), "{err}");
    }

    #[test]
    fn patch_fields_keep_omitted_null_and_value_apart() {
        let base = json!({ "sessionId": "s", "update": { "sessionUpdate": "tool_call_update", "toolCallId": "t" } });
        for (title, expected) in [
            (None, Patch::Omitted),
            (Some(Value::Null), Patch::Null),
            (Some(json!("Reading")), Patch::Value("Reading".to_string())),
        ] {
            let mut value = base.clone();
            if let Some(title) = title {
                value["update"]["title"] = title;
            }
            let note: UpdateSessionNotification = decode(value.clone()).expect("decodes");
            let SessionUpdate::ToolCallUpdate(update) = &note.update else { panic!("wrong variant") };
            assert_eq!(update.title, expected);
            assert_eq!(serde_json::to_value(&note).expect("encodes"), value);
        }
    }

    #[test]
    fn lenient_union_tag_falls_back_to_the_untagged_branch() {
        // `IdleStateUpdate.stopReason` is both the flattened union's tag and a field with
        // x-deserialize-default-on-error: a number there is dropped, and the tagless branch decides.
        let (idle, events) = collect(|| decode::<IdleStateUpdate>(json!({ "stopReason": 5 })));
        let idle = idle.expect("lenient tag");
        assert!(matches!(idle.stop_reason, IdleStateUpdateStopReason::None(_)), "{idle:?}");
        assert!(matches!(&events[..], [LenientEvent::DefaultOnError { value, .. }] if value == "5"), "{events:?}");
        let known: IdleStateUpdate = decode(json!({ "stopReason": "end_turn" })).expect("decodes");
        assert_eq!(known.stop_reason, IdleStateUpdateStopReason::EndTurn);
    }

    /// The keys of a JSON object's text given more than once, in their order (a `Value` would
    /// keep only the last).
    fn keys_twice(text: &str) -> Vec<String> {
        struct Keys;
        impl<'de> serde::de::Visitor<'de> for Keys {
            type Value = Vec<String>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
                let (mut seen, mut twice) = (Vec::new(), Vec::new());
                while let Some((key, _)) = map.next_entry::<String, serde::de::IgnoredAny>()? {
                    if seen.contains(&key) {
                        twice.push(key);
                    } else {
                        seen.push(key);
                    }
                }
                Ok(twice)
            }
        }
        serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_str(text), Keys).expect("an object")
    }

    /// A struct that flattens a tagged union (`DiffChange`, `SessionConfigOption`; serde's
    /// `#[serde(flatten)]` hands the union the entries the struct does not name): every way of
    /// decoding (the runtime's, `serde_json`'s, and the general path under `detailed`) gives the
    /// same value and repairs or fails alike, wherever the tag and the struct's own fields stand,
    /// and a value decoded is written back as it was read. `tag` is the union's tag property.
    fn flattened_alike<T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug>(
        text: &str,
        tag: &str,
    ) -> Result<T, String> {
        let fast = collect(|| acp_types::support::json::from_str::<T>(text).map_err(|e| e.to_string()));
        let plain = collect(|| serde_json::from_str::<T>(text).map_err(|e| e.to_string()));
        let general =
            collect(|| acp_types::support::detailed(|| serde_json::from_str::<T>(text)).map_err(|e| e.to_string()));
        assert_eq!(fast, plain, "runtime and serde_json differ on {text}");
        let twice = keys_twice(text);
        // A tag given twice is refused by the one-pass way (as serde's internally tagged enums
        // refuse it), where the `Value` of `detailed` keeps the last: a known difference.
        if twice.iter().any(|key| key == tag) {
            assert!(fast.0.is_err(), "a tag twice taken: {text}");
            return fast.0;
        }
        assert_eq!(fast.0.is_ok(), general.0.is_ok(), "runtime and `detailed` differ on {text}: {fast:?} {general:?}");
        if let (Ok(a), Ok(b)) = (&fast.0, &general.0) {
            assert_eq!(a, b, "{text}");
            assert_eq!(fast.1, general.1, "repairs differ on {text}");
            // Written as read, but for a key given twice (the last is kept) and a repaired value.
            if twice.is_empty() && fast.1.is_empty() {
                let written: Value = serde_json::to_value(a).expect("encodes");
                assert_eq!(written, serde_json::from_str::<Value>(text).expect("json"), "{text}");
            }
        }
        fast.0
    }

    #[test]
    fn flattened_unions_decode_alike_wherever_the_tag_stands() {
        let path = "/a/b.rs";
        // (the object, whether it decodes)
        for (text, decodes) in [
            (format!(r#"{{"operation":"add","path":"{path}","fileType":"text","mimeType":"text/x-rust"}}"#), true),
            (format!(r#"{{"fileType":"text","operation":"add","path":"{path}"}}"#), true),
            (format!(r#"{{"path":"{path}","mimeType":"text/plain","fileType":"text","operation":"modify"}}"#), true),
            (
                format!(
                    r#"{{"fileType":"text","oldPath":"/a/c.rs","operation":"move","path":"{path}","_meta":{{"k":[1]}}}}"#
                ),
                true,
            ),
            (format!(r#"{{"_meta":{{"k":1}},"operation":"copy","oldPath":"/a/c.rs","path":"{path}"}}"#), true),
            // Unknown operations: own fields before, after and on both sides of the tag.
            (format!(r#"{{"operation":"_acme_chmod","path":"{path}","mode":"0755","fileType":"text"}}"#), true),
            (
                format!(
                    r#"{{"fileType":"binary","mimeType":"image/png","operation":"_acme_chmod","path":"{path}","x":{{"y":[1,2]}}}}"#
                ),
                true,
            ),
            (
                format!(
                    r#"{{"mode" : "0644" ,"fileType":null,"operation":"future_op","_meta":{{"a":"b"}},"path":"{path}"}}"#
                ),
                true,
            ),
            // Lenient own fields (a bad value dropped), before and after the tag.
            (format!(r#"{{"fileType":5,"operation":"add","path":"{path}"}}"#), true),
            (format!(r#"{{"operation":"_acme_chmod","fileType":[1],"path":"{path}"}}"#), true),
            // A missing body field, no tag, a tag that is not a string, a tag twice, an own
            // field twice (known and unknown tag).
            (format!(r#"{{"operation":"move","path":"{path}"}}"#), false),
            (format!(r#"{{"path":"{path}"}}"#), false),
            (format!(r#"{{"operation":7,"path":"{path}"}}"#), false),
            (format!(r#"{{"operation":"add","path":"{path}","operation":"delete"}}"#), false),
            (format!(r#"{{"operation":"add","fileType":"text","path":"{path}","fileType":"binary"}}"#), false),
            (format!(r#"{{"fileType":"text","operation":"_acme_x","fileType":"binary","path":"{path}"}}"#), false),
        ] {
            let result = flattened_alike::<DiffChange>(&text, "operation");
            assert_eq!(result.is_ok(), decodes, "{text}: {result:?}");
        }
        let change = flattened_alike::<DiffChange>(
            &format!(r#"{{"fileType":"text","operation":"_acme_chmod","path":"{path}","mode":"0755"}}"#),
            "operation",
        )
        .expect("decodes");
        assert_eq!(change.file_type, Patch::Value(DiffFileType::Text));
        let DiffChangeOperation::Other(kept) = &change.operation else { panic!("{change:?}") };
        assert_eq!(
            kept.to_map(),
            json!({ "operation": "_acme_chmod", "path": path, "mode": "0755" }).as_object().unwrap().clone()
        );
    }

    /// The same for a config option, whose own fields stand on either side of its `type`.
    #[test]
    fn a_flattened_config_option_decodes_alike_wherever_its_type_stands() {
        for (text, decodes) in [
            (
                r#"{"configId":"m","name":"Model","category":"model","type":"select","currentValue":"a","options":[{"value":"a","name":"A"}]}"#,
                true,
            ),
            (
                r#"{"type":"select","currentValue":"a","configId":"m","options":[{"groupId":"g","name":"G","options":[{"value":"a","name":"A"}]}],"name":"Model"}"#,
                true,
            ),
            (r#"{"configId":"t","name":"Thinking","type":"boolean","currentValue":false,"description":null}"#, true),
            (
                r#"{"configId":"s","name":"Slider","type":"_acme_slider","currentValue":0.7,"min":0,"marks":{"0":"lo"},"category":"_acme"}"#,
                true,
            ),
            (r#"{"type":"_acme_slider","configId":"s","step":0.1,"name":"Slider","description":"d"}"#, true),
            // A boolean option without its current value.
            (r#"{"configId":"s","name":"Slider","type":"boolean"}"#, false),
        ] {
            let result = flattened_alike::<SessionConfigOption>(text, "type");
            assert_eq!(result.is_ok(), decodes, "{text}: {result:?}");
        }
        let grouped = flattened_alike::<SessionConfigOption>(
            r#"{"configId":"m","name":"Model","type":"select","currentValue":"a","options":[{"groupId":"g","name":"G","options":[{"value":"a","name":"A"}]}]}"#,
            "type",
        )
        .expect("decodes");
        let SessionConfigOptionType::Select(select) = &grouped.r#type else { panic!("{grouped:?}") };
        assert!(matches!(select.options, SessionConfigSelectOptions::Grouped(_)), "{select:?}");
    }

    #[test]
    fn unknown_session_update_round_trips_with_nested_fields() {
        let value = json!({ "sessionId": "s", "update": { "sessionUpdate": "_vendor/progress", "pct": 40, "detail": { "steps": [1, 2] } } });
        let note: UpdateSessionNotification = decode(value.clone()).expect("decodes");
        assert!(matches!(note.update, SessionUpdate::Other(_)));
        assert_eq!(serde_json::to_value(&note).expect("encodes"), value);
    }
}
