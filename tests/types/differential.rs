//! Differential test against the official hand-written types, `agent-client-protocol-schema`
//! 1.20.0 (the crate the committed schemas were generated from).
//!
//! For every stable case of `tests/corpus/v1.json` and `v2.json` (unstable cases are skipped: the
//! official crate is built without its `unstable` feature), the case's value is decoded from JSON
//! text and re-encoded once with our type and once with the official type of the same schema
//! name. The two outputs must be JSON-equal ([`json_eq`]: key order aside, numbers by value), or
//! every difference between them must be explained by an entry of [`KNOWN`]. Differences are
//! compared member by member, so an entry explains a single difference (a member only one side
//! wrote, a value that differs, a decode failure) and a case passes only if all of its
//! differences are explained.
//!
//! This proves that, on the corpus, our types accept what the official types accept and produce
//! what they produce, except for the listed, reasoned differences. The test also fails when an
//! entry of [`KNOWN`] explains nothing in a version it lists, so the list stays honest.
//!
//! Run `cargo test -p acp-types --test differential -- --nocapture` to see the summary.

use crate::types_common;
use types_common as common;

use common::{corpus, json_eq, Case};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The JSON an implementation wrote back after decoding a case, or why it could not.
type Reencoded = Result<Value, String>;

/// Decodes `text` as `T` (as a peer's bytes would be decoded) and encodes it again.
fn reencode<T: serde::Serialize + serde::de::DeserializeOwned>(text: &str) -> Reencoded {
    let decoded: T = serde_json::from_str(text).map_err(|e| format!("decode failed: {e}"))?;
    serde_json::to_value(&decoded).map_err(|e| format!("encode failed: {e}"))
}

/// Our side: the type is chosen by name through `acp_types::vN::visit_type`.
struct Ours(String);

impl acp_types::TypeVisitor for Ours {
    type Output = Reencoded;

