//! Annotations are kept in the IR, raw, on the items they annotate, each with the JSON pointer of
//! its keyword: those the generator does not know with one warning per keyword, `x-state` and
//! `x-scope` also typed in the state model, their paths checked against the types they stand on
//! (`data/ok/annotations.json`, whose code and warnings the snapshot tests compare).

use acp_codegen::ir::{Origin, Protocol, StateAction, TypeKind};
use acp_codegen::warning::WarningKind;
use serde_json::json;
use std::path::Path;

fn load() -> Protocol {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ok/annotations.json");
    acp_codegen::load(&path, "annotations.json").expect("an unknown annotation is no error")
}

fn kept<'a>(origin: &'a Origin, keyword: &str) -> (&'a serde_json::Value, &'a str) {
    let a = origin.annotations.iter().find(|a| a.keyword == keyword).expect("kept");
    (&a.value, a.pointer.as_str())
}

#[test]
fn x_state_is_kept_on_each_union_variant() {
    let p = load();
    let TypeKind::Union(u) = &p.get(p.find("SessionUpdate").expect("type")).kind else { panic!("a union") };
    let chunk = u.variants.iter().find(|v| v.origin.wire == "agent_message_chunk").expect("variant");
    let (value, pointer) = kept(&chunk.origin, "x-state");
    assert_eq!(pointer, "/$defs/SessionUpdate/oneOf/0/x-state");
    assert_eq!(value["session"][0]["action"], "append");
    assert_eq!(value["session"][0]["field"], "content");
    let plan = u.variants.iter().find(|v| v.origin.wire == "plan").expect("variant");
    assert_eq!(
        plan.origin.annotation("x-state"),
        Some(&json!({ "session": [{ "action": "replace", "target": "plan", "value": "entries" }] }))
    );
    // Typed: one rule per annotation, on its variant, and a target per scope and name.
    let rules: Vec<(&str, StateAction, &str)> =
        p.state.rules.iter().map(|r| (r.source.tag.as_deref().unwrap_or(""), r.action, r.target.as_str())).collect();
    assert_eq!(
        rules,
        [("agent_message_chunk", StateAction::Append, "agentMessage"), ("plan", StateAction::Replace, "plan")]
    );
    let chunk = &p.state.rules[0];
    assert_eq!(
        (chunk.id.as_slice(), chunk.field.as_slice()),
        (&["messageId".to_string()][..], &["content".to_string()][..])
    );
    assert_eq!(chunk.pointer, "/$defs/SessionUpdate/oneOf/0/x-state/session/0");
    let targets: Vec<(&str, bool)> = p.state.targets.iter().map(|t| (t.name.as_str(), t.keyed)).collect();
    assert_eq!(targets, [("agentMessage", true), ("plan", false)]);
    assert_eq!(p.state.scopes[0].paths, [vec!["sessionId".to_string()]]);
}

#[test]
fn x_scope_is_kept_on_its_type_and_any_x_keyword_on_its_field() {
    let p = load();
    let t = p.get(p.find("UpdateNotification").expect("type"));
    assert_eq!(kept(&t.origin, "x-scope"), (&json!({ "session": ["sessionId"] }), "/$defs/UpdateNotification/x-scope"));
    let TypeKind::Struct(s) = &t.kind else { panic!("a struct") };
    let field = s.fields.iter().find(|f| f.origin.wire == "sessionId").expect("field");
    assert_eq!(kept(&field.origin, "x-order"), (&json!(1), "/$defs/UpdateNotification/properties/sessionId/x-order"));
    // Not on the items that do not carry it.
    let update = s.fields.iter().find(|f| f.origin.wire == "update").expect("field");
    assert!(update.origin.annotations.is_empty());
}

#[test]
fn each_unknown_keyword_is_one_warning_at_its_first_place() {
    let p = load();
    let warnings: Vec<(&str, &WarningKind)> = p.warnings.iter().map(|w| (w.pointer.as_str(), &w.kind)).collect();
    assert_eq!(
        warnings,
        [(
            "/$defs/UpdateNotification/properties/sessionId/x-order",
            &WarningKind::UnknownAnnotation { keyword: "x-order".into(), count: 1 }
        )]
    );
}

