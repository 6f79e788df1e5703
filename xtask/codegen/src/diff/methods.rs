//! Methods across two revisions: matched by name, side and kind, then by name and side (a kind
//! change), then by name alone (a side change), then by wire shape (a rename); the rest are added
//! or removed.

use super::compare::{dirs_label, params_dirs, plural, Comparison, Dir, Pair};
use super::report::{Finding, Rule, Severity};
use crate::ir::*;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// A method, matched or not, with the label findings show.
pub(super) struct MethodPair<'a> {
    pub(super) label: String,
    pub(super) old: &'a Method,
    pub(super) new: &'a Method,
}

impl<'a> Comparison<'a> {
    /// Pairs the methods of the two revisions and reports what changed about each as a method.
    pub(super) fn match_methods(&mut self) -> Vec<MethodPair<'a>> {
        let (old, new) = (self.old, self.new);
        let label = labels(old, new);
        let mut old_left: Vec<&'a Method> = old.methods.iter().collect();
        let mut new_left: Vec<&'a Method> = new.methods.iter().collect();
        let mut pairs = Vec::new();
        type Same = fn(&Method, &Method) -> bool;
        let passes: [Same; 3] = [
            |a, b| a.name == b.name && a.side == b.side && a.kind == b.kind,
            |a, b| a.name == b.name && a.side == b.side,
            |a, b| a.name == b.name,
        ];
        for same in passes {
            let mut i = 0;
            while i < old_left.len() {
                match new_left.iter().position(|n| same(old_left[i], n)) {
                    Some(j) => {
                        let (o, n) = (old_left.remove(i), new_left.remove(j));
                        pairs.push(MethodPair { label: label(n), old: o, new: n });
                    }
                    None => i += 1,
                }
            }
        }
        for p in &pairs {
            self.method_changes(p);
        }
        pairs.extend(self.match_renamed(&mut old_left, &mut new_left, &label));
        for o in old_left {
            self.method_removed(o, &label(o));
        }
        for n in new_left {
            self.method_added(n, &label(n));
        }
        pairs
    }

    /// Renames among the methods left unmatched (taken out of `old_left` and `new_left`): same
    /// side and kind, same wire shape; a shared word in the name breaks ties.
    fn match_renamed(
        &mut self,
        old_left: &mut Vec<&'a Method>,
        new_left: &mut Vec<&'a Method>,
        label: &impl Fn(&Method) -> String,
    ) -> Vec<MethodPair<'a>> {
        let mut pairs = Vec::new();
        let mut i = 0;
        while i < old_left.len() {
            let o = old_left[i];
            let mut candidates: Vec<usize> = (0..new_left.len())
                .filter(|&j| {
                    let n = new_left[j];
                    n.side == o.side && n.kind == o.kind && self.same_method_shape(o, n)
                })
                .collect();
            if candidates.len() > 1 {
                let words = |name: &str| -> BTreeSet<String> {
                    name.split(['/', '_', '$']).filter(|w| !w.is_empty()).map(str::to_string).collect()
                };
                let ow = words(&o.name);
                candidates.retain(|&j| !words(&new_left[j].name).is_disjoint(&ow));
            }
            if let [j] = candidates.as_slice() {
                let (o, n) = (old_left.remove(i), new_left.remove(*j));
                let pair = MethodPair { label: label(n), old: o, new: n };
                self.method_renamed(&pair, &label(o));
                pairs.push(pair);
            } else {
                i += 1;
            }
        }
        pairs
    }

    fn method_finding(&mut self, rule: Rule, label: &str, dirs: &[Dir], message: String) -> &mut Finding {
        let set: BTreeSet<Dir> = dirs.iter().cloned().collect();
        self.findings.push(Finding {
            rule,
            severity: Severity::Info,
            direction: dirs_label(&set),
            method: label.to_string(),
            methods: vec![label.to_string()],
            location: String::new(),
            message,
            old: None,
            new: None,
            breaks: Vec::new(),
            tolerated: Vec::new(),
            rust: None,
        });
        let last = self.findings.len() - 1;
        &mut self.findings[last]
    }

    fn method_added(&mut self, m: &Method, label: &str) {
        let what = kind_text(m.kind);
        // `protocol` methods are handled by whichever peer receives them.
        let (handler, receivers) = match m.side.receiver {
            Receiver::Either => ("either side".to_string(), "peers".to_string()),
            Receiver::Agent | Receiver::Client | Receiver::Proxy | Receiver::Other => {
                (format!("the {}", m.side.wire), plural(&m.side.wire))
            }
        };
        let effect = match m.kind {
            MethodKind::Request => format!("old {receivers} answer -32601 (method not found)"),
            MethodKind::Notification => format!("old {receivers} ignore it"),
        };
        let message = format!("new {what} `{}` handled by {handler}; {effect}", m.name);
        let f = self.method_finding(Rule::MethodAdded, label, &params_dirs(&m.side), message);
        f.new = Some(method_text(m));
    }

    fn method_removed(&mut self, m: &Method, label: &str) {
        let dirs = params_dirs(&m.side);
        let message = format!("{} `{}` is removed", kind_text(m.kind), m.name);
        let f = self.method_finding(Rule::MethodRemoved, label, &dirs, message);
        f.severity = Severity::Breaking;
        f.old = Some(method_text(m));
        f.breaks = dirs.iter().map(Dir::old_to_new).collect();
        f.rust = Some("its marker type and handler method are gone".into());
    }

    fn method_renamed(&mut self, p: &MethodPair, old_label: &str) {
        let dirs = params_dirs(&p.new.side);
        let message = format!("`{}` is renamed `{}` (same params and result on the wire)", p.old.name, p.new.name);
        let f = self.method_finding(Rule::MethodRenamed, &p.label, &dirs, message);
        f.severity = Severity::Breaking;
        f.old = Some(old_label.to_string());
        f.new = Some(p.new.name.clone());
        f.breaks = dirs.iter().flat_map(|d| [d.old_to_new(), d.new_to_old()]).collect();
        f.rust = Some("the method's marker type and handler method are renamed".into());
    }

    /// Side and kind changes of methods matched by name.
    fn method_changes(&mut self, p: &MethodPair) {
        let (o, n) = (p.old, p.new);
        let old_dirs = params_dirs(&o.side);
        let new_dirs = params_dirs(&n.side);
        let mut breaks: Vec<String> = old_dirs.iter().map(Dir::old_to_new).collect();
        breaks.extend(new_dirs.iter().map(Dir::new_to_old));
        breaks.sort();
        breaks.dedup();
        if o.side != n.side {
            let message = format!("now handled by the {} instead of the {}", n.side.wire, o.side.wire);
            let mut all = old_dirs.clone();
            all.extend(new_dirs.iter().cloned());
            let f = self.method_finding(Rule::MethodSideChanged, &p.label, &all, message);
            f.severity = Severity::Breaking;
            f.old = Some(o.side.wire.clone());
            f.new = Some(n.side.wire.clone());
            f.breaks = breaks.clone();
            f.rust = Some("the method moves to the other side's handler trait and message enums".into());
        }
        if o.kind != n.kind {
            let message = format!("was a {}, now a {}", kind_text(o.kind), kind_text(n.kind));
            let f = self.method_finding(Rule::MethodKindChanged, &p.label, &new_dirs, message);
            f.severity = Severity::Breaking;
            f.old = Some(kind_text(o.kind).into());
            f.new = Some(kind_text(n.kind).into());
            f.breaks = breaks;
            f.rust = Some("the method's marker type changes trait".into());
        }
    }

    fn same_method_shape(&self, o: &Method, n: &Method) -> bool {
        let mut assumed = HashSet::new();
        let results = match (o.result, n.result) {
            (Some(a), Some(b)) => self.same_type(a, b, &mut assumed),
            (None, None) => true,
            _ => false,
        };
        results && self.same_type(o.params, n.params, &mut assumed)
    }

    /// Structural equality on the wire: names, docs and lenient decoding aside. A pair under
    /// comparison is assumed equal, so cycles terminate.
    pub(super) fn same_type(&self, a: TypeId, b: TypeId, assumed: &mut HashSet<Pair>) -> bool {
        if !assumed.insert((a, b)) {
            return true;
        }
        match (&self.old.get(a).kind, &self.new.get(b).kind) {
            (TypeKind::Struct(x), TypeKind::Struct(y)) => {
                x.fields.len() == y.fields.len()
                    && x.fields.iter().all(|f| {
                        y.fields.iter().any(|g| {
                            g.origin.wire == f.origin.wire
                                && g.presence.same_on_wire(&f.presence)
                                && self.same_ref(&f.ty, &g.ty, assumed)
                        })
                    })
                    && match (&x.flatten, &y.flatten) {
                        (None, None) => true,
                        (Some(f), Some(g)) => self.same_type(f.ty, g.ty, assumed),
                        _ => false,
                    }
            }
            (TypeKind::Union(x), TypeKind::Union(y)) => {
                x.tag == y.tag
                    && x.variants.len() == y.variants.len()
                    && x.variants.iter().zip(&y.variants).all(|(v, w)| match (&v.kind, &w.kind) {
                        (VariantKind::CatchAll(a), VariantKind::CatchAll(b)) => a == b,
                        (VariantKind::Untagged(r), VariantKind::Untagged(s)) => self.same_ref(r, s, assumed),
                        (VariantKind::Tagged { value: va, body: ba }, VariantKind::Tagged { value: vb, body: bb }) => {
                            va == vb
                                && match (ba, bb) {
                                    (None, None) => true,
                                    (Some(r), Some(s)) => self.same_ref(r, s, assumed),
                                    _ => false,
                                }
                        }
                        _ => false,
                    })
            }
            (TypeKind::StringEnum { values: x, catch_all: ox }, TypeKind::StringEnum { values: y, catch_all: oy }) => {
                let wires = |vs: &[EnumValue]| vs.iter().map(|v| v.origin.wire.clone()).collect::<BTreeSet<_>>();
                ox.source == oy.source && wires(x) == wires(y)
            }
            (
                TypeKind::IntEnum { values: x, catch_all: ox, .. },
                TypeKind::IntEnum { values: y, catch_all: oy, .. },
            ) => {
                let vals = |vs: &[IntValue]| vs.iter().map(|v| v.value).collect::<BTreeSet<_>>();
                ox.source == oy.source && vals(x) == vals(y)
            }
            (TypeKind::Newtype { inner: x, .. }, TypeKind::Newtype { inner: y, .. }) => self.same_ref(x, y, assumed),
            (TypeKind::Any, TypeKind::Any) => true,
            _ => false,
        }
    }

    fn same_ref(&self, a: &TypeRef, b: &TypeRef, assumed: &mut HashSet<Pair>) -> bool {
        match (a, b) {
            (TypeRef::Named(x), TypeRef::Named(y)) => self.same_type(*x, *y, assumed),
            (TypeRef::Array(x), TypeRef::Array(y)) | (TypeRef::Map(x), TypeRef::Map(y)) => self.same_ref(x, y, assumed),
            _ => a == b,
        }
    }
}

