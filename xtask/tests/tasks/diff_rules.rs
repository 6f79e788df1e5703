//! `cargo xtask diff`: one test per rule on small schema pairs, in both directions where the
//! direction matters; then the real schemas (v1 → v2, and the published 2.0.0 → 2.4.0), the
//! outputs and the command's exit status.

use acp_codegen::diff::{self, Finding, Report, Rule, Severity};
use acp_codegen::ir::Protocol;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::process::Command;

// ---- building small schemas --------------------------------------------------------------

/// A schema file from `$defs`. Methods come from `x-method`/`x-side` and the name's suffix:
/// `…Request` is a request's params, `…Response` its result, `…Notification` a notification.
fn schema(defs: &Value) -> String {
    let defs = defs.as_object().expect("defs object");
    let refs = |suffix: &str| -> Vec<Value> {
        defs.iter()
            .filter(|(name, d)| name.ends_with(suffix) && d.get("x-method").is_some())
            .map(|(name, _)| json!({ "$ref": format!("#/$defs/{name}") }))
            .collect()
    };
    let mut envelopes = Vec::new();
    let requests = refs("Request");
    if !requests.is_empty() {
        envelopes.push(json!({
            "type": "object",
            "properties": { "id": {}, "method": { "type": "string" }, "params": { "anyOf": requests } }
        }));
    }
    let notifications = refs("Notification");
    if !notifications.is_empty() {
        envelopes.push(json!({
            "type": "object",
            "properties": { "method": { "type": "string" }, "params": { "anyOf": notifications } }
        }));
    }
    let responses = refs("Response");
    if !responses.is_empty() {
        envelopes.push(json!({ "type": "object", "properties": { "result": { "anyOf": responses } } }));
    }
    serde_json::to_string_pretty(&json!({ "anyOf": envelopes, "$defs": defs })).expect("serialises")
}

fn lower(name: &str, defs: &Value) -> Protocol {
    let doc = acp_codegen::load::parse(name, &schema(defs)).unwrap_or_else(|e| panic!("{name}: {e}"));
    acp_codegen::lower::lower(&doc).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn compare(old: &Value, new: &Value) -> Report {
    diff::diff(&lower("old.json", old), &lower("new.json", new))
}

/// Which way the payload `T` travels in [`ping`].
#[derive(Clone, Copy, Debug)]
enum To {
    /// In the params of `ping`, a request the agent handles: client → agent.
    Agent,
    /// In its result: agent → client.
    Client,
}

impl To {
    fn direction(self) -> &'static str {
        match self {
            To::Agent => "client → agent",
            To::Client => "agent → client",
        }
    }

    /// An old receiver rejects what a new sender sends.
    fn new_to_old(self) -> String {
        match self {
            To::Agent => "new clients → old agents".into(),
            To::Client => "new agents → old clients".into(),
        }
    }

    /// A new receiver rejects what an old sender sends.
    fn old_to_new(self) -> String {
        match self {
            To::Agent => "old clients → new agents".into(),
            To::Client => "old agents → new clients".into(),
        }
    }
}

const BOTH: [To; 2] = [To::Agent, To::Client];

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// `ping` (handled by the agent) carrying `{"payload": T}` one way and `{}` the other, with
/// `T` and any `extra` definitions.
fn ping(t: Value, to: To, extra: Value) -> Value {
    let with = object(json!({ "payload": { "$ref": "#/$defs/T" } }), &["payload"]);
    let without = object(json!({}), &[]);
    let (params, result) = match to {
        To::Agent => (with, without),
        To::Client => (without, with),
    };
    let mut defs = Map::new();
    defs.insert("PingRequest".into(), method(params, "ping", "agent"));
    defs.insert("PingResponse".into(), method(result, "ping", "agent"));
    defs.insert("T".into(), t);
    if let Value::Object(extra) = extra {
        defs.extend(extra);
    }
    Value::Object(defs)
}

fn method(mut def: Value, name: &str, side: &str) -> Value {
    def["x-method"] = json!(name);
    def["x-side"] = json!(side);
    def
}

/// Compares `T` → `T'` travelling each way and hands each report to `check`.
fn each_way(old: Value, new: Value, extra: Value, check: impl Fn(To, &Report)) {
    for to in BOTH {
        let report = compare(&ping(old.clone(), to, extra.clone()), &ping(new.clone(), to, extra.clone()));
        check(to, &report);
    }
}

/// The findings other than descriptions.
fn wire(r: &Report) -> Vec<&Finding> {
    r.findings.iter().filter(|f| f.severity != Severity::Docs).collect()
}

/// The only finding of `rule`.
fn only(r: &Report, rule: Rule) -> &Finding {
    let hits: Vec<&Finding> = r.findings.iter().filter(|f| f.rule == rule).collect();
    assert_eq!(hits.len(), 1, "expected one {} finding in {:#?}", rule.id(), r.findings);
    hits[0]
}

fn assert_finding(f: &Finding, severity: Severity, direction: &str, breaks: &[String]) {
    assert_eq!(f.severity, severity, "{f:#?}");
    assert_eq!(f.direction, direction, "{f:#?}");
    let mut expected: Vec<String> = breaks.to_vec();
    expected.sort();
    assert_eq!(f.breaks, expected, "{f:#?}");
}

fn string_enum(values: &[&str], open: bool) -> Value {
    let mut branches: Vec<Value> = values.iter().map(|v| json!({ "type": "string", "const": v })).collect();
    if open {
        branches.push(json!({ "title": "other", "type": "string" }));
    }
    json!({ "anyOf": branches })
}

fn tagged(value: &str, body: Option<&str>) -> Value {
    let mut b = json!({
        "type": "object",
        "properties": { "type": { "type": "string", "const": value } },
        "required": ["type"]
    });
    if let Some(body) = body {
        b["allOf"] = json!([{ "$ref": format!("#/$defs/{body}") }]);
    }
    b
}

fn catch_all() -> Value {
    json!({
        "title": "other",
        "type": "object",
        "properties": { "type": { "type": "string" } },
        "required": ["type"],
        "additionalProperties": true
    })
}

fn union(branches: Vec<Value>) -> Value {
    json!({ "anyOf": branches })
}

fn bodies() -> Value {
    json!({
        "Text": object(json!({ "text": { "type": "string" } }), &["text"]),
        "Image": object(json!({ "data": { "type": "string" } }), &["data"]),
        "Loose": object(json!({ "note": { "type": "string" } }), &[]),
    })
}

// ---- methods -----------------------------------------------------------------------------

fn base_methods() -> Map<String, Value> {
    let mut defs = Map::new();
    defs.insert("PingRequest".into(), method(object(json!({ "n": { "type": "integer" } }), &["n"]), "ping", "agent"));
    defs.insert("PingResponse".into(), method(object(json!({}), &[]), "ping", "agent"));
    defs
}

