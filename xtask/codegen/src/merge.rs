//! Merging the stable and unstable IR of one protocol version into one, so that a type present
//! in both has one Rust definition with its unstable-only fields, values and variants marked.
//!
//! Items are matched by name (types), wire name (fields, enum values) or tag value (variants).
//! An item that differs between the two becomes two items, one per feature setting; a method
//! stays one, with what differs kept per setting ([`ByFeature`]). Boxes are placed again on the
//! merged graph (see [`lower::place_boxes`]).

use crate::error::{SchemaError, SchemaErrorKind};
use crate::ir::*;
use crate::{lower, naming};
use std::collections::{BTreeMap, BTreeSet};

/// Which of the two files an item comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum File {
    Stable,
    Unstable,
}

/// One type of the merged arena.
enum Plan {
    /// The types of this name in both files, with one definition.
    Merged(usize, usize),
    /// A type of one file only, or one of two definitions of a name whose kinds differ.
    Only(File, usize),
}

/// Name → (id for references from stable items, id for references from unstable items).
type Table = BTreeMap<String, (Option<TypeId>, Option<TypeId>)>;

/// Merges `stable` (from `schema.json`) and `unstable` (from `schema.unstable.json`).
pub fn merge(stable: &Protocol, unstable: &Protocol) -> Result<Protocol, SchemaError> {
    let (plan, table) = plan(stable, unstable);
    let m = Merger { stable, unstable, table };
    let mut types = Vec::new();
    for p in &plan {
        types.push(match *p {
            Plan::Merged(s, u) => m.merge_type(&stable.types[s], &unstable.types[u]),
            Plan::Only(file, i) => {
                // A stable type the unstable file lost, or has in another shape (split), is there
                // only with the feature off.
                let (src, stability) = match file {
                    File::Stable => (stable, Stability::StableOnly),
                    File::Unstable => (unstable, Stability::Unstable),
                };
                let mut t = m.remap_type(&src.types[i], file);
                t.stability = stability;
                t
            }
        });
    }
    let mut methods = m.methods();
    // The version's methods are named together: a method of one file may take the name of one of
    // the other's.
    match naming::method_names(&methods) {
        Ok(names) => methods.iter_mut().zip(names).for_each(|(m, names)| m.rust = names),
        Err((a, b)) => {
            let (a, b) = (&methods[a], &methods[b]);
            return Err(SchemaError {
                file: b.origin.file.clone(),
                pointer: b.origin.pointer.clone(),
                kind: Box::new(SchemaErrorKind::MergedMethodCollision {
                    method: b.name.clone(),
                    rust: naming::method_base(&b.name),
                    other: a.name.clone(),
                    other_file: a.origin.file.clone(),
                    other_pointer: a.origin.pointer.clone(),
                }),
            });
        }
    }
    // Joined, the two files make a new graph of types, with cycles neither had alone.
    lower::place_boxes(&mut types);
    let mut warnings: Vec<_> = stable.warnings.iter().chain(&unstable.warnings).cloned().collect();
    warnings.sort();
    let mut merged = Protocol {
        source: format!("{} + {}", stable.source, unstable.source),
        types,
        methods,
        warnings,
        state: StateModel::default(),
    };
    // The annotations were checked in each file; the joined graph is read again for the ids.
    let checked = lower::state::model(&merged);
    if let Some((pointer, kind)) = checked.errors.into_iter().next() {
        return Err(SchemaError { file: merged.source.clone(), pointer, kind: Box::new(kind) });
    }
    merged.state = checked.model;
    Ok(merged)
}

/// Plans the output arena: one entry per name, two where the kinds cannot be merged.
fn plan(stable: &Protocol, unstable: &Protocol) -> (Vec<Plan>, Table) {
    let by_name = |p: &Protocol| -> BTreeMap<String, usize> {
        p.types.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect()
    };
    let (sn, un) = (by_name(stable), by_name(unstable));
    let names: BTreeSet<&String> = sn.keys().chain(un.keys()).collect();
    let mut plan: Vec<Plan> = Vec::new();
    let mut table = Table::new();
    for name in names {
        match (sn.get(name), un.get(name)) {
            (Some(&s), Some(&u)) if same_shape(stable, &stable.types[s].kind, unstable, &unstable.types[u].kind) => {
                let id = TypeId(plan.len());
                plan.push(Plan::Merged(s, u));
                table.insert(name.clone(), (Some(id), Some(id)));
            }
            (Some(&s), Some(&u)) => {
                let a = TypeId(plan.len());
                plan.push(Plan::Only(File::Stable, s));
                let b = TypeId(plan.len());
                plan.push(Plan::Only(File::Unstable, u));
                table.insert(name.clone(), (Some(a), Some(b)));
            }
            (Some(&s), None) => {
                let id = TypeId(plan.len());
                plan.push(Plan::Only(File::Stable, s));
                table.insert(name.clone(), (Some(id), None));
            }
            (None, Some(&u)) => {
                let id = TypeId(plan.len());
                plan.push(Plan::Only(File::Unstable, u));
                table.insert(name.clone(), (None, Some(id)));
            }
            (None, None) => {}
        }
    }
    (plan, table)
}

