//! Structs whose variant-dependent part is a flattened tagged union (`SessionConfigOption`,
//! `DiffChange`, …), decoded in one pass.
//!
//! serde's `#[serde(flatten)]` reads the whole object first, keeping every entry the struct does
//! not name as a `Content` tree, and then decodes the union from that tree: a configuration
//! option's `options` are read twice and held in between. Here the union's body is read from the
//! live input once its tag is known, as [`super::stream`] reads a union's, and the struct's own
//! fields are set aside as they pass (as [`Buffered`] entries, borrowing their strings) and
//! decoded last by a private derived struct of the same fields.

use serde::de::{self, Deserialize, DeserializeOwned, Deserializer, IntoDeserializer, Visitor};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

use super::{in_variant, Buffered, Key, Scalar, Streamed};
use crate::JsonObject;

/// Entries set aside: a key and its value.
type Entries<'de> = Vec<(Cow<'de, str>, Buffered<'de>)>;

/// Decodes a struct made of its own fields `O` (whose wire names are `own`) and a flattened
/// tagged union `U`: what `#[serde(flatten)]` decodes, in one pass over the input.
///
/// Under [`crate::detailed`] the object is read as a `Value` first and split, so that errors name
/// their path as the union's do there.
pub fn flattened<'de, D, O, U>(deserializer: D, own: &'static [&'static str]) -> Result<(O, U), D::Error>
where
    D: Deserializer<'de>,
    O: DeserializeOwned,
    U: Streamed,
{
    if crate::is_detailed() {
        let value = Value::deserialize(deserializer)?;
        return general(value, own).map_err(de::Error::custom);
    }
    deserializer.deserialize_map(Flat { own, marker: std::marker::PhantomData })
}

/// The general way: the object split into the struct's entries and the union's.
fn general<O: DeserializeOwned, U: Streamed>(
    value: Value,
    own: &'static [&'static str],
) -> Result<(O, U), serde_json::Error> {
    let Value::Object(object) = value else {
        return Err(de::Error::invalid_type(unexpected(&value), &"an object"));
    };
    let (mine, rest): (JsonObject, JsonObject) = object.into_iter().partition(|(key, _)| own.contains(&key.as_str()));
    let mine = crate::decode_value(Value::Object(mine))?;
    Ok((mine, U::from_json(Value::Object(rest))?))
}

/// What a non-object is, for the error.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

/// The struct's own fields, from the entries set aside.
fn own_fields<'de, O: DeserializeOwned, E: de::Error>(mine: Entries<'de>) -> Result<O, E> {
    O::deserialize(&Buffered::Map(mine)).map_err(E::custom)
}

struct Flat<O, U> {
    own: &'static [&'static str],
    marker: std::marker::PhantomData<(O, U)>,
}

impl<'de, O: DeserializeOwned, U: Streamed> Visitor<'de> for Flat<O, U> {
    type Value = (O, U);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with a `{}` tag", U::TAG)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(O, U), A::Error> {
        let mut mine: Entries<'de> = Vec::new();
        let mut before: Entries<'de> = Vec::new();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            if self.own.contains(&&*key) {
                mine.push((key, map.next_value()?));
                continue;
            }
            if key != U::TAG {
                before.push((key, map.next_value()?));
                continue;
            }
            let tag = map.next_value::<Scalar<'de>>()?;
            if let Scalar::Str(tag) = &tag {
                let mut rest = Rest {
                    tag: U::TAG,
                    own: self.own,
                    mine: &mut mine,
                    before: before.into_iter(),
                    value: None,
                    live: map,
                };
                // `known` reads the entries only when it names the tag.
                if let Some(result) = U::known(tag, de::value::MapAccessDeserializer::new(&mut rest)) {
                    let union = result.map_err(|e| in_variant(e, U::TAG, tag))?;
                    return Ok((own_fields(mine)?, union));
                }
                before = rest.before.collect();
                map = rest.live;
            }
            // The general path for the union: its entries gathered in their order.
            let mut object = gathered(before);
            object.insert(U::TAG.to_owned(), tag.into_value());
            while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
                if self.own.contains(&&*key) {
                    mine.push((key, map.next_value()?));
                } else {
                    object.insert(key.into_owned(), map.next_value()?);
                }
            }
            let union = U::from_json(Value::Object(object)).map_err(de::Error::custom)?;
            return Ok((own_fields(mine)?, union));
        }
        let union = U::from_json(Value::Object(gathered(before))).map_err(de::Error::custom)?;
        Ok((own_fields(mine)?, union))
    }
}

/// Entries set aside, as an object (a key twice keeps the last, as serde_json does).
fn gathered(entries: Entries<'_>) -> JsonObject {
    entries.into_iter().map(|(key, value)| (key.into_owned(), value.to_value())).collect()
}

/// The union's entries after its tag: those read before it, then the live rest, with the
/// struct's own entries taken out as they pass.
struct Rest<'a, 'de, A> {
    tag: &'static str,
    own: &'static [&'static str],
    mine: &'a mut Entries<'de>,
    before: std::vec::IntoIter<(Cow<'de, str>, Buffered<'de>)>,
    value: Option<Buffered<'de>>,
    live: A,
}

impl<'de, A: de::MapAccess<'de>> de::MapAccess<'de> for &mut Rest<'_, 'de, A> {
    type Error = A::Error;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.before.next() {
            self.value = Some(value);
            return key_to(seed, key);
        }
        loop {
            // A second tag is refused here (the general path, where the last one wins, decides).
            match self.live.next_key::<Key<'de>>()? {
                None => return Ok(None),
                Some(Key(key)) if key == self.tag => {
                    return Err(de::Error::custom(format_args!("duplicate field `{}`", self.tag)))
                }
                Some(Key(key)) if self.own.contains(&&*key) => {
                    let value = self.live.next_value()?;
                    self.mine.push((key, value));
                }
                Some(Key(key)) => return key_to(seed, key),
            }
        }
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(&value).map_err(de::Error::custom),
            None => self.live.next_value_seed(seed),
        }
    }
}

/// Hands `key` to `seed`, borrowed when the input lent it.
fn key_to<'de, K: de::DeserializeSeed<'de>, E: de::Error>(seed: K, key: Cow<'de, str>) -> Result<Option<K::Value>, E> {
    match key {
        Cow::Borrowed(key) => seed.deserialize(de::value::BorrowedStrDeserializer::new(key)).map(Some),
        Cow::Owned(key) => seed.deserialize(IntoDeserializer::<E>::into_deserializer(key)).map(Some),
    }
}
