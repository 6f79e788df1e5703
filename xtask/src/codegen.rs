//! `cargo xtask codegen`: runs the generator (the `acp-codegen` package) over the committed
//! schemas and writes (or, with `--check`, compares) everything under `generated/` that the
//! generator owns, with the schemas' pins; or writes the standalone crate of one schema file.

use crate::{files, schema};
use acp_codegen::emit::crates::Workspace;
use acp_codegen::generate;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Everything under this directory is the generator's: a file it does not write is stale.
const OWNED_DIR: &str = "generated";

/// `cargo xtask codegen [--check]`.
pub fn run(root: &Path, check_only: bool) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let acp_codegen::Generated { files, mut lines, warnings } = generate(root)?;
    for w in &warnings {
        eprintln!("{w}");
    }
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
        files::write_if_changed(&root.join(path), text.as_bytes())?;
    }
    for stale in stale_files(root, &files)? {
        fs::remove_file(root.join(&stale)).map_err(|e| format!("{}: {e}", stale.display()))?;
    }
    lines.push(format!("wrote {} files in {:.0} ms", files.len(), start.elapsed().as_secs_f64() * 1e3));
    Ok(lines)
}

/// The freshness check shared by `--check` and the test suite: the schemas match their pins and
/// every generated file matches what the generator would write now. Never writes.
pub fn check(root: &Path) -> Result<(), String> {
    check_files(root, &generate(root)?.files)
}

fn check_files(root: &Path, files: &BTreeMap<PathBuf, String>) -> Result<(), String> {
    let mut problems = Vec::new();
    if let Err(e) = schema::verify(root) {
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
    for stale in stale_files(root, files)? {
        problems.push(format!("{} is no longer generated", stale.display()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\nrun `cargo xtask codegen` to regenerate", problems.join("\n")))
    }
}

fn stale_files(root: &Path, files: &BTreeMap<PathBuf, String>) -> Result<Vec<PathBuf>, String> {
    let owned = files::files_under(&root.join(OWNED_DIR))?;
    Ok(owned.into_iter().map(|rel| Path::new(OWNED_DIR).join(rel)).filter(|p| !files.contains_key(p)).collect())
}

/// `cargo xtask codegen --schema FILE --out DIR`: a standalone crate for one schema file.
pub fn standalone(schema: &Path, out: &Path) -> Result<Vec<String>, String> {
    standalone_in(schema, out, Workspace::Own)
}

/// [`standalone`], the crate a workspace of its own or a member of the caller's.
pub fn standalone_in(schema: &Path, out: &Path, workspace: Workspace) -> Result<Vec<String>, String> {
    standalone_with(schema, &[], out, workspace)
}

/// `cargo xtask codegen --schema FILE --ext EXT.json … --out DIR`: [`standalone_in`] with
/// extension schemas, each a module `ext::NAME` of the crate.
pub fn standalone_with(
    schema: &Path,
    ext: &[PathBuf],
    out: &Path,
    workspace: Workspace,
) -> Result<Vec<String>, String> {
    let start = Instant::now();
    let crate_name = out
        .file_name()
        .map(|n| n.to_string_lossy().replace(|c: char| !c.is_ascii_alphanumeric(), "-"))
        .filter(|n| n.starts_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or_else(|| "acp-types-standalone".into());
    let support = crate::project_root().join("support");
    let (protocol, files) = acp_codegen::standalone_with(schema, ext, &crate_name, &support, workspace)?;
    for w in &protocol.warnings {
        eprintln!("{w}");
    }
    for (path, text) in &files {
        let path = out.join(path);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let extensions = match ext.len() {
        0 => String::new(),
        n => format!(", {n} extension(s) in ext/"),
    };
    Ok(vec![format!(
        "{}: {} types, {} methods{extensions}, {:.1} ms -> {}",
        schema.display(),
        protocol.types.len(),
        protocol.methods.len(),
        start.elapsed().as_secs_f64() * 1e3,
        out.display()
    )])
}
