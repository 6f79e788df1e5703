//! Forward compatibility within a version: a peer built on a newer revision of the same schema
//! sends a tag or enum value that ours does not list. For every message type (a method's params or
//! result) and every enum and tagged union it can contain, a message with an unknown value at that
//! place (`acp_codegen::samples::unknown_cases`, from the generator's IR) decodes, keeps the
//! value in the catch-all (the schema's, or the one the generator added), and re-encodes to the
//! same text, byte for byte. A value that only an added catch-all keeps is recorded
//! (`LenientEvent::NotInSchema`, which `acp check` turns into a warning); one the schema's own
//! catch-all keeps is not.
//!
//! These messages do not validate against the v1 schema (that is the point), so they are made
//! here rather than kept in `tests/corpus/`, and the differential test, whose official v1 types
//! reject them, does not see them.

use crate::types_common;
use types_common as common;

use acp_codegen::ir::TypeId;
use acp_codegen::samples::{unknown_cases, Rng, UnknownCase};
use acp_types::lenient::{collect, LenientEvent};
use acp_types::TypeVisitor;
use common::reverse_keys;
use serde_json::Value;
use std::collections::BTreeSet;

/// What a decode recorded, comparable with what a case expects: (type, tag, value).
type Recorded = Vec<(String, Option<String>, String)>;

fn recorded(events: Vec<LenientEvent>) -> Recorded {
    events
        .into_iter()
        .map(|e| match e {
            LenientEvent::NotInSchema { ty, tag, value } => (ty.to_string(), tag.map(str::to_string), value),
            other => (format!("{other:?}"), None, String::new()),
        })
        .collect()
}

/// One case: the message's text and what decoding it must record.
struct Check {
    text: String,
    reversed: String,
    expected: Recorded,
}

impl TypeVisitor for Check {
    type Output = Result<(), String>;

    fn visit<T>(self, name: &'static str) -> Result<(), String>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static,
    {
        let text = &self.text;
        let (decoded, events) = collect(|| serde_json::from_str::<T>(text));
        let decoded = decoded.map_err(|e| format!("{name}: decode failed: {e}\n  json: {text}"))?;
        // The runtime's decoding (in place first, `support::json::from_str`) records the same.
        let (fast, fast_events) = collect(|| acp_types::support::json::from_str::<T>(text));
        if fast.as_ref().ok() != Some(&decoded) || recorded(fast_events) != recorded(events.clone()) {
            return Err(format!("{name}: support::json::from_str and serde_json::from_str differ\n  json: {text}"));
        }
        let events = recorded(events);
        if events != self.expected {
            return Err(format!("{name}: recorded {events:?}, expected {:?}\n  json: {text}", self.expected));
        }
        let back = serde_json::to_string(&decoded).map_err(|e| format!("{name}: encode failed: {e}"))?;
        if &back != text {
            return Err(format!("{name}: encode(decode(json)) != json\n  json: {text}\n  back: {back}"));
        }
        // The general path (whole values) and a tag read after its body agree with one pass.
        let general: T = acp_types::support::detailed(|| serde_json::from_str(text))
            .map_err(|e| format!("{name}: decode under `detailed` failed: {e}\n  json: {text}"))?;
        let late: T = serde_json::from_str(&self.reversed)
            .map_err(|e| format!("{name}: decode with keys reversed failed: {e}\n  json: {}", self.reversed))?;
        if general != decoded || late != decoded {
            return Err(format!("{name}: the ways of decoding differ\n  json: {text}"));
        }
        Ok(())
    }
}

/// How many cases were checked, over how many types, and how many of each an added catch-all
/// keeps.
#[derive(Debug)]
struct Counts {
    cases: usize,
    added_cases: usize,
    types: usize,
    added_types: usize,
}

/// Checks every case of one schema file (the unstable one with the `unstable` feature).
fn check(version: &str, visit: impl Fn(&str, Check) -> Option<Result<(), String>>) -> Counts {
    let file = if cfg!(feature = "unstable") { "schema.unstable.json" } else { "schema.json" };
    let name = format!("schema/{version}/{file}");
    let protocol = acp_codegen::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&name), &name)
        .expect("the committed schema lowers");
    // Deterministic: the seed only fills in the parts around the unknown value.
    let cases = unknown_cases(&protocol, &mut Rng::new(18));
    let mut failures = Vec::new();
    for case in &cases {
        let UnknownCase { root, target, value, tag, unknown, added, .. } = case;
        let (root, target) = (&protocol.get(*root).name, &protocol.get(*target).name);
        let expected = match added {
            true => vec![(target.clone(), tag.clone(), unknown.to_string())],
            false => Vec::new(),
        };
        let check = Check { text: value.to_string(), reversed: reverse_keys(value).to_string(), expected };
        match visit(root, check) {
            Some(Ok(())) => {}
            Some(Err(e)) => failures.push(format!("{target} in {root}: {e}")),
            None => failures.push(format!("no Rust type for {root}")),
        }
    }
    let total = failures.len();
    failures.truncate(10);
    assert!(failures.is_empty(), "{name}: {total} of {} cases fail:\n{}", cases.len(), failures.join("\n"));
    let types: BTreeSet<TypeId> = cases.iter().map(|c| c.target).collect();
    let added_types: BTreeSet<TypeId> = cases.iter().filter(|c| c.added).map(|c| c.target).collect();
    let counts = Counts {
        cases: cases.len(),
        added_cases: cases.iter().filter(|c| c.added).count(),
        types: types.len(),
        added_types: added_types.len(),
    };
    eprintln!("{name}: {counts:?}");
    counts
}

