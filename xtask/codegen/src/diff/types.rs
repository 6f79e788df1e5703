//! One matched pair of types: fields by wire name, variants by tag value (or by the type an
//! untagged variant holds), enum values by wire string; presence, nullability, defaults, lenient
//! decoding, descriptions and stability; and how two references to types relate (same, wider,
//! narrower, unrelated).
//!
//! Openness is the schema's: a catch-all the generator added ([`CatchAllSource::Generator`])
//! leaves a type closed on the wire (other implementations refuse what it keeps); it shows only
//! in the Rust notes.

use super::compare::{rust_break, rust_note, Change, Comparison, Local, Pair, RustNote};
use super::report::{Rule, Severity};
use crate::ir::*;
use crate::naming;
use std::collections::{BTreeMap, BTreeSet};

/// A type's catch-all as the differ sees it: its Rust name, and whether the schema declares it.
#[derive(Debug, Clone, Copy)]
struct Catch<'a> {
    name: &'a str,
    declared: bool,
}

impl<'a> Catch<'a> {
    fn of_enum(c: &'a CatchAll) -> Self {
        Catch { name: &c.name, declared: c.source.declared() }
    }

    fn of_union(u: &'a Union) -> Option<Self> {
        u.variants.iter().find_map(|v| match v.kind {
            VariantKind::CatchAll(source) => Some(Catch { name: &v.name, declared: source.declared() }),
            _ => None,
        })
    }
}

/// How one value's type relates across the revisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rel {
    Same,
    /// The new type accepts every old value and more.
    Widened,
    Narrowed,
    Changed,
}

/// What the schema says of one item: its maturity and its description.
#[derive(Debug, Clone, Copy)]
struct Said<'a> {
    maturity: Maturity,
    docs: Option<&'a str>,
}

impl<'a> Said<'a> {
    fn of(maturity: Maturity, origin: &'a Origin) -> Self {
        Said { maturity, docs: origin.docs.as_deref() }
    }
}

/// The comparison of two references to types.
#[derive(Debug)]
struct RefCmp {
    rel: Rel,
    /// Named types to compare next (same kind on both sides).
    pairs: Vec<Pair>,
    /// The Rust type differs even where the wire does not.
    rust: bool,
}

/// A coarse view of the values a type accepts, to tell widening from narrowing.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Any,
    Null,
    Bool,
    String,
    /// A closed string enum.
    StrEnum,
    /// A closed integer enum.
    IntEnum,
    Int(IntKind),
    Float(FloatKind),
    Object,
    Struct,
    Union,
    Array,
    Map,
    MethodKeyed,
}

fn relate(old: &Shape, new: &Shape) -> Rel {
    use Shape as S;
    match (old, new) {
        (a, b) if a == b => Rel::Same,
        (_, S::Any) => Rel::Widened,
        (S::Any, _) => Rel::Narrowed,
        (S::StrEnum, S::String) | (S::IntEnum, S::Int(_) | S::Float(_)) => Rel::Widened,
        (S::String, S::StrEnum) | (S::Int(_) | S::Float(_), S::IntEnum) => Rel::Narrowed,
        (S::Int(a), S::Int(b)) => {
            let ((a0, a1), (b0, b1)) = (a.range(), b.range());
            if b0 <= a0 && a1 <= b1 {
                Rel::Widened
            } else if a0 <= b0 && b1 <= a1 {
                Rel::Narrowed
            } else {
                Rel::Changed
            }
        }
        (S::Int(_), S::Float(_)) | (S::Float(FloatKind::F32), S::Float(FloatKind::F64)) => Rel::Widened,
        (S::Float(_), S::Int(_)) | (S::Float(FloatKind::F64), S::Float(FloatKind::F32)) => Rel::Narrowed,
        (S::Struct | S::Map, S::Object) => Rel::Widened,
        (S::Object, S::Struct | S::Map) => Rel::Narrowed,
        _ => Rel::Changed,
    }
}

fn must_be_present(p: &Presence) -> bool {
    matches!(p, Presence::Required | Presence::RequiredNullable)
}

fn admits_null(p: &Presence) -> bool {
    matches!(p, Presence::RequiredNullable | Presence::Patch)
}

fn presence_text(p: &Presence) -> String {
    match p {
        Presence::Required => "required".into(),
        Presence::RequiredNullable => "required, may be null".into(),
        Presence::Optional => "optional".into(),
        Presence::Patch => "optional, may be null (patch)".into(),
        Presence::Defaulted(v) => format!("optional, default {v}"),
    }
}

/// The Rust wrapper of a field with this presence around its type `T`.
fn rust_wrapper(p: &Presence) -> &'static str {
    match p {
        Presence::Required => "T",
        Presence::RequiredNullable | Presence::Optional => "Option<T>",
        Presence::Patch => "Patch<T>",
        Presence::Defaulted(_) => "Defaulted<T>",
    }
}

