//! `cargo xtask diff OLD NEW`: the command around the engine's differ ([`acp_codegen::diff`]).
//!
//! What `OLD` and `NEW` may be: `v1`, `v2` (the committed stable schemas),
//! `v1-unstable`, `v2-unstable`, a schema file, or `REV:PATH` read with `git show` in the project
//! root. Each is lowered as one file; stable and unstable files are never merged here.

use acp_codegen::diff::{diff, render, Severity};
use acp_codegen::ir::Protocol;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For a terminal.
    Text,
    /// A changelog, as committed in `schema/v1-to-v2.md`.
    Markdown,
    /// For scripts.
    Json,
}

/// `--fail-on`: the least severity that makes the command exit with status 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// A breaking finding fails.
    Breaking,
    /// A breaking finding or a warning fails.
    Warning,
    /// Nothing fails (the default).
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            FailOn::Never => None,
            FailOn::Breaking => Some(Severity::Breaking),
            FailOn::Warning => Some(Severity::Warning),
        }
    }
}

/// `cargo xtask diff OLD NEW`: the rendered report, and whether it reaches `fail_on`. An error
/// means bad input (exit status 2).
pub fn run(root: &Path, old: &str, new: &str, format: Format, fail_on: FailOn) -> Result<(String, bool), String> {
    let (old_p, new_p) = match (load(root, old), load(root, new)) {
        (Ok(o), Ok(n)) => (o, n),
        (Err(e), Ok(_)) | (Ok(_), Err(e)) => return Err(e),
        (Err(a), Err(b)) => return Err(format!("{a}\n{b}")),
    };
    let report = diff(&old_p, &new_p);
    let text = match format {
        Format::Text => render::text(&report),
        Format::Markdown => render::markdown(&report),
        Format::Json => render::json(&report),
    };
    Ok((text, fail_on.threshold().is_some_and(|t| report.reaches(t))))
}

/// `cargo xtask diff OLD NEW` as the command line runs it: the report on stdout; exit status 0,
/// 1 when a finding reaches `fail_on`, 2 on bad input (the error on stderr).
pub fn run_command(root: &Path, old: &str, new: &str, format: Format, fail_on: FailOn) -> ExitCode {
    match run(root, old, new, format, fail_on) {
        Ok((report, failed)) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), report.as_bytes());
            ExitCode::from(u8::from(failed))
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// Reads and lowers the schema that `spec` names; its warnings go to stderr. An extension schema
/// (its `$ref`s name a core version, or it has `x-method` definitions and no envelopes) is joined
/// to the committed core schema it extends first, so two revisions of an extension diff as two
/// protocols: its methods, its types, and the core types it reaches.
pub fn load(root: &Path, spec: &str) -> Result<Protocol, String> {
    let (text, name) = match resolve(root, spec)? {
        Source::File(path, name) => {
            (std::fs::read_to_string(&path).map_err(|e| format!("{name}: cannot read: {e}"))?, name)
        }
        Source::Git { rev, path } => (git_show(root, &rev, &path)?, spec.to_string()),
    };
    let protocol = match extension_core(root, &name, &text)? {
        Some(core) => {
            let core_text = std::fs::read_to_string(root.join(&core)).map_err(|e| format!("{core}: {e}"))?;
            acp_codegen::ext::load(&name, &text, &core, &core_text).map_err(|e| e.to_string())?.protocol
        }
        None => acp_codegen::load_text(&text, &name)?,
    };
    for w in &protocol.warnings {
        eprintln!("{w}");
    }
    Ok(protocol)
}

/// The committed core schema an extension schema extends (`schema/vN/schema.json`), or `None`
/// for a core schema. An extension is a file whose `$ref`s name a core version
/// (`../vN/schema.json#/$defs/…`), or one without the JSON-RPC envelopes of a core schema (no
/// top-level `anyOf`) whose `$defs` carry `x-method`: that extends the newest version.
fn extension_core(root: &Path, name: &str, text: &str) -> Result<Option<String>, String> {
    let targets = acp_codegen::ext::targets(name, text).map_err(|e| e.to_string())?;
    if let [.., newest] = targets.as_slice() {
        return Ok(Some(format!("schema/{newest}/schema.json")));
    }
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{name}: not JSON: {e}"))?;
    let enveloped = value.get("anyOf").is_some() || value.get("oneOf").is_some();
    let annotated = value
        .get("$defs")
        .and_then(|d| d.as_object())
        .is_some_and(|defs| defs.values().any(|d| d.get("x-method").is_some()));
    if enveloped || !annotated {
        return Ok(None);
    }
    let newest = acp_codegen::versions(root).map_err(|e| e.to_string())?.pop().map(|v| v.dir);
    Ok(newest.map(|v| format!("schema/{v}/schema.json")))
}

enum Source {
    /// A file and the name it is shown under.
    File(PathBuf, String),
    Git {
        rev: String,
        path: String,
    },
}

fn resolve(root: &Path, spec: &str) -> Result<Source, String> {
    if let Some(name) = committed(spec) {
        return Ok(Source::File(root.join(&name), name));
    }
    let path = Path::new(spec);
    if path.is_file() {
        return Ok(Source::File(path.to_path_buf(), spec.to_string()));
    }
    if let Some((rev, file)) = spec.split_once(':') {
        if !rev.is_empty() && !file.is_empty() && !rev.starts_with('-') {
            return Ok(Source::Git { rev: rev.to_string(), path: file.to_string() });
        }
    }
    Err(format!(
        "{spec}: no such file; expected a schema file, v1, v2, v1-unstable, v2-unstable or REV:PATH (read with \
         `git show`)"
    ))
}

/// `v1` → `schema/v1/schema.json`, `v2-unstable` → `schema/v2/schema.unstable.json`.
fn committed(spec: &str) -> Option<String> {
    let (version, file) = match spec.strip_suffix("-unstable") {
        Some(v) => (v, "schema.unstable.json"),
        None => (spec, "schema.json"),
    };
    let digits = version.strip_prefix('v')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(format!("schema/{version}/{file}"))
}

fn git_show(root: &Path, rev: &str, path: &str) -> Result<String, String> {
    let object = format!("{rev}:{path}");
    let output = Command::new("git")
        .args(["show", "--no-textconv", &object])
        .current_dir(root)
        .output()
        .map_err(|e| format!("{object}: cannot run `git show`: {e}"))?;
    if !output.status.success() {
        return Err(format!("{object}: `git show` failed: {}", String::from_utf8_lossy(&output.stderr).trim()));
    }
    String::from_utf8(output.stdout).map_err(|_| format!("{object}: not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_names() {
        assert_eq!(committed("v1").as_deref(), Some("schema/v1/schema.json"));
        assert_eq!(committed("v2-unstable").as_deref(), Some("schema/v2/schema.unstable.json"));
        for other in ["v", "va", "v1-beta", "1", "schema.json", "-unstable"] {
            assert_eq!(committed(other), None, "{other}");
        }
    }

    #[test]
    fn unknown_specs_are_errors() {
        let root = crate::project_root();
        for bad in ["no-such-file.json", ":x", "HEAD:", "-x:y"] {
            let err = resolve(&root, bad).err().unwrap_or_default();
            assert!(err.contains("no such file"), "{bad}: {err}");
        }
    }
}
