//! The pure parts of `cargo xtask schema history` (no network, no cargo): semver order of the
//! published versions, de-duplication by sha256 with the "also in" list, the pairs the differ
//! compares, which crates are tested, crate names, and taking a standalone crate's manifest into
//! the history workspace.

use std::path::PathBuf;
use xtask::history::{
    also_in_text, compare_versions, crate_names, distinct, pairs, sort_versions, tested, Origin, Shipped,
};

fn origin(package: &str, version: &str, path: &str) -> Origin {
    Origin { package: package.into(), version: version.into(), path: path.into() }
}

fn shipped(package: &str, version: &str, path: &str, sha256: &str) -> Shipped {
    Shipped { origin: origin(package, version, path), sha256: sha256.into(), file: PathBuf::from(version).join(path) }
}

const ZED: &str = "@zed-industries/agent-client-protocol";
const SDK: &str = "@agentclientprotocol/sdk";
const FLAT: &str = "package/schema/schema.json";
const V1: &str = "package/schema/v1/schema.json";

#[test]
fn versions_sort_by_semver_precedence() {
    let mut versions: Vec<String> = [
        "0.3.1",
        "0.10.0",
        "0.2.0-alpha.8",
        "0.1.2",
        "1.0.0",
        "0.2.0",
        "0.2.0-alpha.10",
        "0.2.0-alpha.6",
        "1.0.0-rc.1",
    ]
    .map(String::from)
    .to_vec();
    sort_versions(&mut versions);
    let expected = [
        "0.1.2",
        "0.2.0-alpha.6",
        "0.2.0-alpha.8",
        "0.2.0-alpha.10",
        "0.2.0",
        "0.3.1",
        "0.10.0",
        "1.0.0-rc.1",
        "1.0.0",
    ];
    assert_eq!(versions, expected);

    // The precedence chain of the semver specification (§11).
    let chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1+build.5",
    ];
    for pair in chain.windows(2) {
        assert_eq!(compare_versions(pair[0], pair[1]), std::cmp::Ordering::Less, "{} < {}", pair[0], pair[1]);
        assert_eq!(compare_versions(pair[1], pair[0]), std::cmp::Ordering::Greater, "{} > {}", pair[1], pair[0]);
    }
    assert_eq!(compare_versions("2.4.0", "2.4.0"), std::cmp::Ordering::Equal);
}

#[test]
fn identical_files_are_kept_once_with_where_else_they_were_shipped() {
    let files = distinct(vec![
        shipped(ZED, "0.4.3", FLAT, "aa"),
        shipped(ZED, "0.4.5", FLAT, "aa"),
        shipped(SDK, "0.4.5", FLAT, "aa"),
        shipped(SDK, "0.4.9", FLAT, "aa"),
        shipped(SDK, "0.5.1", FLAT, "bb"),
        shipped(SDK, "2.0.0", V1, "cc"),
        shipped(SDK, "2.0.0", "package/schema/v1/schema.unstable.json", "bb"),
        shipped(SDK, "2.0.1", V1, "cc"),
    ]);
    let firsts: Vec<&Origin> = files.iter().map(|f| &f.origin).collect();
    assert_eq!(firsts, [&origin(ZED, "0.4.3", FLAT), &origin(SDK, "0.5.1", FLAT), &origin(SDK, "2.0.0", V1)]);
    assert_eq!(files[0].file, PathBuf::from("0.4.3").join(FLAT), "the first shipped file is the one kept");
    assert_eq!(files[0].also_in, [origin(ZED, "0.4.5", FLAT), origin(SDK, "0.4.5", FLAT), origin(SDK, "0.4.9", FLAT)]);

    // Grouped by package, and the path named only where it differs.
    assert_eq!(also_in_text(&files[0]), format!("{ZED}@0.4.5; {SDK}@0.4.5, 0.4.9"));
    assert_eq!(also_in_text(&files[1]), format!("{SDK}@2.0.0 package/schema/v1/schema.unstable.json"));
    assert_eq!(also_in_text(&files[2]), format!("{SDK}@2.0.1"));
    assert_eq!(distinct(Vec::new()).len(), 0);
}

#[test]
fn each_file_is_diffed_with_the_previous_one_at_its_path() {
    assert_eq!(pairs(&[]), []);
    assert_eq!(pairs(&["a"]), []);
    assert_eq!(pairs(&["a", "a", "a"]), [(0, 1), (1, 2)]);
    // `b` first appears after `a`: its first pair bridges from the file before it.
    assert_eq!(pairs(&["a", "a", "b", "a", "b"]), [(0, 1), (1, 2), (1, 3), (2, 4)]);
}

#[test]
fn the_oldest_the_newest_of_each_major_and_the_newest_are_tested() {
    let files = distinct(vec![
        shipped(ZED, "0.1.2", FLAT, "1"),
        shipped(ZED, "0.3.1", FLAT, "2"),
        shipped(SDK, "0.29.0", FLAT, "3"),
        shipped(SDK, "1.0.0", FLAT, "4"),
        shipped(SDK, "1.9.0", FLAT, "5"),
        shipped(SDK, "2.0.0", V1, "6"),
        shipped(SDK, "2.4.0", V1, "7"),
        shipped(SDK, "2.4.0", "package/schema/v2/schema.json", "8"),
    ]);
    assert_eq!(tested(&files).into_iter().collect::<Vec<_>>(), [0, 2, 4, 7]);
    assert!(tested(&[]).is_empty());
}

#[test]
fn crate_names_are_unique_cargo_names() {
    let files = distinct(vec![
        shipped(ZED, "0.2.0-alpha.6", FLAT, "1"),
        shipped(SDK, "2.4.0", "package/schema/v2/schema.unstable.json", "2"),
        shipped(SDK, "2.4.0", "package/schema/v2/schema-unstable.json", "3"),
        shipped("9lives", "1.0.0", FLAT, "4"),
    ]);
    assert_eq!(
        crate_names(&files),
        [
            "agent-client-protocol-0-2-0-alpha-6-schema-schema",
            "sdk-2-4-0-schema-v2-schema-unstable",
            "sdk-2-4-0-schema-v2-schema-unstable-2",
            "acp-9lives-1-0-0-schema-schema",
        ]
    );
}

#[test]
fn standalone_manifests_are_a_workspace_or_a_member() {
    use acp_codegen::emit::crates::{standalone, Workspace};
    let support = std::env::temp_dir().join("support");
    let (own, _) = standalone("sdk-2-4-0", "schema.json", &support, Workspace::Own).expect("emits");
    assert!(own.ends_with("\n[workspace]\n"), "{own}");
    let (member, _) = standalone("sdk-2-4-0", "schema.json", &support, Workspace::Member).expect("emits");
    assert!(!member.contains("[workspace"), "{member}");
    assert!(member.contains("[package]\nname = \"sdk-2-4-0\""), "{member}");
    assert_eq!(format!("{member}\n[workspace]\n"), own);
}
