//! The generator engine's tests (`acp-codegen`), one binary: a module per concern. The small
//! schemas they read are in `xtask/codegen/tests/data/`; the developer tasks' tests are
//! `xtask/tests/tasks/`.

/// Annotations (`x-state`, `x-scope`, unknown `x-` keywords) kept raw in the IR, typed where known.
mod annotations_kept;
/// What the earliest drafts do that later ones do not (responses without `x-method`, `null` results).
mod early_drafts_lowered;
/// Extension schemas joined to their core version: their types, `_` methods and errors.
mod extension_schemas;
/// Who receives a method (`x-side`), whether it names a session, and how a merge keeps both.
mod method_sides;
/// Each small schema's generated Rust, method tables, warnings or error text, against the file beside it.
mod schema_snapshots;