#[test]
fn v1_unknown_values_are_kept_and_written_back() {
    let counts = check("v1", acp_types::v1::visit_type);
    // v1 declares few catch-alls: most of its enums and unions get theirs from the generator.
    assert!(counts.added_types * 2 > counts.types, "{counts:?}");
}

#[test]
fn v2_unknown_values_are_kept_and_written_back() {
    let counts = check("v2", acp_types::v2::visit_type);
    assert!(counts.cases > counts.added_cases, "{counts:?}");
}

#[test]
fn a_session_update_of_a_newer_v1_is_one_of_the_cases() {
    let name = "schema/v1/schema.json";
    let protocol =
        acp_codegen::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name), name).expect("lowers");
    let cases = unknown_cases(&protocol, &mut Rng::new(18));
    let case = cases
        .iter()
        .find(|c| protocol.get(c.root).name == "SessionNotification" && protocol.get(c.target).name == "SessionUpdate")
        .expect("a case");
    assert!(case.added && case.tag.as_deref() == Some("sessionUpdate"));
    assert_eq!(case.value["update"]["sessionUpdate"], case.unknown);
    assert!(matches!(case.unknown, Value::String(_)));
}

#[test]
fn a_tagged_union_tells_its_tag_without_encoding() {
    use acp_types::{v1, v2};
    let chunk = v1::SessionUpdate::AgentMessageChunk(Box::new(v1::ContentChunk::new(v1::ContentBlock::Text(
        Box::new(v1::TextContent::new("x".into())),
    ))));
    assert_eq!(chunk.tag(), Some("agent_message_chunk"));
    let future: v1::SessionUpdate =
        serde_json::from_value(serde_json::json!({ "sessionUpdate": "future_thing", "a": 1 })).expect("kept");
    assert_eq!(future.tag(), Some("future_thing"), "the catch-all's tag is the one received");
    assert_eq!(v2::IdleStateUpdateStopReason::Cancelled.tag(), Some("cancelled"));
    let none = v2::IdleStateUpdate::new(v2::IdleStateUpdateStopReason::None(Default::default()));
    assert_eq!(none.stop_reason.tag(), None, "an idle without a stop reason has no tag");
}

#[test]
fn a_kept_object_is_its_text_on_one_line() {
    use acp_types::support::json;
    use acp_types::v1::SessionUpdate;
    // Spaces and line breaks between tokens, escapes in keys and strings.
    let text =
        "{\"sessionUpdate\" : \"future_thing\", \"a\" : [1,\n 2.50, {\"x\\\"y\": \"\\u00e9\\n\"}],\r\n \"z\":\n null }";
    let fast: SessionUpdate = json::from_str(text).expect("kept");
    let exact: SessionUpdate = serde_json::from_str(text).expect("kept");
    assert_eq!(fast, exact);
    let SessionUpdate::Other(object) = &fast else { panic!("expected the catch-all, got {fast:?}") };
    assert!(!object.as_str().contains(['\n', '\r']), "one line: {object}");
    assert_eq!(Value::Object(object.to_map()), serde_json::from_str::<Value>(text).expect("JSON"));
    assert_eq!(fast.tag(), Some("future_thing"));
    // Written back in the order received, each value as it came.
    let back = String::from_utf8(json::to_vec(&fast).expect("encodes")).expect("UTF-8");
    assert_eq!(back, r#"{"sessionUpdate":"future_thing","a":[1,  2.50, {"x\"y": "\u00e9\n"}],"z":null}"#);
    // Entries before the tag are read before the tag is known: kept as values.
    let late = "{\"a\": 2.50, \"sessionUpdate\": \"future_thing\", \"b\": [ 1 ]}";
    let fast: SessionUpdate = json::from_str(late).expect("kept");
    assert_eq!(fast, serde_json::from_str::<SessionUpdate>(late).expect("kept"));
    let back = String::from_utf8(json::to_vec(&fast).expect("encodes")).expect("UTF-8");
    assert_eq!(back, r#"{"a":2.5,"sessionUpdate":"future_thing","b":[ 1 ]}"#);
}

#[test]
fn a_second_tag_after_an_unknown_one_decides_as_in_a_value() {
    use acp_types::support::json;
    use acp_types::v1::SessionUpdate;
    // A `Value` keeps the last of a key twice: the tag after the unknown one decides.
    for text in [
        r#"{"sessionUpdate":"future_thing","a":1,"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}"#,
        r#"{"sessionUpdate":"future_thing","a":1,"sessionUpdate":"later_thing","b":2}"#,
    ] {
        let fast = json::from_str::<SessionUpdate>(text).expect("decodes");
        let exact = serde_json::from_str::<SessionUpdate>(text).expect("decodes");
        let general = acp_types::support::detailed(|| serde_json::from_str::<SessionUpdate>(text)).expect("decodes");
        assert_eq!(fast, general, "{text}");
        assert_eq!(exact, general, "{text}");
        assert_eq!(fast.tag(), general.tag(), "{text}");
    }
}
