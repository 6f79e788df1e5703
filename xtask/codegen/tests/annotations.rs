//! Annotations the generator does not know are kept in the IR, raw, on the items they annotate,
//! each with the JSON pointer of its keyword; the schema still generates, with one warning per
//! keyword (`data/ok/annotations.json`, whose code and warnings the snapshot tests compare).

use acp_codegen::ir::{Origin, Protocol, TypeKind};
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
    assert_eq!(value["action"], "append");
    assert_eq!(value["field"], "content");
    let plan = u.variants.iter().find(|v| v.origin.wire == "plan").expect("variant");
    assert_eq!(
        plan.origin.annotation("x-state"),
        Some(&json!({ "action": "replace", "target": "plan", "value": "entries" }))
    );
}

#[test]
fn x_scope_is_kept_on_its_type_and_any_x_keyword_on_its_field() {
    let p = load();
    let t = p.get(p.find("UpdateNotification").expect("type"));
    assert_eq!(kept(&t.origin, "x-scope"), (&json!({ "session": "sessionId" }), "/$defs/UpdateNotification/x-scope"));
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
        [
            (
                "/$defs/SessionUpdate/oneOf/0/x-state",
                &WarningKind::UnknownAnnotation { keyword: "x-state".into(), count: 2 }
            ),
            (
                "/$defs/UpdateNotification/properties/sessionId/x-order",
                &WarningKind::UnknownAnnotation { keyword: "x-order".into(), count: 1 }
            ),
            (
                "/$defs/UpdateNotification/x-scope",
                &WarningKind::UnknownAnnotation { keyword: "x-scope".into(), count: 1 }
            ),
        ]
    );
}

#[test]
fn a_keyword_that_is_no_annotation_is_still_an_error() {
    let text = r##"{ "$defs": { "A": { "type": "object", "y-state": {} } } }"##;
    let err = acp_codegen::load_text(text, "t.json").expect_err("not an annotation").to_string();
    assert_eq!(err, r##"t.json#/$defs/A/y-state: unsupported keyword "y-state""##);
}
