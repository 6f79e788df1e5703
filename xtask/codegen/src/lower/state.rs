//! `x-state` and `x-scope`: the raw annotations lowering kept on types and union variants become a
//! typed [`StateModel`], each path checked against the type it stands on (a path naming no field
//! is a schema error at the annotation's pointer). Run on each lowered file and again on a merged
//! version, whose types are a new graph.

use crate::error::SchemaErrorKind;
use crate::ir::*;
use crate::warning::WarningKind;
use serde_json::Value;

/// The keyword of the rules.
pub const STATE: &str = "x-state";
/// The keyword of the scopes.
pub const SCOPE: &str = "x-scope";

/// What [`model`] found: the model, and the problems by JSON pointer.
pub struct Checked {
    /// The typed annotations.
    pub model: StateModel,
    /// Schema errors, by JSON pointer.
    pub errors: Vec<(String, SchemaErrorKind)>,
    /// Warnings, by JSON pointer.
    pub warnings: Vec<(String, WarningKind)>,
}

/// Reads every `x-state` / `x-scope` annotation of `p`'s types and union variants.
pub fn model(p: &Protocol) -> Checked {
    let mut c = Checked { model: StateModel::default(), errors: Vec::new(), warnings: Vec::new() };
    // An inline branch's body is a type made from the branch's own schema node: its annotations
    // are the branch's, read once, on the branch.
    let on_branches: std::collections::HashSet<&str> = p
        .types
        .iter()
        .filter_map(|t| match &t.kind {
            TypeKind::Union(u) => Some(u),
            _ => None,
        })
        .flat_map(|u| &u.variants)
        .flat_map(|v| &v.origin.annotations)
        .map(|a| a.pointer.as_str())
        .collect();
    for (i, t) in p.types.iter().enumerate() {
        let ty = TypeId(i);
        let source = StateSource { ty, variant: None, tag: None, stability: t.stability };
        let own = t.origin.annotations.iter().any(|a| a.keyword == STATE && !on_branches.contains(a.pointer.as_str()));
        if own {
            read_state(p, &mut c, &t.origin, source, &TypeRef::Named(ty));
        }
        if let Some(a) = t.origin.annotations.iter().find(|a| a.keyword == SCOPE) {
            read_scope(p, &mut c, a, ty, t.stability);
        }
        if let TypeKind::Union(u) = &t.kind {
            for v in &u.variants {
                let tag = match &v.kind {
                    VariantKind::Tagged { value, .. } => Some(value.clone()),
                    _ => None,
                };
                let source = StateSource { ty, variant: Some(v.name.clone()), tag, stability: v.stability };
                let body = v.body().cloned().unwrap_or(TypeRef::Object);
                read_state(p, &mut c, &v.origin, source, &body);
            }
        }
    }
    targets(p, &mut c);
    c
}

/// The rules of one annotated item.
fn read_state(p: &Protocol, c: &mut Checked, origin: &Origin, source: StateSource, on: &TypeRef) {
    let Some(a) = origin.annotations.iter().find(|a| a.keyword == STATE) else { return };
    let Some(scopes) = a.value.as_object() else {
        c.errors.push((a.pointer.clone(), SchemaErrorKind::Malformed { expected: "x-state must be an object" }));
        return;
    };
    if scopes.is_empty() {
        c.model.silent.push(source);
        return;
    }
    for (scope, rules) in scopes {
        let at = format!("{}/{}", a.pointer, crate::load::escape(scope));
        let Some(rules) = rules.as_array() else {
            c.errors.push((at, SchemaErrorKind::Malformed { expected: "an array of x-state rules" }));
            continue;
        };
        for (i, rule) in rules.iter().enumerate() {
            let pointer = format!("{at}/{i}");
            if let Some(rule) = read_rule(p, c, rule, &pointer, scope, &source, on) {
                c.model.rules.push(rule);
            }
        }
    }
}

