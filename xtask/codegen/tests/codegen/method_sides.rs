//! What lowering decides of a method besides its name: who receives it (`x-side`, which the
//! marker traits `ToAgent`, `ToClient` and `ToProxy` follow) and whether its params name a session
//! (`session_scoped`, from a required non-null `sessionId`), and how a merge keeps the latter
//! right for each feature setting while the method stays one. The emitted text is covered by the
//! `sides` snapshot; a merged version whose files disagree is compiled and tested here, under both
//! feature settings.

use acp_codegen::ir::{ByFeature, Method, MethodKind, Protocol, Receiver, Recipient, Stability};
use acp_codegen::{emit, load_text, merge};
use std::process::Command;

const SIDES: &str = include_str!("../data/ok/sides.json");

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
fn receivers_say_who_receives_them_and_which_end_is_their_role() {
    use Recipient::{Agent, Client, Proxy};
    let cases: [(Receiver, &[Recipient], Option<Recipient>); 5] = [
        (Receiver::Agent, &[Agent], Some(Agent)),
        (Receiver::Client, &[Client], Some(Client)),
        (Receiver::Either, &[Agent, Client], None),
        (Receiver::Proxy, &[Proxy], None),
        (Receiver::Other, &[], None),
    ];
    for (receiver, recipients, role) in cases {
        assert_eq!(receiver.recipients(), recipients, "{receiver:?}");
        for r in Recipient::ALL {
            assert_eq!(receiver.receives(r), recipients.contains(&r), "{receiver:?} {r:?}");
        }
        assert_eq!(receiver.role(), role, "{receiver:?}");
    }
    let traits = Recipient::ALL.map(Recipient::marker_trait);
    assert_eq!(traits, ["ToAgent", "ToClient", "ToProxy"]);
    assert_eq!(Recipient::ALL.map(Recipient::role), [Some("Agent"), Some("Client"), None]);
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
        assert_eq!(method(&p, name).session_scoped, ByFeature::both(scoped), "{name}");
    }
}

