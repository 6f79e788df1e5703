//! The runtime's decoder against serde_json's: `support::json::from_str` (the decoder of
//! `support::json::de`, lenient fields in place first) and `serde_json::from_str` must agree on
//! every input, to the value or to the error's words, line and column. The first byte picks the
//! type; the rest is the text. One difference is by design: a struct decodes from an object only
//! (serde_json also fills one from an array by position), so where serde_json reads a struct from
//! an array, ours refuses it with serde_json's wrong-type error at that `[`.

#![no_main]

use acp_types::{v1, v2};
use libfuzzer_sys::fuzz_target;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// Whether `error` is ours refusing a struct given as an array, placed at that array's `[`
/// (serde_json's column: the bytes of the line before it).
fn refused_struct_array(text: &str, error: &serde_json::Error) -> bool {
    if !error.to_string().starts_with("invalid type: sequence, expected struct ") {
        return false;
    }
    let line_start: usize = text.split('\n').take(error.line().saturating_sub(1)).map(|line| line.len() + 1).sum();
    text.as_bytes().get(line_start + error.column()) == Some(&b'[')
}

fn agree<T: DeserializeOwned + PartialEq + Debug>(text: &str) {
    let ours = acp_types::support::json::from_str::<T>(text);
    if matches!(&ours, Err(error) if refused_struct_array(text, error)) {
        return;
    }
    let theirs = serde_json::from_str::<T>(text);
    match (ours, theirs) {
        (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{text:?}"),
        (Err(ours), Err(theirs)) => {
            assert_eq!(ours.to_string(), theirs.to_string(), "{text:?}");
            assert_eq!((ours.line(), ours.column()), (theirs.line(), theirs.column()), "{text:?}");
        }
        (ours, theirs) => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(text) else { return };
    match pick % 6 {
        0 => agree::<serde_json::Value>(text),
        1 => agree::<v1::SessionNotification>(text),
        2 => agree::<v1::AgentRequest>(text),
        3 => agree::<v1::NewSessionResponse>(text),
        4 => agree::<v2::UpdateSessionNotification>(text),
        _ => agree::<Vec<v2::ContentBlock>>(text),
    }
});
