//! Extension schemas (`acp_codegen::ext`): joined to the core version they extend, they lower to
//! their own types and `_`-prefixed methods, the core types they use staying the core's; what an
//! extension cannot be is an error at its pointer. `tests/extension.rs` (the runtime's) serves the
//! generated module of `schema/ext/example.json` between an agent and a client.

use acp_codegen::ext::{self, Extension};
use acp_codegen::ir::{MethodKind, Receiver, TypeKind, TypeRef};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn core() -> String {
    std::fs::read_to_string(root().join("schema/v1/schema.json")).expect("core schema")
}

fn load_file(name: &str) -> Extension {
    let text = std::fs::read_to_string(root().join(name)).expect("extension schema");
    ext::load(name, &text, "schema/v1/schema.json", &core()).unwrap_or_else(|e| panic!("{e}"))
}

fn load_json(ext: Value) -> Result<Extension, String> {
    ext::load("ext.json", &ext.to_string(), "schema/v1/schema.json", &core()).map_err(|e| e.to_string())
}

#[test]
fn the_example_has_a_request_and_a_notification_for_each_end() {
    let e = load_file("schema/ext/example.json");
    let mut methods: Vec<(&str, Receiver, MethodKind)> =
        e.protocol.methods.iter().map(|m| (m.name.as_str(), m.side.receiver, m.kind)).collect();
    methods.sort_by_key(|m| m.0);
    assert_eq!(
        methods,
        [
            ("_example/confirm", Receiver::Client, MethodKind::Request),
            ("_example/greet", Receiver::Agent, MethodKind::Request),
            ("_example/mood", Receiver::Agent, MethodKind::Notification),
            ("_example/progress", Receiver::Client, MethodKind::Notification),
        ]
    );
    let greet = e.protocol.methods.iter().find(|m| m.name == "_example/greet").expect("greet");
    assert_eq!(e.protocol.get(greet.result.expect("a result")).name, "GreetResponse");
    assert!(greet.session_scoped.stable, "its params name a core SessionId");
}

#[test]
fn core_types_are_the_cores_not_the_extensions() {
    let e = load_file("schema/ext/example.json");
    let own: Vec<&str> = e.own.iter().map(|id| e.protocol.get(*id).name.as_str()).collect();
    assert!(own.contains(&"GreetRequest") && own.contains(&"Mood"), "{own:?}");
    for core in ["SessionId", "ContentBlock", "TextContent"] {
        let id = e.protocol.find(core).unwrap_or_else(|| panic!("{core} reached"));
        assert!(!e.own.contains(&id), "{core} is the core's");
    }
    let greet = e.protocol.get(e.protocol.find("GreetRequest").expect("type"));
    let TypeKind::Struct(s) = &greet.kind else { panic!("a struct") };
    let field = s.fields.iter().find(|f| f.origin.wire == "sessionId").expect("field");
    assert_eq!(field.ty, TypeRef::Named(e.protocol.find("SessionId").expect("core type")));
}

#[test]
fn agentao_lowers_with_its_meta_of_in_the_docs() {
    let e = load_file("schema/ext/agentao.json");
    let names: Vec<&str> = e.protocol.methods.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names, ["_agentao.cn/set_model", "_agentao.cn/ask_user"]);
    let meta = e.protocol.get(e.protocol.find("InitializeResponseMeta").expect("type"));
    assert!(meta.origin.docs.as_deref().is_some_and(|d| d.contains("`InitializeResponse` (`x-meta-of`)")));
    assert!(e.protocol.warnings.is_empty(), "{:?}", e.protocol.warnings);
}

fn method(name: &str, side: &str) -> Value {
    json!({ "type": "object", "properties": { "sessionId": { "$ref": "../v1/schema.json#/$defs/SessionId" } },
            "x-method": name, "x-side": side })
}

#[test]
fn a_method_without_underscore_is_an_error() {
    let err = load_json(json!({ "$defs": { "PingNotification": method("ping", "agent") } })).expect_err("no _");
    assert_eq!(
        err,
        "ext.json#/$defs/PingNotification: extension method \"ping\" does not start with `_`: an extension schema \
         adds vendor methods only"
    );
}

#[test]
fn refs_into_two_core_versions_are_an_error() {
    let mut two = method("_x/ping", "agent");
    two["properties"]["other"] = json!({ "$ref": "../v2/schema.json#/$defs/SessionId" });
    let err = load_json(json!({ "$defs": { "PingNotification": two } })).expect_err("two cores");
    assert!(err.contains("several core versions (v1, v2)"), "{err}");
}

#[test]
fn a_name_the_core_type_it_uses_has_is_an_error() {
    let ext = json!({ "$defs": { "PingNotification": method("_x/ping", "agent"), "SessionId": { "type": "string" } } });
    let err = load_json(ext).expect_err("collision");
    assert!(err.contains("ext.json#/$defs/SessionId: type name `SessionId` is already taken"), "{err}");
}

