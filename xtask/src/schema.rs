//! Pinning of the published ACP schemas: `cargo xtask schema pull` / `verify`.
//!
//! Owns `schema/v1/*.json`, `schema/v2/*.json` and `schema/sources.toml`, which records where
//! each committed file came from (npm package, version, path inside the tarball, sha256,
//! licence). Also fetches older published schemas into a local cache for tests and for
//! `cargo xtask schema history` (which lists every published version here), never into
//! `schema/`.
//!
//! The schemas are taken from the npm tarball rather than the git repository so that the
//! pinned bytes are exactly what the SDK users consume; `npm pack` checks the tarball against
//! the registry's integrity hash, and the system `tar` unpacks it. Or, with `--crate`, from the
//! source npm trails: derived from the official schema crate by our generator ([`from_crate`]);
//! then `sources.toml` records the crate, its version, the `.crate` file's sha256 and each
//! output's sha256.

pub mod from_crate;

use crate::process;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

/// The npm package that ships the schemas.
pub const PACKAGE: &str = "@agentclientprotocol/sdk";

/// The package that shipped them before [`PACKAGE`] (its versions 0.1.2 to 0.4.5).
pub const PREDECESSOR: &str = "@zed-industries/agent-client-protocol";

/// The committed schema files, relative to the workspace root; each is shipped at
/// `package/<same path>` in the tarball.
pub const FILES: [&str; 4] = [
    "schema/v1/schema.json",
    "schema/v1/schema.unstable.json",
    "schema/v2/schema.json",
    "schema/v2/schema.unstable.json",
];

const SOURCES: &str = "schema/sources.toml";
const HEADER: &str = "# Written by `cargo xtask schema pull`; checked by `cargo xtask schema verify`.\n";

/// One `[[file]]` record of `schema/sources.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SourceEntry {
    path: String,
    package: String,
    version: String,
    source: String,
    sha256: String,
    license: String,
    /// Files derived from the schema crate: the sha256 of the `.crate` file they came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    crate_sha256: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sources {
    #[serde(default, rename = "file")]
    files: Vec<SourceEntry>,
}

/// `cargo xtask schema pull [--version X]`: npm pack in a temp dir, verify, write schema/v1/* and
/// schema/v2/*, rewrite schema/sources.toml. Returns human-readable lines to print (one per file
/// written: path, sha256 prefix).
pub fn pull(root: &Path, version: &str) -> Result<Vec<String>, String> {
    let unpacked = fetch_packages(PACKAGE, &[version])?;
    install_from_package(root, &unpacked.package_dir(0), version)
}

/// Where `cargo xtask schema pull` takes the schemas from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// The files the npm package [`PACKAGE`] ships.
    Npm,
    /// Derived from the schema crate [`from_crate::CRATE`].
    Crate,
}

/// Which version `cargo xtask schema pull` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted<'a> {
    /// This one.
    Exact(&'a str),
    /// The newest on the registry (`--crate` without a version; crates only).
    Newest,
    /// The one schema/sources.toml pins when it pins the same source, else (crates) the newest.
    Pinned,
}

/// `cargo xtask schema pull [--from npm|crate] [--version X] [--crate [X]] [--out DIR]`: from
/// `from` (else the source schema/sources.toml pins) at the version `wanted`. `out` (crate only)
/// writes the four files there instead of into schema/.
pub fn pull_command(
    root: &Path,
    from: Option<From>,
    wanted: Wanted<'_>,
    out: Option<&Path>,
) -> Result<Vec<String>, String> {
    let sources = load_sources(root).unwrap_or_default();
    let pinned_from = match sources.files.first() {
        Some(f) if f.package == from_crate::CRATE => From::Crate,
        _ => From::Npm,
    };
    let from = from.unwrap_or(if out.is_some() { From::Crate } else { pinned_from });
    let version = match wanted {
        Wanted::Exact(v) => v.to_string(),
        Wanted::Pinned if from == pinned_from => pinned_of(&sources)?,
        Wanted::Newest | Wanted::Pinned if from == From::Crate => from_crate::newest_version()?,
        Wanted::Newest | Wanted::Pinned => return Err(format!("pass `--version <v>` of {PACKAGE}")),
    };
    match (from, out) {
        (From::Npm, None) => pull(root, &version),
        (From::Npm, Some(_)) => Err("`--out` writes derived files: use it with `--crate`".into()),
        (From::Crate, out) => pull_crate(root, &version, out),
    }
}

