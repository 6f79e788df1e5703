//! Large params decoded two ways: handed over (their longest string moved, not copied:
//! `support::moved`) and borrowed. The outcomes must be equal, value or error. A `@` in the input
//! stands for 64 KiB of text with escapes, so that short inputs reach the large-message path.

#![no_main]

use acp_types::support::rpc::RawParams;
use acp_types::v1::methods::{agent, client};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;

/// Methods whose params hold long strings, received by either side.
const METHODS: &[&str] =
    &["session/update", "session/prompt", "fs/write_text_file", "session/request_permission", "_ext/method"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(text) else { return };
    let text = text.replacen('@', &"ab \\\"q\\\" \\n \\u00e9 \\ud83d\\ude00 ✓ ".repeat(2048), 1);
    let Ok(raw) = RawValue::from_string(text) else { return };
    let method = METHODS[usize::from(pick) % METHODS.len()];
    let owned = || RawParams::Owned(Some(raw.clone()));
    assert_eq!(client::Notification::decode_raw(method, owned()), client::Notification::decode(method, Some(&raw)));
    assert_eq!(client::Request::decode_raw(method, owned()), client::Request::decode(method, Some(&raw)));
    assert_eq!(agent::Request::decode_raw(method, owned()), agent::Request::decode(method, Some(&raw)));
});
