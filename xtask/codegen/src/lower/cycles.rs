//! The reference graph of a protocol's types: how types contain each other directly, the cycles
//! that are errors (a type made of itself with no JSON level in between), and where a `Box` must
//! hold a reference ([`place_boxes`]). Decided here, once; emitters only read the marks.

use crate::ir::*;

/// A type that contains itself without going one level down into the JSON value (a `$ref` to
/// itself, a union branch or a flattened part that leads back to it) has no finite value, and
/// decoding one would recurse forever: an error (pointer, names along the cycle) for each such cycle. Cycles
/// through a field are fine ([`place_boxes`] breaks them); through an array item or a map value
/// they are no cycle here at all.
pub(super) fn cycle_errors(types: &[TypeDef]) -> Vec<(String, Vec<String>)> {
    let mut errors = Vec::new();
    for cycle in Containment::of(types).same_level_cycles() {
        let names: Vec<String> = cycle.iter().map(|n| types[n.0].name.clone()).collect();
        let pointer = types[cycle[0].0].origin.pointer.clone();
        errors.push((pointer, names));
    }
    errors
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
/// errors ([`cycle_errors`]) and the boxes ([`place_boxes`]).
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
            u.variants.iter().filter_map(|v| v.body().and_then(named)).map(|id| (id, Level::Same)).collect()
        }
        TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } | TypeKind::Any => Vec::new(),
    }
}

/// Marks every reference that must be held through a `Box`: one whose type leads back to the
/// type holding it by direct containment (else the Rust type would have infinite size), and the
/// union variants too large to hold inline (`sizes`). Called
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
                    v.boxed = v.body().is_some_and(|b| holds(i, b));
                }
            }
            TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } | TypeKind::Any => {}
        }
    }
    super::sizes::box_large_variants(types);
}
