//! Property tests: instances sampled from the generator's own IR of each schema file, for every
//! type, obey `encode(decode(json)) == json` and `decode(encode(x)) == x`.
//!
//! The seed comes from `ACP_PROPTEST_SEED` or the clock, and is printed on failure.

use crate::types_common;
use types_common as common;

use acp_codegen::samples::{instance, Rng};
use common::RoundTrip;

fn seed() -> u64 {
    std::env::var("ACP_PROPTEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    })
}

fn check(version: &str, visit: impl Fn(&str, RoundTrip) -> Option<Result<(), String>>) {
    let file = if cfg!(feature = "unstable") { "schema.unstable.json" } else { "schema.json" };
    let name = format!("schema/{version}/{file}");
    let protocol = acp_codegen::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(&name), &name)
        .expect("the committed schema lowers");
    let seed = seed();
    let mut rng = Rng::new(seed);
    let mut failures = Vec::new();
    let mut checked = 0;
    for (i, t) in protocol.types.iter().enumerate() {
        for _ in 0..24 {
            let value = instance(&protocol, acp_codegen::ir::TypeId(i), &mut rng);
            checked += 1;
            match visit(&t.name, RoundTrip(value)) {
                Some(Ok(())) => {}
                Some(Err(e)) => failures.push(e),
                None => failures.push(format!("no Rust type for {}", t.name)),
            }
        }
    }
    failures.truncate(10);
    assert!(
        failures.is_empty(),
        "{name}: failures among {checked} instances (ACP_PROPTEST_SEED={seed}):\n{}",
        failures.join("\n")
    );
}

#[test]
fn v1_instances_round_trip() {
    check("v1", acp_types::v1::visit_type);
}

#[test]
fn v2_instances_round_trip() {
    check("v2", acp_types::v2::visit_type);
}
