//! The protocol IR: what the generator knows about a protocol version, in a protocol engineer's
//! nouns. No JSON Schema keyword survives lowering; emitters and the differ read only this.

use crate::warning::Warning;
use serde_json::Value;

/// Index of a type in [`Protocol::types`]. Ids are reserved before conversion, so references can
/// point forward and cycles are fine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeId(pub usize);

/// A protocol revision: every type and method of one schema file (or of a stable/unstable pair,
/// once merged).
#[derive(Debug, Clone)]
pub struct Protocol {
    /// Where it came from, e.g. `schema/v1/schema.json` (or both files, once merged).
    pub source: String,
    /// Every type, indexed by [`TypeId`].
    pub types: Vec<TypeDef>,
    /// Every method, sorted by wire name.
    pub methods: Vec<Method>,
    /// What generated anyway (unknown annotations, requests without a response type), sorted by
    /// file and pointer.
    pub warnings: Vec<Warning>,
    /// The `x-state` / `x-scope` annotations, typed.
    pub state: StateModel,
}

impl Protocol {
    /// The type `id` names.
    pub fn get(&self, id: TypeId) -> &TypeDef {
        &self.types[id.0]
    }

    /// The type of this Rust name, if there is one.
    pub fn find(&self, name: &str) -> Option<TypeId> {
        self.types.iter().position(|t| t.name == name).map(TypeId)
    }
}

/// Which schema variant an item exists in, and so which feature settings include it: set by
/// `merge` (a single lowered file is all [`Stability::Stable`]). What the schema says of the item
/// is its [`Maturity`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stability {
    /// In the stable schema (and therefore in the unstable one).
    Stable,
    /// Only in `schema.unstable.json`: behind the `unstable` feature.
    Unstable,
    /// Only in the stable schema, replaced by something else in the unstable one: present when
    /// the `unstable` feature is off.
    StableOnly,
}

/// What the schema says of an item: part of the protocol, or marked **UNSTABLE** in its
/// description ("not part of the spec yet"). Read once, by lowering; the differ compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Maturity {
    /// Part of the protocol.
    Stable,
    /// Marked **UNSTABLE** in its description.
    Unstable,
}

/// Provenance shared by every named item.
#[derive(Debug, Clone, PartialEq)]
pub struct Origin {
    /// The name on the wire (property name, tag value, `$defs` key).
    pub wire: String,
    /// JSON pointer of the schema node it came from.
    pub pointer: String,
    /// Its description, as the schema writes it (none when it has none).
    pub docs: Option<String>,
    /// The `x-` keywords of its schema node the generator does not know, kept raw for later
    /// stages (`x-state`, `x-scope`: typed by a later issue).
    pub annotations: Vec<Annotation>,
}

/// An `x-` keyword the generator does not know, as the schema writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    /// The keyword, e.g. `x-state`.
    pub keyword: String,
    /// The keyword's value.
    pub value: Value,
    /// JSON pointer of the keyword itself (its node's pointer, then `/x-state`).
    pub pointer: String,
}

impl Origin {
    /// The raw value of an annotation of this item.
    pub fn annotation(&self, keyword: &str) -> Option<&Value> {
        self.annotations.iter().find(|a| a.keyword == keyword).map(|a| &a.value)
    }
}

/// A type of the protocol: a struct, newtype, enum or union, with its provenance.
#[derive(Debug, Clone)]
pub struct TypeDef {
    /// The Rust name (unique within a protocol, per stability).
    pub name: String,
    /// Where it came from.
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
    /// Declared in `$defs` (as opposed to named after its parent).
    pub named: bool,
    /// What it is.
    pub kind: TypeKind,
}

/// The kinds of [`TypeDef`].
#[derive(Debug, Clone, PartialEq)]
pub enum TypeKind {
    /// An object with named fields.
    Struct(Struct),
    /// A named scalar or collection (`SessionId`, `ProtocolVersion`, …).
    Newtype {
        /// The type it wraps.
        inner: TypeRef,
        /// Held through a `Box`: see [`Field::boxed`].
        boxed: bool,
    },
    /// A string enum. Always open: `catch_all` keeps any other string (the schema's plain-string
    /// branch, or one the generator adds; see [`CatchAllSource`]).
    StringEnum {
        /// The named values.
        values: Vec<EnumValue>,
        /// The variant keeping any other string.
        catch_all: CatchAll,
    },
    /// An integer enum (error codes). Always open: `catch_all` keeps any other integer.
    IntEnum {
        /// The Rust integer type holding the values.
        repr: IntKind,
        /// The named values.
        values: Vec<IntValue>,
        /// The variant keeping any other integer.
        catch_all: CatchAll,
    },
    /// A union of shapes, tagged or not.
    Union(Union),
    /// Any JSON value (the schema is `{}`), e.g. `ExtRequest`.
    Any,
}

