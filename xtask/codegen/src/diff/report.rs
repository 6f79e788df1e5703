//! What the differ finds: a [`Report`] of [`Finding`]s, each with its [`Rule`] and [`Severity`].
//! The comparison makes them; `render` prints them.

use std::fmt;

/// How much a finding matters, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Only a description changed.
    Docs,
    /// A compatible change: an addition, a wider acceptance, a type reaching stability.
    Info,
    /// Wire-compatible but not harmless: Rust code built on `acp-types` stops compiling, lenient
    /// decoding now drops or defaults a value, or a receiver repairs less than before.
    Warning,
    /// Some pairing of an old and a new peer no longer interoperates.
    Breaking,
}

impl Severity {
    /// The lowercase name used in every output format.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Docs => "docs",
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Breaking => "breaking",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! rules {
    ($($variant:ident = $id:literal: $summary:literal;)*) => {
        /// The kinds of finding. Ids are stable: scripts may match on them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $(#[doc = $summary] $variant,)*
        }

        impl Rule {
            /// Every rule, in documentation order.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant,)*];

            /// The stable kebab-case id.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }

            /// One line on what the rule reports and when it breaks.
            pub fn summary(self) -> &'static str {
                match self {
                    $(Rule::$variant => $summary,)*
                }
            }
        }
    };
}

rules! {
    MethodAdded = "method-added":
        "A new method. Info: old receivers answer -32601 (requests) or ignore it (notifications).";
    MethodRemoved = "method-removed":
        "A method is gone. Breaking: old senders → new receivers.";
    MethodRenamed = "method-renamed":
        "A method removed and one added with the same side, kind and wire shape. Breaking both ways.";
    MethodSideChanged = "method-side-changed":
        "The same method name is now handled by another side. Breaking both ways.";
    MethodKindChanged = "method-kind-changed":
        "A request became a notification or back. Breaking both ways.";
    TypeRenamed = "type-renamed":
        "A `$defs` type reached at the same place under another name. No wire change; warning: Rust source break.";
    TypeChanged = "type-changed":
        "A value's type changed to an unrelated one. Breaking both ways.";
    TypeWidened = "type-widened":
        "A value now accepts more (integer → number, a closed enum → string, anything → any). \
         Breaking: new senders → old receivers.";
    TypeNarrowed = "type-narrowed":
        "A value now accepts less. Breaking: old senders → new receivers.";
    RustTypeChanged = "rust-type-changed":
        "Same wire values, another Rust type (a newtype added or removed). Warning.";
    RequiredFieldAdded = "required-field-added":
        "A new field that must be present. Breaking: old senders → new receivers.";
    OptionalFieldAdded = "optional-field-added":
        "A new field that may be omitted. Info.";
    FieldRemoved = "field-removed":
        "A field is gone. Breaking (new senders → old receivers) if it was required, else a warning (Rust).";
    FieldBecameRequired = "field-became-required":
        "A field that could be omitted must now be present. Breaking: old senders → new receivers.";
    FieldBecameOptional = "field-became-optional":
        "A required field may now be omitted. Breaking: new senders → old receivers.";
    NullableChanged = "nullable-changed":
        "A field now admits `null` (breaking: new senders → old receivers) or no longer does (breaking: old \
         senders → new receivers).";
    DefaultChanged = "default-changed":
        "The value an omitted field stands for changed, appeared or disappeared. Warning: old and new receivers \
         read an omission differently.";
    LenientChanged = "lenient-changed":
        "`x-deserialize-*` changed: receivers repair more (info) or less (warning) instead of rejecting.";
    EnumValueAdded = "enum-value-added":
        "A new enum value. Breaking (new senders → old receivers) for a closed enum; info for an open one.";
    EnumValueRemoved = "enum-value-removed":
        "An enum value is gone. Breaking (old senders → new receivers) for a closed enum; warning for an open one.";
    EnumOpened = "enum-opened":
        "An enum or union gained a catch-all: new receivers accept any value. Info (warning if the Rust catch-all variant, added by the generator before, is renamed).";
    EnumClosed = "enum-closed":
        "An enum or union lost its catch-all. Breaking: old senders → new receivers.";
    VariantAdded = "variant-added":
        "A new union variant. Breaking (new senders → old receivers) unless old receivers have a catch-all.";
    VariantRemoved = "variant-removed":
        "A union variant is gone. Breaking (old senders → new receivers) unless new receivers have a catch-all.";
    VariantBodyChanged = "variant-body-changed":
        "A tagged variant gained or lost its payload. Breaking when the payload has required fields.";
    TagAdded = "tag-added":
        "A struct became a tagged variant of a union, or an untagged variant became tagged: values now carry a \
         tag. Breaking: old senders → new receivers (and new senders → old receivers of a union without a catch-all).";
    TagRemoved = "tag-removed":
        "Values lose their tag (the reverse of tag-added). Breaking: new senders → old receivers (and old senders \
         → new receivers of a union without a catch-all).";
    UnionTagChanged = "union-tag-changed":
        "A tagged union is told apart by another property. Breaking both ways.";
    StabilityChanged = "stability-changed":
        "An item lost (info: now stable) or gained (warning) the **UNSTABLE** marker in its description.";
    DocsChanged = "docs-changed":
        "Only a description changed.";
    StateAdded = "state-added":
        "A message gained `x-state` rules. Info: old clients that keep state leave it unapplied.";
    StateRemoved = "state-removed":
        "A message lost its `x-state` rules. Warning: new clients that keep state leave it unapplied.";
    StateChanged = "state-changed":
        "A message's `x-state` rules changed (action, target, id, field or value). Breaking: old clients that keep \
         state apply new agents' messages the old way.";
    ScopeChanged = "scope-changed":
        "A message's `x-scope` paths changed. Breaking (info when a scope is only added): old clients look for the \
         id where new agents no longer put it.";
}

