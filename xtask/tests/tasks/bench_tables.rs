//! The pure parts of `cargo xtask bench`: parsing rows, targets and verdicts, the table, and the
//! marker section of BENCHMARKS.md. Nothing here measures anything.

use xtask::bench::{
    cpu_model, load_average, lock_version, median, mem_total_gib, parse_rows, pinned_references, render_section,
    render_table, replace_section, schema_packages, sig3, target_for, utc_date, Meta, Row, Target, BEGIN, END,
};

fn row(name: &str, unit: &str, ours: f64, reference: Option<f64>, ratio: Option<f64>) -> Row {
    Row { name: name.into(), unit: unit.into(), ours: Some(ours), reference, ratio, note: String::new() }
}

fn meets(row: &Row) -> Option<bool> {
    target_for(row).meets(row)
}

#[test]
fn rows_parse_from_the_bench_binary_output() {
    let stdout = concat!(
        r#"{"name":"decode v1","unit":"MB/s","ours":250.5,"reference":200.0,"ratio":1.2525,"note":"95 messages"}"#,
        "\n\n",
        r#"{"name":"latency p50, 1000 in flight","unit":"ms","ours":null,"reference":null,"ratio":null,"note":""}"#,
        "\n",
    );
    let rows = parse_rows(stdout).expect("parses");
    assert_eq!(
        rows,
        vec![
            Row {
                name: "decode v1".into(),
                unit: "MB/s".into(),
                ours: Some(250.5),
                reference: Some(200.0),
                ratio: Some(1.2525),
                note: "95 messages".into(),
            },
            Row {
                name: "latency p50, 1000 in flight".into(),
                unit: "ms".into(),
                ours: None,
                reference: None,
                ratio: None,
                note: String::new(),
            },
        ]
    );
}

