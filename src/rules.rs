//! The protocol's rules beyond what the JSON Schemas check: lifecycle, ordering, capability
//! gating, JSON-RPC hygiene. One table, one row per rule: its id, its tier, the side it binds
//! (the sender whose behaviour it judges), the exchange it can be broken in (any connection, a
//! proxy's, MCP over ACP), the versions it applies to, and the sentence it comes from. The runtime
//! keeps the rules it can for its users and names their ids in its errors; the `acp` tool
//! (`acp-tool`) judges traffic against them and `acp conform` reports them one per line.
//!
//! The `tck` column names the requirements of the official conformance kit
//! (`agentclientprotocol/acp-tck`, `src/tck/v1/requirements.py`, `src/tck/v2/requirements.py`)
//! that a rule matches; ids, tiers and wording there are facts cited, not code reused.

use acp_types::support::rpc::Role;
use acp_types::{MethodName, Version};
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// How strong a rule is (RFC 2119).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Tier {
    /// MUST / MUST NOT: a violation makes the message an error.
    Must,
    /// SHOULD / SHOULD NOT: a violation is a warning-level finding.
    Should,
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Tier::Must => "MUST",
            Tier::Should => "SHOULD",
        })
    }
}

/// The side whose behaviour a rule judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Binds {
    /// Only the agent.
    Agent,
    /// Only the client.
    Client,
    /// Whichever side sends (or answers) the message.
    Both,
}

impl Binds {
    /// Whether the rule can be broken by `role`.
    pub fn binds(self, role: Role) -> bool {
        matches!((self, role), (Binds::Both, _) | (Binds::Agent, Role::Agent) | (Binds::Client, Role::Client))
    }
}

impl fmt::Display for Binds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Binds::Agent => "agent",
            Binds::Client => "client",
            Binds::Both => "both",
        })
    }
}

/// What exchange a rule can be broken in: any connection, or only one that composition puts in
/// play. A tool that drives a plain agent (`acp conform`) leaves the others out of its verdicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Any connection between a client and an agent.
    Connection,
    /// Only a component run as a proxy (`proxy/initialize`), or its `proxy/successor` envelopes.
    Proxy,
    /// Only MCP over ACP: servers declared with `{"type": "acp"}`, and `mcp/message`.
    Mcp,
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scope::Connection => "connection",
            Scope::Proxy => "proxy",
            Scope::Mcp => "mcp",
        })
    }
}

/// One rule of the protocol.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, `area.name` on the wire (`turn.v1-cancelled`).
    pub id: RuleId,
    /// MUST or SHOULD.
    pub tier: Tier,
    /// The side it judges.
    pub binds: Binds,
    /// The exchange it can be broken in.
    pub scope: Scope,
    /// The protocol versions it applies to.
    pub versions: &'static [Version],
    /// The sentence it comes from, quoted (or, marked so, what it is derived from).
    pub sentence: &'static str,
    /// Where the sentence is: a JSON pointer into a schema, or a page of the protocol's docs.
    pub source: &'static str,
    /// The acp-tck requirement ids it matches.
    pub tck: &'static [&'static str],
}

impl Rule {
    /// Whether the rule applies to `version`.
    pub fn applies_to(&self, version: Version) -> bool {
        self.versions.contains(&version)
    }
}

const BOTH: &[Version] = &[Version::V1, Version::V2];
const V1: &[Version] = &[Version::V1];
const V2: &[Version] = &[Version::V2];