#[test]
fn method_added_is_info_on_either_side() {
    let old = Value::Object(base_methods());
    let mut new = base_methods();
    new.insert("PongRequest".into(), method(object(json!({}), &[]), "pong", "agent"));
    new.insert("PongResponse".into(), method(object(json!({}), &[]), "pong", "agent"));
    new.insert("ShoutNotification".into(), method(object(json!({}), &[]), "shout", "client"));
    let r = compare(&old, &Value::Object(new));
    let added: Vec<&Finding> = r.findings.iter().filter(|f| f.rule == Rule::MethodAdded).collect();
    assert_eq!(added.len(), 2, "{:#?}", r.findings);
    let pong = added.iter().find(|f| f.method == "pong").expect("pong");
    assert_finding(pong, Severity::Info, "client → agent", &[]);
    assert!(pong.message.contains("-32601"), "{}", pong.message);
    let shout = added.iter().find(|f| f.method == "shout").expect("shout");
    assert_finding(shout, Severity::Info, "agent → client", &[]);
    assert!(shout.message.contains("ignore"), "{}", shout.message);
}

#[test]
fn method_removed_breaks_old_senders() {
    let mut old = base_methods();
    old.insert("PongRequest".into(), method(object(json!({}), &[]), "pong", "agent"));
    old.insert("PongResponse".into(), method(object(json!({}), &[]), "pong", "agent"));
    old.insert("ShoutNotification".into(), method(object(json!({}), &[]), "shout", "client"));
    let r = compare(&Value::Object(old), &Value::Object(base_methods()));
    let removed: Vec<&Finding> = r.findings.iter().filter(|f| f.rule == Rule::MethodRemoved).collect();
    assert_eq!(removed.len(), 2);
    let pong = removed.iter().find(|f| f.method == "pong").expect("pong");
    assert_finding(pong, Severity::Breaking, "client → agent", &["old clients → new agents".into()]);
    let shout = removed.iter().find(|f| f.method == "shout").expect("shout");
    assert_finding(shout, Severity::Breaking, "agent → client", &["old agents → new clients".into()]);
}

#[test]
fn method_renamed_when_the_shape_is_the_same() {
    let old = Value::Object(base_methods());
    let mut new = Map::new();
    new.insert(
        "NetPingRequest".into(),
        method(object(json!({ "n": { "type": "integer" } }), &["n"]), "net/ping", "agent"),
    );
    new.insert("NetPingResponse".into(), method(object(json!({}), &[]), "net/ping", "agent"));
    let r = compare(&old, &Value::Object(new.clone()));
    let f = only(&r, Rule::MethodRenamed);
    let both = ["old clients → new agents".to_string(), "new clients → old agents".to_string()];
    assert_finding(f, Severity::Breaking, "client → agent", &both);
    assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("ping"), Some("net/ping")));
    // The params type got a new name too: a Rust-only rename, not a removal and an addition.
    let renamed = r.findings.iter().find(|f| f.rule == Rule::TypeRenamed).expect("type rename");
    assert_eq!(renamed.severity, Severity::Warning);
    assert!(r.findings.iter().all(|f| !matches!(f.rule, Rule::MethodAdded | Rule::MethodRemoved)));

    // Another shape is not a rename.
    new["NetPingRequest"] = method(object(json!({ "n": { "type": "string" } }), &["n"]), "net/ping", "agent");
    let r = compare(&old, &Value::Object(new));
    assert!(r.findings.iter().all(|f| f.rule != Rule::MethodRenamed));
    only(&r, Rule::MethodAdded);
    only(&r, Rule::MethodRemoved);
}

#[test]
fn method_side_changed_breaks_both_ways() {
    let old = Value::Object(base_methods());
    let mut new = Map::new();
    new.insert("PingRequest".into(), method(object(json!({ "n": { "type": "integer" } }), &["n"]), "ping", "client"));
    new.insert("PingResponse".into(), method(object(json!({}), &[]), "ping", "client"));
    let r = compare(&old, &Value::Object(new));
    let f = only(&r, Rule::MethodSideChanged);
    assert_eq!(f.severity, Severity::Breaking);
    assert_eq!(f.breaks, vec!["new agents → old clients".to_string(), "old clients → new agents".to_string()]);
    assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("agent"), Some("client")));
}

#[test]
fn method_kind_changed_breaks_both_ways() {
    let old = Value::Object(base_methods());
    let mut new = Map::new();
    new.insert(
        "PingNotification".into(),
        method(object(json!({ "n": { "type": "integer" } }), &["n"]), "ping", "agent"),
    );
    let r = compare(&old, &Value::Object(new));
    let f = only(&r, Rule::MethodKindChanged);
    assert_finding(
        f,
        Severity::Breaking,
        "client → agent",
        &["new clients → old agents".into(), "old clients → new agents".into()],
    );
    assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("request"), Some("notification")));
}

#[test]
fn a_request_and_a_notification_of_one_name_are_told_apart() {
    let defs = |swap: bool| {
        let mut defs = base_methods();
        let (a, b) = if swap { ("string", "integer") } else { ("integer", "integer") };
        defs.insert("PingNotification".into(), method(object(json!({ "n": { "type": a } }), &["n"]), "ping", "agent"));
        defs["PingRequest"] = method(object(json!({ "n": { "type": b } }), &["n"]), "ping", "agent");
        Value::Object(defs)
    };
    let r = compare(&defs(false), &defs(true));
    let f = only(&r, Rule::TypeChanged);
    assert_eq!(f.path(), "ping (notification) → PingNotification.n");
    assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
}

#[test]
fn protocol_methods_go_both_ways() {
    let notification = |required: &[&str]| {
        let mut defs = Map::new();
        defs.insert(
            "CancelRequestNotification".into(),
            method(
                object(json!({ "requestId": { "type": "string" }, "reason": { "type": "string" } }), required),
                "$/cancel_request",
                "protocol",
            ),
        );
        Value::Object(defs)
    };
    let r = compare(&notification(&["requestId"]), &notification(&["requestId", "reason"]));
    let f = only(&r, Rule::FieldBecameRequired);
    assert_finding(
        f,
        Severity::Breaking,
        "agent ↔ client",
        &["old agents → new clients".into(), "old clients → new agents".into()],
    );
}

// ---- types -------------------------------------------------------------------------------