#[test]
fn refs_elsewhere_and_dangling_ones_are_errors() {
    let mut bad = method("_x/ping", "agent");
    bad["properties"]["a"] = json!({ "$ref": "https://example.com/other.json#/x" });
    bad["properties"]["b"] = json!({ "$ref": "../v1/schema.json#/$defs/NoSuchType" });
    let err = load_json(json!({ "$defs": { "PingNotification": bad } })).expect_err("bad refs");
    assert!(err.contains("#/$defs/PingNotification/properties/a/$ref: unsupported $ref"), "{err}");
    assert!(err.contains("#/$defs/PingNotification/properties/b/$ref: dangling $ref \"NoSuchType\""), "{err}");
}

#[test]
fn targets_are_the_versions_refs_name() {
    let text = std::fs::read_to_string(root().join("schema/ext/agentao.json")).expect("read");
    assert_eq!(ext::targets("agentao.json", &text).expect("json"), ["v1"]);
    assert!(ext::targets("x.json", "{\"$defs\": {}}").expect("json").is_empty());
}

/// `cargo xtask codegen --schema FILE --ext EXT.json --out DIR`: the extension is a module of
/// the standalone crate, whose root declares it.
#[test]
fn a_standalone_crate_carries_its_extensions() {
    let root = root();
    let (_, files) = acp_codegen::standalone_with(
        &root.join("schema/v1/schema.json"),
        &[root.join("schema/ext/example.json")],
        "acp-with-example",
        &root.join("support"),
        acp_codegen::emit::crates::Workspace::Own,
    )
    .expect("generates");
    let paths: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
    for want in ["src/ext/mod.rs", "src/ext/example/mod.rs", "src/ext/example/types.rs", "src/ext/example/serve.rs"] {
        assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
    }
    let lib = &files.iter().find(|(p, _)| p == Path::new("src/lib.rs")).expect("lib").1;
    assert!(lib.contains("pub mod ext;"), "{lib}");
    let methods = &files.iter().find(|(p, _)| p == Path::new("src/ext/example/methods.rs")).expect("methods").1;
    assert!(methods.contains("impl rpc::ToClient for ExampleConfirm {}"), "{methods}");
    assert!(methods.contains("impl rpc::ToAgent for ExampleGreet {}"), "{methods}");
}

/// The standalone crate of v1 with the example extension, built and tested (the generated test
/// checks the extension's markers against its table and side traits) with a test of its own: the
/// extension's `sessionId` is the crate's core `SessionId`, and a request routes by its wire name.
/// Built where `tests/old_schemas.rs` builds, with the same flags, so that the dependencies are
/// built once; with `unstable`, as a version's lenient helpers are all used only then.
#[test]
fn a_standalone_crate_with_an_extension_builds_and_routes() {
    let root = root();
    let dir = root.join("target/method-sides/acp-with-example");
    let (_, mut files) = acp_codegen::standalone_with(
        &root.join("schema/v1/schema.json"),
        &[root.join("schema/ext/example.json")],
        "acp-with-example",
        &root.join("support"),
        acp_codegen::emit::crates::Workspace::Own,
    )
    .expect("generates");
    files.push((
        PathBuf::from("tests/example.rs"),
        "use acp_with_example::ext::example::{self, methods};\n\
         use acp_with_example::support::rpc::Method;\n\n\
         #[test]\n\
         fn the_extension_uses_the_core_types() {\n    \
             let greet = example::GreetRequest::new(acp_with_example::SessionId::from(\"s\"), \"Ada\".into());\n    \
             let core: &acp_with_example::SessionId = &greet.session_id;\n    \
             assert_eq!(core.as_str(), \"s\");\n    \
             let raw = serde_json::value::to_raw_value(&greet).unwrap();\n    \
             let decoded = methods::agent::Request::decode(methods::ExampleGreet::METHOD, Some(&raw)).unwrap();\n    \
             assert_eq!(decoded, methods::agent::Request::ExampleGreet(greet));\n    \
             let wrong = methods::client::Request::decode(\"_example/greet\", Some(&raw)).unwrap();\n    \
             assert!(matches!(wrong, methods::client::Request::Ext { .. }));\n\
         }\n"
        .to_string(),
    ));
    for (path, text) in &files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a directory")).expect("mkdir");
        std::fs::write(&path, text).expect("write");
    }
    let output = std::process::Command::new(env!("CARGO"))
        .args(["test", "--quiet", "--features", "unstable", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", root.join("target/old-schemas/target"))
        .env("RUSTFLAGS", "-D warnings")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "the standalone crate with an extension does not build cleanly or its tests fail:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
