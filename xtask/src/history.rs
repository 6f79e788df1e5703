//! `cargo xtask schema history`: every schema file ever published on npm, through the generator.
//!
//! Lists every version of [`schema::PREDECESSOR`] and [`schema::PACKAGE`], fetches their
//! `schema*.json` files (through [`schema::fetch_versions_to_cache`]), keeps each distinct file
//! (by sha256) once, in publication order, and for each: generates a standalone crate
//! ([`codegen::standalone`]), checks all of them in one generated workspace with `-D warnings`,
//! and runs `cargo test` on a few. Consecutive distinct files are compared with the differ.
//! Prints a `PASS `/`FAIL ` line per file and per pair, and a summary; a failure never stops the
//! run. Owns `.cache/schemas/history/`: the fetched files (`<package>/<version>/…`), the crates
//! (`crates/`), their target dir (`target/`) and `report.md`.

use crate::codegen;
use crate::files::{files_under, write_if_changed};
use crate::{process, schema};
use acp_codegen::diff::{self, Severity};
use acp_codegen::emit::crates::Workspace;
use acp_codegen::ir::Protocol;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// The packages that published the schemas, oldest first.
pub const PACKAGES: [&str; 2] = [schema::PREDECESSOR, schema::PACKAGE];

/// Everything this command writes, relative to the project root.
pub const CACHE: &str = ".cache/schemas/history";

/// Lines of an error shown on a `FAIL` line (the report has up to [`process::TAIL_LINES`]).
const SHOWN_LINES: usize = 5;

/// The longest a `cargo test` of one crate (already built) may run.
const TEST_TIMEOUT: Duration = Duration::from_secs(600);

// ------------------------------------------------------------------------------------------
// The pure parts: ordering, de-duplication, pairs, names

/// Semver precedence (`0.2.0-alpha.6` < `0.2.0-alpha.8` < `0.2.0` < `0.3.1`, by the `semver`
/// crate), build metadata only as a last tie-break so that the order is total. npm publishes
/// only valid semver; a string that is not sorts after every version, by its text.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(x), Ok(y)) => x.cmp_precedence(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        (Err(_), Err(_)) => Ordering::Equal,
    }
    .then_with(|| a.cmp(b))
}

/// Sorts versions oldest first by [`compare_versions`].
pub fn sort_versions(versions: &mut [String]) {
    versions.sort_by(|a, b| compare_versions(a, b));
}

/// The major version (`0` for `0.4.5`; `0` when it is not semver).
pub fn major(version: &str) -> u64 {
    semver::Version::parse(version).map_or(0, |v| v.major)
}

/// Where a schema file was published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub package: String,
    pub version: String,
    /// Its path in the tarball, e.g. `package/schema/v2/schema.json`.
    pub path: String,
}

impl Origin {
    /// `@agentclientprotocol/sdk@2.4.0 package/schema/v2/schema.json`.
    pub fn label(&self) -> String {
        format!("{}@{} {}", self.package, self.version, self.path)
    }
}

/// One published schema file, fetched.
#[derive(Debug, Clone)]
pub struct Shipped {
    pub origin: Origin,
    pub sha256: String,
    /// Where it is on disk.
    pub file: PathBuf,
}

/// A distinct schema file: the first origin that shipped these bytes, and every later one.
#[derive(Debug, Clone)]
pub struct Distinct {
    pub origin: Origin,
    pub sha256: String,
    pub file: PathBuf,
    pub also_in: Vec<Origin>,
}

/// Keeps the first of each set of files with the same sha256 (in the order given: publication
/// order), remembering where the others were shipped.
pub fn distinct(shipped: Vec<Shipped>) -> Vec<Distinct> {
    let mut out: Vec<Distinct> = Vec::new();
    let mut by_hash: BTreeMap<String, usize> = BTreeMap::new();
    for file in shipped {
        match by_hash.get(&file.sha256) {
            Some(&i) => out[i].also_in.push(file.origin),
            None => {
                by_hash.insert(file.sha256.clone(), out.len());
                out.push(Distinct { origin: file.origin, sha256: file.sha256, file: file.file, also_in: Vec::new() });
            }
        }
    }
    out
}

