//! Encoding and decoding helpers for the generated enums: tagged unions (told apart by a `const`
//! property such as `type` or `sessionUpdate`), their catch-alls, untagged unions and string or
//! integer enums with a catch-all.

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, Visitor};
use serde::ser::{self, Serialize, SerializeMap, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

use crate::capture::{array, kind, rest_of_map, Capture, Key, Scalar};
pub use crate::capture::{capture, Captured};
use crate::codec::{JsonObject, RAW_TOKEN};
use crate::meta::Meta;

mod buffered;
pub use buffered::{Buffered, Refusal};

/// A string enum as it appears on the wire.
pub trait WireStr: Sized {
    /// The values the schema names, for error messages.
    const VARIANTS: &'static [&'static str];
    /// The enum for a wire value; `None` for an unknown value of a closed enum.
    fn from_wire(value: &str) -> Option<Self>;
    /// The enum for an owned wire value (avoids a copy for the catch-all).
    fn from_wire_owned(value: String) -> Option<Self> {
        Self::from_wire(&value)
    }
    /// The wire value.
    fn as_wire(&self) -> &str;
}

/// Serializes a [`WireStr`] enum.
pub fn serialize_str<T: WireStr, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.as_wire())
}

/// Deserializes a [`WireStr`] enum.
pub fn deserialize_str<'de, T: WireStr, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    struct V<T>(std::marker::PhantomData<T>);
    impl<T: WireStr> Visitor<'_> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            write!(f, "one of {:?}", T::VARIANTS)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            T::from_wire(v).ok_or_else(|| E::unknown_variant(v, T::VARIANTS))
        }
        fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
            if T::from_wire(&v).is_none() {
                return Err(E::unknown_variant(&v, T::VARIANTS));
            }
            T::from_wire_owned(v).ok_or_else(|| E::custom("unreachable: value accepted then refused"))
        }
    }
    deserializer.deserialize_str(V(std::marker::PhantomData))
}

/// Decodes one variant's body from the object that carried the tag (the tag is removed first, so
/// that nothing inside the body sees it twice).
pub fn body<T: DeserializeOwned>(mut object: JsonObject, tag: &str, value: &str) -> Result<T, serde_json::Error> {
    object.remove(tag);
    crate::tracked::decode_value(Value::Object(object)).map_err(|e| in_body(e, tag, value))
}

fn in_body(e: serde_json::Error, tag: &str, value: &str) -> serde_json::Error {
    de::Error::custom(format_args!("{e} (in {tag} `{value}`)"))
}

/// The object a union decodes from, or an error naming the union.
pub fn object(value: Value, union: &str) -> Result<JsonObject, serde_json::Error> {
    match value {
        Value::Object(object) => Ok(object),
        other => Err(de::Error::custom(format_args!("invalid type: {}, expected an object ({union})", kind(&other)))),
    }
}

/// For a tag with `x-deserialize-default-on-error`: a tag that is neither a string nor `null` is
/// removed (and recorded), so that the branches without a tag decide.
pub fn drop_bad_tag(object: &mut JsonObject, tag: &str) {
    if object.get(tag).is_some_and(|t| !t.is_string() && !t.is_null()) {
        if let Some(bad) = object.remove(tag) {
            crate::lenient::note_default_on_error(format!("{tag} must be a string or null"), bad.to_string());
        }
    }
}

/// For a catch-all the generator added: an object whose tag is a string (one no variant names,
/// and no untagged branch took) is kept whole, and recorded as
/// [`LenientEvent::NotInSchema`](crate::lenient::LenientEvent::NotInSchema); anything else is
/// handed back.
pub fn not_in_schema(value: Value, tag: &'static str, union: &'static str) -> Result<JsonObject, Value> {
    match value {
        Value::Object(object) => match object.get(tag).and_then(Value::as_str) {
            Some(found) => {
                crate::lenient::note_not_in_schema_str(union, Some(tag), found);
                Ok(object)
            }
            None => Err(Value::Object(object)),
        },
        other => Err(other),
    }
}

/// One untagged branch tried: the lenient events it recorded are forgotten when it fails, so that
/// only the branch that decodes the value reports its repairs.
pub fn attempt<T>(decode: impl FnOnce() -> Result<T, serde_json::Error>) -> Result<T, serde_json::Error> {
    let mark = crate::lenient::mark();
    let result = decode();
    if result.is_err() {
        crate::lenient::rewind(mark);
    }
    result
}

