//! The conventions this codec shares with `serde_json`, so that its values and errors are
//! `serde_json`'s: the raw-value token, and the position ending of an error's text.

/// `serde_json`'s name for its raw-value protocol. Written: a struct of this name whose one field
/// of this name is JSON text is that text, for serde_json and this codec's writer. Read: a newtype
/// struct of this name asks the deserializer for the value's text (`capture::capture`).
pub(crate) const RAW_TOKEN: &str = "$serde_json::private::RawValue";

/// `serde_json`'s message without its ` at line L column C` ending.
pub(crate) fn without_position(text: &str) -> &str {
    match text.rsplit_once(" at line ") {
        Some((head, tail))
            if tail.split_once(" column ").is_some_and(|(l, c)| {
                !l.is_empty() && !c.is_empty() && l.bytes().chain(c.bytes()).all(|b| b.is_ascii_digit())
            }) =>
        {
            head
        }
        _ => text,
    }
}
