//! The generator. One direction of flow, each stage in its own module:
//!
//! ```text
//! schema/vN/*.json ──load──▶ JSON Schema model ──lower──▶ protocol IR ──merge──▶ version IR ──emit──▶ generated/
//!                                                          (ir)   │    (stable + unstable)
//!                                                                 └──diff──▶ report (markdown / json / text)
//! ```
//!
//! - [`mod@load`] parses a schema file into the JSON Schema model;
//! - [`lower`] turns the model into the protocol IR ([`ir`]), making every decision that needs the
//!   schema (names via [`naming`], presence, tags, method sides, cycles and boxes);
//! - [`merge`] joins the stable and unstable IR of one version;
//! - [`emit`] prints Rust from the IR, [`diff`] compares two IRs; neither reads JSON Schema;
//! - [`samples`] makes random valid instances of IR types, for property tests;
//! - [`mod@error`] holds the one error type of the API, [`Error`]: a problem in a schema is a
//!   [`SchemaError`] (file, JSON pointer, and a [`error::SchemaErrorKind`] saying what is wrong
//!   and, for a construct the generator does not support, what it supports).
//!
//! This package is the engine only: [`generate`] runs the pipeline over the committed schemas
//! and returns every file under `generated/` (and the migration reports between consecutive
//! versions, `schema/v1-to-v2.md`) as text; [`standalone`] does the same for one schema file. It
//! writes nothing and calls no driver: `cargo xtask` (the `xtask` package) owns the command line,
//! writing files, freshness and the schema pins. What generates despite a problem (an annotation
//! the generator does not know, a request without a response type) is a [`Warning`]: in
//! [`Generated::warnings`] and on every lowered [`Protocol`], for the drivers to print.

pub mod diff;
pub mod emit;
pub mod error;
pub mod ir;
pub mod load;
pub mod lower;
pub mod merge;
pub mod naming;
pub mod samples;
pub mod warning;

use emit::crates::SchemaVersion;
pub use error::{Error, LoadError, SchemaError};
use ir::Protocol;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;
pub use warning::Warning;

/// The migration report between two consecutive versions' stable schemas (`cargo xtask diff vN
/// vM`), e.g. `schema/v1-to-v2.md`.
pub fn migration_report_path(old: &SchemaVersion, new: &SchemaVersion) -> PathBuf {
    PathBuf::from(format!("schema/{}-to-{}.md", old.dir, new.dir))
}

/// The protocol versions under `schema/`: every directory named `vN`, oldest first.
pub fn versions(root: &Path) -> Result<Vec<SchemaVersion>, Error> {
    let dir = root.join("schema");
    let entries = fs::read_dir(&dir).map_err(|error| Error::Io { path: dir.clone(), error })?;
    let mut versions: Vec<SchemaVersion> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .filter_map(|e| SchemaVersion::parse(&e.file_name().to_string_lossy()))
        .collect();
    versions.sort();
    if versions.is_empty() {
        return Err(Error::NoVersions { dir });
    }
    Ok(versions)
}

/// Reads, parses and lowers one schema file; `name` is how it is shown (a relative path).
pub fn load(path: &Path, name: &str) -> Result<Protocol, LoadError> {
    let text = fs::read_to_string(path).map_err(|error| LoadError::Read { file: name.to_string(), error })?;
    load_text(&text, name)
}

/// Parses and lowers the text of one schema file; `name` is how it is shown.
pub fn load_text(text: &str, name: &str) -> Result<Protocol, LoadError> {
    let doc = load::parse(name, text)?;
    lower::lower(&doc)
}

/// What [`generate`] produces for the committed schemas.
#[derive(Debug)]
pub struct Generated {
    /// Every file under `generated/` (and the migration reports), by path relative to the root.
    pub files: BTreeMap<PathBuf, String>,
    /// One summary line per schema file.
    pub lines: Vec<String>,
    /// What generated anyway (the warnings channel): unknown annotations, requests without a
    /// response type, in each version's files, sorted by file and pointer. The drivers print them.
    pub warnings: Vec<Warning>,
}