#[test]
fn type_renamed_is_a_rust_warning_without_wire_change() {
    let body = object(json!({ "x": { "type": "string" } }), &["x"]);
    for to in BOTH {
        let old = ping(object(json!({ "inner": { "$ref": "#/$defs/Old" } }), &["inner"]), to, json!({ "Old": body }));
        let new = ping(object(json!({ "inner": { "$ref": "#/$defs/New" } }), &["inner"]), to, json!({ "New": body }));
        let r = compare(&old, &new);
        let f = only(&r, Rule::TypeRenamed);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("Old"), Some("New")));
        assert!(f.rust.as_deref().is_some_and(|r| r.contains("renamed")), "{f:#?}");
        assert_eq!(wire(&r).len(), 1, "{:#?}", r.findings);
    }
}

#[test]
fn ref_all_of_ref_and_reordered_variants_are_the_same() {
    let old = object(json!({ "inner": { "$ref": "#/$defs/Body" }, "u": { "$ref": "#/$defs/U" } }), &["inner", "u"]);
    let new = object(
        json!({ "inner": { "allOf": [{ "$ref": "#/$defs/Body" }] }, "u": { "$ref": "#/$defs/U" } }),
        &["inner", "u"],
    );
    let body = object(json!({ "x": { "type": "string" } }), &["x"]);
    let u_old = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image"))]);
    let u_new = union(vec![tagged("image", Some("Image")), tagged("text", Some("Text"))]);
    for to in BOTH {
        let mut extra_old = bodies();
        extra_old["Body"] = body.clone();
        extra_old["U"] = u_old.clone();
        let mut extra_new = bodies();
        extra_new["Body"] = body.clone();
        extra_new["U"] = u_new.clone();
        let r = compare(&ping(old.clone(), to, extra_old), &ping(new.clone(), to, extra_new));
        assert!(r.findings.is_empty(), "{:#?}", r.findings);
    }
}

#[test]
fn type_changed_breaks_both_ways() {
    let old = object(json!({ "v": { "type": "string" } }), &["v"]);
    let new = object(json!({ "v": { "type": "boolean" } }), &["v"]);
    each_way(old, new, json!({}), |to, r| {
        let f = only(r, Rule::TypeChanged);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old(), to.old_to_new()]);
        assert_eq!(f.location, "T.v");
        assert_eq!(f.path(), "ping → T.v");
    });
}