/// `cargo xtask schema pull --crate VERSION [--out DIR]`: the four files derived from the schema
/// crate, into `out` (nothing else written) or into schema/ with schema/sources.toml.
pub fn pull_crate(root: &Path, version: &str, out: Option<&Path>) -> Result<Vec<String>, String> {
    let derived = from_crate::derive(root, version, &[])?;
    let mut lines = Vec::new();
    let mut entries = Vec::new();
    let mut writes = Vec::new();
    for file in &derived.files {
        let sha256 = sha256_hex(&file.bytes);
        let target = match out {
            Some(dir) => join_rel(dir, file.rel),
            None => join_rel(root, &format!("schema/{}", file.rel)),
        };
        lines.push(format!(
            "wrote  {}  sha256 {}  (features: {})",
            target.display(),
            short(&sha256),
            file.features.join(",")
        ));
        entries.push(SourceEntry {
            path: format!("schema/{}", file.rel),
            package: from_crate::CRATE.to_string(),
            version: derived.version.clone(),
            source: format!(
                "crates.io, printed by {} with features [{}]",
                from_crate::GENERATOR,
                file.features.join(", ")
            ),
            sha256,
            license: derived.license.clone(),
            crate_sha256: Some(derived.crate_sha256.clone()),
        });
        writes.push((target, file.bytes.clone()));
    }
    if out.is_none() {
        writes.push((join_rel(root, SOURCES), render_sources(entries)?.into_bytes()));
        lines.push(format!(
            "wrote  {SOURCES}  ({} {}, .crate sha256 {}, licence {})",
            from_crate::CRATE,
            derived.version,
            short(&derived.crate_sha256),
            derived.license
        ));
    }
    write_all_or_nothing(&writes)?;
    Ok(lines)
}

