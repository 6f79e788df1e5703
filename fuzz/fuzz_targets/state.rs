//! The generated `x-state` reducer (`acp_types::v2::state`) on whatever decodes: each line is a
//! v2 `SessionUpdate` (typed, when it decodes) or any JSON handed to `apply_json` as one; then the
//! same JSON as the params of `session/update`. Applying must never panic, the state must always
//! encode, and an update no rule describes must be kept, not dropped.

#![no_main]

use acp_types::support::state::Applied;
use acp_types::v2;
use acp_types::v2::state::SessionState;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut typed = SessionState::default();
    let mut raw = SessionState::default();
    for line in data.split(|&b| b == b'\n') {
        if let Ok(update) = serde_json::from_slice::<v2::SessionUpdate>(line) {
            let kept = typed.unapplied.len();
            if typed.apply(&update) == Applied::Unapplied {
                assert_eq!(typed.unapplied.len(), kept + 1, "an unapplied update is kept");
            }
        }
        if let Ok(json) = serde_json::from_slice::<serde_json::Value>(line) {
            raw.apply_json("SessionUpdate", json.clone());
            raw.apply_json("UpdateSessionNotification", serde_json::json!({ "sessionId": "s", "update": json }));
        }
    }
    serde_json::to_string(&typed).expect("the state encodes");
    serde_json::to_string(&raw).expect("the state encodes");
});
