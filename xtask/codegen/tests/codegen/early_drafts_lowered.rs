//! What the earliest drafts do that later ones do not, lowered by the IR's rules rather than by
//! version: responses without `x-method` and `null` results, found by their position in the
//! response union ("responses to the corresponding request variants").

use acp_codegen::ir::{MethodKind, Protocol, TypeKind, TypeRef};

/// A 0.1.x-shaped schema: message unions, no envelopes; `ReadTextFileResponse` has no
/// `x-method`. `responses` is the agent's response union (where `authenticate` answers `null`).
fn schema(responses: &str) -> String {
    format!(
        r##"{{
  "$defs": {{
    "InitializeRequest": {{ "type": "object", "properties": {{}}, "x-method": "initialize", "x-side": "agent" }},
    "InitializeResponse": {{ "type": "object", "properties": {{}}, "x-method": "initialize", "x-side": "agent" }},
    "AuthenticateRequest": {{ "type": "object", "properties": {{}}, "x-method": "authenticate", "x-side": "agent" }},
    "ReadTextFileRequest": {{ "type": "object", "properties": {{}}, "x-method": "fs/read_text_file", "x-side": "client" }},
    "ReadTextFileResponse": {{ "type": "object", "properties": {{ "content": {{ "type": "string" }} }}, "required": ["content"] }},
    "PermissionRequest": {{ "type": "object", "properties": {{}}, "x-method": "session/request_permission", "x-side": "client" }},
    "PermissionResponse": {{ "type": "object", "properties": {{}}, "x-method": "session/request_permission", "x-side": "client" }},
    "ClientRequest": {{ "anyOf": [
      {{ "$ref": "#/$defs/InitializeRequest", "title": "InitializeRequest" }},
      {{ "$ref": "#/$defs/AuthenticateRequest", "title": "AuthenticateRequest" }}
    ] }},
    "AgentResponse": {{ "anyOf": [{responses}] }},
    "AgentRequest": {{ "anyOf": [
      {{ "$ref": "#/$defs/ReadTextFileRequest", "title": "ReadTextFileRequest" }},
      {{ "$ref": "#/$defs/PermissionRequest", "title": "PermissionRequest" }}
    ] }},
    "ClientResponse": {{ "anyOf": [
      {{ "$ref": "#/$defs/ReadTextFileResponse", "title": "ReadTextFileResponse" }},
      {{ "$ref": "#/$defs/PermissionResponse", "title": "PermissionResponse" }}
    ] }}
  }}
}}"##
    )
}

fn result_of<'a>(p: &'a Protocol, method: &str) -> Option<(&'a str, &'a TypeKind)> {
    let m = p.methods.iter().find(|m| m.name == method && m.kind == MethodKind::Request)?;
    m.result.map(|id| (p.get(id).name.as_str(), &p.get(id).kind))
}

#[test]
fn null_results_and_responses_without_x_method_are_found_by_position() {
    let responses = r##"
      { "$ref": "#/$defs/InitializeResponse", "title": "InitializeResponse" },
      { "title": "AuthenticateResponse", "type": "null" }"##;
    let p = acp_codegen::load_text(&schema(responses), "early.json").expect("lowers");
    assert_eq!(result_of(&p, "initialize").map(|r| r.0), Some("InitializeResponse"));
    let (name, kind) = result_of(&p, "authenticate").expect("a unit response");
    assert_eq!(name, "AuthenticateResponse");
    assert!(matches!(kind, TypeKind::Newtype { inner: TypeRef::Null, .. }), "{kind:?}");
    // A response type without `x-method`, at the position of its request.
    assert_eq!(result_of(&p, "fs/read_text_file").map(|r| r.0), Some("ReadTextFileResponse"));
    assert_eq!(result_of(&p, "session/request_permission").map(|r| r.0), Some("PermissionResponse"));
}

#[test]
fn a_response_union_out_of_step_with_the_requests_is_not_paired() {
    // The x-method response stands at position 1, where `authenticate` is asked: no pairing, so
    // `authenticate` has no response type: raw JSON, and a warning.
    let responses = r##"
      { "title": "AuthenticateResponse", "type": "null" },
      { "$ref": "#/$defs/InitializeResponse", "title": "InitializeResponse" }"##;
    let p = acp_codegen::load_text(&schema(responses), "early.json").expect("generates");
    assert_eq!(result_of(&p, "authenticate"), None);
    let warnings: Vec<String> = p.warnings.iter().map(ToString::to_string).collect();
    assert!(
        warnings.iter().any(|w| w.contains(r#"request "authenticate" has no response type; its response is raw JSON"#)),
        "{warnings:?}"
    );
}