fn lenient_text(l: &Lenient) -> String {
    let mut parts = Vec::new();
    if l.default_on_error {
        parts.push("default-on-error");
    }
    if l.skip_invalid_items {
        parts.push("skip-invalid-items");
    }
    if l.default_on_null {
        parts.push("default-on-null");
    }
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

impl Comparison<'_> {
    /// Whether two named types are compared as one: same kind, or a struct and the union that
    /// wraps it in a tagged variant.
    pub(super) fn pairable(&self, a: TypeId, b: TypeId) -> bool {
        let (ot, nt) = (self.old.get(a), self.new.get(b));
        match (&ot.kind, &nt.kind) {
            (TypeKind::Struct(_), TypeKind::Union(u)) => wrapping_variant(self.new, u, &ot.name).is_some(),
            (TypeKind::Union(u), TypeKind::Struct(_)) => wrapping_variant(self.old, u, &nt.name).is_some(),
            (x, y) => same_kind(x, y),
        }
    }

    pub(super) fn compare_pair(&self, a: TypeId, b: TypeId) -> Local {
        let (ot, nt) = (self.old.get(a), self.new.get(b));
        let mut l = Local::default();
        let loc = nt.name.as_str();
        if ot.name != nt.name && (ot.named || nt.named) {
            l.changes.push(
                Change::new(
                    Rule::TypeRenamed,
                    loc,
                    format!("`{}` is now `{}`; names are not on the wire", ot.name, nt.name),
                )
                .values(Some(ot.name.clone()), Some(nt.name.clone()))
                .rust(rust_break(format!("`{}` is renamed `{}`", ot.name, nt.name))),
            );
        }
        if ot.named || nt.named {
            self.docs(&mut l, loc, Said::of(ot.maturity, &ot.origin), Said::of(nt.maturity, &nt.origin));
        }
        match (&ot.kind, &nt.kind) {
            (TypeKind::Struct(os), TypeKind::Struct(ns)) => self.structs(&mut l, loc, os, ns),
            (TypeKind::Union(ou), TypeKind::Union(nu)) => self.unions(&mut l, loc, ou, nu),
            (
                TypeKind::StringEnum { values: ov, catch_all: oo },
                TypeKind::StringEnum { values: nv, catch_all: no },
            ) => {
                let old: Vec<(String, Said)> =
                    ov.iter().map(|v| (v.origin.wire.clone(), Said::of(v.maturity, &v.origin))).collect();
                let new: Vec<(String, Said)> =
                    nv.iter().map(|v| (v.origin.wire.clone(), Said::of(v.maturity, &v.origin))).collect();
                let rust_name = |wire: &str, vs: &[EnumValue]| {
                    vs.iter().find(|v| v.origin.wire == wire).map(|v| v.name.clone()).unwrap_or_default()
                };
                let names = (|w: &str| rust_name(w, ov), |w: &str| rust_name(w, nv));
                self.enums(&mut l, loc, (&old, oo), (&new, no), true, names);
            }
            (
                TypeKind::IntEnum { values: ov, catch_all: oo, .. },
                TypeKind::IntEnum { values: nv, catch_all: no, .. },
            ) => {
                let old: Vec<(String, Said)> =
                    ov.iter().map(|v| (v.value.to_string(), Said::of(v.maturity, &v.origin))).collect();
                let new: Vec<(String, Said)> =
                    nv.iter().map(|v| (v.value.to_string(), Said::of(v.maturity, &v.origin))).collect();
                let rust_name = |wire: &str, vs: &[IntValue]| {
                    vs.iter().find(|v| v.value.to_string() == wire).map(|v| v.name.clone()).unwrap_or_default()
                };
                let names = (|w: &str| rust_name(w, ov), |w: &str| rust_name(w, nv));
                self.enums(&mut l, loc, (&old, oo), (&new, no), false, names);
            }
            (TypeKind::Newtype { inner: oi, .. }, TypeKind::Newtype { inner: ni, .. }) => {
                self.value(&mut l, loc, oi, ni, (false, false))
            }
            (TypeKind::Any, TypeKind::Any) => {}
            (TypeKind::Struct(_), TypeKind::Union(nu)) if wrapping_variant(self.new, nu, &ot.name).is_some() => {
                self.wrapped(&mut l, loc, a, nu, true);
            }
            (TypeKind::Union(ou), TypeKind::Struct(_)) if wrapping_variant(self.old, ou, &nt.name).is_some() => {
                self.wrapped(&mut l, loc, b, ou, false);
            }
            (ok, nk) => l.changes.push(
                Change::new(Rule::TypeChanged, loc, format!("was {}, now {}", kind_text_of(ok), kind_text_of(nk)))
                    .values(Some(kind_text_of(ok).into()), Some(kind_text_of(nk).into()))
                    .rejects(true, true)
                    .rust(rust_break(format!("`{}` is a different kind of type", nt.name))),
            ),
        }
        l
    }

    /// A struct that became one tagged variant of a union (`tagged`), or the reverse: the struct
    /// is compared with the variant's body, the tag is reported, other variants are additions
    /// (removals) that the plain struct never knew.
    fn wrapped(&self, l: &mut Local, ty: &str, plain: TypeId, union: &Union, tagged: bool) {
        let (p, plain_name) =
            if tagged { (self.new, &self.old.get(plain).name) } else { (self.old, &self.new.get(plain).name) };
        let Some((index, body)) = wrapping_variant(p, union, plain_name) else {
            return;
        };
        l.children.push((if tagged { (plain, body) } else { (body, plain) }, false, false));
        let tag = union.tag.as_deref().unwrap_or("type");
        for (i, v) in union.variants.iter().enumerate() {
            let at = variant_at(ty, v);
            if i == index {
                let VariantKind::Tagged { value, .. } = &v.kind else {
                    continue;
                };
                let body_name = &p.get(body).name;
                let change = if tagged {
                    Change::new(
                        Rule::TagAdded,
                        &at,
                        format!("now a tagged union: values carry `\"{tag}\": \"{value}\"` around the fields of `{body_name}`"),
                    )
                    .values(Some(format!("struct {plain_name}")), Some(format!("{tag} = \"{value}\"")))
                    .rejects(false, true)
                    .rust(rust_break(format!("`{ty}` becomes an enum; its fields move to `{body_name}`")))
                } else {
                    Change::new(
                        Rule::TagRemoved,
                        &at,
                        format!("no longer a tagged union: values are the fields of `{body_name}` without `{tag}`"),
                    )
                    .values(Some(format!("{tag} = \"{value}\"")), Some(format!("struct {}", self.new.get(plain).name)))
                    .rejects(true, false)
                    .rust(rust_break(format!("`{ty}` becomes a struct")))
                };
                l.changes.push(change);
            } else if !matches!(v.kind, VariantKind::CatchAll(_)) {
                let (rule, text, rejects) = if tagged {
                    (Rule::VariantAdded, format!("new variant {}", variant_text(p, v)), (true, false))
                } else {
                    (Rule::VariantRemoved, format!("variant {} is removed", variant_text(p, v)), (false, true))
                };
                l.changes.push(
                    Change::new(rule, &at, text)
                        .rejects(rejects.0, rejects.1)
                        .rust(rust_note(format!("`{ty}` is now a different kind of type"))),
                );
            }
        }
    }

    /// Description and stability of one item.
    fn docs(&self, l: &mut Local, loc: &str, old: Said, new: Said) {
        let (ou, nu) = (old.maturity == Maturity::Unstable, new.maturity == Maturity::Unstable);
        if ou != nu {
            let (message, base) = if ou {
                ("no longer marked unstable: now part of the stable protocol", Severity::Info)
            } else {
                ("now marked **UNSTABLE**", Severity::Warning)
            };
            let text = |u: bool| Some(if u { "unstable" } else { "stable" }.to_string());
            l.changes
                .push(Change::new(Rule::StabilityChanged, loc, message.into()).values(text(ou), text(nu)).base(base));
        }
        let (od, nd) = (naming::without_unstable_marker(old.docs), naming::without_unstable_marker(new.docs));
        if od != nd {
            let message = match (&od, &nd) {
                (None, _) => "description added",
                (_, None) => "description removed",
                _ => "description changed",
            };
            l.changes.push(Change::new(Rule::DocsChanged, loc, message.into()).values(od, nd).base(Severity::Docs));
        }
    }

    fn structs(&self, l: &mut Local, loc: &str, os: &Struct, ns: &Struct) {
        let ty = loc;
        for of in &os.fields {
            let at = format!("{ty}.{}", of.origin.wire);
            match ns.fields.iter().find(|f| f.origin.wire == of.origin.wire) {
                Some(nf) => self.field(l, ty, &at, of, nf),
                None => {
                    let required = must_be_present(&of.presence);
                    let message = format!(
                        "field `{}` is removed (it was {})",
                        of.origin.wire,
                        if required { "required" } else { "optional" }
                    );
                    l.changes.push(
                        Change::new(Rule::FieldRemoved, &at, message)
                            .values(Some(self.describe_old(&of.ty)), None)
                            .rejects(required, false)
                            .rust(rust_break(format!("field `{ty}::{}` is gone", of.name))),
                    );
                }
            }
        }
        for nf in &ns.fields {
            if os.fields.iter().any(|f| f.origin.wire == nf.origin.wire) {
                continue;
            }
            let at = format!("{ty}.{}", nf.origin.wire);
            let described = self.describe_new(&nf.ty);
            if must_be_present(&nf.presence) {
                l.changes.push(
                    Change::new(
                        Rule::RequiredFieldAdded,
                        &at,
                        format!("new required field `{}` ({described})", nf.origin.wire),
                    )
                    .values(None, Some(format!("{described}, {}", presence_text(&nf.presence))))
                    .rejects(false, true)
                    .rust(rust_break(format!("`{ty}::new` takes a new `{}` argument", nf.name))),
                );
            } else {
                l.changes.push(
                    Change::new(
                        Rule::OptionalFieldAdded,
                        &at,
                        format!("new optional field `{}` ({described})", nf.origin.wire),
                    )
                    .values(None, Some(format!("{described}, {}", presence_text(&nf.presence)))),
                );
            }
        }
        match (&os.flatten, &ns.flatten) {
            (Some(a), Some(b)) => l.children.push(((a.ty, b.ty), false, false)),
            (None, None) => {}
            (a, _) => {
                let message = if a.is_some() {
                    "no longer has a variant-dependent part"
                } else {
                    "gains a variant-dependent part (a flattened union)"
                };
                l.changes.push(
                    Change::new(Rule::TypeChanged, ty, message.into())
                        .rejects(true, true)
                        .rust(rust_break(format!("`{ty}::new` changes its arguments"))),
                );
            }
        }
    }

    fn field(&self, l: &mut Local, ty: &str, at: &str, of: &Field, nf: &Field) {
        self.presence(l, ty, at, of, nf);
        if of.lenient != nf.lenient {
            let lost = (of.lenient.default_on_error && !nf.lenient.default_on_error)
                || (of.lenient.skip_invalid_items && !nf.lenient.skip_invalid_items)
                || (of.lenient.default_on_null && !nf.lenient.default_on_null);
            let message = if lost {
                "lenient decoding reduced: new receivers reject values that old ones repaired"
            } else {
                "lenient decoding added: new receivers repair values instead of rejecting the message"
            };
            l.changes.push(
                Change::new(Rule::LenientChanged, at, message.into())
                    .values(Some(lenient_text(&of.lenient)), Some(lenient_text(&nf.lenient)))
                    .base(if lost { Severity::Warning } else { Severity::Info }),
            );
        }
        let arrays = matches!((&of.ty, &nf.ty), (TypeRef::Array(_), TypeRef::Array(_)));
        let absorbs = |f: &Field| f.lenient.default_on_error || (arrays && f.lenient.skip_invalid_items);
        self.value(l, at, &of.ty, &nf.ty, (absorbs(of), absorbs(nf)));
        self.docs(l, at, Said::of(of.maturity, &of.origin), Said::of(nf.maturity, &nf.origin));
    }

    fn presence(&self, l: &mut Local, ty: &str, at: &str, of: &Field, nf: &Field) {
        let (po, pn) = (&of.presence, &nf.presence);
        if po.same_on_wire(pn) {
            return;
        }
        let wire = &of.origin.wire;
        let (mo, mn) = (must_be_present(po), must_be_present(pn));
        let (no, nn) = (admits_null(po), admits_null(pn));
        // `null` newly allowed: an old receiver without null-tolerant decoding rejects it.
        let null_absorbed = |f: &Field| f.lenient.default_on_null || f.lenient.default_on_error;
        let (rule, message) = if mo && !mn {
            (Rule::FieldBecameOptional, format!("`{wire}` may now be omitted"))
        } else if !mo && mn {
            (Rule::FieldBecameRequired, format!("`{wire}` must now be present"))
        } else if no != nn {
            let text = if nn { "may now be null" } else { "may no longer be null" };
            (Rule::NullableChanged, format!("`{wire}` {text}"))
        } else {
            let text = match (po, pn) {
                (Presence::Defaulted(a), Presence::Defaulted(b)) => format!("default changed from {a} to {b}"),
                (_, Presence::Defaulted(b)) => format!("now defaults to {b} when omitted"),
                (Presence::Defaulted(a), _) => format!("no longer defaults to {a} when omitted"),
                _ => "presence changed".to_string(),
            };
            (Rule::DefaultChanged, format!("`{wire}` {text}"))
        };
        let mut change = Change::new(rule, at, message).values(Some(presence_text(po)), Some(presence_text(pn)));
        // Omission: only the receiver's presence rule decides.
        change.new_to_old = mo && !mn;
        change.old_to_new = !mo && mn;
        // Null: lenient decoding of the receiver may turn it into the default.
        let null_new_to_old = !no && nn;
        let null_old_to_new = no && !nn;
        if null_new_to_old && !change.new_to_old {
            change.new_to_old = true;
            change.absorbed_old = null_absorbed(of);
        }
        if null_old_to_new && !change.old_to_new {
            change.old_to_new = true;
            change.absorbed_new = null_absorbed(nf);
        }
        if rule == Rule::DefaultChanged {
            // What an omitted field means changes for new receivers.
            change.base = Severity::Warning;
        }
        let (wo, wn) = (rust_wrapper(po), rust_wrapper(pn));
        let field = format!("`{ty}::{}`", nf.name);
        change.rust = if wo != wn {
            rust_break(format!("{field} changes from `{wo}` to `{wn}`"))
        } else if mo != mn {
            let verb = if mn { "takes" } else { "no longer takes" };
            rust_break(format!("`{ty}::new` {verb} a `{}` argument", nf.name))
        } else {
            None
        };
        l.changes.push(change);
    }

    /// A value's type at `at`: compares, records the pairs below, and reports a change of type.
    fn value(&self, l: &mut Local, at: &str, old: &TypeRef, new: &TypeRef, absorbs: (bool, bool)) {
        let cmp = self.compare_ref(old, new, 0);
        for pair in &cmp.pairs {
            l.children.push((*pair, absorbs.0, absorbs.1));
        }
        let (mut o, mut n) = (self.describe_old(old), self.describe_new(new));
        if o == n {
            o = format!("{o} ({})", self.kind_of(self.old, old));
            n = format!("{n} ({})", self.kind_of(self.new, new));
        }
        let (rule, verb, rejects) = match cmp.rel {
            Rel::Same if cmp.rust => (Rule::RustTypeChanged, "", (false, false)),
            Rel::Same => return,
            Rel::Widened => (Rule::TypeWidened, "type widened", (true, false)),
            Rel::Narrowed => (Rule::TypeNarrowed, "type narrowed", (false, true)),
            Rel::Changed => (Rule::TypeChanged, "type changed", (true, true)),
        };
        let message = if rule == Rule::RustTypeChanged {
            format!("same values on the wire ({o} → {n})")
        } else {
            format!("{verb} from {o} to {n}")
        };
        l.changes.push(
            Change::new(rule, at, message)
                .values(Some(o.clone()), Some(n.clone()))
                .rejects(rejects.0, rejects.1)
                .absorbed(absorbs.0, absorbs.1)
                .rust(rust_break(format!("`{o}` becomes `{n}`"))),
        );
    }

    fn enums<F: Fn(&str) -> String, G: Fn(&str) -> String>(
        &self,
        l: &mut Local,
        ty: &str,
        old: (&[(String, Said)], &CatchAll),
        new: (&[(String, Said)], &CatchAll),
        strings: bool,
        names: (F, G),
    ) {
        let ((ov, oo), (nv, no)) = (old, new);
        let shown = |w: &str| if strings { format!("\"{w}\"") } else { w.to_string() };
        for (wire, docs) in ov {
            let at = format!("{ty}::{wire}");
            match nv.iter().find(|(w, _)| w == wire) {
                Some((_, nd)) => self.docs(l, &at, *docs, *nd),
                None => {
                    let open = no.source.declared();
                    let message = if open {
                        format!("value {} is removed; new receivers keep it as unknown", shown(wire))
                    } else {
                        format!("value {} is removed", shown(wire))
                    };
                    l.changes.push(
                        Change::new(Rule::EnumValueRemoved, &at, message)
                            .values(Some(shown(wire)), None)
                            .rejects(false, !open)
                            .rust(rust_break(format!("variant `{ty}::{}` is gone", (names.0)(wire)))),
                    );
                }
            }
        }
        for (wire, _) in nv {
            if ov.iter().any(|(w, _)| w == wire) {
                continue;
            }
            let at = format!("{ty}::{wire}");
            let open = oo.source.declared();
            let message = if open {
                format!("new value {} (old receivers keep it as unknown)", shown(wire))
            } else {
                format!("new value {} in a closed enum", shown(wire))
            };
            l.changes.push(
                Change::new(Rule::EnumValueAdded, &at, message)
                    .values(None, Some(shown(wire)))
                    .rejects(!open, false)
                    .rust(rust_note(format!("exhaustive matches on `{ty}` need an arm for `{}`", (names.1)(wire)))),
            );
        }
        self.openness(l, ty, Some(Catch::of_enum(oo)), Some(Catch::of_enum(no)));
        if oo.source.declared() && no.source.declared() {
            let (o, n) = (oo, no);
            self.docs(
                l,
                &format!("{ty}::{}", n.name),
                Said::of(o.maturity, &o.origin),
                Said::of(n.maturity, &n.origin),
            );
        }
    }

    /// A catch-all the schema declares gained or lost (enums and unions). In Rust, the type may
    /// have had (or keep) a catch-all the generator added: then only its name can change.
    fn openness(&self, l: &mut Local, ty: &str, old: Option<Catch>, new: Option<Catch>) {
        let declared = |c: Option<Catch<'_>>| c.filter(|c| c.declared).map(|c| c.name.to_string());
        let renamed = |from: &str, to: &str| {
            (from != to).then(|| format!("the catch-all variant `{ty}::{from}` is now `{ty}::{to}`"))
        };
        match (declared(old), declared(new)) {
            (None, Some(name)) => {
                let rust = match old {
                    Some(added) => renamed(added.name, &name).and_then(rust_break),
                    None => rust_note(format!("`{ty}` gains the catch-all variant `{name}`")),
                };
                l.changes.push(
                    Change::new(Rule::EnumOpened, ty, "now open: new receivers accept unknown values".into())
                        .values(Some("closed".into()), Some("open".into()))
                        .rust(rust),
                );
            }
            (Some(name), None) => {
                let rust = match new {
                    Some(added) => renamed(&name, added.name).and_then(rust_break),
                    None => rust_break(format!("the catch-all variant `{ty}::{name}` is gone")),
                };
                l.changes.push(
                    Change::new(Rule::EnumClosed, ty, "now closed: unknown values are rejected".into())
                        .values(Some("open".into()), Some("closed".into()))
                        .rejects(false, true)
                        .rust(rust),
                )
            }
            _ => {}
        }
    }

    fn unions(&self, l: &mut Local, ty: &str, ou: &Union, nu: &Union) {
        self.union_tag(l, ty, ou, nu);
        let (oc, nc) = (Catch::of_union(ou), Catch::of_union(nu));
        self.openness(l, ty, oc, nc);
        // Open on the wire: the schema declares the catch-all.
        let (oc, nc) = (oc.filter(|c| c.declared), nc.filter(|c| c.declared));
        if let (Some(o), Some(n)) = (declared_catch_all(ou), declared_catch_all(nu)) {
            self.docs(
                l,
                &format!("{ty}::{}", n.name),
                Said::of(o.maturity, &o.origin),
                Said::of(n.maturity, &n.origin),
            );
        }
        let matched = self.match_variants(ou, nu);
        let mut new_used = vec![false; nu.variants.len()];
        for (i, ov) in ou.variants.iter().enumerate() {
            if matches!(ov.kind, VariantKind::CatchAll(_)) {
                continue;
            }
            match matched.get(&i) {
                Some(&j) => {
                    new_used[j] = true;
                    self.variant(l, ty, ov, &nu.variants[j], (oc.is_some(), nc.is_some()), nu.tag.as_deref());
                }
                None => self.variant_removed(l, ty, ov, nc.is_some()),
            }
        }
        for (j, nv) in nu.variants.iter().enumerate() {
            if new_used[j] || matches!(nv.kind, VariantKind::CatchAll(_)) {
                continue;
            }
            self.variant_added(l, ty, nv, oc.is_some());
        }
    }

    /// What tells the variants apart (the tag, or none) and how leniently the tag is read.
    fn union_tag(&self, l: &mut Local, ty: &str, ou: &Union, nu: &Union) {
        if ou.tag != nu.tag {
            let text = |t: &Option<String>| t.clone().unwrap_or_else(|| "(untagged)".into());
            l.changes.push(
                Change::new(
                    Rule::UnionTagChanged,
                    ty,
                    format!("variants told apart by `{}`, was `{}`", text(&nu.tag), text(&ou.tag)),
                )
                .values(Some(text(&ou.tag)), Some(text(&nu.tag)))
                .rejects(true, true),
            );
        }
        if ou.tag_lenient != nu.tag_lenient {
            let at = format!("{ty}.{}", nu.tag.as_deref().unwrap_or("tag"));
            let lost = ou.tag_lenient.default_on_error && !nu.tag_lenient.default_on_error;
            l.changes.push(
                Change::new(Rule::LenientChanged, &at, "lenient decoding of the tag changed".into())
                    .values(Some(lenient_text(&ou.tag_lenient)), Some(lenient_text(&nu.tag_lenient)))
                    .base(if lost { Severity::Warning } else { Severity::Info }),
            );
        }
    }

    /// An old variant the new union lacks; `open`: the new union keeps unknown variants.
    fn variant_removed(&self, l: &mut Local, ty: &str, ov: &Variant, open: bool) {
        let at = variant_at(ty, ov);
        let open = open && matches!(ov.kind, VariantKind::Tagged { .. });
        let message = if open {
            format!("variant {} is removed; new receivers keep it as unknown", variant_text(self.old, ov))
        } else {
            format!("variant {} is removed", variant_text(self.old, ov))
        };
        l.changes.push(
            Change::new(Rule::VariantRemoved, &at, message)
                .values(Some(variant_text(self.old, ov)), None)
                .rejects(false, !open)
                .rust(rust_break(format!("variant `{ty}::{}` is gone", ov.name))),
        );
    }

    /// A new variant the old union lacks; `open`: the old union keeps unknown variants.
    fn variant_added(&self, l: &mut Local, ty: &str, nv: &Variant, open: bool) {
        let at = variant_at(ty, nv);
        let open = open && matches!(nv.kind, VariantKind::Tagged { .. });
        let message = if open {
            format!("new variant {} (old receivers keep it as unknown)", variant_text(self.new, nv))
        } else {
            format!("new variant {}", variant_text(self.new, nv))
        };
        l.changes.push(
            Change::new(Rule::VariantAdded, &at, message)
                .values(None, Some(variant_text(self.new, nv)))
                .rejects(!open, false)
                .rust(rust_note(format!("exhaustive matches on `{ty}` need an arm for `{}`", nv.name))),
        );
    }

    /// Old variant index → new variant index: tagged ones by tag value; untagged ones by the
    /// name of the type they hold, then by variant name, then by shape when that is unambiguous.
    fn match_variants(&self, ou: &Union, nu: &Union) -> BTreeMap<usize, usize> {
        let mut out = BTreeMap::new();
        let mut taken = BTreeSet::new();
        for (i, ov) in ou.variants.iter().enumerate() {
            if let VariantKind::Tagged { value, .. } = &ov.kind {
                let j = nu
                    .variants
                    .iter()
                    .position(|nv| matches!(&nv.kind, VariantKind::Tagged { value: w, .. } if w == value));
                if let Some(j) = j {
                    out.insert(i, j);
                    taken.insert(j);
                }
            }
        }
        self.match_untagged(ou, nu, &mut out, &mut taken);
        self.match_retagged(ou, nu, &mut out, &mut taken);
        out
    }

    /// Untagged variants not matched yet (into `out`, their new index into `taken`): by the type
    /// held, then by variant name, then by shape when that is unambiguous on both sides.
    fn match_untagged(&self, ou: &Union, nu: &Union, out: &mut BTreeMap<usize, usize>, taken: &mut BTreeSet<usize>) {
        let untagged = |u: &Union| -> Vec<usize> {
            (0..u.variants.len()).filter(|&i| matches!(u.variants[i].kind, VariantKind::Untagged(_))).collect()
        };
        let (ol, nl) = (untagged(ou), untagged(nu));
        // By the type held, by variant name, by shape.
        let key = |pass: usize, old: bool, v: &Variant| -> Option<String> {
            let p = if old { self.old } else { self.new };
            let VariantKind::Untagged(r) = &v.kind else {
                return None;
            };
            match (pass, r) {
                (0, TypeRef::Named(id)) => Some(p.get(*id).name.clone()),
                (0, _) => None,
                (1, _) => Some(v.name.clone()),
                _ => Some(format!("{:?}", self.shape(p, r, 0))),
            }
        };
        for pass in 0..3 {
            for &i in &ol {
                if out.contains_key(&i) {
                    continue;
                }
                let Some(k) = key(pass, true, &ou.variants[i]) else {
                    continue;
                };
                let candidates: Vec<usize> = nl
                    .iter()
                    .copied()
                    .filter(|j| !taken.contains(j) && key(pass, false, &nu.variants[*j]).as_ref() == Some(&k))
                    .collect();
                let rivals = ol
                    .iter()
                    .filter(|&&o| !out.contains_key(&o) && key(pass, true, &ou.variants[o]).as_ref() == Some(&k))
                    .count();
                // Shapes only decide when they are unambiguous on both sides.
                if candidates.len() == 1 && (pass < 2 || rivals == 1) {
                    out.insert(i, candidates[0]);
                    taken.insert(candidates[0]);
                }
            }
        }
    }

    /// An untagged variant that became tagged (or back) keeps the type it holds: matched by it.
    fn match_retagged(&self, ou: &Union, nu: &Union, out: &mut BTreeMap<usize, usize>, taken: &mut BTreeSet<usize>) {
        let held = |p: &Protocol, v: &Variant| match &v.kind {
            VariantKind::Untagged(TypeRef::Named(id)) | VariantKind::Tagged { body: Some(TypeRef::Named(id)), .. } => {
                Some(p.get(*id).name.clone())
            }
            _ => None,
        };
        for (i, ov) in ou.variants.iter().enumerate() {
            if out.contains_key(&i) || matches!(ov.kind, VariantKind::CatchAll(_)) {
                continue;
            }
            let Some(name) = held(self.old, ov) else {
                continue;
            };
            let found = nu.variants.iter().enumerate().find(|(j, nv)| {
                !taken.contains(j)
                    && matches!(ov.kind, VariantKind::Untagged(_)) != matches!(nv.kind, VariantKind::Untagged(_))
                    && held(self.new, nv).as_ref() == Some(&name)
            });
            if let Some((j, _)) = found {
                out.insert(i, j);
                taken.insert(j);
            }
        }
    }

    /// A matched variant; `open` says whether the old and new unions have a catch-all.
    fn variant(&self, l: &mut Local, ty: &str, ov: &Variant, nv: &Variant, open: (bool, bool), tag: Option<&str>) {
        let at = variant_at(ty, nv);
        self.docs(l, &at, Said::of(ov.maturity, &ov.origin), Said::of(nv.maturity, &nv.origin));
        let tag = tag.unwrap_or("type");
        match (&ov.kind, &nv.kind) {
            (VariantKind::Untagged(a), VariantKind::Untagged(b)) => self.value(l, &at, a, b, (false, false)),
            (VariantKind::Untagged(a), VariantKind::Tagged { value, body: Some(b) }) => {
                // Old senders omit the tag; new senders' tag is unknown to old receivers without
                // a catch-all.
                l.changes.push(
                    Change::new(
                        Rule::TagAdded,
                        &at,
                        format!("variant `{}` now carries `\"{tag}\": \"{value}\"`", ov.name),
                    )
                    .values(Some("untagged".into()), Some(format!("{tag} = \"{value}\"")))
                    .rejects(!open.0, true)
                    .rust(renamed_variant(ty, ov, nv)),
                );
                self.value(l, &at, a, b, (false, false));
            }
            (VariantKind::Tagged { value, body: Some(a) }, VariantKind::Untagged(b)) => {
                l.changes.push(
                    Change::new(
                        Rule::TagRemoved,
                        &at,
                        format!("variant `{}` no longer carries `\"{tag}\": \"{value}\"`", nv.name),
                    )
                    .values(Some(format!("{tag} = \"{value}\"")), Some("untagged".into()))
                    .rejects(true, !open.1)
                    .rust(renamed_variant(ty, ov, nv)),
                );
                self.value(l, &at, a, b, (false, false));
            }
            (VariantKind::Tagged { body: a, .. }, VariantKind::Tagged { body: b, .. }) => match (a, b) {
                (Some(a), Some(b)) => self.value(l, &at, a, b, (false, false)),
                (None, None) => {}
                (None, Some(b)) => {
                    let required = self.has_required(self.new, b);
                    l.changes.push(
                        Change::new(Rule::VariantBodyChanged, &at, format!("now carries {}", self.describe_new(b)))
                            .values(None, Some(self.describe_new(b)))
                            .rejects(false, required)
                            .rust(rust_break(format!("variant `{ty}::{}` now holds a value", nv.name))),
                    );
                }
                (Some(a), None) => {
                    let required = self.has_required(self.old, a);
                    l.changes.push(
                        Change::new(
                            Rule::VariantBodyChanged,
                            &at,
                            format!("no longer carries {}", self.describe_old(a)),
                        )
                        .values(Some(self.describe_old(a)), None)
                        .rejects(required, false)
                        .rust(rust_break(format!("variant `{ty}::{}` no longer holds a value", nv.name))),
                    );
                }
            },
            _ => {}
        }
    }

    /// Whether a variant body demands fields that a peer unaware of it would not send.
    fn has_required(&self, p: &Protocol, r: &TypeRef) -> bool {
        match r {
            TypeRef::Named(id) => match &p.get(*id).kind {
                TypeKind::Struct(s) => s.flatten.is_some() || s.fields.iter().any(|f| must_be_present(&f.presence)),
                TypeKind::Newtype { inner, .. } => self.has_required(p, inner),
                TypeKind::Any => false,
                _ => true,
            },
            TypeRef::Any | TypeRef::Object => false,
            _ => true,
        }
    }

    // ---- references ----------------------------------------------------------------------

    fn compare_ref(&self, old: &TypeRef, new: &TypeRef, depth: usize) -> RefCmp {
        let same = |pairs: Vec<Pair>| RefCmp { rel: Rel::Same, pairs, rust: false };
        let unwrap = |p: &Protocol, r: &TypeRef| match r {
            TypeRef::Named(id) => match &p.get(*id).kind {
                TypeKind::Newtype { inner, .. } => Some(inner.clone()),
                _ => None,
            },
            _ => None,
        };
        // Newtype chains are short; the bound only guards against a malformed cycle.
        if depth < 16 {
            match (old, new) {
                (TypeRef::Named(a), TypeRef::Named(b)) if self.pairable(*a, *b) => {
                    return same(vec![(*a, *b)]);
                }
                (TypeRef::Array(x), TypeRef::Array(y)) | (TypeRef::Map(x), TypeRef::Map(y)) => {
                    return self.compare_ref(x, y, depth + 1);
                }
                _ => {}
            }
            let (uo, un) = (unwrap(self.old, old), unwrap(self.new, new));
            if uo.is_some() || un.is_some() {
                let o = uo.unwrap_or_else(|| old.clone());
                let n = un.unwrap_or_else(|| new.clone());
                let mut inner = self.compare_ref(&o, &n, depth + 1);
                inner.rust = true;
                return inner;
            }
        }
        if old == new && !matches!(old, TypeRef::Named(_)) {
            return same(Vec::new());
        }
        let rel = relate(&self.shape(self.old, old, 0), &self.shape(self.new, new, 0));
        RefCmp { rel: if rel == Rel::Same { Rel::Changed } else { rel }, pairs: Vec::new(), rust: true }
    }

    fn shape(&self, p: &Protocol, r: &TypeRef, depth: usize) -> Shape {
        match r {
            TypeRef::Named(id) => match &p.get(*id).kind {
                TypeKind::Struct(_) => Shape::Struct,
                TypeKind::Union(_) => Shape::Union,
                TypeKind::StringEnum { catch_all, .. } if catch_all.source.declared() => Shape::String,
                TypeKind::StringEnum { .. } => Shape::StrEnum,
                TypeKind::IntEnum { catch_all, repr, .. } if catch_all.source.declared() => Shape::Int(*repr),
                TypeKind::IntEnum { .. } => Shape::IntEnum,
                TypeKind::Any => Shape::Any,
                TypeKind::Newtype { inner, .. } if depth < 16 => self.shape(p, inner, depth + 1),
                TypeKind::Newtype { .. } => Shape::Any,
            },
            TypeRef::String => Shape::String,
            TypeRef::Bool => Shape::Bool,
            TypeRef::Int(k) => Shape::Int(*k),
            TypeRef::Float(k) => Shape::Float(*k),
            TypeRef::Null => Shape::Null,
            TypeRef::Any => Shape::Any,
            TypeRef::Object => Shape::Object,
            TypeRef::Array(_) => Shape::Array,
            TypeRef::Map(_) => Shape::Map,
            TypeRef::MethodKeyed => Shape::MethodKeyed,
        }
    }

    /// What kind of type a reference ends in, to tell apart two types of the same name.
    fn kind_of(&self, p: &Protocol, r: &TypeRef) -> &'static str {
        match r {
            TypeRef::Named(id) => kind_text_of(&p.get(*id).kind),
            TypeRef::Array(inner) | TypeRef::Map(inner) => self.kind_of(p, inner),
            _ => "a scalar",
        }
    }

    fn describe_old(&self, r: &TypeRef) -> String {
        describe(self.old, r)
    }

    fn describe_new(&self, r: &TypeRef) -> String {
        describe(self.new, r)
    }
}