/// Declares [`RuleId`]: each rule's variant and its wire id, once.
macro_rules! rule_ids {
    ($($(#[$doc:meta])* $variant:ident = $id:literal,)*) => {
        /// The id of a rule of [`RULES`], `area.name` on the wire (`turn.v1-cancelled`): in the
        /// runtime's errors (`data.rule`), in `acp check` and `acp conform` reports. Ordered as
        /// its wire id is, so what is sorted by id reads alphabetically.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum RuleId {
            $($(#[$doc])* $variant,)*
        }

        impl RuleId {
            /// Every id, in the order they are declared.
            pub const ALL: &'static [RuleId] = &[$(RuleId::$variant,)*];

            /// The id on the wire (`rpc.json-only`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                }
            }
        }
    };
}

rule_ids! {
    /// `rpc.json-only`: a MUST that binds both ends.
    JsonOnly = "rpc.json-only",
    /// `rpc.unique-ids`: a MUST that binds both ends.
    UniqueIds = "rpc.unique-ids",
    /// `rpc.v1-unique-ids`: a SHOULD that binds both ends.
    V1UniqueIds = "rpc.v1-unique-ids",
    /// `rpc.response-to-pending`: a MUST that binds both ends.
    ResponseToPending = "rpc.response-to-pending",
    /// `rpc.no-response-to-notification`: a MUST that binds both ends.
    NoResponseToNotification = "rpc.no-response-to-notification",
    /// `rpc.reply`: a MUST that binds both ends (the receiver of a request).
    Reply = "rpc.reply",
    /// `schema.valid`: a MUST that binds both ends.
    SchemaValid = "schema.valid",
    /// `rpc.method-not-found`: a SHOULD that binds both ends.
    MethodNotFound = "rpc.method-not-found",
    /// `rpc.parse-error`: a SHOULD that binds the agent.
    ParseError = "rpc.parse-error",
    /// `ext.underscore`: a SHOULD that binds both ends.
    Underscore = "ext.underscore",
    /// `init.first`: a MUST that binds the client.
    InitFirst = "init.first",
    /// `init.refuse-before-initialize`: a SHOULD that binds the agent.
    InitRefuseEarly = "init.refuse-before-initialize",
    /// `init.once`: a SHOULD that binds the client.
    InitOnce = "init.once",
    /// `init.version`: a MUST that binds the agent.
    InitVersion = "init.version",
    /// `session.distinct-ids`: a MUST that binds the agent.
    DistinctSessions = "session.distinct-ids",
    /// `cap.session`: a MUST that binds the client.
    CapSession = "cap.session",
    /// `cap.load-session`: a MUST that binds the client.
    CapLoadSession = "cap.load-session",
    /// `cap.client-fs`: a MUST that binds the agent.
    CapClientFs = "cap.client-fs",
    /// `cap.client-terminal`: a MUST that binds the agent.
    CapClientTerminal = "cap.client-terminal",
    /// `cap.prompt-content`: a MUST that binds the client.
    CapPromptContent = "cap.prompt-content",
    /// `turn.v1-updates-before-response`: a MUST that binds the agent.
    V1UpdatesBeforeResponse = "turn.v1-updates-before-response",
    /// `turn.v1-cancelled`: a MUST that binds the agent.
    V1Cancelled = "turn.v1-cancelled",
    /// `turn.cancel-permission`: a MUST that binds the client.
    CancelPermission = "turn.cancel-permission",
    /// `perm.offered-option`: a SHOULD that binds the client.
    PermissionOfferedOption = "perm.offered-option",
    /// `turn.v2-running-idle`: a MUST that binds the agent.
    V2RunningIdle = "turn.v2-running-idle",
    /// `turn.v2-stop-reason`: a SHOULD that binds the agent.
    V2StopReason = "turn.v2-stop-reason",
    /// `turn.v2-user-message`: a SHOULD that binds the agent.
    V2UserMessage = "turn.v2-user-message",
    /// `turn.v2-cancelled`: a MUST that binds the agent.
    V2Cancelled = "turn.v2-cancelled",
    /// `session.v2-resume-state`: a MUST that binds the agent.
    V2ResumeState = "session.v2-resume-state",
    /// `session.load-replay`: a MUST that binds the agent.
    LoadReplay = "session.load-replay",
    /// `cap.serves-load`: a SHOULD that binds the agent.
    ServesLoad = "cap.serves-load",
    /// `cap.serves-list`: a SHOULD that binds the agent.
    ServesList = "cap.serves-list",
    /// `cap.serves-resume`: a SHOULD that binds the agent.
    ServesResume = "cap.serves-resume",
    /// `cap.serves-close`: a SHOULD that binds the agent.
    ServesClose = "cap.serves-close",
    /// `cap.serves-fork`: a SHOULD that binds the agent.
    ServesFork = "cap.serves-fork",
    /// `cap.serves-set-mode`: a SHOULD that binds the agent.
    ServesSetMode = "cap.serves-set-mode",
    /// `cap.serves-config-option`: a SHOULD that binds the agent.
    ServesConfigOption = "cap.serves-config-option",
    /// `cap.v2-serves-config-option`: a MUST that binds the agent.
    V2ServesConfigOption = "cap.v2-serves-config-option",
    /// `cap.client-serves-fs`: a SHOULD that binds the client.
    ClientServesFs = "cap.client-serves-fs",
    /// `cap.client-serves-terminal`: a SHOULD that binds the client.
    ClientServesTerminal = "cap.client-serves-terminal",
    /// `cap.serves-image`: a SHOULD that binds the agent.
    ServesImage = "cap.serves-image",
    /// `cap.serves-audio`: a SHOULD that binds the agent.
    ServesAudio = "cap.serves-audio",
    /// `cap.serves-embedded-context`: a SHOULD that binds the agent.
    ServesEmbeddedContext = "cap.serves-embedded-context",
    /// `proxy.forward-initialize`: a MUST that binds the agent (a proxy is the agent of its predecessor).
    ProxyForwardInitialize = "proxy.forward-initialize",
    /// `proxy.same-version`: a MUST that binds the agent (the proxy answering `proxy/initialize`).
    ProxySameVersion = "proxy.same-version",
    /// `proxy.successor-params`: a MUST that binds both ends (whoever sends a `proxy/successor`).
    ProxySuccessorParams = "proxy.successor-params",
    /// `mcp.one-outcome`: a SHOULD that binds the client (the provider answering `mcp/message`).
    McpOneOutcome = "mcp.one-outcome",
    /// `mcp.distinct-server-ids`: a MUST that binds the client (the provider declaring servers).
    McpDistinctServerIds = "mcp.distinct-server-ids",
    /// `mcp.declared-server`: a SHOULD that binds the agent (the consumer sending `mcp/message`).
    McpDeclaredServer = "mcp.declared-server",
    /// `mcp.active-request`: a SHOULD that binds the client (the provider notifying the consumer).
    McpActiveRequest = "mcp.active-request",
}

impl RuleId {
    /// The id whose wire form is `id`, if a rule has it.
    pub fn parse(id: &str) -> Option<RuleId> {
        RuleId::ALL.iter().copied().find(|rule| rule.as_str() == id)
    }

    /// Its row of [`RULES`].
    pub fn rule(self) -> &'static Rule {
        // Every id has a row: `every_id_has_one_row` checks it.
        RULES.iter().find(|rule| rule.id == self).unwrap_or_else(|| unreachable!("{self} has no row in RULES"))
    }
}

impl fmt::Display for RuleId {
    /// The wire id, padded as the format asks (`{:<width$}` lines up a report's columns).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

/// A string that is no rule's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRule(pub String);

impl fmt::Display for UnknownRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no rule has the id {:?} (see acp_rpc::rules::RULES)", self.0)
    }
}