/// A struct: named fields, optionally followed by a flattened union that owns the rest of the
/// object (objects with both `properties` and `anyOf`).
#[derive(Debug, Clone, PartialEq)]
pub struct Struct {
    /// The named fields, in the schema's order.
    pub fields: Vec<Field>,
    /// The union owning the properties the fields do not name.
    pub flatten: Option<Flatten>,
}

/// The flattened union of a [`Struct`] (`#[serde(flatten)]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Flatten {
    /// Rust field name.
    pub name: String,
    /// The union type.
    pub ty: TypeId,
    /// Held through a `Box`: see [`Field::boxed`].
    pub boxed: bool,
}

/// A field of a struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The Rust name (keyword-escaped, `r#type`).
    pub name: String,
    /// Where it came from; `origin.wire` is the property name.
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
    /// Its type.
    pub ty: TypeRef,
    /// Whether it may be omitted or `null`.
    pub presence: Presence,
    /// Where its decoding repairs instead of failing.
    pub lenient: Lenient,
    /// The value of `ty` (a named type) is held through a `Box`, because that type leads back to
    /// the one holding it without an array or a map in between: decided by lowering (and again by
    /// `merge`, which joins two graphs); emitters only read it.
    pub boxed: bool,
}

/// How a field may appear on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Presence {
    /// Must be present, never `null`.
    Required,
    /// Must be present, may be `null`.
    RequiredNullable,
    /// May be omitted, never `null`.
    Optional,
    /// May be omitted or `null`, and the two are distinct (patch semantics: omitted leaves a
    /// value unchanged, `null` clears it).
    Patch,
    /// May be omitted; the schema's default applies then.
    Defaulted(SchemaDefault),
}

impl Presence {
    /// The same on the wire: defaults compared as the schema writes them (the differ compares
    /// the fields of two protocols, whose typed defaults may name different Rust variants).
    pub fn same_on_wire(&self, other: &Presence) -> bool {
        match (self, other) {
            (Presence::Defaulted(a), Presence::Defaulted(b)) => a.json == b.json,
            (a, b) => a == b,
        }
    }
}

/// A schema `default`, typed by lowering against its field's type (a value that does not fit is
/// a schema error there); emitters only render it.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaDefault {
    /// The value as the schema writes it: what the differ shows and compares (two protocols'
    /// typed values name variants of different type graphs).
    pub json: Value,
    /// The default, typed against the field's type.
    pub value: DefaultValue,
}

/// Shown as the schema writes it.
impl std::fmt::Display for SchemaDefault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.json.fmt(f)
    }
}

/// A default value in the terms of the field's type. The kinds are those the ACP schemas use
/// (booleans, `[]`, `{}`, enum values, structs of those) and the other scalars.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// `null`: only as a field of a struct default, where that field may be null.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer in the range of the field's integer type.
    Int(i128),
    /// A floating-point number.
    Float(f64),
    /// A string (of a string field or newtype).
    String(String),
    /// `[]`.
    EmptyArray,
    /// `{}`, for an object or a map.
    EmptyObject,
    /// A value of a string enum: the Rust name of its variant.
    Variant(String),
    /// A string no value of the enum names, kept by the schema's catch-all: the catch-all's Rust
    /// name and the string. (A value only an added catch-all would keep is a bad default.)
    CatchAll {
        /// The catch-all's Rust name.
        variant: String,
        /// The string.
        value: String,
    },
    /// A struct: the fields given, by wire name, in the schema's order; the others take their
    /// own default (absent, or the field's default).
    Struct(Vec<(String, DefaultValue)>),
    /// The value of a newtype.
    Newtype(Box<DefaultValue>),
}

/// `x-deserialize-*`: where decoding repairs instead of failing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Lenient {
    /// `x-deserialize-default-on-error`: a value that does not decode becomes the default.
    pub default_on_error: bool,
    /// `x-deserialize-skip-invalid-items`: array items that do not decode are dropped.
    pub skip_invalid_items: bool,
    /// `x-deserialize-default-on-null`: `null` becomes the default.
    pub default_on_null: bool,
}