    fn visit<T>(self, _: &'static str) -> Reencoded
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static,
    {
        reencode::<T>(&self.0)
    }
}

/// The official side: `$name(type_name, text)` re-encodes with `$module::<type_name>`, and
/// `$names` lists the type names covered (each must be used by a stable corpus case).
macro_rules! official_types {
    ($name:ident, $names:ident, $module:path, [$($ty:ident),* $(,)?]) => {
        fn $name(type_name: &str, text: &str) -> Option<Reencoded> {
            use $module as official;
            match type_name {
                $(stringify!($ty) => Some(reencode::<official::$ty>(text)),)*
                _ => None,
            }
        }

        const $names: &[&str] = &[$(stringify!($ty)),*];
    };
}

official_types!(
    official_v1,
    OFFICIAL_V1,
    agent_client_protocol_schema::v1,
    [
        AuthenticateRequest,
        AuthenticateResponse,
        CancelNotification,
        CancelRequestNotification,
        CloseSessionRequest,
        CloseSessionResponse,
        CompleteElicitationNotification,
        CreateElicitationRequest,
        CreateElicitationResponse,
        CreateTerminalRequest,
        CreateTerminalResponse,
        DeleteSessionRequest,
        DeleteSessionResponse,
        InitializeRequest,
        InitializeResponse,
        KillTerminalRequest,
        KillTerminalResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        LoadSessionRequest,
        LoadSessionResponse,
        LogoutRequest,
        LogoutResponse,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        ReadTextFileRequest,
        ReadTextFileResponse,
        ReleaseTerminalRequest,
        ReleaseTerminalResponse,
        RequestPermissionRequest,
        RequestPermissionResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SessionNotification,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        SetSessionModeRequest,
        SetSessionModeResponse,
        TerminalOutputRequest,
        TerminalOutputResponse,
        WaitForTerminalExitRequest,
        WaitForTerminalExitResponse,
        WriteTextFileRequest,
        WriteTextFileResponse,
    ]
);

official_types!(
    official_v2,
    OFFICIAL_V2,
    agent_client_protocol_schema::v2,
    [
        CancelRequestNotification,
        CancelSessionNotification,
        CancelTerminalRequest,
        CancelTerminalResponse,
        CancelToolCallRequest,
        CancelToolCallResponse,
        CloseSessionRequest,
        CloseSessionResponse,
        CompleteElicitationNotification,
        CreateElicitationRequest,
        CreateElicitationResponse,
        DeleteSessionRequest,
        DeleteSessionResponse,
        InitializeRequest,
        InitializeResponse,
        ListSessionsRequest,
        ListSessionsResponse,
        LoginAuthRequest,
        LoginAuthResponse,
        LogoutAuthRequest,
        LogoutAuthResponse,
        NewSessionRequest,
        NewSessionResponse,
        PromptRequest,
        PromptResponse,
        RequestPermissionRequest,
        RequestPermissionResponse,
        ResumeSessionRequest,
        ResumeSessionResponse,
        SetSessionConfigOptionRequest,
        SetSessionConfigOptionResponse,
        UpdateSessionNotification,
    ]
);

/// One way the two outputs of a case differ.
#[derive(Debug)]
enum Kind<'a> {
    /// A member only our output has.
    OnlyOurs(&'a Value),
    /// A member only the official output has.
    OnlyOfficial(&'a Value),
    /// A value that differs (or an array whose length differs).
    Changed { ours: &'a Value, official: &'a Value },
    /// Our type rejected the case (or could not encode it).
    OursFailed(&'a str),
    /// The official type rejected the case (or could not encode it).
    OfficialFailed(&'a str),
    /// `acp_types::vN::visit_type` knows no type of this name.
    NoOurType,
    /// The official dispatch table has no type of this name.
    NoOfficialType,
}

/// One difference between the two outputs of a case, with what a [`Known`] predicate may need.
struct Difference<'a> {
    version: &'static str,
    /// The corpus case's name (for one-off entries of [`KNOWN`]: `|d| d.case == "…"`).
    #[allow(dead_code)]
    case: &'a str,
    /// JSON pointer of the member or value that differs (`""` for the whole message).
    path: String,
    /// The member's name, when the difference is an object member.
    key: Option<&'a str>,
    /// The object holding that member (ours, or the official one if only it has the member).
    parent: Option<&'a Map<String, Value>>,
    /// The `default` values the schema declares for properties named `key`.
    schema_defaults: &'a [Value],
    kind: Kind<'a>,
}

impl Difference<'_> {
    fn describe(&self) -> String {
        let at = if self.path.is_empty() { "(message)" } else { &self.path };
        match &self.kind {
            Kind::OnlyOurs(v) => format!("{at}: only ours has it: {v}"),
            Kind::OnlyOfficial(v) => format!("{at}: only official has it: {v}"),
            Kind::Changed { ours, official } => {
                format!("{at}: ours {ours}, official {official}")
            }
            Kind::OursFailed(e) => format!("{at}: ours failed: {e}"),
            Kind::OfficialFailed(e) => format!("{at}: official failed: {e}"),
            Kind::NoOurType => format!("{at}: no type of this name in acp_types::{}", self.version),
            Kind::NoOfficialType => {
                format!("{at}: no type of this name in agent_client_protocol_schema::{}", self.version)
            }
        }
    }

    /// Whether the member's parent object is a `sessionUpdate` of the given kind.
    fn in_session_update(&self, kind: &str) -> bool {
        self.parent.and_then(|p| p.get("sessionUpdate")).is_some_and(|u| u == kind)
    }
}

/// A known, reasoned difference: `applies` says whether it explains one [`Difference`] of a case
/// of one of `versions`. A one-off is listed by case name: `|d| d.case == "…"`.
struct Known {
    versions: &'static [&'static str],
    applies: fn(&Difference) -> bool,
    reason: &'static str,
}

/// Every difference between our output and the official one that the test accepts.
const KNOWN: &[Known] = &[
    Known {
        versions: &["v1", "v2"],
        applies: |d| matches!(d.kind, Kind::OnlyOurs(Value::Null)),
        reason: "official drops an optional property received as explicit `null` (decoded to \
                 `None`, skipped on encode; includes `\"_meta\": null`); ours re-emits the `null`",
    },
    Known {
        versions: &["v1", "v2"],
        applies: |d| match d.kind {
            Kind::OnlyOfficial(v) => d.schema_defaults.iter().any(|w| json_eq(v, w)),
            _ => false,
        },
        reason: "official writes out an omitted property with its schema `default` value \
                 (e.g. `clientCapabilities`, `agentCapabilities`, `authMethods: []`, \
                 `capabilities: {}`, elicitation `type: \"object\"`); ours re-emits only what \
                 was received",
    },
    Known {
        versions: &["v1", "v2"],
        applies: |d| matches!(d.kind, Kind::OnlyOurs(Value::Array(a)) if a.is_empty()),
        reason: "official drops a property received as an empty array (`Vec` with \
                 `skip_serializing_if = \"Vec::is_empty\"`); ours re-emits the `[]`",
    },
    Known {
        versions: &["v1"],
        applies: |d| {
            d.in_session_update("tool_call")
                && match (d.key, &d.kind) {
                    (Some("kind"), Kind::OnlyOurs(v)) => *v == "other",
                    (Some("status"), Kind::OnlyOurs(v)) => *v == "pending",
                    _ => false,
                }
        },
        reason: "official drops a v1 `tool_call` update's `kind: \"other\"` / \
                 `status: \"pending\"` (their defaults, `skip_serializing_if = is_default`); \
                 ours re-emits them",
    },
];

/// The `default` of every property in `schema/{version}/schema.json`, by property name.
fn schema_defaults(version: &str) -> BTreeMap<String, Vec<Value>> {
    fn walk(node: &Value, out: &mut BTreeMap<String, Vec<Value>>) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (name, property) in properties {
                        if let Some(default) = property.get("default") {
                            out.entry(name.clone()).or_default().push(default.clone());
                        }
                    }
                }
                for (key, value) in map {
                    if !matches!(key.as_str(), "default" | "const" | "enum" | "examples") {
                        walk(value, out);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, out)),
            _ => {}
        }
    }
    let path = format!("{}/schema/{version}/schema.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out = BTreeMap::new();
    walk(&schema, &mut out);
    out
}

