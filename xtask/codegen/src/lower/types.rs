//! Lowering the types: a `$defs` entry or an anonymous schema becomes a struct (with its fields'
//! presence and lenient decoding), a string or integer enum (always open: the schema's catch-all
//! or an added one), a tagged union (with a catch-all, the schema's or an added one) or an
//! untagged union, a newtype, or `Any`; and how a field, item or branch refers to its type
//! ([`TypeRef`]).

use super::catch_alls::Keeps;
use super::{maturity_of, Lowerer};
use crate::error::Construct;
use crate::ir::*;
use crate::load::{Additional, JsonType, Schema};
use crate::naming;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

impl Lowerer<'_> {
    /// The kind of a named type (a `$defs` entry or an anonymous type being created).
    pub(super) fn kind(&mut self, s: &Schema, name: &str) -> TypeKind {
        if let Some(single) = alias(s) {
            return TypeKind::Newtype { inner: self.type_ref(single, name), boxed: false };
        }
        if s.is_any() {
            return TypeKind::Any;
        }
        if let Some(values) = &s.enumeration {
            return self.closed_enum(s, values);
        }
        let objecty = s.properties.is_some() || s.types.as_deref() == Some(&[JsonType::Object]);
        if objecty && (s.properties.is_some() || s.branches().is_some()) {
            return TypeKind::Struct(self.structure(s, name));
        }
        if let Some(branches) = s.branches() {
            if let Some(kind) = self.scalar_enum(s, branches) {
                return kind;
            }
            return TypeKind::Union(self.union(s, branches, name));
        }
        if s.all_of.is_some() {
            self.unsupported(&s.pointer, Construct::AllOf);
            return TypeKind::Any;
        }
        TypeKind::Newtype { inner: self.type_ref(s, name), boxed: false }
    }

    fn closed_enum(&mut self, s: &Schema, values: &[Value]) -> TypeKind {
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            match v.as_str() {
                Some(text) => out.push(EnumValue {
                    name: naming::type_name(text),
                    origin: Origin {
                        wire: text.into(),
                        pointer: format!("{}/enum/{i}", s.pointer),
                        docs: None,
                        annotations: Vec::new(),
                    },
                    stability: Stability::Stable,
                    maturity: Maturity::Stable,
                }),
                None => self.unsupported(&format!("{}/enum/{i}", s.pointer), Construct::NonStringEnumValue),
            }
        }
        self.check_unique(s, out.iter().map(|v| (&v.name, &v.origin.pointer)));
        let catch_all = Self::added_catch_all(s, out.iter().map(|v| &v.name), Keeps::Value);
        TypeKind::StringEnum { values: out, catch_all }
    }

    /// `anyOf`/`oneOf` of string (or integer) constants, with at most one plain catch-all branch.
    fn scalar_enum(&mut self, s: &Schema, branches: &[Schema]) -> Option<TypeKind> {
        let scalar = |b: &Schema, t: JsonType| {
            b.types.as_deref() == Some(&[t])
                && b.properties.is_none()
                && b.branches().is_none()
                && b.reference.is_none()
        };
        let is = |t: JsonType| branches.iter().all(|b| scalar(b, t)) && branches.iter().any(|b| b.constant.is_some());
        if is(JsonType::String) {
            return Some(self.string_constants(s, branches));
        }
        if is(JsonType::Integer) {
            return Some(self.int_constants(s, branches));
        }
        None
    }

    /// Branches that are string constants (and at most one plain string, the catch-all; without
    /// one, a catch-all is added).
    fn string_constants(&mut self, s: &Schema, branches: &[Schema]) -> TypeKind {
        let mut values = Vec::new();
        let mut open = None;
        for b in branches {
            match &b.constant {
                Some(Value::String(text)) => values.push(EnumValue {
                    name: naming::type_name(b.title.as_deref().filter(|_| false).unwrap_or(text)),
                    origin: Self::origin(b, text),
                    stability: Stability::Stable,
                    maturity: Self::maturity(b),
                }),
                Some(other) => self.unsupported(&b.pointer, Construct::ConstInStringEnum(other.to_string())),
                None => open = Some(self.catch_all(b, &mut open)),
            }
        }
        let open = open.flatten();
        self.check_enum_names(s, values.iter().map(|v| (&v.name, &v.origin.pointer)), open.as_ref());
        let catch_all = open.unwrap_or_else(|| Self::added_catch_all(s, values.iter().map(|v| &v.name), Keeps::Value));
        TypeKind::StringEnum { values, catch_all }
    }

    /// Branches that are integer constants (error codes, and at most one plain integer, the
    /// catch-all; without one, a catch-all is added), its Rust integer from the first `format`.
    fn int_constants(&mut self, s: &Schema, branches: &[Schema]) -> TypeKind {
        let repr = branches.iter().find_map(|b| b.format.as_deref()).map_or(IntKind::I64, |f| int_kind(Some(f), None));
        let mut values = Vec::new();
        let mut open = None;
        for b in branches {
            match b.constant.as_ref().map(Value::as_i64) {
                Some(Some(value)) => values.push(IntValue {
                    name: naming::type_name(b.title.as_deref().unwrap_or(&format!("Code{}", value.unsigned_abs()))),
                    value,
                    origin: Self::origin(b, &value.to_string()),
                    stability: Stability::Stable,
                    maturity: Self::maturity(b),
                }),
                Some(None) => self.unsupported(&b.pointer, Construct::IntConstantOutOfRange),
                None => open = Some(self.catch_all(b, &mut open)),
            }
        }
        let open = open.flatten();
        self.check_enum_names(s, values.iter().map(|v| (&v.name, &v.origin.pointer)), open.as_ref());
        let catch_all = open.unwrap_or_else(|| Self::added_catch_all(s, values.iter().map(|v| &v.name), Keeps::Value));
        TypeKind::IntEnum { repr, values, catch_all }
    }

    fn catch_all(&mut self, b: &Schema, previous: &mut Option<Option<CatchAll>>) -> Option<CatchAll> {
        if previous.is_some() {
            self.unsupported(&b.pointer, Construct::SecondCatchAll);
        }
        let name = naming::type_name(b.title.as_deref().unwrap_or("Other"));
        Some(CatchAll {
            origin: Self::origin(b, &name),
            name,
            stability: Stability::Stable,
            maturity: Self::maturity(b),
            source: CatchAllSource::Schema,
        })
    }

    /// An object: its fields, and a flattened union when it also has `anyOf`/`oneOf`.
    fn structure(&mut self, s: &Schema, name: &str) -> Struct {
        if s.all_of.is_some() {
            self.unsupported(&s.pointer, Construct::AllOfBesideProperties);
        }
        let flatten = s.branches().map(|branches| {
            let tag = self.tag_of(s, branches);
            let (field, suffix) = match &tag {
                Some(tag) => (naming::field(tag), naming::type_name(tag)),
                None => ("kind".to_string(), "Kind".to_string()),
            };
            let union_name = format!("{name}{suffix}");
            let id = self.reserve(&union_name, &union_name, s, false);
            let union = self.union(s, branches, &union_name);
            self.types[id.0].kind = TypeKind::Union(union);
            let docs = format!("The part of [`{name}`] that depends on its variant.");
            self.types[id.0].maturity = maturity_of(Some(&docs));
            self.types[id.0].origin.docs = Some(docs);
            (Flatten { name: field, ty: id, boxed: false }, tag)
        });
        let tag = flatten.as_ref().and_then(|(_, t)| t.clone());
        let mut fields = Vec::new();
        for (wire, p) in s.properties.iter().flatten() {
            if Some(wire) == tag.as_ref() {
                continue; // owned by the flattened union
            }
            fields.push(self.field(s, wire, p, name));
        }
        let names = fields.iter().map(|f| (&f.name, &f.origin.pointer));
        let flattened = flatten.as_ref().map(|(f, _)| (f.name.clone(), s.pointer.clone()));
        let all: Vec<(&String, &String)> = names.chain(flattened.as_ref().map(|(a, b)| (a, b))).collect();
        self.check_unique(s, all.into_iter());
        Struct { fields, flatten: flatten.map(|(f, _)| f) }
    }

    fn field(&mut self, parent: &Schema, wire: &str, p: &Schema, owner: &str) -> Field {
        let required = parent.required.iter().any(|r| r == wire);
        let nullable = nullable(p);
        let ty = self.type_ref(p, &format!("{owner}{}", naming::type_name(wire)));
        let presence = match (required, nullable, &p.default) {
            (true, false, _) => Presence::Required,
            (true, true, _) => Presence::RequiredNullable,
            // `"default": null` on an optional field says what its absence means, nothing more
            // (`AvailableCommand.input` in upstream drafts): presence as without a default.
            (false, true, Some(Value::Null)) => Presence::Patch,
            (false, false, Some(Value::Null)) => Presence::Optional,
            (false, _, Some(default)) => {
                // Typed once every type is known (`defaults`); optional until then.
                self.defaults.insert(p.pointer.clone(), default.clone());
                Presence::Optional
            }
            (false, true, None) => Presence::Patch,
            (false, false, None) => Presence::Optional,
        };
        let lenient = lenient_of(p);
        if lenient.skip_invalid_items && !matches!(ty, TypeRef::Array(_)) {
            self.unsupported(&p.pointer, Construct::SkipInvalidItemsOnNonArray);
        }
        Field {
            name: naming::field(wire),
            origin: Self::origin(p, wire),
            stability: Stability::Stable,
            maturity: Self::maturity(p),
            ty,
            presence,
            lenient,
            boxed: false,
        }
    }

    /// The property that tells the branches apart: `discriminator.propertyName`, or the one
    /// property that carries a `const` in the branches.
    fn tag_of(&mut self, s: &Schema, branches: &[Schema]) -> Option<String> {
        if let Some(d) = &s.discriminator {
            return Some(d.clone());
        }
        let mut tags: Vec<String> = branches.iter().filter_map(|b| const_property(b).map(|(t, _)| t)).collect();
        tags.sort();
        tags.dedup();
        if tags.len() > 1 {
            self.unsupported(&s.pointer, Construct::MixedTags(tags.clone()));
        }
        tags.into_iter().next()
    }

    /// A union of branches: tagged by the union's tag, the catch-all (the tag as a plain string),
    /// or untagged, in schema order. A tagged union without a catch-all gets one added last
    /// (unless an untagged branch takes any value).
    fn union(&mut self, s: &Schema, branches: &[Schema], name: &str) -> Union {
        let tag = self.tag_of(s, branches);
        let labels = untagged_labels(branches, tag.as_deref());
        let mut variants = Vec::new();
        let mut catch_all_seen = false;
        for (i, b) in branches.iter().enumerate() {
            let tagged = const_property(b).filter(|(t, _)| Some(t) == tag.as_ref());
            if let Some((tag_name, value)) = tagged {
                variants.push(self.tagged_variant(b, &tag_name, value, name));
            } else if tag.as_deref().is_some_and(|t| open_tag(b, t)) {
                if catch_all_seen {
                    self.unsupported(&b.pointer, Construct::SecondCatchAll);
                }
                catch_all_seen = true;
                let vname = naming::type_name(b.title.as_deref().unwrap_or("Other"));
                variants.push(Self::variant(b, vname.clone(), &vname, VariantKind::CatchAll(CatchAllSource::Schema)));
            } else {
                variants.push(self.untagged_variant(b, &labels[i], name));
            }
        }
        self.check_unique(s, variants.iter().map(|v| (&v.name, &v.origin.pointer)));
        let untagged_any = branches.iter().zip(&variants).any(|(b, v)| match &v.kind {
            VariantKind::Untagged(TypeRef::Any) => true,
            VariantKind::Untagged(_) => self.is_any_def(b),
            _ => false,
        });
        if tag.is_some() && !catch_all_seen && !untagged_any {
            let c = Self::added_catch_all(s, variants.iter().map(|v| &v.name), Keeps::Variant);
            variants.push(Variant {
                name: c.name,
                origin: c.origin,
                stability: c.stability,
                maturity: c.maturity,
                kind: VariantKind::CatchAll(c.source),
                boxed: false,
            });
        }
        let tag_lenient = tag
            .as_ref()
            .and_then(|t| s.properties.iter().flatten().find(|(p, _)| p == t))
            .map(|(_, p)| lenient_of(p))
            .unwrap_or_default();
        Union { tag, tag_lenient, variants }
    }

    /// An untagged branch that refers to a `$defs` entry taking any JSON value (`{}`).
    fn is_any_def(&self, b: &Schema) -> bool {
        single_ref(b).and_then(|r| self.def_schema(r)).is_some_and(Schema::is_any)
    }

    fn variant(b: &Schema, name: String, wire: &str, kind: VariantKind) -> Variant {
        Variant {
            name,
            origin: Self::origin(b, wire),
            stability: Stability::Stable,
            maturity: Self::maturity(b),
            kind,
            boxed: false,
        }
    }

    /// `tag == value`: the variant is named after the value; its body is the rest of the branch.
    fn tagged_variant(&mut self, b: &Schema, tag: &str, value: String, union_name: &str) -> Variant {
        let vname = naming::type_name(&value);
        let body = self.tagged_body(b, tag, &format!("{union_name}{vname}"));
        let wire = value.clone();
        Self::variant(b, vname, &wire, VariantKind::Tagged { value, body })
    }

    /// A branch without the tag, named by its label (see [`untagged_labels`]).
    fn untagged_variant(&mut self, b: &Schema, label: &str, union_name: &str) -> Variant {
        let vname = naming::type_name(label);
        let body = if b.types.as_deref() == Some(&[JsonType::Null]) {
            TypeRef::Null
        } else {
            self.type_ref(b, &format!("{union_name}{vname}"))
        };
        Self::variant(b, vname, label, VariantKind::Untagged(body))
    }

    /// A tagged branch without its tag: a `$ref` to a struct, an inline struct, or nothing.
    fn tagged_body(&mut self, b: &Schema, tag: &str, name: &str) -> Option<TypeRef> {
        let extra: Vec<&(String, Schema)> = b.properties.iter().flatten().filter(|(p, _)| p != tag).collect();
        let refs = b.all_of.as_deref().unwrap_or_default();
        if b.branches().is_some() {
            self.unsupported(&b.pointer, Construct::TaggedBranchWithBranches);
        }
        match (extra.is_empty(), refs) {
            (true, []) => None,
            (true, [single]) => Some(self.type_ref(single, name)),
            (false, []) => {
                let mut body = b.clone();
                body.properties = Some(extra.into_iter().cloned().collect());
                body.required.retain(|r| r != tag);
                body.constant = None;
                Some(TypeRef::Named(self.inline(&body, name)))
            }
            _ => {
                self.unsupported(&b.pointer, Construct::TaggedBranchWithAllOf);
                None
            }
        }
    }

    /// How a field, item or variant body refers to its type.
    fn type_ref(&mut self, s: &Schema, name: &str) -> TypeRef {
        if s.reference.is_some() {
            return self.resolve(s).map_or(TypeRef::Any, TypeRef::Named);
        }
        if let Some(single) = alias(s) {
            return self.type_ref(single, name);
        }
        if s.is_any() {
            return TypeRef::Any;
        }
        if let Some(branches) = s.branches() {
            if self.method_keyed(branches) {
                return TypeRef::MethodKeyed;
            }
            let non_null: Vec<&Schema> =
                branches.iter().filter(|b| b.types.as_deref() != Some(&[JsonType::Null])).collect();
            if non_null.len() == 1 && non_null.len() < branches.len() && s.properties.is_none() {
                return self.type_ref(non_null[0], name);
            }
            return TypeRef::Named(self.inline(s, name));
        }
        if s.enumeration.is_some() || s.properties.is_some() {
            return TypeRef::Named(self.inline(s, name));
        }
        let types: Vec<JsonType> = s.types.iter().flatten().copied().filter(|t| *t != JsonType::Null).collect();
        match types.as_slice() {
            [] if s.types.is_some() => TypeRef::Null,
            [] => match &s.constant {
                Some(Value::String(_)) => TypeRef::String,
                Some(Value::Bool(_)) => TypeRef::Bool,
                _ => {
                    self.unsupported(&s.pointer, Construct::Untyped);
                    TypeRef::Any
                }
            },
            [JsonType::String] => TypeRef::String,
            [JsonType::Boolean] => TypeRef::Bool,
            [JsonType::Integer] => TypeRef::Int(int_kind(s.format.as_deref(), s.minimum)),
            [JsonType::Number] => {
                TypeRef::Float(if s.format.as_deref() == Some("float") { FloatKind::F32 } else { FloatKind::F64 })
            }
            [JsonType::Array] => match &s.items {
                Some(items) => TypeRef::Array(Box::new(self.type_ref(items, &format!("{name}Item")))),
                None => TypeRef::Array(Box::new(TypeRef::Any)),
            },
            [JsonType::Object] => match &s.additional {
                Some(Additional::Schema(values)) => {
                    TypeRef::Map(Box::new(self.type_ref(values, &format!("{name}Value"))))
                }
                _ => TypeRef::Object,
            },
            _ => {
                self.unsupported(&s.pointer, Construct::SeveralTypes(types.iter().map(|t| format!("{t:?}")).collect()));
                TypeRef::Any
            }
        }
    }
}

