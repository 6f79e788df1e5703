//! Decoding from a [`Value`] with the path of a failure: `content[0].text`, as
//! `serde_path_to_error` words it.
//!
//! Union bodies, lenient fields and the runtime's detailed pass decode from a `Value`; their errors
//! name where in the value they failed. `serde_path_to_error` does this for any deserializer by
//! wrapping it, its visitors and its seeds, which compiles every type's `Deserialize` with a layer
//! of wrappers: about half of what a version crate compiled, and 1.8 s of the clean build of
//! `acp-types` (17.9 s with it, 16.1 s with no path at all). Here the deserializer walks the
//! `Value` itself, so where a value is passes down the stack as in `serde_path_to_error`, with no
//! wrapper around the visitors, and each value is given to the visitor as serde_json's `Value`
//! deserializer gives it (the same `visit_*` calls, the same errors, made by serde_json's error
//! type).

use serde::de::{self, DeserializeSeed, Deserializer, Visitor};
use serde_json::{Error, Map, Value};
use std::cell::Cell;

/// Decodes `T` from `value`; on failure, the path inside `value` and serde_json's error.
pub(crate) fn deserialize<T: de::DeserializeOwned>(value: Value) -> Result<T, (String, Error)> {
    let failed = Cell::new(None);
    T::deserialize(Tracked { value, chain: &Chain::Root, failed: &failed })
        .map_err(|e| (failed.take().unwrap_or_else(|| ".".to_owned()), e))
}

/// Where a value is, as a list linked through the stack (nothing is allocated on the way down).
enum Chain<'a> {
    Root,
    Key { parent: &'a Chain<'a>, key: &'a str },
    Index { parent: &'a Chain<'a>, index: usize },
}

impl Chain<'_> {
    /// `a.b[0].c`; `.` for the value itself (as `serde_path_to_error` prints them).
    fn render(&self) -> String {
        let mut steps = Vec::new();
        let mut at = self;
        loop {
            match at {
                Chain::Root => break,
                Chain::Key { parent, .. } | Chain::Index { parent, .. } => {
                    steps.push(at);
                    at = parent;
                }
            }
        }
        if steps.is_empty() {
            return ".".to_owned();
        }
        let mut out = String::new();
        for step in steps.into_iter().rev() {
            match step {
                Chain::Index { index, .. } => out.push_str(&format!("[{index}]")),
                Chain::Key { key, .. } => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                }
                Chain::Root => {}
            }
        }
        out
    }
}

/// A `Value` to decode, where it is, and the path of the first failure seen (the innermost: an
/// error a union rewords on its way out keeps the path of where it happened, as with
/// `serde_path_to_error`, whose first failure also wins).
pub(crate) struct Tracked<'a> {
    value: Value,
    chain: &'a Chain<'a>,
    failed: &'a Cell<Option<String>>,
}

/// Notes a failure at `chain` unless one was noted already (not generic: compiled once).
#[inline(never)]
fn fail(chain: &Chain<'_>, failed: &Cell<Option<String>>) {
    let first = failed.take().unwrap_or_else(|| chain.render());
    failed.set(Some(first));
}

/// `$result`, a failure noted at `$chain` (a macro, so that nothing generic is added per type).
macro_rules! seen {
    ($chain:expr, $failed:expr, $result:expr) => {{
        let result = $result;
        if result.is_err() {
            fail($chain, $failed);
        }
        result
    }};
}

/// What serde_json's `Value` says of a value a visitor did not expect.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => de::Unexpected::Unsigned(u),
            (None, Some(i)) => de::Unexpected::Signed(i),
            (None, None) => de::Unexpected::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

fn invalid_type<'de, V: Visitor<'de>>(value: &Value, visitor: &V) -> Error {
    de::Error::invalid_type(unexpected(value), visitor)
}

/// A number as serde_json's `Value` gives it: `u64`, else `i64`, else `f64`.
fn number<'de, V: Visitor<'de>>(value: Value, visitor: V) -> Result<V::Value, Error> {
    match &value {
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => visitor.visit_u64(u),
            (None, Some(i)) => visitor.visit_i64(i),
            (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
        },
        _ => Err(invalid_type(&value, &visitor)),
    }
}

/// Numeric methods, all answered as serde_json's `Value` answers them: by [`number`].
macro_rules! numbers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            seen!(self.chain, self.failed, number(self.value, visitor))
        }
    )*};
}

