//! Structs with a tagged union flattened into them (`SessionConfigOption` and its `type`, v2
//! `DiffChange` and its `operation`): decoded in one pass over the object.
//!
//! serde's `#[serde(flatten)]` buffers every entry the struct does not name as `Content` (a tree
//! of `Vec`s and strings), then decodes the union from that buffer: for a configuration option
//! with nested option groups, most of the object is built twice. Here the union leads instead:
//! the object is read in order; the struct's own entries are set aside as their JSON text (a
//! borrowed slice when the input is text), and once the tag is read, the union's body decodes from
//! the rest of the input as [`super::stream`] does it. The struct's own fields (a few small
//! values) then decode from the text set aside. Whatever `stream` would gather into a `Value`
//! (no tag, an unknown tag, …) takes the same general path here, so the value is the one the
//! buffered decoding gives.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use super::{capture, in_variant, Captured, Key, Rest, Scalar, Streamed};
use crate::JsonObject;

/// A struct with a tagged union flattened into it, decoded by [`flattened`]. The generator
/// implements it with a private struct of the same fields but the union, whose derived
/// `Deserialize` decodes the own fields (so they behave as in the struct).
pub trait Flattened: Sized {
    /// The flattened union.
    type Union: Streamed;
    /// The struct's name, for `expecting`.
    const NAME: &'static str;
    /// The wire names of the own fields; every other entry belongs to the union.
    const OWN: &'static [&'static str];
    /// The struct: its own fields decoded from the entries of `own`, then the union from `union`.
    fn join<'de, M: de::MapAccess<'de>>(
        own: M,
        union: impl FnOnce() -> Result<Self::Union, M::Error>,
    ) -> Result<Self, M::Error>;
}

/// Decodes a [`Flattened`] struct in one pass (see the module's documentation). Under
/// [`crate::detailed`], the own fields decode in place (their errors keep their path) and the union
/// from the rest of the object gathered as a `Value`, as `stream` does there.
pub fn flattened<'de, T: Flattened, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_map(Flat::<T>(PhantomData))
}

/// The own entries set aside while the union decodes: their keys and values as read.
pub(super) struct Own<'de> {
    names: &'static [&'static str],
    entries: Vec<(Cow<'de, str>, Captured<'de>)>,
}

impl<'de> Own<'de> {
    pub(super) fn names(&self, key: &str) -> bool {
        self.names.contains(&key)
    }

    pub(super) fn push(&mut self, key: Cow<'de, str>, value: Captured<'de>) {
        self.entries.push((key, value));
    }

    /// The struct from the own entries set aside (in the order they came) and `union`. An error
    /// is worded as the struct's would be, without the position inside the value it came from
    /// (the deserializer adds its own).
    fn join<T: Flattened, E: de::Error>(
        &self,
        union: impl FnOnce() -> Result<T::Union, serde_json::Error>,
    ) -> Result<T, E> {
        let entries = Entries { iter: self.entries.iter(), value: None };
        T::join(entries, union).map_err(|e| E::custom(crate::without_position(&e.to_string())))
    }
}

/// [`capture`] as a seed, for `next_value_seed`.
pub(super) struct CaptureSeed;

impl<'de> DeserializeSeed<'de> for CaptureSeed {
    type Value = Captured<'de>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Captured<'de>, D::Error> {
        capture(deserializer)
    }
}

struct Flat<T>(PhantomData<T>);

impl<T: Flattened> Flat<T> {
    /// The struct from its own entries and the object of the union's (the own fields first, as
    /// serde's derive reports their errors before the union's).
    fn general<E: de::Error>(own: &Own<'_>, union: JsonObject) -> Result<T, E> {
        own.join(|| <T::Union as Streamed>::from_json(Value::Object(union)))
    }
}

