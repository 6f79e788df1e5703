//! Lowering: the JSON Schema model of one file becomes a [`Protocol`].
//!
//! Every `$defs` entry gets its id first; then each is converted. Anonymous object, enum and
//! union schemas become types named after their parent and property or variant. `$ref`,
//! `allOf: [{$ref}]`, `anyOf`/`oneOf` and `not` do not survive: what they meant is recorded as
//! presence, tags, catch-alls and untagged branches. The decisions that need the whole graph of
//! types are made here too, by one analysis of how types contain each other ([`Containment`]):
//! which cycles are errors, and which references a `Box` holds ([`place_boxes`]).

use crate::ir::*;
use crate::model::{fragment, quoted, Additional, Document, Errors, JsonType, Schema};
use crate::naming;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Lowers a parsed schema file.
pub fn lower(doc: &Document) -> Result<Protocol, String> {
    let mut errors = Errors::default();
    let protocol = {
        let mut l = Lowerer {
            doc,
            defs: doc.defs.iter().map(|(n, s)| (n.as_str(), s)).collect(),
            ids: HashMap::new(),
            types: Vec::new(),
            names: BTreeMap::new(),
            errors: &mut errors,
        };
        for (name, schema) in &doc.defs {
            let id = l.reserve(&naming::type_name(name), name, schema, true);
            l.ids.insert(name.clone(), id);
        }
        for (name, schema) in &doc.defs {
            let id = l.ids[name];
            let kind = l.kind(schema, &l.types[id.0].name.clone());
            l.types[id.0].kind = kind;
        }
        let methods = l.methods();
        l.check_identifiers();
        l.check_cycles();
        place_boxes(&mut l.types);
        Protocol { source: doc.file.clone(), types: l.types, methods }
    };
    errors.into_result(protocol)
}

struct Lowerer<'a> {
    doc: &'a Document,
    defs: HashMap<&'a str, &'a Schema>,
    ids: HashMap<String, TypeId>,
    types: Vec<TypeDef>,
    /// Rust name → pointer of the schema that took it, to report collisions with both sources.
    names: BTreeMap<String, String>,
    errors: &'a mut Errors,
}

impl<'a> Lowerer<'a> {
    fn error(&mut self, pointer: &str, message: impl Into<String>) {
        let file = self.doc.file.clone();
        self.errors.push(&file, pointer, message);
    }

    fn origin(s: &Schema, wire: &str) -> Origin {
        Origin { wire: wire.to_string(), pointer: s.pointer.clone(), docs: s.description.clone() }
    }

    fn maturity(s: &Schema) -> Maturity {
        maturity_of(s.description.as_deref())
    }

    /// Takes a Rust name for a new type; a name already taken is an error naming both schemas.
    fn reserve(&mut self, name: &str, wire: &str, s: &Schema, named: bool) -> TypeId {
        if let Some(first) = self.names.get(name).cloned() {
            self.error(
                &s.pointer,
                format!(
                    "type name `{name}` is already taken by the schema at #{}; rename one of them",
                    fragment(&first)
                ),
            );
        } else {
            self.names.insert(name.to_string(), s.pointer.clone());
        }
        self.types.push(TypeDef {
            name: name.to_string(),
            origin: Self::origin(s, wire),
            stability: Stability::Stable,
            maturity: Self::maturity(s),
            named,
            kind: TypeKind::Any,
        });
        TypeId(self.types.len() - 1)
    }

    /// A new anonymous type named after its parent.
    fn inline(&mut self, s: &Schema, name: &str) -> TypeId {
        let id = self.reserve(name, name, s, false);
        let kind = self.kind(s, name);
        self.types[id.0].kind = kind;
        id
    }

