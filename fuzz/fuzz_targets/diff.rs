//! `cargo xtask diff` on pairs of mutated schemas: one committed schema (first byte), edited by two
//! programs (the rest of the input, split in half), lowered, compared and rendered in every format.
//! Besides "no panic": a protocol compared with itself has no findings.

#![no_main]

use libfuzzer_sys::fuzz_target;
use acp_codegen::diff::{self, render};

fn lower(name: &str, text: &str) -> Option<acp_codegen::ir::Protocol> {
    acp_codegen::load::parse(name, text).and_then(|d| acp_codegen::lower::lower(&d)).ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((&base, rest)) = data.split_first() else { return };
    // In subset mode both sides start from the same definition (see `acp_fuzz::mutated`).
    let (shared, programs) = if base & 0x40 != 0 && rest.len() >= 2 { rest.split_at(2) } else { rest.split_at(0) };
    let half = programs.len() / 2 / 4 * 4;
    let (old_program, new_program) = programs.split_at(half);
    let (name, old) = acp_fuzz::mutated(base, &[shared, old_program].concat());
    let (_, new) = acp_fuzz::mutated(base, &[shared, new_program].concat());
    let (Some(old), Some(new)) = (lower(name, &old), lower(name, &new)) else { return };
    let report = diff::diff(&old, &new);
    let _ = (render::text(&report), render::markdown(&report), render::json(&report));
    let same = diff::diff(&old, &old);
    assert!(same.findings.is_empty(), "a protocol differs from itself: {:?}", same.findings.first());
});