fn same_kind(a: &TypeKind, b: &TypeKind) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The tagged variant of `u` whose body is the struct that a plain struct `name` became (or came
/// from): the one holding a struct of that name, else the only one holding a struct.
fn wrapping_variant(p: &Protocol, u: &Union, name: &str) -> Option<(usize, TypeId)> {
    let bodies: Vec<(usize, TypeId)> = u
        .variants
        .iter()
        .enumerate()
        .filter_map(|(i, v)| match &v.kind {
            VariantKind::Tagged { body: Some(TypeRef::Named(id)), .. }
                if matches!(p.get(*id).kind, TypeKind::Struct(_)) =>
            {
                Some((i, *id))
            }
            _ => None,
        })
        .collect();
    if let Some(&hit) = bodies.iter().find(|(_, id)| p.get(*id).name == name) {
        return Some(hit);
    }
    match bodies.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

fn kind_text_of(k: &TypeKind) -> &'static str {
    match k {
        TypeKind::Struct(_) => "a struct",
        TypeKind::Newtype { .. } => "a newtype",
        TypeKind::StringEnum { .. } => "a string enum",
        TypeKind::IntEnum { .. } => "an integer enum",
        TypeKind::Union(_) => "a union",
        TypeKind::Any => "any JSON value",
    }
}

fn declared_catch_all(u: &Union) -> Option<&Variant> {
    u.variants.iter().find(|v| v.kind == VariantKind::CatchAll(CatchAllSource::Schema))
}

fn renamed_variant(ty: &str, ov: &Variant, nv: &Variant) -> Option<RustNote> {
    (ov.name != nv.name)
        .then(|| RustNote { text: format!("variant `{ty}::{}` is now `{ty}::{}`", ov.name, nv.name), breaks: true })
}

fn variant_at(ty: &str, v: &Variant) -> String {
    match &v.kind {
        VariantKind::Tagged { value, .. } => format!("{ty}::{value}"),
        _ => format!("{ty}::{}", v.name),
    }
}

fn variant_text(p: &Protocol, v: &Variant) -> String {
    match &v.kind {
        VariantKind::Tagged { value, .. } => format!("\"{value}\""),
        VariantKind::Untagged(r) => format!("`{}` ({})", v.name, describe(p, r)),
        VariantKind::CatchAll(_) => format!("`{}`", v.name),
    }
}

/// A short name for a type reference, as messages show it.
fn describe(p: &Protocol, r: &TypeRef) -> String {
    match r {
        TypeRef::Named(id) => p.get(*id).name.clone(),
        TypeRef::String => "string".into(),
        TypeRef::Bool => "boolean".into(),
        TypeRef::Int(k) => format!("integer ({})", format!("{k:?}").to_lowercase()),
        TypeRef::Float(FloatKind::F32) => "number (f32)".into(),
        TypeRef::Float(FloatKind::F64) => "number".into(),
        TypeRef::Null => "null".into(),
        TypeRef::Any => "any JSON value".into(),
        TypeRef::Object => "object".into(),
        TypeRef::Array(inner) => format!("array of {}", describe(p, inner)),
        TypeRef::Map(inner) => format!("map of {}", describe(p, inner)),
        TypeRef::MethodKeyed => "method-dependent payload".into(),
    }
}
