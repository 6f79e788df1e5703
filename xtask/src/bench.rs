//! `cargo xtask bench [--quick] [--write]`: our crates against the official Rust crates, one table.
//!
//! The rows come from three places:
//! - **codegen**: `cargo xtask codegen` itself (this binary), one warm-up run discarded, then the
//!   median of several runs;
//! - **build**: clean debug builds of two scratch crates in `.cache/bench/build/` (gitignored), a
//!   lib on `generated/` (`v1` + `v2`, no schemars) and one on the official
//!   `agent-client-protocol-schema` at the version `bench/Cargo.toml` pins (`unstable_protocol_v2`,
//!   which is v1 + v2, no schemars); `cargo fetch` first, so downloads are not timed;
//! - **everything else**: `acp-bench rows` from `bench/` (its own workspace, built here in
//!   release), one JSON object per row; the network rows ([`net`]) and their floors
//!   ([`netfloor`]), the composition rows ([`composition`]), MCP over ACP ([`mcp`]) and
//!   `acp view`'s ([`view`]).
//!
//! Each row gets a target by its name ([`target_for`]) and a verdict. The table goes to stdout and,
//! for a full run (or `--quick --write`), into `BENCHMARKS.md` between [`BEGIN`] and [`END`] with
//! the date, machine and versions; the text around the markers is hand-written and kept.

pub mod composition;
pub mod mcp;
pub mod net;
pub mod netfloor;
pub mod plot;
pub mod scale;
pub mod table;
pub mod treemem;
pub mod view;

pub use table::{median, replace_between, sig3, thousands, Row};

use crate::process::{self, capture, describe, stream};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

/// The line before the generated part of `BENCHMARKS.md`.
pub const BEGIN: &str = "<!-- bench:begin -->";
/// The line after it.
pub const END: &str = "<!-- bench:end -->";

/// What `BENCHMARKS.md` starts as when it does not exist yet.
const FILE_HEAD: &str = "# Benchmarks

`acp-types` and `acp-rpc` against the official Rust crates (`agent-client-protocol-schema` for the
types, `agent-client-protocol` for the runtime), measured by `cargo xtask bench`.

How to run: `cargo xtask bench` measures everything and rewrites the table below;
`cargo xtask bench --quick` is a short smoke run that only prints its table (add `--write` to record it
here). The first run builds what it needs: the benchmark binary in `bench/` (release) and two scratch
crates in `.cache/bench/build/`. Figures depend on the machine and its load; compare the two columns of
one run rather than runs with each other. Everything between the markers is rewritten by each run;
the rest of this file is not.

";

/// The crates `bench/Cargo.toml` pins as the references, in the order they are named.
pub const REFERENCES: [&str; 2] = ["agent-client-protocol-schema", "agent-client-protocol"];

/// The command line flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Fewer, shorter runs: a smoke test, not figures to record.
    pub quick: bool,
    /// Write `BENCHMARKS.md` after a quick run too (a full run always writes it).
    pub write: bool,
    /// Only the network rows ([`net`]); prints only, never writes.
    pub net_only: bool,
    /// Only the TLS network rows (`https`, `wss`); prints only, never writes.
    pub tls_only: bool,
    /// Only the scale curves (`scale`); prints their section, writes it with `write`.
    pub scale: bool,
}

impl Options {
    /// The command that produced a table, as it is recorded in `BENCHMARKS.md`.
    pub fn command(&self) -> &'static str {
        if self.scale {
            return if self.quick { "cargo xtask bench --scale --quick" } else { "cargo xtask bench --scale" };
        }
        match (self.quick, self.net_only, self.tls_only) {
            (true, _, true) => "cargo xtask bench --quick --tls-only",
            (false, _, true) => "cargo xtask bench --tls-only",
            (true, true, false) => "cargo xtask bench --quick --net-only",
            (false, true, false) => "cargo xtask bench --net-only",
            (true, false, false) => "cargo xtask bench --quick",
            (false, false, false) => "cargo xtask bench",
        }
    }
}

