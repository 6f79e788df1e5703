//! `cargo xtask codegen`: runs the pipeline over the committed schemas and writes (or, with
//! `--check`, compares) everything under `generated/` that the generator owns.

use crate::{emit, emit_methods, ir::Protocol, lower, merge, model, schema_cmd};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The protocol versions under `schema/`, each a stable and an unstable file.
pub const VERSIONS: &[&str] = &["v1", "v2"];

/// Directories whose every file the generator writes: anything else there is stale.
const OWNED_DIRS: &[&str] = &["generated/src/v1", "generated/src/v2"];

/// The hand-written support modules, copied into standalone crates.
const SUPPORT: &[(&str, &str)] = &[
    ("mod.rs", include_str!("../../generated/src/support/mod.rs")),
    ("defaulted.rs", include_str!("../../generated/src/support/defaulted.rs")),
    ("lenient.rs", include_str!("../../generated/src/support/lenient.rs")),
    ("patch.rs", include_str!("../../generated/src/support/patch.rs")),
    ("rpc.rs", include_str!("../../generated/src/support/rpc.rs")),
    ("schema.rs", include_str!("../../generated/src/support/schema.rs")),
    ("union.rs", include_str!("../../generated/src/support/union.rs")),
];

/// Reads, parses and lowers one schema file; `name` is how it is shown (a relative path).
pub fn load(path: &Path, name: &str) -> Result<Protocol, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let doc = model::parse(name, &text)?;
    lower::lower(&doc)
}

/// Every file the generator produces for the committed schemas, by path relative to the root,
/// and one summary line per schema file.
pub fn generate(root: &Path) -> Result<(BTreeMap<PathBuf, String>, Vec<String>), String> {
    let mut files = BTreeMap::new();
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for version in VERSIONS {
        let stable_name = format!("schema/{version}/schema.json");
        let unstable_name = format!("schema/{version}/schema.unstable.json");
        let mut loaded = Vec::new();
        for name in [&stable_name, &unstable_name] {
            let start = Instant::now();
            match load(&root.join(name), name) {
                Ok(p) => {
                    lines.push(format!(
                        "{name}: {} types, {} methods, {:.1} ms",
                        p.types.len(),
                        p.methods.len(),
                        start.elapsed().as_secs_f64() * 1e3
                    ));
                    loaded.push(p);
                }
                Err(e) => errors.push(e),
            }
        }
        let [stable, unstable] = loaded.as_slice() else {
            continue;
        };
        let merged = merge::merge(stable, unstable);
        let sources = format!("{stable_name} and {unstable_name}");
        match emit::types_module(&merged, &sources) {
            Ok(text) => {
                files.insert(PathBuf::from(format!("generated/src/{version}/types.rs")), text);
            }
            Err(e) => errors.push(e),
        }
        match emit_methods::methods_module(&merged, &sources) {
            Ok(text) => {
                files.insert(PathBuf::from(format!("generated/src/{version}/methods.rs")), text);
            }
            Err(e) => errors.push(e),
        }
        files.insert(PathBuf::from(format!("generated/src/{version}/mod.rs")), version_module(version, &sources)?);
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    Ok((files, lines))
}

fn version_module(version: &str, sources: &str) -> Result<String, String> {
    let doc = format!(
        " ACP {version}: every type of `schema/{version}/schema.json`, plus (feature `unstable`) what only \
         `schema.unstable.json` has."
    );
    emit::render(
        sources,
        quote::quote! {
            #![doc = #doc]
            // Formatted by prettyplease when generated; `cargo fmt` must not rewrite it.
            #[rustfmt::skip]
            mod types;
            #[rustfmt::skip]
            pub mod methods;
            pub use types::*;
        },
    )
}

/// `cargo xtask codegen [--check]`.
pub fn run(root: &Path, check_only: bool) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let (files, mut lines) = generate(root)?;
    if check_only {
        check_files(root, &files)?;
        lines.push(format!(
            "generated/ is fresh ({} files, {:.0} ms)",
            files.len(),
            start.elapsed().as_secs_f64() * 1e3
        ));
        return Ok(lines);
    }
    for (path, text) in &files {
        let full = root.join(path);
        if fs::read_to_string(&full).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        if let Some(dir) = full.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        fs::write(&full, text).map_err(|e| format!("{}: {e}", full.display()))?;
    }
    for stale in stale_files(root, &files) {
        fs::remove_file(root.join(&stale)).map_err(|e| format!("{}: {e}", stale.display()))?;
    }
    lines.push(format!("wrote {} files in {:.0} ms", files.len(), start.elapsed().as_secs_f64() * 1e3));
    Ok(lines)
}