#[test]
fn a_keyword_that_is_no_annotation_is_still_an_error() {
    let text = r##"{ "$defs": { "A": { "type": "object", "y-state": {} } } }"##;
    let err = acp_codegen::load_text(text, "t.json").expect_err("not an annotation").to_string();
    assert_eq!(err, r##"t.json#/$defs/A/y-state: unsupported keyword "y-state""##);
}

/// A schema with one annotated `SessionUpdate` branch (its `x-state` as given) and a struct with
/// `x-scope`.
fn with_state(x_state: serde_json::Value, x_scope: serde_json::Value) -> String {
    json!({
        "$defs": {
            "SessionUpdate": {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {
                            "sessionUpdate": { "type": "string", "const": "chunk" },
                            "messageId": { "type": "string" },
                            "content": { "type": "string" }
                        },
                        "required": ["sessionUpdate", "messageId", "content"],
                        "x-state": x_state
                    },
                    {
                        "type": "object",
                        "properties": {
                            "sessionUpdate": { "type": "string", "const": "message" },
                            "messageId": { "type": "string" },
                            "content": { "type": "array", "items": { "type": "string" } },
                            "title": { "type": "integer" }
                        },
                        "required": ["sessionUpdate", "messageId"],
                        "x-state": { "session": [{ "action": "upsert", "target": "message", "id": "messageId" }] }
                    }
                ],
                "discriminator": { "propertyName": "sessionUpdate" }
            },
            "Note": {
                "type": "object",
                "properties": { "sessionId": { "type": "string" } },
                "x-scope": x_scope
            }
        }
    })
    .to_string()
}

fn error_of(x_state: serde_json::Value, x_scope: serde_json::Value) -> String {
    acp_codegen::load_text(&with_state(x_state, x_scope), "t.json").expect_err("a schema error").to_string()
}

#[test]
fn a_state_path_naming_no_field_is_an_error_at_its_pointer() {
    let good = json!({ "session": ["sessionId"] });
    let rule = |id: &str, field: &str, value: &str| json!({ "session": [{ "action": "append", "target": "message", "id": id, "field": field, "value": value }] });
    assert_eq!(
        error_of(rule("messageID", "content", "content"), good.clone()),
        r#"t.json#/$defs/SessionUpdate/oneOf/0/x-state/session/0/id: id path "messageID" names no field of "SessionUpdateChunk""#
    );
    assert_eq!(
        error_of(rule("messageId", "content", "body"), good.clone()),
        r#"t.json#/$defs/SessionUpdate/oneOf/0/x-state/session/0/value: value path "body" names no field of "SessionUpdateChunk""#
    );
    // `field` is a path into the target's entry (the upserted message).
    assert_eq!(
        error_of(rule("messageId", "contents", "content"), good.clone()),
        r#"t.json#/$defs/SessionUpdate/oneOf/0/x-state/session/0/field: field path "contents" names no field of "SessionUpdateMessage""#
    );
    assert_eq!(
        error_of(rule("messageId", "title", "content"), good.clone()),
        r#"t.json#/$defs/SessionUpdate/oneOf/0/x-state/session/0/field: append to field "title" of type "integer": only arrays and strings can be appended to"#
    );
    assert_eq!(
        error_of(rule("messageId", "content", "content"), json!({ "session": ["session_id"] })),
        r#"t.json#/$defs/Note/x-scope/session/0: session path "session_id" names no field of "Note""#
    );
    let unkeyed = json!({ "session": [{ "action": "replace", "target": "message", "value": "content" }] });
    assert!(error_of(unkeyed, good).contains("is keyed by an id in one rule and not in another"));
}

#[test]
fn a_newer_drafts_action_is_a_warning_and_its_rule_is_left_out() {
    let state = json!({ "session": [{ "action": "merge", "target": "message", "id": "messageId" }] });
    let p =
        acp_codegen::load_text(&with_state(state, json!({ "session": ["sessionId"] })), "t.json").expect("generates");
    assert!(p.warnings.iter().any(|w| w.kind == WarningKind::UnknownStateAction { action: "merge".into() }));
    assert_eq!(p.state.rules.len(), 1, "only the upsert");
}