impl Lenient {
    /// Whether decoding repairs anything.
    pub fn any(&self) -> bool {
        self.default_on_error || self.skip_invalid_items || self.default_on_null
    }
}

/// A value of a string enum.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumValue {
    /// The Rust name of its variant.
    pub name: String,
    /// Where it came from; `origin.wire` is the string.
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
}

/// A value of an integer enum.
#[derive(Debug, Clone, PartialEq)]
pub struct IntValue {
    /// The Rust name of its variant.
    pub name: String,
    /// The integer.
    pub value: i64,
    /// Where it came from.
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
}

/// The variant of an enum that keeps an unknown value as received.
#[derive(Debug, Clone, PartialEq)]
pub struct CatchAll {
    /// The Rust name of the variant.
    pub name: String,
    /// Where it came from (the enum itself when the generator added it).
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
    /// Whether the schema declares it or the generator added it.
    pub source: CatchAllSource,
}

/// Where a catch-all comes from.
///
/// A peer built on a newer revision of the same protocol version may send a value the schema
/// does not list yet (a new `sessionUpdate`, a new `ToolKind`). Where the schema declares no
/// catch-all, lowering adds one, so that such a value is kept and written back unchanged instead
/// of failing the whole message. Emitted code records each value that only an added catch-all
/// keeps (`support::lenient::LenientEvent::NotInSchema`), so `acp check` can warn about it; the
/// differ ignores added catch-alls, because to other implementations the type is still closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CatchAllSource {
    /// A branch of the schema: a plain string (or integer) beside the constants, or a branch
    /// whose tag is a plain string. Named by its title (`Other` without one).
    Schema,
    /// Added by lowering to an enum or tagged union whose schema has no catch-all. Named
    /// `Other`, else `Unknown`, `Unknown2`, `Unknown3`, …: the first no sibling variant has (see
    /// `lower::catch_alls`).
    Generator,
}

impl CatchAllSource {
    /// Whether the schema declares the catch-all (as opposed to the generator adding it).
    pub fn declared(self) -> bool {
        self == CatchAllSource::Schema
    }
}

/// A union of shapes: tagged branches keyed by the tag's value, at most one catch-all for unknown
/// tags, and untagged branches tried in order when there is no tag.
///
/// A tagged union always has a catch-all, except when one of its untagged branches takes any JSON
/// value (nothing would reach it). A catch-all the schema declares takes any object whose tag is
/// a string no variant names, before the untagged branches; one the generator added
/// ([`CatchAllSource::Generator`]) is tried last, after them, so that every value a branch of the
/// schema accepts decodes as it did without it.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// The discriminating property, when any branch is tagged.
    pub tag: Option<String>,
    /// Lenient decoding of the tag itself, when the object declaring the union also declares the
    /// tag as a property with `x-deserialize-*` (v2 `IdleStateUpdate.stopReason`): a tag of the
    /// wrong type is then dropped and the untagged branches decide.
    pub tag_lenient: Lenient,
    /// The branches, in schema order (tagged, catch-all, untagged).
    pub variants: Vec<Variant>,
}

/// A branch of a [`Union`].
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// The Rust name of the variant.
    pub name: String,
    /// Where it came from; `origin.wire` is the tag value, or the branch's name.
    pub origin: Origin,
    /// Which schema files have it.
    pub stability: Stability,
    /// What the schema says of it.
    pub maturity: Maturity,
    /// How it is recognised, and what it holds.
    pub kind: VariantKind,
    /// The body (a named type) is held through a `Box`: see [`Field::boxed`].
    pub boxed: bool,
}

impl Variant {
    /// The type its value is held in, if it has one (a tag-only variant and a catch-all have none).
    pub fn body(&self) -> Option<&TypeRef> {
        match &self.kind {
            VariantKind::Tagged { body: Some(b), .. } | VariantKind::Untagged(b) => Some(b),
            VariantKind::Tagged { body: None, .. } | VariantKind::CatchAll(_) => None,
        }
    }
}

/// How a [`Variant`] is recognised on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum VariantKind {
    /// `tag == value`; the body is the rest of the object (`None`: nothing but the tag).
    Tagged {
        /// The tag's value.
        value: String,
        /// The body's type, if the object holds anything but the tag.
        body: Option<TypeRef>,
    },
    /// Any other tag value (a string): the whole object, tag included, kept as received.
    CatchAll(CatchAllSource),
    /// No tag: tried in schema order.
    Untagged(TypeRef),
}