#[test]
fn a_line_that_is_not_a_row_is_an_error_naming_it() {
    let stdout = "{\"name\":\"decode v1\",\"unit\":\"MB/s\",\"ours\":1,\"reference\":1,\"ratio\":1}\nthread panicked\n";
    let error = parse_rows(stdout).expect_err("the second line is not JSON");
    assert!(error.contains("not a row"), "{error}");
    assert!(error.ends_with(": thread panicked"), "{error}");

    let error = parse_rows(r#"{"name":"x","ours":1}"#).expect_err("no unit");
    assert!(error.contains("missing field `unit`") && error.contains(r#"{"name":"x","ours":1}"#), "{error}");
}

#[test]
fn targets_are_found_by_row_name() {
    let cases: &[(&str, Target)] = &[
        ("codegen", Target::Below(0.5)),
        ("build (clean, debug, v1 + v2 types)", Target::Ratio { min: 1.0, aim: None }),
        ("decode v2", Target::Ratio { min: 1.0, aim: Some(1.3) }),
        ("encode v1", Target::Ratio { min: 1.0, aim: None }),
        ("scan floor v1 (IgnoredAny)", Target::Ratio { min: 0.33, aim: None }),
        ("round trips, 64 in flight", Target::Ratio { min: 1.5, aim: None }),
        ("notification stream (2 processes, OS pipe)", Target::Ratio { min: 1.5, aim: None }),
        ("latency p99, 1000 in flight", Target::Ratio { min: 1.0, aim: None }),
        ("latency p50, 1000 in flight", Target::None),
        ("large message 1 MiB: throughput", Target::Ratio { min: 1.0, aim: None }),
        ("large message 1 MiB: peak memory", Target::AtMostMib(2.0)),
        ("large message 64 MiB: peak memory", Target::AtMostMib(128.0)),
        ("something new", Target::None),
    ];
    for (name, expected) in cases {
        assert_eq!(target_for(&row(name, "x", 1.0, None, None)), *expected, "{name}");
    }
}

#[test]
fn the_message_size_falls_back_to_the_note() {
    let mut r = row("large message, big: peak memory", "MiB", 3.0, Some(9.0), Some(3.0));
    r.note = "VmHWM growth over the process baseline; message = 16.0 MiB, target ours <= 2x message".into();
    assert_eq!(target_for(&r), Target::AtMostMib(32.0));
    r.note = "no size here".into();
    assert_eq!(target_for(&r), Target::None);
}

#[test]
fn verdicts() {
    // codegen: absolute, below 0.5 s.
    assert_eq!(meets(&row("codegen", "s", 0.21, None, None)), Some(true));
    assert_eq!(meets(&row("codegen", "s", 0.5, None, None)), Some(false));
    // Ratios: at least the minimum; the aim is not judged.
    assert_eq!(meets(&row("decode v1", "MB/s", 110.0, Some(100.0), Some(1.1))), Some(true));
    assert_eq!(meets(&row("decode v1", "MB/s", 99.0, Some(100.0), Some(0.99))), Some(false));
    assert_eq!(meets(&row("round trips, 1 in flight", "req/s", 1.0, Some(1.0), Some(1.5))), Some(true));
    assert_eq!(meets(&row("round trips, 1 in flight", "req/s", 1.0, Some(1.0), Some(1.49))), Some(false));
    assert_eq!(meets(&row("scan floor v2 (IgnoredAny)", "MB/s", 1.0, Some(3.0), Some(0.34))), Some(true));
    assert_eq!(meets(&row("scan floor v2 (IgnoredAny)", "MB/s", 1.0, Some(4.0), Some(0.25))), Some(false));
    // No ratio, no verdict.
    assert_eq!(meets(&row("encode v1", "MB/s", 1.0, None, None)), None);
    // Peak memory: ours against twice the message, whatever the ratio says.
    assert_eq!(meets(&row("large message 64 MiB: peak memory", "MiB", 127.9, Some(300.0), Some(2.3))), Some(true));
    assert_eq!(meets(&row("large message 64 MiB: peak memory", "MiB", 130.0, Some(100.0), Some(0.8))), Some(false));
    assert_eq!(meets(&row("large message 1 MiB: peak memory", "MiB", 2.5, Some(9.0), Some(3.6))), Some(false));
    // No target.
    assert_eq!(meets(&row("latency p50, 1000 in flight", "ms", 1.0, Some(2.0), Some(2.0))), None);
    let mut missing = row("codegen", "s", 0.0, None, None);
    missing.ours = None;
    assert_eq!(meets(&missing), None);
}

#[test]
fn target_labels() {
    assert_eq!(Target::Below(0.5).label("s"), "< 0.5 s");
    assert_eq!(Target::Ratio { min: 1.0, aim: Some(1.3) }.label("MB/s"), "≥ 1.0 (aim 1.3)");
    assert_eq!(Target::Ratio { min: 0.33, aim: None }.label("MB/s"), "≥ 0.33");
    assert_eq!(Target::Ratio { min: 1.5, aim: None }.label("req/s"), "≥ 1.5");
    assert_eq!(Target::AtMostMib(128.0).label("MiB"), "ours ≤ 128 MiB (2× message)");
    assert_eq!(Target::None.label("ms"), "—");
}

#[test]
fn three_significant_digits() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (0.012345, "0.0123"),
        (0.2049, "0.205"),
        (1.0, "1.00"),
        (1.2525, "1.25"),
        (9.996, "10.0"),
        (99.96, "100"),
        (123.4, "123"),
        (1234.5, "1,230"),
        (98_765.0, "98,800"),
        (1_234_567.0, "1,230,000"),
        (-4321.0, "-4,320"),
        (f64::NAN, "n/a"),
        (f64::INFINITY, "n/a"),
    ];
    for (x, expected) in cases {
        assert_eq!(sig3(*x), *expected, "{x}");
    }
}

#[test]
fn the_table_has_units_ratios_targets_and_verdicts() {
    let rows = vec![
        row("codegen", "s", 0.2312, None, None),
        row("decode v1", "MB/s", 250.0, Some(200.0), Some(1.25)),
        row("latency p50, 1000 in flight", "ms", 12.34, Some(10.0), Some(0.81)),
        row("large message 64 MiB: peak memory", "MiB", 140.0, Some(300.0), Some(2.142)),
    ];
    assert_eq!(
        render_table(&rows),
        [
            "| row                               |     ours | reference |  ratio | target                      | meets |",
            "| --------------------------------- | -------: | --------: | -----: | --------------------------- | ----- |",
            "| codegen                           |  0.231 s |         — |      — | < 0.5 s                     | yes   |",
            "| decode v1                         | 250 MB/s |  200 MB/s |  1.25× | ≥ 1.0 (aim 1.3)             | yes   |",
            "| latency p50, 1000 in flight       |  12.3 ms |   10.0 ms | 0.810× | —                           | —     |",
            "| large message 64 MiB: peak memory |  140 MiB |   300 MiB |  2.14× | ours ≤ 128 MiB (2× message) | no    |",
        ]
    );
}

fn meta() -> Meta {
    Meta {
        command: "cargo xtask bench --quick".into(),
        date: "2026-11-22".into(),
        machine: "2 cores, Example CPU, 7.8 GiB memory".into(),
        load: "0.50 / 0.40 / 0.30 (1, 5, 15 min)".into(),
        rustc: "rustc 1.95.0 (59807616e 2026-04-14)".into(),
        source: "commit 0123456789ab".into(),
        ours: "acp-types 0.1.0, acp-rpc 0.1.0 (schemas: @agentclientprotocol/sdk 2.4.0)".into(),
        reference: "agent-client-protocol-schema 1.15.1, agent-client-protocol 5.0.0 (pinned in bench/Cargo.toml)"
            .into(),
    }
}

#[test]
fn the_section_names_its_provenance_and_lists_the_notes() {
    let mut decode = row("decode v1", "MB/s", 250.0, Some(200.0), Some(1.25));
    decode.note = "95 messages, 40000 bytes".into();
    let rows = vec![row("codegen", "s", 0.2312, None, None), decode];
    let section = render_section(&meta(), &rows);
    let lines: Vec<&str> = section.lines().collect();
    assert_eq!(lines[0], "Produced by `cargo xtask bench --quick` on 2026-11-22 (UTC).");
    assert!(section.contains(
        "- Machine: 2 cores, Example CPU, 7.8 GiB memory; load average at start 0.50 / 0.40 / 0.30 (1, 5, 15 min)\n"
    ));
    assert!(section.contains("- Toolchain: rustc 1.95.0 (59807616e 2026-04-14)\n"));
    assert!(section.contains("- Source: commit 0123456789ab\n"));
    assert!(section.contains("- Ours: acp-types 0.1.0, acp-rpc 0.1.0 (schemas: @agentclientprotocol/sdk 2.4.0)\n"));
    assert!(section.contains("- Reference: agent-client-protocol-schema 1.15.1, agent-client-protocol 5.0.0"));
    for line in render_table(&rows) {
        assert!(lines.contains(&line.as_str()), "table line missing: {line}");
    }
    // Only rows with a note are listed.
    assert!(section.ends_with("\nNotes:\n\n- decode v1: 95 messages, 40000 bytes\n"), "{section}");
    assert!(!section.contains("- codegen:"));
}

#[test]
fn the_section_is_replaced_and_the_hand_written_text_kept() {
    let before = "# Benchmarks\n\nHand-written intro.\n\n";
    let after = "\n\n## Analysis\n\nWhy decode is faster.\n";
    let old = format!("{before}{BEGIN}\nold table\nmore old\n{END}{after}");
    let new = replace_section(Some(&old), "new table\n").expect("replaces");
    assert_eq!(new, format!("{before}{BEGIN}\nnew table\n{END}{after}"));
    // Replacing again with the same section changes nothing.
    assert_eq!(replace_section(Some(&new), "new table").expect("replaces"), new);
}

#[test]
fn a_missing_file_is_created_with_a_head_and_the_markers() {
    let text = replace_section(None, "first section\n").expect("creates");
    assert!(text.starts_with("# Benchmarks\n"), "{text}");
    assert!(text.contains("cargo xtask bench --quick"), "the head says how to run: {text}");
    assert!(text.ends_with(&format!("\n{BEGIN}\nfirst section\n{END}\n")), "{text}");
    // The created file has exactly one section, and a later run replaces only it.
    let again = replace_section(Some(&text), "second section").expect("replaces");
    assert_eq!(again, text.replace("first section", "second section"));
}

#[test]
fn markers_are_appended_to_a_file_without_them_and_bad_markers_refused() {
    let text = replace_section(Some("# Benchmarks\n\nBy hand.\n"), "t").expect("appends");
    assert_eq!(text, format!("# Benchmarks\n\nBy hand.\n\n{BEGIN}\nt\n{END}\n"));

    let only_begin = format!("intro\n{BEGIN}\nold\n");
    assert!(replace_section(Some(&only_begin), "t").is_err());
    let reversed = format!("{END}\nold\n{BEGIN}\n");
    assert!(replace_section(Some(&reversed), "t").is_err());
    let twice = format!("{BEGIN}\na\n{END}\n{BEGIN}\nb\n{END}\n");
    let error = replace_section(Some(&twice), "t").expect_err("two sections");
    assert!(error.contains("more than once"), "{error}");
}

#[test]
fn medians() {
    assert_eq!(median(&[]), None);
    assert_eq!(median(&[3.0]), Some(3.0));
    assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
}

#[test]
fn dates_are_utc_calendar_days() {
    let epoch = std::time::UNIX_EPOCH;
    assert_eq!(utc_date(epoch), "1970-01-01");
    assert_eq!(utc_date(epoch - std::time::Duration::from_secs(1)), "1969-12-31");
    assert_eq!(utc_date(epoch + std::time::Duration::from_secs(11_016 * 86_400)), "2000-02-29");
    let noon = std::time::UNIX_EPOCH + std::time::Duration::from_secs(19_723 * 86_400 + 43_200);
    assert_eq!(utc_date(noon), "2024-01-01");
}

#[test]
fn machine_facts_parse_from_proc() {
    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\n\
                   processor\t: 1\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
    assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) CPU @ 2.20GHz"));
    assert_eq!(cpu_model("processor : 0\n"), None);
    assert_eq!(mem_total_gib("MemTotal:        8388608 kB\nMemFree: 1 kB\n"), Some(8.0));
    assert_eq!(mem_total_gib("MemFree: 1 kB\n"), None);
    assert_eq!(load_average("0.61 1.40 1.61 2/94 14457\n").as_deref(), Some("0.61 / 1.40 / 1.61 (1, 5, 15 min)"));
    assert_eq!(load_average(""), None);
}

