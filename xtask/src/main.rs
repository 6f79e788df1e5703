//! `cargo xtask`: the project's own tooling (code generation, schema pinning, protocol diff, stats,
//! fuzzing, interop scenarios, benchmarks). The command line only: each command's work, printing
//! and exit status included, is in its module of the `xtask` library.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "Project tooling for the ACP toolkit")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate `generated/` from `schema/` (or one schema file into a standalone crate).
    Codegen {
        /// Verify that the committed output is fresh; write nothing.
        #[arg(long)]
        check: bool,
        /// Generate a standalone crate from this ACP schema file instead of the committed ones.
        #[arg(long, requires = "out")]
        schema: Option<PathBuf>,
        /// Directory of the standalone crate (with --schema).
        #[arg(long, requires = "schema")]
        out: Option<PathBuf>,
        /// An extension schema (`_`-prefixed methods; `$ref`s into `../vN/schema.json` name the
        /// --schema file) generated into the crate as `ext::NAME`; repeatable (with --schema).
        #[arg(long, requires = "schema")]
        ext: Vec<PathBuf>,
    },
    /// Interop scenarios against the official TypeScript, Python and Rust SDKs (installed into .cache/interop).
    Interop {
        /// Only the scenarios whose name contains this.
        #[arg(long)]
        only: Option<String>,
    },
    /// What changed between two schema revisions, per method and direction, and whom it breaks.
    ///
    /// Exit status: 0; 1 when a finding reaches --fail-on; 2 on bad input.
    Diff {
        /// The old revision: a schema file, `v1`, `v2`, `v1-unstable`, `v2-unstable`, or `REV:PATH` (git).
        old: String,
        /// The new revision, in the same forms.
        new: String,
        /// How to print the report.
        #[arg(long, value_enum, default_value = "text")]
        format: xtask::diff::Format,
        /// Exit with status 1 when a finding is at least this severe.
        #[arg(long, value_enum, default_value = "never")]
        fail_on: xtask::diff::FailOn,
    },
    /// Count the IR constructs (structs, unions, patch fields, lenient keywords, …) per schema.
    Stats,
    /// Build the fuzz targets in fuzz/ (libFuzzer, stable toolchain) and run each for a while.
    Fuzz {
        /// How long each target runs.
        #[arg(long, default_value_t = 20)]
        seconds: u64,
        /// Only the targets whose name contains this (line, check, schema, diff).
        #[arg(long)]
        only: Option<String>,
    },
    /// Benchmarks against the official crates (codegen, build time, codec, runtime); the table goes to
    /// stdout and, for a full run, into BENCHMARKS.md.
    Bench {
        /// A short smoke run (fewer, shorter measurements); prints only, unless --write.
        #[arg(long)]
        quick: bool,
        /// Write BENCHMARKS.md after a --quick run too (a full run always writes it).
        #[arg(long, conflicts_with = "net_only")]
        write: bool,
        /// Only the network rows (HTTP and WebSocket, against the TypeScript SDK); prints only.
        #[arg(long)]
        net_only: bool,
        /// Only the TLS network rows (https and wss round trips); prints only.
        #[arg(long, conflicts_with = "write")]
        tls_only: bool,
        /// Only the scale curves (10 to 10,000 connections, 1 to 1,000 stdio sessions; 10 and 100, 1
        /// and 10 with --quick): plots in bench/plots/, the section in BENCHMARKS.md.
        #[arg(long, conflicts_with_all = ["net_only", "tls_only"])]
        scale: bool,
    },
    /// Pin, fetch and verify the published schemas.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
}

/// `schema pull --from`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Source {
    /// The npm package `@agentclientprotocol/sdk`.
    Npm,
    /// The crate `agent-client-protocol-schema`.
    Crate,
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Fetch the schemas from the npm package, or derive them from the official schema crate
    /// (`--crate`), and rewrite `schema/` and `schema/sources.toml` (or write them to `--out`).
    Pull {
        /// Version of the npm package or crate (default: the one pinned in `schema/sources.toml`;
        /// for a crate not pinned, the newest on crates.io).
        #[arg(long)]
        version: Option<String>,
        /// Derive the four files from `agent-client-protocol-schema` VERSION on crates.io (default:
        /// the newest), built with `xtask/schema-crate/` in .cache.
        #[arg(long = "crate", value_name = "VERSION", num_args = 0..=1, default_missing_value = "", conflicts_with = "from")]
        crate_version: Option<String>,
        /// Where to take them from (default: where `schema/sources.toml` says they came from).
        #[arg(long, value_enum)]
        from: Option<Source>,
        /// Write the derived files under DIR (`v1/…`, `v2/…`) instead of `schema/`.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Re-check the sha256 of every committed schema file.
    Verify,
    /// Every schema file ever published on npm (all versions of the SDK and its predecessor):
    /// generate a crate from each distinct one, check them all with `-D warnings`, test a few, diff
    /// consecutive ones. One PASS/FAIL line each; the table goes to .cache/schemas/history/report.md.
    ///
    /// Exit status: 0; 1 when anything failed.
    History,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = xtask::project_root();
    let result = match cli.command {
        Command::Diff { old, new, format, fail_on } => {
            return xtask::diff::run_command(&root, &old, &new, format, fail_on);
        }
        Command::Codegen { check: true, schema: Some(_), .. } => {
            Err("--check compares the committed output; it does not combine with --schema".into())
        }
        Command::Codegen { schema: Some(schema), out: Some(out), ext, .. } => {
            xtask::codegen::standalone_with(&schema, &ext, &out, acp_codegen::emit::crates::Workspace::Own)
        }
        Command::Codegen { check, .. } => xtask::codegen::run(&root, check),
        Command::Schema { command: SchemaCommand::Pull { version, crate_version, from, out } } => {
            let from = match (&crate_version, from) {
                (Some(_), _) => Some(xtask::schema::From::Crate),
                (None, Some(Source::Npm)) => Some(xtask::schema::From::Npm),
                (None, Some(Source::Crate)) => Some(xtask::schema::From::Crate),
                (None, None) => None,
            };
            let wanted = match (&version, &crate_version) {
                (Some(v), _) => xtask::schema::Wanted::Exact(v),
                (None, Some(v)) if !v.is_empty() => xtask::schema::Wanted::Exact(v),
                (None, Some(_)) => xtask::schema::Wanted::Newest,
                (None, None) => xtask::schema::Wanted::Pinned,
            };
            xtask::schema::pull_command(&root, from, wanted, out.as_deref())
        }
        Command::Schema { command: SchemaCommand::Verify } => xtask::schema::verify(&root),
        Command::Schema { command: SchemaCommand::History } => return xtask::history::run_command(&root),
        Command::Stats => xtask::stats::report(&root),
        Command::Fuzz { seconds, only } => xtask::fuzz::run(&root, seconds, only.as_deref()),
        Command::Bench { quick, write, net_only, tls_only, scale } => {
            xtask::bench::run_command(&root, xtask::bench::Options { quick, write, net_only, tls_only, scale })
        }
        Command::Interop { only } => xtask::interop::run_command(&root, only.as_deref()),
    };
    match result {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
