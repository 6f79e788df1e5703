//! Large messages decoded without a second copy of their text: the longest string of an owned
//! message is unescaped where it stands, at the front of the message's own allocation, which then
//! becomes that `String`; the rest of the message (small) is decoded the general way with the
//! string put back in its place. A 64 MiB prompt is then in memory once while it is decoded, not
//! twice (the line, then the decoded text).
//!
//! Used by [`super::rpc::decode_raw`] for owned params of [`MOVE_MIN`] bytes or more; anything
//! unusual (no string that long, an escape `serde_json` would refuse, params that do not decode,
//! the string not where a value is) falls back to the ordinary decode of the untouched text before
//! the text is changed, so the outcome, errors included, is the ordinary one (lenient repairs
//! are the same, recorded in the order the general path meets them).

use serde_json::value::RawValue;
use serde_json::Value;
use std::ops::Range;

/// Params of at least this many bytes go this way (`acp_rpc`'s connection hands over params of this
/// size in the line's own allocation, so that neither step copies the message).
pub const MOVE_MIN: usize = 64 * 1024;

/// What stands in for the moved string in the rest of the message. A message that holds this
/// string itself (as a value, anywhere) is decoded the ordinary way.
pub const STAND_IN: &str = "\u{0}acp: moved string\u{0}";
/// [`STAND_IN`] as JSON string contents.
const STAND_IN_JSON: &str = "\\u0000acp: moved string\\u0000";

/// A message split in two: the text without its longest string, and that string's place.
pub struct Split {
    /// The message with the string's contents replaced by [`STAND_IN`].
    pub rest: String,
    raw: Box<RawValue>,
    contents: Range<usize>,
}

/// Splits `raw` when its longest string is at least [`MOVE_MIN`] bytes and every escape in it is
/// one `serde_json` accepts; `Err` hands `raw` back untouched otherwise.
pub fn split(raw: Box<RawValue>) -> Result<Split, Box<RawValue>> {
    let text = raw.get();
    let contents = match longest_string(text.as_bytes()) {
        Some(range) if range.len() >= MOVE_MIN && escapes_valid(&text.as_bytes()[range.clone()]) => range,
        _ => return Err(raw),
    };
    let mut rest = String::with_capacity(text.len() - contents.len() + STAND_IN_JSON.len());
    rest.push_str(&text[..contents.start]);
    rest.push_str(STAND_IN_JSON);
    rest.push_str(&text[contents.end..]);
    Ok(Split { rest, raw, contents })
}

impl Split {
    /// Puts the moved string into `value` (the rest, decoded) where [`STAND_IN`] is: `Err` gives
    /// the split back when the stand-in is not there exactly once (the string was a key, or the
    /// message holds the stand-in itself).
    pub fn fill(self, value: &mut Value) -> Result<(), Split> {
        let mut slots = Vec::new();
        stand_ins(value, &mut slots);
        if slots.len() != 1 {
            return Err(self);
        }
        let mut bytes = Box::<str>::from(self.raw).into_string().into_bytes();
        let len = unescape_to_front(&mut bytes, self.contents);
        bytes.truncate(len);
        // Valid escapes of valid UTF-8 give valid UTF-8; checked all the same, with no panic.
        *slots[0] = Value::String(
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        );
        Ok(())
    }

    /// The message as it was received (for the ordinary decode, when [`Split::fill`] declined).
    pub fn whole(&self) -> &RawValue {
        &self.raw
    }
}

/// Every string value equal to [`STAND_IN`] (object keys are not values).
fn stand_ins<'v>(value: &'v mut Value, found: &mut Vec<&'v mut Value>) {
    match value {
        Value::String(s) if s == STAND_IN => found.push(value),
        Value::Array(items) => items.iter_mut().for_each(|v| stand_ins(v, found)),
        Value::Object(map) => map.values_mut().for_each(|v| stand_ins(v, found)),
        _ => {}
    }
}