#[test]
fn versions_come_from_the_manifests() {
    let bench: toml::Table = r#"
        [dependencies]
        acp-types = { path = "../generated" }
        agent-client-protocol-schema = { version = "=1.15.1", default-features = false }
        agent-client-protocol = "=5.0.0"
    "#
    .parse()
    .expect("toml");
    assert_eq!(
        pinned_references(&bench).expect("pinned"),
        vec![
            ("agent-client-protocol-schema".to_string(), "1.15.1".to_string()),
            ("agent-client-protocol".to_string(), "5.0.0".to_string()),
        ]
    );
    let loose: toml::Table =
        "[dependencies]\nagent-client-protocol-schema = \"1.15\"\nagent-client-protocol = \"=5.0.0\"\n"
            .parse()
            .expect("toml");
    let error = pinned_references(&loose).expect_err("not exact");
    assert!(error.contains("agent-client-protocol-schema"), "{error}");

    let sources: toml::Table = r#"
        [[file]]
        path = "schema/v1/schema.json"
        package = "@agentclientprotocol/sdk"
        version = "2.4.0"
        [[file]]
        path = "schema/v2/schema.json"
        package = "@agentclientprotocol/sdk"
        version = "2.4.0"
    "#
    .parse()
    .expect("toml");
    assert_eq!(schema_packages(&sources).expect("packages"), "@agentclientprotocol/sdk 2.4.0");

    let lock = "version = 4\n\n[[package]]\nname = \"serde\"\nversion = \"1.0.228\"\n\n\
                [[package]]\nname = \"serde_json\"\nversion = \"1.0.145\"\n";
    assert_eq!(lock_version(lock, "serde_json").as_deref(), Some("1.0.145"));
    assert_eq!(lock_version(lock, "tokio"), None);
}
