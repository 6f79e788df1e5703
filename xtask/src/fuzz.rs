//! `cargo xtask fuzz [--seconds N] [--only NAME]`: builds the fuzz targets of `fuzz/` with
//! libFuzzer's coverage instrumentation and runs each for N seconds, one after the other.
//!
//! Everything works on the stable toolchain: `libfuzzer-sys` compiles libFuzzer with the C++
//! compiler, and the instrumentation is the one cargo-fuzz asks rustc for (`-Cpasses=sancov-module`
//! and the `-sanitizer-coverage-*` LLVM options), minus the `-Zsanitizer` that needs nightly. The
//! build goes to `.cache/fuzz/target`, apart from ordinary builds (other flags). Each target runs
//! on a working corpus in `.cache/fuzz/corpus/NAME`, seeded from the committed `fuzz/seeds/NAME`,
//! so what a run learns is kept locally and the repository stays small. A crash is saved under
//! `.cache/fuzz/artifacts/NAME/` and fails the command with the line that reproduces it.

use crate::process::{self, capture, describe};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// The fuzz targets, in the order they run.
pub const TARGETS: &[&str] = &["line", "moved", "decode", "check", "schema", "diff", "state"];

/// What cargo-fuzz passes to rustc for libFuzzer, without the nightly-only sanitizer; debug
/// assertions and overflow checks on, so arithmetic mistakes are findings too.
const RUSTFLAGS: &[&str] = &[
    "--cfg",
    "fuzzing",
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "-Cdebug-assertions",
    "-Coverflow-checks",
];

/// Builds the targets and fuzzes each matching `only` (all when `None`) for `seconds`. Returns
/// one line per target: executions, duration, corpus size, peak memory.
pub fn run(root: &Path, seconds: u64, only: Option<&str>) -> Result<Vec<String>, String> {
    if seconds == 0 {
        return Err("--seconds must be at least 1 (libFuzzer reads 0 as \"forever\")".into());
    }
    let targets: Vec<&str> = TARGETS.iter().copied().filter(|t| only.is_none_or(|o| t.contains(o))).collect();
    if targets.is_empty() {
        return Err(format!("no fuzz target matches {:?}; the targets are {}", only.unwrap_or(""), TARGETS.join(", ")));
    }
    let cache = root.join(".cache/fuzz");
    let bin_dir = build(root, &cache)?;
    let mut lines = Vec::new();
    let mut crashed = false;
    for target in targets {
        let outcome = fuzz_one(root, &cache, &bin_dir, target, seconds)?;
        crashed |= outcome.failed;
        lines.push(outcome.line);
    }
    if crashed {
        return Err(lines.join("\n"));
    }
    Ok(lines)
}

/// `rustc`'s host triple: building for an explicit target keeps the instrumentation flags off
/// build scripts and proc macros (cargo applies RUSTFLAGS to them only without `--target`).
fn host() -> Result<String, String> {
    let mut rustc = process::rustc();
    rustc.arg("-vV");
    capture(&mut rustc)?
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .ok_or_else(|| format!("`{}` names no host", describe(&rustc)))
}

/// Builds every target; returns the directory holding the binaries.
fn build(root: &Path, cache: &Path) -> Result<PathBuf, String> {
    let host = host()?;
    let target_dir = cache.join("target");
    let mut cargo = process::cargo();
    cargo
        .current_dir(root.join("fuzz"))
        .args(["build", "--release", "--bins", "--target", &host, "--target-dir"])
        .arg(&target_dir)
        // The encoded form would win over RUSTFLAGS.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env("RUSTFLAGS", RUSTFLAGS.join(" "));
    process::run_attached(&mut cargo).map_err(|e| format!("building the fuzz targets failed: {e}"))?;
    Ok(target_dir.join(host).join("release"))
}

struct Outcome {
    line: String,
    /// A crash, a hang or libFuzzer failing otherwise.
    failed: bool,
}

fn fuzz_one(root: &Path, cache: &Path, bin_dir: &Path, target: &str, seconds: u64) -> Result<Outcome, String> {
    let corpus = cache.join("corpus").join(target);
    let artifacts = cache.join("artifacts").join(target);
    let log_path = cache.join("logs").join(format!("{target}.log"));
    for dir in [&corpus, &artifacts, &cache.join("logs")] {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    seed(&root.join("fuzz/seeds").join(target), &corpus)?;
    let log = fs::File::create(&log_path).map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let binary = bin_dir.join(target);
    let start = Instant::now();
    let status = Command::new(&binary)
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        // One input running this long is a hang: a finding like a crash.
        .arg("-timeout=60")
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(&corpus)
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()))?;
    let elapsed = start.elapsed().as_secs();
    let text = fs::read_to_string(&log_path).map_err(|e| format!("cannot read {}: {e}", log_path.display()))?;
    let stat = |name: &str| {
        text.lines()
            .rev()
            .find_map(|l| l.strip_prefix(&format!("stat::{name}:")).map(|v| v.trim().to_string()))
            .unwrap_or_else(|| "?".into())
    };
    let executions = stat("number_of_executed_units");
    let rss = stat("peak_rss_mb");
    let inputs = fs::read_dir(&corpus).map(|d| d.count()).unwrap_or(0);
    if status.success() {
        return Ok(Outcome {
            line: format!(
                "fuzz {target}: {executions} executions in {elapsed} s, no crash (corpus {inputs} inputs, peak RSS {rss} MB)"
            ),
            failed: false,
        });
    }
    let crash =
        text.lines().rev().find_map(|l| l.split("Test unit written to ").nth(1)).map(|p| PathBuf::from(p.trim()));
    let line = match &crash {
        Some(input) => format!(
            "fuzz {target}: CRASH after {executions} executions in {elapsed} s; input {}; reproduce: {} {}; log {}",
            input.display(),
            binary.display(),
            input.display(),
            log_path.display()
        ),
        None => format!("fuzz {target}: libFuzzer failed ({status}); log {}", log_path.display()),
    };
    Ok(Outcome { line, failed: true })
}

/// Copies the committed seeds that the working corpus does not have yet.
fn seed(seeds: &Path, corpus: &Path) -> Result<(), String> {
    let entries = fs::read_dir(seeds).map_err(|e| format!("cannot read {}: {e}", seeds.display()))?;
    for entry in entries.flatten() {
        let to = corpus.join(format!("seed-{}", entry.file_name().to_string_lossy()));
        if !to.exists() {
            fs::copy(entry.path(), &to).map_err(|e| format!("cannot copy {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}
