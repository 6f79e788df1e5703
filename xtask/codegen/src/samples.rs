//! Random valid instances of IR types, for the property tests of the generated code.
//!
//! The generator knows every type's shape, so it can also produce JSON that the schema accepts:
//! required and optional fields, omitted/`null`/value for patch fields, every variant of every
//! union, unknown tags for catch-alls (with extra nested fields) and unknown values for enums.
//!
//! [`unknown_cases`] makes, for every message (a method's params or result) and every enum and
//! tagged union it can contain, one message that holds a value the type does not know at that
//! place, and nothing unknown elsewhere: the cases of the forward-compatibility tests. Objects are
//! written in the order the generated types encode them (fields in schema order, a union's tag
//! first), so a case's text is what re-encoding it gives.

use super::ir::*;
use serde_json::{Map, Number, Value};
use std::collections::{BTreeMap, VecDeque};

/// A small deterministic generator (xorshift64*): the seed makes a failure reproducible.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator whose sequence `seed` decides.
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next value of the sequence.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    /// True once in `one_in` times, on average.
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const STRINGS: &[&str] = &["", "hello", "src/main.rs", "naïve ✓ 日本", "line\nbreak \"quoted\" \\ tab\t", "_x"];

/// An instance of type `id`. `depth` bounds recursion: deep down, optional parts are left out.
pub fn instance(p: &Protocol, id: TypeId, rng: &mut Rng) -> Value {
    Sampler { p, rng, depth: 0, unknowns: true }.named(id, None)
}

/// One step from a type into a part of it, on the way to the place of an unknown value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The struct field at this index.
    Field(usize),
    /// The struct's flattened union.
    Flatten,
    /// The union variant at this index (its body).
    Variant(usize),
    /// The newtype's inner value.
    Inner,
    /// An array's item.
    Item,
    /// A map's value.
    Value,
}

/// A message holding one value that a type does not know.
#[derive(Debug, Clone)]
pub struct UnknownCase {
    /// The message type (a method's params or result).
    pub root: TypeId,
    /// The enum or tagged union that holds the unknown value.
    pub target: TypeId,
    /// How the message leads to it.
    pub path: Vec<Step>,
    /// The message.
    pub value: Value,
    /// The union's tag (`None` for an enum).
    pub tag: Option<String>,
    /// The unknown value: the enum's, or the union's tag value.
    pub unknown: Value,
    /// Whether the target's catch-all is one the generator added (it records the value).
    pub added: bool,
}

/// For every method's params and result type and every enum or tagged union reachable from it
/// (by the shortest path, the first in schema order), a message with an unknown value there; in
/// order of roots, then of targets' ids.
pub fn unknown_cases(p: &Protocol, rng: &mut Rng) -> Vec<UnknownCase> {
    let mut roots: Vec<TypeId> = p.methods.iter().flat_map(|m| std::iter::once(m.params).chain(m.result)).collect();
    roots.sort();
    roots.dedup();
    let mut cases = Vec::new();
    for root in roots {
        for (target, path) in paths_from(p, root) {
            let (tag, added) = match &p.get(target).kind {
                TypeKind::StringEnum { catch_all, .. } | TypeKind::IntEnum { catch_all, .. } => {
                    (None, !catch_all.source.declared())
                }
                TypeKind::Union(u) => match u.variants.iter().find_map(|v| match v.kind {
                    VariantKind::CatchAll(source) => Some(source),
                    _ => None,
                }) {
                    Some(source) => (u.tag.clone(), !source.declared()),
                    None => continue,
                },
                _ => continue,
            };
            let mut sampler = Sampler { p, rng: &mut *rng, depth: 0, unknowns: false };
            let value = sampler.named(root, Some(&path));
            let unknown = unknown_value(p, target);
            let unknown = match &tag {
                Some(tag) => unknown.get(tag).cloned().unwrap_or_default(),
                None => unknown,
            };
            cases.push(UnknownCase { root, target, path, value, tag, unknown, added });
        }
    }
    cases
}

