//! Large union variants held through a `Box`.
//!
//! A Rust enum is as large as its largest variant, and a decoded value is moved (copied) through
//! every layer of `Result` on its way out of serde: with a few large variants (a v1 `ToolCall`
//! beside a short text chunk), every `session/update` paid for the largest one, several times
//! over. A variant whose body is estimated at more than [`LARGE`] bytes is therefore held through
//! a `Box`; the others stay inline. The estimate is a model of the emitted Rust types on a 64-bit
//! target (it does not need to be exact, only to tell large from small, and it is the same on
//! every machine, so the output stays deterministic).

use crate::ir::*;

/// A body estimated above this many bytes is boxed. At 64 a v1 `SessionNotification` is 128 bytes,
/// which the compiler moves inline rather than through `memcpy` calls: decoding the benchmark
/// corpus went from 466 to 502 MB/s (v1) and 408 to 430 MB/s (v2) from 128 (`BENCHMARKS.md`).
pub const LARGE: usize = 64;

/// Marks the union variants whose body is large (in addition to the boxes that break cycles,
/// already placed).
pub fn box_large_variants(types: &mut [TypeDef]) {
    let mut sizes = Sizes { memo: vec![None; types.len()], types: &*types };
    let mut large = Vec::new();
    for (i, t) in sizes.types.iter().enumerate() {
        if let TypeKind::Union(u) = &t.kind {
            large.extend((0..u.variants.len()).map(|v| (i, v)));
        }
    }
    large.retain(|&(i, v)| {
        let TypeKind::Union(u) = &sizes.types[i].kind else { return false };
        let variant = &u.variants[v];
        !variant.boxed && sizes.boxed(variant)
    });
    for (i, v) in large {
        if let TypeKind::Union(u) = &mut types[i].kind {
            u.variants[v].boxed = true;
        }
    }
}

struct Sizes<'a> {
    types: &'a [TypeDef],
    memo: Vec<Option<usize>>,
}

/// The size of `Option<T>`, `Patch<T>` or `Defaulted<T>` around a `T` of `size` bytes: free for
/// the pointer-like types, whose spare values hold the extra states; a word more otherwise.
fn wrapped(size: usize, pointer_like: bool) -> usize {
    if pointer_like {
        size
    } else {
        size + 8
    }
}

impl Sizes<'_> {
    fn of_ref(&mut self, r: &TypeRef) -> usize {
        match r {
            TypeRef::Named(id) => self.of(*id),
            TypeRef::String | TypeRef::Array(_) => 24,
            TypeRef::Bool => 1,
            TypeRef::Int(IntKind::I8 | IntKind::U8) => 1,
            TypeRef::Int(IntKind::I16 | IntKind::U16) => 2,
            TypeRef::Int(IntKind::I32 | IntKind::U32) | TypeRef::Float(FloatKind::F32) => 4,
            TypeRef::Int(_) | TypeRef::Float(_) => 8,
            TypeRef::Null => 0,
            // `serde_json::Value`.
            TypeRef::Any | TypeRef::MethodKeyed => 32,
            // `Meta`: its text.
            TypeRef::Object => 16,
            TypeRef::Map(_) => 48,
        }
    }

    /// Whether the variant holds its body in a `Box`: for a cycle (placed before), or because the
    /// body is a named type estimated above [`LARGE`] bytes.
    fn boxed(&mut self, v: &Variant) -> bool {
        match v.body() {
            _ if v.boxed => true,
            Some(body @ TypeRef::Named(_)) => self.of_ref(body) > LARGE,
            _ => false,
        }
    }

    fn pointer_like(r: &TypeRef) -> bool {
        matches!(r, TypeRef::String | TypeRef::Array(_) | TypeRef::Object | TypeRef::Map(_))
    }

    fn of(&mut self, id: TypeId) -> usize {
        if let Some(size) = self.memo[id.0] {
            return size;
        }
        // A reference back to a type being measured is boxed (cycles are boxed before this pass);
        // the placeholder only stops a malformed graph from recursing.
        self.memo[id.0] = Some(8);
        let size = match &self.types[id.0].kind {
            TypeKind::Struct(s) => {
                let fields: usize = s
                    .fields
                    .iter()
                    .map(|f| {
                        let inner = if f.boxed { 8 } else { self.of_ref(&f.ty) };
                        let pointer_like = f.boxed || Self::pointer_like(&f.ty);
                        match f.presence {
                            Presence::Required => inner,
                            _ => wrapped(inner, pointer_like),
                        }
                    })
                    .sum();
                let flatten = s.flatten.as_ref().map_or(0, |f| if f.boxed { 8 } else { self.of(f.ty) });
                fields + flatten
            }
            TypeKind::Newtype { inner, boxed } => {
                if *boxed {
                    8
                } else {
                    self.of_ref(inner)
                }
            }
            // The catch-all holds a `String`.
            TypeKind::StringEnum { .. } => 24,
            TypeKind::IntEnum { .. } => 16,
            TypeKind::Any => 32,
            TypeKind::Union(u) => {
                let largest = u
                    .variants
                    .iter()
                    .map(|v| match (&v.kind, v.body()) {
                        (_, Some(_)) if self.boxed(v) => 8,
                        (_, Some(body)) => self.of_ref(body),
                        // A `serde_json::Map` (the object as received).
                        (VariantKind::CatchAll(_), _) => 72,
                        (_, None) => 0,
                    })
                    .max()
                    .unwrap_or(0);
                largest + 8
            }
        };
        self.memo[id.0] = Some(size);
        size
    }
}
