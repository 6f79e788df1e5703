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
//! (and the extension schemas of `schema/ext/`, joined to the core version they extend by
//! [`mod@ext`] and generated into its crate as `ext::NAME`) and returns every file under
//! `generated/` (and the migration reports between consecutive versions, `schema/v1-to-v2.md`)
//! as text; [`standalone`] does the same for one schema file ([`standalone_with`]: and its
//! extensions). It
//! writes nothing and calls no driver: `cargo xtask` (the `xtask` package) owns the command line,
//! writing files, freshness and the schema pins. What generates despite a problem (an annotation
//! the generator does not know, a request without a response type) is a [`Warning`]: in
//! [`Generated::warnings`] and on every lowered [`Protocol`], for the drivers to print.

pub mod diff;
pub mod emit;
pub mod error;
pub mod ext;
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
    let extensions = extensions(root, &versions)?;
    files.insert(PathBuf::from("generated/Cargo.toml"), emit::crates::facade_manifest(&versions));
    files.insert(PathBuf::from("generated/src/lib.rs"), emit::crates::facade_lib(&versions)?);
    let mut wire_names = emit::method_names::WireNames::new();
    for v in &versions {
        let version = &v.dir;
        files.insert(PathBuf::from(format!("generated/{version}/Cargo.toml")), emit::crates::version_manifest(v));
        let stable_name = format!("schema/{version}/schema.json");
        let unstable_name = format!("schema/{version}/schema.unstable.json");
        let mut loaded = load_timed(root, [&stable_name, &unstable_name], &mut lines, &mut errors);
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
        emit::method_names::collect(&mut wire_names, v.number, &merged);
        let has_state = version_modules(&merged, &sources, version, &mut files, &mut errors);
        let extensions = extensions.get(version).map_or(&[][..], Vec::as_slice);
        match extension_files(root, &stable_name, extensions, Some(v.number)) {
            Ok(ext) => {
                let dir = PathBuf::from(format!("generated/{version}/src/ext"));
                files.extend(ext.files.into_iter().map(|(path, text)| (dir.join(path), text)));
                lines.extend(ext.lines);
                warnings.extend(ext.warnings);
            }
            Err(e) => errors.push(e),
        }
        let lib = emit::crates::version_lib(v, &sources, has_state, !extensions.is_empty())?;
        files.insert(PathBuf::from(format!("generated/{version}/src/lib.rs")), lib);
        match schema_json(root, v, &sources, [&stable_name, &unstable_name]) {
            Ok(text) => {
                files.insert(PathBuf::from(format!("generated/{version}/src/schema_json.rs")), text);
            }
            Err(e) => errors.push(e),
        }
        stables.push((v, loaded.swap_remove(0)));
    }
    match emit::crates::facade_items(&versions, &wire_names) {
        Ok(items) => {
            files.insert(PathBuf::from("generated/src/items.rs"), items);
        }
        Err(e) => errors.push(Error::Emit(e)),
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

/// Loads each of a version's schema files (stable, then unstable), with a summary line each
/// (types, methods, time taken); the errors go to `errors`.
fn load_timed(root: &Path, names: [&str; 2], lines: &mut Vec<String>, errors: &mut Vec<Error>) -> Vec<Protocol> {
    let mut loaded = Vec::new();
    for name in names {
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
    loaded
}

/// A version's `schema_json.rs`: the text of its schema files (stable, then unstable), embedded.
fn schema_json(root: &Path, v: &SchemaVersion, sources: &str, names: [&str; 2]) -> Result<String, Error> {
    let [stable, unstable] = names.map(|name| {
        fs::read_to_string(root.join(name)).map_err(|error| Error::Io { path: PathBuf::from(name), error })
    });
    Ok(emit::crates::schema_json_module(v, sources, &stable?, &unstable?))
}

/// The modules of a version's merged IR, into `files`: `types.rs`, `methods.rs`, and `state.rs`
/// when its schemas annotate state (`x-state`); whether it has `state.rs`.
fn version_modules(
    merged: &Protocol,
    sources: &str,
    version: &str,
    files: &mut BTreeMap<PathBuf, String>,
    errors: &mut Vec<Error>,
) -> bool {
    let path = |module: &str| PathBuf::from(format!("generated/{version}/src/{module}.rs"));
    match emit::types_module(merged, sources) {
        Ok(text) => {
            files.insert(path("types"), text);
        }
        Err(e) => errors.push(e),
    }
    match emit::methods::methods_module(merged, sources) {
        Ok(text) => {
            files.insert(path("methods"), text);
        }
        Err(e) => errors.push(Error::Emit(e)),
    }
    match emit::state::state_module(merged, sources) {
        Ok(Some(text)) => {
            files.insert(path("state"), text);
            true
        }
        Ok(None) => false,
        Err(e) => {
            errors.push(Error::Emit(e));
            false
        }
    }
}

/// The extension schemas under `schema/ext/` (`*.json`, sorted), by the version they extend:
/// the one their `$ref`s name (`../vN/schema.json`), or every version when they name none.
pub fn extensions(root: &Path, versions: &[SchemaVersion]) -> Result<BTreeMap<String, Vec<String>>, Error> {
    let dir = root.join(EXT_DIR);
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Ok(entries) = fs::read_dir(&dir) else {
        return Ok(out);
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .map(|n| format!("{EXT_DIR}/{n}"))
        .collect();
    names.sort();
    for name in names {
        let text =
            fs::read_to_string(root.join(&name)).map_err(|error| Error::Io { path: name.clone().into(), error })?;
        let mut targets = ext::targets(&name, &text)?;
        if targets.is_empty() {
            targets = versions.iter().map(|v| v.dir.clone()).collect();
        }
        for target in targets {
            if !versions.iter().any(|v| v.dir == target) {
                let kind = error::SchemaErrorKind::UnknownCore { version: target };
                return Err(Error::Schema(SchemaError { file: name, pointer: String::new(), kind: Box::new(kind) }));
            }
            out.entry(target).or_default().push(name.clone());
        }
    }
    Ok(out)
}

/// Where a project keeps its extension schemas.
pub const EXT_DIR: &str = "schema/ext";

/// The `ext/` files of a crate (by path relative to `ext/`), with a summary line per extension
/// and its warnings.
#[derive(Default)]
struct ExtensionFiles {
    files: Vec<(PathBuf, String)>,
    lines: Vec<String>,
    warnings: Vec<Warning>,
}

/// The `ext/` files of a crate whose core schema is `core` (relative to `root`): one module per
/// extension file, and the index. None for no extensions.
fn extension_files(
    root: &Path,
    core: &str,
    extensions: &[String],
    version: Option<u16>,
) -> Result<ExtensionFiles, Error> {
    let mut out = ExtensionFiles::default();
    if extensions.is_empty() {
        return Ok(out);
    }
    let read = |name: &str| fs::read_to_string(root.join(name)).map_err(|error| Error::Io { path: name.into(), error });
    let core_text = read(core)?;
    let mut index = Vec::new();
    let mut errors = Vec::new();
    for name in extensions {
        let stem = Path::new(name).file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let module = emit::ext::module_name(&stem);
        let sources = format!("{name} and {core}");
        let ext_text = read(name)?;
        let start = Instant::now();
        match ext::load(name, &ext_text, core, &core_text) {
            Ok(extension) => match emit::ext::module(&extension, &module, &sources, version) {
                Ok(module_files) => {
                    let docs = serde_json::from_str::<serde_json::Value>(&ext_text)
                        .ok()
                        .and_then(|v| v.get("title").and_then(|t| t.as_str()).map(|t| format!("{t} (`{name}`).")));
                    out.lines.push(format!(
                        "{name} on {core}: {} types, {} methods, {:.1} ms",
                        extension.own.len(),
                        extension.protocol.methods.len(),
                        start.elapsed().as_secs_f64() * 1e3
                    ));
                    out.warnings.extend(extension.protocol.warnings.iter().cloned());
                    index.push((module, docs));
                    out.files.extend(module_files);
                }
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(Error::Load(e)),
        }
    }
    let sources = extensions.join(", ");
    out.files.push((PathBuf::from("mod.rs"), emit::ext::index(&index, &sources)?));
    match Error::from_list(errors) {
        Some(e) => Err(e),
        None => Ok(out),
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
    standalone_with(schema, &[], crate_name, support, workspace)
}

/// [`standalone`] with extension schemas (`--ext EXT.json`, repeatable), each a module
/// `ext::NAME` of the crate, their `$ref`s into a core file (`../vN/schema.json#/$defs/…`) taken
/// as refs into `schema`. The protocol returned is the core's.
pub fn standalone_with(
    schema: &Path,
    extensions: &[PathBuf],
    crate_name: &str,
    support: &Path,
    workspace: emit::crates::Workspace,
) -> Result<(Protocol, Vec<(PathBuf, String)>), Error> {
    let name = schema.display().to_string();
    let protocol = load(schema, &name)?;
    let file_name = schema.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or(name.clone());
    let types = emit::types_module(&protocol, &file_name)?;
    let methods = emit::methods::methods_module(&protocol, &file_name)?;
    let (manifest, lib) =
        emit::crates::standalone_with_ext(crate_name, &file_name, support, workspace, !extensions.is_empty())?;
    let mut files = vec![
        (PathBuf::from("Cargo.toml"), manifest),
        (PathBuf::from("src/lib.rs"), lib),
        (PathBuf::from("src/types.rs"), types),
        (PathBuf::from("src/methods.rs"), methods),
    ];
    if !extensions.is_empty() {
        let names: Vec<String> = extensions.iter().map(|p| p.display().to_string()).collect();
        // The version the extensions' `$ref`s name, if they agree on one.
        let mut targets = Vec::new();
        for path in extensions {
            let text = fs::read_to_string(path).map_err(|error| Error::Io { path: path.clone(), error })?;
            targets.extend(ext::targets(&path.display().to_string(), &text)?);
        }
        targets.sort();
        targets.dedup();
        let version = match targets.as_slice() {
            [one] => SchemaVersion::parse(one).map(|v| v.number),
            _ => None,
        };
        let ext = extension_files(Path::new(""), &name, &names, version)?;
        files.extend(ext.files.into_iter().map(|(path, text)| (Path::new("src/ext").join(path), text)));
    }
    Ok((protocol, files))
}