/// One agent request, `session/prompt`, with its params given by `params` and a newtype alias of
/// them as the params of `session/fork`; besides `SessionId`, the `$defs` have named types that
/// take `null`: `NullableSessionId` (`SessionId` or `null`) and `SessionIdAlias` (a newtype of it).
fn prompt_schema(params: &str) -> String {
    format!(
        r##"{{
  "$defs": {{
    "SessionId": {{ "type": "string" }},
    "NullableSessionId": {{ "anyOf": [{{ "$ref": "#/$defs/SessionId" }}, {{ "type": "null" }}] }},
    "SessionIdAlias": {{ "allOf": [{{ "$ref": "#/$defs/NullableSessionId" }}] }},
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

/// Params whose `sessionId` is the property `session_id` and is required or not.
fn params(session_id: &str, required: bool) -> String {
    let required = if required { r#", "required": ["sessionId"]"# } else { "" };
    format!(r#""type": "object", "properties": {{ "sessionId": {session_id} }}{required}"#)
}

const SESSION_ID: &str = r##"{ "$ref": "#/$defs/SessionId" }"##;

fn required() -> String {
    params(SESSION_ID, true)
}

fn optional() -> String {
    params(SESSION_ID, false)
}

#[test]
fn params_through_a_newtype_are_read_through_it() {
    let p = load_text(&prompt_schema(&required()), "required.json").expect("lowers");
    assert_eq!(method(&p, "session/fork").session_scoped, ByFeature::both(true));
    let p = load_text(&prompt_schema(&optional()), "optional.json").expect("lowers");
    assert_eq!(method(&p, "session/fork").session_scoped, ByFeature::both(false));
}

#[test]
fn a_required_session_id_that_may_still_be_null_names_no_session() {
    let cases = [
        // A named type that takes `null`, directly and through a newtype of it.
        (r##"{ "$ref": "#/$defs/NullableSessionId" }"##, false),
        (r##"{ "$ref": "#/$defs/SessionIdAlias" }"##, false),
        (r##"{ "allOf": [{ "$ref": "#/$defs/SessionIdAlias" }] }"##, false),
        // `null` read as the default: a message may send it.
        (r##"{ "$ref": "#/$defs/SessionId", "x-deserialize-default-on-null": true }"##, false),
        // Lenient otherwise, `null` is still not a value the schema allows.
        (r##"{ "$ref": "#/$defs/SessionId", "x-deserialize-default-on-error": true }"##, true),
        (SESSION_ID, true),
    ];
    for (session_id, scoped) in cases {
        let p = load_text(&prompt_schema(&params(session_id, true)), "nullable.json").expect("lowers");
        for name in ["session/prompt", "session/fork"] {
            assert_eq!(method(&p, name).session_scoped, ByFeature::both(scoped), "{name}: {session_id}");
        }
    }
}

/// `schema.json` with an optional `sessionId`, `schema.unstable.json` with a required one, merged.
fn disagreeing_files() -> Protocol {
    let stable = load_text(&prompt_schema(&optional()), "schema.json").expect("lowers");
    let unstable = load_text(&prompt_schema(&required()), "schema.unstable.json").expect("lowers");
    merge::merge(&stable, &unstable).expect("merges")
}

#[test]
fn a_method_session_scoped_in_one_file_only_is_one_stable_method() {
    let merged = disagreeing_files();
    for name in ["session/prompt", "session/fork"] {
        let rows: Vec<(Stability, ByFeature<bool>)> = merged
            .methods
            .iter()
            .filter(|m| m.name == name && m.kind == MethodKind::Request)
            .map(|m| (m.stability, m.session_scoped))
            .collect();
        assert_eq!(rows, [(Stability::Stable, ByFeature { stable: false, unstable: true })], "{name}");
    }
    // The other way round too.
    let stable = load_text(&prompt_schema(&required()), "schema.json").expect("lowers");
    let unstable = load_text(&prompt_schema(&optional()), "schema.unstable.json").expect("lowers");
    let merged = merge::merge(&stable, &unstable).expect("merges");
    let prompt = method(&merged, "session/prompt");
    assert_eq!(
        (prompt.stability, prompt.session_scoped),
        (Stability::Stable, ByFeature { stable: true, unstable: false })
    );
    // The same in both files: one method, stable, the same under both settings.
    let unstable = load_text(&prompt_schema(&required()), "schema.unstable.json").expect("lowers");
    let merged = merge::merge(&unstable, &unstable).expect("merges");
    let prompt: Vec<&Method> = merged.methods.iter().filter(|m| m.name == "session/prompt").collect();
    assert_eq!(prompt.len(), 1);
    assert_eq!((prompt[0].stability, prompt[0].session_scoped), (Stability::Stable, ByFeature::both(true)));
}

#[test]
fn one_marker_per_method_with_its_session_per_feature_setting() {
    let text = emit::methods::methods_module(&disagreeing_files(), "merged").expect("emits");
    for marker in ["SessionPrompt", "SessionFork"] {
        // One marker, one `rpc::Method` impl, one stability: stable, as both files have it.
        assert_eq!(text.matches(&format!("pub struct {marker};")).count(), 1, "{text}");
        let head = format!("impl rpc::Method for {marker} {{");
        assert_eq!(text.matches(&head).count(), 1, "{text}");
        let at = text.find(&head).expect("the impl");
        let body = &text[at..at + text[at..].find("\n}\n").expect("its end")];
        let stability: Vec<&str> = body.lines().map(str::trim).filter(|l| l.starts_with("const STABILITY")).collect();
        assert_eq!(stability, ["const STABILITY: rpc::Stability = rpc::Stability::Stable;"], "{body}");
        // `SESSION_SCOPED` once per feature setting: not without the feature, as `schema.json`
        // says; with it, as `schema.unstable.json` says.
        let lines: Vec<&str> = body.lines().map(str::trim).collect();
        for (cfg, scoped) in [("#[cfg(not(feature = \"unstable\"))]", false), ("#[cfg(feature = \"unstable\")]", true)]
        {
            let scoped_line = format!("const SESSION_SCOPED: bool = {scoped};");
            let found = lines.windows(2).any(|w| w == [cfg, scoped_line.as_str()]);
            assert!(found, "{marker}: {cfg} {scoped_line}\n{body}");
        }
        assert_eq!(body.matches("const SESSION_SCOPED").count(), 2, "{body}");
    }
    // No names of their own for the two settings.
    assert!(!text.contains("SessionPromptRequest"), "{text}");
    assert!(!text.contains("rpc::Stability::Unstable"), "{text}");
    // Each setting's table, one row per method, with that setting's answer.
    for (cfg, scoped) in [("not(feature = \"unstable\")", false), ("feature = \"unstable\"", true)] {
        let head = format!("#[cfg({cfg})]\npub const METHODS: &[rpc::MethodInfo<Side>] = &[");
        let at = text.find(&head).unwrap_or_else(|| panic!("no {head}:\n{text}"));
        let table = &text[at..at + text[at..].find("];").expect("its end")];
        assert_eq!(table.matches("rpc::MethodInfo {").count(), 2, "{table}");
        assert_eq!(table.matches(&format!("session_scoped: {scoped},")).count(), 2, "{table}");
    }
    assert_eq!(text.matches("pub const METHODS").count(), 2, "{text}");
}

/// The merged version as a crate of its own, built and tested (its generated test checks each
/// marker against its setting's table) without and with the `unstable` feature, and a test of
/// its own that `SessionPrompt` names a session with the feature only. Built where
/// `tests/tasks/old_schemas_generate.rs` builds, with the same flags, so that the dependencies are built once.
#[test]
fn a_version_whose_files_disagree_compiles_under_both_feature_settings() {
    let merged = disagreeing_files();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("target/method-sides/acp-merged-sides");
    let support = root.join("support");
    let (manifest, lib) =
        emit::crates::standalone("acp-merged-sides", "merged", &support, emit::crates::Workspace::Own).expect("crate");
    let files = [
        ("Cargo.toml", manifest),
        ("src/lib.rs", lib),
        ("src/types.rs", emit::types_module(&merged, "merged").expect("types")),
        ("src/methods.rs", emit::methods::methods_module(&merged, "merged").expect("methods")),
        (
            "tests/session.rs",
            "use acp_merged_sides::methods::{SessionFork, SessionPrompt, Tables, METHODS};\n\
             use acp_merged_sides::support::rpc::{Method, Role, Stability, Tables as _};\n\n\
             #[test]\n\
             fn the_session_follows_the_feature() {\n    \
                 let on = cfg!(feature = \"unstable\");\n    \
                 assert_eq!((SessionPrompt::SESSION_SCOPED, SessionFork::SESSION_SCOPED), (on, on));\n    \
                 assert_eq!((SessionPrompt::STABILITY, SessionFork::STABILITY), (Stability::Stable, Stability::Stable));\n    \
                 assert_eq!(METHODS.len(), 2);\n    \
                 assert_eq!(Tables::session_scoped(Role::Agent, \"session/prompt\"), on);\n\
             }\n"
                .to_string(),
        ),
    ];
    for (path, text) in &files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    for features in [&[][..], &["--features", "unstable"][..]] {
        let output = Command::new(env!("CARGO"))
            .args(["test", "--quiet", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .args(features)
            .env("CARGO_TARGET_DIR", root.join("target/old-schemas/target"))
            .env("RUSTFLAGS", "-D warnings")
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "{features:?}: the merged crate does not build cleanly or its tests fail:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
