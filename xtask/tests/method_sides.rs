//! What lowering decides of a method besides its name: who receives it (`x-side`, which the
//! marker traits `ToAgent`, `ToClient` and `ToProxy` follow) and whether its params name a session
//! (`session_scoped`, from a required non-null `sessionId`), and how a merge keeps the latter
//! right for each feature setting. The emitted text is covered by the `sides` snapshot.

use xtask::codegen::ir::{Method, MethodKind, Protocol, Receiver, Stability};
use xtask::codegen::{emit, load_text, merge};

const SIDES: &str = include_str!("data/ok/sides.json");

fn method<'a>(p: &'a Protocol, name: &str) -> &'a Method {
    p.methods.iter().find(|m| m.name == name).unwrap_or_else(|| panic!("{name} is not a method"))
}

#[test]
fn sides_become_receivers() {
    let p = load_text(SIDES, "sides.json").expect("lowers");
    let cases = [
        ("session/prompt", "agent", Receiver::Agent),
        ("session/update", "client", Receiver::Client),
        ("$/cancel_request", "protocol", Receiver::Either),
        ("proxy/successor", "proxy", Receiver::Proxy),
        ("mirror/echo", "mirror", Receiver::Other),
    ];
    for (name, wire, receiver) in cases {
        let m = method(&p, name);
        assert_eq!((m.side.wire.as_str(), m.side.receiver), (wire, receiver), "{name}");
    }
}

#[test]
fn a_required_non_null_session_id_makes_a_method_session_scoped() {
    let p = load_text(SIDES, "sides.json").expect("lowers");
    let cases = [
        // Required.
        ("session/prompt", true),
        ("session/cancel", true),
        // Whoever receives it: the runtime asks about the agent's methods.
        ("session/update", true),
        // Optional, and required but nullable: a message without a session is valid.
        ("session/list", false),
        ("session/attach", false),
        // No `sessionId` at all.
        ("$/cancel_request", false),
        ("proxy/successor", false),
        ("mirror/echo", false),
    ];
    for (name, scoped) in cases {
        assert_eq!(method(&p, name).session_scoped, scoped, "{name}");
    }
}

/// One agent request, `session/prompt`, with its params given by `params` and a newtype alias of
/// them as the params of `session/fork`.
fn prompt_schema(params: &str) -> String {
    format!(
        r##"{{
  "$defs": {{
    "SessionId": {{ "type": "string" }},
    "PromptRequest": {{ {params}, "x-method": "session/prompt", "x-side": "agent" }},
    "PromptResponse": {{ "type": "object", "properties": {{}}, "x-method": "session/prompt", "x-side": "agent" }},
    "ForkRequest": {{ "allOf": [{{ "$ref": "#/$defs/PromptRequest" }}], "x-method": "session/fork", "x-side": "agent" }},
    "ForkResponse": {{ "type": "object", "properties": {{}}, "x-method": "session/fork", "x-side": "agent" }},
    "ClientRequest": {{
      "type": "object",
      "properties": {{
        "id": {{ "type": "integer" }},
        "method": {{ "type": "string" }},
        "params": {{ "anyOf": [{{ "$ref": "#/$defs/PromptRequest" }}, {{ "$ref": "#/$defs/ForkRequest" }}] }}
      }},
      "required": ["id", "method"]
    }},
    "AgentResponse": {{
      "type": "object",
      "properties": {{
        "id": {{ "type": "integer" }},
        "result": {{ "anyOf": [{{ "$ref": "#/$defs/PromptResponse" }}, {{ "$ref": "#/$defs/ForkResponse" }}] }}
      }},
      "required": ["id", "result"]
    }}
  }}
}}"##
    )
}

const OPTIONAL: &str = r##""type": "object", "properties": { "sessionId": { "$ref": "#/$defs/SessionId" } }"##;
const REQUIRED: &str =
    r##""type": "object", "properties": { "sessionId": { "$ref": "#/$defs/SessionId" } }, "required": ["sessionId"]"##;

#[test]
fn params_through_a_newtype_are_read_through_it() {
    let p = load_text(&prompt_schema(REQUIRED), "required.json").expect("lowers");
    assert!(method(&p, "session/fork").session_scoped);
    let p = load_text(&prompt_schema(OPTIONAL), "optional.json").expect("lowers");
    assert!(!method(&p, "session/fork").session_scoped);
}

#[test]
fn a_method_session_scoped_in_one_file_only_has_a_row_per_feature_setting() {
    let stable = load_text(&prompt_schema(OPTIONAL), "schema.json").expect("lowers");
    let unstable = load_text(&prompt_schema(REQUIRED), "schema.unstable.json").expect("lowers");
    let merged = merge::merge(&stable, &unstable);
    let prompt: Vec<(Stability, bool)> = merged
        .methods
        .iter()
        .filter(|m| m.name == "session/prompt" && m.kind == MethodKind::Request)
        .map(|m| (m.stability, m.session_scoped))
        .collect();
    assert_eq!(prompt, [(Stability::StableOnly, false), (Stability::Unstable, true)]);
    // The two keep the method's names (no `SessionPromptRequestAgent`), under opposite `#[cfg]`s.
    let text = emit::methods::methods_module(&merged, "merged").expect("emits");
    assert_eq!(text.matches("pub struct SessionPrompt;").count(), 2, "{text}");
    assert!(!text.contains("SessionPromptRequest"), "{text}");
    for (cfg, scoped) in [("not(feature = \"unstable\")", false), ("feature = \"unstable\"", true)] {
        let marker = format!("#[cfg({cfg})]\nimpl rpc::Method for SessionPrompt {{");
        let at = text.find(&marker).unwrap_or_else(|| panic!("no {marker}:\n{text}"));
        let scoped_line = format!("const SESSION_SCOPED: bool = {scoped};");
        assert!(text[at..].lines().take(8).any(|l| l.trim() == scoped_line), "{cfg}: {scoped_line}\n{text}");
    }
    // And so does each setting's table.
    assert!(text.contains("#[cfg(not(feature = \"unstable\"))]\npub const METHODS"), "{text}");
    // The same in both files: one method, stable.
    let merged = merge::merge(&unstable, &unstable);
    let prompt = merged.methods.iter().filter(|m| m.name == "session/prompt").count();
    assert_eq!(prompt, 1);
}