/// Whether two kinds can share one definition (item-level differences are fine).
fn same_shape(pa: &Protocol, a: &TypeKind, pb: &Protocol, b: &TypeKind) -> bool {
    match (a, b) {
        (TypeKind::Newtype { inner: x, .. }, TypeKind::Newtype { inner: y, .. }) => ref_key(pa, x) == ref_key(pb, y),
        (TypeKind::Struct(x), TypeKind::Struct(y)) => {
            x.flatten.as_ref().map(|f| &f.name) == y.flatten.as_ref().map(|f| &f.name)
        }
        (TypeKind::Any, TypeKind::Any) => true,
        // A catch-all named or sourced differently (declared in one file, added in the other) is
        // different Rust: one definition per feature setting.
        (TypeKind::StringEnum { catch_all: x, .. }, TypeKind::StringEnum { catch_all: y, .. }) => {
            (&x.name, x.source) == (&y.name, y.source)
        }
        (TypeKind::IntEnum { repr: r1, catch_all: x, .. }, TypeKind::IntEnum { repr: r2, catch_all: y, .. }) => {
            r1 == r2 && (&x.name, x.source) == (&y.name, y.source)
        }
        (TypeKind::Union(x), TypeKind::Union(y)) => x.tag == y.tag,
        _ => false,
    }
}

/// A type reference with names instead of ids, comparable across two protocols.
fn ref_key(p: &Protocol, r: &TypeRef) -> String {
    match r {
        TypeRef::Named(id) => p.get(*id).name.clone(),
        TypeRef::Array(inner) => format!("[{}]", ref_key(p, inner)),
        TypeRef::Map(inner) => format!("{{{}}}", ref_key(p, inner)),
        other => format!("{other:?}"),
    }
}

struct Merger<'a> {
    stable: &'a Protocol,
    unstable: &'a Protocol,
    table: Table,
}