/// A difference as [`diff`] finds it: path, member name, parent object, kind.
type Found<'a> = (String, Option<&'a str>, Option<&'a Map<String, Value>>, Kind<'a>);

/// Collects the differences between `ours` and `official` below `path`, member by member.
fn diff<'a>(path: &str, ours: &'a Value, official: &'a Value, out: &mut Vec<Found<'a>>) {
    match (ours, official) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, value) in x {
                let at = format!("{path}/{key}");
                match y.get(key) {
                    Some(other) => diff(&at, value, other, out),
                    None => out.push((at, Some(key), Some(x), Kind::OnlyOurs(value))),
                }
            }
            for (key, value) in y {
                if !x.contains_key(key) {
                    let at = format!("{path}/{key}");
                    out.push((at, Some(key), Some(y), Kind::OnlyOfficial(value)));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (a, b)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}/{i}"), a, b, out);
            }
        }
        _ if json_eq(ours, official) => {}
        _ => out.push((path.to_owned(), None, None, Kind::Changed { ours, official })),
    }
}

/// What happened to a case that differs: the reasons that explained its differences, or the
/// differences nothing explained.
struct Explained {
    reasons: Vec<usize>,
    unexplained: Vec<String>,
}

fn explain(version: &'static str, differences: &[Difference]) -> Explained {
    let mut explained = Explained { reasons: Vec::new(), unexplained: Vec::new() };
    for d in differences {
        let hit = KNOWN.iter().position(|k| k.versions.contains(&version) && (k.applies)(d));
        match hit {
            Some(i) => explained.reasons.push(i),
            None => explained.unexplained.push(d.describe()),
        }
    }
    explained
}

fn compact(r: &Option<Reencoded>) -> String {
    match r {
        Some(Ok(v)) => v.to_string(),
        Some(Err(e)) => format!("error: {e}"),
        None => "no such type".to_owned(),
    }
}