/// Methods whose visitor takes the value's string (`visit_string`), as serde_json's `Value` does.
macro_rules! strings {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            let result = match self.value {
                Value::String(s) => visitor.visit_string(s),
                other => Err(invalid_type(&other, &visitor)),
            };
            seen!(self.chain, self.failed, result)
        }
    )*};
}

impl<'de> Deserializer<'de> for Tracked<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            n @ Value::Number(_) => number(n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => seq(items, chain, failed, visitor),
            Value::Object(entries) => map(entries, chain, failed, visitor),
        };
        seen!(chain, failed, result)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Bool(b) => visitor.visit_bool(b),
            other => Err(invalid_type(&other, &visitor)),
        };
        seen!(self.chain, self.failed, result)
    }

    numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    strings! { deserialize_char deserialize_str deserialize_string deserialize_identifier }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        let result = match self.value {
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => seq(items, chain, failed, visitor),
            other => Err(invalid_type(&other, &visitor)),
        };
        seen!(chain, failed, result)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            other => Err(invalid_type(&other, &visitor)),
        };
        seen!(self.chain, self.failed, result)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        drop(self.value);
        visitor.visit_unit()
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        let result = match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        };
        seen!(chain, failed, result)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        // serde_json gives a raw value its text.
        let result = if name == crate::codec::RAW_TOKEN {
            self.value.deserialize_newtype_struct(name, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        };
        seen!(chain, failed, result)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        let result = match self.value {
            Value::Array(items) => seq(items, chain, failed, visitor),
            other => Err(invalid_type(&other, &visitor)),
        };
        seen!(chain, failed, result)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (chain, failed) = (self.chain, self.failed);
        let result = match self.value {
            Value::Object(entries) => map(entries, chain, failed, visitor),
            other => Err(invalid_type(&other, &visitor)),
        };
        seen!(chain, failed, result)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // An object only, as `codec::read` decodes a struct (serde_json also fills one from an
        // array, by position).
        self.deserialize_map(visitor)
    }

    // No generated type decodes an externally tagged enum from a value: serde_json's own (with
    // no path inside the variant) is enough.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        seen!(self.chain, self.failed, self.value.deserialize_enum(name, variants, visitor))
    }
}

/// An array's items, each at its index; items left over fail as serde_json's do.
fn seq<'de, V: Visitor<'de>>(
    items: Vec<Value>,
    chain: &Chain<'_>,
    failed: &Cell<Option<String>>,
    visitor: V,
) -> Result<V::Value, Error> {
    let len = items.len();
    let mut access = Items { items: items.into_iter(), index: 0, chain, failed };
    let value = visitor.visit_seq(&mut access)?;
    if access.items.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in array"))
    }
}

/// An object's entries, each value at its key; entries left over fail as serde_json's do.
fn map<'de, V: Visitor<'de>>(
    entries: Map<String, Value>,
    chain: &Chain<'_>,
    failed: &Cell<Option<String>>,
    visitor: V,
) -> Result<V::Value, Error> {
    let len = entries.len();
    let mut access = Entries { entries: entries.into_iter(), value: None, chain, failed };
    let value = visitor.visit_map(&mut access)?;
    if access.entries.len() == 0 {
        Ok(value)
    } else {
        Err(de::Error::invalid_length(len, &"fewer elements in map"))
    }
}

struct Items<'a> {
    items: std::vec::IntoIter<Value>,
    index: usize,
    chain: &'a Chain<'a>,
    failed: &'a Cell<Option<String>>,
}

impl<'de> de::SeqAccess<'de> for &mut Items<'_> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let chain = Chain::Index { parent: self.chain, index: self.index };
        self.index += 1;
        // A failure the item's `Deserialize` makes after reading it (a union's) is at the item.
        let result = seed.deserialize(Tracked { value, chain: &chain, failed: self.failed });
        seen!(&chain, self.failed, result).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Entries<'a> {
    entries: serde_json::map::IntoIter,
    value: Option<(String, Value)>,
    chain: &'a Chain<'a>,
    failed: &'a Cell<Option<String>>,
}

impl<'de> de::MapAccess<'de> for &mut Entries<'_> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        let decoded = seed.deserialize(de::value::StrDeserializer::<Error>::new(&key))?;
        self.value = Some((key, value));
        Ok(Some(decoded))
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("value is missing"));
        };
        let chain = Chain::Key { parent: self.chain, key: &key };
        let result = seed.deserialize(Tracked { value, chain: &chain, failed: self.failed });
        seen!(&chain, self.failed, result)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// `seed` on `value`, through the same deserializer as [`deserialize`] (so that no type is compiled