    fn resolve(&mut self, s: &Schema) -> Option<TypeId> {
        let reference = s.reference.as_deref()?;
        let target = reference.strip_prefix("#/$defs/").or_else(|| reference.strip_prefix("#/definitions/"));
        match target.map(|t| self.ids.get(t).copied()) {
            Some(Some(id)) => Some(id),
            Some(None) => {
                self.error(&s.pointer, format!("dangling $ref {}", quoted(reference)));
                None
            }
            None => {
                let message =
                    format!("unsupported $ref {}: only references into #/$defs are supported", quoted(reference));
                self.error(&s.pointer, message);
                None
            }
        }
    }

    fn def_schema(&self, reference: &str) -> Option<&'a Schema> {
        let name = reference.strip_prefix("#/$defs/").or_else(|| reference.strip_prefix("#/definitions/"))?;
        self.defs.get(name).copied()
    }

    /// The kind of a named type (a `$defs` entry or an anonymous type being created).
    fn kind(&mut self, s: &Schema, name: &str) -> TypeKind {
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
            self.error(&s.pointer, "allOf is only supported as a single-$ref wrapper");
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
                    origin: Origin { wire: text.into(), pointer: format!("{}/enum/{i}", s.pointer), docs: None },
                    stability: Stability::Stable,
                    maturity: Maturity::Stable,
                }),
                None => self.error(&format!("{}/enum/{i}", s.pointer), "only string enums are supported"),
            }
        }
        self.check_unique(s, out.iter().map(|v| (&v.name, &v.origin.pointer)));
        TypeKind::StringEnum { values: out, open: None }
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
                    Some(other) => self.error(&b.pointer, format!("const {other} in a string enum")),
                    None => open = Some(self.catch_all(b, &mut open)),
                }
            }
            let open = open.flatten();
            self.check_enum_names(s, values.iter().map(|v| (&v.name, &v.origin.pointer)), open.as_ref());
            return Some(TypeKind::StringEnum { values, open });
        }
        if is(JsonType::Integer) {
            let repr =
                branches.iter().find_map(|b| b.format.as_deref()).map_or(IntKind::I64, |f| int_kind(Some(f), None));
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
                    Some(None) => self.error(&b.pointer, "integer enum constant out of range"),
                    None => open = Some(self.catch_all(b, &mut open)),
                }
            }
            let open = open.flatten();
            self.check_enum_names(s, values.iter().map(|v| (&v.name, &v.origin.pointer)), open.as_ref());
            return Some(TypeKind::IntEnum { repr, values, open });
        }
        None
    }

    /// Variant names of an enum, its catch-all included, must differ.
    fn check_enum_names<'n>(
        &mut self,
        s: &Schema,
        values: impl Iterator<Item = (&'n String, &'n String)>,
        open: Option<&'n CatchAll>,
    ) {
        let names = values.chain(open.map(|c| (&c.name, &c.origin.pointer)));
        self.check_unique(s, names);
    }

    fn catch_all(&mut self, b: &Schema, previous: &mut Option<Option<CatchAll>>) -> Option<CatchAll> {
        if previous.is_some() {
            self.error(&b.pointer, "a second catch-all branch");
        }
        let name = naming::type_name(b.title.as_deref().unwrap_or("Other"));
        Some(CatchAll {
            origin: Self::origin(b, &name),
            name,
            stability: Stability::Stable,
            maturity: Self::maturity(b),
        })
    }

    fn check_unique<'n>(&mut self, s: &Schema, names: impl Iterator<Item = (&'n String, &'n String)>) {
        let mut seen: BTreeMap<&String, &String> = BTreeMap::new();
        let mut clashes = Vec::new();
        for (name, pointer) in names {
            if let Some(first) = seen.insert(name, pointer) {
                clashes.push(format!(
                    "variant name `{name}` is used by both #{} and #{}",
                    fragment(first),
                    fragment(pointer)
                ));
            }
        }
        for c in clashes {
            self.error(&s.pointer, c);
        }
    }

    /// An object: its fields, and a flattened union when it also has `anyOf`/`oneOf`.
    fn structure(&mut self, s: &Schema, name: &str) -> Struct {
        if s.all_of.is_some() {
            self.error(&s.pointer, "allOf next to properties is not supported");
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
            (false, _, Some(default)) => Presence::Defaulted(default.clone()),
            (false, true, None) => Presence::Patch,
            (false, false, None) => Presence::Optional,
        };
        let lenient = Lenient {
            default_on_error: p.default_on_error,
            skip_invalid_items: p.skip_invalid_items,
            default_on_null: p.default_on_null,
        };
        if lenient.skip_invalid_items && !matches!(ty, TypeRef::Array(_)) {
            self.error(&p.pointer, "x-deserialize-skip-invalid-items on a field that is not an array");
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
            self.error(&s.pointer, format!("branches are tagged by different properties: {tags:?}"));
        }
        tags.into_iter().next()
    }

    fn union(&mut self, s: &Schema, branches: &[Schema], name: &str) -> Union {
        let tag = self.tag_of(s, branches);
        let mut variants = Vec::new();
        let mut catch_all_seen = false;
        for (i, b) in branches.iter().enumerate() {
            let tagged = const_property(b).filter(|(t, _)| Some(t) == tag.as_ref());
            if let Some((tag_name, value)) = tagged {
                let vname = naming::type_name(&value);
                let body = self.tagged_body(b, &tag_name, &format!("{name}{vname}"));
                variants.push(Variant {
                    name: vname,
                    origin: Self::origin(b, &value),
                    stability: Stability::Stable,
                    maturity: Self::maturity(b),
                    kind: VariantKind::Tagged { value, body },
                    boxed: false,
                });
                continue;
            }
            let open_tag = tag.as_ref().is_some_and(|t| {
                b.properties.iter().flatten().any(|(p, ps)| {
                    p == t
                        && ps.constant.is_none()
                        && ps.types.as_ref().is_some_and(|ty| ty.contains(&JsonType::String))
                })
            });
            if open_tag {
                if catch_all_seen {
                    self.error(&b.pointer, "a second catch-all branch");
                }
                catch_all_seen = true;
                let vname = naming::type_name(b.title.as_deref().unwrap_or("Other"));
                variants.push(Variant {
                    name: vname.clone(),
                    origin: Self::origin(b, &vname),
                    stability: Stability::Stable,
                    maturity: Self::maturity(b),
                    kind: VariantKind::CatchAll,
                    boxed: false,
                });
                continue;
            }
            let label = b
                .title
                .clone()
                .or_else(|| single_ref(b).and_then(|r| r.rsplit('/').next().map(str::to_string)))
                .or_else(|| b.types.as_ref().and_then(|t| t.first()).map(|t| format!("{t:?}")))
                .unwrap_or_else(|| format!("Variant{i}"));
            let vname = naming::type_name(&label);
            let body = if b.types.as_deref() == Some(&[JsonType::Null]) {
                TypeRef::Null
            } else {
                self.type_ref(b, &format!("{name}{vname}"))
            };
            variants.push(Variant {
                name: vname.clone(),
                origin: Self::origin(b, &label),
                stability: Stability::Stable,
                maturity: Self::maturity(b),
                kind: VariantKind::Untagged(body),
                boxed: false,
            });
        }
        self.check_unique(s, variants.iter().map(|v| (&v.name, &v.origin.pointer)));
        let tag_lenient = tag
            .as_ref()
            .and_then(|t| s.properties.iter().flatten().find(|(p, _)| p == t))
            .map(|(_, p)| Lenient {
                default_on_error: p.default_on_error,
                skip_invalid_items: p.skip_invalid_items,
                default_on_null: p.default_on_null,
            })
            .unwrap_or_default();
        Union { tag, tag_lenient, variants }
    }

    /// A tagged branch without its tag: a `$ref` to a struct, an inline struct, or nothing.
    fn tagged_body(&mut self, b: &Schema, tag: &str, name: &str) -> Option<TypeRef> {
        let extra: Vec<&(String, Schema)> = b.properties.iter().flatten().filter(|(p, _)| p != tag).collect();
        let refs = b.all_of.as_deref().unwrap_or_default();
        if b.branches().is_some() {
            self.error(&b.pointer, "a tagged branch with its own anyOf/oneOf is not supported");
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
                self.error(&b.pointer, "a tagged branch with both properties and allOf is not supported");
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
                    self.error(&s.pointer, "schema without a type this generator understands");
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
                self.error(&s.pointer, format!("a value of several JSON types {types:?} needs anyOf branches"));
                TypeRef::Any
            }
        }
    }

    /// The `params`/`result` of a JSON-RPC envelope: a union of method types, told apart only by
    /// the envelope's `method` (two methods may share a shape, e.g. `session/close` and `logout`).
    fn method_keyed(&self, branches: &[Schema]) -> bool {
        let mut members = Vec::new();
        collect_refs(branches, &mut members);
        let has_method = members.iter().any(|r| self.def_schema(r).is_some_and(|d| d.x_method.is_some()));
        has_method && count_leaves(branches) == members.len()
    }

    /// Every Rust name the emitters will print must be an identifier: schema text can hold
    /// characters `heck` keeps but Rust does not accept (`x²`).
    fn check_identifiers(&mut self) {
        let mut bad: Vec<(String, String, String)> = Vec::new();
        let mut check = |name: &str, origin: &Origin| {
            if !naming::is_identifier(name) {
                bad.push((origin.pointer.clone(), origin.wire.clone(), name.to_string()));
            }
        };
        for t in &self.types {
            check(&t.name, &t.origin);
            match &t.kind {
                TypeKind::Struct(s) => {
                    s.fields.iter().for_each(|f| check(&f.name, &f.origin));
                    if let Some(flatten) = &s.flatten {
                        check(&flatten.name, &t.origin);
                    }
                }
                TypeKind::StringEnum { values, open } => {
                    values.iter().for_each(|v| check(&v.name, &v.origin));
                    open.iter().for_each(|c| check(&c.name, &c.origin));
                }
                TypeKind::IntEnum { values, open, .. } => {
                    values.iter().for_each(|v| check(&v.name, &v.origin));
                    open.iter().for_each(|c| check(&c.name, &c.origin));
                }
                TypeKind::Union(u) => u.variants.iter().for_each(|v| check(&v.name, &v.origin)),
                TypeKind::Newtype { .. } | TypeKind::Any => {}
            }
        }
        for (pointer, wire, name) in bad {
            let message =
                format!("{} gives the Rust name {}, which is not an identifier", quoted(&wire), quoted(&name));
            self.error(&pointer, message);
        }
    }

    /// A type that contains itself without going one level down into the JSON value (a `$ref`
    /// to itself, a union branch or a flattened part that leads back to it) has no finite
    /// value, and decoding one would recurse forever: an error naming the cycle. Cycles through
    /// a field are fine ([`place_boxes`] breaks them); through an array item or a map value
    /// they are no cycle here at all.
    fn check_cycles(&mut self) {
        for cycle in Containment::of(&self.types).same_level_cycles() {
            let names: Vec<&str> = cycle.iter().map(|n| self.types[n.0].name.as_str()).collect();
            let pointer = self.types[cycle[0].0].origin.pointer.clone();
            let message = format!(
                "`{}` is made of itself ({}) with no object property or array item in between: no finite JSON \
                 value has this type",
                names[0],
                names.join(" → ")
            );
            self.error(&pointer, message);
        }
    }

    /// Methods from `x-method`/`x-side`, classified by the envelopes that carry them: a
    /// `params` next to an `id` is a request, without one a notification; a `result` is a response.
    fn methods(&mut self) -> Vec<Method> {
        let mut requests = Vec::new();
        let mut notifications = Vec::new();
        let mut responses = Vec::new();
        let mut envelopes = Vec::new();
        envelopes_in(&self.doc.root, &mut envelopes);
        for (_, def) in &self.doc.defs {
            envelopes_in(def, &mut envelopes);
        }
        if envelopes.is_empty() {
            // Early drafts (0.4.x) have no JSON-RPC envelopes, only the message unions themselves,
            // named for their role: `AgentRequest`, `ClientResponse`, `AgentNotification`, ...
            for (name, def) in &self.doc.defs {
                let Some(branches) = def.branches() else {
                    continue;
                };
                let kind = if name.ends_with("Request") {
                    Envelope::Request
                } else if name.ends_with("Notification") {
                    Envelope::Notification
                } else if name.ends_with("Response") {
                    Envelope::Response
                } else {
                    continue;
                };
                let mut members = Vec::new();
                collect_refs(branches, &mut members);
                envelopes.push((kind, members));
            }
        }
        for (kind, members) in envelopes {
            let target = match kind {
                Envelope::Request => &mut requests,
                Envelope::Notification => &mut notifications,
                Envelope::Response => &mut responses,
            };
            target.extend(members);
        }
        let mut methods: Vec<Method> = Vec::new();
        for (kind, members) in [(MethodKind::Request, &requests), (MethodKind::Notification, &notifications)] {
            for reference in members.iter() {
                let Some(def) = self.def_schema(reference) else {
                    continue;
                };
                let (Some(method), Some(side)) = (&def.x_method, &def.x_side) else {
                    continue;
                };
                let Some(&params) = reference.rsplit('/').next().and_then(|n| self.ids.get(n)) else {
                    continue;
                };
                if methods.iter().any(|m| &m.name == method && &m.side == side && m.kind == kind) {
                    continue;
                }
                methods.push(Method {
                    name: method.clone(),
                    side: side.clone(),
                    kind,
                    params,
                    result: None,
                    stability: Stability::Stable,
                });
            }
        }
        for reference in &responses {
            let Some(def) = self.def_schema(reference) else {
                continue;
            };
            let (Some(method), Some(side)) = (&def.x_method, &def.x_side) else {
                continue;
            };
            let Some(&result) = reference.rsplit('/').next().and_then(|n| self.ids.get(n)) else {
                continue;
            };
            match methods.iter_mut().find(|m| &m.name == method && &m.side == side && m.kind == MethodKind::Request) {
                Some(m) => m.result = Some(result),
                None => {
                    let pointer = def.pointer.clone();
                    self.error(
                        &pointer,
                        format!("response for {} ({}) matches no request", quoted(method), quoted(side)),
                    );
                }
            }
        }
        for m in &methods {
            if m.kind == MethodKind::Request && m.result.is_none() {
                let pointer = self.types[m.params.0].origin.pointer.clone();
                self.error(&pointer, format!("request {} has no response type", quoted(&m.name)));
            }
        }
        methods.sort_by(|a, b| (&a.side, &a.name).cmp(&(&b.side, &b.name)));
        methods
    }
}

