//! The developer tasks' tests (`cargo xtask …`), one binary: a module per task. The generator
//! engine's own tests are `xtask/codegen/tests/`.

/// `cargo xtask bench`: its pure parts (rows, targets, verdicts, the BENCHMARKS.md section).
mod bench_tables;
/// `cargo xtask codegen --check`: fresh output, determinism, hand edits caught.
mod codegen_freshness;
/// `cargo xtask diff`: one test per rule, then the real schemas.
mod diff_rules;
/// Older published schemas generate crates that compile and pass their tests.
mod old_schemas_generate;
/// `cargo xtask schema pull --crate` derives the files the maintainers published.
mod schema_from_crate;
/// `cargo xtask schema history`: its pure parts.
mod schema_history;