/// What a finished run hands back to `main`.
#[derive(Debug)]
pub struct Report {
    /// The table, one markdown line each.
    pub table: Vec<String>,
    /// `BENCHMARKS.md`, when it was written.
    pub written: Option<PathBuf>,
    /// Building the benchmark binary and preparing the scratch crates (downloads included).
    pub building: Duration,
    /// Everything after: the codegen runs, the timed clean builds, `acp-bench rows`.
    pub measuring: Duration,
    pub total: Duration,
}

impl Report {
    /// The last line printed: where the time went.
    pub fn summary(&self) -> String {
        format!(
            "bench: {} in all: {} building (benchmark binary, scratch crates, downloads), {} measuring",
            duration(self.total),
            duration(self.building),
            duration(self.measuring)
        )
    }
}

/// Runs the benchmarks; progress goes to stderr, the table comes back in the [`Report`].
pub fn run(root: &Path, options: Options) -> Result<Report, String> {
    if options.scale {
        return run_scale_only(root, options);
    }
    if options.net_only || options.tls_only {
        return run_net_only(root, options);
    }
    let start = Instant::now();
    let load = fs::read_to_string("/proc/loadavg").ok().and_then(|t| load_average(&t));
    let versions = Versions::read(root)?;
    let rustc = rustc_version()?;
    let source = source_revision(root);
    let xtask = std::env::current_exe().map_err(|e| format!("cannot find the running xtask binary: {e}"))?;
    // The codegen row runs `cargo xtask codegen`, which rewrites generated/ when it is stale, and
    // the bench binary would be measuring stale code: refuse before anything is built.
    capture(Command::new(&xtask).args(["codegen", "--check"]).current_dir(root))
        .map_err(|e| format!("{e}\nthe codegen row runs `cargo xtask codegen`; regenerate before benchmarking"))?;

    let bench_binary = build_bench(root)?;
    let scratch = prepare_build_crates(root, &versions)?;
    let net_peers = net::prepare(root, false)?;
    let building = start.elapsed();

    let (codegen_runs, build_runs) = if options.quick { (3, 1) } else { (10, 3) };
    let mut rows = vec![codegen_row(root, &xtask, codegen_runs)?];
    rows.push(build_row(&scratch, build_runs, &rustc, &versions)?);
    rows.extend(bench_rows(root, &bench_binary, options.quick)?);
    let net_rows = net::rows(&net_peers, options.quick, false)?;
    let floors = netfloor::rows(root, &net_peers, &net_rows, options.quick)?;
    rows.extend(net_rows);
    rows.extend(floors);
    rows.extend(composition::rows(root, options.quick)?);
    rows.extend(mcp::rows(root, options.quick)?);
    rows.extend(view::rows(root)?);
    if !options.quick {
        // About two minutes on 2 cores; the quick run leaves it to `--scale --quick`.
        scale::run(root, &net_peers, false, true, options.command())?;
    }
    let measuring = start.elapsed() - building;

    let table = render_table(&rows);
    let written = if options.quick && !options.write {
        eprintln!("bench: --quick: BENCHMARKS.md left as it is (add --write to record this run)");
        None
    } else {
        let meta = Meta {
            command: options.command().to_string(),
            date: utc_date(SystemTime::now()),
            machine: machine(),
            load: load.unwrap_or_else(|| "unknown".into()),
            rustc,
            source,
            ours: versions.ours(),
            reference: versions.reference(),
        };
        let path = root.join("BENCHMARKS.md");
        let existing = match fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let text = replace_section(existing.as_deref(), &render_section(&meta, &rows))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Some(path)
    };
    Ok(Report { table, written, building, measuring, total: start.elapsed() })
}