/// Where a type holds another directly (no array item or map value in between, which allocate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    /// At the same JSON level: a newtype's inner type, a union body, a flattened part.
    Same,
    /// One level down: the value of a field.
    Field,
}

/// The one analysis of how types contain each other directly: the graph behind both the cycle
/// errors ([`Lowerer::check_cycles`]) and the boxes ([`place_boxes`]).
struct Containment {
    /// Per type, the types it holds directly, in declaration order.
    edges: Vec<Vec<(TypeId, Level)>>,
}

impl Containment {
    fn of(types: &[TypeDef]) -> Self {
        Containment { edges: types.iter().map(|t| held(&t.kind)).collect() }
    }

    fn successors(&self, n: TypeId, only_same: bool) -> impl Iterator<Item = TypeId> + '_ {
        self.edges[n.0].iter().filter(move |(_, level)| !only_same || *level == Level::Same).map(|(to, _)| *to)
    }

    /// The cycles made of same-level edges only, each once: the types along it, from the first
    /// type of the cycle in arena order back to itself.
    fn same_level_cycles(&self) -> Vec<Vec<TypeId>> {
        let mut cycles = Vec::new();
        let mut reported = vec![false; self.edges.len()];
        for i in 0..self.edges.len() {
            if reported[i] {
                continue;
            }
            let parent = self.same_level_parents(TypeId(i));
            if parent[i].is_none() {
                continue;
            }
            // The cycle through `i`, walked back along the parents from `i` to itself.
            let mut path = vec![TypeId(i)];
            let mut at = parent[i];
            while let Some(n) = at.filter(|n| n.0 != i) {
                path.push(n);
                at = parent[n.0];
            }
            for n in &path {
                reported[n.0] = true;
            }
            // `i`, then the others in the order the references go, and back to `i`.
            cycles.push(std::iter::once(TypeId(i)).chain(path.iter().rev().copied()).collect());
        }
        cycles
    }

    /// Breadth-first over same-level edges from `from`'s successors: the parent of each type
    /// reached (for the path).
    fn same_level_parents(&self, from: TypeId) -> Vec<Option<TypeId>> {
        let mut parent: Vec<Option<TypeId>> = vec![None; self.edges.len()];
        let mut queue: std::collections::VecDeque<TypeId> = self.successors(from, true).collect();
        for n in &queue {
            parent[n.0] = Some(from);
        }
        while let Some(n) = queue.pop_front() {
            for m in self.successors(n, true) {
                if parent[m.0].is_none() {
                    parent[m.0] = Some(n);
                    queue.push_back(m);
                }
            }
        }
        parent
    }

    /// The strongly connected component of each type, over every edge (Kosaraju, without
    /// recursion: schemas can chain many types). Two types share one exactly when each reaches
    /// the other, so an edge inside a component is on a cycle.
    fn components(&self) -> Vec<usize> {
        let n = self.edges.len();
        let mut reverse: Vec<Vec<TypeId>> = vec![Vec::new(); n];
        for (from, tos) in self.edges.iter().enumerate() {
            for (to, _) in tos {
                reverse[to.0].push(TypeId(from));
            }
        }
        // Types in the order their depth-first visits finish.
        let mut finished = Vec::with_capacity(n);
        let mut visited = vec![false; n];
        for root in 0..n {
            if visited[root] {
                continue;
            }
            visited[root] = true;
            let mut stack = vec![(root, 0)];
            while let Some((node, next)) = stack.pop() {
                match self.edges[node].get(next) {
                    Some((to, _)) => {
                        stack.push((node, next + 1));
                        if !visited[to.0] {
                            visited[to.0] = true;
                            stack.push((to.0, 0));
                        }
                    }
                    None => finished.push(node),
                }
            }
        }
        let mut component = vec![usize::MAX; n];
        for (id, &root) in finished.iter().rev().enumerate() {
            if component[root] != usize::MAX {
                continue;
            }
            component[root] = id;
            let mut stack = vec![root];
            while let Some(node) = stack.pop() {
                for from in &reverse[node] {
                    if component[from.0] == usize::MAX {
                        component[from.0] = id;
                        stack.push(from.0);
                    }
                }
            }
        }
        component
    }
}

