//! `cargo xtask stats`: how often each IR construct occurs in each committed schema file.

use acp_codegen::ir::*;
use std::collections::BTreeMap;

/// Counts of IR constructs in one protocol, by name, in a stable order.
pub fn count(p: &Protocol) -> BTreeMap<&'static str, usize> {
    let mut c: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut add = |k: &'static str, n: usize| *c.entry(k).or_default() += n;
    add("methods", p.methods.len());
    for t in &p.types {
        match &t.kind {
            TypeKind::Struct(s) => {
                add("structs", 1);
                if s.flatten.is_some() {
                    add("structs with a flattened union", 1);
                }
                for f in &s.fields {
                    add("fields", 1);
                    if f.origin.wire == "_meta" {
                        add("_meta fields", 1);
                    }
                    match f.presence {
                        Presence::Required => add("required fields", 1),
                        Presence::RequiredNullable => add("required nullable fields", 1),
                        Presence::Optional => add("optional fields", 1),
                        Presence::Patch => add("patch (omitted/null/value) fields", 1),
                        Presence::Defaulted(_) => add("fields with a default", 1),
                    }
                    add("x-deserialize-default-on-error", usize::from(f.lenient.default_on_error));
                    add("x-deserialize-skip-invalid-items", usize::from(f.lenient.skip_invalid_items));
                    add("x-deserialize-default-on-null", usize::from(f.lenient.default_on_null));
                    if let TypeRef::Int(_) = f.ty {
                        add("integer fields with an exact Rust type", 1);
                    }
                }
            }
            TypeKind::Newtype { inner, .. } => {
                add("newtypes", 1);
                if matches!(inner, TypeRef::String) {
                    add("newtype string ids", 1);
                }
            }
            TypeKind::StringEnum { catch_all, .. } => add(
                if catch_all.source.declared() {
                    "open string enums"
                } else {
                    "closed string enums (catch-all added by the generator)"
                },
                1,
            ),
            TypeKind::IntEnum { catch_all, .. } => add(
                if catch_all.source.declared() {
                    "open integer enums"
                } else {
                    "closed integer enums (catch-all added by the generator)"
                },
                1,
            ),
            TypeKind::Union(u) => {
                add("x-deserialize-default-on-error", usize::from(u.tag_lenient.default_on_error));
                let tagged = u.variants.iter().any(|v| matches!(v.kind, VariantKind::Tagged { .. }));
                let catch_all = u.variants.iter().any(|v| v.kind == VariantKind::CatchAll(CatchAllSource::Schema));
                let added = u.variants.iter().any(|v| v.kind == VariantKind::CatchAll(CatchAllSource::Generator));
                let untagged = u.variants.iter().any(|v| matches!(v.kind, VariantKind::Untagged(_)));
                add(if tagged { "tagged unions" } else { "untagged unions" }, 1);
                if catch_all {
                    add("unions with a catch-all", 1);
                }
                if added {
                    add("unions with a catch-all added by the generator", 1);
                }
                if tagged && untagged {
                    add("tagged unions with untagged branches", 1);
                }
            }
            TypeKind::Any => add("any-JSON types", 1),
        }
    }
    c
}

/// One block of lines per committed schema file.
pub fn report(root: &std::path::Path) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for version in acp_codegen::versions(root)? {
        for file in ["schema.json", "schema.unstable.json"] {
            let name = format!("schema/{}/{file}", version.dir);
            let p = acp_codegen::load(&root.join(&name), &name)?;
            lines.push(format!("{name}: {} types", p.types.len()));
            for (k, n) in count(&p) {
                lines.push(format!("  {k}: {n}"));
            }
        }
    }
    Ok(lines)
}