/// The contents (between the quotes) of the longest string in `json`, keys included, in the
/// first place of equal length; `None` when there is no string or the text ends inside one.
fn longest_string(json: &[u8]) -> Option<Range<usize>> {
    let mut best: Option<Range<usize>> = None;
    let mut at = 0;
    // Outside strings a quote can only open one; inside, a backslash escapes the next byte.
    while let Some(open) = memchr::memchr(b'"', &json[at..]) {
        let start = at + open + 1;
        let mut i = start;
        let end = loop {
            let next = i + memchr::memchr2(b'"', b'\\', json.get(i..)?)?;
            if json[next] == b'"' {
                break next;
            }
            i = next + 2;
        };
        if best.as_ref().is_none_or(|b| end - start > b.len()) {
            best = Some(start..end);
        }
        at = end + 1;
    }
    best
}

/// One escape sequence at the start of `s` (which begins with the backslash): what it stands for,
/// as UTF-8 in a buffer with its length, and how many bytes of `s` it takes. `None` for an escape
/// `serde_json` refuses (an unknown letter, bad hex digits, a surrogate that is not one of a pair).
fn escape(s: &[u8]) -> Option<([u8; 4], usize, usize)> {
    let hex = |at: usize| -> Option<u32> {
        let digits = s.get(at..at + 4)?;
        let text = std::str::from_utf8(digits).ok()?;
        if !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(text, 16).ok()
    };
    let byte = |b: u8| Some(([b, 0, 0, 0], 1, 2));
    match *s.get(1)? {
        b'"' => byte(b'"'),
        b'\\' => byte(b'\\'),
        b'/' => byte(b'/'),
        b'b' => byte(0x08),
        b'f' => byte(0x0c),
        b'n' => byte(b'\n'),
        b'r' => byte(b'\r'),
        b't' => byte(b'\t'),
        b'u' => {
            let first = hex(2)?;
            let (code, taken) = match first {
                0xD800..=0xDBFF => {
                    if s.get(6..8)? != b"\\u" {
                        return None;
                    }
                    let second = hex(8)?;
                    if !(0xDC00..=0xDFFF).contains(&second) {
                        return None;
                    }
                    (0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00), 12)
                }
                0xDC00..=0xDFFF => return None,
                _ => (first, 6),
            };
            let c = char::from_u32(code)?;
            let mut out = [0u8; 4];
            let len = c.encode_utf8(&mut out).len();
            Some((out, len, taken))
        }
        _ => None,
    }
}

/// Whether every escape in the string contents `s` is one [`escape`] accepts.
fn escapes_valid(s: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = memchr::memchr(b'\\', &s[at..]) {
        match escape(&s[at + i..]) {
            Some((_, _, taken)) => at += i + taken,
            None => return false,
        }
    }
    true
}

