//! The schemas at their source: derived from the official `agent-client-protocol-schema` crate
//! (the protocol's Rust definitions, published on crates.io before any JSON is), by our generator
//! package `xtask/schema-crate/` (`cargo xtask schema pull --crate`).
//!
//! Owns `.cache/schemas/crate/`: one directory per crate version holding the generator's manifest
//! (the committed one, with the version pinned exactly and the program's path made absolute) and
//! its `Cargo.lock` (whose checksum of the crate is the `.crate` file's sha256, checked by cargo
//! on download), and `target/`, shared by every version and file: the crate's dependencies build
//! once, the crate itself once per kind of file (stable or unstable: its features decide which),
//! the program printing the v1 and the v2 file of that kind from the one build.

use crate::process;
use std::fs;
use std::path::{Path, PathBuf};

/// The crate the schemas are derived from.
pub const CRATE: &str = "agent-client-protocol-schema";

/// Our generator package, relative to the workspace root.
pub const GENERATOR: &str = "xtask/schema-crate";

/// Where the generator is built, relative to the workspace root.
pub const CACHE: &str = ".cache/schemas/crate";

/// The four files, relative to `schema/`, and the generator's features that print each.
pub const FILES: [(&str, &[&str]); 4] = [
    ("v1/schema.json", &[]),
    ("v1/schema.unstable.json", &["unstable"]),
    ("v2/schema.json", &["v2"]),
    ("v2/schema.unstable.json", &["v2", "unstable"]),
];

/// What one version of the crate gave.
#[derive(Debug, Clone)]
pub struct Derived {
    pub version: String,
    /// The sha256 of the `.crate` file, as cargo's lockfile records it.
    pub crate_sha256: String,
    pub license: String,
    pub files: Vec<DerivedFile>,
}

/// One schema file printed by the generator.
#[derive(Debug, Clone)]
pub struct DerivedFile {
    /// Relative to `schema/`, e.g. `v2/schema.unstable.json`.
    pub rel: &'static str,
    /// The generator's features that select this file (the version-dependent ones included); the
    /// build that printed it may have had those of the other version's file of its kind too.
    pub features: Vec<&'static str>,
    pub bytes: Vec<u8>,
}

/// The newest version of the crate on crates.io: `cargo info`, which reads the registry's index
/// (the search API it would need for `cargo search` is not on every mirror), run outside this
/// workspace (inside, it reports the version our lockfile has).
pub fn newest_version() -> Result<String, String> {
    let mut info = process::cargo();
    info.args(["info", CRATE]).current_dir(std::env::temp_dir());
    let stdout = process::capture(&mut info)?;
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("version: ")?.split_whitespace().next().map(str::to_string))
        .ok_or_else(|| format!("`cargo info {CRATE}` named no version:\n{stdout}"))
}