#[test]
fn type_widened_breaks_old_receivers() {
    let old = object(json!({ "v": { "type": "integer", "format": "int32" } }), &["v"]);
    let new = object(json!({ "v": { "type": "integer", "format": "int64" } }), &["v"]);
    each_way(old.clone(), new.clone(), json!({}), |to, r| {
        assert_finding(only(r, Rule::TypeWidened), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    });
    // A closed enum opened up to any string is a widening too.
    let old = object(json!({ "v": { "$ref": "#/$defs/E" } }), &["v"]);
    let new = object(json!({ "v": { "type": "string" } }), &["v"]);
    each_way(old, new, json!({ "E": string_enum(&["a"], false) }), |to, r| {
        assert_finding(only(r, Rule::TypeWidened), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    });
}

#[test]
fn type_narrowed_breaks_new_receivers() {
    let old = object(json!({ "v": { "type": "number" } }), &["v"]);
    let new = object(json!({ "v": { "type": "integer" } }), &["v"]);
    each_way(old, new, json!({}), |to, r| {
        assert_finding(only(r, Rule::TypeNarrowed), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
    let old = object(json!({ "v": {} }), &["v"]);
    let new = object(json!({ "v": { "type": "object", "additionalProperties": { "type": "string" } } }), &["v"]);
    each_way(old, new, json!({}), |to, r| {
        assert_finding(only(r, Rule::TypeNarrowed), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
}

#[test]
fn rust_type_changed_is_a_warning() {
    let old = object(json!({ "id": { "type": "string" } }), &["id"]);
    let new = object(json!({ "id": { "$ref": "#/$defs/SessionId" } }), &["id"]);
    each_way(old, new, json!({ "SessionId": { "type": "string" } }), |to, r| {
        let f = only(r, Rule::RustTypeChanged);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("string"), Some("SessionId")));
        assert_eq!(wire(r).len(), 1);
    });
}

// ---- fields ------------------------------------------------------------------------------

#[test]
fn required_field_added_breaks_old_senders() {
    let old = object(json!({ "a": { "type": "string" } }), &["a"]);
    let new = object(json!({ "a": { "type": "string" }, "b": { "type": "string" } }), &["a", "b"]);
    each_way(old, new, json!({}), |to, r| {
        let f = only(r, Rule::RequiredFieldAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.old_to_new()]);
        assert_eq!(f.location, "T.b");
        assert!(f.rust.as_deref().is_some_and(|r| r.contains("T::new")), "{f:#?}");
    });
}

#[test]
fn optional_field_added_is_info() {
    let old = object(json!({ "a": { "type": "string" } }), &["a"]);
    let new = object(json!({ "a": { "type": "string" }, "b": { "type": ["string", "null"] } }), &["a"]);
    each_way(old, new, json!({}), |to, r| {
        assert_finding(only(r, Rule::OptionalFieldAdded), Severity::Info, to.direction(), &[]);
        assert_eq!(wire(r).len(), 1);
    });
}

#[test]
fn field_removed_breaks_only_when_it_was_required() {
    let old = object(json!({ "a": { "type": "string" }, "b": { "type": "string" } }), &["a", "b"]);
    let new = object(json!({ "a": { "type": "string" } }), &["a"]);
    each_way(old, new, json!({}), |to, r| {
        assert_finding(only(r, Rule::FieldRemoved), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    });
    let old = object(json!({ "a": { "type": "string" }, "b": { "type": "string" } }), &["a"]);
    let new = object(json!({ "a": { "type": "string" } }), &["a"]);
    each_way(old, new, json!({}), |to, r| {
        let f = only(r, Rule::FieldRemoved);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert!(f.rust.as_deref().is_some_and(|r| r.contains("gone")), "{f:#?}");
    });
}

#[test]
fn field_became_required_breaks_old_senders() {
    let old = object(json!({ "a": { "type": "string" } }), &[]);
    let new = object(json!({ "a": { "type": "string" } }), &["a"]);
    each_way(old, new, json!({}), |to, r| {
        let f = only(r, Rule::FieldBecameRequired);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.old_to_new()]);
        assert_eq!(f.rust.as_deref(), Some("`T::a` changes from `Option<T>` to `T`"));
    });
}

#[test]
fn field_became_optional_breaks_old_receivers() {
    let old = object(json!({ "a": { "type": "string" } }), &["a"]);
    let new = object(json!({ "a": { "type": "string" } }), &[]);
    each_way(old, new, json!({}), |to, r| {
        assert_finding(only(r, Rule::FieldBecameOptional), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    });
}

#[test]
fn nullable_changed_breaks_the_side_that_rejects_null() {
    let plain = object(json!({ "a": { "type": "string" } }), &["a"]);
    let nullable = object(json!({ "a": { "type": ["string", "null"] } }), &["a"]);
    each_way(plain.clone(), nullable.clone(), json!({}), |to, r| {
        let f = only(r, Rule::NullableChanged);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old()]);
        assert!(f.message.contains("may now be null"), "{}", f.message);
    });
    each_way(nullable, plain, json!({}), |to, r| {
        assert_finding(only(r, Rule::NullableChanged), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
    // An old receiver that defaults a null instead of failing tolerates it.
    let lenient = object(json!({ "a": { "type": "string", "x-deserialize-default-on-null": true } }), &[]);
    let patch = object(json!({ "a": { "type": ["string", "null"], "x-deserialize-default-on-null": true } }), &[]);
    each_way(lenient, patch, json!({}), |to, r| {
        let f = only(r, Rule::NullableChanged);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert_eq!(f.tolerated, vec![to.new_to_old()]);
    });
}

#[test]
fn default_changed_is_a_warning() {
    let optional = object(json!({ "n": { "type": "integer" } }), &[]);
    let one = object(json!({ "n": { "type": "integer", "default": 1 } }), &[]);
    let two = object(json!({ "n": { "type": "integer", "default": 2 } }), &[]);
    each_way(one, two, json!({}), |to, r| {
        let f = only(r, Rule::DefaultChanged);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert!(f.message.contains("from 1 to 2"), "{}", f.message);
    });
    // A default where there was none: the Rust field changes from `Option<T>` to `Defaulted<T>`.
    each_way(optional, object(json!({ "n": { "type": "integer", "default": 1 } }), &[]), json!({}), |to, r| {
        let f = only(r, Rule::DefaultChanged);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert!(f.rust.as_deref().is_some_and(|r| r.contains("Defaulted<T>")), "{f:#?}");
    });
}

#[test]
fn lenient_changed_is_info_when_added_and_a_warning_when_removed() {
    let strict = object(json!({ "a": { "type": "string" } }), &["a"]);
    let lenient = object(json!({ "a": { "type": "string", "x-deserialize-default-on-error": true } }), &["a"]);
    each_way(strict.clone(), lenient.clone(), json!({}), |to, r| {
        assert_finding(only(r, Rule::LenientChanged), Severity::Info, to.direction(), &[]);
        assert_eq!(wire(r).len(), 1);
    });
    each_way(lenient, strict, json!({}), |to, r| {
        assert_finding(only(r, Rule::LenientChanged), Severity::Warning, to.direction(), &[]);
    });
}

#[test]
fn lenient_decoding_of_the_old_receiver_tolerates_a_new_value() {
    let t = |e: &str| {
        object(json!({ "e": { "$ref": format!("#/$defs/{e}"), "x-deserialize-default-on-error": true } }), &["e"])
    };
    let extra = |values: &[&str]| json!({ "E": string_enum(values, false) });
    for to in BOTH {
        let r = compare(&ping(t("E"), to, extra(&["a"])), &ping(t("E"), to, extra(&["a", "b"])));
        let f = only(&r, Rule::EnumValueAdded);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert_eq!(f.tolerated, vec![to.new_to_old()]);
    }
    // The same value reached without lenient decoding breaks.
    let strict = object(json!({ "e": { "$ref": "#/$defs/E" } }), &["e"]);
    for to in BOTH {
        let r = compare(&ping(strict.clone(), to, extra(&["a"])), &ping(strict.clone(), to, extra(&["a", "b"])));
        let f = only(&r, Rule::EnumValueAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old()]);
        assert!(f.tolerated.is_empty());
    }
    // Reached both with and without lenient decoding: the exposed path decides.
    let both = object(
        json!({
            "lenient": { "$ref": "#/$defs/E", "x-deserialize-default-on-error": true },
            "strict": { "$ref": "#/$defs/E" }
        }),
        &["lenient", "strict"],
    );
    for to in BOTH {
        let r = compare(&ping(both.clone(), to, extra(&["a"])), &ping(both.clone(), to, extra(&["a", "b"])));
        assert_finding(only(&r, Rule::EnumValueAdded), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    }
}

// ---- enums and unions --------------------------------------------------------------------

fn holding(target: &str) -> Value {
    object(json!({ "v": { "$ref": format!("#/$defs/{target}") } }), &["v"])
}

/// Compares `T = {v: E}` with E changing from `old` to `new`.
fn enum_case(old: Value, new: Value, check: impl Fn(To, &Report)) {
    for to in BOTH {
        let r = compare(&ping(holding("E"), to, json!({ "E": old })), &ping(holding("E"), to, json!({ "E": new })));
        check(to, &r);
    }
}

#[test]
fn enum_value_added_breaks_only_closed_enums() {
    enum_case(string_enum(&["a"], false), string_enum(&["a", "b"], false), |to, r| {
        let f = only(r, Rule::EnumValueAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old()]);
        assert_eq!(f.location, "E::b");
    });
    enum_case(string_enum(&["a"], true), string_enum(&["a", "b"], true), |to, r| {
        let f = only(r, Rule::EnumValueAdded);
        assert_finding(f, Severity::Info, to.direction(), &[]);
        assert!(f.rust.as_deref().is_some_and(|r| r.contains("arm")), "{f:#?}");
    });
}

#[test]
fn enum_value_removed_breaks_only_closed_enums() {
    enum_case(string_enum(&["a", "b"], false), string_enum(&["a"], false), |to, r| {
        assert_finding(only(r, Rule::EnumValueRemoved), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
    enum_case(string_enum(&["a", "b"], true), string_enum(&["a"], true), |to, r| {
        assert_finding(only(r, Rule::EnumValueRemoved), Severity::Warning, to.direction(), &[]);
    });
}

#[test]
fn integer_enum_values_are_matched_by_value() {
    let codes = |values: &[i64]| {
        let branches: Vec<Value> = values
            .iter()
            .map(|v| json!({ "title": format!("Code{}", v.unsigned_abs()), "type": "integer", "format": "int32", "const": v }))
            .collect();
        json!({ "anyOf": branches })
    };
    enum_case(codes(&[-32700, -32600]), codes(&[-32600, -32700, -32601]), |to, r| {
        let f = only(r, Rule::EnumValueAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old()]);
        assert_eq!(f.location, "E::-32601");
    });
}

#[test]
fn enum_opened_is_compatible_and_enum_closed_breaks_new_receivers() {
    enum_case(string_enum(&["a"], false), string_enum(&["a"], true), |to, r| {
        // In Rust the schema's catch-all takes the place of the one the generator added, by name.
        let f = only(r, Rule::EnumOpened);
        assert_finding(f, Severity::Info, to.direction(), &[]);
        assert_eq!(f.rust, None, "{f:#?}");
    });
    let rest = json!({ "anyOf": [{ "type": "string", "const": "a" }, { "title": "rest", "type": "string" }] });
    enum_case(string_enum(&["a"], false), rest, |to, r| {
        let f = only(r, Rule::EnumOpened);
        assert_finding(f, Severity::Warning, to.direction(), &[]);
        assert_eq!(f.rust.as_deref(), Some("the catch-all variant `E::Other` is now `E::Rest`"), "{f:#?}");
    });
    union_case(
        union(vec![tagged("text", Some("Text"))]),
        union(vec![tagged("text", Some("Text")), catch_all()]),
        |to, r| {
            assert_finding(only(r, Rule::EnumOpened), Severity::Info, to.direction(), &[]);
        },
    );
    enum_case(string_enum(&["a"], true), string_enum(&["a"], false), |to, r| {
        assert_finding(only(r, Rule::EnumClosed), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
}

fn union_case(old: Value, new: Value, check: impl Fn(To, &Report)) {
    for to in BOTH {
        let mut eo = bodies();
        eo["E"] = old.clone();
        let mut en = bodies();
        en["E"] = new.clone();
        check(to, &compare(&ping(holding("E"), to, eo), &ping(holding("E"), to, en)));
    }
}

#[test]
fn variant_added_breaks_unless_old_receivers_have_a_catch_all() {
    let closed_old = union(vec![tagged("text", Some("Text"))]);
    let closed_new = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image"))]);
    union_case(closed_old, closed_new, |to, r| {
        let f = only(r, Rule::VariantAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old()]);
        assert_eq!(f.location, "E::image");
    });
    let open_old = union(vec![tagged("text", Some("Text")), catch_all()]);
    let open_new = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image")), catch_all()]);
    union_case(open_old, open_new, |to, r| {
        assert_finding(only(r, Rule::VariantAdded), Severity::Info, to.direction(), &[]);
    });
}

#[test]
fn variant_removed_breaks_unless_new_receivers_have_a_catch_all() {
    let closed_old = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image"))]);
    let closed_new = union(vec![tagged("text", Some("Text"))]);
    union_case(closed_old, closed_new, |to, r| {
        assert_finding(only(r, Rule::VariantRemoved), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
    let open_old = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image")), catch_all()]);
    let open_new = union(vec![tagged("text", Some("Text")), catch_all()]);
    union_case(open_old, open_new, |to, r| {
        assert_finding(only(r, Rule::VariantRemoved), Severity::Warning, to.direction(), &[]);
    });
    // Untagged variants are matched by the type they hold, not by position.
    let old = union(vec![json!({ "$ref": "#/$defs/Text" }), json!({ "type": "string" }), json!({ "type": "null" })]);
    let new = union(vec![json!({ "type": "string" }), json!({ "$ref": "#/$defs/Text" })]);
    union_case(old, new, |to, r| {
        let f = only(r, Rule::VariantRemoved);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.old_to_new()]);
        assert_eq!(f.location, "E::Null");
        assert_eq!(wire(r).len(), 1, "{:#?}", r.findings);
    });
}

#[test]
fn variant_body_changed_breaks_when_the_body_requires_fields() {
    union_case(union(vec![tagged("ping", None)]), union(vec![tagged("ping", Some("Text"))]), |to, r| {
        assert_finding(only(r, Rule::VariantBodyChanged), Severity::Breaking, to.direction(), &[to.old_to_new()]);
    });
    union_case(union(vec![tagged("ping", Some("Text"))]), union(vec![tagged("ping", None)]), |to, r| {
        assert_finding(only(r, Rule::VariantBodyChanged), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    });
    union_case(union(vec![tagged("ping", None)]), union(vec![tagged("ping", Some("Loose"))]), |to, r| {
        assert_finding(only(r, Rule::VariantBodyChanged), Severity::Warning, to.direction(), &[]);
    });
}

#[test]
fn tag_added_to_an_untagged_variant_or_a_struct() {
    // An untagged variant became tagged: old senders omit the tag; old receivers without a
    // catch-all do not know it.
    let old =
        union(vec![tagged("text", Some("Text")), json!({ "title": "image", "allOf": [{ "$ref": "#/$defs/Image" }] })]);
    let new = union(vec![tagged("text", Some("Text")), tagged("image", Some("Image"))]);
    union_case(old.clone(), new.clone(), |to, r| {
        let f = only(r, Rule::TagAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old(), to.old_to_new()]);
        assert_eq!(wire(r).len(), 1, "{:#?}", r.findings);
    });
    union_case(new, old, |to, r| {
        let f = only(r, Rule::TagRemoved);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.new_to_old(), to.old_to_new()]);
    });
    // A struct became the body of a tagged variant (its fields unchanged): only old senders,
    // which omit the tag, break.
    for to in BOTH {
        let old = ping(holding("Image"), to, bodies());
        let mut extra = bodies();
        extra["Wrapped"] = union(vec![tagged("image", Some("Image")), catch_all()]);
        let new = ping(holding("Wrapped"), to, extra);
        let r = compare(&old, &new);
        let f = only(&r, Rule::TagAdded);
        assert_finding(f, Severity::Breaking, to.direction(), &[to.old_to_new()]);
        assert_eq!(f.location, "Wrapped::image");
        let r = compare(&new, &old);
        assert_finding(only(&r, Rule::TagRemoved), Severity::Breaking, to.direction(), &[to.new_to_old()]);
    }
}

#[test]
fn union_tag_changed_breaks_both_ways() {
    let with_tag = |tag: &str| {
        let branch = |v: &str| {
            json!({
                "type": "object",
                "properties": { tag: { "type": "string", "const": v } },
                "required": [tag],
                "allOf": [{ "$ref": "#/$defs/Text" }]
            })
        };
        union(vec![branch("a"), branch("b")])
    };
    union_case(with_tag("type"), with_tag("kind"), |to, r| {
        assert_finding(
            only(r, Rule::UnionTagChanged),
            Severity::Breaking,
            to.direction(),
            &[to.new_to_old(), to.old_to_new()],
        );
    });
}

// ---- descriptions, stability, reachability, recursion -------------------------------------

#[test]
fn docs_changed_is_docs_only() {
    let old = object(json!({ "a": { "type": "string", "description": "Old words." } }), &["a"]);
    let new = object(json!({ "a": { "type": "string", "description": "New words." } }), &["a"]);
    each_way(old, new, json!({}), |to, r| {
        let f = only(r, Rule::DocsChanged);
        assert_finding(f, Severity::Docs, to.direction(), &[]);
        assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("Old words."), Some("New words.")));
        assert!(wire(r).is_empty());
    });
}

#[test]
fn stability_changed_is_read_from_descriptions() {
    let marked = "**UNSTABLE**\n\nThis capability is not part of the spec yet, and may be removed or changed at any \
                  point.\n\nA field.";
    let old = object(json!({ "a": { "type": "string", "description": marked } }), &[]);
    let new = object(json!({ "a": { "type": "string", "description": "A field." } }), &[]);
    each_way(old.clone(), new.clone(), json!({}), |to, r| {
        let f = only(r, Rule::StabilityChanged);
        assert_finding(f, Severity::Info, to.direction(), &[]);
        assert_eq!((f.old.as_deref(), f.new.as_deref()), (Some("unstable"), Some("stable")));
        // The marker is not also a description change.
        assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
    });
    each_way(new, old, json!({}), |to, r| {
        assert_finding(only(r, Rule::StabilityChanged), Severity::Warning, to.direction(), &[]);
    });
}

#[test]
fn unreachable_types_are_listed_apart() {
    let t = object(json!({ "a": { "type": "string" } }), &["a"]);
    let old = ping(t.clone(), To::Agent, json!({ "Loner": string_enum(&["x"], false) }));
    let new = ping(t, To::Agent, json!({ "Loner": string_enum(&["x", "y"], false) }));
    let r = compare(&old, &new);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.unreachable_old, vec!["Loner".to_string()]);
    assert_eq!(r.unreachable_new, vec!["Loner".to_string()]);
}

#[test]
fn recursive_types_terminate_and_report_once() {
    let node = |extra: bool| {
        let mut props = json!({ "children": { "type": "array", "items": { "$ref": "#/$defs/T" } } });
        if extra {
            props["label"] = json!({ "type": "string" });
        }
        object(props, &["children"])
    };
    each_way(node(false), node(true), json!({}), |to, r| {
        let f = only(r, Rule::OptionalFieldAdded);
        assert_finding(f, Severity::Info, to.direction(), &[]);
        assert_eq!(f.location, "T.label");
    });
}

#[test]
fn a_change_reached_both_ways_and_by_several_methods_is_one_finding() {
    let mut defs = Map::new();
    let carrying = object(json!({ "t": { "$ref": "#/$defs/T" } }), &["t"]);
    defs.insert("PingRequest".into(), method(carrying.clone(), "ping", "agent"));
    defs.insert("PingResponse".into(), method(carrying.clone(), "ping", "agent"));
    defs.insert("ShoutNotification".into(), method(carrying, "shout", "client"));
    let mut old = defs.clone();
    old.insert("T".into(), object(json!({ "a": { "type": "string" } }), &[]));
    let mut new = defs;
    new.insert("T".into(), object(json!({ "a": { "type": "string" } }), &["a"]));
    let r = compare(&Value::Object(old), &Value::Object(new));
    let f = only(&r, Rule::FieldBecameRequired);
    assert_finding(
        f,
        Severity::Breaking,
        "agent ↔ client",
        &["old agents → new clients".into(), "old clients → new agents".into()],
    );
    assert_eq!(f.methods, vec!["ping".to_string(), "shout".to_string()]);
    assert_eq!(f.method, "ping");
}

#[test]
fn every_rule_has_a_distinct_kebab_case_id_and_a_row_in_the_guide() {
    let ids: BTreeSet<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
    assert_eq!(ids.len(), Rule::ALL.len());
    // The rules table is in the guide's chapter on the diff.
    let chapter = xtask::project_root().join("docs/src/generator/diff.md");
    let docs = std::fs::read_to_string(&chapter).expect("the guide's chapter on the diff");
    for id in ids {
        assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{id}");
        assert!(docs.contains(&format!("| `{id}` |")), "the rules table of {} lacks `{id}`", chapter.display());
    }
}

// ---- outputs -----------------------------------------------------------------------------

/// One breaking change (`c` required), one warning (`b` removed), one description.
fn sample() -> Report {
    let old = object(json!({ "a": { "type": "string" }, "b": { "type": "string" } }), &["a"]);
    let new =
        object(json!({ "a": { "type": "string", "description": "An a." }, "c": { "type": "integer" } }), &["a", "c"]);
    compare(&ping(old, To::Agent, json!({})), &ping(new, To::Agent, json!({})))
}

#[test]
fn json_output_has_the_documented_shape() {
    let value: Value = serde_json::from_str(&diff::render::json(&sample())).expect("valid JSON");
    assert_eq!(value["old"], "old.json");
    assert_eq!(value["new"], "new.json");
    let findings = value["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 3);
    for f in findings {
        for key in ["id", "severity", "direction", "path", "message", "old", "new", "breaks", "rust", "methods"] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
    }
    let first = &findings[0];
    assert_eq!(first["id"], "required-field-added");
    assert_eq!(first["severity"], "breaking");
    assert_eq!(first["direction"], "client → agent");
    assert_eq!(first["path"], "ping → T.c");
    assert_eq!(first["breaks"], json!(["old clients → new agents"]));
    assert_eq!(value["summary"], json!({ "breaking": 1, "warning": 1, "info": 0, "docs": 1 }));
}

#[test]
fn markdown_and_text_put_breaking_first() {
    let r = sample();
    let md = diff::render::markdown(&r);
    let breaking = md.find("## Breaking changes").expect("breaking section");
    let warnings = md.find("## Warnings").expect("warnings section");
    let docs = md.find("## Documentation only").expect("docs section");
    assert!(breaking < warnings && warnings < docs, "{md}");
    assert!(md.contains("### `ping`"), "{md}");
    assert!(md.contains("- **required-field-added** `T.c` (client → agent)"), "{md}");
    assert!(md.contains("Breaks *old clients → new agents*."), "{md}");
    let text = diff::render::text(&r);
    assert!(text.starts_with("old.json → new.json: 1 breaking, 1 warning, 0 info, 1 docs\n"), "{text}");
    assert!(text.find("BREAKING").expect("breaking") < text.find("WARNINGS").expect("warnings"), "{text}");
    assert!(text.contains("breaks: old clients → new agents"), "{text}");
}

// ---- the real schemas --------------------------------------------------------------------

fn load(rel: &str) -> Protocol {
    acp_codegen::load(&xtask::project_root().join(rel), rel).expect("lowers")
}

#[test]
fn v1_to_v2_is_deterministic_and_readable() {
    let (v1, v2) = (load("schema/v1/schema.json"), load("schema/v2/schema.json"));
    let first = diff::render::markdown(&diff::diff(&v1, &v2));
    assert_eq!(first, diff::render::markdown(&diff::diff(&v1, &v2)));
    let r = diff::diff(&v1, &v2);
    let has = |rule: Rule, path: &str| r.findings.iter().any(|f| f.rule == rule && f.path() == path);
    // Known v1 → v2 migrations, each classified by rule and place.
    assert!(has(Rule::MethodRenamed, "auth/login"), "authenticate → auth/login");
    assert!(has(Rule::MethodRemoved, "session/load"));
    assert!(has(Rule::MethodAdded, "tool_call/cancel"));
    assert!(has(Rule::TypeRenamed, "session/update → UpdateSessionNotification"));
    assert!(has(Rule::RequiredFieldAdded, "session/prompt → PromptResponse.messageId"));
    assert!(has(Rule::TagAdded, "session/new → McpServer::stdio"));
    // Every finding on a method that exists on both sides names a type and member.
    assert!(r.findings.iter().all(|f| f.rule.id().starts_with("method-") || !f.location.is_empty()));
}

#[test]
fn identical_revisions_have_no_findings() {
    for rel in ["schema/v1/schema.json", "schema/v2/schema.unstable.json"] {
        let p = load(rel);
        let r = diff::diff(&p, &p);
        assert!(r.findings.is_empty(), "{rel}: {:#?}", &r.findings[..r.findings.len().min(3)]);
    }
}

/// `$defs` entries whose JSON differs between two schema files.
fn changed_defs(old: &std::path::Path, new: &std::path::Path) -> Vec<String> {
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("JSON")
    };
    let (a, b) = (read(old), read(new));
    let (a, b) = (a["$defs"].as_object().expect("defs").clone(), b["$defs"].as_object().expect("defs").clone());
    a.iter().filter(|(k, v)| b.get(*k).is_some_and(|w| w != *v)).map(|(k, _)| k.clone()).collect()
}

/// A published schema file: the committed one when `schema/` pins that version, else fetched by
/// the project's own command into `.cache/schemas`.
fn published(version: &str, rel: &str) -> std::path::PathBuf {
    let root = xtask::project_root();
    if xtask::schema::pinned_version(&root).is_ok_and(|v| v == version) {
        return root.join(rel);
    }
    let cache = root.join(".cache/schemas");
    let files = xtask::schema::fetch_to_cache(version, &cache).unwrap_or_else(|e| panic!("fetch {version}: {e}"));
    files.into_iter().find(|f| f.ends_with(rel)).unwrap_or_else(|| panic!("{version} ships no {rel}"))
}

/// 2.0.0 → 2.4.0 of `schema/v1/schema.json`: 143 definitions changed, every one in descriptions
/// or lenient-decoding annotations only, so nothing breaks; each changed definition that a
/// method reaches shows up in the findings.
#[test]
fn published_v1_2_0_0_to_2_4_0_breaks_nothing() {
    let (old_path, new_path) =
        (published("2.0.0", "schema/v1/schema.json"), published("2.4.0", "schema/v1/schema.json"));
    let changed = changed_defs(&old_path, &new_path);
    assert_eq!(changed.len(), 143);
    let old = acp_codegen::load(&old_path, "2.0.0/schema/v1/schema.json").expect("lowers");
    let new = acp_codegen::load(&new_path, "2.4.0/schema/v1/schema.json").expect("lowers");
    let r = diff::diff(&old, &new);
    assert_eq!(
        r.count(Severity::Breaking),
        0,
        "{:#?}",
        r.findings.iter().filter(|f| f.severity == Severity::Breaking).collect::<Vec<_>>()
    );
    assert_eq!(r.count(Severity::Warning), 0);
    assert!(r.findings.iter().all(|f| matches!(f.rule, Rule::DocsChanged | Rule::LenientChanged)), "{:#?}", r.findings);
    let mentioned: BTreeSet<&str> = r
        .findings
        .iter()
        .map(|f| f.location.split(['.', ':']).next().unwrap_or_default())
        .chain(r.unreachable_old.iter().map(String::as_str))
        .collect();
    let missing: Vec<&String> = changed.iter().filter(|d| !mentioned.contains(d.as_str())).collect();
    assert!(missing.is_empty(), "changed but not reported: {missing:?}");
}

/// 2.0.0 → 2.4.0 of `schema/v2/schema.json`: each breaking finding was checked against the JSON.
#[test]
fn published_v2_2_0_0_to_2_4_0_breaking_findings_are_the_known_ones() {
    let (old_path, new_path) =
        (published("2.0.0", "schema/v2/schema.json"), published("2.4.0", "schema/v2/schema.json"));
    let old = acp_codegen::load(&old_path, "2.0.0/schema/v2/schema.json").expect("lowers");
    let new = acp_codegen::load(&new_path, "2.4.0/schema/v2/schema.json").expect("lowers");
    let r = diff::diff(&old, &new);
    let breaking: Vec<(String, String, String)> = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Breaking)
        .map(|f| (f.rule.id().to_string(), f.location.clone(), f.breaks.join("; ")))
        .collect();
    let expected = [
        // `"id": null` is no longer a valid request id.
        ("variant-removed", "RequestId::Null", "old agents → new clients; old clients → new agents"),
        // A new `{}` branch: any value, which old agents reject.
        ("variant-added", "ElicitationContentValue::Other", "new clients → old agents"),
        // `default` dropped and the properties listed in `required`.
        ("field-became-required", "ElicitationSchema.properties", "old agents → new clients"),
        ("field-became-required", "ElicitationSchema.type", "old agents → new clients"),
    ];
    let expected: Vec<(String, String, String)> =
        expected.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
    assert_eq!(breaking, expected);
    assert!(r.findings.iter().any(|f| f.rule == Rule::MethodAdded && f.method == "tool_call/cancel"));
    assert!(r.findings.iter().any(|f| f.rule == Rule::TypeRenamed && f.old.as_deref() == Some("AuthCapabilities")));
}

// ---- the command -------------------------------------------------------------------------

fn xtask(args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_xtask")).args(args).current_dir(xtask::project_root()).output().expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn exit_status_follows_fail_on() {
    let (code, stdout, _) = xtask(&["diff", "v1", "v2"]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("schema/v1/schema.json → schema/v2/schema.json: "), "{stdout}");
    assert_eq!(xtask(&["diff", "v1", "v2", "--fail-on", "breaking"]).0, 1);
    assert_eq!(xtask(&["diff", "v1", "v1", "--fail-on", "warning"]).0, 0);
    let (code, stdout, _) =
        xtask(&["diff", "v1", "HEAD:schema/v1/schema.json", "--format", "json", "--fail-on", "warning"]);
    assert_eq!(code, 0, "{stdout}");
    let value: Value = serde_json::from_str(&stdout).expect("json");
    assert_eq!(value["findings"], json!([]));
    assert_eq!(value["new"], "HEAD:schema/v1/schema.json");
}

#[test]
fn bad_input_exits_with_2_and_names_the_place() {
    let (code, _, stderr) = xtask(&["diff", "no-such.json", "v2"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no-such.json: no such file"), "{stderr}");
    let (code, _, stderr) = xtask(&["diff", "v1", "no-such-rev-xyz:schema/v1/schema.json"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("git show"), "{stderr}");
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"$defs": {"T": {"type": "object", "patternProperties": {}}}}"#).expect("write");
    let (code, _, stderr) = xtask(&["diff", bad.to_str().expect("utf-8"), "v2"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("#/$defs/T/patternProperties: unsupported keyword"), "{stderr}");
    assert_eq!(xtask(&["diff", "v1", "v2", "--format", "yaml"]).0, 2);
}

/// The committed report between the two versions of `schema/`.
const MIGRATION_REPORT: &str = "schema/v1-to-v2.md";

#[test]
fn the_committed_migration_report_is_checked_for_freshness() {
    let root = xtask::project_root();
    let files = acp_codegen::generate(&root).expect("generates").files;
    let report = files.get(std::path::Path::new(MIGRATION_REPORT)).expect("generated");
    assert!(report.starts_with("<!-- @generated by `cargo xtask codegen`"), "{report}");
    let committed = std::fs::read_to_string(root.join(MIGRATION_REPORT)).expect("committed");
    assert_eq!(&committed, report, "run `cargo xtask codegen`");
    // A hand edit is caught by the same check as the generated code.
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["schema", "generated"] {
        copy_tree(&root.join(sub), &dir.path().join(sub));
    }
    let md = dir.path().join(MIGRATION_REPORT);
    std::fs::write(&md, committed.replacen("## Breaking changes", "## Breaking", 1)).expect("write");
    let err = xtask::codegen::check(dir.path()).expect_err("stale");
    assert!(err.contains("schema/v1-to-v2.md is stale"), "{err}");
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("readdir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

// ---- x-state and x-scope --------------------------------------------------------------------

/// `session/update` (agent → client) carrying a union whose one branch has `x-state` as given,
/// the notification having `x-scope` as given.
fn stateful(x_state: Option<Value>, x_scope: Option<Value>) -> Value {
    let mut branch = json!({
        "type": "object",
        "properties": {
            "sessionUpdate": { "type": "string", "const": "chunk" },
            "messageId": { "type": "string" },
            "content": { "type": "string" }
        },
        "required": ["sessionUpdate", "messageId", "content"]
    });
    if let Some(s) = x_state {
        branch["x-state"] = s;
    }
    let mut note = method(
        json!({
            "type": "object",
            "properties": { "sessionId": { "type": "string" }, "update": { "$ref": "#/$defs/Update" } },
            "required": ["sessionId", "update"]
        }),
        "session/update",
        "client",
    );
    if let Some(s) = x_scope {
        note["x-scope"] = s;
    }
    json!({
        "UpdateNotification": note,
        "Update": { "oneOf": [branch], "discriminator": { "propertyName": "sessionUpdate" } }
    })
}

fn append(action: &str) -> Value {
    json!({ "session": [{ "action": action, "target": "agentMessage", "id": "messageId", "field": "content", "value": "content" }] })
}

#[test]
fn x_state_changes_break_clients_that_keep_state() {
    let scope = || Some(json!({ "session": ["sessionId"] }));
    let r = compare(&stateful(Some(append("append")), scope()), &stateful(Some(append("upsert")), scope()));
    let f = only(&r, Rule::StateChanged);
    assert_finding(f, Severity::Breaking, "agent → client", &["new agents → old clients that keep state".into()]);
    assert_eq!((f.method.as_str(), f.location.as_str()), ("session/update", "Update::chunk"));
    assert_eq!(f.old.as_deref(), Some("session: append agentMessage[messageId].content ← content"));
    assert_eq!(f.new.as_deref(), Some("session: upsert agentMessage[messageId].content ← content"));

    let added = compare(&stateful(None, scope()), &stateful(Some(append("append")), scope()));
    assert_eq!(only(&added, Rule::StateAdded).severity, Severity::Info);
    let removed = compare(&stateful(Some(append("append")), scope()), &stateful(None, scope()));
    assert_eq!(only(&removed, Rule::StateRemoved).severity, Severity::Warning);
    let same = compare(&stateful(Some(append("append")), scope()), &stateful(Some(append("append")), scope()));
    assert!(same.findings.iter().all(|f| !matches!(f.rule, Rule::StateChanged | Rule::StateAdded)), "{same:#?}");
}

#[test]
fn x_scope_changes_are_reported() {
    let state = || Some(append("append"));
    let r = compare(&stateful(state(), None), &stateful(state(), Some(json!({ "session": ["sessionId"] }))));
    let f = only(&r, Rule::ScopeChanged);
    assert_eq!((f.severity, f.location.as_str()), (Severity::Info, "UpdateNotification"));
    let r = compare(
        &stateful(state(), Some(json!({ "session": ["sessionId"] }))),
        &stateful(state(), Some(json!({ "session": ["update.messageId"] }))),
    );
    assert_eq!(only(&r, Rule::ScopeChanged).severity, Severity::Breaking);
}

/// Two revisions of an extension schema (`schema/ext/example.json` and an edited copy) diff like
/// two protocols: joined to the core version their `$ref`s name, their `_` methods compared.
#[test]
fn extension_schemas_diff_by_method() {
    let root = xtask::project_root();
    let mut ext: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("schema/ext/example.json")).expect("read"))
            .expect("json");
    let defs = ext["$defs"].as_object_mut().expect("$defs");
    defs.remove("ProgressNotification");
    defs["GreetRequest"]["required"] = json!(["sessionId"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let new = dir.path().join("example.json");
    std::fs::write(&new, ext.to_string()).expect("write");
    let new = new.to_str().expect("utf-8");
    let old = root.join("schema/ext/example.json");
    let old = old.to_str().expect("utf-8");
    let diff = |a: &str, b: &str| {
        xtask::diff::run(&root, a, b, xtask::diff::Format::Text, xtask::diff::FailOn::Never).expect("diffs").0
    };
    let text = diff(old, new);
    assert!(text.contains("2 breaking"), "{text}");
    assert!(text.contains("field-became-optional  GreetRequest.name  [client → agent]"), "{text}");
    assert!(text.contains("notification `_example/progress` is removed"), "{text}");
    let same = diff(old, old);
    assert!(same.contains("0 breaking, 0 warnings, 0 info"), "{same}");
}
