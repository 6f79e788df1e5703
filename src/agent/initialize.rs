//! The agent's answer to `initialize`: the version chosen among those served, the handler of
//! that version called, and its answer made to state that version (and, in v2, the session
//! capability the runtime serves).

use super::context::{AgentContext, ClientCapabilities};
use super::handler::AgentHandler;
use crate::jsonrpc::Raw;
use crate::lifecycle::{Negotiated, INITIALIZE};
use acp_types::support::rpc::{decode_params, RpcError};
use acp_types::{v2, Version};
use serde_json::json;

/// Answers `initialize` with `agent`, speaking one of `versions` (sorted); on success the
/// connection speaks the version answered and `cx` keeps what the client advertised.
pub(super) async fn initialize<A: AgentHandler>(
    agent: &A,
    versions: &[Version],
    negotiated: &Negotiated,
    params: Option<Raw>,
    mut cx: AgentContext,
) -> Result<serde_json::Value, RpcError> {
    let requested = requested_version(params.as_deref())?;
    let chosen = choose_version(versions, requested)?;
    let advertised = ClientCapabilities::of_initialize(chosen, params.as_deref());
    let advertise_to = cx.advertised.clone();
    cx.version = chosen;
    let mut result = agent.handle_request(chosen, INITIALIZE, params, cx).await?;
    // The answer states the negotiated version, whatever the handler filled in (rule
    // `init.version`: the version answered is one the agent supports, at most the one asked).
    result["protocolVersion"] = json!(chosen.number());
    if chosen == Version::V2 && A::V2_SESSIONS && result.is_object() {
        // v2: "Omitted and `null` are equivalent and mean the agent does not support the
        // `session/*` methods" (`AgentCapabilities.session`); the runtime serves them.
        let capabilities = &mut result["capabilities"];
        if !capabilities.is_object() {
            *capabilities = json!({});
        }
        if capabilities["session"].is_null() {
            capabilities["session"] = json!({});
        }
    }
    if let Some(advertised) = advertised {
        advertise_to.set(advertised);
    }
    negotiated.set(chosen);
    Ok(result)
}

/// The version to answer an `initialize` asking for `requested` with, among the `versions`
/// served (sorted), as rule `init.version` asks. The highest one at or below the one asked for, in both schemas' words:
/// "The protocol version the client specified if supported by the agent, or the latest protocol
/// version supported by the agent" (v1 `InitializeResponse.protocolVersion`), "The highest
/// protocol version supported by the agent that is at or below the version requested by the
/// client" (v2). When there is none (asked for 0, or a v2-only agent asked for 1) the texts
/// differ, and the newest version served decides: v2 says "If no such version exists,
/// initialization fails with error code -32022" (an error v1's `ErrorCode` does not have), v1
/// answers its latest version.
fn choose_version(versions: &[Version], requested: u16) -> Result<Version, RpcError> {
    if let Some(highest) = versions.iter().copied().filter(|v| v.number() <= requested).max() {
        return Ok(highest);
    }
    match versions.iter().copied().max() {
        Some(Version::V1) => Ok(Version::V1),
        _ => {
            let supported = versions.iter().map(|v| v2::ProtocolVersion(v.number())).collect();
            let data = v2::UnsupportedProtocolVersionErrorData::new(v2::ProtocolVersion(requested), supported);
            let error = RpcError::new(v2::ErrorCode::UnsupportedProtocolVersion.code(), "unsupported protocol version");
            Err(match serde_json::to_value(&data) {
                Ok(data) => error.with_data(data),
                Err(_) => error,
            })
        }
    }
}

/// The `protocolVersion` an `initialize` asks for: a `uint16`, as in both schemas, so that 70000
/// or -1 is the same -32602 (naming `protocolVersion`) in every version.
fn requested_version(params: Option<&serde_json::value::RawValue>) -> Result<u16, RpcError> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    decode_params::<Probe>(INITIALIZE, params).map(|p| p.protocol_version)
}