/// `--net-only` (or `--tls-only`): the network rows (or their TLS ones) alone, printed and never written (the table in `BENCHMARKS.md`
/// is one run's).
fn run_net_only(root: &Path, options: Options) -> Result<Report, String> {
    let start = Instant::now();
    let peers = net::prepare(root, options.tls_only)?;
    let building = start.elapsed();
    let mut rows = net::rows(&peers, options.quick, options.tls_only)?;
    let floors = netfloor::rows(root, &peers, &rows, options.quick)?;
    rows.extend(floors);
    let measuring = start.elapsed() - building;
    eprintln!("bench: {}: BENCHMARKS.md left as it is", options.command());
    Ok(Report { table: render_table(&rows), written: None, building, measuring, total: start.elapsed() })
}

/// `--scale`: the scale curves alone; their section is printed, and written into `BENCHMARKS.md`
/// with `--write` (a full `--scale` run always writes it).
fn run_scale_only(root: &Path, options: Options) -> Result<Report, String> {
    let start = Instant::now();
    let peers = net::prepare(root, false)?;
    let building = start.elapsed();
    let section = scale::run(root, &peers, options.quick, options.write || !options.quick, options.command())?;
    let measuring = start.elapsed() - building;
    Ok(Report {
        table: section.lines().map(str::to_string).collect(),
        written: None,
        building,
        measuring,
        total: start.elapsed(),
    })
}

/// `cargo xtask bench` as the command line runs it: the table on stdout, then where it was
/// written and where the time went on stderr. Returns no further lines.
pub fn run_command(root: &Path, options: Options) -> Result<Vec<String>, String> {
    let report = run(root, options)?;
    for line in &report.table {
        println!("{line}");
    }
    if let Some(path) = &report.written {
        eprintln!("bench: wrote {}", path.display());
    }
    // The wall time comes last, after the table.
    eprintln!("{}", report.summary());
    Ok(Vec::new())
}

// ---------------------------------------------------------------------------------------------
// Targets

/// What a row has to reach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Target {
    /// Nothing to meet (latency p50, rows this version of xtask does not know).
    None,
    /// `ours` below this, in the row's unit.
    Below(f64),
    /// The ratio (reference time / our time) at least `min`; `aim` is shown, not judged.
    Ratio { min: f64, aim: Option<f64> },
    /// `ours` at most this many MiB (twice the message size).
    AtMostMib(f64),
}

/// The target of a row, by its name.
pub fn target_for(row: &Row) -> Target {
    let name = row.name.as_str();
    let ratio = |min| Target::Ratio { min, aim: None };
    if name.starts_with("large message") {
        return if name.contains("throughput") {
            ratio(1.0)
        } else if name.contains("peak memory") {
            message_mib(row).map_or(Target::None, |mib| Target::AtMostMib(2.0 * mib))
        } else {
            Target::None
        };
    }
    let by_prefix = [
        ("codegen", Target::Below(0.5)),
        ("build", ratio(1.0)),
        ("decode", Target::Ratio { min: 1.0, aim: Some(1.3) }),
        ("encode", ratio(1.0)),
        // Ours within 3x of serde's IgnoredAny on the same bytes.
        ("scan floor", ratio(0.33)),
        // Ours at 0.7 of the same bytes moved by the same transport with no protocol (issue 52).
        ("transport floor", ratio(0.7)),
        // Twice the official conductor's pace (it relays JSON through typed values and tasks).
        ("composition turns", ratio(2.0)),
        // One proxy hop costs at most 20 % of a direct turn.
        ("composition one hop", ratio(0.8)),
        // Its other rows too (p99, the flood, memory): twice the official conductor's figure.
        ("composition", ratio(2.0)),
        ("round trips", ratio(1.5)),
        ("notification stream", ratio(1.5)),
        // Over the network the reference is the TypeScript SDK: at least its pace.
        ("net round trips", ratio(1.0)),
        ("net notification stream", ratio(1.0)),
        // The tail no worse than the official runtime's; p50 is shown, not judged.
        ("latency p99", ratio(1.0)),
        // `acp view` of 100,000 messages (issue 38): a page under 20 MB, interactive within 5 s.
        ("view page size", Target::Below(20.0)),
        ("view interactive", Target::Below(5.0)),
    ];
    by_prefix.iter().find(|(prefix, _)| name.starts_with(prefix)).map_or(Target::None, |&(_, target)| target)
}