/// The error for an object whose tag is absent or not a string and that no untagged branch takes.
pub fn missing_tag(tag: &str, union: &str) -> serde_json::Error {
    de::Error::custom(format_args!("missing or non-string field `{tag}` ({union})"))
}

/// The error for a tag value the union does not know and has no catch-all for.
pub fn unknown_tag(tag: &str, value: &str, known: &'static [&'static str]) -> serde_json::Error {
    de::Error::custom(format_args!("unknown {tag} `{value}`, expected one of {known:?}"))
}

/// The error when no branch of an untagged union accepts the value.
pub fn no_branch(union: &str, value: &Value, first: Option<serde_json::Error>) -> serde_json::Error {
    match first {
        Some(e) => de::Error::custom(format_args!("{} matches no branch of {union}: {e}", kind(value))),
        None => de::Error::custom(format_args!("{} matches no branch of {union}", kind(value))),
    }
}

/// Encodes `body` (a struct or map) as an object whose first entry is `tag: value`.
pub fn tagged<S: Serializer, T: Serialize + ?Sized>(
    serializer: S,
    tag: &'static str,
    value: &'static str,
    body: &T,
) -> Result<S::Ok, S::Error> {
    body.serialize(Tagged { inner: serializer, tag, value })
}

/// Encodes the object `{tag: value}` (a variant without a body).
pub fn tag_only<S: Serializer>(serializer: S, tag: &'static str, value: &'static str) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(tag, value)?;
    map.end()
}

/// A serializer that writes a struct or map with one more entry, the tag, in front.
struct Tagged<S> {
    inner: S,
    tag: &'static str,
    value: &'static str,
}

impl<S: Serializer> Tagged<S> {
    fn not_an_object(what: &str) -> S::Error {
        ser::Error::custom(format_args!("a tagged variant's body must be an object, not {what}"))
    }

    fn open(self, len: Option<usize>) -> Result<S::SerializeMap, S::Error> {
        let mut map = self.inner.serialize_map(len.map(|n| n + 1))?;
        map.serialize_entry(self.tag, self.value)?;
        Ok(map)
    }
}

/// The map (or struct) being written after the tag.
pub struct TaggedMap<M>(M);

impl<M: SerializeMap> ser::SerializeMap for TaggedMap<M> {
    type Ok = M::Ok;
    type Error = M::Error;
    fn serialize_key<K: Serialize + ?Sized>(&mut self, key: &K) -> Result<(), M::Error> {
        self.0.serialize_key(key)
    }
    fn serialize_value<V: Serialize + ?Sized>(&mut self, value: &V) -> Result<(), M::Error> {
        self.0.serialize_value(value)
    }
    fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

impl<M: SerializeMap> ser::SerializeStruct for TaggedMap<M> {
    type Ok = M::Ok;
    type Error = M::Error;
    fn serialize_field<V: Serialize + ?Sized>(&mut self, key: &'static str, value: &V) -> Result<(), M::Error> {
        if key == RAW_TOKEN {
            return raw_entries(&mut self.0, value);
        }
        self.0.serialize_entry(key, value)
    }
    fn end(self) -> Result<M::Ok, M::Error> {
        self.0.end()
    }
}

/// A body kept as text (a catch-all's object, itself a union's variant): its entries after the
/// tag. Out of line, so that the fields of every other body are written as before.
#[cold]
#[inline(never)]
fn raw_entries<M: SerializeMap, V: Serialize + ?Sized>(map: &mut M, value: &V) -> Result<(), M::Error> {
    let Ok(Value::String(text)) = serde_json::to_value(value) else {
        return Err(ser::Error::custom("a raw value that is not text"));
    };
    for (key, value) in crate::meta::entries(&text).map_err(ser::Error::custom)? {
        map.serialize_entry(&*key.0, value)?;
    }
    Ok(())
}

macro_rules! reject {
    ($($method:ident($($arg:ty),*) => $what:literal;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<S::Ok, S::Error> {
            Err(Self::not_an_object($what))
        })*
    };
}

impl<S: Serializer> Serializer for Tagged<S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = ser::Impossible<S::Ok, S::Error>;
    type SerializeTuple = ser::Impossible<S::Ok, S::Error>;
    type SerializeTupleStruct = ser::Impossible<S::Ok, S::Error>;
    type SerializeTupleVariant = ser::Impossible<S::Ok, S::Error>;
    type SerializeMap = TaggedMap<S::SerializeMap>;
    type SerializeStruct = TaggedMap<S::SerializeMap>;
    type SerializeStructVariant = ser::Impossible<S::Ok, S::Error>;