/// A branch that declares the union's tag as a plain string (no `const`): the catch-all.
fn open_tag(b: &Schema, tag: &str) -> bool {
    b.properties.iter().flatten().any(|(p, ps)| {
        p == tag && ps.constant.is_none() && ps.types.as_ref().is_some_and(|ty| ty.contains(&JsonType::String))
    })
}

/// `x-deserialize-*` on a property.
fn lenient_of(p: &Schema) -> Lenient {
    Lenient {
        default_on_error: p.default_on_error,
        skip_invalid_items: p.skip_invalid_items,
        default_on_null: p.default_on_null,
    }
}

/// `{"allOf": [X]}` (with only docs beside it) is X.
fn alias(s: &Schema) -> Option<&Schema> {
    match s.all_of.as_deref() {
        Some([single])
            if s.properties.is_none()
                && s.branches().is_none()
                && s.types.is_none()
                && s.reference.is_none()
                && s.constant.is_none() =>
        {
            Some(single)
        }
        _ => None,
    }
}

fn single_ref(s: &Schema) -> Option<&str> {
    s.reference.as_deref().or_else(|| alias(s).and_then(single_ref))
}

/// The labels (variant names before casing) of a union's untagged branches, by branch index; the
/// tagged and catch-all branches get an empty label here (they are named by their tag value or
/// title).
///
/// The naming policy, deterministic and collision-free for every branch list: a branch is named by
/// its `title`, else the `$defs` name it refers to, else its JSON type (`Object`, `Array`, …).
/// When two or more branches would get the same name, each of them is named instead by what tells
/// it apart from the others of that group, the first that does: a property it requires and none of
/// the others requires (`result` / `error` for a response and an error object), a string `const`
/// property value, the `$defs` name of its array items; and if nothing does, its name followed by
/// its position (`Object0`, `Object1`). A name that still collides is an error naming both
/// branches (`check_unique`).
fn untagged_labels(branches: &[Schema], tag: Option<&str>) -> Vec<String> {
    let untagged = |b: &Schema| {
        let tagged = const_property(b).is_some_and(|(t, _)| Some(t.as_str()) == tag);
        !tagged && !tag.is_some_and(|t| open_tag(b, t))
    };
    let mut labels: Vec<String> =
        branches.iter().enumerate().map(|(i, b)| if untagged(b) { plain_label(b, i) } else { String::new() }).collect();
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, label) in labels.iter().enumerate() {
        if !label.is_empty() {
            groups.entry(naming::type_name(label)).or_default().push(i);
        }
    }
    for group in groups.into_values().filter(|g| g.len() > 1) {
        let members: Vec<&Schema> = group.iter().map(|&i| &branches[i]).collect();
        let distinct: Vec<Option<String>> = (0..members.len()).map(|k| distinguishing(&members, k)).collect();
        let unique: BTreeSet<&String> = distinct.iter().flatten().collect();
        let all_told_apart = distinct.iter().all(Option::is_some) && unique.len() == members.len();
        for (k, &i) in group.iter().enumerate() {
            labels[i] = match (&distinct[k], all_told_apart) {
                (Some(label), true) => label.clone(),
                _ => format!("{}{i}", labels[i]),
            };
        }
    }
    labels
}