/// `cargo xtask schema verify`: re-check sha256 of every file listed in schema/sources.toml
/// against the committed bytes; also error if a schema/v*/ *.json file is not listed.
pub fn verify(root: &Path) -> Result<Vec<String>, String> {
    let sources = load_sources(root)?;
    let pull_hint = match pinned_of(&sources) {
        Ok(v) => hint_to_pull(&sources, &v),
        Err(_) => "run `cargo xtask schema pull --version <v>`".to_string(),
    };
    if sources.files.is_empty() {
        return Err(format!("{SOURCES} lists no files; {pull_hint}"));
    }

    let mut problems = Vec::new();
    let mut lines = Vec::new();
    let mut listed = BTreeSet::new();
    for entry in &sources.files {
        if !listed.insert(entry.path.clone()) {
            problems.push(format!("{SOURCES} lists {} more than once", entry.path));
            continue;
        }
        let file = match checked_join(root, &entry.path) {
            Ok(file) => file,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let hint = hint_to_pull(&sources, &entry.version);
        match fs::read(&file) {
            Ok(bytes) => {
                let actual = sha256_hex(&bytes);
                if actual.eq_ignore_ascii_case(&entry.sha256) {
                    lines.push(format!("ok     {}  sha256 {}", entry.path, short(&actual)));
                } else {
                    problems.push(format!(
                        "{} does not match {SOURCES}: expected sha256 {}, actual {}; {hint}",
                        entry.path, entry.sha256, actual
                    ));
                }
            }
            Err(e) => problems.push(format!("cannot read {}: {e}; {hint}", entry.path)),
        }
    }
    for expected in FILES {
        if !listed.contains(expected) {
            problems.push(format!("{SOURCES} does not list {expected}; {pull_hint}"));
        }
    }
    for found in committed_schema_files(root)? {
        if !listed.contains(&found) {
            problems.push(format!(
                "{found} is not listed in {SOURCES}, so its origin is unknown; delete it or {pull_hint}"
            ));
        }
    }
    if let Err(e) = pinned_of(&sources) {
        problems.push(e);
    }

    if problems.is_empty() {
        lines.push(format!("{} schema files match {SOURCES}", sources.files.len()));
        Ok(lines)
    } else {
        Err(problems.join("\n"))
    }
}

/// The command that pulls `version` again from where `sources` says the files came from.
fn hint_to_pull(sources: &Sources, version: &str) -> String {
    match sources.files.first() {
        Some(f) if f.package == from_crate::CRATE => format!("run `cargo xtask schema pull --crate {version}`"),
        _ => format!("run `cargo xtask schema pull --version {version}`"),
    }
}

/// Fetch every `schema*.json` of the [`PACKAGE`] tarball of the given version (at any depth)
/// into `cache_dir/<version>/<path inside package/>` unless already there (a cache: a second call
/// does not run npm). Returns the absolute paths of the schema files, sorted. Never writes into
/// schema/.
pub fn fetch_to_cache(version: &str, cache_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let fetched = fetch_versions_to_cache(PACKAGE, &[version], cache_dir).into_iter().next();
    let files = fetched.unwrap_or_else(|| Err(format!("fetching {PACKAGE}@{version} gave no result")))?;
    if files.is_empty() {
        let dir = cache_dir.join(version);
        return Err(format!("{} holds no schema*.json; delete it to fetch again", dir.display()));
    }
    Ok(files)
}

/// [`fetch_to_cache`] for many versions of any package: the versions not cached yet are packed
/// by one `npm pack` call (one per version only when that call fails, to tell which version is
/// at fault). Returns, for each version in the order given, its schema files (possibly none)
/// or why it could not be fetched.
pub fn fetch_versions_to_cache(
    package: &str,
    versions: &[&str],
    cache_dir: &Path,
) -> Vec<Result<Vec<PathBuf>, String>> {
    let cache_dir = match std::path::absolute(cache_dir) {
        Ok(dir) => dir,
        Err(e) => {
            let error = format!("cannot resolve {}: {e}", cache_dir.display());
            return versions.iter().map(|_| Err(error.clone())).collect();
        }
    };
    let mut errors: BTreeMap<&str, String> = BTreeMap::new();
    for version in versions {
        if let Err(e) = validate_version(version) {
            errors.insert(version, e);
        }
    }
    // The version directory only ever appears by a rename of a complete staging directory, so
    // its existence means a finished fetch.
    let missing: Vec<&str> =
        versions.iter().copied().filter(|v| !errors.contains_key(v) && !cache_dir.join(v).is_dir()).collect();
    if let Err(e) = fetch_into_cache(package, &missing, &cache_dir) {
        if let [version] = missing.as_slice() {
            errors.insert(version, e);
        } else {
            for version in missing.iter().filter(|v| !cache_dir.join(v).is_dir()) {
                if let Err(e) = fetch_into_cache(package, &[version], &cache_dir) {
                    errors.insert(version, e);
                }
            }
        }
    }
    versions
        .iter()
        .map(|version| match errors.get(version) {
            Some(e) => Err(e.clone()),
            None => list_cached(&cache_dir.join(version)),
        })
        .collect()
}

/// Packs `versions` of `package` (one `npm pack` call) and moves each one's schema files into
/// `cache_dir/<version>/`.
fn fetch_into_cache(package: &str, versions: &[&str], cache_dir: &Path) -> Result<(), String> {
    if versions.is_empty() {
        return Ok(());
    }
    let unpacked = fetch_packages(package, versions)?;
    fs::create_dir_all(cache_dir).map_err(|e| format!("cannot create {}: {e}", cache_dir.display()))?;
    for (i, version) in versions.iter().enumerate() {
        let package_dir = unpacked.package_dir(i);
        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(cache_dir)
            .map_err(|e| format!("cannot create a staging dir in {}: {e}", cache_dir.display()))?;
        for rel in shipped_schema_files(&package_dir)? {
            let to = join_rel(staging.path(), &rel);
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            fs::copy(join_rel(&package_dir, &rel), &to)
                .map_err(|e| format!("cannot copy package/{rel} of {package}@{version} to {}: {e}", to.display()))?;
        }
        let target = cache_dir.join(version);
        if let Err(e) = fs::rename(staging.path(), &target) {
            // Parallel tests may fetch the same version; whoever renames first wins.
            if !target.is_dir() {
                return Err(format!("cannot move the fetched schemas to {}: {e}", target.display()));
            }
        }
    }
    Ok(())
}

/// Every published version of `package` (`npm view PACKAGE versions --json`), as npm lists them.
pub fn published_versions(package: &str) -> Result<Vec<String>, String> {
    let mut view = process::npm();
    view.args(["view", "--json", "--loglevel=error", package, "versions"]);
    let stdout = process::capture(&mut view)?;
    // npm prints a bare string when there is only one version.
    match serde_json::from_str::<serde_json::Value>(&stdout) {
        Ok(serde_json::Value::String(version)) => Ok(vec![version]),
        Ok(serde_json::Value::Array(items)) => items
            .into_iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(|| format!("`npm view {package}` listed {v}")))
            .collect(),
        _ => Err(format!("`npm view {package} versions --json` printed no version list: {}", stdout.trim())),
    }
}

