//! Snapshot tests: each small schema in `tests/data/ok/` generates the Rust beside it (`.rs`; and
//! for a schema with methods, its method tables in `.methods.rs`), and each bad schema in
//! `tests/data/err/` gives the error text beside it (`.txt`). A good schema that generates with
//! warnings has them beside it too (`.warnings.txt`, one line each), and one without has none.
//! `UPDATE_SNAPSHOTS=1 cargo test -p acp-codegen --test codegen schema_snapshots` rewrites the expectations.

use std::fs;
use std::path::{Path, PathBuf};

fn cases(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .expect("data dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no cases in {}", dir.display());
    files
}

/// What a good schema generates.
struct Generated {
    types: String,
    /// When the schema has methods.
    methods: Option<String>,
    warnings: Vec<String>,
}

/// The types module, the methods module when the schema has methods, and the warnings.
fn generate(schema: &Path) -> Result<Generated, acp_codegen::Error> {
    let name = format!(
        "tests/data/{}",
        schema.strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")).expect("inside").display()
    );
    let protocol = acp_codegen::load(schema, &name)?;
    let types = acp_codegen::emit::types_module(&protocol, &name)?;
    let methods = match protocol.methods.is_empty() {
        true => None,
        false => Some(acp_codegen::emit::methods::methods_module(&protocol, &name)?),
    };
    let warnings = protocol.warnings.iter().map(ToString::to_string).collect();
    Ok(Generated { types, methods, warnings })
}

/// Compares what the snapshot at `path` says, or that there is none.
fn compare_optional(actual: Option<&str>, path: &Path, schema: &Path, failures: &mut Vec<String>) {
    match actual {
        Some(actual) => compare(actual, path, failures),
        None if path.exists() && std::env::var_os("UPDATE_SNAPSHOTS").is_some() => {
            fs::remove_file(path).expect("remove snapshot")
        }
        None if path.exists() => failures.push(format!("{}: nothing for {}", schema.display(), path.display())),
        None => {}
    }
}

fn compare(actual: &str, expected_path: &Path, failures: &mut Vec<String>) {
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        fs::write(expected_path, actual).expect("write snapshot");
        return;
    }
    match fs::read_to_string(expected_path) {
        Ok(expected) if expected == actual => {}
        Ok(_) => {
            failures.push(format!("{} differs (UPDATE_SNAPSHOTS=1 to accept):\n{actual}", expected_path.display()))
        }
        Err(_) => failures.push(format!("{} is missing:\n{actual}", expected_path.display())),
    }
}

#[test]
fn good_schemas_generate_the_expected_code() {
    let mut failures = Vec::new();
    for schema in cases("ok") {
        match generate(&schema) {
            Ok(g) => {
                compare(&g.types, &schema.with_extension("rs"), &mut failures);
                let methods_path = schema.with_extension("methods.rs");
                compare_optional(g.methods.as_deref(), &methods_path, &schema, &mut failures);
                let warnings = (!g.warnings.is_empty()).then(|| g.warnings.join("\n") + "\n");
                compare_optional(warnings.as_deref(), &schema.with_extension("warnings.txt"), &schema, &mut failures);
            }
            Err(e) => failures.push(format!("{}: {e}", schema.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn bad_schemas_give_the_expected_errors() {
    let mut failures = Vec::new();
    for schema in cases("err") {
        match generate(&schema) {
            Ok(_) => failures.push(format!("{}: generated code instead of an error", schema.display())),
            Err(e) => compare(&format!("{e}\n"), &schema.with_extension("txt"), &mut failures),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