/// The types a value of this kind holds directly, and at which level.
fn held(kind: &TypeKind) -> Vec<(TypeId, Level)> {
    let named = |r: &TypeRef| match r {
        TypeRef::Named(id) => Some(*id),
        _ => None,
    };
    match kind {
        TypeKind::Struct(s) => {
            let fields = s.fields.iter().filter_map(|f| named(&f.ty)).map(|id| (id, Level::Field));
            fields.chain(s.flatten.iter().map(|f| (f.ty, Level::Same))).collect()
        }
        TypeKind::Newtype { inner, .. } => named(inner).map(|id| (id, Level::Same)).into_iter().collect(),
        TypeKind::Union(u) => {
            u.variants.iter().filter_map(|v| variant_body(v).and_then(named)).map(|id| (id, Level::Same)).collect()
        }
        TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } | TypeKind::Any => Vec::new(),
    }
}

fn variant_body(v: &Variant) -> Option<&TypeRef> {
    match &v.kind {
        VariantKind::Tagged { body: Some(b), .. } | VariantKind::Untagged(b) => Some(b),
        VariantKind::Tagged { body: None, .. } | VariantKind::CatchAll => None,
    }
}

/// Marks every reference that must be held through a `Box`: one whose type leads back to the
/// type holding it by direct containment (else the Rust type would have infinite size). Called
/// by lowering, and by `merge` on the merged graph; emitters only read the marks.
pub fn place_boxes(types: &mut [TypeDef]) {
    let component = Containment::of(types).components();
    let on_cycle = |from: usize, to: TypeId| component[to.0] == component[from];
    let holds = |from: usize, r: &TypeRef| matches!(r, TypeRef::Named(to) if on_cycle(from, *to));
    for (i, t) in types.iter_mut().enumerate() {
        match &mut t.kind {
            TypeKind::Struct(s) => {
                for f in &mut s.fields {
                    f.boxed = holds(i, &f.ty);
                }
                if let Some(flatten) = &mut s.flatten {
                    flatten.boxed = on_cycle(i, flatten.ty);
                }
            }
            TypeKind::Newtype { inner, boxed } => *boxed = holds(i, inner),
            TypeKind::Union(u) => {
                for v in &mut u.variants {
                    v.boxed = variant_body(v).is_some_and(|b| holds(i, b));
                }
            }
            TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } | TypeKind::Any => {}
        }
    }
}