/// A branch's own name: its title, the `$defs` name it refers to, its JSON type, or its position.
fn plain_label(b: &Schema, index: usize) -> String {
    b.title
        .clone()
        .or_else(|| single_ref(b).and_then(|r| r.rsplit('/').next().map(str::to_string)))
        .or_else(|| b.types.as_ref().and_then(|t| t.first()).map(|t| format!("{t:?}")))
        .unwrap_or_else(|| format!("Variant{index}"))
}

/// What tells `members[k]` apart from the other members: a property only it requires, a string
/// `const` property value, or the `$defs` name of its array items.
fn distinguishing(members: &[&Schema], k: usize) -> Option<String> {
    let b = members[k];
    let others = || members.iter().enumerate().filter(move |(j, _)| *j != k).map(|(_, o)| *o);
    let required = b.required.iter().find(|p| others().all(|o| !o.required.contains(p)));
    let constant = || {
        const_property(b)
            .map(|(_, v)| v)
            .filter(|v| others().all(|o| const_property(o).map(|(_, w)| w) != Some(v.clone())))
    };
    let items = || {
        let of =
            |s: &Schema| s.items.as_deref().and_then(single_ref).and_then(|r| r.rsplit('/').next()).map(str::to_string);
        of(b).filter(|n| others().all(|o| of(o).as_ref() != Some(n))).map(|n| format!("{n}List"))
    };
    required.cloned().or_else(constant).or_else(items)
}

