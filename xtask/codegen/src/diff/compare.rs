//! The semantic comparison: methods are matched first ([`super::methods`]); then types are matched
//! by walking both revisions in parallel from each method's params and result, so a type is
//! identified by where it is used, not by its name.
//!
//! Each matched pair of types is compared once ([`super::types`]) into direction-free
//! [`Change`]s that say which way they reject (an old receiver rejecting a new sender's value, or
//! the reverse). The walk records who sends each pair to whom, and whether lenient decoding on the
//! way absorbs a rejection; findings combine the two.

use super::report::{Finding, Report, Rule, Severity};
use crate::ir::*;
use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

pub(super) type Pair = (TypeId, TypeId);

/// Who sends a value to whom.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct Dir {
    pub(super) sender: String,
    pub(super) receiver: String,
}

impl Dir {
    pub(super) fn new(sender: &str, receiver: &str) -> Self {
        Dir { sender: sender.to_string(), receiver: receiver.to_string() }
    }

    pub(super) fn reversed(&self) -> Dir {
        Dir::new(&self.receiver, &self.sender)
    }

    pub(super) fn label(&self) -> String {
        format!("{} → {}", self.sender, self.receiver)
    }

    /// An old receiver rejects what a new sender sends.
    pub(super) fn new_to_old(&self) -> String {
        format!("new {} → old {}", plural(&self.sender), plural(&self.receiver))
    }

    /// A new receiver rejects what an old sender sends.
    pub(super) fn old_to_new(&self) -> String {
        format!("old {} → new {}", plural(&self.sender), plural(&self.receiver))
    }
}

pub(super) fn plural(side: &str) -> String {
    match side.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{side}s"),
    }
}

/// Who sends a method's params. `x-side` names the receiver; `protocol` methods go both ways
/// ([`Receiver::Either`]); a side that is neither end gets its params from a "peer".
pub(super) fn params_dirs(side: &Side) -> Vec<Dir> {
    match side.receiver {
        Receiver::Agent => vec![Dir::new("client", "agent")],
        Receiver::Client => vec![Dir::new("agent", "client")],
        Receiver::Either => vec![Dir::new("agent", "client"), Dir::new("client", "agent")],
        Receiver::Proxy | Receiver::Other => vec![Dir::new("peer", &side.wire)],
    }
}

pub(super) fn result_dirs(side: &Side) -> Vec<Dir> {
    params_dirs(side).iter().map(Dir::reversed).collect()
}

pub(super) fn dirs_label(dirs: &BTreeSet<Dir>) -> String {
    let list: Vec<&Dir> = dirs.iter().collect();
    if let [a, b] = list.as_slice() {
        if a.reversed() == **b {
            return format!("{} ↔ {}", a.sender, a.receiver);
        }
    }
    list.iter().map(|d| d.label()).collect::<Vec<_>>().join(", ")
}

/// The Rust-side effect of a change.
#[derive(Debug, Clone)]
pub(super) struct RustNote {
    pub(super) text: String,
    /// Code that compiled against the old `acp-types` may not compile against the new one.
    pub(super) breaks: bool,
}

pub(super) fn rust_break(text: String) -> Option<RustNote> {
    Some(RustNote { text, breaks: true })
}

pub(super) fn rust_note(text: String) -> Option<RustNote> {
    Some(RustNote { text, breaks: false })
}

/// A change to one matched pair of types, before directions are known.
#[derive(Debug, Clone)]
pub(super) struct Change {
    pub(super) rule: Rule,
    pub(super) location: String,
    pub(super) message: String,
    pub(super) old: Option<String>,
    pub(super) new: Option<String>,
    /// An old receiver may reject what a new sender now sends.
    pub(super) new_to_old: bool,
    /// A new receiver may reject what an old sender sends.
    pub(super) old_to_new: bool,
    /// The old (new) receiver's lenient decoding at this very spot absorbs the rejection.
    pub(super) absorbed_old: bool,
    pub(super) absorbed_new: bool,
    /// The severity when nothing breaks and nothing is absorbed.
    pub(super) base: Severity,
    pub(super) rust: Option<RustNote>,
}

impl Change {
    pub(super) fn new(rule: Rule, location: &str, message: String) -> Self {
        Change {
            rule,
            location: location.to_string(),
            message,
            old: None,
            new: None,
            new_to_old: false,
            old_to_new: false,
            absorbed_old: false,
            absorbed_new: false,
            base: Severity::Info,
            rust: None,
        }
    }

    pub(super) fn values(mut self, old: Option<String>, new: Option<String>) -> Self {
        self.old = old;
        self.new = new;
        self
    }