fn kind_text(k: MethodKind) -> &'static str {
    match k {
        MethodKind::Request => "request",
        MethodKind::Notification => "notification",
    }
}

fn method_text(m: &Method) -> String {
    format!("{} handled by the {}", kind_text(m.kind), m.side.wire)
}

/// How findings name a method: by its name, with what tells two uses of one name in a revision
/// apart (two sides, or a request and a notification).
fn labels<'p>(old: &'p Protocol, new: &'p Protocol) -> impl Fn(&Method) -> String + 'p {
    let mut uses: BTreeMap<&str, BTreeSet<(&str, MethodKind)>> = BTreeMap::new();
    for p in [old, new] {
        for m in &p.methods {
            uses.entry(m.name.as_str()).or_default().insert((m.side.wire.as_str(), m.kind));
        }
    }
    move |m: &Method| {
        let Some(all) = uses.get(m.name.as_str()).filter(|all| all.len() > 1) else {
            return m.name.clone();
        };
        let sides: BTreeSet<&str> = all.iter().map(|(s, _)| *s).collect();
        let kinds: BTreeSet<MethodKind> = all.iter().map(|(_, k)| *k).collect();
        let mut parts = Vec::new();
        if sides.len() > 1 {
            parts.push(m.side.wire.clone());
        }
        if kinds.len() > 1 {
            parts.push(kind_text(m.kind).to_string());
        }
        format!("{} ({})", m.name, parts.join(" "))
    }
}