/// A short description of a type reference for messages (`array of string`, `Mode`), the named
/// types looked up in `types`.
pub fn describe(types: &[TypeDef], r: &TypeRef) -> String {
    match r {
        TypeRef::Named(id) => types.get(id.0).map_or_else(|| format!("type #{}", id.0), |t| t.name.clone()),
        TypeRef::Array(inner) => format!("array of {}", describe(types, inner)),
        TypeRef::Map(inner) => format!("map of {}", describe(types, inner)),
        TypeRef::Int(_) => "integer".into(),
        TypeRef::Float(_) => "number".into(),
        TypeRef::Bool => "boolean".into(),
        TypeRef::String => "string".into(),
        TypeRef::Null => "null".into(),
        TypeRef::Object => "object".into(),
        TypeRef::Any | TypeRef::MethodKeyed => "any".into(),
    }
}

/// A reference to a type, as a field or item sees it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TypeRef {
    /// A type of the protocol.
    Named(TypeId),
    /// A string.
    String,
    /// A boolean.
    Bool,
    /// An integer, held in this Rust type.
    Int(IntKind),
    /// A number, held in this Rust type.
    Float(FloatKind),
    /// Only `null`.
    Null,
    /// Any JSON value.
    Any,
    /// An object with arbitrary keys (`_meta`).
    Object,
    /// An array of this type.
    Array(Box<TypeRef>),
    /// An object whose values all have one type (`additionalProperties: {schema}`).
    Map(Box<TypeRef>),
    /// A payload whose type depends on the method of the message carrying it (the `params` and
    /// `result` of the JSON-RPC envelopes): decoded through the method tables, raw JSON here.
    MethodKeyed,
}

/// The Rust integer type of an integer field or enum (from `format`, `minimum`, `maximum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IntKind {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
}

impl IntKind {
    /// The values the Rust integer type holds, smallest and largest.
    pub fn range(self) -> (i128, i128) {
        match self {
            IntKind::I8 => (i8::MIN.into(), i8::MAX.into()),
            IntKind::I16 => (i16::MIN.into(), i16::MAX.into()),
            IntKind::I32 => (i32::MIN.into(), i32::MAX.into()),
            IntKind::I64 => (i64::MIN.into(), i64::MAX.into()),
            IntKind::U8 => (0, u8::MAX.into()),
            IntKind::U16 => (0, u16::MAX.into()),
            IntKind::U32 => (0, u32::MAX.into()),
            IntKind::U64 => (0, u64::MAX.into()),
        }
    }

    /// The Rust integer type's name.
    pub fn rust_name(self) -> &'static str {
        match self {
            IntKind::I8 => "i8",
            IntKind::I16 => "i16",
            IntKind::I32 => "i32",
            IntKind::I64 => "i64",
            IntKind::U8 => "u8",
            IntKind::U16 => "u16",
            IntKind::U32 => "u32",
            IntKind::U64 => "u64",
        }
    }
}

/// The Rust type of a number (from `format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FloatKind {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

/// Request or notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MethodKind {
    /// It has an `id` and is answered.
    Request,
    /// It has no `id` and no answer.
    Notification,
}

/// The side of a method (`x-side`): its wire name, and which end of a connection receives it.
/// Decided once, by lowering; emitters and the differ read [`Side::receiver`] (the emitters
/// through [`Receiver::receives`] and [`Receiver::role`]).
///
/// Ordered by wire name (the receiver follows from it), which is the order of the generated sides.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Side {
    /// The `x-side` value: `agent`, `client`, `protocol`, `proxy`, or whatever a draft uses.
    pub wire: String,
    /// Who receives its methods, decided from `wire`.
    pub receiver: Receiver,
}

/// Who receives a method. The protocol has two ends, the agent and the client; a proxy may sit
/// between them (`proxy` methods).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Receiver {
    /// `agent`: the client sends it, the agent receives it.
    Agent,
    /// `client`: the agent sends it, the client receives it.
    Client,
    /// `protocol` (`$/cancel_request`) or `both`: it goes both ways, so either end receives it.
    Either,
    /// `proxy` (`proxy/successor`): a proxy between the two ends receives it, neither end does.
    Proxy,
    /// Any other `x-side` value: no end of the protocol, known only by its wire name.
    Other,
}