fn read_rule(
    p: &Protocol,
    c: &mut Checked,
    rule: &Value,
    pointer: &str,
    scope: &str,
    source: &StateSource,
    on: &TypeRef,
) -> Option<StateRule> {
    let text = |key: &str| rule.get(key).and_then(Value::as_str);
    let (Some(action), Some(target)) = (text("action"), text("target")) else {
        let expected = "an x-state rule: an object with string `action` and `target`";
        c.errors.push((pointer.to_string(), SchemaErrorKind::Malformed { expected }));
        return None;
    };
    let Some(action) = StateAction::parse(action) else {
        // A newer draft's action: the messages it describes stay unapplied.
        c.warnings.push((format!("{pointer}/action"), WarningKind::UnknownStateAction { action: action.to_string() }));
        return None;
    };
    let mut path = |key: &str, check: bool| -> Option<StatePath> {
        let Some(value) = rule.get(key) else { return Some(Vec::new()) };
        let Some(s) = value.as_str() else {
            let expected = "a dotted path of property names";
            c.errors.push((format!("{pointer}/{key}"), SchemaErrorKind::Malformed { expected }));
            return None;
        };
        let path: StatePath = s.split('.').map(str::to_string).collect();
        if check && resolve(p, on, &path).is_none() {
            c.errors.push((format!("{pointer}/{key}"), bad_path(p, key, s, on)));
            return None;
        }
        Some(path)
    };
    let id = path("id", true)?;
    let value = path("value", true)?;
    // The field is a path into the target's entry, checked once the targets are known.
    let field = path("field", false)?;
    if action == StateAction::Append && field.is_empty() {
        let expected = "an append rule with a `field` to append to";
        c.errors.push((pointer.to_string(), SchemaErrorKind::Malformed { expected }));
        return None;
    }
    Some(StateRule {
        source: source.clone(),
        scope: scope.to_string(),
        action,
        target: target.to_string(),
        id,
        field,
        value,
        appends_text: false,
        pointer: pointer.to_string(),
    })
}

fn bad_path(p: &Protocol, key: &str, path: &str, on: &TypeRef) -> SchemaErrorKind {
    SchemaErrorKind::StatePath { key: key.to_string(), path: path.to_string(), ty: describe(&p.types, on) }
}

fn read_scope(p: &Protocol, c: &mut Checked, a: &Annotation, ty: TypeId, stability: Stability) {
    let Some(scopes) = a.value.as_object() else {
        c.errors.push((a.pointer.clone(), SchemaErrorKind::Malformed { expected: "x-scope must be an object" }));
        return;
    };
    for (scope, paths) in scopes {
        let at = format!("{}/{}", a.pointer, crate::load::escape(scope));
        let Some(list) = paths.as_array() else {
            c.errors.push((at, SchemaErrorKind::Malformed { expected: "an array of dotted paths" }));
            continue;
        };
        let mut decl = ScopeDecl { ty, scope: scope.clone(), paths: Vec::new(), stability };
        for (i, path) in list.iter().enumerate() {
            let Some(text) = path.as_str() else {
                let expected = "a dotted path of property names";
                c.errors.push((format!("{at}/{i}"), SchemaErrorKind::Malformed { expected }));
                continue;
            };
            let path: StatePath = text.split('.').map(str::to_string).collect();
            if resolve(p, &TypeRef::Named(ty), &path).is_none() {
                c.errors.push((format!("{at}/{i}"), bad_path(p, scope, text, &TypeRef::Named(ty))));
                continue;
            }
            decl.paths.push(path);
        }
        c.model.scopes.push(decl);
    }
}

/// The type at `path` from `on`: each name a property of a struct (or of a flattened or nested
/// union's branch, the first that has it), through newtypes.
pub fn resolve(p: &Protocol, on: &TypeRef, path: &[String]) -> Option<TypeRef> {
    path.iter().try_fold(on.clone(), |at, name| step(p, &at, name, 0))
}

fn step(p: &Protocol, on: &TypeRef, name: &str, depth: usize) -> Option<TypeRef> {
    let TypeRef::Named(id) = on else { return None };
    if depth > 16 {
        return None;
    }
    match &p.types.get(id.0)?.kind {
        TypeKind::Newtype { inner, .. } => step(p, inner, name, depth + 1),
        TypeKind::Struct(s) => s.fields.iter().find(|f| f.origin.wire == name).map(|f| f.ty.clone()).or_else(|| {
            let flatten = s.flatten.as_ref()?;
            step(p, &TypeRef::Named(flatten.ty), name, depth + 1)
        }),
        TypeKind::Union(u) => u.variants.iter().filter_map(Variant::body).find_map(|b| step(p, b, name, depth + 1)),
        _ => None,
    }
}