/// The version recorded in schema/sources.toml (all files share one version).
pub fn pinned_version(root: &Path) -> Result<String, String> {
    pinned_of(&load_sources(root)?)
}

fn pinned_of(sources: &Sources) -> Result<String, String> {
    let versions: BTreeSet<&str> = sources.files.iter().map(|f| f.version.as_str()).collect();
    let mut iter = versions.iter();
    match (iter.next(), iter.next()) {
        (Some(v), None) => Ok((*v).to_string()),
        (None, _) => Err(format!("{SOURCES} lists no files, so no version is pinned; pass `--version <v>`")),
        (Some(_), Some(_)) => Err(format!(
            "{SOURCES} mixes versions {}; run `cargo xtask schema pull --version <v>`",
            versions.into_iter().collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Everything `pull` does after the tarball is unpacked; separate so tests need no network.
fn install_from_package(root: &Path, package_dir: &Path, version: &str) -> Result<Vec<String>, String> {
    let manifest = read_manifest(package_dir, version)?;

    // Read and hash everything before touching schema/, so a bad package writes nothing.
    let missing: Vec<&str> = FILES.iter().copied().filter(|rel| !join_rel(package_dir, rel).is_file()).collect();
    if !missing.is_empty() {
        return Err(format!(
            "{PACKAGE}@{version} lacks {}; schema/ left unchanged",
            missing.iter().map(|m| format!("package/{m}")).collect::<Vec<_>>().join(", ")
        ));
    }
    let mut staged = Vec::new();
    let mut entries = Vec::new();
    for rel in FILES {
        let source = join_rel(package_dir, rel);
        let bytes = fs::read(&source).map_err(|e| format!("cannot read package/{rel} of {PACKAGE}@{version}: {e}"))?;
        serde_json::from_slice::<serde_json::Value>(&bytes).map_err(|e| {
            format!("package/{rel} of {PACKAGE}@{version} is not valid JSON ({e}); schema/ left unchanged")
        })?;
        let sha256 = sha256_hex(&bytes);
        entries.push(SourceEntry {
            path: rel.to_string(),
            package: PACKAGE.to_string(),
            version: version.to_string(),
            source: format!("package/{rel}"),
            sha256,
            license: manifest.license.clone(),
            crate_sha256: None,
        });
        staged.push((rel.to_string(), bytes));
    }
    let sources_text = render_sources(entries.clone())?;

    let mut lines = Vec::new();
    let mut writes = Vec::new();
    for ((rel, bytes), entry) in staged.into_iter().zip(&entries) {
        let target = join_rel(root, &rel);
        let unchanged = fs::read(&target).is_ok_and(|old| old == bytes);
        let verb = if unchanged { "same " } else { "wrote" };
        lines.push(format!("{verb}  {rel}  sha256 {}", short(&entry.sha256)));
        if !unchanged {
            writes.push((target, bytes));
        }
    }
    writes.push((join_rel(root, SOURCES), sources_text.into_bytes()));
    write_all_or_nothing(&writes)?;
    lines.push(format!("wrote  {SOURCES}  ({PACKAGE}@{version}, licence {})", manifest.license));

    // Newer packages may add schema files (say a v3); surface them rather than drop them
    // silently.
    for extra in shipped_schema_files(package_dir)? {
        if !FILES.contains(&extra.as_str()) {
            lines.push(format!("note: the package also ships package/{extra}, which is not pinned"));
        }
    }
    for found in committed_schema_files(root)? {
        if !FILES.contains(&found.as_str()) {
            lines.push(format!("warning: {found} is not from {PACKAGE}@{version}; `schema verify` will reject it"));
        }
    }
    Ok(lines)
}

struct Manifest {
    license: String,
}

fn read_manifest(package_dir: &Path, version: &str) -> Result<Manifest, String> {
    let path = package_dir.join("package.json");
    let text = fs::read_to_string(&path)
        .map_err(|e| format!("cannot read package/package.json of {PACKAGE}@{version}: {e}"))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("package/package.json of {PACKAGE}@{version} is not JSON: {e}"))?;
    let field = |name: &str| json.get(name).and_then(|v| v.as_str());
    if field("name") != Some(PACKAGE) {
        return Err(format!("npm returned package {:?}, expected {PACKAGE}", field("name").unwrap_or("<none>")));
    }
    // npm resolves ranges and tags too; only an exact version is a pin.
    if field("version") != Some(version) {
        return Err(format!(
            "npm resolved {PACKAGE}@{version} to version {:?}; pass an exact published version",
            field("version").unwrap_or("<none>")
        ));
    }
    let license = field("license")
        .filter(|l| !l.trim().is_empty())
        .ok_or_else(|| format!("package/package.json of {PACKAGE}@{version} has no string `license` field"))?
        .to_string();
    Ok(Manifest { license })
}

/// Writes each file to a sibling staging name first, then renames them all into place: a
/// failure while writing leaves every target untouched, and only a failing rename (rare) can
/// leave a partial update.
fn write_all_or_nothing(writes: &[(PathBuf, Vec<u8>)]) -> Result<(), String> {
    let mut staged: Vec<(PathBuf, &Path)> = Vec::new();
    let cleanup = |staged: &[(PathBuf, &Path)]| {
        for (tmp, _) in staged {
            let _ = fs::remove_file(tmp);
        }
    };
    for (target, bytes) in writes {
        let result = stage(target, bytes);
        match result {
            Ok(tmp) => staged.push((tmp, target.as_path())),
            Err(e) => {
                cleanup(&staged);
                return Err(format!("{e}; nothing was changed"));
            }
        }
    }
    for (i, (tmp, target)) in staged.iter().enumerate() {
        if let Err(e) = fs::rename(tmp, target) {
            cleanup(&staged[i..]);
            return Err(format!(
                "cannot move {} into place: {e}; {} of {} files were updated, re-run the pull",
                target.display(),
                i,
                staged.len()
            ));
        }
    }
    Ok(())
}

fn stage(target: &Path, bytes: &[u8]) -> Result<PathBuf, String> {
    let parent = target.parent().ok_or_else(|| format!("{} has no parent directory", target.display()))?;
    fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = parent.join(format!(".{name}.pull-tmp"));
    fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    Ok(tmp)
}

fn load_sources(root: &Path) -> Result<Sources, String> {
    let path = root.join(SOURCES);
    let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_sources(&text)
}

fn parse_sources(text: &str) -> Result<Sources, String> {
    toml::from_str(text).map_err(|e| format!("{SOURCES} is malformed: {e}"))
}

fn render_sources(mut files: Vec<SourceEntry>) -> Result<String, String> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let body = toml::to_string(&Sources { files }).map_err(|e| format!("cannot serialise {SOURCES}: {e}"))?;
    Ok(format!("{HEADER}{body}"))
}

/// Joins a path taken from sources.toml onto the root, refusing anything outside `schema/`.
fn checked_join(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let path = Path::new(rel);
    let inside = path.starts_with("schema") && path.components().all(|c| matches!(c, Component::Normal(_)));
    if inside {
        Ok(join_rel(root, rel))
    } else {
        Err(format!("{SOURCES} lists {rel:?}, which is not a relative path under schema/"))
    }
}

/// `schema/v<N>/*.json` as root-relative, `/`-separated paths, sorted.
fn committed_schema_files(root: &Path) -> Result<Vec<String>, String> {
    let schema = root.join("schema");
    let mut found = Vec::new();
    for dir in read_dir_sorted(&schema)? {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
            continue;
        };
        let versioned = name.len() > 1 && name.starts_with('v') && name[1..].bytes().all(|b| b.is_ascii_digit());
        if !versioned || !dir.is_dir() {
            continue;
        }
        for file in read_dir_sorted(&dir)? {
            let Some(file_name) = file.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if file_name.ends_with(".json") && file.is_file() {
                found.push(format!("schema/{name}/{file_name}"));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `schema*.json` at any depth under `package/`, as `/`-separated paths relative to it, sorted.
fn shipped_schema_files(package_dir: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    walk_schema_files(package_dir, "", &mut found)?;
    found.sort();
    Ok(found)
}

fn walk_schema_files(dir: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), String> {
    for entry in read_dir_sorted(dir)? {
        let Some(name) = entry.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let child = if rel.is_empty() { name.to_string() } else { format!("{rel}/{name}") };
        if entry.is_dir() {
            walk_schema_files(&entry, &child, out)?;
        } else if name.starts_with("schema") && name.ends_with(".json") {
            out.push(child);
        }
    }
    Ok(())
}

fn list_cached(version_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let files = shipped_schema_files(version_dir)?;
    Ok(files.iter().map(|rel| join_rel(version_dir, rel)).collect())
}

/// Joins a `/`-separated relative path with the platform's separator.
fn join_rel(base: &Path, rel: &str) -> PathBuf {
    rel.split('/').fold(base.to_path_buf(), |path, part| path.join(part))
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(paths),
        Err(e) => return Err(format!("cannot list {}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

/// Unpacked tarballs, the i-th requested version in `<temp dir>/<i>/package/`; the temp dir
/// lives as long as this value.
struct Unpacked {
    dir: tempfile::TempDir,
}

impl Unpacked {
    fn package_dir(&self, i: usize) -> PathBuf {
        self.dir.path().join(i.to_string()).join("package")
    }
}

/// What `npm pack --json` says of one tarball it wrote.
#[derive(Deserialize)]
struct Packed {
    name: String,
    version: String,
    filename: String,
}

/// `npm pack` of every version in one call (npm fetches them far faster than one process per
/// version), each tarball unpacked into its own directory.
fn fetch_packages(package: &str, versions: &[&str]) -> Result<Unpacked, String> {
    for version in versions {
        validate_version(version)?;
    }
    let dir = tempfile::Builder::new()
        .prefix("acp-schema-")
        .tempdir()
        .map_err(|e| format!("cannot create a temp dir: {e}"))?;
    let specs: Vec<String> = versions.iter().map(|v| format!("{package}@{v}")).collect();
    // Not --silent: that also drops npm's reason for a failure.
    let mut pack = process::npm();
    pack.args(["pack", "--json", "--loglevel=error"]).args(&specs).current_dir(dir.path());
    let stdout = process::capture(&mut pack)?;
    let packed: Vec<Packed> = serde_json::from_str(&stdout).map_err(|e| {
        format!("`npm pack --json {}` printed no tarball list ({e}): {}", specs.join(" "), stdout.trim())
    })?;
    for (i, version) in versions.iter().enumerate() {
        // npm resolves ranges and tags too; only the exact version is taken.
        let tarball = packed
            .iter()
            .find(|p| p.name == package && p.version == *version)
            .map(|p| p.filename.as_str())
            .filter(|name| Path::new(name).file_name().is_some_and(|n| n == *name) && name.ends_with(".tgz"))
            .ok_or_else(|| format!("`npm pack {package}@{version}` wrote no tarball of that exact version"))?;
        let into = dir.path().join(i.to_string());
        fs::create_dir(&into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
        // A relative name: GNU tar reads `C:\...` as a remote host.
        let relative = Path::new("..").join(tarball);
        process::capture(Command::new("tar").arg("-xzf").arg(&relative).current_dir(&into))?;
    }
    Ok(Unpacked { dir })
}

/// Only exact versions: npm would also accept ranges and tags, and the value becomes a cache
/// directory name.
fn validate_version(version: &str) -> Result<(), String> {
    let ok = version.starts_with(|c: char| c.is_ascii_digit())
        && version.bytes().all(|b| b.is_ascii_alphanumeric() || b".-+".contains(&b))
        && !version.contains("..");
    if ok {
        Ok(())
    } else {
        Err(format!("{version:?} is not an exact package version like 2.4.0"))
    }
}

/// The lowercase hex sha256 of `bytes`, as `schema/sources.toml` records it.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, version: &str, bytes: &[u8]) -> SourceEntry {
        SourceEntry {
            path: path.to_string(),
            package: PACKAGE.to_string(),
            version: version.to_string(),
            source: format!("package/{path}"),
            sha256: sha256_hex(bytes),
            license: "Apache-2.0".to_string(),
            crate_sha256: None,
        }
    }

    /// A root holding the four schema files (`{"n":i}`) and a matching sources.toml.
    fn fake_root(version: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let mut entries = Vec::new();
        for (i, rel) in FILES.iter().enumerate() {
            let bytes = format!("{{\"n\":{i}}}\n").into_bytes();
            let path = root.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, &bytes).unwrap();
            entries.push(entry(rel, version, &bytes));
        }
        fs::write(root.path().join(SOURCES), render_sources(entries).unwrap()).unwrap();
        root
    }

    /// An unpacked `package/` with the four schema files (`{"m":i}`) and a package.json.
    fn fake_package(version: &str, skip: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let manifest = format!(r#"{{"name":"{PACKAGE}","version":"{version}","license":"Apache-2.0"}}"#);
        fs::write(dir.path().join("package.json"), manifest).unwrap();
        for (i, rel) in FILES.iter().enumerate() {
            if Some(*rel) == skip {
                continue;
            }
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(&path, format!("{{\"m\":{i}}}")).unwrap();
        }
        dir
    }

    #[test]
    fn sources_round_trip_sorted_and_deterministic() {
        let b = entry("schema/v2/schema.json", "1.2.3", b"b");
        let a = entry("schema/v1/schema.json", "1.2.3", b"a");
        let text = render_sources(vec![b.clone(), a.clone()]).unwrap();
        assert!(text.starts_with(HEADER));
        assert_eq!(text, render_sources(vec![a.clone(), b.clone()]).unwrap());
        assert_eq!(parse_sources(&text).unwrap().files, vec![a, b]);
        assert!(text.contains("[[file]]\npath = \"schema/v1/schema.json\"\n"));
    }

    #[test]
    fn empty_sources_pin_nothing() {
        let sources = parse_sources("").unwrap();
        assert!(sources.files.is_empty());
        assert!(pinned_of(&sources).unwrap_err().contains("--version"));
    }

    #[test]
    fn pinned_version_reads_and_rejects_mixed() {
        let root = fake_root("9.9.9");
        assert_eq!(pinned_version(root.path()).unwrap(), "9.9.9");
        let mixed = vec![entry("schema/v1/a.json", "1.0.0", b""), entry("schema/v1/b.json", "2.0.0", b"")];
        let err = pinned_of(&Sources { files: mixed }).unwrap_err();
        assert!(err.contains("1.0.0, 2.0.0"), "{err}");
    }

    #[test]
    fn verify_accepts_matching_tree() {
        let root = fake_root("9.9.9");
        let lines = verify(root.path()).unwrap();
        assert_eq!(lines.len(), FILES.len() + 1);
    }

    #[test]
    fn verify_detects_changed_byte() {
        let root = fake_root("9.9.9");
        let path = root.path().join("schema/v2/schema.json");
        let mut bytes = fs::read(&path).unwrap();
        let expected = sha256_hex(&bytes);
        bytes[1] ^= 1;
        fs::write(&path, &bytes).unwrap();
        let err = verify(root.path()).unwrap_err();
        assert!(err.contains("schema/v2/schema.json"), "{err}");
        assert!(err.contains(&expected), "{err}");
        assert!(err.contains(&sha256_hex(&bytes)), "{err}");
        assert!(err.contains("cargo xtask schema pull --version 9.9.9"), "{err}");
        assert!(!err.contains("schema/v1/schema.json"), "{err}");
    }

    #[test]
    fn verify_rejects_unlisted_and_missing_files() {
        let root = fake_root("9.9.9");
        fs::create_dir_all(root.path().join("schema/v3")).unwrap();
        fs::write(root.path().join("schema/v3/schema.json"), "{}").unwrap();
        fs::remove_file(root.path().join("schema/v1/schema.unstable.json")).unwrap();
        let err = verify(root.path()).unwrap_err();
        assert!(err.contains("schema/v3/schema.json is not listed"), "{err}");
        assert!(err.contains("cannot read schema/v1/schema.unstable.json"), "{err}");
    }

    #[test]
    fn verify_rejects_empty_sources_and_escaping_paths() {
        let root = fake_root("9.9.9");
        fs::write(root.path().join(SOURCES), "").unwrap();
        assert!(verify(root.path()).unwrap_err().contains("lists no files"));
        let evil = entry("../outside.json", "9.9.9", b"");
        fs::write(root.path().join(SOURCES), render_sources(vec![evil]).unwrap()).unwrap();
        assert!(verify(root.path()).unwrap_err().contains("not a relative path under schema/"));
    }

    #[test]
    fn install_writes_files_and_sources_that_verify() {
        let root = fake_root("9.9.9");
        let package = fake_package("1.2.3", None);
        let lines = install_from_package(root.path(), package.path(), "1.2.3").unwrap();
        assert!(lines.iter().any(|l| l.contains("wrote  schema/sources.toml")), "{lines:?}");
        assert_eq!(fs::read(root.path().join(FILES[0])).unwrap(), b"{\"m\":0}");
        assert_eq!(pinned_version(root.path()).unwrap(), "1.2.3");
        verify(root.path()).unwrap();
        // A second identical install rewrites no schema file.
        let again = install_from_package(root.path(), package.path(), "1.2.3").unwrap();
        assert_eq!(again.iter().filter(|l| l.starts_with("same ")).count(), FILES.len());
        let leftovers: Vec<_> = committed_schema_files(root.path()).unwrap();
        assert_eq!(leftovers, FILES.to_vec());
    }

    #[test]
    fn install_writes_nothing_when_a_file_is_missing() {
        let root = fake_root("9.9.9");
        let before = fs::read(root.path().join(SOURCES)).unwrap();
        let package = fake_package("1.2.3", Some("schema/v2/schema.unstable.json"));
        let err = install_from_package(root.path(), package.path(), "1.2.3").unwrap_err();
        assert!(err.contains("package/schema/v2/schema.unstable.json"), "{err}");
        assert_eq!(fs::read(root.path().join(SOURCES)).unwrap(), before);
        assert_eq!(fs::read(root.path().join(FILES[0])).unwrap(), b"{\"n\":0}\n");
    }

    #[test]
    fn install_rejects_resolved_version_mismatch() {
        let root = fake_root("9.9.9");
        let package = fake_package("1.2.3", None);
        let err = install_from_package(root.path(), package.path(), "1.2.4").unwrap_err();
        assert!(err.contains("exact"), "{err}");
    }

    #[test]
    fn versions_must_be_exact() {
        for ok in ["2.4.0", "0.4.5", "2.5.0-beta.1", "1.0.0+build.7"] {
            validate_version(ok).unwrap();
        }
        for bad in ["", "latest", "^2.4.0", "~1", "../x", "2.4.0 --foo", "1..2", "2/3"] {
            assert!(validate_version(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fetch_to_cache_hit_does_not_run_npm() {
        // An unpublished version: reaching npm would fail the test.
        let cache = tempfile::tempdir().unwrap();
        let version = "0.0.0-cached";
        for rel in ["schema/v2/schema.json", "schema/schema.json", "schema/v2/other.json"] {
            let path = cache.path().join(version).join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "{}").unwrap();
        }
        let got = fetch_to_cache(version, cache.path()).unwrap();
        let dir = cache.path().join(version);
        assert_eq!(got, vec![dir.join("schema/schema.json"), dir.join("schema/v2/schema.json")]);
        assert!(got.iter().all(|p| p.is_absolute()));
    }
}