impl Target {
    /// The target column.
    pub fn label(&self, unit: &str) -> String {
        match *self {
            Target::None => "—".into(),
            Target::Below(limit) => format!("< {limit} {unit}"),
            Target::Ratio { min, aim: None } => format!("≥ {}", ratio_text(min)),
            Target::Ratio { min, aim: Some(aim) } => format!("≥ {} (aim {})", ratio_text(min), ratio_text(aim)),
            Target::AtMostMib(limit) => format!("ours ≤ {limit} MiB (2× message)"),
        }
    }

    /// Whether the row meets it; `None` when there is nothing to judge (no target, no number).
    pub fn meets(&self, row: &Row) -> Option<bool> {
        match *self {
            Target::None => None,
            Target::Below(limit) => row.ours.map(|ours| ours < limit),
            Target::Ratio { min, .. } => row.ratio.map(|ratio| ratio >= min),
            Target::AtMostMib(limit) => row.ours.map(|ours| ours <= limit),
        }
    }
}

/// `1.0`, `0.33`, `1.5`: a threshold as written, with at least one decimal.
fn ratio_text(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// The message size of a large-message row in MiB: from its name (`large message 64 MiB: …`),
/// else from its note (`message = 64.0 MiB`).
fn message_mib(row: &Row) -> Option<f64> {
    let from_name = row.name.strip_prefix("large message ").and_then(|rest| rest.split(':').next()).and_then(size_mib);
    from_name.or_else(|| {
        let mut words = row.note.split("message = ").nth(1)?.split_whitespace();
        let number = words.next()?;
        let unit = words.next()?.trim_end_matches(|c: char| !c.is_ascii_alphabetic());
        size_mib(&format!("{number} {unit}"))
    })
}

/// `"64 MiB"` → 64.0; KiB and GiB too.
fn size_mib(text: &str) -> Option<f64> {
    let (number, unit) = text.trim().split_once(' ')?;
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "KiB" => 1.0 / 1024.0,
        "MiB" => 1.0,
        "GiB" => 1024.0,
        _ => return None,
    };
    Some(number * scale)
}

// ---------------------------------------------------------------------------------------------
// Rendering

/// Parses the stdout of `acp-bench rows`: one JSON object per line, blank lines ignored.
pub fn parse_rows(stdout: &str) -> Result<Vec<Row>, String> {
    stdout.lines().filter(|line| !line.trim().is_empty()).map(parse_row).collect()
}

fn parse_row(line: &str) -> Result<Row, String> {
    serde_json::from_str(line).map_err(|e| format!("acp-bench printed a line that is not a row ({e}): {line}"))
}

fn value(x: Option<f64>, unit: &str) -> String {
    x.map_or_else(|| "—".into(), |x| format!("{} {unit}", sig3(x)))
}

fn verdict(meets: Option<bool>) -> &'static str {
    match meets {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    }
}

