//! Realistic messages for every method of v1 and v2 (`tests/corpus/`, validated against the
//! schemas by `tests/corpus/validate.py`): each one decodes and re-encodes to the same JSON.

use crate::types_common;
use types_common as common;

use common::{corpus, RoundTrip};

fn check(version: &str, visit: impl Fn(&str, RoundTrip) -> Option<Result<(), String>>) {
    let cases = corpus(version);
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in &cases {
        if case.unstable && !cfg!(feature = "unstable") {
            continue;
        }
        checked += 1;
        match visit(&case.ty, RoundTrip(case.value.clone())) {
            Some(Ok(())) => {}
            Some(Err(e)) => failures.push(format!("{} ({}): {e}", case.name, case.method)),
            None => failures.push(format!("{}: no type named {}", case.name, case.ty)),
        }
    }
    assert!(checked > 0, "no {version} case was checked");
    assert!(failures.is_empty(), "{} of {checked} {version} cases fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn v1_corpus_round_trips() {
    check("v1", acp_types::v1::visit_type);
}

#[test]
fn v2_corpus_round_trips() {
    check("v2", acp_types::v2::visit_type);
}
