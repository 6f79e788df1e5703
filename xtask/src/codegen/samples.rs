//! Random valid instances of IR types, for the property tests of the generated code.
//!
//! The generator knows every type's shape, so it can also produce JSON that the schema accepts:
//! required and optional fields, omitted/`null`/value for patch fields, every variant of every
//! union, unknown tags for catch-alls (with extra nested fields) and unknown values for open enums.

use super::ir::*;
use serde_json::{Map, Number, Value};

/// A small deterministic generator (xorshift64*): the seed makes a failure reproducible.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const STRINGS: &[&str] = &["", "hello", "src/main.rs", "naïve ✓ 日本", "line\nbreak \"quoted\" \\ tab\t", "_x"];

/// An instance of type `id`. `depth` bounds recursion: deep down, optional parts are left out.
pub fn instance(p: &Protocol, id: TypeId, rng: &mut Rng) -> Value {
    Sampler { p, rng, depth: 0 }.named(id)
}

struct Sampler<'a> {
    p: &'a Protocol,
    rng: &'a mut Rng,
    depth: usize,
}

impl Sampler<'_> {
    fn deep(&self) -> bool {
        self.depth > 5
    }

    fn named(&mut self, id: TypeId) -> Value {
        self.depth += 1;
        let t = self.p.get(id);
        let v = match &t.kind {
            TypeKind::Struct(s) => Value::Object(self.structure(s)),
            TypeKind::Newtype { inner, .. } => self.reference(inner),
            TypeKind::Any => self.any(2),
            TypeKind::StringEnum { values, open } => {
                let pick = self.rng.below(values.len() + usize::from(open.is_some()));
                match values.get(pick) {
                    Some(v) => Value::String(v.origin.wire.clone()),
                    None => Value::String(format!("_custom_{}", self.rng.below(1000))),
                }
            }
            TypeKind::IntEnum { values, open, .. } => {
                let pick = self.rng.below(values.len() + usize::from(open.is_some()));
                match values.get(pick) {
                    Some(v) => Value::from(v.value),
                    None => Value::from(-31_000 - self.rng.below(900) as i64),
                }
            }
            TypeKind::Union(u) => self.union(u),
        };
        self.depth -= 1;
        v
    }

    fn structure(&mut self, s: &Struct) -> Map<String, Value> {
        let mut out = Map::new();
        for f in &s.fields {
            let key = f.origin.wire.clone();
            let value = match f.presence {
                Presence::Required => Some(self.reference(&f.ty)),
                Presence::RequiredNullable => {
                    Some(if self.rng.chance(3) { Value::Null } else { self.reference(&f.ty) })
                }
                Presence::Optional | Presence::Defaulted(_) => {
                    (!self.deep() && self.rng.chance(2)).then(|| self.reference(&f.ty))
                }
                Presence::Patch => match self.rng.below(3) {
                    0 => None,
                    1 => Some(Value::Null),
                    _ if self.deep() => None,
                    _ => Some(self.reference(&f.ty)),
                },
            };
            if let Some(value) = value {
                out.insert(key, value);
            }
        }
        if let Some(fl) = &s.flatten {
            if let Value::Object(rest) = self.named(fl.ty) {
                out.extend(rest);
            }
        }
        out
    }

    fn union(&mut self, u: &Union) -> Value {
        let v = &u.variants[self.rng.below(u.variants.len())];
        let tag = u.tag.clone().unwrap_or_default();
        match &v.kind {
            VariantKind::Tagged { value, body } => {
                let mut object = match body.as_ref().map(|b| self.reference(b)) {
                    Some(Value::Object(o)) => o,
                    _ => Map::new(),
                };
                object.insert(tag, Value::String(value.clone()));
                Value::Object(object)
            }
            VariantKind::CatchAll => {
                let mut object = Map::new();
                object.insert(tag, Value::String(format!("_vendor/kind_{}", self.rng.below(100))));
                object.insert("extra".into(), self.any(3));
                object.insert("nested".into(), serde_json::json!({ "list": [1, "two", null], "flag": true }));
                Value::Object(object)
            }
            VariantKind::Untagged(body) => self.reference(body),
        }
    }

    fn reference(&mut self, r: &TypeRef) -> Value {
        match r {
            TypeRef::Named(id) => self.named(*id),
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
                let n = if self.deep() { 0 } else { self.rng.below(3) };
                Value::Array((0..n).map(|_| self.reference(item)).collect())
            }
            TypeRef::Map(value) => {
                let n = if self.deep() { 0 } else { self.rng.below(3) };
                Value::Object((0..n).map(|i| (format!("key{i}"), self.reference(value))).collect())
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
