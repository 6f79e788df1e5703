//! Version negotiation at the head of the chain: the conductor answers the editor's `initialize`
//! with the chain's answer, having sent on the version the editor asked for, unless it speaks
//! only lower ones; then it sends the highest it speaks below that (and the lowest for a request
//! below all of them), as an agent selects. The same rule as the official conductor 5.0.0
//! (`select_like_an_agent`, conductor.rs:1602-1612: 2 and above select 2, anything lower 1;
//! `forwarded_initialize_request`, conductor.rs:312-341: the editor's params go on unchanged when
//! the version is kept).

use acp_types::support::rpc::RpcError;
use acp_types::Version;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use std::fmt;

use crate::jsonrpc::Raw;
use crate::lifecycle::INITIALIZE;

/// The key whose value is the version.
const PROTOCOL_VERSION: &str = "protocolVersion";

/// The params to send on for the editor's `initialize` params: `None` to send them unchanged,
/// or the same params with `protocolVersion` lowered to one the conductor speaks. A missing or
/// invalid `protocolVersion` is -32602, as the official conductor answers
/// (`requested_protocol_version`, conductor.rs:300-310).
pub(super) fn forwarded(params: Option<&RawValue>) -> Result<Option<Raw>, RpcError> {
    #[derive(Deserialize)]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    let invalid =
        || RpcError::invalid_params(INITIALIZE, PROTOCOL_VERSION, "must be a valid ACP protocol version (0 to 65535)");
    let asked = params.and_then(|p| serde_json::from_str::<Asked>(p.get()).ok()).ok_or_else(invalid)?;
    let selected = select(asked.protocol_version);
    if selected == asked.protocol_version {
        return Ok(None);
    }
    let params = params.ok_or_else(invalid)?;
    let Fields(mut fields) = serde_json::from_str(params.get()).map_err(|_| invalid())?;
    for (key, value) in fields.iter_mut() {
        if key == PROTOCOL_VERSION {
            *value = RawValue::from_string(selected.to_string()).map_err(|_| invalid())?;
        }
    }
    let mut text = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&serde_json::to_string(key).map_err(|_| invalid())?);
        text.push(':');
        text.push_str(value.get());
    }
    text.push('}');
    RawValue::from_string(text).map(Some).map_err(|_| invalid())
}

/// The version sent on for `asked`: the highest this build speaks at or below it, or the lowest
/// when it is below all of them.
fn select(asked: u16) -> u16 {
    let speaks = || Version::ALL.iter().map(|v| v.number());
    speaks().filter(|&v| v <= asked).max().or_else(|| speaks().min()).unwrap_or(asked)
}

/// An object's members in their order, each value as sent (re-encoding through a map would
/// reorder them, and a `Value` would round numbers).
struct Fields(Vec<(String, Raw)>);

impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;
        impl<'de> Visitor<'de> for Members {
            type Value = Fields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, Raw>()? {
                    fields.push(entry);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Members)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> Raw {
        RawValue::from_string(text.into()).expect("json")
    }

    #[test]
    fn a_version_the_conductor_speaks_goes_on_unchanged() {
        for asked in [r#"{"protocolVersion":1,"_x":{"k":1.50}}"#, r#"{"protocolVersion":2}"#] {
            assert!(forwarded(Some(&raw(asked))).expect("valid").is_none(), "{asked}");
        }
    }

    #[test]
    fn a_higher_version_is_lowered_in_place_and_a_lower_one_raised() {
        let sent = forwarded(Some(&raw(r#"{"b":1.50,"protocolVersion":65535,"a":[]}"#))).expect("valid");
        assert_eq!(sent.expect("rewritten").get(), r#"{"b":1.50,"protocolVersion":2,"a":[]}"#);
        let sent = forwarded(Some(&raw(r#"{"protocolVersion":0}"#))).expect("valid");
        assert_eq!(sent.expect("rewritten").get(), r#"{"protocolVersion":1}"#);
    }

    #[test]
    fn a_missing_or_invalid_version_is_invalid_params() {
        for bad in [r#"{}"#, r#"{"protocolVersion":"1"}"#, r#"{"protocolVersion":-1}"#, "[]"] {
            assert_eq!(forwarded(Some(&raw(bad))).err().map(|e| e.code), Some(RpcError::INVALID_PARAMS), "{bad}");
        }
        assert_eq!(forwarded(None).err().map(|e| e.code), Some(RpcError::INVALID_PARAMS));
    }
}