/// The table as aligned markdown: `row | ours | reference | ratio | target | meets`.
pub fn render_table(rows: &[Row]) -> Vec<String> {
    const HEADER: [&str; 6] = ["row", "ours", "reference", "ratio", "target", "meets"];
    // Numbers are right-aligned.
    const RIGHT: [bool; 6] = [false, true, true, true, false, false];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let target = target_for(row);
            [
                row.name.replace('|', "\\|"),
                value(row.ours, &row.unit),
                value(row.reference, &row.unit),
                row.ratio.map_or_else(|| "—".into(), |r| format!("{}×", sig3(r))),
                target.label(&row.unit),
                verdict(target.meets(row)).into(),
            ]
        })
        .collect();
    let mut widths = HEADER.map(|h| h.chars().count().max(3));
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 6]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .zip(RIGHT)
            .map(|((cell, width), right)| if right { format!("{cell:>width$}") } else { format!("{cell:<width$}") })
            .collect();
        format!("| {} |", padded.join(" | "))
    };
    let rule: Vec<String> = widths
        .iter()
        .zip(RIGHT)
        .map(|(&width, right)| if right { format!("{}:", "-".repeat(width - 1)) } else { "-".repeat(width) })
        .collect();
    let mut lines = vec![line(HEADER), format!("| {} |", rule.join(" | "))];
    lines.extend(cells.iter().map(|row| line([&row[0], &row[1], &row[2], &row[3], &row[4], &row[5]])));
    lines
}

/// Where and with what a table was measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// `cargo xtask bench` or `cargo xtask bench --quick`.
    pub command: String,
    /// UTC, `YYYY-MM-DD`.
    pub date: String,
    pub machine: String,
    /// The load average when the run started.
    pub load: String,
    /// `rustc -V`.
    pub rustc: String,
    /// The commit measured, and whether the tree had changes beyond it.
    pub source: String,
    pub ours: String,
    pub reference: String,
}

/// What goes between the markers (without them): provenance, the table, the rows' notes.
pub fn render_section(meta: &Meta, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Produced by `{}` on {} (UTC).", meta.command, meta.date);
    out.push('\n');
    let _ = writeln!(out, "- Machine: {}; load average at start {}", meta.machine, meta.load);
    let _ = writeln!(out, "- Toolchain: {}", meta.rustc);
    let _ = writeln!(out, "- Source: {}", meta.source);
    let _ = writeln!(out, "- Ours: {}", meta.ours);
    let _ = writeln!(out, "- Reference: {}", meta.reference);
    out.push('\n');
    for line in render_table(rows) {
        let _ = writeln!(out, "{line}");
    }
    let notes: Vec<&Row> = rows.iter().filter(|row| !row.note.trim().is_empty()).collect();
    if !notes.is_empty() {
        out.push_str("\nNotes:\n\n");
        for row in notes {
            let _ = writeln!(out, "- {}: {}", row.name, row.note.trim());
        }
    }
    out
}

/// `BENCHMARKS.md` with `section` between the markers. The text around them is kept byte for byte;
/// a file without markers gets them appended; no file (`None`) gets the standard head first.
pub fn replace_section(existing: Option<&str>, section: &str) -> Result<String, String> {
    match existing {
        None => Ok(format!("{FILE_HEAD}{BEGIN}\n{}\n{END}\n", section.trim_end_matches('\n'))),
        Some(text) => replace_between(text, BEGIN, END, section),
    }
}

// ---------------------------------------------------------------------------------------------
// Provenance

/// The versions compared, read from the manifests rather than written down twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    pub acp_types: String,
    pub acp_rpc: String,
    /// `@agentclientprotocol/sdk 2.4.0`, from `schema/sources.toml`.
    pub schemas: String,
    /// `(crate, version)` of each of [`REFERENCES`], from `bench/Cargo.toml`.
    pub references: Vec<(String, String)>,
}

impl Versions {
    fn read(root: &Path) -> Result<Versions, String> {
        let read = |rel: &str| {
            let path = root.join(rel);
            let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            text.parse::<toml::Table>().map_err(|e| format!("{rel} is malformed: {e}"))
        };
        Ok(Versions {
            acp_types: package_version(&read("generated/Cargo.toml")?, "generated/Cargo.toml")?,
            acp_rpc: package_version(&read("Cargo.toml")?, "Cargo.toml")?,
            schemas: schema_packages(&read("schema/sources.toml")?)?,
            references: pinned_references(&read("bench/Cargo.toml")?)?,
        })
    }