/// The freshness check shared by `--check` and the test suite: the schemas match their pins and
/// every generated file matches what the generator would write now. Never writes.
pub fn check(root: &Path) -> Result<(), String> {
    let (files, _) = generate(root)?;
    check_files(root, &files)
}

fn check_files(root: &Path, files: &BTreeMap<PathBuf, String>) -> Result<(), String> {
    let mut problems = Vec::new();
    if let Err(e) = schema_cmd::verify(root) {
        problems.push(e);
    }
    for (path, text) in files {
        match fs::read_to_string(root.join(path)) {
            Ok(current) if &current == text => {}
            Ok(_) => problems
                .push(format!("{} is stale (edited by hand, or the generator or schema changed)", path.display())),
            Err(_) => problems.push(format!("{} is missing", path.display())),
        }
    }
    for stale in stale_files(root, files) {
        problems.push(format!("{} is no longer generated", stale.display()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\nrun `cargo xtask codegen` to regenerate", problems.join("\n")))
    }
}

fn stale_files(root: &Path, files: &BTreeMap<PathBuf, String>) -> Vec<PathBuf> {
    let mut stale = Vec::new();
    for dir in OWNED_DIRS {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = fs::read_dir(&d) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(rel) = path.strip_prefix(root) {
                    if !files.contains_key(rel) {
                        stale.push(rel.to_path_buf());
                    }
                }
            }
        }
    }
    stale.sort();
    stale
}

/// `cargo xtask codegen --schema FILE --out DIR`: a standalone crate for one schema file.
pub fn standalone(schema: &Path, out: &Path) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let name = schema.display().to_string();
    let protocol = load(schema, &name)?;
    let file_name = schema.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or(name.clone());
    let types = emit::types_module(&protocol, &file_name)?;
    let methods = emit_methods::methods_module(&protocol, &file_name)?;
    let lib = emit::render(
        &file_name,
        quote::quote! {
            //! Agent Client Protocol types generated from one schema file.
            pub mod support;
            mod types;
            pub mod methods;
            pub use support::{Defaulted, JsonObject, Meta, Patch};
            pub use types::*;
        },
    )?;
    let crate_name = out
        .file_name()
        .map(|n| n.to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric(), "-"))
        .filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or_else(|| "acp-types-standalone".into());
    let manifest = format!(
        "# @generated by `cargo xtask codegen` from {file_name}; do not edit.\n\
         [package]\nname = \"{crate_name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [features]\nunstable = []\nschemars = [\"dep:schemars\"]\n\n\
         [dependencies]\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
         serde_json = {{ version = \"1\", features = [\"preserve_order\", \"raw_value\"] }}\n\
         serde_path_to_error = \"0.1\"\n\
         schemars = {{ version = \"1\", optional = true }}\n\n\
         [workspace]\n"
    );
    let mut files: Vec<(PathBuf, String)> = vec![
        (out.join("Cargo.toml"), manifest),
        (out.join("src/lib.rs"), lib),
        (out.join("src/types.rs"), types),
        (out.join("src/methods.rs"), methods),
    ];
    for (file, text) in SUPPORT {
        files.push((out.join("src/support").join(file), text.to_string()));
    }
    for (path, text) in &files {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(vec![format!(
        "{name}: {} types, {} methods, {:.1} ms -> {}",
        protocol.types.len(),
        protocol.methods.len(),
        start.elapsed().as_secs_f64() * 1e3,
        out.display()
    )])
}

#[cfg(test)]
mod tests {
    /// Standalone crates carry every hand-written support file.
    #[test]
    fn support_list_is_complete() {
        let dir = crate::project_root().join("generated/src/support");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("support dir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        on_disk.sort();
        let mut listed: Vec<String> = super::SUPPORT.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(listed, on_disk);
    }
}