fn check(
    version: &'static str,
    ours: impl Fn(&str, Ours) -> Option<Reencoded>,
    official: fn(&str, &str) -> Option<Reencoded>,
    official_names: &[&str],
) {
    let cases: Vec<Case> = corpus(version);
    let stable: Vec<&Case> = cases.iter().filter(|c| !c.unstable).collect();
    let defaults = schema_defaults(version);
    let mut failures = Vec::new();
    let mut equal = 0;
    let mut equal_up_to_numbers = 0;
    let mut known_cases = 0;
    // Per entry of KNOWN: (cases, differences) it explained.
    let mut hits = vec![(0usize, 0usize); KNOWN.len()];

    for case in &stable {
        let text = case.value.to_string();
        let ours_out = ours(&case.ty, Ours(text.clone()));
        let official_out = official(&case.ty, &text);
        if let (Some(Ok(a)), Some(Ok(b))) = (&ours_out, &official_out) {
            if json_eq(a, b) {
                equal += 1;
                if a != b {
                    equal_up_to_numbers += 1;
                }
                continue;
            }
        }

        let differences = differences(version, &case.name, &ours_out, &official_out, &defaults);

        let explained = explain(version, &differences);
        if explained.unexplained.is_empty() {
            known_cases += 1;
            count_hits(&mut hits, explained.reasons);
        } else {
            failures.push(format!(
                "{} ({}, {}):\n    {}\n  input:    {text}\n  ours:     {}\n  official: {}",
                case.name,
                case.method,
                case.ty,
                explained.unexplained.join("\n    "),
                compact(&ours_out),
                compact(&official_out),
            ));
        }
    }

    let table_failures = stale_tables(version, official_names, &stable, &hits);

    // One print, so that the summaries of the two versions (run in parallel) do not interleave.
    let mut summary = format!(
        "differential {version}: {} stable cases compared with agent-client-protocol-schema \
         1.20.0 ({} unstable skipped): {equal} equal ({equal_up_to_numbers} of them only up to \
         number representation), {known_cases} with known differences, {} failing",
        stable.len(),
        cases.len() - stable.len(),
        failures.len(),
    );
    summary.push_str(&known_lines(version, &hits));
    println!("{summary}");

    assert!(!stable.is_empty(), "no stable {version} case");
    failures.extend(table_failures);
    assert!(
        failures.is_empty(),
        "{} {version} failures against the official types:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Counts what explained one case's differences (`reasons`: the entry of [`KNOWN`] that explained
/// each) into `hits`: per entry, the cases (once each) and the differences.
fn count_hits(hits: &mut [(usize, usize)], reasons: Vec<usize>) {
    let mut cases = reasons.clone();
    cases.sort_unstable();
    cases.dedup();
    for i in cases {
        hits[i].0 += 1;
    }
    for i in reasons {
        hits[i].1 += 1;
    }
}

/// A summary line per entry of [`KNOWN`] for `version`: the cases and differences it explained.
fn known_lines(version: &str, hits: &[(usize, usize)]) -> String {
    let mut lines = String::new();
    for (k, (cases, differences)) in KNOWN.iter().zip(hits) {
        if k.versions.contains(&version) {
            lines.push_str(&format!("\n  {cases:3} cases, {differences:3} differences: {}", k.reason));
        }
    }
    lines
}

/// What differs between our re-encoding of a case and the official one: each member or value
/// (with the schema's defaults for its name), or the whole message when one side has no such type
/// or fails.
fn differences<'a>(
    version: &'static str,
    case: &'a str,
    ours_out: &'a Option<Reencoded>,
    official_out: &'a Option<Reencoded>,
    defaults: &'a BTreeMap<String, Vec<Value>>,
) -> Vec<Difference<'a>> {
    let whole =
        |kind| Difference { version, case, path: String::new(), key: None, parent: None, schema_defaults: &[], kind };
    let mut differences = Vec::new();
    match (ours_out, official_out) {
        (Some(Ok(a)), Some(Ok(b))) => {
            let mut found = Vec::new();
            diff("", a, b, &mut found);
            if found.is_empty() {
                // json_eq and diff disagree: report the whole message.
                found.push((String::new(), None, None, Kind::Changed { ours: a, official: b }));
            }
            for (path, key, parent, kind) in found {
                let schema_defaults = key.and_then(|k| defaults.get(k)).map_or(&[][..], Vec::as_slice);
                differences.push(Difference { version, case, path, key, parent, schema_defaults, kind });
            }
        }
        _ => {
            match ours_out {
                None => differences.push(whole(Kind::NoOurType)),
                Some(Err(e)) => differences.push(whole(Kind::OursFailed(e))),
                Some(Ok(_)) => {}
            }
            match official_out {
                None => differences.push(whole(Kind::NoOfficialType)),
                Some(Err(e)) => differences.push(whole(Kind::OfficialFailed(e))),
                Some(Ok(_)) => {}
            }
        }
    }
    differences
}

/// The tables' own failures: an official type no stable case uses, a known difference that no
/// longer occurs (`hits`: the cases and differences each entry of [`KNOWN`] explained).
fn stale_tables(version: &str, official_names: &[&str], stable: &[&Case], hits: &[(usize, usize)]) -> Vec<String> {
    let mut table_failures = Vec::new();
    for name in official_names {
        if !stable.iter().any(|c| c.ty == *name) {
            table_failures.push(format!("official dispatch lists {name}, which no stable {version} case uses"));
        }
    }
    for (k, (cases, _)) in KNOWN.iter().zip(hits) {
        if k.versions.contains(&version) && *cases == 0 {
            table_failures.push(format!(
                "known difference no longer occurs in {version} (remove it or its version): {}",
                k.reason
            ));
        }
    }
    table_failures
}

#[test]
fn v1_matches_official_types() {
    check("v1", acp_types::v1::visit_type, official_v1, OFFICIAL_V1);
}

#[test]
fn v2_matches_official_types() {
    check("v2", acp_types::v2::visit_type, official_v2, OFFICIAL_V2);
}
