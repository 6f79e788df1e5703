//! Lowering the methods: `x-method`/`x-side` on the `$defs` that JSON-RPC envelopes carry become
//! [`Method`]s (request or notification, params and result types), each `x-side` value becomes a
//! [`Side`] once, here (`receiving_side`), and each method's params are read once for a session
//! they must name (`session_scoped`).

use super::Lowerer;
use crate::error::SchemaErrorKind;
use crate::ir::*;
use crate::load::{JsonType, Schema};
use crate::naming;
use crate::warning::WarningKind;

impl<'a> Lowerer<'a> {
    /// The `params`/`result` of a JSON-RPC envelope: a union of method types, told apart only by
    /// the envelope's `method` (two methods may share a shape, e.g. `session/close` and `logout`).
    pub(super) fn method_keyed(&self, branches: &[Schema]) -> bool {
        let mut members = Vec::new();
        collect_refs(branches, &mut members);
        let has_method = members.iter().any(|r| self.def_schema(r).is_some_and(|d| d.x_method.is_some()));
        has_method && count_leaves(branches) == members.len()
    }

    /// Methods from `x-method`/`x-side`, classified by the envelopes that carry them: a
    /// `params` next to an `id` is a request, without one a notification; a `result` is a response.
    pub(super) fn methods(&mut self) -> Vec<Method> {
        let [requests, notifications, responses] = self.envelope_members();
        let mut methods: Vec<Method> = Vec::new();
        for (kind, members) in [(MethodKind::Request, &requests), (MethodKind::Notification, &notifications)] {
            for reference in members {
                let Some((_, name, side, params)) = self.method_def(reference) else {
                    continue;
                };
                if methods.iter().any(|m| m.name == name && m.side.wire == side && m.kind == kind) {
                    continue;
                }
                methods.push(Method {
                    name: name.to_string(),
                    side: receiving_side(side),
                    kind,
                    params,
                    result: None,
                    stability: Stability::Stable,
                    session_scoped: self.session_scoped(params),
                    rust: MethodNames::default(),
                    origin: MethodOrigin {
                        file: self.doc.file.clone(),
                        pointer: self.types[params.0].origin.pointer.clone(),
                    },
                });
            }
        }
        self.attach_responses(&mut methods, &responses);
        self.attach_by_position(&mut methods);
        for m in &methods {
            if m.kind == MethodKind::Request && m.result.is_none() {
                // A draft may declare a request before its response: generated with the response
                // as raw JSON, so that the draft can still be built and diffed.
                let pointer = self.types[m.params.0].origin.pointer.clone();
                self.warn(&pointer, WarningKind::NoResponse { method: m.name.clone() });
            }
        }
        methods.sort_by(|a, b| (&a.side, &a.name).cmp(&(&b.side, &b.name)));
        match naming::method_names(&methods) {
            Ok(names) => methods.iter_mut().zip(names).for_each(|(m, names)| m.rust = names),
            Err((a, b)) => {
                let (a, b) = (&methods[a], &methods[b]);
                let kind = SchemaErrorKind::MethodCollision {
                    method: a.name.clone(),
                    other: b.name.clone(),
                    other_pointer: b.origin.pointer.clone(),
                    rust: naming::method_base(&a.name),
                };
                let pointer = a.origin.pointer.clone();
                self.error(&pointer, kind);
            }
        }
        methods
    }

    /// The `$ref`s the envelopes carry: `[requests, notifications, responses]`.
    fn envelope_members(&self) -> [Vec<String>; 3] {
        let mut envelopes = Vec::new();
        envelopes_in(&self.doc.root, &mut envelopes);
        for (_, def) in &self.doc.defs {
            envelopes_in(def, &mut envelopes);
        }
        if envelopes.is_empty() {
            envelopes = self.message_unions();
        }
        let [mut requests, mut notifications, mut responses] = [Vec::new(), Vec::new(), Vec::new()];
        for (kind, members) in envelopes {
            let members = self.expand_unions(members);
            let target = match kind {
                Envelope::Request => &mut requests,
                Envelope::Notification => &mut notifications,
                Envelope::Response => &mut responses,
            };
            target.extend(members);
        }
        [requests, notifications, responses]
    }

