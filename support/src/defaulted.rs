//! `Defaulted<T>`: a field with a schema `default`, applied on decode, presence remembered.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::ops::{Deref, DerefMut};

/// A field whose schema gives a `default` value.
///
/// Decoding an object without the field yields the schema default (so `caps.terminal` reads
/// `false` when a peer omitted it), and encoding leaves the field out again, so that
/// `encode(decode(json))` equals `json`. Setting a value (`From`, [`Defaulted::set`], `DerefMut`)
/// makes it explicit, and it is then always written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Defaulted<T> {
    value: T,
    explicit: bool,
}

impl<T> Defaulted<T> {
    /// The schema default, not present on the wire.
    pub fn implicit(value: T) -> Self {
        Defaulted { value, explicit: false }
    }

    /// A value that was (or will be) present on the wire.
    pub fn explicit(value: T) -> Self {
        Defaulted { value, explicit: true }
    }

    /// True when the value is the schema default and the field was absent.
    pub fn is_implicit(&self) -> bool {
        !self.explicit
    }

    /// The value, default applied.
    pub fn get(&self) -> &T {
        &self.value
    }

    /// Replaces the value; it becomes explicit.
    pub fn set(&mut self, value: T) {
        self.value = value;
        self.explicit = true;
    }

    /// The value, default applied.
    pub fn into_inner(self) -> T {
        self.value
    }
}

impl<T> From<T> for Defaulted<T> {
    fn from(value: T) -> Self {
        Defaulted::explicit(value)
    }
}

impl<T> Deref for Defaulted<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T> DerefMut for Defaulted<T> {
    /// Mutable access makes the value explicit.
    fn deref_mut(&mut self) -> &mut T {
        self.explicit = true;
        &mut self.value
    }
}

impl<T: Serialize> Serialize for Defaulted<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Defaulted<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer).map(Defaulted::explicit)
    }
}

#[cfg(feature = "schemars")]
impl<T: schemars::JsonSchema> schemars::JsonSchema for Defaulted<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}