/// `Unstable` when a description carries the schema's marker.
fn maturity_of(docs: Option<&str>) -> Maturity {
    if naming::marked_unstable(docs) {
        Maturity::Unstable
    } else {
        Maturity::Stable
    }
}

enum Envelope {
    Request,
    Notification,
    Response,
}

/// Finds JSON-RPC envelopes (objects with `method`+`params`, or `result`) anywhere in a schema.
fn envelopes_in(s: &Schema, out: &mut Vec<(Envelope, Vec<String>)>) {
    if let Some(props) = &s.properties {
        let get = |n: &str| props.iter().find(|(p, _)| p == n).map(|(_, s)| s);
        let mut members = Vec::new();
        if let (Some(_), Some(params)) = (get("method"), get("params")) {
            collect_refs(std::slice::from_ref(params), &mut members);
            let kind = if get("id").is_some() { Envelope::Request } else { Envelope::Notification };
            out.push((kind, members));
        } else if let Some(result) = get("result") {
            collect_refs(std::slice::from_ref(result), &mut members);
            out.push((Envelope::Response, members));
        }
    }
    for list in [&s.any_of, &s.one_of, &s.all_of].into_iter().flatten() {
        for b in list {
            envelopes_in(b, out);
        }
    }
}

/// Every `$ref` reachable through `anyOf`/`oneOf`/`allOf` (not through properties).
fn collect_refs(branches: &[Schema], out: &mut Vec<String>) {
    for b in branches {
        if let Some(r) = &b.reference {
            out.push(r.clone());
        }
        for list in [&b.any_of, &b.one_of, &b.all_of].into_iter().flatten() {
            collect_refs(list, out);
        }
    }
}

/// Leaves of a union tree, not counting `null` branches.
fn count_leaves(branches: &[Schema]) -> usize {
    branches
        .iter()
        .map(|b| {
            if b.types.as_deref() == Some(&[JsonType::Null]) {
                return 0;
            }
            let nested: usize = [&b.any_of, &b.one_of, &b.all_of].into_iter().flatten().map(|l| count_leaves(l)).sum();
            if b.reference.is_some() {
                1
            } else {
                nested
            }
        })
        .sum()
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