/// Every file the generator produces for the committed schemas, with a summary line per schema
/// file and the warnings.
pub fn generate(root: &Path) -> Result<Generated, Error> {
    let mut files = BTreeMap::new();
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    let mut stables = Vec::new();
    let versions = versions(root)?;
    files.insert(PathBuf::from("generated/Cargo.toml"), emit::crates::facade_manifest(&versions));
    files.insert(PathBuf::from("generated/src/lib.rs"), emit::crates::facade_lib(&versions)?);
    files.insert(PathBuf::from("generated/src/items.rs"), emit::crates::facade_items(&versions)?);
    for v in &versions {
        let version = &v.dir;
        files.insert(PathBuf::from(format!("generated/{version}/Cargo.toml")), emit::crates::version_manifest(v));
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
                Err(e) => errors.push(Error::Load(e)),
            }
        }
        let [stable, unstable] = loaded.as_slice() else {
            continue;
        };
        warnings.extend(stable.warnings.iter().chain(&unstable.warnings).cloned());
        let merged = match merge::merge(stable, unstable) {
            Ok(merged) => merged,
            Err(e) => {
                errors.push(Error::Schema(e));
                continue;
            }
        };
        let sources = format!("{stable_name} and {unstable_name}");
        match emit::types_module(&merged, &sources) {
            Ok(text) => {
                files.insert(PathBuf::from(format!("generated/{version}/src/types.rs")), text);
            }
            Err(e) => errors.push(e),
        }
        match emit::methods::methods_module(&merged, &sources) {
            Ok(text) => {
                files.insert(PathBuf::from(format!("generated/{version}/src/methods.rs")), text);
            }
            Err(e) => errors.push(Error::Emit(e)),
        }
        let state = match emit::state::state_module(&merged, &sources) {
            Ok(state) => state,
            Err(e) => {
                errors.push(Error::Emit(e));
                None
            }
        };
        let has_state = state.is_some();
        if let Some(text) = state {
            files.insert(PathBuf::from(format!("generated/{version}/src/state.rs")), text);
        }
        files.insert(
            PathBuf::from(format!("generated/{version}/src/lib.rs")),
            emit::crates::version_lib(v, &sources, has_state)?,
        );
        let texts = [&stable_name, &unstable_name].map(|name| {
            fs::read_to_string(root.join(name)).map_err(|error| Error::Io { path: PathBuf::from(name), error })
        });
        match texts {
            [Ok(stable_text), Ok(unstable_text)] => {
                files.insert(
                    PathBuf::from(format!("generated/{version}/src/schema_json.rs")),
                    emit::crates::schema_json_module(v, &sources, &stable_text, &unstable_text),
                );
            }
            [Err(e), _] | [_, Err(e)] => errors.push(e),
        }
        stables.push((v, loaded.swap_remove(0)));
    }
    for pair in stables.windows(2) {
        let [(old_version, old), (new_version, new)] = pair else { continue };
        files.insert(
            migration_report_path(old_version, new_version),
            migration_report(old, new, old_version, new_version),
        );
    }
    match Error::from_list(errors) {
        Some(e) => Err(e),
        None => Ok(Generated { files, lines, warnings }),
    }
}

/// `cargo xtask diff vN vM --format markdown` under a generated-file header.
fn migration_report(
    old: &Protocol,
    new: &Protocol,
    old_version: &SchemaVersion,
    new_version: &SchemaVersion,
) -> String {
    format!(
        "<!-- @generated by `cargo xtask codegen` (`cargo xtask diff {} {} --format markdown`) from {} and {}; do not \
         edit. -->\n\n{}",
        old_version.dir,
        new_version.dir,
        old.source,
        new.source,
        diff::render::markdown(&diff::diff(old, new))
    )
}

/// The standalone crate of one schema file (`cargo xtask codegen --schema FILE --out DIR`): the
/// lowered protocol (its warnings in [`Protocol::warnings`]) and its four files, by path relative
/// to the crate's directory. `crate_name`
/// names the package; `support` is the directory of the support crate it depends on.
pub fn standalone(
    schema: &Path,
    crate_name: &str,
    support: &Path,
    workspace: emit::crates::Workspace,
) -> Result<(Protocol, Vec<(PathBuf, String)>), Error> {
    let name = schema.display().to_string();
    let protocol = load(schema, &name)?;
    let file_name = schema.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or(name);
    let types = emit::types_module(&protocol, &file_name)?;
    let methods = emit::methods::methods_module(&protocol, &file_name)?;
    let (manifest, lib) = emit::crates::standalone(crate_name, &file_name, support, workspace)?;
    let files = vec![
        (PathBuf::from("Cargo.toml"), manifest),
        (PathBuf::from("src/lib.rs"), lib),
        (PathBuf::from("src/types.rs"), types),
        (PathBuf::from("src/methods.rs"), methods),
    ];
    Ok((protocol, files))
}
