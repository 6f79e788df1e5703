//! Generic decoding helpers over any `serde` deserializer: a value's text captured when the
//! deserializer can give it ([`capture`], through `serde_json`'s raw-value token), a key or a
//! string borrowed from the input when it can be ([`Key`], `Scalar`), and the rest of a map or a
//! sequence as a `Value`. The lenient fields, `Meta` and the unions build on them.

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

use crate::codec::{JsonObject, RAW_TOKEN};

/// The JSON kind of `value`, for error messages (`a string`, `an object`, …).
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `object` with the rest of `map`'s entries appended, as a [`Value`].
pub(crate) fn rest_of_map<'de, A: de::MapAccess<'de>>(mut map: A, mut object: JsonObject) -> Result<Value, A::Error> {
    while let Some((key, value)) = map.next_entry::<String, Value>()? {
        object.insert(key, value);
    }
    Ok(Value::Object(object))
}

/// [`capture`] as a seed, for a map's value.
pub(crate) struct Capture;

impl<'de> de::DeserializeSeed<'de> for Capture {
    type Value = Captured<'de>;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Captured<'de>, D::Error> {
        capture(deserializer)
    }
}

/// The rest of a sequence, as a [`Value`] array.
pub(crate) fn array<'de, A: de::SeqAccess<'de>>(mut seq: A) -> Result<Value, A::Error> {
    let mut items = Vec::new();
    while let Some(item) = seq.next_element::<Value>()? {
        items.push(item);
    }
    Ok(Value::Array(items))
}

/// A string borrowed from the input when it can be (an object key); serde's own `Cow<str>`
/// always copies.
pub(crate) struct Key<'de>(pub(crate) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// A tag's value: a string (borrowed when it can be), or anything else as a [`Value`].
pub(crate) enum Scalar<'de> {
    Str(Cow<'de, str>),
    Other(Value),
}

impl Scalar<'_> {
    pub(crate) fn into_value(self) -> Value {
        match self {
            Scalar::Str(s) => Value::String(s.into_owned()),
            Scalar::Other(v) => v,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    #[inline]
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Str(Cow::Owned(v)))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Scalar<'de>, A::Error> {
                rest_of_map(map, JsonObject::new()).map(Scalar::Other)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Scalar<'de>, A::Error> {
                array(seq).map(Scalar::Other)
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Scalar<'de>, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Scalar<'de>, D::Error> {
                d.deserialize_any(self)
            }
            fn visit_none<E: de::Error>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::Null))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::Null))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::Bool(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::from(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar<'de>, E> {
                Ok(Scalar::Other(Value::from(v)))
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// What [`capture`] read: the JSON text, when the deserializer can give it (`serde_json`'s own,
/// and a `Value` decoded by serde_json or `tracked`, which write the value out), else the value.
pub enum Captured<'de> {
    /// The exact text of the value, borrowed from the input when it can be.
    Text(Cow<'de, str>),
    /// The value, from a deserializer that cannot give text (`#[serde(flatten)]` buffers, …).
    Value(Value),
}

/// Captures the next value as text if the deserializer supports it, or as a [`Value`].
pub fn capture<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Captured<'de>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Captured<'de>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Captured<'de>, A::Error> {
            let Some(first) = map.next_key::<Key<'de>>()? else {
                return Ok(Captured::Value(Value::Object(Default::default())));
            };
            if first.0 == RAW_TOKEN {
                return match map.next_value::<Scalar<'de>>()? {
                    Scalar::Str(text) => Ok(Captured::Text(text)),
                    Scalar::Other(_) => Err(de::Error::custom("raw value is not text")),
                };
            }
            let mut object = JsonObject::new();
            object.insert(first.0.into_owned(), map.next_value()?);
            rest_of_map(map, object).map(Captured::Value)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Captured<'de>, A::Error> {
            array(seq).map(Captured::Value)
        }
        fn visit_newtype_struct<D2: Deserializer<'de>>(self, d: D2) -> Result<Captured<'de>, D2::Error> {
            Value::deserialize(d).map(Captured::Value)
        }
        fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<Captured<'de>, D2::Error> {
            Value::deserialize(d).map(Captured::Value)
        }
        fn visit_none<E: de::Error>(self) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::Null))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::Null))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::Bool(v)))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::from(v)))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::from(v)))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::String(v.to_owned())))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<Captured<'de>, E> {
            Ok(Captured::Value(Value::String(v)))
        }
    }
    deserializer.deserialize_newtype_struct(RAW_TOKEN, V)
}