impl Receiver {
    /// Whether `recipient` receives the methods of this receiver: the agent those of `agent`,
    /// the client those of `client`, both ends those that go both ways, a proxy those of `proxy`,
    /// and no one those of any other side. A method implements the marker trait of each
    /// recipient that receives it ([`Recipient::marker_trait`]).
    pub fn receives(self, recipient: Recipient) -> bool {
        match self {
            Receiver::Agent => recipient == Recipient::Agent,
            Receiver::Client => recipient == Recipient::Client,
            Receiver::Either => matches!(recipient, Recipient::Agent | Recipient::Client),
            Receiver::Proxy => recipient == Recipient::Proxy,
            Receiver::Other => false,
        }
    }

    /// The recipients of its methods, in [`Recipient::ALL`] order.
    pub fn recipients(self) -> Vec<Recipient> {
        Recipient::ALL.into_iter().filter(|r| self.receives(*r)).collect()
    }

    /// The one end of a connection that receives its methods (the side's role), when exactly one
    /// does: none for methods that go both ways, to a proxy, or to no known recipient.
    pub fn role(self) -> Option<Recipient> {
        match self.recipients().as_slice() {
            [one] if one.role().is_some() => Some(*one),
            _ => None,
        }
    }
}

/// Who may receive a method, as the generated code names it: each has a marker trait in
/// `support::rpc` that the markers of the methods it receives implement. The agent and the client
/// are the two ends of a connection (`rpc::Role`); a proxy sits between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Recipient {
    /// The agent end.
    Agent,
    /// The client end.
    Client,
    /// A proxy between the two.
    Proxy,
}

impl Recipient {
    /// Every recipient, in the order of the marker traits (and of the generated test's checks).
    pub const ALL: [Recipient; 3] = [Recipient::Agent, Recipient::Client, Recipient::Proxy];

    /// The marker trait of the methods it receives (`rpc::ToAgent`, …).
    pub fn marker_trait(self) -> &'static str {
        match self {
            Recipient::Agent => "ToAgent",
            Recipient::Client => "ToClient",
            Recipient::Proxy => "ToProxy",
        }
    }

    /// The `rpc::Role` variant of an end of a connection; none for a proxy.
    pub fn role(self) -> Option<&'static str> {
        match self {
            Recipient::Agent => Some("Agent"),
            Recipient::Client => Some("Client"),
            Recipient::Proxy => None,
        }
    }
}

/// A JSON-RPC method, from `x-method`/`x-side`.
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    /// Wire name, e.g. `session/prompt`.
    pub name: String,
    /// The side that receives it.
    pub side: Side,
    /// Request or notification.
    pub kind: MethodKind,
    /// The params type.
    pub params: TypeId,
    /// The response type (requests only), matched by `x-method`, not by name.
    pub result: Option<TypeId>,
    /// Which schema files have it.
    pub stability: Stability,
    /// The params name the session the message acts on: their struct has a required property
    /// whose wire name is `sessionId` and whose value cannot be `null`. Decided by lowering
    /// (`session_scoped`), per file; `merge` keeps each file's answer, since the params of one
    /// method may name a session in one file only. Over Streamable HTTP, a POST of such a method
    /// the agent receives carries `Acp-Session-Id`.
    pub session_scoped: ByFeature<bool>,
    /// Its Rust names, decided in lowering (and again in merge, over the version's methods) by
    /// [`crate::naming::method_names`].
    pub rust: MethodNames,
    /// Where it was defined: the schema file and the JSON pointer of its `x-method` definition.
    pub origin: MethodOrigin,
}

/// The Rust names of a method.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MethodNames {
    /// Its marker type, unique in the version.
    pub marker: String,
    /// Its variant in its side's decoding enums, unique within its side and kind.
    pub variant: String,
    /// Its handler method (snake case, before keyword escaping), unique within its side.
    pub handler: String,
}

/// Where a method was defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodOrigin {
    /// The schema file, as shown in messages.
    pub file: String,
    /// The JSON pointer of the definition carrying `x-method`.
    pub pointer: String,
}

/// What a merged item says under each feature setting, where the two files may disagree while the
/// item stays one (a method whose params name a session in one file only). A single lowered file
/// says the same under both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ByFeature<T> {
    /// With the `unstable` feature off: what `schema.json` says.
    pub stable: T,
    /// With the `unstable` feature on: what `schema.unstable.json` says.
    pub unstable: T,
}