    fn ours(&self) -> String {
        format!("acp-types {}, acp-rpc {} (schemas: {})", self.acp_types, self.acp_rpc, self.schemas)
    }

    fn reference(&self) -> String {
        let crates: Vec<String> = self.references.iter().map(|(name, version)| format!("{name} {version}")).collect();
        format!("{} (pinned in bench/Cargo.toml)", crates.join(", "))
    }

    /// The pinned version of the official schema crate (the build row's reference).
    fn official_schema(&self) -> &str {
        &self.references[0].1
    }
}

/// `package.version` of a manifest.
pub fn package_version(manifest: &toml::Table, name: &str) -> Result<String, String> {
    manifest
        .get("package")
        .and_then(|p| p.get("version"))
        .and_then(toml::Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("{name} has no package.version"))
}

/// The distinct `package version` pairs of `schema/sources.toml`, comma-separated.
pub fn schema_packages(sources: &toml::Table) -> Result<String, String> {
    let files = sources.get("file").and_then(toml::Value::as_array).ok_or("schema/sources.toml lists no [[file]]")?;
    let mut packages: Vec<String> = Vec::new();
    for file in files {
        let field = |key: &str| file.get(key).and_then(toml::Value::as_str).unwrap_or("?");
        let package = format!("{} {}", field("package"), field("version"));
        if !packages.contains(&package) {
            packages.push(package);
        }
    }
    Ok(packages.join(", "))
}

/// The exact (`=x.y.z`) versions `bench/Cargo.toml` pins for [`REFERENCES`].
pub fn pinned_references(manifest: &toml::Table) -> Result<Vec<(String, String)>, String> {
    REFERENCES
        .iter()
        .map(|name| {
            let version = manifest
                .get("dependencies")
                .and_then(|deps| deps.get(name))
                .and_then(|dep| dep.get("version").or(Some(dep)))
                .and_then(toml::Value::as_str)
                .and_then(|v| v.strip_prefix('='))
                .ok_or_else(|| format!("bench/Cargo.toml does not pin {name} with an exact version (\"=x.y.z\")"))?;
            Ok((name.to_string(), version.to_string()))
        })
        .collect()
}

/// The commit checked out (`git rev-parse --short HEAD`), noting uncommitted changes.
fn source_revision(root: &Path) -> String {
    let commit = capture(Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).current_dir(root));
    // BENCHMARKS.md is what the run writes, not what it measures: edits to it do not count.
    let status = capture(
        Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)BENCHMARKS.md"])
            .current_dir(root),
    );
    match (commit, status) {
        (Ok(commit), Ok(status)) if status.trim().is_empty() => format!("commit {}", commit.trim()),
        (Ok(commit), Ok(_)) => format!("commit {} with uncommitted changes", commit.trim()),
        _ => "unknown (not a git checkout)".into(),
    }
}

/// `rustc -V`, as the build uses it.
fn rustc_version() -> Result<String, String> {
    capture(process::rustc().arg("-V")).map(|out| out.trim().to_string())
}

/// Cores, CPU model and memory, as far as the OS tells.
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or_else(|_| "? cores".into(), |n| format!("{n} cores"));
    let model = fs::read_to_string("/proc/cpuinfo").ok().and_then(|t| cpu_model(&t)).unwrap_or("unknown CPU".into());
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| mem_total_gib(&t))
        .map_or_else(|| "unknown memory".into(), |gib| format!("{gib:.1} GiB memory"));
    format!("{cores}, {model}, {memory}")
}

/// The first `model name` of `/proc/cpuinfo`.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_string())
    })
}

/// `MemTotal` of `/proc/meminfo`, in GiB.
pub fn mem_total_gib(meminfo: &str) -> Option<f64> {
    let kib: f64 =
        meminfo.lines().find_map(|line| line.strip_prefix("MemTotal:"))?.split_whitespace().next()?.parse().ok()?;
    Some(kib / (1024.0 * 1024.0))
}