impl std::error::Error for UnknownRule {}

impl FromStr for RuleId {
    type Err = UnknownRule;

    fn from_str(id: &str) -> Result<Self, Self::Err> {
        RuleId::parse(id).ok_or_else(|| UnknownRule(id.to_string()))
    }
}

/// Every rule, in the order reports list them.
pub static RULES: &[Rule] = &[
    Rule {
        id: RuleId::JsonOnly,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "The agent MUST NOT write anything to its stdout that is not a valid ACP message. \
                   The client MUST NOT write anything to the agent's stdin that is not a valid ACP message. \
                   (Each line one JSON-RPC 2.0 message.)",
        source: "agentclientprotocol.com/protocol/v1/transports#stdio, /protocol/v2/transports#stdio",
        tck: &["ACP-TRANSPORT-001", "ACP-TRANSPORT-201"],
    },
    Rule {
        id: RuleId::UniqueIds,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: V2,
        sentence: "A sender MUST NOT reuse an ID while a request with it is still awaiting a response.",
        source: "schema/v2/schema.json#/$defs/RequestId",
        tck: &[],
    },
    Rule {
        id: RuleId::V1UniqueIds,
        // v1 has no sentence against reuse; JSON-RPC's only says the reply carries the same id,
        // which cannot tell two pending requests with one id apart: a SHOULD, derived.
        tier: Tier::Should,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: V1,
        sentence: "(Derived) The Server MUST reply with the same value in the Response object if included. This \
                   member is used to correlate the context between the two objects. (A sender that reuses an id \
                   while a request with it is pending makes the answers impossible to correlate.)",
        source: "schema/v1/schema.json#/$defs/RequestId; jsonrpc.org/specification#request_object",
        tck: &[],
    },
    Rule {
        id: RuleId::ResponseToPending,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence:
            "id: This member is REQUIRED. It MUST be the same as the value of the id member in the Request Object.",
        source: "jsonrpc.org/specification#response_object",
        tck: &["ACP-JSONRPC-001"],
    },
    Rule {
        id: RuleId::NoResponseToNotification,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "The Server MUST NOT reply to a Notification, including those that are within a batch request.",
        source: "jsonrpc.org/specification#notification; agentclientprotocol.com/protocol/v2/transports",
        tck: &["ACP-JSONRPC-003", "ACP-CANCEL-205", "ACP-BATCH-202"],
    },
    Rule {
        id: RuleId::SchemaValid,
        // The schema is what "a valid ACP message" means: a message that does not decode under the
        // negotiated version's schema (a missing required field, a wrong type, a notification
        // sent as a request) is not one. Unknown members and values are forward compatibility,
        // not invalidity (`lossy`, `ext.underscore`).
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "The agent MUST NOT write anything to its stdout that is not a valid ACP message. \
                   The client MUST NOT write anything to the agent's stdin that is not a valid ACP message. \
                   (Valid: as the negotiated version's JSON Schema defines the message.)",
        source: "schema/v1/schema.json, schema/v2/schema.json (the message's `$defs`); \
                 agentclientprotocol.com/protocol/v1/transports#stdio",
        tck: &[],
    },
    Rule {
        id: RuleId::Reply,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "When a rpc call is made, the Server MUST reply with a Response, except for in the case of \
                   Notifications.",
        source: "jsonrpc.org/specification#response_object",
        tck: &[],
    },
    Rule {
        id: RuleId::MethodNotFound,
        tier: Tier::Should,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "If the receiving end doesn't recognize the custom method name, it should respond with the \
                   standard \"Method not found\" error. (-32601: The method does not exist or is not available.)",
        source:
            "agentclientprotocol.com/protocol/v1/extensibility#custom-requests; schema/v2/schema.json#/$defs/ErrorCode",
        tck: &["ACP-JSONRPC-004", "ACP-EXT-001"],
    },
    Rule {
        id: RuleId::ParseError,
        // JSON-RPC 2.0 defines -32700 with `id: null` for invalid JSON, but a line that is not JSON
        // cannot be shown to be a call (which alone MUST be answered), and the kit only records
        // what agents do (ACP-INFO-PARSE-001: reference SDKs differ): a SHOULD.
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "-32700 Parse error: Invalid JSON was received by the server. [...] If there was an error in \
                   detecting the id in the Request object (e.g. Parse error/Invalid Request), it MUST be Null.",
        source: "jsonrpc.org/specification#error_object (5.1), #response_object",
        tck: &["ACP-INFO-PARSE-001"],
    },
    Rule {
        id: RuleId::Underscore,
        // An unprefixed unknown value may come from a newer revision of the schema ("reserved for
        // future ACP variants"): a finding, not an error.
        tier: Tier::Should,
        binds: Binds::Both,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Values beginning with `_` are reserved for implementation-specific extensions. Unknown \
                   values that do not begin with `_` are reserved for future ACP variants. (Custom methods \
                   are named with a leading `_`.)",
        source: "schema/v2/schema.json#/$defs/IdleStateUpdate/anyOf/6 (and every `other` variant); \
                 agentclientprotocol.com/protocol/v2/extensibility",
        tck: &["ACP-STATE-203", "ACP-CANCEL-207", "ACP-ENUM-201", "ACP-ENUM-202", "ACP-CLIENTCAP-202"],
    },
    Rule {
        id: RuleId::InitFirst,
        // The sentence's subject is the client; nothing obliges an agent to refuse (see
        // `init.refuse-before-initialize`).
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Before a Session can be created, Clients MUST initialize the connection by calling the \
                   initialize method. / Before creating a session, Clients MUST first complete the \
                   initialization phase to establish protocol compatibility and capabilities.",
        source: "agentclientprotocol.com/protocol/v1/initialization; /protocol/v1/session-setup",
        tck: &["ACP-INIT-001"],
    },
    Rule {
        id: RuleId::InitRefuseEarly,
        // No sentence binds the agent here: several production agents answer `session/new` before
        // `initialize`. A finding, never an error.
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "(Derived) Clients and Agents MUST agree on a protocol version and act according to its \
                   specification. (Before `initialize` no version is agreed, so an agent answers a request sent \
                   before it with an error rather than a result.)",
        source: "agentclientprotocol.com/protocol/v1/initialization#protocol-version",
        tck: &["ACP-INIT-001"],
    },
    Rule {
        id: RuleId::InitOnce,
        // No sentence says "once"; a second `initialize` would renegotiate version and
        // capabilities mid-connection, which nothing in the protocol provides for.
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "(Derived) `initialize` negotiates the connection's protocol version and capabilities; \
                   it is sent at most once per connection.",
        source: "agentclientprotocol.com/protocol/v1/initialization, /protocol/v2/initialization",
        tck: &[],
    },
    Rule {
        id: RuleId::InitVersion,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "If the Agent supports the requested version, it MUST respond with the same version. Otherwise, \
                   the Agent MUST respond with the latest version it supports. / The highest protocol version \
                   supported by the agent that is at or below the version requested by the client. If no such \
                   version exists, initialization fails with error code -32022.",
        source: "agentclientprotocol.com/protocol/v1/initialization#protocol-version; \
                 schema/v2/schema.json#/$defs/InitializeResponse/properties/protocolVersion",
        tck: &["ACP-INIT-002", "ACP-INIT-003", "ACP-INIT-201", "ACP-INIT-202"],
    },
    Rule {
        id: RuleId::DistinctSessions,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "The Agent MUST respond with a unique Session ID that identifies this conversation.",
        source: "agentclientprotocol.com/protocol/v1/session-setup#creating-a-session",
        tck: &["ACP-SESSION-002"],
    },
    Rule {
        id: RuleId::CapSession,
        // Binds the caller: no sentence stops an agent from serving what it did not advertise.
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: V2,
        sentence: "Omitted and `null` are equivalent and mean the agent does not support the `session/*` \
                   methods. / Clients and Agents MUST treat all capabilities omitted in the initialize request \
                   as UNSUPPORTED.",
        source: "schema/v2/schema.json#/$defs/AgentCapabilities/properties/session; \
                 agentclientprotocol.com/protocol/v2/initialization#capabilities",
        tck: &["ACP-SESSION-001"],
    },
    Rule {
        id: RuleId::CapLoadSession,
        // Binds the caller: no sentence stops an agent from serving what it did not advertise.
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: V1,
        sentence: "If `loadSession` is `false` or not present, the Agent does not support loading sessions and \
                   Clients MUST NOT attempt to call `session/load`.",
        source: "agentclientprotocol.com/protocol/v1/session-setup#checking-support",
        tck: &["ACP-LOAD-001"],
    },
    Rule {
        id: RuleId::CapClientFs,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "If `readTextFile` or `writeTextFile` is `false` or not present, the Agent MUST NOT attempt to \
                   call the corresponding filesystem method.",
        source: "agentclientprotocol.com/protocol/v1/file-system#checking-support",
        tck: &["ACP-CLIENTCAP-001"],
    },
    Rule {
        id: RuleId::CapClientTerminal,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "Whether the Client support all `terminal/*` methods. / Clients and Agents MUST treat all \
                   capabilities omitted in the initialize request as UNSUPPORTED.",
        source: "schema/v1/schema.json#/$defs/ClientCapabilities/properties/terminal; \
                 agentclientprotocol.com/protocol/v1/initialization#capabilities",
        tck: &["ACP-CLIENTCAP-002"],
    },
    Rule {
        id: RuleId::CapPromptContent,
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "As a baseline, the Agent MUST support `text` and `resource_link` content blocks, while other \
                   variants are optionally enabled via `PromptCapabilities`. The Client MUST adapt its \
                   interface according to `PromptCapabilities`.",
        source: "schema/v2/schema.json#/$defs/PromptRequest/properties/prompt",
        tck: &["ACP-PROMPTCAP-001", "ACP-PROMPTCAP-002", "ACP-PROMPTCAP-003"],
    },
    Rule {
        id: RuleId::V1UpdatesBeforeResponse,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "The Agent MAY send `session/update` notifications with content or tool call updates after \
                   receiving the `session/cancel` notification, but it MUST ensure that it does so before \
                   responding to the `session/prompt` request.",
        source: "agentclientprotocol.com/protocol/v1/prompt-turn#cancellation",
        tck: &["ACP-CANCEL-002"],
    },
    Rule {
        id: RuleId::V1Cancelled,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "This stop reason MUST be returned when the client sends a `session/cancel` notification, \
                   even if the cancellation causes exceptions in underlying operations.",
        source: "schema/v1/schema.json#/$defs/StopReason/oneOf/4",
        tck: &["ACP-CANCEL-001"],
    },
    Rule {
        id: RuleId::CancelPermission,
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "When a client sends a `session/cancel` notification to cancel an ongoing prompt turn, it MUST \
                   respond to all pending `session/request_permission` requests with this `cancelled` outcome. \
                   / The client answers a request the agent cancels with `$/cancel_request` with this outcome.",
        source: "schema/v1/schema.json#/$defs/RequestPermissionOutcome/oneOf/0; \
                 schema/v2/schema.json#/$defs/RequestPermissionOutcome/anyOf/0",
        tck: &[],
    },
    Rule {
        id: RuleId::PermissionOfferedOption,
        // Said of the outcome, without a keyword: a finding.
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "The user selected one of the provided options. [optionId:] The ID of the option the user \
                   selected.",
        source: "schema/v1/schema.unstable.json#/$defs/SelectedPermissionOutcome, \
                 #/$defs/RequestPermissionOutcome/oneOf/1; \
                 schema/v2/schema.unstable.json#/$defs/SelectedPermissionOutcome, \
                 #/$defs/RequestPermissionOutcome/anyOf/1",
        tck: &[],
    },
    Rule {
        id: RuleId::V2RunningIdle,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "The agent MUST report `running` when foreground work starts, or `requires_action` if it starts \
                   blocked on user action, and `idle` when it ends.",
        source: "schema/v2/schema.json#/$defs/StateUpdate",
        tck: &["ACP-STATE-201", "ACP-STATE-202"],
    },
    Rule {
        id: RuleId::V2StopReason,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "Agents SHOULD include a `stopReason` when the idle transition ends foreground work.",
        source: "schema/v2/schema.json#/$defs/IdleStateUpdate",
        tck: &["ACP-STATE-203"],
    },
    Rule {
        id: RuleId::V2UserMessage,
        // "must" in lower case, where the schema writes its requirements as MUST: not a keyword.
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "The corresponding user-message session update carries this same identifier and may arrive \
                   before or after this response. Agents must echo the message during the live session.",
        source: "schema/v2/schema.json#/$defs/PromptResponse/properties/messageId",
        tck: &["ACP-PROMPT-203"],
    },
    Rule {
        id: RuleId::V2ResumeState,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "The agent MUST send a current `state_update` after any requested history replay and before \
                   this response, even without replay.",
        source: "schema/v2/schema.json#/$defs/ResumeSessionResponse",
        tck: &[],
    },
    Rule {
        id: RuleId::V2Cancelled,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "Agents MUST report this stop reason on an idle `state_update` when cancellation ends active \
                   foreground work, even if aborting causes exceptions.",
        source: "schema/v2/schema.json#/$defs/IdleStateUpdate/anyOf/4",
        tck: &["ACP-CANCEL-201", "ACP-CANCEL-203"],
    },
    // What an agent advertises, served (`acp conform` calls each advertised method once). The
    // capability sentences say what advertising means without an RFC 2119 keyword: a refusal is
    // a finding (SHOULD), not a MUST error; only `session/load`'s replay has MUSTs of its own.
    Rule {
        id: RuleId::LoadReplay,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "The Agent MUST replay the entire conversation to the Client in the form of `session/update` \
                   notifications (like `session/prompt`). [...] When all the conversation entries have been \
                   streamed to the Client, the Agent MUST respond to the original `session/load` request.",
        source: "agentclientprotocol.com/protocol/v1/session-setup#loading-sessions",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesLoad,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "Whether the agent supports `session/load`. / [Loading sessions] enables persistence across \
                   restarts and sharing sessions between different Client instances.",
        source: "schema/v1/schema.json#/$defs/AgentCapabilities/properties/loadSession; \
                 agentclientprotocol.com/protocol/v1/session-setup#loading-sessions",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesList,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Whether the agent supports `session/list`. [...] Supplying `{}` means the agent supports listing \
                   sessions. / Supplying `{}` means the agent supports the baseline session methods: \
                   `session/new`, `session/list`, `session/resume`, `session/close`, `session/prompt`, \
                   `session/cancel`, and `session/update`.",
        source: "schema/v1/schema.json#/$defs/SessionCapabilities/properties/list; \
                 schema/v2/schema.json#/$defs/AgentCapabilities/properties/session",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesResume,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Whether the agent supports `session/resume`. [...] Supplying `{}` means the agent supports \
                   resuming sessions. / Supplying `{}` means the agent supports the baseline session methods: \
                   [...] `session/resume` [...].",
        source: "schema/v1/schema.json#/$defs/SessionCapabilities/properties/resume; \
                 schema/v2/schema.json#/$defs/AgentCapabilities/properties/session",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesClose,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Whether the agent supports `session/close`. [...] Supplying `{}` means the agent supports \
                   closing sessions. / Supplying `{}` means the agent supports the baseline session methods: \
                   [...] `session/close` [...].",
        source: "schema/v1/schema.json#/$defs/SessionCapabilities/properties/close; \
                 schema/v2/schema.json#/$defs/AgentCapabilities/properties/session",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesFork,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "**UNSTABLE** [...] Whether the agent supports `session/fork`. [...] Supplying `{}` means the \
                   agent supports forking sessions.",
        source: "schema/v1/schema.unstable.json#/$defs/SessionCapabilities/properties/fork",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesSetMode,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "(Derived) Initial mode state if supported by the Agent / The set of modes and the one \
                   currently active. (An agent that lists modes serves `session/set_mode` to one of them.)",
        source: "schema/v1/schema.json#/$defs/NewSessionResponse/properties/modes; \
                 schema/v1/schema.json#/$defs/SessionModeState",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesConfigOption,
        // v1 has the method and the field but no keyword: a finding. v2's sentence is a MUST
        // (`cap.v2-serves-config-option`).
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V1,
        sentence: "Initial session configuration options if supported by the Agent.",
        source: "schema/v1/schema.json#/$defs/NewSessionResponse/properties/configOptions",
        tck: &[],
    },
    Rule {
        id: RuleId::V2ServesConfigOption,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: V2,
        sentence: "Agents MUST support this method for any session where they advertise config options.",
        source: "schema/v2/schema.json#/$defs/SetSessionConfigOptionRequest",
        tck: &[],
    },
    Rule {
        id: RuleId::ClientServesFs,
        // The client's twin of `cap.serves-*`. A client may refuse a path (outside its project,
        // say) with an error of its choice; only "method not found" (or no answer) refuses the
        // method it advertised.
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: V1,
        sentence: "[readTextFile:] Whether the Client supports `fs/read_text_file` requests. [writeTextFile:] \
                   Whether the Client supports `fs/write_text_file` requests.",
        source: "schema/v1/schema.json#/$defs/FileSystemCapabilities/properties/readTextFile, \
                 #/$defs/FileSystemCapabilities/properties/writeTextFile",
        tck: &[],
    },
    Rule {
        id: RuleId::ClientServesTerminal,
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Connection,
        versions: V1,
        sentence: "Whether the Client support all `terminal/*` methods.",
        source: "schema/v1/schema.json#/$defs/ClientCapabilities/properties/terminal",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesImage,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Agent supports `image` content blocks. [...] Supplying `{}` means the agent supports image \
                   content in prompts.",
        source: "schema/v1/schema.json#/$defs/PromptCapabilities/properties/image; \
                 schema/v2/schema.json#/$defs/PromptCapabilities/properties/image",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesAudio,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Agent supports `audio` content blocks. [...] Supplying `{}` means the agent supports audio \
                   content in prompts.",
        source: "schema/v1/schema.json#/$defs/PromptCapabilities/properties/audio; \
                 schema/v2/schema.json#/$defs/PromptCapabilities/properties/audio",
        tck: &[],
    },
    Rule {
        id: RuleId::ServesEmbeddedContext,
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Connection,
        versions: BOTH,
        sentence: "Agent supports embedded context in `session/prompt` requests. When enabled, the Client is \
                   allowed to include `resource` content blocks in prompt requests for pieces of context that \
                   are referenced in the message.",
        source: "schema/v1/schema.json#/$defs/PromptCapabilities/properties/embeddedContext; \
                 schema/v2/schema.json#/$defs/PromptCapabilities/properties/embeddedContext",
        tck: &[],
    },
    // Composition (unstable in both versions): proxies and MCP over ACP. On a proxy's connection
    // the proxy is the agent of its predecessor (the conductor); inside `proxy/successor`
    // envelopes it is the client of its successor, and the rules below bind it in that role.
    Rule {
        id: RuleId::ProxyForwardInitialize,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Proxy,
        versions: BOTH,
        sentence: "A conductor sends `proxy/initialize` instead of `initialize` to every component that has a \
                   successor, which tells the component to run as a proxy. [...] Before answering successfully, \
                   the proxy MUST forward an `initialize` request to its successor through `proxy/successor`.",
        source: "schema/v1/schema.unstable.json#/$defs/InitializeProxyRequest; \
                 schema/v2/schema.unstable.json#/$defs/InitializeProxyRequest",
        tck: &[],
    },
    Rule {
        id: RuleId::ProxySameVersion,
        tier: Tier::Must,
        binds: Binds::Agent,
        scope: Scope::Proxy,
        versions: BOTH,
        sentence: "The same as the `initialize` response. The proxy builds it from its successor's `initialize` \
                   response and answers with the capabilities of the chain from itself onward. It MUST NOT change \
                   `protocolVersion`.",
        source: "schema/v1/schema.unstable.json#/$defs/InitializeProxyResponse; \
                 schema/v2/schema.unstable.json#/$defs/InitializeProxyResponse",
        tck: &[],
    },
    Rule {
        id: RuleId::ProxySuccessorParams,
        tier: Tier::Must,
        binds: Binds::Both,
        scope: Scope::Proxy,
        versions: BOTH,
        sentence: "Params of the wrapped request, forwarded unchanged. Optional. Omitted and `null` are equivalent \
                   and mean the wrapped request has no params. When present, it MUST be a JSON object or array, \
                   as JSON-RPC requires. (The same for the wrapped notification.)",
        source: "schema/v1/schema.unstable.json#/$defs/ProxySuccessorRequest/properties/params, \
                 #/$defs/ProxySuccessorNotification/properties/params (the same in schema/v2)",
        tck: &[],
    },
    Rule {
        id: RuleId::McpOneOutcome,
        // "must" in lower case, where the schema writes its requirements as MUST: not a keyword.
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Mcp,
        versions: BOTH,
        sentence: "The successful outer ACP `mcp/message` response carries exactly one inner MCP outcome: an \
                   opaque result (including JSON null), or an MCP error. [...] Both branches require their \
                   carrier key. An error must be a non-null object. [...] Senders must include exactly one \
                   outcome. Receivers prefer `result` if both are present.",
        source: "schema/v1/schema.unstable.json#/$defs/MessageMcpResponse; \
                 schema/v2/schema.unstable.json#/$defs/MessageMcpResponse",
        tck: &[],
    },
    Rule {
        id: RuleId::McpDistinctServerIds,
        tier: Tier::Must,
        binds: Binds::Client,
        scope: Scope::Mcp,
        versions: BOTH,
        sentence: "Unique identifier for this MCP server, generated by the component providing it. Providers MUST \
                   NOT reuse an ID for multiple ACP-transport MCP servers that are visible on the same ACP \
                   connection.",
        source: "schema/v1/schema.unstable.json#/$defs/McpServerAcp/properties/serverId; \
                 schema/v2/schema.unstable.json#/$defs/McpServerAcp/properties/serverId",
        tck: &[],
    },
    Rule {
        id: RuleId::McpDeclaredServer,
        // Said of the field, without a keyword: a finding.
        tier: Tier::Should,
        binds: Binds::Agent,
        scope: Scope::Mcp,
        versions: BOTH,
        sentence: "[serverId:] The declared ACP MCP server receiving this request. / [McpServerAcpId] is used by \
                   `mcp/message` to route requests to the component that declared the server.",
        source: "schema/v1/schema.unstable.json#/$defs/MessageMcpRequest/properties/serverId, \
                 #/$defs/McpServerAcpId (the same in schema/v2)",
        tck: &[],
    },
    Rule {
        id: RuleId::McpActiveRequest,
        // Said of the notification, without a keyword: a finding.
        tier: Tier::Should,
        binds: Binds::Client,
        scope: Scope::Mcp,
        versions: BOTH,
        sentence: "Sent by the provider to the consumer for an active request (including subscription \
                   acknowledgements and updates). / Notification for an active request, sent from provider to \
                   consumer. [requestId:] The identifier of the active inner MCP request.",
        source: "schema/v1/schema.unstable.json#/$defs/MessageMcpNotification; \
                 schema/v2/schema.unstable.json#/$defs/MessageMcpNotification",
        tck: &[],
    },
];

