//! The generator accepts older published schemas with no code change: for
//! `@agentclientprotocol/sdk` 0.4.5, 1.0.0 and 2.0.0 (fetched by `xtask::schema` into
//! `.cache/schemas`, not committed), `codegen --schema FILE --out DIR` writes a crate that compiles
//! without warnings and passes its generated tests (each method marker agrees with the table),
//! and whose method table has one method per distinct `x-method`.

use std::collections::BTreeSet;
use std::process::Command;

const VERSIONS: &[&str] = &["0.4.5", "1.0.0", "2.0.0"];

fn distinct_methods(text: &str) -> BTreeSet<(String, String)> {
    let value: serde_json::Value = serde_json::from_str(text).expect("schema JSON");
    let defs = value.get("$defs").and_then(|d| d.as_object()).expect("$defs");
    defs.values()
        .filter_map(|d| Some((d.get("x-method")?.as_str()?.to_string(), d.get("x-side")?.as_str()?.to_string())))
        .collect()
}

#[test]
fn older_published_schemas_generate_crates_that_compile() {
    let root = xtask::project_root();
    let cache = root.join(".cache/schemas");
    let out_root = root.join("target/old-schemas");
    let mut crates = Vec::new();
    for version in VERSIONS {
        let files = xtask::schema::fetch_to_cache(version, &cache).unwrap_or_else(|e| panic!("fetch {version}: {e}"));
        assert!(!files.is_empty(), "{version} ships no schema");
        for file in files {
            let rel = file.strip_prefix(&cache).expect("in cache").display().to_string();
            let name = format!("acp-{}", rel.replace(['/', '.'], "-"));
            let out = out_root.join(&name);
            xtask::codegen::standalone(&file, &out).unwrap_or_else(|e| panic!("{rel}: {e}"));
            let protocol = acp_codegen::load(&file, &rel).expect("lowers");
            let text = std::fs::read_to_string(&file).expect("read");
            let expected = distinct_methods(&text);
            let got: BTreeSet<(String, String)> =
                protocol.methods.iter().map(|m| (m.name.clone(), m.side.wire.clone())).collect();
            // Every (method, side) pair appears once; a response type adds no method of its own.
            assert_eq!(got, expected, "{rel}: methods");
            crates.push((rel, out));
        }
    }
    for (rel, dir) in &crates {
        let output = Command::new(env!("CARGO"))
            .args(["test", "--quiet", "--all-features", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", out_root.join("target"))
            .env("RUSTFLAGS", "-D warnings")
            .output()
            .expect("cargo runs");
        assert!(
            output.status.success(),
            "{rel}: the generated crate does not build cleanly or its tests fail:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