    reject! {
        serialize_bool(bool) => "a boolean";
        serialize_i8(i8) => "a number";
        serialize_i16(i16) => "a number";
        serialize_i32(i32) => "a number";
        serialize_i64(i64) => "a number";
        serialize_u8(u8) => "a number";
        serialize_u16(u16) => "a number";
        serialize_u32(u32) => "a number";
        serialize_u64(u64) => "a number";
        serialize_f32(f32) => "a number";
        serialize_f64(f64) => "a number";
        serialize_char(char) => "a string";
        serialize_str(&str) => "a string";
        serialize_bytes(&[u8]) => "bytes";
        serialize_none() => "null";
        serialize_unit_variant(&'static str, u32, &'static str) => "a string";
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.open(Some(0))?.end()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<S::Ok, S::Error> {
        self.open(Some(0))?.end()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<S::Ok, S::Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<S::Ok, S::Error> {
        Err(Self::not_an_object("an externally tagged enum"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        Err(Self::not_an_object("an array"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, S::Error> {
        Err(Self::not_an_object("an array"))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, S::Error> {
        Err(Self::not_an_object("an array"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        Err(Self::not_an_object("an array"))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        self.open(len).map(TaggedMap)
    }
    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Self::SerializeStruct, S::Error> {
        self.open(Some(len)).map(TaggedMap)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        Err(Self::not_an_object("an externally tagged enum"))
    }
}

/// A union with a catch-all, whose kept object is text: see [`flat`].
pub trait Kept {
    /// The object the catch-all keeps; `None` for any other variant.
    fn kept(&self) -> Option<&Meta>;
}

impl<T: Kept + ?Sized> Kept for Box<T> {
    fn kept(&self) -> Option<&Meta> {
        (**self).kept()
    }
}

/// Encodes a union that a struct flattens (`#[serde(flatten, serialize_with = "union::flat")]`):
/// serde's flattening takes a map's entries, so a catch-all's object is written as one, its
/// values still as their text; any other variant as usual.
pub fn flat<T: Kept + Serialize + ?Sized, S: Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    match value.kept() {
        Some(object) => object.serialize_entries(serializer),
        None => value.serialize(serializer),
    }
}

/// A tagged union that decodes in one pass over its input: see [`stream`].
pub trait Streamed: Sized {
    /// The tag property, e.g. `sessionUpdate`.
    const TAG: &'static str;

    /// Decodes the variant of a known `tag` from the rest of the object (the tag already read);
    /// `None` for a tag this union does not name (the general path decides).
    fn known<'de, D: Deserializer<'de>>(tag: &str, body: D) -> Option<Result<Self, D::Error>>;

    /// The general path: from the whole object as a [`Value`].
    fn from_json(value: Value) -> Result<Self, serde_json::Error>;

    /// The catch-all that takes an object whose tag is a string no variant names with nothing
    /// tried before it (a catch-all the schema declares, or one the generator added to a union
    /// without untagged branches), given the object as its text and the tag: what
    /// [`Self::from_json`] gives for the same object. [`stream`] then writes the object out as
    /// text instead of gathering a [`Value`]. `None`: the general path decides.
    const OTHER: Option<fn(Meta, &str) -> Self> = None;
}

/// Decodes a tagged union without buffering it when it can: the object's entries are read in order
/// until the tag; a known tag then decodes its variant from the entries before it (kept aside) and
/// the rest of the input, still unread. Anything else (no tag, a tag that is not a string, an
/// unknown tag, not an object) gathers the whole value and takes [`Streamed::from_json`], so the
/// result is the same.
///
/// Under [`super::detailed`], every value takes the general path, whose errors name the tag and
/// the path inside the body; [`super::rpc::decode_params`] decodes again that way after a failure.
pub fn stream<'de, T: Streamed, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    if crate::policy::is_detailed() {
        let value = Value::deserialize(deserializer)?;
        return T::from_json(value).map_err(de::Error::custom);
    }
    deserializer.deserialize_any(Stream(std::marker::PhantomData))
}

struct Stream<T>(std::marker::PhantomData<T>);

impl<T: Streamed> Stream<T> {
    fn general<E: de::Error>(value: Value) -> Result<T, E> {
        T::from_json(value).map_err(E::custom)
    }

    /// An object without the tag: the general path.
    #[cold]
    #[inline(never)]
    fn without_tag<E: de::Error>(before: Vec<(String, Value)>) -> Result<T, E> {
        Self::general(Value::Object(before.into_iter().collect()))
    }

    /// A string tag this union does not name: the catch-all's text, or the general path.
    #[cold]
    #[inline(never)]
    fn unknown<'de, A: de::MapAccess<'de>>(
        before: Vec<(String, Value)>,
        tag: Scalar<'de>,
        map: A,
    ) -> Result<T, A::Error> {
        if let (Some(other), Scalar::Str(name)) = (T::OTHER, &tag) {
            return match kept(before, T::TAG, name, map)? {
                Ok(object) => Ok(other(object, name)),
                Err(value) => Self::general(value),
            };
        }
        Self::gathered(before, tag, map)
    }

    /// The object gathered in its order (the entries before the tag, the tag, the rest) for the
    /// general path.
    #[cold]
    #[inline(never)]
    fn gathered<'de, A: de::MapAccess<'de>>(
        before: Vec<(String, Value)>,
        tag: Scalar<'de>,
        map: A,
    ) -> Result<T, A::Error> {
        let mut object = JsonObject::new();
        object.extend(before);
        object.insert(T::TAG.to_owned(), tag.into_value());
        Self::general(rest_of_map(map, object)?)
    }
}

/// An entry before the tag, read as a value (out of line: most objects start with their tag).
#[cold]
#[inline(never)]
fn set_aside<'de, A: de::MapAccess<'de>>(
    before: &mut Vec<(String, Value)>,
    key: Key<'de>,
    map: &mut A,
) -> Result<(), A::Error> {
    before.push((key.0.into_owned(), map.next_value()?));
    Ok(())
}

impl<'de, T: Streamed> Visitor<'de> for Stream<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with a `{}` tag", T::TAG)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        // The common case (the tag first, a string this union names) stays here; the others are
        // out of line, so that each union's decoder is small where it runs.
        let mut before: Vec<(String, Value)> = Vec::new();
        loop {
            let Some(key) = map.next_key::<Key<'de>>()? else {
                return Self::without_tag(before);
            };
            if key.0 == T::TAG {
                break;
            }
            set_aside(&mut before, key, &mut map)?;
        }
        let tag = map.next_value::<Scalar<'de>>()?;
        let Scalar::Str(name) = &tag else {
            return Self::gathered(before, tag, map);
        };
        let mut rest = Rest { tag: T::TAG, before: before.into_iter(), value: None, live: map };
        // `known` reads the entries only when it names the tag.
        match T::known(name, de::value::MapAccessDeserializer::new(&mut rest)) {
            Some(result) => result.map_err(|e| in_variant(e, T::TAG, name)),
            None => Self::unknown(rest.before.collect(), tag, rest.live),
        }
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        Self::general(array(seq)?)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Self::general(Value::Null)
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Self::general(Value::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Self::general(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Self::general(Value::from(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Self::general(Value::from(v))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Self::general(Value::from(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        Self::general(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<T, E> {
        Self::general(Value::String(v))
    }
}

/// A body's error, with the variant it was decoding named like the general path names it. The
/// position `serde_json` gave it goes (the error gets it again, at the end of the message).
#[cold]
#[inline(never)]
fn in_variant<E: de::Error>(error: E, tag: &str, value: &str) -> E {
    let text = error.to_string();
    E::custom(format_args!("{} (in {tag} `{value}`)", crate::codec::without_position(&text)))
}

/// The object of a tag no variant names, for a catch-all: written out as text in its order (the
/// entries before the tag, the tag, the rest), each value's text as the deserializer captured
/// it, without a [`Value`] tree of it. A second tag, which the general path resolves to the
/// last, gathers the object as a [`Value`] instead (`Err`).
fn kept<'de, A: de::MapAccess<'de>>(
    before: Vec<(String, Value)>,
    tag_key: &str,
    tag: &str,
    mut map: A,
) -> Result<Result<Meta, Value>, A::Error> {
    let mut out: Vec<u8> = Vec::with_capacity(128);
    out.push(b'{');
    for (key, value) in &before {
        crate::codec::write_str(&mut out, key);
        out.push(b':');
        tri_json(crate::codec::to_writer(&mut out, value))?;
        out.push(b',');
    }
    crate::codec::write_str(&mut out, tag_key);
    out.push(b':');
    crate::codec::write_str(&mut out, tag);
    while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
        if key == tag_key {
            out.push(b'}');
            let mut object: JsonObject = tri_json(serde_json::from_slice(&out))?;
            object.insert(key.into_owned(), map.next_value()?);
            return rest_of_map(map, object).map(Err);
        }
        out.push(b',');
        crate::codec::write_str(&mut out, &key);
        out.push(b':');
        match map.next_value_seed(Capture)? {
            Captured::Text(text) => push_text(&mut out, &text),
            Captured::Value(value) => tri_json(crate::codec::to_writer(&mut out, &value))?,
        }
    }
    out.push(b'}');
    // Escaped keys and strings, and text the deserializer took as JSON: UTF-8 throughout.
    let text = tri_json(String::from_utf8(out))?;
    Ok(Ok(Meta::from_written(text)))
}

/// A value's captured text at the end of `out`: without the whitespace around it, and with line
/// breaks (which JSON text only has between tokens, strings escape theirs) made spaces, so that
/// the object can be written into a newline-delimited stream as it is.
fn push_text(out: &mut Vec<u8>, text: &str) {
    let start = out.len();
    out.extend_from_slice(text.trim_matches(|c: char| c.is_ascii_whitespace()).as_bytes());
    if memchr::memchr2(b'\n', b'\r', &out[start..]).is_some() {
        for byte in &mut out[start..] {
            if *byte == b'\n' || *byte == b'\r' {
                *byte = b' ';
            }
        }
    }
}

/// An error of building the kept text (which cannot fail on what a deserializer gives) as the
/// deserializer's.
fn tri_json<T, E: fmt::Display, F: de::Error>(result: Result<T, E>) -> Result<T, F> {
    result.map_err(F::custom)
}

/// The entries of a tagged object after its tag: those read before the tag, then the live rest.
struct Rest<A> {
    tag: &'static str,
    before: std::vec::IntoIter<(String, Value)>,
    value: Option<Value>,
    live: A,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for &mut Rest<A> {
    type Error = A::Error;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.before.next() {
            self.value = Some(value);
            return seed.deserialize(de::IntoDeserializer::<A::Error>::into_deserializer(key)).map(Some);
        }
        // A second tag is refused here (the general path, where the last one wins, decides).
        match self.live.next_key::<Key<'de>>()? {
            None => Ok(None),
            Some(Key(key)) if key == self.tag => Err(tag_twice(self.tag)),
            Some(Key(Cow::Borrowed(key))) => seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some),
            Some(Key(Cow::Owned(key))) => {
                seed.deserialize(de::IntoDeserializer::<A::Error>::into_deserializer(key)).map(Some)
            }
        }
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            // Through the same deserializer as the general path's bodies (`decode_value`), so
            // that no type is compiled once more for a plain `Value`.
            Some(value) => crate::tracked::seed(seed, value).map_err(de::Error::custom),
            None => self.live.next_value_seed(seed),
        }
    }
}

/// The error of a tag given twice (the general path, where the last one wins, decides).
#[cold]
#[inline(never)]
fn tag_twice<E: de::Error>(tag: &str) -> E {
    E::custom(format_args!("duplicate field `{tag}`"))
}

/// Whether an untagged union tries its branches on a [`Buffered`] copy of its value rather than
/// on a `Value`: under [`optimistic`](super::optimistic) decoding, where a branch that the copy
/// refuses but a `Value` might take (a key twice: a `Value` keeps the last) sends the whole
/// message the exact way.
pub fn buffered_branches() -> bool {
    crate::policy::is_optimistic()
}

/// One branch of an untagged union decoded from the buffered value (under
/// [`buffered_branches`]); `None` when it does not take it, with what it recorded forgotten (as
/// [`attempt`] does).
pub fn from_buffered<'de, T: Deserialize<'de>>(value: &Buffered<'de>) -> Option<T> {
    let mark = crate::lenient::mark();
    match T::deserialize(value) {
        Ok(value) => Some(value),
        Err(refusal) => {
            crate::lenient::rewind(mark);
            // A `Value` keeps the last of two keys, so the exact way's branch may take what the
            // copy refuses: such a pass is not trusted (`policy::refuse`).
            if refusal.duplicate {
                crate::policy::refuse();
            }
            None
        }
    }
}

/// No branch took the buffered value: the message goes the exact way, whose error is the one
/// reported.
pub fn no_buffered_branch() -> serde_json::Error {
    crate::policy::refuse();
    de::Error::custom("no branch took the value")
}