    /// The method definitions behind `members`: a `$ref` to a definition without `x-method` that
    /// is itself a union (`params: AgentRequest` in 0.5.x) stands for that union's members.
    fn expand_unions(&self, members: Vec<String>) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut stack: Vec<String> = members.into_iter().rev().collect();
        while let Some(reference) = stack.pop() {
            if !seen.insert(reference.clone()) {
                continue;
            }
            match self.def_schema(&reference) {
                Some(def) if def.x_method.is_none() => {
                    let mut nested = Vec::new();
                    collect_refs(def.branches().unwrap_or_default(), &mut nested);
                    stack.extend(nested.into_iter().rev());
                }
                _ => out.push(reference),
            }
        }
        out
    }

    /// The earliest drafts (0.1.x, 0.2.x) give some responses no `x-method`, and some requests a
    /// `null` result (a `{"type": "null"}` branch). Their response unions list the responses "to
    /// the corresponding" request variants: branch i of a response union answers branch i of a
    /// request union. A pair is taken only when it is certain: the two unions have as many
    /// branches, every response branch that has an `x-method` stands where the request of that
    /// method does (one at least), and exactly one request union fits. Then each request still
    /// without a response gets the branch at its position: the type it refers to, or, for `null`,
    /// a unit type named after the branch's title.
    fn attach_by_position(&mut self, methods: &mut [Method]) {
        if methods.iter().all(|m| m.kind != MethodKind::Request || m.result.is_some()) {
            return;
        }
        let params: Vec<TypeId> = methods.iter().filter(|m| m.kind == MethodKind::Request).map(|m| m.params).collect();
        let unions: Vec<&'a Schema> = self.doc.defs.iter().filter_map(|(_, d)| d.branches().map(|_| d)).collect();
        let requests: Vec<&'a Schema> = unions.iter().copied().filter(|u| self.all_params(u, &params)).collect();
        let responses: Vec<&'a Schema> =
            unions.iter().copied().filter(|u| self.is_response_union(u, &params)).collect();
        for response in responses {
            let fits: Vec<&'a Schema> = requests.iter().copied().filter(|q| self.aligned(q, response)).collect();
            let [request] = fits.as_slice() else {
                continue;
            };
            let pairs = request.branches().unwrap_or_default().iter().zip(response.branches().unwrap_or_default());
            for (asked, answer) in pairs {
                let Some((_, name, side, _)) = asked.reference.as_deref().and_then(|r| self.method_def(r)) else {
                    continue;
                };
                let waiting = methods.iter_mut().find(|m| {
                    m.name == name && m.side.wire == side && m.kind == MethodKind::Request && m.result.is_none()
                });
                if let Some(method) = waiting {
                    method.result = self.positional_result(answer, &method.name);
                }
            }
        }
    }

    /// The result type a positional response branch gives: the type it refers to, or a unit type.
    fn positional_result(&mut self, answer: &Schema, method: &str) -> Option<TypeId> {
        if answer.types.as_deref() == Some(&[JsonType::Null]) {
            let title = answer.title.clone().unwrap_or_else(|| format!("{}Response", naming::type_name(method)));
            let name = naming::type_name(&title);
            let id = self.reserve(&name, &title, answer, false);
            self.types[id.0].kind = TypeKind::Newtype { inner: TypeRef::Null, boxed: false };
            return Some(id);
        }
        let reference = answer.reference.as_deref()?;
        reference.rsplit('/').next().and_then(|n| self.ids.get(n)).copied()
    }

    /// A union whose method-tagged members are all request params.
    fn all_params(&self, union: &Schema, params: &[TypeId]) -> bool {
        let ids = self.method_members(union);
        !ids.is_empty() && ids.iter().all(|id| params.contains(id))
    }

    /// A union with a `null` or method-tagged member that is no request's params.
    fn is_response_union(&self, union: &Schema, params: &[TypeId]) -> bool {
        let ids = self.method_members(union);
        let branches = union.branches().unwrap_or_default();
        !ids.is_empty()
            && ids.iter().all(|id| !params.contains(id))
            && branches.iter().any(|b| b.types.as_deref() == Some(&[JsonType::Null]) || b.reference.is_some())
    }

    /// The type ids of a union's direct `$ref` branches that carry an `x-method`.
    fn method_members(&self, union: &Schema) -> Vec<TypeId> {
        let branches = union.branches().unwrap_or_default();
        branches
            .iter()
            .filter_map(|b| b.reference.as_deref().and_then(|r| self.method_def(r)))
            .map(|(_, _, _, id)| id)
            .collect()
    }

    /// Branch i of `response` answers branch i of `request`, as far as `x-method`s tell.
    fn aligned(&self, request: &Schema, response: &Schema) -> bool {
        let (asked, answers) = (request.branches().unwrap_or_default(), response.branches().unwrap_or_default());
        let method_of = |b: &Schema| b.reference.as_deref().and_then(|r| self.method_def(r)).map(|(_, m, s, _)| (m, s));
        let mut anchors = 0;
        for (q, r) in asked.iter().zip(answers) {
            if let Some(answered) = method_of(r) {
                if method_of(q) != Some(answered) {
                    return false;
                }
                anchors += 1;
            }
        }
        asked.len() == answers.len() && anchors > 0
    }

    /// Early drafts (0.4.x) have no JSON-RPC envelopes, only the message unions themselves,
    /// named for their role: `AgentRequest`, `ClientResponse`, `AgentNotification`, ...
    fn message_unions(&self) -> Vec<(Envelope, Vec<String>)> {
        let mut envelopes = Vec::new();
        for (name, def) in &self.doc.defs {
            let Some(branches) = def.branches() else {
                continue;
            };
            let kind = if name.ends_with("Request") {
                Envelope::Request
            } else if name.ends_with("Notification") {
                Envelope::Notification
            } else if name.ends_with("Response") {
                Envelope::Response
            } else {
                continue;
            };
            let mut members = Vec::new();
            collect_refs(branches, &mut members);
            envelopes.push((kind, members));
        }
        envelopes
    }

    /// A referenced `$defs` entry with its `x-method`, `x-side` and type id, when it has all three.
    fn method_def(&self, reference: &str) -> Option<(&'a Schema, &'a str, &'a str, TypeId)> {
        let def = self.def_schema(reference)?;
        let (Some(method), Some(side)) = (&def.x_method, &def.x_side) else {
            return None;
        };
        let id = reference.rsplit('/').next().and_then(|n| self.ids.get(n))?;
        Some((def, method, side, *id))
    }

    /// Whether params of this type name the session the message acts on: a struct (or a newtype
    /// of one) with a property `sessionId` that every valid message carries with a value (see
    /// [`Self::never_null`]). One that may be omitted or `null` does not count: a message without
    /// a session is then valid, so a transport cannot demand one (no published schema has such a
    /// `sessionId` on params).
    fn session_scoped(&self, params: TypeId) -> ByFeature<bool> {
        let mut id = params;
        // A newtype chain is at most as long as the arena (a cycle of them is reported elsewhere).
        for _ in 0..self.types.len() {
            match &self.types[id.0].kind {
                TypeKind::Struct(s) => {
                    let scoped = s.fields.iter().any(|f| f.origin.wire == "sessionId" && self.never_null(f));
                    return ByFeature::both(scoped);
                }
                TypeKind::Newtype { inner: TypeRef::Named(inner), .. } => id = *inner,
                _ => break,
            }
        }
        ByFeature::both(false)
    }

    /// A field that must be present and whose value is never `null`: required, of a type that
    /// does not take `null` (through named types: see [`Self::takes_null`]), and not decoded
    /// leniently from `null` (`x-deserialize-default-on-null` reads `null` as the default, so a
    /// message may send it).
    fn never_null(&self, f: &Field) -> bool {
        f.presence == Presence::Required
            && !f.lenient.default_on_null
            && !self.takes_null(&f.ty, &mut std::collections::BTreeSet::new())
    }

    /// Whether a value of this type may be `null`: `null` itself, any JSON value, or a named type
    /// that takes it (a newtype of such a type, or a union with an untagged branch of one, e.g.
    /// `anyOf: [{$ref: SessionId}, {type: null}]` as a `$defs` entry). `seen` stops at a cycle.
    fn takes_null(&self, r: &TypeRef, seen: &mut std::collections::BTreeSet<TypeId>) -> bool {
        match r {
            TypeRef::Null | TypeRef::Any | TypeRef::MethodKeyed => true,
            TypeRef::Named(id) if seen.insert(*id) => match &self.types[id.0].kind {
                TypeKind::Any => true,
                TypeKind::Newtype { inner, .. } => self.takes_null(inner, seen),
                TypeKind::Union(u) => u.variants.iter().any(|v| match &v.kind {
                    VariantKind::Untagged(body) => self.takes_null(body, seen),
                    VariantKind::Tagged { .. } | VariantKind::CatchAll(_) => false,
                }),
                TypeKind::Struct(_) | TypeKind::StringEnum { .. } | TypeKind::IntEnum { .. } => false,
            },
            _ => false,
        }
    }

    /// Gives each request its response type, matched by `x-method` and `x-side` (not by name).
    fn attach_responses(&mut self, methods: &mut [Method], responses: &[String]) {
        for reference in responses {
            let Some((def, name, side, result)) = self.method_def(reference) else {
                continue;
            };
            let request = |m: &&mut Method| m.name == name && m.side.wire == side && m.kind == MethodKind::Request;
            match methods.iter_mut().find(request) {
                Some(m) => m.result = Some(result),
                None => {
                    let kind = SchemaErrorKind::UnmatchedResponse { method: name.to_string(), side: side.to_string() };
                    self.error(&def.pointer, kind);
                }
            }
        }
    }
}

