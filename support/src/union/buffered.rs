//! [`Buffered`]: a JSON value held only long enough to try an untagged union's branches on it.
//!
//! An untagged union cannot tell its branch before it has seen the whole value, so the value is
//! read once into a buffer and each branch decodes from the buffer until one takes it. A
//! `serde_json::Value` works as that buffer (the exact way uses one), but it owns every key and
//! string and hashes every key into an `IndexMap`. This one keeps the strings the input lends
//! (`Cow::Borrowed`) and an object's entries in a `Vec`, in their order, duplicates included: a
//! branch then sees exactly the entries the input had, and [`super::from_buffered`] sends a
//! message whose branch refused a key twice the exact way, where a `Value` keeps the last.

use serde::de::{self, Deserialize, Deserializer, IntoDeserializer, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

use crate::codec::RAW_TOKEN;

/// A JSON value read into memory, borrowing its strings from the input where it can.
#[derive(Debug, Clone, PartialEq)]
pub enum Buffered<'de> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A non-negative integer.
    U64(u64),
    /// A negative integer.
    I64(i64),
    /// Any other number.
    F64(f64),
    /// A string.
    Str(Cow<'de, str>),
    /// An array.
    Seq(Vec<Buffered<'de>>),
    /// An object, its entries in input order.
    Map(Vec<(Cow<'de, str>, Buffered<'de>)>),
}

impl Buffered<'_> {
    /// The JSON kind as the schema names it: `"object"`, `"array"`, `"string"`, `"number"`,
    /// `"boolean"` or `"null"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::U64(_) | Self::I64(_) | Self::F64(_) => "number",
            Self::Str(_) => "string",
            Self::Seq(_) => "array",
            Self::Map(_) => "object",
        }
    }

    /// The same value as a `serde_json::Value` (a key twice keeps the last, as serde_json does).
    pub fn to_value(&self) -> Value {
        match self {
            Self::Null => Value::Null,
            Self::Bool(b) => Value::Bool(*b),
            Self::U64(n) => Value::from(*n),
            Self::I64(n) => Value::from(*n),
            Self::F64(n) => serde_json::Number::from_f64(*n).map_or(Value::Null, Value::Number),
            Self::Str(s) => Value::String(s.to_string()),
            Self::Seq(items) => Value::Array(items.iter().map(Self::to_value).collect()),
            Self::Map(entries) => Value::Object(entries.iter().map(|(k, v)| (k.to_string(), v.to_value())).collect()),
        }
    }
}

impl<'de> Deserialize<'de> for Buffered<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Reading)
    }
}

/// The visitor that reads a [`Buffered`].
struct Reading;