/// once more for a plain `Value`); the path of a failure is not kept.
pub(crate) fn seed<'de, S: DeserializeSeed<'de>>(seed: S, value: Value) -> Result<S::Value, Error> {
    let failed = Cell::new(None);
    seed.deserialize(Tracked { value, chain: &Chain::Root, failed: &failed })
}

/// Decodes a buffered JSON value (a union's body, a lenient field) and keeps the path of a failure
/// inside it: the error reads `content[0].text: missing field …`, which `rpc::decode_params`
/// joins onto the path of the value itself.
pub(crate) fn decode_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, serde_json::Error> {
    deserialize(value).map_err(with_path)
}

/// The error with its path as a prefix (not generic, so compiled once).
fn with_path((path, inner): (String, serde_json::Error)) -> serde_json::Error {
    if path.is_empty() || path == "." {
        inner
    } else {
        serde::de::Error::custom(format_args!("{path}: {inner}"))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{json, Value};
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Item {
        name: String,
        size: Option<u8>,
        tags: Vec<String>,
    }

    /// Rewords the errors of its body, as a union does (`in_variant`).
    #[derive(Debug)]
    #[allow(dead_code)]
    struct Reworded(Item);

    impl<'de> Deserialize<'de> for Reworded {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            Item::deserialize(d).map(Reworded).map_err(|e| serde::de::Error::custom(format_args!("{e} (reworded)")))
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Message {
        id: u64,
        items: Vec<Item>,
        by_name: BTreeMap<String, Item>,
        reworded: Option<Reworded>,
        pair: Option<(bool, i8)>,
        #[serde(default)]
        flag: bool,
    }

    fn good() -> Value {
        json!({
            "id": 1,
            "items": [{ "name": "a", "size": 1, "tags": ["t"] }],
            "by_name": { "b": { "name": "b", "size": null, "tags": ["x"] } },
            "reworded": { "name": "c", "size": 2, "tags": ["y", "z"] },
            "pair": [true, -1],
            "flag": false
        })
    }

    #[test]
    fn paths_and_messages_are_serde_path_to_errors() {
        let mut cases = vec![good(), json!(null), json!({}), json!("text")];
        let breaks: &[(&str, Value)] = &[
            ("/id", json!(-1)),
            ("/id", json!(1.5)),
            ("/items/0/name", json!(7)),
            ("/items/0/size", json!(300)),
            ("/items/0/tags", json!({})),
            ("/items/0/tags/0", json!(false)),
            ("/by_name/b/tags/0", json!(null)),
            ("/by_name/b", json!("b")),
            ("/reworded/tags/1", json!(3)),
            ("/reworded", json!(1)),
            ("/pair", json!([true])),
            ("/pair", json!([true, 1, 2])),
            ("/pair/1", json!(-200)),
            ("/flag", json!("yes")),
        ];
        for (pointer, bad) in breaks {
            let mut value = good();
            *value.pointer_mut(pointer).expect("pointer") = bad.clone();
            cases.push(value);
        }
        let mut missing = good();
        missing["items"][0].as_object_mut().unwrap().remove("name");
        cases.push(missing);
        for case in cases {
            let theirs = serde_path_to_error::deserialize::<_, Message>(case.clone())
                .map(|_| ())
                .map_err(|e| (e.path().to_string(), e.into_inner().to_string()));
            let ours = super::deserialize::<Message>(case.clone()).map(|_| ()).map_err(|(p, e)| (p, e.to_string()));
            assert_eq!(ours, theirs, "{case}");
        }
    }

    /// A struct is an object only, where serde_json fills one from an array by position.
    #[test]
    fn a_struct_is_not_read_from_an_array() {
        let mut nested = good();
        nested["items"][0] = json!(["a", 1, ["t"]]);
        assert!(serde_json::from_value::<Message>(nested.clone()).is_ok());
        let ours = super::deserialize::<Message>(nested).map(|_| ()).map_err(|(p, e)| (p, e.to_string()));
        assert_eq!(ours, Err(("items[0]".to_owned(), "invalid type: sequence, expected struct Item".to_owned())));
        let root = super::deserialize::<Message>(json!([])).map(|_| ()).map_err(|(p, e)| (p, e.to_string()));
        assert_eq!(root, Err((".".to_owned(), "invalid type: sequence, expected struct Message".to_owned())));
    }
}
