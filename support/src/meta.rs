//! [`Meta`]: a free-form JSON object (`_meta`, every object the schema leaves open, and the object a
//! union's catch-all keeps), kept as its JSON text until someone asks for its entries.
//!
//! Most messages carry `_meta` through untouched: a peer's extension data that this side neither
//! reads nor changes. Building a `serde_json::Map` for it (a `String` per key, a `Value` per entry,
//! a hashed index) was an eighth of the decoding time on the benchmark corpus, and the map made
//! every struct that holds one 72 bytes larger. Here decoding keeps the object's text (one
//! allocation), encoding writes it back as it came, and [`Meta::to_map`] or [`Meta::get`] parse it
//! when asked.

use serde::de::{self, Deserialize, Deserializer, Error as _};
use serde::ser::{self, Serialize, SerializeStruct, Serializer};
use serde_json::{Map, Value};
use std::fmt;

use crate::capture::{capture, kind, Captured, Key};
use crate::codec::RAW_TOKEN;

/// A JSON object with arbitrary keys, kept as its text.
///
/// The text is always a valid JSON object. Two values are equal when they hold the same JSON
/// (`{"a": 1}` equals `{"a":1}`). A message decoded from a peer keeps the object's text as
/// received, except that line breaks between tokens are taken out (the text may be written back
/// into a newline-delimited stream). An object a catch-all keeps keeps a key given twice as it
/// came; [`Meta::to_map`], [`Meta::get`] and [`Meta::get_str`] take the last, as a `Value` does.
#[derive(Clone)]
pub struct Meta(Box<str>);

impl Meta {
    /// The empty object, `{}`.
    pub fn new() -> Self {
        Meta(Box::from("{}"))
    }

    /// Reads a JSON object from its text; an error for anything else.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The object's JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object's entries, parsed from the text, in their order.
    pub fn to_map(&self) -> Map<String, Value> {
        // Valid by construction (see `from_text`).
        serde_json::from_str(&self.0).unwrap_or_default()
    }

    /// The value of one entry, parsed from the text.
    pub fn get(&self, key: &str) -> Option<Value> {
        self.to_map().remove(key)
    }

    /// The value of one entry when it is a string written without escapes, borrowed from the
    /// text (the last entry of that key, as [`Self::get`] takes it). A catch-all's tag is read
    /// this way: the decoder writes the tag of an object it keeps with only the escapes JSON
    /// requires (`"`, `\` and control characters).
    pub fn get_str(&self, key: &str) -> Option<&str> {
        let entries = entries(&self.0).ok()?;
        let value = entries.iter().rev().find(|(k, _)| k.0 == key).map(|(_, value)| *value)?;
        let text = value.get().strip_prefix('"')?.strip_suffix('"')?;
        (!text.contains('\\')).then_some(text)
    }

    /// Encodes the object as a map of its entries, each value written as its text: for where a
    /// map is needed rather than a value (serde's flattening, `union::flat`).
    pub(crate) fn serialize_entries<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries = entries(&self.0).map_err(ser::Error::custom)?;
        serializer.collect_map(entries.iter().map(|(key, value)| (&*key.0, *value)))
    }

    /// Whether the object has no entries.
    pub fn is_empty(&self) -> bool {
        self.0.len() == 2 || self.to_map().is_empty()
    }

    /// An object the decoder wrote out itself (a catch-all's, `union::kept`): one line of JSON.
    pub(crate) fn from_written(text: String) -> Self {
        Meta(text.into_boxed_str())
    }

    /// Kept from captured text, which the deserializer has already checked is JSON.
    fn from_text(text: std::borrow::Cow<'_, str>) -> Result<Self, serde_json::Error> {
        let trimmed = text.trim_matches(|c: char| c.is_ascii_whitespace());
        if !trimmed.starts_with('{') {
            // The wording of serde_json's own error for a map.
            return Err(serde_json::from_str::<Map<String, Value>>(trimmed)
                .err()
                .unwrap_or_else(|| serde_json::Error::custom("expected a JSON object")));
        }
        // A line break can only be whitespace between tokens (strings escape theirs).
        if memchr::memchr2(b'\n', b'\r', trimmed.as_bytes()).is_some() {
            let map: Map<String, Value> = serde_json::from_str(trimmed)?;
            return Ok(Meta::from(map));
        }
        Ok(Meta(match text {
            std::borrow::Cow::Owned(text) if text.len() == trimmed.len() => text.into_boxed_str(),
            _ => Box::from(trimmed),
        }))
    }
}

impl Default for Meta {
    fn default() -> Self {
        Meta::new()
    }
}

impl fmt::Debug for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Meta({})", self.0)
    }
}

impl fmt::Display for Meta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq for Meta {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0 || self.to_map() == other.to_map()
    }
}

impl From<Map<String, Value>> for Meta {
    fn from(map: Map<String, Value>) -> Self {
        Meta(Value::Object(map).to_string().into_boxed_str())
    }
}

impl From<Meta> for Map<String, Value> {
    fn from(meta: Meta) -> Self {
        meta.to_map()
    }
}

