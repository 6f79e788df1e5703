//! Emitting unions: the enum of variants (tagged, catch-all, untagged), its `Serialize`, its
//! `Deserialize` (in one pass by a known tag, else through `from_json`), `from_json` itself and
//! the `schemars` schema. A catch-all the schema declares takes an unknown tag at once; one the
//! generator added comes last, after the untagged branches, and records what it keeps.

use super::common::{cfg_for, docs, ident, schema_impl, support, undescribed, variant_lists, Emitter};
use crate::ir::*;
use proc_macro2::TokenStream;
use quote::quote;

impl Emitter<'_> {
    /// A union: the enum, its known tags, schema, `Serialize`, `Deserialize` and `from_json`,
    /// gathered variant by variant into [`UnionParts`].
    pub(super) fn union(&self, id: TypeId, u: &Union, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
        let union_name = &self.p.get(id).name;
        let tag = u.tag.clone().unwrap_or_default();
        let mut parts = UnionParts::default();
        for (i, v) in u.variants.iter().enumerate() {
            match &v.kind {
                VariantKind::Tagged { value, body } => self.tagged_variant(&mut parts, v, i as u32, &tag, value, body),
                VariantKind::CatchAll(source) => catch_all_variant(&mut parts, v, *source, &tag),
                VariantKind::Untagged(body) => self.untagged_variant(&mut parts, v, body),
            }
        }
        let known_impl = if u.tag.is_some() {
            let known_tags = u.variants.iter().filter_map(|v| match &v.kind {
                VariantKind::Tagged { value, .. } => Some((value.clone(), v.stability)),
                VariantKind::CatchAll(_) | VariantKind::Untagged(_) => None,
            });
            let known_consts = variant_lists("KNOWN_TAGS", true, Some("The tag values this union knows."), known_tags);
            let tag_fn = tag_fn(u, &tag);
            quote! {
                #cfg
                impl #name {
                    #known_consts
                    #tag_fn
                }
            }
        } else {
            quote! {}
        };
        let deserialize_impl = union_deserialize_impl(u, &parts, union_name, name, cfg);
        let schema_branches = &parts.schema_branches;
        let support = support();
        let schema_impl = schema_impl(
            name,
            cfg,
            quote! {{
                let mut branches: Vec<serde_json::Value> = Vec::new();
                #(#schema_branches)*
                #support::schema::any_of(branches)
            }},
        );
        let from_json = union_from_json(u, &parts, union_name, name, cfg);
        let from_bodies = self.body_conversions(id, u, name, cfg);
        let kept_impl = if self.flattened(id) {
            kept_impl(&parts, name, cfg)
        } else {
            quote! {}
        };
        let (variants, ser_arms) = (&parts.variants, &parts.ser_arms);
        quote! {
            #cfg
            #[derive(Debug, Clone, PartialEq)]
            pub enum #name {
                #(#variants)*
            }
            #known_impl
            #schema_impl
            #cfg
            impl Serialize for #name {
                fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    match self {
                        #(#ser_arms)*
                    }
                }
            }
            #deserialize_impl
            #from_json
            #kept_impl
            #(#from_bodies)*
        }
    }

    /// Whether some struct flattens union `id` (`#[serde(flatten)]`).
    fn flattened(&self, id: TypeId) -> bool {
        self.p
            .types
            .iter()
            .any(|t| matches!(&t.kind, TypeKind::Struct(s) if s.flatten.as_ref().is_some_and(|f| f.ty == id)))
    }

    /// `From<Body>` for each variant whose body is a named type no other variant has (and not an
    /// alias of `serde_json::Value`), so that a value is made without naming the variant or its
    /// `Box` (`ContentBlock::from(text)`).
    fn body_conversions(&self, id: TypeId, u: &Union, name: &syn::Ident, cfg: &TokenStream) -> Vec<TokenStream> {
        let body_of = |v: &Variant| match &v.kind {
            VariantKind::Tagged { body: Some(TypeRef::Named(b)), .. } | VariantKind::Untagged(TypeRef::Named(b)) => {
                Some(*b)
            }
            _ => None,
        };
        let bodies: Vec<TypeId> = u.variants.iter().filter_map(body_of).collect();
        u.variants
            .iter()
            .filter_map(|v| {
                let b = body_of(v)?;
                // An `Any` body is an alias of `serde_json::Value`: two of them would clash.
                let alias = matches!(self.p.get(b).kind, TypeKind::Any);
                if b == id || alias || bodies.iter().filter(|&&x| x == b).count() > 1 {
                    return None;
                }
                let (vn, c) = (ident(&v.name), cfg_for(v.stability));
                let ty = self.rust(&TypeRef::Named(b), false);
                let make = if v.boxed {
                    quote! { Self::#vn(Box::new(body)) }
                } else {
                    quote! { Self::#vn(body) }
                };
                Some(quote! {
                    #cfg
                    #c
                    impl From<#ty> for #name {
                        fn from(body: #ty) -> Self {
                            #make
                        }
                    }
                })
            })
            .collect()
    }

    /// `tag == value`: decoded from the rest of the object, or nothing but the tag.
    fn tagged_variant(
        &self,
        parts: &mut UnionParts,
        v: &Variant,
        index: u32,
        tag: &str,
        value: &str,
        body: &Option<TypeRef>,
    ) {
        let (vn, c, d) = (ident(&v.name), cfg_for(v.stability), variant_docs(v));
        parts.tag_arms.push(quote! { #c Some(#value) => #index, });
        let Some(b) = body else {
            let support = support();
            parts.schema_branches.push(quote! {
                #c branches.push(#support::schema::tag_only(#tag, #value));
            });
            parts.variants.push(quote! { #d #c #vn, });
            parts.ser_arms.push(quote! { #c Self::#vn => union::tag_only(serializer, #tag, #value), });
            parts.tagged_arms.push(quote! { #c #index => return Ok(Self::#vn), });
            parts.known_arms.push(quote! {
                #c #value => serde::de::IgnoredAny::deserialize(body).map(|_| Self::#vn),
            });
            return;
        };
        let ty = self.rust(b, v.boxed);
        let support = support();
        parts.schema_branches.push(quote! {
            #c branches.push(#support::schema::tagged(generator.subschema_for::<#ty>(), #tag, #value));
        });
        parts.variants.push(quote! { #d #c #vn(#ty), });
        parts.ser_arms.push(quote! { #c Self::#vn(body) => union::tagged(serializer, #tag, #value, body), });
        let wrap = if v.boxed {
            quote! { .map(|b| Self::#vn(Box::new(b))) }
        } else {
            quote! { .map(Self::#vn) }
        };
        parts.tagged_arms.push(quote! { #c #index => return union::body(object, #tag, #value) #wrap, });
        parts.known_arms.push(quote! { #c #value => Deserialize::deserialize(body) #wrap, });
    }

    /// No tag: `null`, any value, or a body tried in schema order (guarded by its JSON kind).
    fn untagged_variant(&self, parts: &mut UnionParts, v: &Variant, body: &TypeRef) {
        match body {
            TypeRef::Null => null_variant(parts, v),
            TypeRef::Any => any_variant(parts, v),
            _ => self.body_variant(parts, v, body),
        }
    }

    /// An untagged variant with a body: tried when the value has the body's JSON kind.
    fn body_variant(&self, parts: &mut UnionParts, v: &Variant, body: &TypeRef) {
        let (vn, c, d) = (ident(&v.name), cfg_for(v.stability), variant_docs(v));
        if let TypeRef::Named(x) = body {
            parts.has_untagged_object |= matches!(self.p.get(*x).kind, TypeKind::Struct(_));
        }
        let ty = self.rust(body, v.boxed);
        parts.schema_branches.push(quote! {
            #c branches.push(generator.subschema_for::<#ty>().to_value());
        });
        parts.variants.push(quote! { #d #c #vn(#ty), });
        parts.ser_arms.push(quote! { #c Self::#vn(body) => body.serialize(serializer), });
        // serde also reads structs from arrays; a branch only sees its JSON kind. What a
        // branch that fails recorded (`lenient`) is forgotten (scalars record nothing).
        let kind = self.json_kind(body);
        let guard = match kind {
            Some("object") => quote! { value.is_object() },
            Some("array") => quote! { value.is_array() },
            Some("string") => quote! { value.is_string() },
            Some("number") => quote! { value.is_number() },
            Some("boolean") => quote! { value.is_boolean() },
            _ => quote! { true },
        };
        let buffered_guard = match kind {
            Some(kind) => quote! { value.kind() == #kind },
            None => quote! { true },
        };
        parts.untagged_buffered.push(quote! {
            #c
            if #buffered_guard {
                if let Some(body) = union::from_buffered::<#ty>(value) {
                    return Ok(Self::#vn(body));
                }
            }
        });
        let decode = match body {
            TypeRef::String | TypeRef::Bool | TypeRef::Int(_) | TypeRef::Float(_) => {
                quote! { <#ty as Deserialize>::deserialize(&value) }
            }
            _ => quote! { union::attempt(|| <#ty as Deserialize>::deserialize(&value)) },
        };
        parts.untagged.push(quote! {
            #c
            if #guard {
                match #decode {
                    Ok(body) => return Ok(Self::#vn(body)),
                    Err(e) => {
                        first.get_or_insert(e);
                    }
                }
            }
        });
    }

    /// The one JSON kind values of this type have, if there is one.
    fn json_kind(&self, r: &TypeRef) -> Option<&'static str> {
        match r {
            TypeRef::String => Some("string"),
            TypeRef::Bool => Some("boolean"),
            TypeRef::Int(_) | TypeRef::Float(_) => Some("number"),
            TypeRef::Object | TypeRef::Map(_) => Some("object"),
            TypeRef::Array(_) => Some("array"),
            TypeRef::Null | TypeRef::Any | TypeRef::MethodKeyed => None,
            TypeRef::Named(id) => match &self.p.get(*id).kind {
                TypeKind::Struct(_) => Some("object"),
                TypeKind::StringEnum { .. } => Some("string"),
                TypeKind::IntEnum { .. } => Some("number"),
                TypeKind::Newtype { inner, .. } => self.json_kind(inner),
                TypeKind::Union(u)
                    if u.tag.is_some() && u.variants.iter().all(|v| !matches!(v.kind, VariantKind::Untagged(_))) =>
                {
                    Some("object")
                }
                _ => None,
            },
        }
    }
}

/// The pieces of a union's definition and impls, gathered variant by variant (each entry under
/// the variant's `#[cfg]`).
#[derive(Default)]
struct UnionParts {
    variants: Vec<TokenStream>,
    ser_arms: Vec<TokenStream>,
    /// Tag value → the variant's index, when decoding from a JSON value.
    tag_arms: Vec<TokenStream>,
    /// Index → the variant, decoded from the rest of the object.
    tagged_arms: Vec<TokenStream>,
    /// The variants of known tags, decoded from the rest of the object (see `union::stream`).
    known_arms: Vec<TokenStream>,
    /// The untagged branches, tried in schema order.
    untagged: Vec<TokenStream>,
    /// The same, tried on a [`union::Buffered`] copy (an untagged union under optimistic decoding).
    untagged_buffered: Vec<TokenStream>,
    /// The catch-all variant, its `#[cfg]` and where it comes from (two when the stable and
    /// unstable schemas differ in it, each under its `#[cfg]`).
    catch_alls: Vec<(syn::Ident, TokenStream, CatchAllSource)>,
    schema_branches: Vec<TokenStream>,
    has_untagged_object: bool,
    ends_with_any: bool,
}

/// `tag()`: the value's tag as on the wire, so that code can tell variants apart (or print
/// them) without encoding the value; `None` for a branch without one.
fn tag_fn(u: &Union, tag: &str) -> TokenStream {
    let arms = u.variants.iter().map(|v| {
        let (vn, c) = (ident(&v.name), cfg_for(v.stability));
        match &v.kind {
            VariantKind::Tagged { value, .. } => quote! { #c Self::#vn { .. } => Some(#value), },
            VariantKind::CatchAll(_) => {
                quote! { #c Self::#vn(object) => object.get_str(#tag), }
            }
            VariantKind::Untagged(_) => quote! { #c Self::#vn { .. } => None, },
        }
    });
    let doc = format!(
        " The `{tag}` of this value as on the wire (a value kept by the catch-all included, when its \
         tag is written without escapes); `None` for a branch without one."
    );
    quote! {
        #[doc = #doc]
        pub fn tag(&self) -> Option<&str> {
            match self {
                #(#arms)*
            }
        }
    }
}

/// Any other tag value: the whole object, kept as received (as its text, a [`Meta`]).
/// A variant's docs: its description, or what it holds.
fn variant_docs(v: &Variant) -> TokenStream {
    match (v.origin.docs.as_deref().filter(|d| !d.trim().is_empty()), v.body()) {
        (Some(d), _) => docs(Some(d)),
        (None, Some(TypeRef::Null)) => docs(Some("`null`.")),
        (None, _) => docs(Some(&undescribed(&v.origin.wire))),
    }
}

fn catch_all_variant(parts: &mut UnionParts, v: &Variant, source: CatchAllSource, tag: &str) {
    let (vn, c) = (ident(&v.name), cfg_for(v.stability));
    let d = docs(v.origin.docs.as_deref().or(Some("Any other variant, kept whole as received.")));
    let support = support();
    parts.schema_branches.push(quote! {
        #c branches.push(#support::schema::catch_all(#tag, Self::KNOWN_TAGS));
    });
    parts.variants.push(quote! { #d #c #vn(Meta), });
    parts.ser_arms.push(quote! { #c Self::#vn(object) => object.serialize(serializer), });
    parts.catch_alls.push((vn, c, source));
}

/// The untagged variant `null`: a unit variant.
fn null_variant(parts: &mut UnionParts, v: &Variant) {
    let (vn, c, d) = (ident(&v.name), cfg_for(v.stability), variant_docs(v));
    parts.schema_branches.push(quote! { #c branches.push(serde_json::json!({ "type": "null" })); });
    parts.variants.push(quote! { #d #c #vn, });
    parts.ser_arms.push(quote! { #c Self::#vn => serializer.serialize_unit(), });
    parts.untagged.push(quote! {
        #c
        if value.is_null() {
            return Ok(Self::#vn);
        }
    });
    parts.untagged_buffered.push(quote! {
        #c
        if value.kind() == "null" {
            return Ok(Self::#vn);
        }
    });
}

/// The untagged variant that takes any value (the last one tried).
fn any_variant(parts: &mut UnionParts, v: &Variant) {
    let (vn, c, d) = (ident(&v.name), cfg_for(v.stability), variant_docs(v));
    parts.schema_branches.push(quote! { #c branches.push(serde_json::json!(true)); });
    parts.ends_with_any = true;
    parts.variants.push(quote! { #d #c #vn(serde_json::Value), });
    parts.ser_arms.push(quote! { #c Self::#vn(body) => body.serialize(serializer), });
    parts.untagged.push(quote! {
        #c
        {
            return Ok(Self::#vn(value));
        }
    });
    parts.untagged_buffered.push(quote! {
        #c
        {
            return union::from_buffered(value).map(Self::#vn).ok_or_else(union::no_buffered_branch);
        }
    });
}

/// `union::Kept` for a union with a catch-all that a struct flattens: the object it keeps, which
/// the struct writes as entries (`union::flat`).
fn kept_impl(parts: &UnionParts, name: &syn::Ident, cfg: &TokenStream) -> TokenStream {
    if parts.catch_alls.is_empty() {
        return quote! {};
    }
    let arms = parts.catch_alls.iter().map(|(cn, c, _)| quote! { #c Self::#cn(object) => Some(object), });
    quote! {
        #cfg
        impl union::Kept for #name {
            #[allow(unreachable_patterns)]
            fn kept(&self) -> Option<&Meta> {
                match self {
                    #(#arms)*
                    _ => None,
                }
            }
        }
    }
}

/// A tagged union decodes in one pass when its tag is a known string, and from a
/// `serde_json::Value` otherwise (`union::stream`); an untagged one always from a value.
fn union_deserialize_impl(
    u: &Union,
    parts: &UnionParts,
    union_name: &str,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let Some(tag) = &u.tag else {
        // Under optimistic decoding the branches are tried on a light copy of the value that
        // borrows its strings, without building a `serde_json::Value` (see `union::Buffered`).
        let untagged_buffered = &parts.untagged_buffered;
        return quote! {
            #cfg
            impl<'de> Deserialize<'de> for #name {
                fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                    if union::buffered_branches() {
                        let value = union::Buffered::deserialize(deserializer)?;
                        return Self::from_buffered(&value).map_err(serde::de::Error::custom);
                    }
                    let value = serde_json::Value::deserialize(deserializer)?;
                    Self::from_json(value).map_err(serde::de::Error::custom)
                }
            }
            #cfg
            impl #name {
                /// The untagged branches tried on the buffered value, in schema order: what
                /// `from_json` decodes, or an error that sends the message the exact way.
                #[allow(unreachable_code)]
                fn from_buffered(value: &union::Buffered<'_>) -> Result<Self, serde_json::Error> {
                    #(#untagged_buffered)*
                    Err(union::no_buffered_branch())
                }
            }
        };
    };
    let known_arms = &parts.known_arms;
    // An object of an unknown string tag goes to the catch-all with nothing tried before it when
    // the schema declares the catch-all, or the generator added it and there are no untagged
    // branches: `union::stream` then keeps the object as text, without a `serde_json::Value`.
    let others = parts.catch_alls.iter().filter(|(_, _, source)| source.declared() || parts.untagged.is_empty());
    let others: Vec<TokenStream> = others
        .map(|(cn, c, source)| {
            let keep = if source.declared() {
                quote! { |object, _| Self::#cn(object) }
            } else {
                quote! {
                    |object, tag| {
                        lenient::note_not_in_schema_str(#union_name, Some(#tag), tag);
                        Self::#cn(object)
                    }
                }
            };
            quote! { #c const OTHER: Option<fn(Meta, &str) -> Self> = Some(#keep); }
        })
        .collect();
    quote! {
        #cfg
        impl<'de> Deserialize<'de> for #name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                union::stream(deserializer)
            }
        }
        #cfg
        impl union::Streamed for #name {
            const TAG: &'static str = #tag;
            #[allow(unused_variables, unreachable_code, clippy::match_single_binding, clippy::needless_return)]
            fn known<'de, D: Deserializer<'de>>(tag: &str, body: D) -> Option<Result<Self, D::Error>> {
                Some(match tag {
                    #(#known_arms)*
                    _ => return None,
                })
            }
            fn from_json(value: serde_json::Value) -> Result<Self, serde_json::Error> {
                Self::from_json(value)
            }
            #(#others)*
        }
    }
}

/// `from_json`: by tag first, then the catch-all, then the untagged branches in schema order.
fn union_from_json(
    u: &Union,
    parts: &UnionParts,
    union_name: &str,
    name: &syn::Ident,
    cfg: &TokenStream,
) -> TokenStream {
    let tag = u.tag.clone().unwrap_or_default();
    let tagged_part = if u.tag.is_some() {
        union_by_tag(u, parts, &tag)
    } else {
        quote! {}
    };
    let fail = if parts.ends_with_any {
        quote! {}
    } else if u.tag.is_some() && parts.untagged.is_empty() {
        quote! {
            if value.is_object() {
                return Err(union::missing_tag(#tag, #union_name));
            }
            Err(union::no_branch(#union_name, &value, first))
        }
    } else {
        quote! { Err(union::no_branch(#union_name, &value, first)) }
    };
    let untagged = &parts.untagged;
    // A catch-all the generator added takes an object with a string tag that nothing above took.
    let added: Vec<TokenStream> = parts
        .catch_alls
        .iter()
        .filter(|(_, _, source)| *source == CatchAllSource::Generator)
        .map(|(cn, c, _)| {
            quote! {
                #c
                let value = match union::not_in_schema(value, #tag, #union_name) {
                    Ok(object) => return Ok(Self::#cn(Meta::from(object))),
                    Err(value) => value,
                };
            }
        })
        .collect();
    let doc = docs(Some(if added.is_empty() {
        "Decodes from a JSON value: by tag first, then the catch-all, then the untagged\n\
         branches in schema order."
    } else {
        "Decodes from a JSON value: by tag first, then the untagged branches in schema order,\n\
         then the catch-all the generator added."
    }));
    quote! {
        #cfg
        impl #name {
            #doc
            #[allow(unused_mut, unused_variables, clippy::needless_return, clippy::single_match)]
            pub fn from_json(value: serde_json::Value) -> Result<Self, serde_json::Error> {
                let mut first: Option<serde_json::Error> = None;
                #tagged_part
                #(#untagged)*
                #(#added)*
                #fail
            }
        }
    }
}

/// The part of `from_json` that decodes an object by its tag (and hands anything else on).
fn union_by_tag(u: &Union, parts: &UnionParts, tag: &str) -> TokenStream {
    let repair = if u.tag_lenient.default_on_error {
        quote! { union::drop_bad_tag(&mut object, #tag); }
    } else {
        quote! {}
    };
    let declared: Vec<TokenStream> = parts
        .catch_alls
        .iter()
        .filter(|(_, _, source)| source.declared())
        .map(|(cn, c, _)| quote! { #c u32::MAX => return Ok(Self::#cn(Meta::from(object))), })
        .collect();
    let unknown = match parts.catch_alls.is_empty() {
        // An added catch-all decides after the untagged branches (`union_from_json`).
        false => quote! { #(#declared)* },
        true if parts.has_untagged_object => quote! {},
        true => quote! {
            u32::MAX => {
                let found = object.get(#tag).and_then(serde_json::Value::as_str).unwrap_or_default();
                return Err(union::unknown_tag(#tag, found, Self::KNOWN_TAGS));
            }
        },
    };
    let (tag_arms, tagged_arms) = (&parts.tag_arms, &parts.tagged_arms);
    quote! {
        let value = match value {
            serde_json::Value::Object(mut object) => {
                #repair
                let which: u32 = match object.get(#tag).and_then(serde_json::Value::as_str) {
                    #(#tag_arms)*
                    Some(_) => u32::MAX,
                    None => u32::MAX - 1,
                };
                match which {
                    #(#tagged_arms)*
                    #unknown
                    _ => {}
                }
                serde_json::Value::Object(object)
            }
            other => other,
        };
    }
}