impl<'de> Visitor<'de> for Reading {
    type Value = Buffered<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Buffered<'de>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Bool(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Buffered<'de>, E> {
        Ok(Buffered::U64(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Buffered<'de>, E> {
        // serde_json's `Value` keeps a non-negative `i64` as a `u64`: so does this.
        Ok(if v < 0 { Buffered::I64(v) } else { Buffered::U64(v as u64) })
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Buffered<'de>, E> {
        Ok(Buffered::F64(v))
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Buffered<'de>, E> {
        Ok(Buffered::Str(Cow::Owned(v)))
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Buffered<'de>, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Buffered<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Buffered::Seq(items))
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Buffered<'de>, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<crate::capture::Key<'de>>()? {
            entries.push((key.0, map.next_value()?));
        }
        Ok(Buffered::Map(entries))
    }
}

/// A buffered value read as `&Value` would be: the same visitor calls for the same JSON.
impl<'de> Deserializer<'de> for &Buffered<'de> {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            Buffered::Null => visitor.visit_unit(),
            Buffered::Bool(b) => visitor.visit_bool(*b),
            Buffered::U64(n) => visitor.visit_u64(*n),
            Buffered::I64(n) => visitor.visit_i64(*n),
            Buffered::F64(n) => visitor.visit_f64(*n),
            Buffered::Str(Cow::Borrowed(s)) => visitor.visit_borrowed_str(s),
            Buffered::Str(Cow::Owned(s)) => visitor.visit_str(s),
            Buffered::Seq(items) => {
                let mut seq = de::value::SeqDeserializer::new(items.iter());
                let value = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(value)
            }
            Buffered::Map(entries) => {
                let mut map = de::value::MapDeserializer::new(entries.iter().map(|(k, v)| (EntryKey(k), v)));
                let value = visitor.visit_map(&mut map)?;
                map.end()?;
                Ok(value)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self {
            Buffered::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        if name == RAW_TOKEN {
            // A raw value wants the value's text: a `Value` writes it.
            return self.to_value().deserialize_newtype_struct(name, visitor).map_err(de::Error::custom);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self {
            Buffered::Str(s) => visitor.visit_enum(s.as_ref().into_deserializer()),
            // `{"Variant": body}`, as serde_json reads an externally tagged enum: rare enough to
            // go through a `Value`.
            _ => self.to_value().deserialize_enum(name, variants, visitor).map_err(de::Error::custom),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

impl<'de> IntoDeserializer<'de, Refusal> for &Buffered<'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

/// Why a branch refused a [`Buffered`] value: only whether it was a key twice, which is all
/// [`super::from_buffered`] asks (a `Value` keeps the last of two keys, so the exact way may
/// decide otherwise). The rest of a refusal is not worded: an untagged union tries branches that
/// refuse all the time (a blob resource is first tried as a text one), and the exact way words
/// the error of a value that no branch takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// The refusal was serde's `duplicate field`.
    pub duplicate: bool,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(if self.duplicate { "duplicate field" } else { "the branch refused the value" })
    }
}

impl std::error::Error for Refusal {}

impl de::Error for Refusal {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Refusal { duplicate: Prefix::of(&message, DUPLICATE) }
    }
}

/// How serde words a key twice (`Error::duplicate_field`).
const DUPLICATE: &str = "duplicate field";

/// Whether a message begins with a prefix, written out only as far as it takes to tell.
struct Prefix<'p> {
    rest: &'p str,
    differs: bool,
}

impl Prefix<'_> {
    fn of(message: &dyn fmt::Display, prefix: &str) -> bool {
        use fmt::Write as _;
        let mut check = Prefix { rest: prefix, differs: false };
        // The writer stops the formatting (an `fmt::Error`) as soon as it can tell.
        let _ = write!(check, "{message}");
        !check.differs && check.rest.is_empty()
    }
}

impl fmt::Write for Prefix<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len().min(self.rest.len());
        if s.as_bytes()[..n] != self.rest.as_bytes()[..n] {
            self.differs = true;
            return Err(fmt::Error);
        }
        self.rest = &self.rest[n..];
        if self.rest.is_empty() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

/// Number and boolean keys read from their text, as serde_json reads a map's keys (`{"1": …}`
/// into a map keyed by `u32`); a key that does not parse is handed over as a string, which the
/// visitor refuses as serde_json's would.
macro_rules! keys_parsed {
    ($($method:ident $ty:ty => $visit:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0.parse::<$ty>() {
                Ok(parsed) => visitor.$visit(parsed),
                Err(_) => self.deserialize_any(visitor),
            }
        }
    )*};
}

/// An object's key, read as `&Value`'s keys are: a string, handed over borrowed when the input
/// lent it.
struct EntryKey<'a, 'de>(&'a Cow<'de, str>);