impl From<Meta> for Value {
    fn from(meta: Meta) -> Self {
        Value::Object(meta.to_map())
    }
}

impl TryFrom<Value> for Meta {
    /// The value, handed back when it is not an object.
    type Error = Value;

    fn try_from(value: Value) -> Result<Self, Value> {
        match value {
            Value::Object(map) => Ok(Meta::from(map)),
            other => Err(other),
        }
    }
}

impl Serialize for Meta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut raw = serializer.serialize_struct(RAW_TOKEN, 1)?;
        raw.serialize_field(RAW_TOKEN, &*self.0)?;
        raw.end()
    }
}

impl<'de> Deserialize<'de> for Meta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match capture(deserializer)? {
            Captured::Text(text) => Meta::from_text(text).map_err(D::Error::custom),
            Captured::Value(Value::Object(map)) => Ok(Meta::from(map)),
            Captured::Value(other) => {
                Err(D::Error::custom(format_args!("invalid type: {}, expected a JSON object", kind(&other))))
            }
        }
    }
}

/// The entries of an object's text in their order, each value as its text (keys borrowed when
/// they have no escapes).
pub(crate) fn entries(text: &str) -> Result<Vec<(Key<'_>, &serde_json::value::RawValue)>, serde_json::Error> {
    struct Entries;
    impl<'de> de::Visitor<'de> for Entries {
        type Value = Vec<(Key<'de>, &'de serde_json::value::RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut entries = Vec::new();
            while let Some(entry) = map.next_entry()? {
                entries.push(entry);
            }
            Ok(entries)
        }
    }
    serde_json::Deserializer::from_str(text).deserialize_map(Entries)
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Meta {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Meta".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "object", "additionalProperties": true })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_the_text_and_writes_it_back() {
        let meta: Meta = serde_json::from_str(r#"{"a": [1, {"b": "\u00e9"}]}"#).expect("object");
        assert_eq!(meta.as_str(), r#"{"a": [1, {"b": "\u00e9"}]}"#);
        assert_eq!(serde_json::to_string(&meta).expect("encodes"), r#"{"a": [1, {"b": "\u00e9"}]}"#);
        assert_eq!(crate::json::to_vec(&meta).expect("encodes"), br#"{"a": [1, {"b": "\u00e9"}]}"#);
        assert_eq!(meta.get("a"), Some(json!([1, { "b": "é" }])));
        assert_eq!(serde_json::to_value(&meta).expect("to a value"), json!({ "a": [1, { "b": "é" }] }));
    }

    #[test]
    fn equal_when_the_json_is() {
        let spaced: Meta = serde_json::from_str(r#"{ "a" : 1 }"#).expect("object");
        let compact: Meta = serde_json::from_value(json!({ "a": 1 })).expect("object");
        assert_eq!(spaced, compact);
        assert_ne!(spaced, Meta::new());
        assert!(Meta::new().is_empty() && !spaced.is_empty());
    }

    #[test]
    fn line_breaks_are_taken_out() {
        let meta: Meta = serde_json::from_str("{\n  \"a\": \"x\\ny\"\r\n}").expect("object");
        assert_eq!(meta.as_str(), r#"{"a":"x\ny"}"#);
    }

    #[test]
    fn a_string_entry_borrowed_from_the_text() {
        let meta = Meta::from_json(r#"{"type": "a", "n": 1, "e": "x\"y", "type": "b"}"#).expect("object");
        assert_eq!(meta.get_str("type"), Some("b"), "the last of a key twice");
        assert_eq!(meta.get_str("n"), None, "not a string");
        assert_eq!(meta.get_str("e"), None, "written with an escape");
        assert_eq!(meta.get_str("missing"), None);
    }

    #[test]
    fn entries_written_as_a_map() {
        #[derive(serde::Serialize)]
        struct Outer<'a> {
            id: u8,
            #[serde(flatten, serialize_with = "entries")]
            rest: &'a Meta,
        }
        fn entries<S: Serializer>(meta: &&Meta, serializer: S) -> Result<S::Ok, S::Error> {
            meta.serialize_entries(serializer)
        }
        let meta = Meta::from_json(r#"{"b": [1, 2.50], "a": {"c": null}}"#).expect("object");
        let outer = Outer { id: 1, rest: &meta };
        let expected = r#"{"id":1,"b":[1, 2.50],"a":{"c": null}}"#;
        assert_eq!(serde_json::to_string(&outer).expect("encodes"), expected);
        assert_eq!(crate::json::to_vec(&outer).expect("encodes"), expected.as_bytes());
    }

    #[test]
    fn only_objects() {
        for text in ["[]", "1", "\"x\"", "null", "true"] {
            assert!(serde_json::from_str::<Meta>(text).is_err(), "{text}");
            let value: Value = serde_json::from_str(text).expect("JSON");
            assert!(serde_json::from_value::<Meta>(value.clone()).is_err(), "{text}");
            assert_eq!(Meta::try_from(value.clone()), Err(value));
        }
        assert!(serde_json::from_str::<Meta>("{").is_err());
    }
}
