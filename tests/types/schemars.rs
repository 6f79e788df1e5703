//! Feature `schemars`: the generated types describe themselves as JSON Schema in the shape they
//! are encoded (tags as `const` properties, catch-alls, optional patch fields not required).
#![cfg(feature = "schemars")]

use acp_types::v2::{ContentBlock, PromptRequest, ToolCallUpdate, ToolKind};
use serde_json::{json, Value};

fn schema<T: schemars::JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).expect("schema serializes")
}

#[test]
fn struct_schema_has_wire_names_and_required_fields() {
    let s = schema::<PromptRequest>();
    assert_eq!(s["required"], json!(["sessionId", "prompt"]));
    assert!(s["properties"]["_meta"].is_object());
}

#[test]
fn patch_fields_are_optional() {
    let s = schema::<ToolCallUpdate>();
    assert_eq!(s["required"], json!(["toolCallId"]));
    assert!(s["properties"]["title"].is_object());
}

#[test]
fn tagged_union_lists_tags_and_a_catch_all() {
    let s = schema::<ContentBlock>();
    let branches = s["anyOf"].as_array().expect("anyOf");
    let tags: Vec<&Value> = branches.iter().map(|b| &b["properties"]["type"]["const"]).collect();
    assert!(tags.contains(&&json!("text")) && tags.contains(&&json!("resource_link")), "{s}");
    let catch_all = branches.last().expect("branches");
    assert_eq!(catch_all["properties"]["type"]["not"]["enum"][0], json!("text"), "{s}");
}

#[test]
fn open_enum_accepts_any_string() {
    let s = schema::<ToolKind>();
    assert_eq!(s["anyOf"][1], json!({ "type": "string" }), "{s}");
    assert!(s["anyOf"][0]["enum"].as_array().is_some_and(|v| v.contains(&json!("switch_mode"))));
}
