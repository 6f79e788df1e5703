//! Fidelity of `cargo xtask schema pull --crate`: for crate versions whose JSON the ACP
//! maintainers also published from the same source (the upstream repository's release commits
//! pair a version of `agent-client-protocol-schema` with the `schema/` files generated from it),
//! the files our generator derives from the crate equal the published ones: every `$defs` entry
//! and the root, key for key, and `cargo xtask diff PUBLISHED DERIVED` finds nothing.
//!
//! The published files are fixtures in `tests/fixtures/published/VERSION/`, taken from the release
//! commits (and the npm package) named in [`PAIRS`]. Needs crates.io (the generator is built
//! against each version, in `.cache/schemas/crate/`, one target directory for all, one build per
//! version and kind of file: the v1 and v2 files of a kind come from the same build).

use serde_json::Value;
use std::path::Path;
use xtask::schema::from_crate;

/// Crate version, where the published files come from, and the files compared (a stable or an
/// unstable pair is one build of the generator: five builds, two for 1.7.0). The first three are
/// upstream release commits, whose `schema/` was generated from the crate they release; the last
/// is the npm package `@agentclientprotocol/sdk` 2.4.0, whose files were generated from 1.15.1 (the
/// newer layout: proxy messages in the unstable roots, draft links in the unstable files).
const PAIRS: [(&str, &str, &[&str]); 4] = [
    (
        "1.5.0",
        "commit d0549a115750a0a25c1c5631dd72e0d248859aa4",
        &["v1/schema.unstable.json", "v2/schema.unstable.json"],
    ),
    ("1.6.0", "commit 5e89c71497fe07dd4ae633c181a17224f4a8956d", &["v1/schema.json", "v2/schema.json"]),
    (
        "1.7.0",
        "commit 272bf799f35a258c6a4107a0410ed361e83683d3",
        &["v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json"],
    ),
    ("1.15.1", "npm @agentclientprotocol/sdk 2.4.0", &["v1/schema.unstable.json", "v2/schema.unstable.json"]),
];

fn fixture(version: &str, rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/published").join(version).join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `$defs` entries that differ (or are in one file only), and whether the rest of the
/// document (`$schema`, `title`, the root union) is the same.
fn json_differences(published: &Value, derived: &Value) -> (Vec<String>, bool) {
    let defs = |v: &Value| v["$defs"].as_object().cloned().unwrap_or_default();
    let (a, b) = (defs(published), defs(derived));
    let mut differ: Vec<String> = a.iter().filter(|(k, v)| b.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect();
    differ.extend(b.keys().filter(|k| !a.contains_key(*k)).cloned());
    let rest = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().map(|m| m.remove("$defs"));
        v
    };
    (differ, rest(published) == rest(derived))
}

#[test]
fn derived_schemas_equal_the_published_ones_of_the_same_crate_version() {
    let root = xtask::project_root();
    let mut failures = Vec::new();
    for (version, published_in, files) in PAIRS {
        let derived = from_crate::derive(&root, version, files).unwrap_or_else(|e| panic!("{version}: {e}"));
        assert_eq!(derived.files.len(), files.len(), "{version}: a file was not derived");
        for file in &derived.files {
            let published_text = fixture(version, file.rel);
            let derived_text = String::from_utf8(file.bytes.clone()).expect("UTF-8");
            let (published, derived): (Value, Value) = (
                serde_json::from_str(&published_text).expect("published JSON"),
                serde_json::from_str(&derived_text).expect("derived JSON"),
            );
            let total = published["$defs"].as_object().map_or(0, |m| m.len());
            let (differ, root_same) = json_differences(&published, &derived);
            eprintln!("{version} {}: {}/{total} $defs equal, root equal: {root_same}", file.rel, total - differ.len());
            if !differ.is_empty() || !root_same {
                failures.push(format!(
                    "{version} ({published_in}) {}: $defs differ: {differ:?}; root equal: {root_same}",
                    file.rel
                ));
            }
            let old = acp_codegen::load_text(&published_text, &format!("published {version} {}", file.rel));
            let new = acp_codegen::load_text(&derived_text, &format!("derived {version} {}", file.rel));
            let report = acp_codegen::diff::diff(&old.expect("published lowers"), &new.expect("derived lowers"));
            if !report.findings.is_empty() {
                failures.push(format!(
                    "{version} {}: cargo xtask diff finds:\n{}",
                    file.rel,
                    acp_codegen::diff::render::text(&report)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_changed_definition_or_root_is_a_difference() {
    let published = serde_json::json!({ "title": "t", "anyOf": [], "$defs": { "A": { "type": "string" }, "B": {} } });
    assert_eq!(json_differences(&published, &published), (vec![], true));
    let mut derived = published.clone();
    derived["$defs"]["A"]["x-state"] = serde_json::json!({});
    derived["$defs"]["C"] = serde_json::json!({});
    derived["title"] = serde_json::json!("u");
    assert_eq!(json_differences(&published, &derived), (vec!["A".to_string(), "C".to_string()], false));
}

/// The v2 files in `schema/`, when derived from the crate (1.20.0 and later annotate how each
/// session update changes the client's state): every `SessionUpdate` variant of the schema carries
/// its `x-state`, and lowering keeps each on its IR variant and types it into the state model (no
/// warning: the generator knows the keyword). Without network.
#[test]
fn the_committed_v2_schemas_keep_x_state_on_every_session_update_variant() {
    let root = xtask::project_root();
    let sources = std::fs::read_to_string(root.join("schema/sources.toml")).expect("sources.toml");
    if !sources.contains(&format!("package = \"{}\"", from_crate::CRATE)) {
        return; // npm's files: no annotations yet
    }
    for rel in ["schema/v2/schema.json", "schema/v2/schema.unstable.json"] {
        let text = std::fs::read_to_string(root.join(rel)).expect("schema file");
        let json: Value = serde_json::from_str(&text).expect("JSON");
        let union = &json["$defs"]["SessionUpdate"];
        let branches = union["oneOf"].as_array().or(union["anyOf"].as_array()).expect("SessionUpdate's branches");
        let tagged: Vec<&Value> =
            branches.iter().filter(|b| b["properties"]["sessionUpdate"]["const"].is_string()).collect();
        let annotated = tagged.iter().filter(|b| b.get("x-state").is_some()).count();
        assert!(
            annotated > 20 && annotated == tagged.len(),
            "{rel}: {annotated} of {} variants annotated",
            tagged.len()
        );

        let p = acp_codegen::load_text(&text, rel).expect("lowers");
        let id = p.find("SessionUpdate").expect("SessionUpdate");
        let acp_codegen::ir::TypeKind::Union(u) = &p.get(id).kind else { panic!("{rel}: SessionUpdate is a union") };
        let kept = u.variants.iter().filter(|v| v.origin.annotation("x-state").is_some()).count();
        assert_eq!(kept, annotated, "{rel}: x-state kept on the IR variants");
        // Known to the generator now: typed into the state model, no warning.
        assert!(!p.warnings.iter().any(|w| w.to_string().contains(r#"annotation "x-state""#)), "{rel}: warned");
        let sources = p
            .state
            .rules
            .iter()
            .filter(|r| r.source.ty == id)
            .map(|r| &r.source.variant)
            .chain(p.state.silent.iter().filter(|s| s.ty == id).map(|s| &s.variant));
        let variants: std::collections::BTreeSet<_> = sources.collect();
        assert_eq!(variants.len(), annotated, "{rel}: every annotated variant is in the state model");
    }
}