    pub(super) fn rejects(mut self, new_to_old: bool, old_to_new: bool) -> Self {
        self.new_to_old = new_to_old;
        self.old_to_new = old_to_new;
        self
    }

    pub(super) fn absorbed(mut self, old: bool, new: bool) -> Self {
        self.absorbed_old = old;
        self.absorbed_new = new;
        self
    }

    pub(super) fn base(mut self, base: Severity) -> Self {
        self.base = base;
        self
    }

    pub(super) fn rust(mut self, rust: Option<RustNote>) -> Self {
        self.rust = rust;
        self
    }
}

/// What comparing one pair of types found: its changes, and the pairs below it, each with
/// whether the old and new receivers' lenient decoding covers it.
#[derive(Debug, Default)]
pub(super) struct Local {
    pub(super) changes: Vec<Change>,
    pub(super) children: Vec<(Pair, bool, bool)>,
}

/// How a pair of types is reached in one direction.
#[derive(Debug, Clone)]
struct Reach {
    methods: BTreeSet<String>,
    /// Reached on some path where the old (new) receiver's lenient decoding does not absorb a
    /// rejection.
    exposed_old: bool,
    exposed_new: bool,
    /// (walk depth, method) of the shortest walk.
    best: (usize, String),
}

/// One comparison between two protocols.
pub(super) struct Comparison<'a> {
    pub(super) old: &'a Protocol,
    pub(super) new: &'a Protocol,
    locals: BTreeMap<Pair, Local>,
    reach: BTreeMap<Pair, BTreeMap<Dir, Reach>>,
    pub(super) findings: Vec<Finding>,
}

impl<'a> Comparison<'a> {
    pub(super) fn new(old: &'a Protocol, new: &'a Protocol) -> Self {
        Comparison { old, new, locals: BTreeMap::new(), reach: BTreeMap::new(), findings: Vec::new() }
    }

    pub(super) fn report(mut self) -> Report {
        let pairs = self.match_methods();
        for m in &pairs {
            let dirs = params_dirs(&m.new.side);
            self.walk(&m.label, (m.old.params, m.new.params), &dirs);
            if let (Some(o), Some(n)) = (m.old.result, m.new.result) {
                let dirs = result_dirs(&m.new.side);
                self.walk(&m.label, (o, n), &dirs);
            }
        }
        let mut raw = Vec::new();
        for (pair, dirs) in &self.reach {
            let Some(local) = self.locals.get(pair) else {
                continue;
            };
            for change in &local.changes {
                for (dir, reach) in dirs {
                    raw.push((finding(change, dir, reach), dir.clone(), reach.best.clone()));
                }
            }
        }
        self.findings.extend(merge(raw));
        let mut findings = self.findings;
        for f in &mut findings {
            f.breaks.sort();
            f.breaks.dedup();
        }
        findings.sort_by(|a, b| {
            (b.severity, &a.method, &a.location, a.rule, &a.message, &a.old, &a.new).cmp(&(
                a.severity,
                &b.method,
                &b.location,
                b.rule,
                &b.message,
                &b.old,
                &b.new,
            ))
        });
        Report {
            old: self.old.source.clone(),
            new: self.new.source.clone(),
            findings,
            unreachable_old: unreachable(self.old),
            unreachable_new: unreachable(self.new),
        }
    }

    // ---- the walk ------------------------------------------------------------------------

    /// Breadth first from one method root, so the recorded depth is the shortest. A pair is
    /// visited once per (lenient context) for this method, which also stops cycles.
    fn walk(&mut self, method: &str, root: Pair, dirs: &[Dir]) {
        let mut seen = HashSet::new();
        let mut queue = VecDeque::from([(root, false, false, 0usize)]);
        while let Some((pair, ao, an, depth)) = queue.pop_front() {
            if !seen.insert((pair, ao, an)) {
                continue;
            }
            for dir in dirs {
                let entry = self.reach.entry(pair).or_default().entry(dir.clone()).or_insert_with(|| Reach {
                    methods: BTreeSet::new(),
                    exposed_old: false,
                    exposed_new: false,
                    best: (depth, method.to_string()),
                });
                entry.methods.insert(method.to_string());
                entry.exposed_old |= !ao;
                entry.exposed_new |= !an;
                entry.best = entry.best.clone().min((depth, method.to_string()));
            }
            if !self.locals.contains_key(&pair) {
                let local = self.compare_pair(pair.0, pair.1);
                self.locals.insert(pair, local);
            }
            if let Some(local) = self.locals.get(&pair) {
                for &(child, co, cn) in &local.children {
                    queue.push_back((child, ao || co, an || cn, depth + 1));
                }
            }
        }
    }
}

