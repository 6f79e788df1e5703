//! Prints one ACP JSON Schema file, in the layout the ACP maintainers publish, from the schemars
//! output of the `agent-client-protocol-schema` crate this package is built against. Which file
//! is decided by the features (see Cargo.toml: `unstable`, and `v2` to have the v2 module at all)
//! and the version given on the command line (`v1` or `v2`), so that one build prints a file in
//! both versions; `cargo xtask schema pull --crate` runs it.
//!
//! The root is an untagged union of what each side sends (its requests, responses and
//! notifications in one JSON-RPC envelope), then the protocol-level notifications; v2 roots of the
//! crates that had batches list them, unstable roots of the crates with proxy chains list the
//! proxy's messages.

use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use serde_json::Value;
use std::io::Write;

/// The root type of one protocol version's file, in a module of its own: `root!(v1, cfg(any()))`
/// or `root!(v2, cfg(feature = "batch"))` (batches are v2's only). One build prints both versions
/// of a file (`v1` or `v2` on the command line): the crate's features that differ between the
/// files of a version (`unstable`) are the same for both versions.
macro_rules! root {
    ($version:ident, $batch:meta) => {
        use agent_client_protocol_schema::$version as acp;
        use acp::{
            AgentNotification, AgentRequest, AgentResponse, ClientNotification, ClientRequest, ClientResponse,
            JsonRpcMessage, Notification, ProtocolLevelNotification, Request, Response,
        };
        use schemars::JsonSchema;

        /// One side's messages: each branch titled by its variant's name.
        #[derive(JsonSchema)]
        #[serde(untagged)]
        #[schemars(inline)]
        #[allow(dead_code)]
        pub enum Sent<Req, Res, Note> {
            Request(Request<Req>),
            Response(Response<Res>),
            Notification(Notification<Note>),
        }

        /// What one side may put in a batch call.
        #[$batch]
        #[derive(JsonSchema)]
        #[serde(untagged)]
        #[schemars(inline)]
        #[allow(dead_code)]
        pub enum BatchCall<Req, Note> {
            Request(Request<Req>),
            Notification(Notification<Note>),
            ProtocolLevelNotification(Notification<ProtocolLevelNotification>),
        }

        #[$batch]
        use acp::JsonRpcBatch;

        #[derive(JsonSchema)]
        #[serde(untagged)]
        #[schemars(title = "Agent Client Protocol")]
        #[allow(dead_code, clippy::large_enum_variant)]
        pub enum Root {
            Agent(JsonRpcMessage<Sent<AgentRequest, AgentResponse, AgentNotification>>),
            Client(JsonRpcMessage<Sent<ClientRequest, ClientResponse, ClientNotification>>),
            #[$batch]
            AgentBatchCall(JsonRpcBatch<BatchCall<AgentRequest, AgentNotification>>),
            #[$batch]
            AgentBatchResponse(JsonRpcBatch<Response<AgentResponse>>),
            #[$batch]
            ClientBatchCall(JsonRpcBatch<BatchCall<ClientRequest, ClientNotification>>),
            #[$batch]
            ClientBatchResponse(JsonRpcBatch<Response<ClientResponse>>),
            ProtocolLevel(JsonRpcMessage<Notification<ProtocolLevelNotification>>),
            #[cfg(feature = "proxy")]
            Proxy(JsonRpcMessage<Sent<acp::ProxyRequest, acp::ProxyResponse, acp::ProxyNotification>>),
        }
    };
}

mod v1 {
    root!(v1, cfg(any()));
}

#[cfg(feature = "v2")]
mod v2 {
    root!(v2, cfg(feature = "batch"));
}

/// The protocol's site, which the crate's doc comments link to.
const SITE: &str = "https://agentclientprotocol.com/protocol/";


/// The pages the site has per version. Older crates link v2 items to them without a version
/// (`…/protocol/content`); the v2 documents link to the v2 page.
const VERSIONED_PAGES: &[&str] = &[
    "agent-plan",
    "authentication",
    "cancellation",
    "content",
    "elicitation",
    "error",
    "extensibility",
    "initialization",
    "prompt-lifecycle",
    "session-config-options",
    "session-delete",
    "session-list",
    "session-setup",
    "slash-commands",
    "tool-calls",
    "transports",
];

/// The links of one text as the published documents have them: a v2 page without a version gets
/// `v2/`, and in an unstable document every page of its version is the draft's
/// (`…/protocol/v1/draft/…`).
fn published_links(text: &str, version: &str) -> String {
    let mut text = text.to_string();
    if version == "v2" {
        for page in VERSIONED_PAGES {
            text = text.replace(&format!("{SITE}{page}"), &format!("{SITE}{version}/{page}"));
        }
    }
    if cfg!(feature = "unstable") {
        let (page, draft) = (format!("{SITE}{version}/"), format!("{SITE}{version}/draft/"));
        text = text.replace(&draft, &page).replace(&page, &draft);
    }
    text
}

fn link_pages(value: &mut Value, version: &str) {
    match value {
        Value::String(text) if text.contains(SITE) => *text = published_links(text, version),
        Value::Array(items) => items.iter_mut().for_each(|v| link_pages(v, version)),
        Value::Object(map) => map.values_mut().for_each(|v| link_pages(v, version)),
        _ => {}
    }
}

/// The top-level keys in the published files' order: `$schema`, `title`, the root's union, then
/// `$defs` (schemars adds `$schema` and `title` after the rest).
fn published_order(value: Value) -> Value {
    let Value::Object(mut map) = value else { return value };
    let mut ordered = serde_json::Map::new();
    for key in ["$schema", "title"] {
        if let Some(v) = map.remove(key) {
            ordered.insert(key.to_string(), v);
        }
    }
    let defs = map.remove("$defs");
    ordered.extend(map);
    if let Some(defs) = defs {
        ordered.insert("$defs".to_string(), defs);
    }
    Value::Object(ordered)
}

fn main() {
    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    // `additionalProperties: false` stays a boolean; every other `true`/`false` schema becomes `{}`
    // or `{"not": {}}`.
    let mut bools = ReplaceBoolSchemas::default();
    bools.skip_additional_properties = true;
    let generator = settings.with_transform(RemoveRefSiblings::default()).with_transform(bools).into_generator();
    // `v1` or `v2`; without one, the version the build is for (v2 with the feature).
    let version = std::env::args().nth(1).unwrap_or_else(|| if cfg!(feature = "v2") { "v2" } else { "v1" }.into());
    let root = match version.as_str() {
        "v1" => generator.into_root_schema_for::<v1::Root>(),
        #[cfg(feature = "v2")]
        "v2" => generator.into_root_schema_for::<v2::Root>(),
        other => {
            eprintln!("acp-schema-from-crate: no version {other:?} in this build (v1, or v2 with feature v2)");
            std::process::exit(2);
        }
    };
    let mut value = published_order(root.to_value());
    link_pages(&mut value, &version);
    let mut text = serde_json::to_string_pretty(&value).expect("a JSON value prints");
    text.push('\n');
    std::io::stdout().lock().write_all(text.as_bytes()).expect("stdout is writable");
}