/// The `also in` list of a file: origins grouped by package and path, so that a file shipped
/// unchanged by many versions reads `@agentclientprotocol/sdk@0.13.1, 0.14.0, 0.14.1`; a path
/// is named when it differs from the file's own. Empty when no other version shipped it.
pub fn also_in_text(file: &Distinct) -> String {
    let mut groups: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for origin in &file.also_in {
        match groups.last_mut() {
            Some((package, path, versions)) if *package == origin.package && *path == origin.path => {
                versions.push(&origin.version);
            }
            _ => groups.push((&origin.package, &origin.path, vec![&origin.version])),
        }
    }
    let texts: Vec<String> = groups
        .into_iter()
        .map(|(package, path, versions)| {
            let mut text = format!("{package}@{}", versions.join(", "));
            if path != file.origin.path {
                text.push(' ');
                text.push_str(path);
            }
            text
        })
        .collect();
    texts.join("; ")
}

/// The pairs the differ compares, by the files' paths in their tarballs (in publication order):
/// each file with the previous distinct file at the same path, so that a pair is one revision of
/// one schema; a file at a path not seen before, with the file published just before it.
pub fn pairs(paths: &[&str]) -> Vec<(usize, usize)> {
    (1..paths.len())
        .map(|i| {
            let previous = (0..i).rev().find(|&j| paths[j] == paths[i]).unwrap_or(i - 1);
            (previous, i)
        })
        .collect()
}

/// The files whose crates get a full `cargo test`: the oldest, the newest of each major version
/// (of the package version that first shipped it), and the newest.
pub fn tested(files: &[Distinct]) -> BTreeSet<usize> {
    let mut newest_of_major: BTreeMap<u64, usize> = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        newest_of_major.insert(major(&file.origin.version), i);
    }
    let mut chosen: BTreeSet<usize> = newest_of_major.into_values().collect();
    if let Some(last) = files.len().checked_sub(1) {
        chosen.extend([0, last]);
    }
    chosen
}

/// A crate name per file, unique and stable: the package's last name segment, the version and
/// the path under `package/`, e.g. `sdk-2-4-0-schema-v2-schema-unstable`.
pub fn crate_names(files: &[Distinct]) -> Vec<String> {
    let mut taken = BTreeSet::new();
    let mut names = Vec::new();
    for file in files {
        let origin = &file.origin;
        let package = origin.package.rsplit('/').next().unwrap_or(&origin.package);
        let path = origin.path.strip_prefix("package/").unwrap_or(&origin.path);
        let path = path.strip_suffix(".json").unwrap_or(path);
        let mut base = slug(&format!("{package}-{}-{path}", origin.version));
        if !base.starts_with(|c: char| c.is_ascii_alphabetic()) {
            base.insert_str(0, "acp-");
        }
        let mut name = base.clone();
        let mut n = 2;
        while !taken.insert(name.clone()) {
            name = format!("{base}-{n}");
            n += 1;
        }
        names.push(name);
    }
    names
}

/// Lowercase ASCII letters and digits, every other run of characters one `-`.
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

// ------------------------------------------------------------------------------------------
// The command

/// What happened to one distinct file.
struct FileResult {
    file: Distinct,
    crate_name: String,
    /// The lowered file, or the generator's error.
    protocol: Result<Protocol, String>,
    /// The first failing step, e.g. `cargo check: error[E0…]…`.
    error: Option<String>,
    /// `cargo test` ran: how many unit tests passed.
    tests: Option<usize>,
}

/// One pair of consecutive files through the differ: findings per severity, or the error.
struct PairResult {
    old: usize,
    new: usize,
    outcome: Result<BTreeMap<Severity, usize>, String>,
}