impl<'de> IntoDeserializer<'de, Refusal> for EntryKey<'_, 'de> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> Deserializer<'de> for EntryKey<'_, 'de> {
    type Error = Refusal;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Cow::Borrowed(s) => visitor.visit_borrowed_str(s),
            Cow::Owned(s) => visitor.visit_str(s),
        }
    }

    keys_parsed! {
        deserialize_bool bool => visit_bool,
        deserialize_i8 i8 => visit_i8, deserialize_i16 i16 => visit_i16, deserialize_i32 i32 => visit_i32,
        deserialize_i64 i64 => visit_i64, deserialize_i128 i128 => visit_i128,
        deserialize_u8 u8 => visit_u8, deserialize_u16 u16 => visit_u16, deserialize_u32 u32 => visit_u32,
        deserialize_u64 u64 => visit_u64, deserialize_u128 u128 => visit_u128,
        deserialize_f32 f32 => visit_f32, deserialize_f64 f64 => visit_f64,
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::Buffered;
    use serde::de::DeserializeOwned;
    use serde::Deserialize;
    use serde_json::Value;
    use std::collections::{BTreeMap, HashMap};

    /// `T` read from the buffered copy and from a `Value` of the same text: the same value, or
    /// both an error.
    fn same<T: DeserializeOwned + PartialEq + std::fmt::Debug>(text: &str) {
        let buffered: Buffered<'_> = crate::codec::decode(text).expect("JSON");
        let value: Value = serde_json::from_str(text).expect("JSON");
        let from_buffered = T::deserialize(&buffered).map_err(|e| e.to_string());
        let from_value = T::deserialize(&value).map_err(|e| e.to_string());
        match (&from_buffered, &from_value) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{text}"),
            (Err(_), Err(_)) => {}
            _ => panic!("{text}: buffered {from_buffered:?}, value {from_value:?}"),
        }
        assert_eq!(buffered.to_value(), value, "{text}");
    }

    #[derive(Debug, PartialEq, Deserialize)]
    enum Shape {
        Dot,
        Circle { r: f64 },
        Pair(u8, u8),
        Named(String),
    }

    #[derive(Debug, PartialEq, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        a: Option<u32>,
        #[serde(default)]
        b: Vec<i64>,
        c: Option<Raw>,
    }

    /// A raw value, compared by its text.
    #[derive(Debug, Deserialize)]
    #[serde(transparent)]
    struct Raw(Box<serde_json::value::RawValue>);

    impl PartialEq for Raw {
        fn eq(&self, other: &Self) -> bool {
            self.0.get() == other.0.get()
        }
    }

    #[test]
    fn reads_as_a_value_would() {
        for text in [r#"{"1":"one","22":"two"}"#, r#"{"x":"one"}"#, r#"{"-3":"minus"}"#, r#"{"true":1,"false":2}"#] {
            same::<HashMap<u32, String>>(text);
            same::<BTreeMap<i8, String>>(text);
            same::<BTreeMap<bool, u8>>(text);
            same::<HashMap<String, Value>>(text);
        }
        for text in [
            r#""Dot""#,
            r#"{"Circle":{"r":1.5}}"#,
            r#"{"Pair":[1,2]}"#,
            r#"{"Pair":[1,256]}"#,
            r#"{"Named":"x"}"#,
            r#""Square""#,
            r#"{"Circle":{"r":1},"Dot":null}"#,
        ] {
            same::<Shape>(text);
        }
        for text in [
            r#"{"a":1,"b":[-1,2],"c":{"k":[1,"two",null]}}"#,
            r#"{"a":null,"c":null}"#,
            r#"{"a":-1}"#,
            r#"{"a":1,"d":0}"#,
            r#"{"b":[1.5]}"#,
            r#"[1,[2]]"#,
        ] {
            same::<Strict>(text);
            same::<Value>(text);
        }
        for text in ["0", "-0", "18446744073709551615", "-9223372036854775808", "1e3", "2.5", "null", "true"] {
            same::<Option<u64>>(text);
            same::<i128>(text);
            same::<f32>(text);
            same::<Value>(text);
        }
        for text in [r#""a\nb\u00e9""#, r#""plain""#, r#"["x",{"y":"z\"q"}]"#] {
            same::<String>(text);
            same::<char>(text);
            same::<Value>(text);
            same::<Vec<String>>(text);
        }
    }

    #[test]
    fn a_refusal_tells_a_key_twice() {
        use serde::de::Error as _;
        assert!(super::Refusal::custom(format_args!("duplicate field `{}`", "text")).duplicate);
        assert!(super::Refusal::duplicate_field("uri").duplicate);
        assert!(!super::Refusal::missing_field("uri").duplicate);
        assert!(!super::Refusal::custom("duplicate").duplicate);
        assert!(!super::Refusal::custom("a duplicate field").duplicate);
        // Through a derived struct, as a branch refuses.
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct One {
            a: u8,
        }
        let twice: Buffered<'_> = crate::codec::decode(r#"{"a":1,"a":2}"#).unwrap();
        assert!(One::deserialize(&twice).unwrap_err().duplicate);
        let wrong: Buffered<'_> = crate::codec::decode(r#"{"a":"x"}"#).unwrap();
        assert!(!One::deserialize(&wrong).unwrap_err().duplicate);
    }

    #[test]
    fn borrows_the_strings_it_can() {
        let buffered: Buffered<'_> = crate::codec::decode(r#"{"k":"plain","e":"a\nb"}"#).unwrap();
        let Buffered::Map(entries) = &buffered else { panic!("{buffered:?}") };
        assert!(matches!(
            entries[0],
            (std::borrow::Cow::Borrowed("k"), Buffered::Str(std::borrow::Cow::Borrowed("plain")))
        ));
        assert!(matches!(&entries[1].1, Buffered::Str(std::borrow::Cow::Owned(s)) if s == "a\nb"));
    }
}