/// One change, as the outputs show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind of change; its id is the JSON `id`.
    pub rule: Rule,
    /// The most severe outcome over every direction and method that carries the change.
    pub severity: Severity,
    /// Who sends the changed value to whom, e.g. `client → agent`; `agent ↔ client` when both.
    pub direction: String,
    /// The method the change is shown under: the one that reaches it by the shortest walk.
    pub method: String,
    /// Every method whose messages carry the changed value.
    pub methods: Vec<String>,
    /// The type and member, e.g. `PromptRequest.messageId` or `StopReason::refusal`; empty for
    /// a change to the method itself.
    pub location: String,
    /// What changed, in a sentence without the direction (that is in `breaks`).
    pub message: String,
    /// The old and new value of what changed (a type, a presence, a description…), if any.
    pub old: Option<String>,
    /// The new value.
    pub new: Option<String>,
    /// The pairings that no longer interoperate, e.g. `old clients → new agents`.
    pub breaks: Vec<String>,
    /// Pairings that would break but where the receiver's lenient decoding drops or defaults
    /// the value instead of rejecting the message.
    pub tolerated: Vec<String>,
    /// What happens to Rust code built on `acp-types`, when anything does.
    pub rust: Option<String>,
}

impl Finding {
    /// `session/prompt → PromptRequest.messageId`.
    pub fn path(&self) -> String {
        if self.location.is_empty() {
            self.method.clone()
        } else {
            format!("{} → {}", self.method, self.location)
        }
    }
}

/// The comparison of two revisions.
#[derive(Debug, Clone)]
pub struct Report {
    /// Where the old revision came from, as given (`schema/v1/schema.json`, `HEAD:…`).
    pub old: String,
    /// Where the new revision came from.
    pub new: String,
    /// Sorted: most severe first, then by method and location.
    pub findings: Vec<Finding>,
    /// `$defs` types that no method reaches, so they were not compared.
    pub unreachable_old: Vec<String>,
    /// The same for the new revision.
    pub unreachable_new: Vec<String>,
}

impl Report {
    /// How many findings have this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings.iter().filter(|f| f.severity == severity).count()
    }

    /// Whether any finding is at least as severe as `threshold`.
    pub fn reaches(&self, threshold: Severity) -> bool {
        self.findings.iter().any(|f| f.severity >= threshold)
    }
}