/// Whether a type is text (a string, or a newtype of one), for appends.
fn is_text(p: &Protocol, r: &TypeRef) -> bool {
    match r {
        TypeRef::String => true,
        TypeRef::Named(id) => match &p.types.get(id.0).map(|t| &t.kind) {
            Some(TypeKind::Newtype { inner, .. }) => is_text(p, inner),
            _ => false,
        },
        _ => false,
    }
}

fn is_items(p: &Protocol, r: &TypeRef) -> bool {
    match r {
        TypeRef::Array(_) | TypeRef::Any => true,
        TypeRef::Named(id) => match &p.types.get(id.0).map(|t| &t.kind) {
            Some(TypeKind::Newtype { inner, .. }) => is_items(p, inner),
            Some(TypeKind::Any) => true,
            _ => false,
        },
        _ => false,
    }
}

/// The type a rule's source stands on.
fn source_type(p: &Protocol, s: &StateSource) -> TypeRef {
    let on = TypeRef::Named(s.ty);
    let Some(variant) = &s.variant else { return on };
    match &p.get(s.ty).kind {
        TypeKind::Union(u) => {
            u.variants.iter().find(|v| &v.name == variant).and_then(Variant::body).cloned().unwrap_or(TypeRef::Object)
        }
        _ => on,
    }
}

/// Whether something of stability `s` exists wherever something of `t` does.
fn covers(s: Stability, t: Stability) -> bool {
    s == Stability::Stable || s == t
}

/// The members of the state structs: one per scope and target, with the entry type, and the
/// checks that need it (a field path, what an append adds to).
fn targets(p: &Protocol, c: &mut Checked) {
    let mut names: Vec<(String, String)> = c.model.rules.iter().map(|r| (r.scope.clone(), r.target.clone())).collect();
    names.sort();
    names.dedup();
    for (scope, name) in names {
        let of: Vec<usize> = (0..c.model.rules.len())
            .filter(|&i| c.model.rules[i].scope == scope && c.model.rules[i].target == name)
            .collect();
        let rules: Vec<&StateRule> = of.iter().map(|&i| &c.model.rules[i]).collect();
        let keyed = !rules[0].id.is_empty();
        if let Some(odd) = rules.iter().find(|r| r.id.is_empty() == keyed) {
            c.errors.push((odd.pointer.clone(), SchemaErrorKind::StateTargetKeyed { target: name.clone() }));
            continue;
        }
        let stabilities: Vec<Stability> = rules.iter().map(|r| r.source.stability).collect();
        let stability = if stabilities.contains(&Stability::Stable)
            || (stabilities.contains(&Stability::StableOnly) && stabilities.contains(&Stability::Unstable))
        {
            Stability::Stable
        } else {
            stabilities[0]
        };
        // The entry's type: the value of a rule writing whole entries, preferring one of the
        // stable schema, when its type exists wherever the target does.
        let mut whole: Vec<&StateRule> = rules
            .iter()
            .copied()
            .filter(|r| matches!(r.action, StateAction::Upsert | StateAction::Replace) && r.field.is_empty())
            .collect();
        whole.sort_by_key(|r| r.source.stability);
        let entry_rule = whole.iter().find(|r| {
            let ty = resolve(p, &source_type(p, &r.source), &r.value);
            match ty {
                Some(TypeRef::Named(id)) => covers(p.get(id).stability, stability),
                Some(_) => true,
                None => false,
            }
        });
        let entry = entry_rule.and_then(|r| resolve(p, &source_type(p, &r.source), &r.value));
        let entry_id = entry_rule
            .filter(|r| r.id.starts_with(&r.value))
            .map(|r| r.id[r.value.len()..].to_vec())
            .unwrap_or_default();
        for &i in &of {
            let rule = &c.model.rules[i];
            if rule.field.is_empty() {
                continue;
            }
            let Some(entry) = &entry else { continue };
            let Some(field) = resolve(p, entry, &rule.field) else {
                let err = bad_path(p, "field", &rule.field.join("."), entry);
                c.errors.push((format!("{}/field", rule.pointer), err));
                continue;
            };
            if rule.action == StateAction::Append {
                if is_text(p, &field) {
                    c.model.rules[i].appends_text = true;
                } else if !is_items(p, &field) {
                    let err =
                        SchemaErrorKind::StateAppend { field: rule.field.join("."), ty: describe(&p.types, &field) };
                    c.errors.push((format!("{}/field", rule.pointer), err));
                }
            }
        }
        c.model.targets.push(StateTarget { scope, name, keyed, entry, entry_id, stability });
    }
}
