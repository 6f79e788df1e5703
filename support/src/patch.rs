//! `Patch<T>`: a field that may be omitted, `null`, or a value, with the three kept apart.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An optional field whose schema also allows `null`.
///
/// On the wire "omitted" and `null` are different messages (for patch-style updates such as v2
/// `ToolCallUpdate`, omitted leaves a value unchanged and `null` clears it), so decoding keeps them
/// apart and encoding writes back exactly what was read. Use it with
/// `#[serde(default, skip_serializing_if = "Patch::is_omitted")]`, as the generated code does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum Patch<T> {
    /// The field was not present.
    #[default]
    Omitted,
    /// The field was present with the value `null`.
    Null,
    /// The field was present with a value.
    Value(T),
}

impl<T> Patch<T> {
    /// True when the field was absent; the generated `skip_serializing_if` uses it.
    pub fn is_omitted(&self) -> bool {
        matches!(self, Patch::Omitted)
    }

    /// True when the field was an explicit `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Patch::Null)
    }

    /// The value, if there is one (omitted and `null` both give `None`).
    pub fn as_value(&self) -> Option<&T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable access to the value, if there is one.
    pub fn as_value_mut(&mut self) -> Option<&mut T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Consumes the patch, giving the value if there is one.
    pub fn into_value(self) -> Option<T> {
        match self {
            Patch::Value(v) => Some(v),
            _ => None,
        }
    }

    /// Maps the value, keeping omitted and `null` as they are.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Patch<U> {
        match self {
            Patch::Omitted => Patch::Omitted,
            Patch::Null => Patch::Null,
            Patch::Value(v) => Patch::Value(f(v)),
        }
    }
}

impl<T> From<T> for Patch<T> {
    fn from(value: T) -> Self {
        Patch::Value(value)
    }
}

impl<T> From<Option<T>> for Patch<T> {
    /// `None` becomes [`Patch::Omitted`], the form most senders want.
    fn from(value: Option<T>) -> Self {
        value.map_or(Patch::Omitted, Patch::Value)
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // `Omitted` is skipped by the containing struct; written on its own it can only be null.
            Patch::Omitted | Patch::Null => serializer.serialize_none(),
            Patch::Value(v) => serializer.serialize_some(v),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    /// Only called when the field is present (absence is `#[serde(default)]`), so `null` is `Null`.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(deserializer)?.map_or(Patch::Null, Patch::Value))
    }
}

#[cfg(feature = "schemars")]
impl<T: schemars::JsonSchema> schemars::JsonSchema for Patch<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Option<T>>::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Option<T>>::json_schema(generator)
    }
    fn inline_schema() -> bool {
        true
    }
}
