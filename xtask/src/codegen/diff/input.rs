//! What `OLD` and `NEW` of `cargo xtask diff` may be: `v1`, `v2` (the committed stable schemas),
//! `v1-unstable`, `v2-unstable`, a schema file, or `REV:PATH` read with `git show` in the project
//! root. Each is lowered as one file; stable and unstable files are never merged here.

use crate::codegen;
use crate::codegen::ir::Protocol;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Reads and lowers the schema that `spec` names.
pub fn load(root: &Path, spec: &str) -> Result<Protocol, String> {
    match resolve(root, spec)? {
        Source::File(path, name) => codegen::load(&path, &name),
        Source::Git { rev, path } => {
            let text = git_show(root, &rev, &path)?;
            codegen::load_text(&text, spec)
        }
    }
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
