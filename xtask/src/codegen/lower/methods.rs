//! Lowering the methods: `x-method`/`x-side` on the `$defs` that JSON-RPC envelopes carry become
//! [`Method`]s (request or notification, params and result types), and each `x-side` value becomes
//! a [`Side`] once, here (`receiving_side`).

use super::Lowerer;
use crate::codegen::ir::*;
use crate::codegen::load::{quoted, JsonType, Schema};

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
                });
            }
        }
        self.attach_responses(&mut methods, &responses);
        for m in &methods {
            if m.kind == MethodKind::Request && m.result.is_none() {
                let pointer = self.types[m.params.0].origin.pointer.clone();
                self.error(&pointer, format!("request {} has no response type", quoted(&m.name)));
            }
        }
        methods.sort_by(|a, b| (&a.side, &a.name).cmp(&(&b.side, &b.name)));
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
            let target = match kind {
                Envelope::Request => &mut requests,
                Envelope::Notification => &mut notifications,
                Envelope::Response => &mut responses,
            };
            target.extend(members);
        }
        [requests, notifications, responses]
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
                    let message = format!("response for {} ({}) matches no request", quoted(name), quoted(side));
                    self.error(&def.pointer, message);
                }
            }
        }
    }
}

/// Who receives a method with this `x-side` value: the one place in the generator that reads
/// those values. The protocol has two ends, the agent and the client; `protocol` methods
/// (`$/cancel_request`) go both ways, so either end receives them. Any other value (`proxy`, and
/// `both` in 1.0.0) names neither end and is known by its wire name only.
fn receiving_side(wire: &str) -> Side {
    let receiver = match wire {
        "agent" => Receiver::Agent,
        "client" => Receiver::Client,
        "protocol" => Receiver::Either,
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