/// Who receives a method with this `x-side` value: the one place in the generator that reads
/// those values. The protocol has two ends, the agent and the client; `protocol` methods
/// (`$/cancel_request`) and `both` ones (`mcp/message` in 1.0.0) go both ways, so either end
/// receives them; `proxy` ones go to a proxy between the two. Any other value names none of them
/// and is known by its wire name only (it still generates, as a side of its own).
fn receiving_side(wire: &str) -> Side {
    let receiver = match wire {
        "agent" => Receiver::Agent,
        "client" => Receiver::Client,
        "protocol" | "both" => Receiver::Either,
        "proxy" => Receiver::Proxy,
        _ => Receiver::Other,
    };
    Side { wire: wire.to_string(), receiver }
}

enum Envelope {
    Request,
    Notification,
    Response,
}

/// Finds JSON-RPC envelopes (objects with `method`+`params`, or `result`) anywhere in a schema.
fn envelopes_in(s: &Schema, out: &mut Vec<(Envelope, Vec<String>)>) {
    if let Some(props) = &s.properties {
        let get = |n: &str| props.iter().find(|(p, _)| p == n).map(|(_, s)| s);
        let mut members = Vec::new();
        if let (Some(_), Some(params)) = (get("method"), get("params")) {
            collect_refs(std::slice::from_ref(params), &mut members);
            let kind = if get("id").is_some() { Envelope::Request } else { Envelope::Notification };
            out.push((kind, members));
        } else if let Some(result) = get("result") {
            collect_refs(std::slice::from_ref(result), &mut members);
            out.push((Envelope::Response, members));
        }
    }
    for list in [&s.any_of, &s.one_of, &s.all_of].into_iter().flatten() {
        for b in list {
            envelopes_in(b, out);
        }
    }
}

/// Every `$ref` reachable through `anyOf`/`oneOf`/`allOf` (not through properties).
fn collect_refs(branches: &[Schema], out: &mut Vec<String>) {
    for b in branches {
        if let Some(r) = &b.reference {
            out.push(r.clone());
        }
        for list in [&b.any_of, &b.one_of, &b.all_of].into_iter().flatten() {
            collect_refs(list, out);
        }
    }
}

/// Leaves of a union tree, not counting `null` branches.
fn count_leaves(branches: &[Schema]) -> usize {
    branches
        .iter()
        .map(|b| {
            if b.types.as_deref() == Some(&[JsonType::Null]) {
                return 0;
            }
            let nested: usize = [&b.any_of, &b.one_of, &b.all_of].into_iter().flatten().map(|l| count_leaves(l)).sum();
            if b.reference.is_some() {
                1
            } else {
                nested
            }
        })
        .sum()
}