/// Builds the generator against `version` of the crate and prints the files of `FILES` whose
/// path is in `which` (all four when empty).
pub fn derive(root: &Path, version: &str, which: &[&str]) -> Result<Derived, String> {
    let exact =
        semver::Version::parse(version).map_err(|e| format!("{CRATE} {version:?}: not an exact version: {e}"))?;
    let dir = root.join(CACHE).join(exact.to_string());
    let manifest = write_manifest(root, &dir, version)?;
    let source = crate_source(&manifest)?;
    let crate_sha256 = locked_checksum(&dir.join("Cargo.lock"), version)?;
    let extra = version_features(&source)?;
    let features_of = |base: &[&'static str]| -> Vec<&'static str> {
        let mut features = base.to_vec();
        features.extend(extra.iter().filter(|(_, applies)| applies(base)).map(|(f, _)| *f));
        features
    };
    let wanted: Vec<(&'static str, &'static [&'static str])> =
        FILES.into_iter().filter(|(rel, _)| which.is_empty() || which.contains(rel)).collect();
    let mut files = Vec::new();
    for &(rel, base) in &wanted {
        // One build per kind of file (stable or unstable): the features of every wanted file of
        // that kind, so that its v1 and v2 files come from the same build (the crate's features
        // are the same for both; `v2` only compiles the v2 module in). Half the builds.
        let unstable = base.contains(&"unstable");
        let mut build: Vec<&'static str> = wanted
            .iter()
            .filter(|(_, other)| other.contains(&"unstable") == unstable)
            .flat_map(|(_, other)| features_of(other))
            .collect();
        build.sort_unstable();
        build.dedup();
        let version = rel.split('/').next().unwrap_or("v1");
        let bytes = run_generator(root, &manifest, &build, version)?;
        files.push(DerivedFile { rel, features: features_of(base), bytes });
    }
    Ok(Derived { version: version.to_string(), crate_sha256, license: source.license, files })
}

/// The committed manifest with the crate's version pinned and the program's path absolute.
fn write_manifest(root: &Path, dir: &Path, version: &str) -> Result<PathBuf, String> {
    let template_path = root.join(GENERATOR).join("Cargo.toml");
    let template =
        fs::read_to_string(&template_path).map_err(|e| format!("cannot read {}: {e}", template_path.display()))?;
    let program = root.join(GENERATOR).join("main.rs");
    let text = template
        .replace("\"=0.0.0\"", &format!("\"={version}\""))
        .replace("path = \"main.rs\"", &format!("path = {}", toml_string(&program.to_string_lossy())));
    if !text.contains(&format!("\"={version}\"")) || !text.contains(&program.to_string_lossy().into_owned()) {
        return Err(format!("{}: no `\"=0.0.0\"` or `path = \"main.rs\"` to fill in", template_path.display()));
    }
    let manifest = dir.join("Cargo.toml");
    crate::files::write_if_changed(&manifest, text.as_bytes())?;
    Ok(manifest)
}

fn toml_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Where cargo unpacked the crate, and its licence.
struct CrateSource {
    dir: PathBuf,
    license: String,
}

/// `cargo metadata` on the generator: fetches the crate (and writes the lockfile) and says where
/// its source is.
fn crate_source(manifest: &Path) -> Result<CrateSource, String> {
    let mut metadata = process::cargo();
    metadata.args(["metadata", "--format-version", "1", "--manifest-path"]).arg(manifest);
    let stdout = process::capture(&mut metadata)?;
    let json: serde_json::Value =
        serde_json::from_str(&stdout).map_err(|e| format!("cargo metadata printed no JSON: {e}"))?;
    let package = json["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == CRATE))
        .ok_or_else(|| format!("cargo metadata lists no {CRATE}"))?;
    let manifest_path = package["manifest_path"].as_str().ok_or("cargo metadata: no manifest_path")?;
    let dir = Path::new(manifest_path).parent().ok_or("cargo metadata: a manifest_path without a directory")?;
    let license = package["license"].as_str().unwrap_or("unknown").to_string();
    Ok(CrateSource { dir: dir.to_path_buf(), license })
}

/// The `checksum` cargo recorded for the crate: the sha256 of its `.crate` file.
fn locked_checksum(lockfile: &Path, version: &str) -> Result<String, String> {
    let text = fs::read_to_string(lockfile).map_err(|e| format!("cannot read {}: {e}", lockfile.display()))?;
    let lock: toml::Value = toml::from_str(&text).map_err(|e| format!("{}: {e}", lockfile.display()))?;
    lock.get("package")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .find(|p| p.get("name").and_then(toml::Value::as_str) == Some(CRATE))
        .filter(|p| p.get("version").and_then(toml::Value::as_str) == Some(version))
        .and_then(|p| p.get("checksum").and_then(toml::Value::as_str))
        .map(str::to_string)
        .ok_or_else(|| format!("{}: no checksum for {CRATE} {version}", lockfile.display()))
}

/// A generator feature that depends on the crate version, and the files it applies to (by their
/// base features).
type VersionFeature = (&'static str, fn(&[&str]) -> bool);

/// What the crate's version has that changes its roots: JSON-RPC batches in v2 (the crates of
/// 1.5.0 to 1.7.0 export `v2::JsonRpcBatch`, and their v2 roots list batches), proxy chains in
/// its `unstable` feature (then the unstable roots list the proxy's messages).
fn version_features(source: &CrateSource) -> Result<Vec<VersionFeature>, String> {
    let read = |rel: &str| {
        let path = source.dir.join(rel);
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let mut features: Vec<VersionFeature> = Vec::new();
    let v2 = read("src/v2/mod.rs").unwrap_or_default();
    if v2.lines().any(|l| l.starts_with("pub use") && l.contains("JsonRpcBatch")) {
        features.push(("batch", |base| base.contains(&"v2")));
    }
    let manifest: toml::Value =
        toml::from_str(&read("Cargo.toml")?).map_err(|e| format!("{CRATE}'s Cargo.toml: {e}"))?;
    let unstable = manifest.get("features").and_then(|f| f.get("unstable")).and_then(toml::Value::as_array);
    if unstable.is_some_and(|list| list.iter().any(|f| f.as_str() == Some("unstable_proxy_chains"))) {
        features.push(("proxy", |base| base.contains(&"unstable")));
    }
    Ok(features)
}

/// Builds (if needed) and runs the generator with `features`; what it prints for `version`
/// (`v1`, or `v2` when `features` has `v2`).
fn run_generator(root: &Path, manifest: &Path, features: &[&str], version: &str) -> Result<Vec<u8>, String> {
    let mut run = process::cargo();
    // No debug info: a program run once per build, whose builds would take gigabytes with it.
    run.args(["run", "--quiet", "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TARGET_DIR", root.join(CACHE).join("target"))
        .env("CARGO_PROFILE_DEV_DEBUG", "false");
    if !features.is_empty() {
        run.arg(format!("--features={}", features.join(",")));
    }
    run.args(["--", version]);
    let stdout = process::capture(&mut run)?;
    serde_json::from_str::<serde_json::Value>(&stdout).map_err(|e| format!("the generator printed no JSON: {e}"))?;
    Ok(stdout.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_pins_the_version_and_points_at_the_committed_program() {
        let root = crate::project_root();
        let dir = tempfile::tempdir().unwrap();
        let manifest = write_manifest(&root, dir.path(), "1.20.0").unwrap();
        let text = fs::read_to_string(manifest).unwrap();
        assert!(text.contains("agent-client-protocol-schema = \"=1.20.0\""), "{text}");
        assert!(text.contains(&toml_string(&root.join(GENERATOR).join("main.rs").to_string_lossy())), "{text}");
        assert!(!text.contains("=0.0.0"), "{text}");
    }

    #[test]
    fn the_crate_checksum_comes_from_the_lockfile_for_that_exact_version() {
        let dir = tempfile::tempdir().unwrap();
        let lock = dir.path().join("Cargo.lock");
        fs::write(
            &lock,
            "version = 4\n[[package]]\nname = \"agent-client-protocol-schema\"\nversion = \"1.20.0\"\n\
             source = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"abc123\"\n",
        )
        .unwrap();
        assert_eq!(locked_checksum(&lock, "1.20.0").unwrap(), "abc123");
        assert!(locked_checksum(&lock, "1.7.0").unwrap_err().contains("no checksum"));
    }

    fn fake_crate(v2_mod: &str, unstable: &str) -> (tempfile::TempDir, CrateSource) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("src/v2")).unwrap();
        fs::write(dir.path().join("src/v2/mod.rs"), v2_mod).unwrap();
        fs::write(
            dir.path().join("Cargo.toml"),
            format!("[package]\nname = \"x\"\n[features]\nunstable = {unstable}\n"),
        )
        .unwrap();
        let source = CrateSource { dir: dir.path().to_path_buf(), license: "Apache-2.0".into() };
        (dir, source)
    }

    fn names(source: &CrateSource, base: &[&str]) -> Vec<&'static str> {
        version_features(source).unwrap().into_iter().filter(|(_, applies)| applies(base)).map(|(f, _)| f).collect()
    }

    #[test]
    fn batches_and_proxies_follow_what_the_crate_version_has() {
        // 1.7.0: v2 exports batches, no proxy chains.
        let (_dir, old) = fake_crate("pub use crate::rpc::{JsonRpcBatch, JsonRpcMessage};\n", "[\"unstable_nes\"]");
        assert_eq!(names(&old, &["v2", "unstable"]), ["batch"]);
        assert_eq!(names(&old, &[]), Vec::<&str>::new());
        // 1.20.0: no v2 batches, proxy chains in `unstable`.
        let (_dir, new) =
            fake_crate("pub use crate::rpc::{JsonRpcMessage, Notification};\n", "[\"unstable_proxy_chains\"]");
        assert_eq!(names(&new, &["v2", "unstable"]), ["proxy"]);
        assert_eq!(names(&new, &["unstable"]), ["proxy"]);
        assert_eq!(names(&new, &["v2"]), Vec::<&str>::new());
    }
}