/// A v1 client capability that gates methods the agent calls (rules [`RuleId::CapClientFs`] and
/// [`RuleId::CapClientTerminal`]): which methods, which rule, and where the client advertises it. The
/// runtime refuses such a call the client did not advertise; `acp check` reports one. (v2 has no
/// client methods that a capability gates.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientGate {
    /// `fs/read_text_file`: `clientCapabilities.fs.readTextFile`.
    ReadTextFile,
    /// `fs/write_text_file`: `clientCapabilities.fs.writeTextFile`.
    WriteTextFile,
    /// `terminal/*`: `clientCapabilities.terminal`.
    Terminal,
}

impl ClientGate {
    /// The capability a v1 call of `method` to the client needs, if one gates it.
    pub fn of_v1(method: &str) -> Option<ClientGate> {
        use acp_types::MethodName::{
            TerminalCreate, TerminalKill, TerminalOutput, TerminalRelease, TerminalWaitForExit,
        };
        match MethodName::of(method)? {
            MethodName::FsReadTextFile => Some(ClientGate::ReadTextFile),
            MethodName::FsWriteTextFile => Some(ClientGate::WriteTextFile),
            TerminalCreate | TerminalOutput | TerminalWaitForExit | TerminalKill | TerminalRelease => {
                Some(ClientGate::Terminal)
            }
            _ => None,
        }
    }

