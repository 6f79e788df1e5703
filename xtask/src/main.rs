//! `cargo xtask`: the project's own tooling (code generation, schema pinning).

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
    },
    /// Interop scenarios against the official TypeScript and Python SDKs (installed into .cache/interop).
    Interop {
        /// Only the scenarios whose name contains this.
        #[arg(long)]
        only: Option<String>,
    },
    /// Count the IR constructs (structs, unions, patch fields, lenient keywords, …) per schema.
    Stats,
    /// Pin, fetch and verify the published schemas.
    Schema {
        #[command(subcommand)]
        command: SchemaCommand,
    },
}

#[derive(Subcommand)]
enum SchemaCommand {
    /// Fetch the schemas from the npm package and rewrite `schema/` and `schema/sources.toml`.
    Pull {
        /// Package version (default: the one pinned in `schema/sources.toml`).
        #[arg(long)]
        version: Option<String>,
    },
    /// Re-check the sha256 of every committed schema file.
    Verify,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let root = xtask::project_root();
    let result = match cli.command {
        Command::Codegen { check, schema: Some(schema), out: Some(out) } => {
            if check {
                Err("--check compares the committed output; it does not combine with --schema".into())
            } else {
                xtask::codegen::standalone(&schema, &out)
            }
        }
        Command::Codegen { check, .. } => xtask::codegen::run(&root, check),
        Command::Schema { command: SchemaCommand::Pull { version } } => {
            let version = match version {
                Some(v) => Ok(v),
                None => xtask::schema_cmd::pinned_version(&root),
            };
            version.and_then(|v| xtask::schema_cmd::pull(&root, &v))
        }
        Command::Schema { command: SchemaCommand::Verify } => xtask::schema_cmd::verify(&root),
        Command::Stats => xtask::stats::report(&root),
        Command::Interop { only } => {
            xtask::interop::run(&root, only.as_deref()).and_then(|lines| {
                // Once the examples exist, a skipped scenario is a failure too.
                match xtask::interop::skipped(&lines) {
                    0 => Ok(lines),
                    n => Err(format!("{}\n{n} scenario(s) skipped", lines.join("\n"))),
                }
            })
        }
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