/// Unescapes the string contents at `contents` into the front of `bytes`; the length written.
/// Every escape is at least as long as what it stands for, so writing never overtakes reading.
/// The escapes must have passed [`escapes_valid`] (one that fails here is copied as it is).
fn unescape_to_front(bytes: &mut [u8], contents: Range<usize>) -> usize {
    let (mut read, end, mut write) = (contents.start, contents.end, 0);
    loop {
        let plain = memchr::memchr(b'\\', &bytes[read..end]).unwrap_or(end - read);
        bytes.copy_within(read..read + plain, write);
        write += plain;
        read += plain;
        if read == end {
            return write;
        }
        let (out, len, taken) = escape(&bytes[read..end]).unwrap_or(([b'\\', 0, 0, 0], 1, 1));
        bytes[write..write + len].copy_from_slice(&out[..len]);
        write += len;
        read += taken;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unescaped(contents: &str) -> Option<String> {
        let bytes = contents.as_bytes();
        if !escapes_valid(bytes) {
            return None;
        }
        let mut buf = bytes.to_vec();
        let all = 0..buf.len();
        let len = unescape_to_front(&mut buf, all);
        buf.truncate(len);
        Some(String::from_utf8(buf).expect("UTF-8"))
    }

    #[test]
    fn unescaping_agrees_with_serde_json() {
        let cases = [
            "plain",
            "",
            r#"a\"b\\c\/d\be\ff\ng\rh\ti"#,
            r"\u0041\u00e9\u20ac\ud83d\ude00 end",
            r"\ud83d\ude00\ud83d\ude00",
            "é ünïcode ✓ 😀 raw",
            r"\u0000 nul",
            r"\ud83d",
            r"\ude00",
            r"\ud83d\u0041",
            r"\ud83dx",
            r"\x",
            r"\u12",
            r"\u12g4",
            r"\uD83D\uDE00",
        ];
        for case in cases {
            let theirs = serde_json::from_str::<String>(&format!("\"{case}\"")).ok();
            assert_eq!(unescaped(case), theirs, "{case}");
        }
        // Every escape of every code point of the BMP outside the surrogates, and some beyond.
        for code in (0u32..0xD800).chain(0xE000..0x10000).step_by(7) {
            let case = format!("<\\u{code:04x}>\\u{code:04X}");
            let theirs = serde_json::from_str::<String>(&format!("\"{case}\"")).ok();
            assert_eq!(unescaped(&case), theirs, "{case}");
        }
        for c in ['\u{10000}', '😀', '\u{10FFFF}'] {
            let mut units = [0u16; 2];
            let pair = c.encode_utf16(&mut units);
            let case = format!("\\u{:04x}\\u{:04x}", pair[0], pair[1]);
            assert_eq!(unescaped(&case), Some(c.to_string()), "{case}");
        }
    }

    #[test]
    fn the_longest_string_is_found_past_escaped_quotes() {
        let json = br#"{"a":"xy","bb":"q\"\\\"r","c":["z"]}"#;
        let range = longest_string(json).expect("found");
        assert_eq!(&json[range], br#"q\"\\\"r"#);
        assert_eq!(longest_string(b"{}"), None);
        assert_eq!(longest_string(br#"{"a":"unterminated\"#), None);
    }

    #[test]
    fn a_split_puts_the_string_back_where_it_was() {
        let long = "ab\\n\\u00e9\\\"".repeat(MOVE_MIN / 4);
        let text = format!(r#"{{"k":"v","list":[1,"{long}"],"n":null}}"#);
        let raw = RawValue::from_string(text.clone()).expect("JSON");
        let split = super::split(raw).expect("split");
        let mut value: Value = serde_json::from_str(&split.rest).expect("rest is JSON");
        assert!(split.fill(&mut value).is_ok());
        assert_eq!(value, serde_json::from_str::<Value>(&text).expect("JSON"));
    }

    #[test]
    fn a_split_declines_what_it_cannot_place() {
        let long = "x".repeat(MOVE_MIN);
        // A key.
        let raw = RawValue::from_string(format!(r#"{{"{long}":1}}"#)).expect("JSON");
        let split = super::split(raw).expect("split");
        let mut value: Value = serde_json::from_str(&split.rest).expect("JSON");
        assert!(split.fill(&mut value).is_err());
        // The stand-in itself, elsewhere in the message.
        let raw = RawValue::from_string(format!(r#"{{"a":"{STAND_IN_JSON}","b":"{long}"}}"#)).expect("JSON");
        let split = super::split(raw).expect("split");
        let mut value: Value = serde_json::from_str(&split.rest).expect("JSON");
        let back = split.fill(&mut value).expect_err("declined");
        assert_eq!(back.whole().get(), format!(r#"{{"a":"{STAND_IN_JSON}","b":"{long}"}}"#));
        // Too short, or an escape serde_json refuses: not split at all.
        assert!(super::split(RawValue::from_string(r#"{"a":"short"}"#.into()).expect("JSON")).is_err());
        let lone = format!(r#"{{"a":"{long}\ud800"}}"#);
        assert!(super::split(RawValue::from_string(lone).expect("JSON")).is_err());
    }
}