impl<T: Copy + PartialEq> ByFeature<T> {
    /// The same under both settings.
    pub fn both(value: T) -> Self {
        ByFeature { stable: value, unstable: value }
    }

    /// The value, when both settings agree on it.
    pub fn same(&self) -> Option<T> {
        (self.stable == self.unstable).then_some(self.stable)
    }
}

/// What the schema's `x-state` and `x-scope` annotations say, typed and checked against the types
/// they stand on (by `lower::state`, again after `merge`): how each message changes the state a
/// client keeps, and which ids scope a message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StateModel {
    /// Every rule, in the order of the types (then variants) carrying them.
    pub rules: Vec<StateRule>,
    /// The messages whose `x-state` is `{}`: they change no state.
    pub silent: Vec<StateSource>,
    /// The targets the rules write, by scope then name.
    pub targets: Vec<StateTarget>,
    /// The `x-scope` declarations.
    pub scopes: Vec<ScopeDecl>,
}

/// The message an annotation stands on: a type, or one variant of a union.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateSource {
    /// The type (the union, for a branch).
    pub ty: TypeId,
    /// The Rust name of the variant, for an annotation on a union's branch.
    pub variant: Option<String>,
    /// The tag value of that variant on the wire.
    pub tag: Option<String>,
    /// Which feature settings have it.
    pub stability: Stability,
}

/// `x-state`'s `action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StateAction {
    /// Add to one field of the entry.
    Append,
    /// Create the entry or patch it.
    Upsert,
    /// Write over the entry or one field of it.
    Replace,
    /// Drop the entry.
    Remove,
}

impl StateAction {
    /// The action the schema names (`append`, …); `None` for one this generator does not know.
    pub fn parse(s: &str) -> Option<StateAction> {
        Some(match s {
            "append" => StateAction::Append,
            "upsert" => StateAction::Upsert,
            "replace" => StateAction::Replace,
            "remove" => StateAction::Remove,
            _ => return None,
        })
    }

    /// The schema's name of the action.
    pub fn as_str(self) -> &'static str {
        match self {
            StateAction::Append => "append",
            StateAction::Upsert => "upsert",
            StateAction::Replace => "replace",
            StateAction::Remove => "remove",
        }
    }
}

/// A path of wire names through a message (`subject.toolCall.toolCallId`), outermost first.
pub type StatePath = Vec<String>;

/// One rule of `x-state`: `scope` → `{action, target, id, field, value}`.
#[derive(Debug, Clone, PartialEq)]
pub struct StateRule {
    /// The message it stands on.
    pub source: StateSource,
    /// `session`, `agent`, …: the state it changes.
    pub scope: String,
    /// What it does.
    pub action: StateAction,
    /// The target's name (`agentMessage`).
    pub target: String,
    /// Where the message carries the entry's id (empty: no id).
    pub id: StatePath,
    /// The field of the entry written (empty: the entry itself).
    pub field: StatePath,
    /// Where the message carries the value (empty: the whole message).
    pub value: StatePath,
    /// For an `append`: whether the field holds text (a string) rather than items (an array).
    pub appends_text: bool,
    /// JSON pointer of the rule (`…/x-state/session/0`).
    pub pointer: String,
}

/// A member of a generated state struct: one target of one scope.
#[derive(Debug, Clone, PartialEq)]
pub struct StateTarget {
    /// Its scope (`session`).
    pub scope: String,
    /// The schema's name of the target.
    pub name: String,
    /// Keyed by an id (a collection) rather than one value.
    pub keyed: bool,
    /// The type of an entry: the value of the first rule that writes whole entries (`None`: raw
    /// JSON, when no rule does).
    pub entry: Option<TypeRef>,
    /// Where an entry keeps its id, relative to the entry (empty when unknown).
    pub entry_id: StatePath,
    /// Which feature settings have it.
    pub stability: Stability,
}

/// One scope of `x-scope`: the paths that may carry the id of a `session`, a `toolCall`, ….
#[derive(Debug, Clone, PartialEq)]
pub struct ScopeDecl {
    /// The type declaring it.
    pub ty: TypeId,
    /// The scope's name (`session`, `toolCall`).
    pub scope: String,
    /// The paths that may carry its id.
    pub paths: Vec<StatePath>,
    /// Which feature settings have it.
    pub stability: Stability,
}