/// The 1, 5 and 15 minute load averages of `/proc/loadavg`.
pub fn load_average(loadavg: &str) -> Option<String> {
    let fields: Vec<&str> = loadavg.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| format!("{} (1, 5, 15 min)", fields.join(" / ")))
}

/// `YYYY-MM-DD` of a time, in UTC.
pub fn utc_date(time: SystemTime) -> String {
    time::OffsetDateTime::from(time).date().to_string()
}

// ---------------------------------------------------------------------------------------------
// Measuring

/// Builds `bench/` in release (its own workspace and `bench/target`); returns the binary.
fn build_bench(root: &Path) -> Result<PathBuf, String> {
    let mut command = process::cargo();
    command
        .args(["build", "--release", "--manifest-path", "bench/Cargo.toml", "--target-dir", "bench/target"])
        .current_dir(root);
    eprintln!("bench: building the benchmark binary: {}", describe(&command));
    stream(&mut command, |_| {})?;
    Ok(root.join("bench/target/release").join(format!("acp-bench{}", std::env::consts::EXE_SUFFIX)))
}

/// The two scratch crates of the build row, written and fetched.
struct BuildCrates {
    ours: PathBuf,
    official: PathBuf,
}

fn prepare_build_crates(root: &Path, versions: &Versions) -> Result<BuildCrates, String> {
    let base = root.join(".cache/bench/build");
    let generated = toml::Value::String(root.join("generated").display().to_string());
    let official_version = versions.official_schema();
    let crates = BuildCrates { ours: base.join("ours"), official: base.join("official") };
    // Both without schemars, v1 + v2 stable: the official crate's `unstable_protocol_v2` is its v2.
    let ours = format!("acp-types = {{ path = {generated}, default-features = false, features = [\"v1\", \"v2\"] }}");
    let official = format!(
        "agent-client-protocol-schema = {{ version = \"={official_version}\", default-features = false, \
         features = [\"unstable_protocol_v2\"] }}"
    );
    for (dir, name, dependency, krate) in [
        (&crates.ours, "bench-build-ours", ours, "acp_types"),
        (&crates.official, "bench-build-official", official, "agent_client_protocol_schema"),
    ] {
        let manifest = format!(
            "# Written by `cargo xtask bench`: a lib on one types crate, to time its clean build.\n\
             [package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             # Not part of the repository's workspace.\n[workspace]\n\n\
             [lib]\npath = \"lib.rs\"\n\n[dependencies]\n{dependency}\n"
        );
        write_if_changed(&dir.join("Cargo.toml"), &manifest)?;
        write_if_changed(&dir.join("lib.rs"), &format!("pub use {krate} as types;\n"))?;
        let mut fetch = process::cargo();
        fetch.arg("fetch").current_dir(dir);
        eprintln!("bench: {}", describe(&fetch));
        stream(&mut fetch, |_| {})?;
    }
    Ok(crates)
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `cargo xtask codegen`, timed: one warm-up discarded, then the median of `runs`.
fn codegen_row(root: &Path, xtask: &Path, runs: usize) -> Result<Row, String> {
    eprintln!("bench: codegen, 1 + {runs} runs of {} codegen", xtask.display());
    let mut times = Vec::with_capacity(runs);
    for i in 0..=runs {
        let start = Instant::now();
        capture(Command::new(xtask).arg("codegen").current_dir(root))?;
        if i > 0 {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    let (min, max) = times.iter().fold((f64::INFINITY, 0f64), |(lo, hi), &t| (lo.min(t), hi.max(t)));
    Ok(Row {
        name: "codegen".into(),
        unit: "s".into(),
        ours: median(&times),
        reference: None,
        ratio: None,
        note: format!(
            "wall time of `cargo xtask codegen` (release xtask, compile excluded, process start included), \
             median of {runs} runs after a discarded warm-up; min {} s, max {} s",
            sig3(min),
            sig3(max)
        ),
    })
}

/// Clean debug builds of the two scratch crates, alternating; the median of `runs` each.
fn build_row(crates: &BuildCrates, runs: usize, rustc: &str, versions: &Versions) -> Result<Row, String> {
    let mut ours = Vec::with_capacity(runs);
    let mut official = Vec::with_capacity(runs);
    for run in 1..=runs {
        for (dir, times, label) in [(&crates.ours, &mut ours, "ours"), (&crates.official, &mut official, "official")] {
            let target = dir.join("target");
            match fs::remove_dir_all(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("cannot remove {}: {e}", target.display())),
            }
            let mut build = process::cargo();
            // Incremental compilation is on for path dependencies only: off, so that ours (a path
            // dependency here) builds the way a crates.io dependency does.
            build.args(["build", "--offline", "--target-dir", "target"]).env("CARGO_INCREMENTAL", "0").current_dir(dir);
            let start = Instant::now();
            capture(&mut build)?;
            let secs = start.elapsed().as_secs_f64();
            eprintln!("bench: build {run}/{runs}, {label}: {} s", sig3(secs));
            times.push(secs);
        }
    }
    let (ours, official) = (median(&ours), median(&official));
    let locks = lock_note(&crates.ours.join("Cargo.lock"), &crates.official.join("Cargo.lock"));
    Ok(Row {
        name: "build (clean, debug, v1 + v2 types)".into(),
        unit: "s".into(),
        ours,
        reference: official,
        ratio: ours.zip(official).map(|(ours, official)| official / ours),
        note: format!(
            "`cargo build --offline` of a lib on acp-types {} (features v1, v2) vs one on \
             agent-client-protocol-schema {} (unstable_protocol_v2), both without schemars, \
             CARGO_INCREMENTAL=0, dependencies included, downloads excluded; median of {runs}; {rustc}; {locks}",
            versions.acp_types,
            versions.official_schema()
        ),
    })
}

/// The serde and serde_json each scratch crate resolved, so that a difference is visible.
fn lock_note(ours: &Path, official: &Path) -> String {
    let versions = |path: &Path| {
        let text = fs::read_to_string(path).unwrap_or_default();
        ["serde", "serde_json"].map(|name| lock_version(&text, name).unwrap_or_else(|| "?".into()))
    };
    let (ours, official) = (versions(ours), versions(official));
    let parts: Vec<String> = ["serde", "serde_json"]
        .iter()
        .zip(ours.iter().zip(&official))
        .map(
            |(name, (o, r))| if o == r { format!("{name} {o}") } else { format!("{name} {o} (ours) / {r} (official)") },
        )
        .collect();
    parts.join(", ")
}

/// The version of `name` in a Cargo.lock.
pub fn lock_version(lock: &str, name: &str) -> Option<String> {
    let lock: toml::Table = lock.parse().ok()?;
    lock.get("package")?.as_array()?.iter().find_map(|package| {
        (package.get("name")?.as_str()? == name).then(|| package.get("version")?.as_str().map(str::to_string))?
    })
}

/// `acp-bench rows [--quick]`, its stderr passed through, its rows parsed.
fn bench_rows(root: &Path, binary: &Path, quick: bool) -> Result<Vec<Row>, String> {
    let mut command = Command::new(binary);
    command.arg("rows").current_dir(root);
    if quick {
        command.arg("--quick");
    }
    eprintln!("bench: {}", describe(&command));
    let stdout = stream(&mut command, |line| {
        if let Ok(row) = parse_row(line) {
            eprintln!(
                "bench: {}: {} (reference {})",
                row.name,
                value(row.ours, &row.unit),
                value(row.reference, &row.unit)
            );
        }
    })?;
    parse_rows(&stdout)
}

/// `42.3 s`, `3 min 05 s`.
fn duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 60.0 {
        format!("{secs:.1} s")
    } else {
        let whole = d.as_secs();
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}