/// A property of `s` with a string `const`: `(property, value)`.
fn const_property(s: &Schema) -> Option<(String, String)> {
    s.properties.iter().flatten().find_map(|(name, p)| match &p.constant {
        Some(Value::String(v)) => Some((name.clone(), v.clone())),
        _ => None,
    })
}

/// Whether `null` is allowed: `type: [..., "null"]` or an `anyOf` branch `{type: null}`.
fn nullable(s: &Schema) -> bool {
    if s.is_any() {
        return true; // `{}` accepts null like any other value
    }
    if s.types.as_ref().is_some_and(|t| t.contains(&JsonType::Null)) {
        return true;
    }
    if let Some(single) = alias(s) {
        return nullable(single);
    }
    s.branches().is_some_and(|bs| bs.iter().any(|b| b.types.as_deref() == Some(&[JsonType::Null])))
}

/// The exact Rust integer for a JSON Schema integer `format` (else by `minimum`).
fn int_kind(format: Option<&str>, minimum: Option<f64>) -> IntKind {
    match format {
        Some("int8") => IntKind::I8,
        Some("int16") => IntKind::I16,
        Some("int32") => IntKind::I32,
        Some("int64") => IntKind::I64,
        Some("uint8") => IntKind::U8,
        Some("uint16") => IntKind::U16,
        Some("uint32") | Some("uint") => IntKind::U32,
        Some("uint64") => IntKind::U64,
        _ if minimum.is_some_and(|m| m >= 0.0) => IntKind::U64,
        _ => IntKind::I64,
    }
}
