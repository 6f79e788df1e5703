//! JSON Schema fragments for the hand-implemented `schemars::JsonSchema` of enums and unions
//! (feature `schemars`); structs and newtypes derive theirs.

use serde_json::{json, Value};

/// A tagged variant: the body's schema plus the tag property.
pub fn tagged(body: schemars::Schema, tag: &str, value: &str) -> Value {
    json!({
        "type": "object",
        "properties": { tag: { "type": "string", "const": value } },
        "required": [tag],
        "allOf": [body],
    })
}

/// A variant that is the tag alone.
pub fn tag_only(tag: &str, value: &str) -> Value {
    json!({
        "type": "object",
        "properties": { tag: { "type": "string", "const": value } },
        "required": [tag],
    })
}

/// The catch-all: any other tag value, any other fields.
pub fn catch_all(tag: &str, known: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": { tag: { "type": "string", "not": { "enum": known } } },
        "required": [tag],
        "additionalProperties": true,
    })
}

/// A string enum, with `open` accepting any other string.
pub fn string_enum(known: &[&str], open: bool) -> schemars::Schema {
    if open {
        schemars::json_schema!({ "anyOf": [{ "type": "string", "enum": known }, { "type": "string" }] })
    } else {
        schemars::json_schema!({ "type": "string", "enum": known })
    }
}

/// An integer enum, with `open` accepting any other integer.
pub fn int_enum(known: &[i64], open: bool) -> schemars::Schema {
    if open {
        schemars::json_schema!({ "anyOf": [{ "type": "integer", "enum": known }, { "type": "integer" }] })
    } else {
        schemars::json_schema!({ "type": "integer", "enum": known })
    }
}

/// A union of the given branches.
pub fn any_of(branches: Vec<Value>) -> schemars::Schema {
    schemars::json_schema!({ "anyOf": branches })
}