/// A change as seen in one direction.
fn finding(c: &Change, dir: &Dir, reach: &Reach) -> Finding {
    let mut breaks = Vec::new();
    let mut tolerated = Vec::new();
    if c.new_to_old {
        if reach.exposed_old && !c.absorbed_old {
            breaks.push(dir.new_to_old());
        } else {
            tolerated.push(dir.new_to_old());
        }
    }
    if c.old_to_new {
        if reach.exposed_new && !c.absorbed_new {
            breaks.push(dir.old_to_new());
        } else {
            tolerated.push(dir.old_to_new());
        }
    }
    let rust_breaks = c.rust.as_ref().is_some_and(|r| r.breaks);
    let severity = if !breaks.is_empty() {
        Severity::Breaking
    } else if !tolerated.is_empty() || rust_breaks {
        c.base.max(Severity::Warning)
    } else {
        c.base
    };
    Finding {
        rule: c.rule,
        severity,
        direction: dir.label(),
        method: reach.best.1.clone(),
        methods: reach.methods.iter().cloned().collect(),
        location: c.location.clone(),
        message: c.message.clone(),
        old: c.old.clone(),
        new: c.new.clone(),
        breaks,
        tolerated,
        rust: c.rust.as_ref().map(|r| r.text.clone()),
    }
}

/// One finding per change: the same change reached in several directions or through several
/// pairs of types is shown once, with every direction and method.
fn merge(raw: Vec<(Finding, Dir, (usize, String))>) -> Vec<Finding> {
    type Key = (Rule, String, String, Option<String>, Option<String>);
    /// The merged finding, its directions, and the (depth, method) it is shown under.
    type Merged = (Finding, BTreeSet<Dir>, (usize, String));
    let mut merged: BTreeMap<Key, Merged> = BTreeMap::new();
    for (f, dir, best) in raw {
        let key = (f.rule, f.location.clone(), f.message.clone(), f.old.clone(), f.new.clone());
        match merged.get_mut(&key) {
            None => {
                merged.insert(key, (f, BTreeSet::from([dir]), best));
            }
            Some((m, dirs, b)) => {
                dirs.insert(dir);
                m.severity = m.severity.max(f.severity);
                m.methods.extend(f.methods);
                m.breaks.extend(f.breaks);
                m.tolerated.extend(f.tolerated);
                if best < *b {
                    m.method = best.1.clone();
                    *b = best;
                }
            }
        }
    }
    merged
        .into_values()
        .map(|(mut f, dirs, _)| {
            f.direction = dirs_label(&dirs);
            for list in [&mut f.methods, &mut f.breaks, &mut f.tolerated] {
                list.sort();
                list.dedup();
            }
            // A pairing that breaks on one path is not also tolerated.
            let breaks = f.breaks.clone();
            f.tolerated.retain(|t| !breaks.contains(t));
            f
        })
        .collect()
}

/// Every type reachable from `roots` through fields, flattened unions, branches, items and
/// newtypes (the roots included).
pub(super) fn reachable(p: &Protocol, roots: impl IntoIterator<Item = TypeId>) -> BTreeSet<TypeId> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<TypeId> = roots.into_iter().collect();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let mut refs: Vec<&TypeRef> = Vec::new();
        match &p.get(id).kind {
            TypeKind::Struct(s) => {
                refs.extend(s.fields.iter().map(|f| &f.ty));
                stack.extend(s.flatten.iter().map(|f| f.ty));
            }
            TypeKind::Newtype { inner, .. } => refs.push(inner),
            TypeKind::Union(u) => refs.extend(u.variants.iter().filter_map(Variant::body)),
            _ => {}
        }
        while let Some(r) = refs.pop() {
            match r {
                TypeRef::Named(t) => stack.push(*t),
                TypeRef::Array(inner) | TypeRef::Map(inner) => refs.push(inner),
                _ => {}
            }
        }
    }
    seen
}

/// `$defs` types no method reaches in one protocol.
fn unreachable(p: &Protocol) -> Vec<String> {
    let seen = reachable(p, p.methods.iter().flat_map(|m| std::iter::once(m.params).chain(m.result)));
    let mut names: Vec<String> = (0..p.types.len())
        .filter(|&i| p.types[i].named && !seen.contains(&TypeId(i)))
        .map(|i| p.types[i].name.clone())
        .collect();
    names.sort();
    names
}