/// The shortest path from `root` to every enum and union it can contain (breadth first, parts in
/// schema order), by target id.
fn paths_from(p: &Protocol, root: TypeId) -> BTreeMap<TypeId, Vec<Step>> {
    let mut paths: BTreeMap<TypeId, Vec<Step>> = BTreeMap::new();
    paths.insert(root, Vec::new());
    let mut queue = VecDeque::from([root]);
    while let Some(id) = queue.pop_front() {
        let here = paths[&id].clone();
        for (steps, next) in parts(p, id) {
            if let std::collections::btree_map::Entry::Vacant(slot) = paths.entry(next) {
                slot.insert(here.iter().chain(&steps).copied().collect());
                queue.push_back(next);
            }
        }
    }
    paths.retain(|id, _| {
        matches!(p.get(*id).kind, TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } | TypeKind::Union(_))
    });
    paths
}

/// The named types a type holds directly, each with the steps to it.
fn parts(p: &Protocol, id: TypeId) -> Vec<(Vec<Step>, TypeId)> {
    let mut out = Vec::new();
    let mut add = |first: Step, r: &TypeRef| {
        for (mut steps, id) in refs(r) {
            steps.insert(0, first);
            out.push((steps, id));
        }
    };
    match &p.get(id).kind {
        TypeKind::Struct(s) => {
            for (i, f) in s.fields.iter().enumerate() {
                add(Step::Field(i), &f.ty);
            }
            if let Some(fl) = &s.flatten {
                add(Step::Flatten, &TypeRef::Named(fl.ty));
            }
        }
        TypeKind::Union(u) => {
            for (i, v) in u.variants.iter().enumerate() {
                match &v.kind {
                    VariantKind::Tagged { body: Some(b), .. } | VariantKind::Untagged(b) => add(Step::Variant(i), b),
                    _ => {}
                }
            }
        }
        TypeKind::Newtype { inner, .. } => add(Step::Inner, inner),
        _ => {}
    }
    out
}

