//! The JSON entry points of the types: [`from_str`], `serde_json::from_str`'s result and error
//! with this crate's reader, the lenient fields decoded in place first
//! ([`optimistic`](crate::optimistic)), and the exact way only when that fails or cannot be
//! trusted (a lenient refusal inside an untagged union); and the writer's [`to_vec`],
//! [`to_writer`] and [`to_raw_value`], byte for byte what `serde_json`'s write.

pub use crate::codec::{to_raw_value, to_vec, to_writer};

/// Decodes `text` as `serde_json::from_str` does, with the same result and the same error text
/// and position (its `classify()` is `Data` for a syntax error too: see `codec/read.rs`).
///
/// It decodes once [`optimistic`](crate::optimistic)ally (lenient fields in place, as plain
/// fields, and untagged unions' branches tried on a [`Buffered`](crate::union::Buffered) copy of
/// the value), which gives exactly the exact way's value whenever nothing needs a repair, and
/// otherwise again the exact way (lenient fields captured, then repaired; untagged branches tried
/// on a `Value`). So a message that needs a repair costs two passes; one that does not, one pass
/// without the captures.
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, serde_json::Error> {
    let mark = crate::lenient::mark();
    crate::policy::take_refused();
    // A lenient field that refused its value, or a key twice, inside an untagged union's branch
    // may have sent the union to another branch than the exact way takes: such a result is not
    // used (`policy::refuse`).
    let fast = crate::policy::optimistic(|| crate::codec::decode(text).ok());
    if !crate::policy::take_refused() {
        if let Some(value) = fast {
            return Ok(value);
        }
    }
    crate::lenient::rewind(mark);
    crate::codec::decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two branches tried in turn, as an untagged union does: the first has a lenient field
    /// (a number, `0` when it is not one), the second takes anything.
    #[derive(Debug, PartialEq)]
    enum Branches {
        First(u32),
        Second(serde_json::Value),
    }

    impl<'de> serde::Deserialize<'de> for Branches {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            use serde::de::IntoDeserializer;
            let value = serde_json::Value::deserialize(deserializer)?;
            let first = crate::lenient::field(
                value.clone().into_deserializer(),
                Some(|| 0),
                |raw| match raw {
                    crate::lenient::Raw::Text(text) => serde_json::from_str(text),
                    crate::lenient::Raw::Value(value) => serde_json::from_value(value),
                },
                <u32 as serde::Deserialize>::deserialize,
            );
            Ok(match first {
                Ok(n) => Branches::First(n),
                Err(_) => Branches::Second(value),
            })
        }
    }

    #[test]
    fn a_lenient_refusal_swallowed_by_a_union_sends_the_message_the_exact_way() {
        // The exact way repairs the first branch; the optimistic pass would have taken the second.
        let (value, events) = crate::lenient::collect(|| from_str::<Branches>("\"text\"").unwrap());
        assert_eq!(value, Branches::First(0));
        assert_eq!(events.len(), 1, "{events:?}");
        assert_eq!(from_str::<Branches>("7").unwrap(), Branches::First(7));
        assert_eq!(serde_json::from_str::<Branches>("\"text\"").unwrap(), Branches::First(0));
    }
}