impl<'de, T: Flattened> Visitor<'de> for Flat<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "struct {}", T::NAME)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        if crate::is_detailed() {
            return in_place::<T, A>(map);
        }
        let tag_name = <T::Union as Streamed>::TAG;
        let mut own = Own { names: T::OWN, entries: Vec::new() };
        let mut before: Vec<(String, Value)> = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if own.names(&key) {
                let value = map.next_value_seed(CaptureSeed)?;
                own.push(key, value);
                continue;
            }
            if key != tag_name {
                before.push((key.into_owned(), map.next_value()?));
                continue;
            }
            let tag = map.next_value::<Scalar<'de>>()?;
            if let Scalar::Str(tag) = &tag {
                let mut rest =
                    Rest { tag: tag_name, own: Some(&mut own), before: before.into_iter(), value: None, live: map };
                let known = <T::Union as Streamed>::known(tag, de::value::MapAccessDeserializer::new(&mut rest));
                if let Some(result) = known {
                    let union = result.map_err(|e| in_variant(e, tag_name, tag))?;
                    // A body reads to the end of the object; should one stop early, the own
                    // entries after it are still set aside.
                    while de::MapAccess::next_key::<IgnoredAny>(&mut &mut rest)?.is_some() {
                        de::MapAccess::next_value::<IgnoredAny>(&mut &mut rest)?;
                    }
                    return own.join(|| Ok(union));
                }
                before = rest.before.collect();
                map = rest.live;
            }
            // The general path: the union's entries gathered in their order, the own ones aside.
            let mut object = JsonObject::new();
            object.extend(before);
            object.insert(tag_name.to_owned(), tag.into_value());
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                if own.names(&key) {
                    let value = map.next_value_seed(CaptureSeed)?;
                    own.push(key, value);
                } else {
                    object.insert(key.into_owned(), map.next_value()?);
                }
            }
            return Self::general(&own, object);
        }
        Self::general(&own, before.into_iter().collect())
    }
}

/// Under [`crate::detailed`]: the own fields decoded in place by their derive (so an error names
/// its path), the union's entries gathered into a `Value` on the way.
fn in_place<'de, T: Flattened, A: de::MapAccess<'de>>(mut map: A) -> Result<T, A::Error> {
    let gathered = std::cell::RefCell::new(JsonObject::new());
    let divert = Divert { names: T::OWN, union: &gathered, live: &mut map };
    T::join(divert, || <T::Union as Streamed>::from_json(Value::Object(gathered.take())).map_err(de::Error::custom))
}

/// The live entries the own fields name; the others go into `union` on the way.
struct Divert<'a, A> {
    names: &'static [&'static str],
    union: &'a std::cell::RefCell<JsonObject>,
    live: &'a mut A,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for Divert<'_, A> {
    type Error = A::Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        while let Some(Key(key)) = self.live.next_key::<Key<'de>>()? {
            if self.names.contains(&&*key) {
                return seed.deserialize(de::value::CowStrDeserializer::new(key)).map(Some);
            }
            let value = self.live.next_value::<Value>()?;
            self.union.borrow_mut().insert(key.into_owned(), value);
        }
        Ok(None)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.live.next_value_seed(seed)
    }
}

/// The own entries set aside, as a map: a value kept as text decodes with `serde_json` from it.
struct Entries<'b, 'de> {
    iter: std::slice::Iter<'b, (Cow<'de, str>, Captured<'de>)>,
    value: Option<&'b Captured<'de>>,
}

impl<'b> de::MapAccess<'b> for Entries<'b, '_> {
    type Error = serde_json::Error;
    fn next_key_seed<K: DeserializeSeed<'b>>(&mut self, seed: K) -> Result<Option<K::Value>, serde_json::Error> {
        let Some((key, value)) = self.iter.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'b>>(&mut self, seed: V) -> Result<V::Value, serde_json::Error> {
        match self.value.take() {
            Some(Captured::Text(text)) => {
                let mut deserializer = serde_json::Deserializer::from_str(text);
                let value = seed.deserialize(&mut deserializer)?;
                deserializer.end()?;
                Ok(value)
            }
            Some(Captured::Value(value)) => seed.deserialize(value),
            None => Err(de::Error::custom("value requested before its key")),
        }
    }
}