/// How long each step took.
#[derive(Default)]
struct Timings {
    download: Duration,
    generate: Duration,
    check: Duration,
    test: Duration,
    diff: Duration,
}

/// Everything the command found.
struct History {
    /// `FAIL fetch …` lines: versions (or version lists) npm could not give.
    fetch_failures: Vec<String>,
    versions: usize,
    tarballs: usize,
    shipped: usize,
    files: Vec<FileResult>,
    pairs: Vec<PairResult>,
    timings: Timings,
}

impl History {
    fn failures(&self) -> usize {
        self.fetch_failures.len()
            + self.files.iter().filter(|f| f.error.is_some()).count()
            + self.pairs.iter().filter(|p| p.outcome.is_err()).count()
    }
}

/// `cargo xtask schema history`: prints the result lines and writes `report.md`; exit status 1
/// when anything failed (or the command itself could not run).
pub fn run_command(root: &Path) -> ExitCode {
    let history = run(root);
    let mut text = lines(&history).join("\n");
    text.push('\n');
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(text.as_bytes());
    let report = root.join(CACHE).join("report.md");
    if let Err(e) = fs::write(&report, markdown(&history)) {
        eprintln!("error: cannot write {}: {e}", report.display());
        return ExitCode::FAILURE;
    }
    eprintln!("history: wrote {}", report.display());
    if history.failures() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run(root: &Path) -> History {
    let cache = root.join(CACHE);
    let mut timings = Timings::default();

    let started = Instant::now();
    let (shipped, fetch_failures, versions, tarballs) = fetch(&cache);
    timings.download = started.elapsed();
    let shipped_count = shipped.len();
    let files = distinct(shipped);
    eprintln!(
        "history: {versions} versions, {tarballs} tarballs, {shipped_count} schema files, {} distinct ({:.1} s)",
        files.len(),
        timings.download.as_secs_f64()
    );

    let started = Instant::now();
    let names = crate_names(&files);
    let chosen = tested(&files);
    let crates_dir = cache.join("crates");
    let mut results: Vec<FileResult> =
        files.into_iter().zip(names).map(|(file, name)| generate(root, &crates_dir, file, name)).collect();
    if let Err(e) = write_workspace(root, &crates_dir, &results) {
        for result in results.iter_mut().filter(|r| r.error.is_none()) {
            result.error = Some(format!("generate: {e}"));
        }
    }
    timings.generate = started.elapsed();
    eprintln!(
        "history: generated {} of {} crates ({:.1} s)",
        results.iter().filter(|r| r.error.is_none()).count(),
        results.len(),
        timings.generate.as_secs_f64()
    );

    let target_dir = cache.join("target");
    let started = Instant::now();
    check(&crates_dir, &target_dir, &mut results);
    timings.check = started.elapsed();

    let started = Instant::now();
    test(&crates_dir, &target_dir, &mut results, &chosen);
    timings.test = started.elapsed();

    let started = Instant::now();
    let paths: Vec<&str> = results.iter().map(|r| r.file.origin.path.as_str()).collect();
    let pairs = pairs(&paths).into_iter().map(|(old, new)| compare(&results, old, new)).collect();
    timings.diff = started.elapsed();

    for result in &mut results {
        result.error = result.error.take().map(|e| relative(root, &e));
    }
    History { fetch_failures, versions, tarballs, shipped: shipped_count, files: results, pairs, timings }
}

/// Every schema file of every version, in publication order; `FAIL fetch` lines; how many
/// versions were listed and how many tarballs fetched.
fn fetch(cache: &Path) -> (Vec<Shipped>, Vec<String>, usize, usize) {
    let mut shipped = Vec::new();
    let mut failures = Vec::new();
    let (mut versions_count, mut tarballs) = (0, 0);
    for package in PACKAGES {
        let mut versions = match schema::published_versions(package) {
            Ok(versions) => versions,
            Err(e) => {
                failures.push(fail_line(&format!("fetch {package}"), &e));
                continue;
            }
        };
        sort_versions(&mut versions);
        versions_count += versions.len();
        let dir = cache.join(slug(package));
        let refs: Vec<&str> = versions.iter().map(String::as_str).collect();
        for (version, fetched) in versions.iter().zip(schema::fetch_versions_to_cache(package, &refs, &dir)) {
            let files = match fetched {
                Ok(files) => files,
                Err(e) => {
                    failures.push(fail_line(&format!("fetch {package}@{version}"), &e));
                    continue;
                }
            };
            tarballs += 1;
            let version_dir = dir.join(version);
            for file in files {
                let rel = file.strip_prefix(&version_dir).unwrap_or(&file);
                let rel: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
                let origin = Origin {
                    package: package.to_string(),
                    version: version.clone(),
                    path: format!("package/{}", rel.join("/")),
                };
                match fs::read(&file) {
                    Ok(bytes) => shipped.push(Shipped { origin, sha256: schema::sha256_hex(&bytes), file }),
                    Err(e) => failures.push(fail_line(
                        &format!("fetch {}", origin.label()),
                        &format!("cannot read {}: {e}", file.display()),
                    )),
                }
            }
        }
    }
    (shipped, failures, versions_count, tarballs)
}

/// Lowers the file and writes its crate into `crates_dir/<name>/`, touching only files whose
/// bytes change (so cargo rechecks only what the generator changed). The directory of a crate
/// that fails is removed by [`write_workspace`].
fn generate(root: &Path, crates_dir: &Path, file: Distinct, crate_name: String) -> FileResult {
    let shown = file.origin.label();
    let protocol =
        catch(|| acp_codegen::load(&file.file, &shown).map_err(String::from)).map_err(|e| relative(root, &e));
    let error = write_crate(crates_dir, &file.file, &crate_name).err().map(|e| format!("generate: {e}"));
    FileResult { file, crate_name, protocol, error, tests: None }
}

fn write_crate(crates_dir: &Path, schema_file: &Path, crate_name: &str) -> Result<(), String> {
    fs::create_dir_all(crates_dir).map_err(|e| format!("cannot create {}: {e}", crates_dir.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(crates_dir)
        .map_err(|e| format!("cannot create a staging dir in {}: {e}", crates_dir.display()))?;
    let out = staging.path().join(crate_name);
    catch(|| codegen::standalone_in(schema_file, &out, Workspace::Member))?;
    sync_dir(&out, &crates_dir.join(crate_name))
}

/// Makes `to` hold exactly the files of `from`, rewriting only those whose bytes differ.
fn sync_dir(from: &Path, to: &Path) -> Result<(), String> {
    let wanted = files_under(from)?;
    for rel in &wanted {
        let bytes = fs::read(from.join(rel)).map_err(|e| format!("cannot read {}: {e}", from.join(rel).display()))?;
        write_if_changed(&to.join(rel), &bytes)?;
    }
    for rel in files_under(to)? {
        if !wanted.contains(&rel) {
            fs::remove_file(to.join(&rel)).map_err(|e| format!("cannot remove {}: {e}", to.join(&rel).display()))?;
        }
    }
    Ok(())
}

/// The workspace root listing the crates that generated, with the main workspace's lock file
/// (so they build against the same dependency versions, offline); other crate directories
/// (of files that no longer generate or are no longer published) are removed.
fn write_workspace(root: &Path, crates_dir: &Path, results: &[FileResult]) -> Result<(), String> {
    let members: BTreeSet<&str> = results.iter().filter(|r| r.error.is_none()).map(|r| r.crate_name.as_str()).collect();
    fs::create_dir_all(crates_dir).map_err(|e| format!("cannot create {}: {e}", crates_dir.display()))?;
    for entry in fs::read_dir(crates_dir).map_err(|e| format!("cannot list {}: {e}", crates_dir.display()))? {
        let path = entry.map_err(|e| format!("cannot list {}: {e}", crates_dir.display()))?.path();
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if path.is_dir() && !members.contains(name.as_str()) {
            fs::remove_dir_all(&path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
    }
    let mut manifest = String::from(
        "# Written by `cargo xtask schema history`: the crates of the published schema files that generate.\n\
         [workspace]\nresolver = \"2\"\nmembers = [\n",
    );
    for member in &members {
        manifest.push_str(&format!("    \"{member}\",\n"));
    }
    // Incremental state and debug info would take gigabytes for crates that are checked, not
    // debugged, and rebuilt whenever the generator changes.
    manifest.push_str("]\n\n[profile.dev]\ndebug = false\nincremental = false\n");
    write_if_changed(&crates_dir.join("Cargo.toml"), manifest.as_bytes())?;
    let lock = fs::read(root.join("Cargo.lock")).map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    write_if_changed(&crates_dir.join("Cargo.lock"), &lock)
}

/// `cargo` in the history workspace, with its own target dir and warnings denied.
fn cargo(crates_dir: &Path, target_dir: &Path, args: &[&str]) -> Command {
    let mut cargo = process::cargo();
    cargo
        .current_dir(crates_dir)
        .args(args)
        .arg("--target-dir")
        .arg(target_dir)
        // The encoded form would win over RUSTFLAGS.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("RUSTFLAGS", "-D warnings")
        // One crate per schema file: without debug info and incremental state they take a
        // fraction of the disk, and nothing here is debugged.
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_INCREMENTAL", "0");
    cargo
}

/// What a cargo build said about each crate, from its JSON messages.
#[derive(Default)]
struct Build {
    /// Library target names that produced an artifact (for a test build: a test executable).
    built: BTreeSet<String>,
    /// Rendered errors by target name (dependencies included).
    errors: BTreeMap<String, Vec<String>>,
    /// Cargo's own error when the build did not even finish (no `build-finished` message).
    fatal: Option<String>,
}

/// Runs a `--message-format=json` build (its progress on our stderr) and sorts its messages.
fn build(mut command: Command, want_executable: bool) -> Build {
    let mut messages = Vec::new();
    let result = process::stream(&mut command, |line| {
        if let Ok(message) = serde_json::from_str::<serde_json::Value>(line) {
            messages.push(message);
        }
    });
    let mut build = Build::default();
    let mut finished = false;
    for message in messages {
        let target = message.pointer("/target/name").and_then(|n| n.as_str()).unwrap_or_default().to_string();
        match message.get("reason").and_then(|r| r.as_str()) {
            Some("compiler-artifact")
                if !want_executable || message.get("executable").is_some_and(|e| !e.is_null()) =>
            {
                build.built.insert(target);
            }
            Some("compiler-message") => {
                let level = message.pointer("/message/level").and_then(|l| l.as_str());
                let text = message.pointer("/message/message").and_then(|m| m.as_str()).unwrap_or_default();
                if level == Some("error") && !text.starts_with("aborting due to") {
                    let rendered = message.pointer("/message/rendered").and_then(|r| r.as_str()).unwrap_or(text);
                    build.errors.entry(target).or_default().push(rendered.trim_end().to_string());
                }
            }
            Some("build-finished") => finished = true,
            _ => {}
        }
    }
    if !finished {
        build.fatal = Some(result.err().unwrap_or_else(|| "cargo printed no build-finished message".into()));
    }
    build
}

impl Build {
    /// Why `crate_name` did not build, if it did not.
    fn error(&self, crate_name: &str) -> Option<String> {
        let target = crate_name.replace('-', "_");
        if let Some(errors) = self.errors.get(&target) {
            return Some(format!("{} error(s); the first:\n{}", errors.len(), errors[0]));
        }
        if self.built.contains(&target) {
            return None;
        }
        // A dependency that failed, or (without `--keep-going`) another crate that failed first.
        if let Some((other, errors)) = self.errors.iter().find(|(name, _)| !name.is_empty()) {
            return Some(format!("not built: cargo stopped after `{other}` failed:\n{}", errors[0]));
        }
        Some(self.fatal.clone().unwrap_or_else(|| "not built (cargo reported no artifact and no error)".into()))
    }
}

/// `cargo check` of every crate that generated, in one call (cargo runs them in parallel).
fn check(crates_dir: &Path, target_dir: &Path, results: &mut [FileResult]) {
    if results.iter().all(|r| r.error.is_some()) {
        return;
    }
    eprintln!("history: cargo check of every crate (-D warnings)");
    let args = ["check", "--workspace", "--all-features", "--keep-going", "--message-format=json"];
    let build = build(cargo(crates_dir, target_dir, &args), false);
    for result in results.iter_mut().filter(|r| r.error.is_none()) {
        result.error = build.error(&result.crate_name).map(|e| format!("cargo check: {e}"));
    }
}

/// `cargo test` of the chosen crates that checked: built together, then run one at a time so
/// that each failure is its crate's.
fn test(crates_dir: &Path, target_dir: &Path, results: &mut [FileResult], chosen: &BTreeSet<usize>) {
    let selected: Vec<usize> = chosen.iter().copied().filter(|&i| results[i].error.is_none()).collect();
    if selected.is_empty() {
        return;
    }
    // `--no-fail-fast` is `cargo test`'s `--keep-going`.
    let mut args = vec!["test", "--no-run", "--all-features", "--no-fail-fast", "--message-format=json"];
    for &i in &selected {
        args.extend(["-p", results[i].crate_name.as_str()]);
    }
    eprintln!("history: cargo test of {} crates", selected.len());
    let build = build(cargo(crates_dir, target_dir, &args), true);
    for i in selected {
        let result = &mut results[i];
        if let Some(e) = build.error(&result.crate_name) {
            result.error = Some(format!("cargo test: {e}"));
            continue;
        }
        let mut command = cargo(crates_dir, target_dir, &["test", "--all-features", "-p", &result.crate_name]);
        let what = process::describe(&command);
        match process::run_with_timeout(&mut command, TEST_TIMEOUT) {
            Ok(run) if run.status.is_some_and(|s| s.success()) => result.tests = Some(passed_tests(&run.stdout)),
            Ok(run) if run.timed_out => {
                result.error = Some(format!("cargo test: `{what}` timed out after {} s", TEST_TIMEOUT.as_secs()));
            }
            Ok(run) => result.error = Some(format!("cargo test: {}", test_failure(&run.stdout, &run.stderr))),
            Err(e) => result.error = Some(format!("cargo test: cannot run `{what}`: {e}")),
        }
    }
}

/// The sum of libtest's `test result: ok. N passed` counts.
fn passed_tests(stdout: &str) -> usize {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("test result: ")?.split("; ").next()?.rsplit(' ').nth(1)?.parse::<usize>().ok())
        .sum()
}

/// The informative lines of a failed `cargo test`: failing tests and panics first.
fn test_failure(stdout: &str, stderr: &str) -> String {
    let all = format!("{stdout}\n{stderr}");
    let notable: Vec<&str> =
        all.lines().filter(|l| l.ends_with("FAILED") || l.contains("panicked at") || l.starts_with("error")).collect();
    if notable.is_empty() {
        process::tail(&all, process::TAIL_LINES)
    } else {
        notable.join("\n")
    }
}

/// The differ on one pair; either side failing to load is the pair's failure.
fn compare(results: &[FileResult], old: usize, new: usize) -> PairResult {
    let outcome = match (&results[old].protocol, &results[new].protocol) {
        (Ok(a), Ok(b)) => catch(|| Ok(diff::diff(a, b))).map(|report| {
            let mut counts = BTreeMap::new();
            for finding in &report.findings {
                *counts.entry(finding.severity).or_insert(0) += 1;
            }
            counts
        }),
        (a, b) => {
            let mut errors = Vec::new();
            for (side, result) in [(old, a), (new, b)] {
                // The whole error is on the file's own line.
                if let Err(e) = result {
                    let first = e.lines().next().unwrap_or_default();
                    errors.push(format!("cannot load {}: {first}", results[side].file.origin.label()));
                }
            }
            Err(errors.join("\n"))
        }
    };
    PairResult { old, new, outcome }
}

/// Runs `f`, turning a panic into an error (the panic hook has already printed it).
fn catch<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".into());
        Err(format!("the generator panicked: {message}"))
    })
}

/// Error text with the project root's absolute path left out.
fn relative(root: &Path, text: &str) -> String {
    text.replace(&format!("{}{}", root.display(), std::path::MAIN_SEPARATOR), "")
}

// ------------------------------------------------------------------------------------------
// Output

/// `FAIL <what>: <first line>`, then up to [`SHOWN_LINES`] lines in all, indented.
fn fail_line(what: &str, error: &str) -> String {
    let lines: Vec<&str> = error.trim().lines().collect();
    let mut out = format!("FAIL {what}: {}", lines.first().copied().unwrap_or_default());
    for line in lines.iter().skip(1).take(SHOWN_LINES - 1) {
        out.push_str("\n    ");
        out.push_str(line);
    }
    if lines.len() > SHOWN_LINES {
        out.push_str(&format!("\n    … {} more lines in {CACHE}/report.md", lines.len() - SHOWN_LINES));
    }
    out
}

/// The first `n` lines of `text`, with a note of how many were cut.
fn head(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out = lines[..lines.len().min(n)].join("\n");
    if lines.len() > n {
        out.push_str(&format!("\n[… {} more lines]", lines.len() - n));
    }
    out
}

fn file_details(result: &FileResult) -> String {
    let mut parts = Vec::new();
    if let Ok(protocol) = &result.protocol {
        parts.push(format!("{} types, {} methods", protocol.types.len(), protocol.methods.len()));
    }
    if let Some(tests) = result.tests {
        parts.push(format!("cargo test: {tests} passed"));
    }
    let also = also_in_text(&result.file);
    if !also.is_empty() {
        parts.push(format!("also in: {also}"));
    }
    parts.join(", ")
}

fn findings_text(counts: &BTreeMap<Severity, usize>) -> String {
    let total: usize = counts.values().sum();
    let parts: Vec<String> = counts.iter().rev().map(|(severity, n)| format!("{n} {severity}")).collect();
    if parts.is_empty() {
        format!("{total} findings")
    } else {
        format!("{total} findings: {}", parts.join(", "))
    }
}

fn pair_what(history: &History, pair: &PairResult) -> String {
    format!("diff {} -> {}", history.files[pair.old].file.origin.label(), history.files[pair.new].file.origin.label())
}

/// The result lines, then the summary.
fn lines(history: &History) -> Vec<String> {
    let mut lines = history.fetch_failures.clone();
    for result in &history.files {
        let what = format!("schema {}", result.file.origin.label());
        lines.push(match &result.error {
            None => format!("PASS {what} ({})", file_details(result)),
            Some(e) => fail_line(&what, e),
        });
    }
    for pair in &history.pairs {
        let what = pair_what(history, pair);
        lines.push(match &pair.outcome {
            Ok(counts) => format!("PASS {what} ({})", findings_text(counts)),
            Err(e) => fail_line(&what, e),
        });
    }
    lines.push(summary(history));
    lines
}

fn summary(history: &History) -> String {
    let failed_files = history.files.iter().filter(|f| f.error.is_some()).count();
    let failed_pairs = history.pairs.iter().filter(|p| p.outcome.is_err()).count();
    let t = &history.timings;
    let mut text = format!(
        "schema history: {} versions, {} tarballs, {} schema files, {} distinct: {} passed, {} failed; {} diffs: {} \
         passed, {} failed",
        history.versions,
        history.tarballs,
        history.shipped,
        history.files.len(),
        history.files.len() - failed_files,
        failed_files,
        history.pairs.len(),
        history.pairs.len() - failed_pairs,
        failed_pairs,
    );
    if !history.fetch_failures.is_empty() {
        text.push_str(&format!("; {} fetches failed", history.fetch_failures.len()));
    }
    text.push_str(&format!(
        " (download {:.1} s, generate {:.1} s, check {:.1} s, test {:.1} s, diff {:.1} s)",
        t.download.as_secs_f64(),
        t.generate.as_secs_f64(),
        t.check.as_secs_f64(),
        t.test.as_secs_f64(),
        t.diff.as_secs_f64()
    ));
    text
}

/// `report.md`: a table of the files, one of the pairs, then every failure in full.
fn markdown(history: &History) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from("# Every published ACP schema through the generator\n\n");
    out.push_str(&format!("Written by `cargo xtask schema history`.\n\n{}\n\n", summary(history)));
    for failure in &history.fetch_failures {
        out.push_str(&format!("- {}\n", cell(failure.lines().next().unwrap_or_default())));
    }
    out.push_str(
        "\n## Schema files\n\n| # | first published in | path | sha256 | types | methods | result | also in |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for (i, result) in history.files.iter().enumerate() {
        let origin = &result.file.origin;
        let (types, methods) = match &result.protocol {
            Ok(p) => (p.types.len().to_string(), p.methods.len().to_string()),
            Err(_) => ("–".into(), "–".into()),
        };
        let verdict = match (&result.error, result.tests) {
            (Some(e), _) => format!("FAIL ({})", e.split(':').next().unwrap_or_default()),
            (None, Some(tests)) => format!("PASS (cargo test: {tests} passed)"),
            (None, None) => "PASS".into(),
        };
        out.push_str(&format!(
            "| {} | {}@{} | {} | `{}` | {types} | {methods} | {verdict} | {} |\n",
            i + 1,
            cell(&origin.package),
            cell(&origin.version),
            cell(&origin.path),
            result.file.sha256.get(..12).unwrap_or(&result.file.sha256),
            cell(&also_in_text(&result.file)),
        ));
    }
    out.push_str("\n## Diffs of consecutive files\n\n| old | new | result | breaking | warning | info | docs |\n");
    out.push_str("|---|---|---|---|---|---|---|\n");
    for pair in &history.pairs {
        let counts = match &pair.outcome {
            Ok(counts) => [Severity::Breaking, Severity::Warning, Severity::Info, Severity::Docs]
                .map(|s| counts.get(&s).copied().unwrap_or(0).to_string()),
            Err(_) => ["–".to_string(), "–".into(), "–".into(), "–".into()],
        };
        out.push_str(&format!(
            "| {} {} | {} {} | {} | {} |\n",
            pair.old + 1,
            cell(&history.files[pair.old].file.origin.label()),
            pair.new + 1,
            cell(&history.files[pair.new].file.origin.label()),
            if pair.outcome.is_ok() { "PASS" } else { "FAIL" },
            counts.join(" | ")
        ));
    }
    let mut failures: Vec<(String, &str)> = Vec::new();
    for result in &history.files {
        if let Some(e) = &result.error {
            failures.push((format!("schema {}", result.file.origin.label()), e));
        }
    }
    for pair in &history.pairs {
        if let Err(e) = &pair.outcome {
            failures.push((pair_what(history, pair), e));
        }
    }
    if !failures.is_empty() {
        out.push_str("\n## Failures\n");
        for (what, error) in failures {
            out.push_str(&format!("\n### {what}\n\n```text\n{}\n```\n", head(error, process::TAIL_LINES)));
        }
    }
    out
}