    /// The rule that gates it.
    pub fn rule(self) -> RuleId {
        match self {
            ClientGate::ReadTextFile | ClientGate::WriteTextFile => RuleId::CapClientFs,
            ClientGate::Terminal => RuleId::CapClientTerminal,
        }
    }

    /// The rule that judges whether a client that advertised it serves it (`cap.client-serves-*`).
    pub fn serves_rule(self) -> RuleId {
        match self {
            ClientGate::ReadTextFile | ClientGate::WriteTextFile => RuleId::ClientServesFs,
            ClientGate::Terminal => RuleId::ClientServesTerminal,
        }
    }

    /// The capability's path in the `initialize` params (`clientCapabilities.fs.readTextFile`).
    pub fn capability(self) -> &'static str {
        match self {
            ClientGate::ReadTextFile => "clientCapabilities.fs.readTextFile",
            ClientGate::WriteTextFile => "clientCapabilities.fs.writeTextFile",
            ClientGate::Terminal => "clientCapabilities.terminal",
        }
    }
}

/// The rule whose id reads `id` (for a tool reading ids back; with a [`RuleId`], [`RuleId::rule`]).
pub fn find(id: &str) -> Option<&'static Rule> {
    RuleId::parse(id).map(RuleId::rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_named_area_dot_name() {
        let mut ids: Vec<&str> = RuleId::ALL.iter().map(|id| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RuleId::ALL.len());
        for rule in RULES {
            let id = rule.id.as_str();
            assert!(id.split_once('.').is_some_and(|(a, n)| !a.is_empty() && !n.is_empty()), "{id}");
            assert!(!rule.versions.is_empty() && !rule.sentence.is_empty() && !rule.source.is_empty(), "{id}");
        }
        assert_eq!(find("turn.v1-cancelled").map(|r| r.tier), Some(Tier::Must));
        assert!(find("no.such-rule").is_none());
    }

    #[test]
    fn every_id_has_one_row() {
        for id in RuleId::ALL {
            assert_eq!(RULES.iter().filter(|rule| rule.id == *id).count(), 1, "{id}");
        }
        assert_eq!(RULES.len(), RuleId::ALL.len());
    }

    #[test]
    fn an_id_reads_back_and_serializes_as_its_wire_string() {
        for id in RuleId::ALL {
            assert_eq!(id.as_str().parse::<RuleId>(), Ok(*id));
            assert_eq!(id.to_string(), id.as_str());
            assert_eq!(serde_json::to_value(id).ok(), Some(serde_json::Value::from(id.as_str())));
        }
        assert_eq!(RuleId::V1Cancelled.as_str(), "turn.v1-cancelled");
        assert_eq!(format!("[{:<12}]", RuleId::Reply), "[rpc.reply   ]");
        assert_eq!("no.such-rule".parse::<RuleId>(), Err(UnknownRule("no.such-rule".into())));
        assert!(RuleId::InitFirst < RuleId::JsonOnly, "ordered by the wire id");
    }

    #[test]
    fn composition_rules_have_their_scope() {
        for rule in RULES {
            let expected = match rule.id.as_str().split_once('.').map(|(area, _)| area) {
                Some("proxy") => Scope::Proxy,
                Some("mcp") => Scope::Mcp,
                _ => Scope::Connection,
            };
            assert_eq!(rule.scope, expected, "{}", rule.id);
        }
    }
}
