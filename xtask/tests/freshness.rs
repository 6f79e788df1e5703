//! `cargo xtask codegen --check` as a test: the committed output is fresh, generation is
//! deterministic, and a hand edit in `generated/` or `schema/` is caught and named.

use std::fs;
use std::path::Path;

#[test]
fn committed_output_is_fresh() {
    if let Err(e) = xtask::codegen::check(&xtask::project_root()) {
        panic!("{e}");
    }
}

#[test]
fn two_runs_give_identical_output() {
    let root = xtask::project_root();
    let (first, _) = xtask::codegen::generate(&root).expect("generates");
    let (second, _) = xtask::codegen::generate(&root).expect("generates");
    assert_eq!(first, second);
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("readdir").flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// A scratch copy of what `--check` reads: `schema/` and `generated/`.
fn scratch_root() -> tempfile::TempDir {
    let root = xtask::project_root();
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&root.join("schema"), &dir.path().join("schema"));
    copy_tree(&root.join("generated"), &dir.path().join("generated"));
    dir
}

#[test]
fn hand_edit_in_generated_is_caught() {
    let dir = scratch_root();
    let file = dir.path().join("generated/v2/src/types.rs");
    let text = fs::read_to_string(&file).expect("read");
    fs::write(&file, text.replacen("pub struct", "pub(crate) struct", 1)).expect("write");
    let err = xtask::codegen::check(dir.path()).expect_err("stale");
    assert!(err.contains("generated/v2/src/types.rs is stale"), "{err}");
    assert!(err.contains("cargo xtask codegen"), "{err}");
}

#[test]
fn stray_file_in_generated_is_caught() {
    let dir = scratch_root();
    fs::write(dir.path().join("generated/v1/src/old.rs"), "// left behind\n").expect("write");
    let err = xtask::codegen::check(dir.path()).expect_err("stale");
    assert!(err.contains("generated/v1/src/old.rs is no longer generated"), "{err}");
}

#[test]
fn hand_edit_in_schema_is_caught() {
    let dir = scratch_root();
    let file = dir.path().join("schema/v1/schema.json");
    let text = fs::read_to_string(&file).expect("read");
    fs::write(&file, text.replacen("\"description\": \"", "\"description\": \"Edited. ", 1)).expect("write");
    let err = xtask::codegen::check(dir.path()).expect_err("edited schema");
    assert!(err.contains("schema/v1/schema.json"), "{err}");
}