impl Merger<'_> {
    /// The methods of both files: in both (stable), only in the unstable one, or only in the
    /// stable one (stable-only), with their types' ids in the merged arena. A method of both files
    /// is one method, whatever else the files say of it: where they disagree on whether its params
    /// name a session, `session_scoped` keeps each file's answer for its feature setting.
    fn methods(&self) -> Vec<Method> {
        let (stable, unstable) = (self.stable, self.unstable);
        let same = |a: &Method, b: &Method| a.name == b.name && a.side == b.side && a.kind == b.kind;
        let mut methods = Vec::new();
        for u in &unstable.methods {
            let mut method = self.method(u, File::Unstable, Stability::Unstable);
            if let Some(s) = stable.methods.iter().find(|s| same(s, u)) {
                method.stability = Stability::Stable;
                method.session_scoped =
                    ByFeature { stable: s.session_scoped.stable, unstable: u.session_scoped.unstable };
            }
            methods.push(method);
        }
        for s in &stable.methods {
            if !unstable.methods.iter().any(|u| same(u, s)) {
                methods.push(self.method(s, File::Stable, Stability::StableOnly));
            }
        }
        methods.sort_by(|a, b| (&a.side, &a.name).cmp(&(&b.side, &b.name)));
        methods
    }

    /// A method of `file` with its types' ids in the merged arena: what that file says of it
    /// under both feature settings, since the method exists only under its `stability`.
    fn method(&self, m: &Method, file: File, stability: Stability) -> Method {
        let src = match file {
            File::Stable => self.stable,
            File::Unstable => self.unstable,
        };
        let mut method = m.clone();
        method.params = self.id(src, m.params, file);
        method.result = m.result.map(|r| self.id(src, r, file));
        method.stability = stability;
        method.session_scoped = ByFeature::both(match file {
            File::Stable => m.session_scoped.stable,
            File::Unstable => m.session_scoped.unstable,
        });
        method
    }

    fn id(&self, src: &Protocol, id: TypeId, file: File) -> TypeId {
        let name = &src.get(id).name;
        let (s, u) = self.table.get(name).copied().unwrap_or((None, None));
        match file {
            File::Stable => s.or(u),
            File::Unstable => u.or(s),
        }
        .unwrap_or(id)
    }

    fn remap(&self, r: &TypeRef, file: File) -> TypeRef {
        let src = match file {
            File::Stable => self.stable,
            File::Unstable => self.unstable,
        };
        match r {
            TypeRef::Named(id) => TypeRef::Named(self.id(src, *id, file)),
            TypeRef::Array(inner) => TypeRef::Array(Box::new(self.remap(inner, file))),
            TypeRef::Map(inner) => TypeRef::Map(Box::new(self.remap(inner, file))),
            other => other.clone(),
        }
    }

    fn remap_type(&self, t: &TypeDef, file: File) -> TypeDef {
        let mut t = t.clone();
        match &mut t.kind {
            TypeKind::Struct(s) => {
                for f in &mut s.fields {
                    f.ty = self.remap(&f.ty, file);
                }
                if let Some(fl) = &mut s.flatten {
                    let src = if file == File::Stable { self.stable } else { self.unstable };
                    fl.ty = self.id(src, fl.ty, file);
                }
            }
            TypeKind::Newtype { inner, .. } => *inner = self.remap(inner, file),
            TypeKind::Union(u) => {
                for v in &mut u.variants {
                    match &mut v.kind {
                        VariantKind::Tagged { body: Some(b), .. } | VariantKind::Untagged(b) => {
                            *b = self.remap(b, file)
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        t
    }

    fn merge_type(&self, s: &TypeDef, u: &TypeDef) -> TypeDef {
        let s = self.remap_type(s, File::Stable);
        let u = self.remap_type(u, File::Unstable);
        let kind = match (&s.kind, &u.kind) {
            (TypeKind::Struct(a), TypeKind::Struct(b)) => TypeKind::Struct(Struct {
                fields: merge_items(
                    &a.fields,
                    &b.fields,
                    |f| f.origin.wire.clone(),
                    |x, y| x.ty == y.ty && x.presence == y.presence && x.lenient == y.lenient,
                    |f, st| f.stability = st,
                ),
                flatten: b.flatten.clone(),
            }),
            (TypeKind::StringEnum { values: a, catch_all }, TypeKind::StringEnum { values: b, .. }) => {
                TypeKind::StringEnum {
                    values: merge_items(a, b, |v| v.origin.wire.clone(), |_, _| true, |v, st| v.stability = st),
                    catch_all: catch_all.clone(),
                }
            }
            (TypeKind::IntEnum { repr, values: a, catch_all }, TypeKind::IntEnum { values: b, .. }) => {
                TypeKind::IntEnum {
                    repr: *repr,
                    values: merge_items(
                        a,
                        b,
                        |v| v.origin.wire.clone(),
                        |x, y| x.value == y.value,
                        |v, st| v.stability = st,
                    ),
                    catch_all: catch_all.clone(),
                }
            }
            (TypeKind::Union(a), TypeKind::Union(b)) => TypeKind::Union(Union {
                tag: b.tag.clone(),
                tag_lenient: b.tag_lenient,
                variants: merge_items(
                    &a.variants,
                    &b.variants,
                    |v| match &v.kind {
                        VariantKind::Tagged { value, .. } => format!("tag:{value}"),
                        VariantKind::CatchAll(_) => "catch-all".into(),
                        VariantKind::Untagged(_) => format!("untagged:{}", v.name),
                    },
                    // A catch-all added in one file and declared in the other is two variants.
                    |x, y| x.kind == y.kind && x.name == y.name,
                    |v, st| v.stability = st,
                ),
            }),
            // Checked by `same_shape`: the remaining pairs are equal kinds or were split before.
            _ => u.kind.clone(),
        };
        TypeDef { kind, stability: Stability::Stable, ..s }
    }
}

/// Merges two ordered lists of items: the unstable order leads; equal items are stable, items
/// that differ appear twice (stable-only, then unstable), and items of one list only are marked.
fn merge_items<T: Clone>(
    stable: &[T],
    unstable: &[T],
    key: impl Fn(&T) -> String,
    equal: impl Fn(&T, &T) -> bool,
    mark: impl Fn(&mut T, Stability),
) -> Vec<T> {
    let mut out = Vec::new();
    for u in unstable {
        match stable.iter().find(|s| key(s) == key(u)) {
            Some(s) if equal(s, u) => {
                let mut item = s.clone();
                mark(&mut item, Stability::Stable);
                out.push(item);
            }
            Some(s) => {
                let mut old = s.clone();
                mark(&mut old, Stability::StableOnly);
                out.push(old);
                let mut new = u.clone();
                mark(&mut new, Stability::Unstable);
                out.push(new);
            }
            None => {
                let mut item = u.clone();
                mark(&mut item, Stability::Unstable);
                out.push(item);
            }
        }
    }
    for s in stable {
        if !unstable.iter().any(|u| key(u) == key(s)) {
            let mut item = s.clone();
            mark(&mut item, Stability::StableOnly);
            out.push(item);
        }
    }
    out
}
