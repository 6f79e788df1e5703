//! Shared by the test files: the round-trip laws, checked for a type known by name.

#![allow(dead_code)]

use acp_types::TypeVisitor;
use serde_json::Value;

/// Checks `encode(decode(json)) == json` and `decode(encode(x)) == x`, decoding from JSON text as a
/// peer's bytes would be decoded.
pub struct RoundTrip(pub Value);

impl TypeVisitor for RoundTrip {
    type Output = Result<(), String>;

    fn visit<T>(self, name: &'static str) -> Result<(), String>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static,
    {
        let text = self.0.to_string();
        let (decoded, events) = acp_types::lenient::collect(|| serde_json::from_str::<T>(&text));
        let decoded = decoded.map_err(|e| format!("{name}: decode failed: {e}\n  json: {text}"))?;
        // The runtime's decoding (lenient fields in place first) gives the same value and records
        // the same repairs.
        let (fast, fast_events) = acp_types::lenient::collect(|| acp_types::support::json::from_str::<T>(&text));
        if fast.ok().as_ref() != Some(&decoded) || fast_events != events {
            return Err(format!("{name}: support::json::from_str and serde_json::from_str differ\n  json: {text}"));
        }
        // One pass (tags read as they come) and the general path (whole values) agree, also when
        // every object's keys come in reverse order, so that each tag comes after its body.
        let general: T = acp_types::support::detailed(|| serde_json::from_str(&text))
            .map_err(|e| format!("{name}: decode under `detailed` failed: {e}\n  json: {text}"))?;
        if general != decoded {
            return Err(format!("{name}: one-pass and general decoding differ\n  json: {text}"));
        }
        let reversed = reverse_keys(&self.0).to_string();
        let late: T = serde_json::from_str(&reversed)
            .map_err(|e| format!("{name}: decode with keys reversed failed: {e}\n  json: {reversed}"))?;
        if late != decoded {
            return Err(format!("{name}: decoding with keys reversed differs\n  json: {reversed}"));
        }
        let encoded = serde_json::to_value(&decoded).map_err(|e| format!("{name}: encode failed: {e}"))?;
        // The runtime's encoder writes what serde_json writes, byte for byte.
        let ours = acp_types::support::json::to_vec(&decoded).map_err(|e| format!("{name}: encode failed: {e}"))?;
        if serde_json::to_vec(&decoded).ok().as_ref() != Some(&ours) {
            return Err(format!("{name}: support::json and serde_json encode differently\n  json: {text}"));
        }
        if !json_eq(&encoded, &self.0) {
            return Err(format!("{name}: encode(decode(json)) != json\n  json: {text}\n  back: {encoded}"));
        }
        let again: T = serde_json::from_value(encoded.clone())
            .map_err(|e| format!("{name}: decoding the re-encoded value failed: {e}\n  json: {encoded}"))?;
        if again != decoded {
            return Err(format!("{name}: decode(encode(x)) != x\n  x:     {decoded:?}\n  again: {again:?}"));
        }
        Ok(())
    }
}

/// `value` with the keys of every object in reverse order.
pub fn reverse_keys(value: &Value) -> Value {
    match value {
        Value::Object(object) => {
            Value::Object(object.iter().rev().map(|(k, v)| (k.clone(), reverse_keys(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(reverse_keys).collect()),
        other => other.clone(),
    }
}

/// Decodes a value as the named type and reports the error text (for negative tests).
pub struct DecodeError(pub Value);

impl TypeVisitor for DecodeError {
    type Output = Option<String>;

    fn visit<T>(self, _: &'static str) -> Option<String>
    where
        T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug + Clone + 'static,
    {
        serde_json::from_str::<T>(&self.0.to_string()).err().map(|e| e.to_string())
    }
}

/// One case of `tests/corpus/vN.json`.
#[derive(serde::Deserialize)]
pub struct Case {
    pub name: String,
    pub method: String,
    pub message: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub unstable: bool,
    pub value: Value,
}

pub fn corpus(version: &str) -> Vec<Case> {
    let path = format!("{}/tests/corpus/{version}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// JSON equality: objects compare as maps (key order aside) and numbers by value, so `1` equals
/// `1.0` (a `number` field is an `f64` in Rust and is written back as `1.0`).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(i), Some(j), _, _) => i == j,
            (_, _, Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}