/// The named types a reference leads to through arrays and maps.
fn refs(r: &TypeRef) -> Vec<(Vec<Step>, TypeId)> {
    match r {
        TypeRef::Named(id) => vec![(Vec::new(), *id)],
        TypeRef::Array(inner) | TypeRef::Map(inner) => {
            let step = if matches!(r, TypeRef::Array(_)) { Step::Item } else { Step::Value };
            refs(inner)
                .into_iter()
                .map(|(mut steps, id)| {
                    steps.insert(0, step);
                    (steps, id)
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A value of `id` (an enum or a tagged union) that it does not know: a string or integer no value
/// names, or an object whose tag no variant names, with nested members in an order no sorting
/// gives (a catch-all keeps its object's order).
fn unknown_value(p: &Protocol, id: TypeId) -> Value {
    match &p.get(id).kind {
        TypeKind::StringEnum { values, .. } => {
            let text = (0..)
                .map(|n| format!("future_value_{n}"))
                .find(|t| values.iter().all(|v| &v.origin.wire != t))
                .unwrap_or_default();
            Value::String(text)
        }
        TypeKind::IntEnum { values, repr, .. } => {
            let max = match repr {
                IntKind::I8 => i8::MAX as i64,
                IntKind::U8 => u8::MAX as i64,
                _ => i16::MAX as i64,
            };
            Value::from((7..=max).rev().find(|n| values.iter().all(|v| v.value != *n)).unwrap_or_default())
        }
        TypeKind::Union(u) => {
            let tag = u.tag.clone().unwrap_or_default();
            let known =
                |t: &str| u.variants.iter().any(|v| matches!(&v.kind, VariantKind::Tagged { value, .. } if value == t));
            let value = (0..).map(|n| format!("future_thing_{n}")).find(|t| !known(t)).unwrap_or_default();
            let mut object = Map::new();
            object.insert(tag, Value::String(value));
            object.insert("zeta".into(), serde_json::json!({ "y": [1, "two", null, { "b": 2, "a": 1 }], "x": true }));
            object.insert("alpha".into(), Value::from(1));
            Value::Object(object)
        }
        _ => Value::Null,
    }
}

struct Sampler<'a> {
    p: &'a Protocol,
    rng: &'a mut Rng,
    depth: usize,
    /// Whether unknown values (catch-alls, unknown enum values) may be chosen at random.
    unknowns: bool,
}

impl Sampler<'_> {
    fn deep(&self) -> bool {
        self.depth > 5
    }

    /// An instance of `id`; with a `path`, one that leads along it to an unknown value (an empty
    /// path: the unknown value is this one).
    fn named(&mut self, id: TypeId, path: Option<&[Step]>) -> Value {
        if path == Some(&[]) {
            return unknown_value(self.p, id);
        }
        self.depth += 1;
        let t = self.p.get(id);
        let v = match &t.kind {
            TypeKind::Struct(s) => Value::Object(self.structure(s, path)),
            TypeKind::Newtype { inner, .. } => self.reference(inner, rest(path, Step::Inner)),
            TypeKind::Any => self.any(2),
            TypeKind::StringEnum { values, .. } => {
                let pick = self.rng.below(values.len() + usize::from(self.unknowns || values.is_empty()));
                match values.get(pick) {
                    Some(v) => Value::String(v.origin.wire.clone()),
                    None => Value::String(format!("_custom_{}", self.rng.below(1000))),
                }
            }
            TypeKind::IntEnum { values, .. } => {
                let pick = self.rng.below(values.len() + usize::from(self.unknowns || values.is_empty()));
                match values.get(pick) {
                    Some(v) => Value::from(v.value),
                    None => Value::from(-31_000 - self.rng.below(900) as i64),
                }
            }
            TypeKind::Union(u) => self.union(u, path),
        };
        self.depth -= 1;
        v
    }

    fn structure(&mut self, s: &Struct, path: Option<&[Step]>) -> Map<String, Value> {
        let mut out = Map::new();
        for (i, f) in s.fields.iter().enumerate() {
            let key = f.origin.wire.clone();
            if let Some(along) = rest(path, Step::Field(i)) {
                out.insert(key, self.reference(&f.ty, Some(along)));
                continue;
            }
            let value = match f.presence {
                Presence::Required => Some(self.reference(&f.ty, None)),
                Presence::RequiredNullable => {
                    Some(if self.rng.chance(3) { Value::Null } else { self.reference(&f.ty, None) })
                }
                Presence::Optional | Presence::Defaulted(_) => {
                    (!self.deep() && self.rng.chance(2)).then(|| self.reference(&f.ty, None))
                }
                Presence::Patch => match self.rng.below(3) {
                    0 => None,
                    1 => Some(Value::Null),
                    _ if self.deep() => None,
                    _ => Some(self.reference(&f.ty, None)),
                },
            };
            if let Some(value) = value {
                out.insert(key, value);
            }
        }
        if let Some(fl) = &s.flatten {
            if let Value::Object(rest) = self.named(fl.ty, rest(path, Step::Flatten)) {
                out.extend(rest);
            }
        }
        out
    }

    fn union(&mut self, u: &Union, path: Option<&[Step]>) -> Value {
        let forced = path.and_then(|p| match p.first() {
            Some(Step::Variant(i)) => Some((*i, &p[1..])),
            _ => None,
        });
        // Without unknowns, a catch-all is chosen only when it is all there is.
        let choices: Vec<usize> = (0..u.variants.len())
            .filter(|&i| self.unknowns || !matches!(u.variants[i].kind, VariantKind::CatchAll(_)))
            .collect();
        let index = match forced {
            Some((i, _)) => i,
            None if choices.is_empty() => self.rng.below(u.variants.len()),
            None => choices[self.rng.below(choices.len())],
        };
        let along = forced.map(|(_, rest)| rest);
        let v = &u.variants[index];
        let tag = u.tag.clone().unwrap_or_default();
        match &v.kind {
            VariantKind::Tagged { value, body } => {
                // The tag first, as the generated types write it.
                let mut object = Map::new();
                object.insert(tag, Value::String(value.clone()));
                if let Some(Value::Object(body)) = body.as_ref().map(|b| self.reference(b, along)) {
                    object.extend(body);
                }
                Value::Object(object)
            }
            VariantKind::CatchAll(_) => {
                let mut object = Map::new();
                object.insert(tag, Value::String(format!("_vendor/kind_{}", self.rng.below(100))));
                object.insert("extra".into(), self.any(3));
                object.insert("nested".into(), serde_json::json!({ "list": [1, "two", null], "flag": true }));
                Value::Object(object)
            }
            VariantKind::Untagged(body) => self.reference(body, along),
        }
    }

    fn reference(&mut self, r: &TypeRef, path: Option<&[Step]>) -> Value {
        match r {
            TypeRef::Named(id) => self.named(*id, path),
            TypeRef::String => Value::String(STRINGS[self.rng.below(STRINGS.len())].to_string()),
            TypeRef::Bool => Value::Bool(self.rng.chance(2)),
            TypeRef::Int(k) => self.int(*k),
            TypeRef::Float(_) => {
                Number::from_f64((self.rng.below(20_000) as f64 - 10_000.0) / 8.0).map_or(Value::Null, Value::Number)
            }
            TypeRef::Null => Value::Null,
            TypeRef::Any | TypeRef::MethodKeyed => self.any(2),
            TypeRef::Object => Value::Object(self.object(2)),
            TypeRef::Array(item) => {
                let along = rest(path, Step::Item);
                let n = if self.deep() { 0 } else { self.rng.below(3) };
                let first = along.map(|along| self.reference(item, Some(along)));
                Value::Array(first.into_iter().chain((0..n).map(|_| self.reference(item, None))).collect())
            }
            TypeRef::Map(value) => {
                let along = rest(path, Step::Value);
                let n = if self.deep() { 0 } else { self.rng.below(3) };
                let first = along.map(|along| ("key0".to_string(), self.reference(value, Some(along))));
                let others = (usize::from(first.is_some())..n.max(usize::from(first.is_some())))
                    .map(|i| (format!("key{i}"), self.reference(value, None)))
                    .collect::<Vec<_>>();
                Value::Object(first.into_iter().chain(others).collect())
            }
        }
    }

    fn int(&mut self, k: IntKind) -> Value {
        let edge = self.rng.chance(4);
        match k {
            IntKind::I8 => Value::from(if edge { i8::MIN as i64 } else { self.rng.below(100) as i64 }),
            IntKind::I16 => Value::from(if edge { i16::MIN as i64 } else { self.rng.below(1000) as i64 }),
            IntKind::I32 => Value::from(if edge { i32::MIN as i64 } else { self.rng.below(100_000) as i64 - 50_000 }),
            IntKind::I64 => Value::from(if edge { i64::MIN } else { self.rng.next_u64() as i64 }),
            IntKind::U8 => Value::from(if edge { u8::MAX as u64 } else { self.rng.below(200) as u64 }),
            IntKind::U16 => Value::from(if edge { u16::MAX as u64 } else { self.rng.below(60_000) as u64 }),
            IntKind::U32 => Value::from(if edge { u32::MAX as u64 } else { self.rng.below(1 << 30) as u64 }),
            IntKind::U64 => Value::from(if edge { u64::MAX } else { self.rng.next_u64() >> 1 }),
        }
    }

    fn object(&mut self, depth: usize) -> Map<String, Value> {
        let n = self.rng.below(3);
        (0..n).map(|i| (format!("k{i}_{}", self.rng.below(10)), self.any(depth.saturating_sub(1)))).collect()
    }

    fn any(&mut self, depth: usize) -> Value {
        match self.rng.below(if depth == 0 { 4 } else { 6 }) {
            0 => Value::Null,
            1 => Value::Bool(self.rng.chance(2)),
            2 => Value::from(self.rng.below(1000) as i64 - 500),
            3 => Value::String(STRINGS[self.rng.below(STRINGS.len())].to_string()),
            4 => Value::Array((0..self.rng.below(3)).map(|_| self.any(depth - 1)).collect()),
            _ => Value::Object(self.object(depth)),
        }
    }
}

/// The rest of `path` after `step`, when it is the next one.
fn rest(path: Option<&[Step]>, step: Step) -> Option<&[Step]> {
    path.and_then(|p| p.split_first()).filter(|(first, _)| **first == step).map(|(_, rest)| rest)
}
