//! The tests of the generated types (`acp-types`), one binary: each module is one former
//! `tests/types_*.rs` file. CI runs this binary once more without features (`--test types`), so
//! that the stable-only types pass on their own.

mod types_common;

mod behaviour;
mod corpus;
mod differential;
mod methods;
mod moved;
mod properties;
mod schemars;
mod state;
mod unknown;
