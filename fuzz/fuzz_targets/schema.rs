//! The schema loader and lowering on mutated schemas: either a committed schema edited by the
//! program in the input (first byte < 0x80: base and edits, see `acp_fuzz::mutate`), or raw text.
//! Besides "no panic": every error names its file and a JSON pointer that exists in the input.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let (name, text) = if mode < 0x80 {
        let (name, text) = acp_fuzz::mutated(mode, rest);
        (name, text)
    } else {
        match std::str::from_utf8(rest) {
            Ok(text) => ("fuzz.json", text.to_string()),
            Err(_) => return,
        }
    };
    let doc = serde_json::from_str::<serde_json::Value>(&text).ok();
    let lowered = acp_codegen::load::parse(name, &text).and_then(|d| acp_codegen::lower::lower(&d));
    if let Err(errors) = lowered {
        acp_fuzz::assert_located(name, doc.as_ref(), &errors.to_string());
    }
});
