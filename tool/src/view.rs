//! `acp view` (and `acp tap --html`): a transcript drawn as an interactive sequence diagram in one
//! self-contained HTML file, with `acp check`'s verdict on every message. [`model`] builds what is
//! drawn from the transcript and the checker's reports; [`render`] writes the page.

pub mod model;
pub mod render;
pub mod state;

use crate::check::ExtSchemas;
use acp_types::Version;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// The page for transcripts given as (name, bytes); `version` as `acp check --protocol-version`.
pub fn html(files: &[(String, Vec<u8>)], version: Option<Version>, ext: Option<&Arc<ExtSchemas>>) -> String {
    let models: Vec<model::File> =
        files.iter().map(|(name, bytes)| model::build(name, bytes, version, ext.cloned())).collect();
    render::page(&models)
}

/// Where the page goes when no `-o` is given: beside the first file, its extension `.html`
/// (`-` for standard output when the first file is standard input).
pub fn default_output(first: &Path) -> PathBuf {
    if first.as_os_str() == "-" {
        PathBuf::from("-")
    } else {
        first.with_extension("html")
    }
}

/// Writes `page` to `out` (`-`: standard output).
pub fn write(out: &Path, page: &str) -> std::io::Result<()> {
    if out.as_os_str() == "-" {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(page.as_bytes())?;
        stdout.flush()
    } else {
        std::fs::write(out, page)
    }
}

/// `acp view FILE… [-o OUT]`: exit status 2 when a file cannot be read or the page written.
pub fn run(
    files: &[PathBuf],
    out: Option<PathBuf>,
    version: Option<Version>,
    ext: Option<Arc<ExtSchemas>>,
) -> ExitCode {
    let mut read = Vec::new();
    for file in files {
        match crate::input::read(file) {
            Ok(bytes) => read.push((file.display().to_string(), bytes)),
            Err(e) => {
                eprintln!("acp view: cannot read {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    }
    let Some(out) = out.or_else(|| files.first().map(|first| default_output(first))) else {
        eprintln!("acp view: no transcript given");
        return ExitCode::from(2);
    };
    let page = html(&read, version, ext.as_ref());
    if let Err(e) = write(&out, &page) {
        eprintln!("acp view: cannot write {}: {e}", out.display());
        return ExitCode::from(2);
    }
    if out.as_os_str() != "-" {
        eprintln!("acp view: wrote {}", out.display());
    }
    ExitCode::SUCCESS
}
