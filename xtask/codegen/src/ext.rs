//! Extension schemas: a vendor's `_`-prefixed methods in the core schemas' layout (`$defs` with
//! `x-method`/`x-side`, such as `schema/ext/agentao.json`), joined to the core version they
//! extend, then lowered like any schema.
//!
//! An extension names core types by `$ref`s into the core file, `../vN/schema.json#/$defs/NAME`
//! (any path ending in `schema.json` stands for the core file given; `vN` in it names the version
//! the extension targets). Joining happens on the JSON, before [`mod@crate::load`]: the core
//! definitions the extension reaches (and those they reach) are copied beside its own, its core
//! `$ref`s become local ones, and the envelopes the core schemas carry are made from its
//! annotations, by the rule `acp check --ext` reads them with: a `$defs` entry with `x-method` is
//! that method's params, or its result when its name ends in `Response`; a method with a result
//! is a request, one without a notification. After lowering, the extension's own types (its
//! `$defs` and the anonymous types inside them) are told from the copied core ones by their
//! pointer, and only its methods are kept: the emitters print its types and name the core's by
//! path (`crate::types`), so one Rust type stands for each core type.
//!
//! `x-meta-of: TYPE` (the type describes the `_meta` of core type `TYPE`) is read here and said
//! in the type's docs.

use crate::error::{Construct, Errors, LoadError, SchemaErrorKind};
use crate::ir::{Protocol, TypeId};
use crate::load::escape;
use serde_json::{json, Map, Value};
use std::collections::{BTreeSet, VecDeque};

/// A lowered extension schema.
#[derive(Debug)]
pub struct Extension {
    /// The extension's own types and methods, with the core types they use in the same arena.
    pub protocol: Protocol,
    /// The extension's own types (its `$defs` and the anonymous types inside them): what its
    /// module defines. The others are the core's.
    pub own: BTreeSet<TypeId>,
}

/// The core versions an extension's `$ref`s name (`../v1/schema.json#…` → `v1`), sorted; empty
/// when it names none by a `vN` directory.
pub fn targets(file: &str, text: &str) -> Result<Vec<String>, LoadError> {
    let value: Value = serde_json::from_str(text).map_err(|error| LoadError::Json { file: file.to_string(), error })?;
    let mut refs = Vec::new();
    collect_refs(&value, "", &mut refs);
    let versions: BTreeSet<String> = refs.iter().filter_map(|(r, _)| core_version(r)).collect();
    Ok(versions.into_iter().collect())
}

/// Joins the extension `ext_text` (shown as `ext_file`) to the core schema `core_text` and
/// lowers it.
pub fn load(ext_file: &str, ext_text: &str, core_file: &str, core_text: &str) -> Result<Extension, LoadError> {
    let json_error = |file: &str| {
        let file = file.to_string();
        move |error| LoadError::Json { file, error }
    };
    let ext: Value = serde_json::from_str(ext_text).map_err(json_error(ext_file))?;
    let core: Value = serde_json::from_str(core_text).map_err(json_error(core_file))?;
    let mut errors = Errors::default();
    let joined = join(ext_file, &ext, &core, &mut errors);
    let names = joined.own.clone();
    errors.into_result(())?;
    let doc = crate::load::parse(ext_file, &joined.document.to_string())?;
    let mut protocol = crate::lower::lower(&doc)?;
    let own: BTreeSet<TypeId> = (0..protocol.types.len())
        .map(TypeId)
        .filter(|id| {
            let pointer = &protocol.get(*id).origin.pointer;
            names.iter().any(|n| within(pointer, &format!("/$defs/{}", escape(n))))
        })
        .collect();
    protocol.methods.retain(|m| own.contains(&m.params));
    let mut errors = Errors::default();
    for m in protocol.methods.iter().filter(|m| !m.name.starts_with('_')) {
        errors.push(ext_file, &m.origin.pointer, SchemaErrorKind::NotExtensionMethod { method: m.name.clone() });
    }
    errors.into_result(Extension { protocol, own })
}

/// The joined document and the names of the extension's own `$defs`.
struct Joined {
    document: Value,
    own: Vec<String>,
}

/// The extension's `$defs` beside the core ones it reaches, its core `$ref`s made local, and the
/// envelopes made from its annotations.
fn join(file: &str, ext: &Value, core: &Value, errors: &mut Errors) -> Joined {
    let empty = Map::new();
    let (ext_key, ext_defs) = defs(ext).unwrap_or(("$defs", &empty));
    let core_defs = defs(core).map_or(&empty, |(_, d)| d);
    let mut own = Map::new();
    let mut wanted = VecDeque::new();
    for (name, def) in ext_defs {
        let mut def = def.clone();
        let pointer = format!("/{ext_key}/{}", escape(name));
        localize(&mut def, &pointer, file, &mut wanted, errors);
        meta_of_into_docs(&mut def);
        own.insert(name.clone(), def);
    }
    let mut refs = Vec::new();
    collect_refs(ext, "", &mut refs);
    let versions: BTreeSet<String> = refs.iter().filter_map(|(r, _)| core_version(r)).collect();
    if versions.len() > 1 {
        errors.push(file, "", SchemaErrorKind::SeveralCores { versions: versions.into_iter().collect() });
    }
    // The core definitions the extension reaches, in the core file's order.
    let mut reached = BTreeSet::new();
    while let Some((name, pointer)) = wanted.pop_front() {
        if !reached.insert(name.clone()) {
            continue;
        }
        match core_defs.get(&name) {
            Some(def) => {
                let mut inner = Vec::new();
                collect_refs(def, "", &mut inner);
                for (r, at) in inner {
                    if let Some(n) = r.strip_prefix("#/$defs/").or_else(|| r.strip_prefix("#/definitions/")) {
                        wanted.push_back((n.to_string(), at));
                    }
                }
            }
            None => errors.push(file, &pointer, SchemaErrorKind::DanglingRef { reference: name }),
        }
    }
    let mut all = Map::new();
    for (name, def) in core_defs.iter().filter(|(n, _)| reached.contains(*n)) {
        if own.contains_key(name) {
            let first = format!("/{ext_key}/{}", escape(name));
            let kind =
                SchemaErrorKind::TypeNameTaken { name: name.clone(), first: format!("{first} (the core's too)") };
            errors.push(file, &first, kind);
        }
        all.insert(name.clone(), def.clone());
    }
    let own_names: Vec<String> = own.keys().cloned().collect();
    let envelopes = envelopes(&own);
    all.extend(own);
    let mut document = Map::new();
    for key in ["title", "description"] {
        if let Some(v) = ext.get(key) {
            document.insert(key.to_string(), v.clone());
        }
    }
    document.insert("anyOf".into(), Value::Array(envelopes));
    document.insert("$defs".into(), Value::Object(all));
    Joined { document: Value::Object(document), own: own_names }
}

/// `$defs` (or `definitions`) of a schema file, with the key used.
fn defs(v: &Value) -> Option<(&'static str, &Map<String, Value>)> {
    if let Some(d) = v.get("$defs").and_then(Value::as_object) {
        return Some(("$defs", d));
    }
    v.get("definitions").and_then(Value::as_object).map(|d| ("definitions", d))
}

/// Whether `pointer` is `root` or below it.
fn within(pointer: &str, root: &str) -> bool {
    pointer == root || pointer.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'))
}

/// The `vN` of a `$ref` into a core file (`../v1/schema.json#/$defs/X` → `v1`).
fn core_version(reference: &str) -> Option<String> {
    let (path, _) = reference.split_once('#')?;
    let dir = path.strip_suffix("/schema.json")?.rsplit('/').next()?;
    let digits = dir.strip_prefix('v')?;
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| dir.to_string())
}

/// Every `$ref` below a value, with its pointer.
fn collect_refs(v: &Value, pointer: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let at = format!("{pointer}/{}", escape(k));
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) => out.push((r.clone(), at)),
                    _ => collect_refs(child, &at, out),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_refs(child, &format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Rewrites the core `$ref`s below `v` (`PATH/schema.json#/$defs/NAME`) into local ones, queueing
/// each core name; a `$ref` that is neither local nor into a core file is an error.
fn localize(v: &mut Value, pointer: &str, file: &str, wanted: &mut VecDeque<(String, String)>, errors: &mut Errors) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let at = format!("{pointer}/{}", escape(k));
                match (k.as_str(), child) {
                    ("$ref", Value::String(r)) if r.starts_with('#') => {}
                    ("$ref", Value::String(r)) => {
                        let name = r
                            .split_once('#')
                            .filter(|(path, _)| path.ends_with("schema.json"))
                            .and_then(|(_, f)| f.strip_prefix("/$defs/").or_else(|| f.strip_prefix("/definitions/")))
                            .filter(|n| !n.contains('/'))
                            .map(str::to_string);
                        match name {
                            Some(name) => {
                                wanted.push_back((name.clone(), at));
                                *r = format!("#/$defs/{name}");
                            }
                            None => errors.push(file, &at, SchemaErrorKind::Unsupported(Construct::Ref(r.clone()))),
                        }
                    }
                    (_, child) => localize(child, &at, file, wanted, errors),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                localize(child, &format!("{pointer}/{i}"), file, wanted, errors);
            }
        }
        _ => {}
    }
}

/// `x-meta-of: TYPE` becomes a sentence of the description.
fn meta_of_into_docs(def: &mut Value) {
    let Some(map) = def.as_object_mut() else { return };
    let Some(Value::String(of)) = map.remove("x-meta-of") else { return };
    let line = format!("Describes the `_meta` of the core type `{of}` (`x-meta-of`).");
    let docs = match map.get("description").and_then(Value::as_str) {
        Some(d) => format!("{d}\n\n{line}"),
        None => line,
    };
    map.insert("description".into(), Value::String(docs));
}

/// The JSON-RPC envelopes of the extension's methods, from their annotations: a `$defs` entry
/// with `x-method` is the params of that method, or its result when its name ends in `Response`;
/// a method with a result is a request.
fn envelopes(own: &Map<String, Value>) -> Vec<Value> {
    let annotated = |want_result: bool| -> Vec<(&String, (&str, &str))> {
        own.iter()
            .filter(|(name, _)| name.ends_with("Response") == want_result)
            .filter_map(|(name, d)| {
                let method = d.get("x-method").and_then(Value::as_str)?;
                let side = d.get("x-side").and_then(Value::as_str)?;
                Some((name, (method, side)))
            })
            .collect()
    };
    let results = annotated(true);
    let params = annotated(false);
    let answered: BTreeSet<(&str, &str)> = results.iter().map(|(_, key)| *key).collect();
    let refs = |list: Vec<&String>| -> Value {
        Value::Array(list.into_iter().map(|n| json!({ "$ref": format!("#/$defs/{}", escape(n)) })).collect())
    };
    let requests = refs(params.iter().filter(|(_, k)| answered.contains(k)).map(|(n, _)| *n).collect());
    let notifications = refs(params.iter().filter(|(_, k)| !answered.contains(k)).map(|(n, _)| *n).collect());
    let results = refs(results.iter().map(|(n, _)| *n).collect());
    let mut out = Vec::new();
    if requests.as_array().is_some_and(|a| !a.is_empty()) {
        out.push(json!({ "properties": { "id": {}, "method": {}, "params": { "anyOf": requests } } }));
    }
    if notifications.as_array().is_some_and(|a| !a.is_empty()) {
        out.push(json!({ "properties": { "method": {}, "params": { "anyOf": notifications } } }));
    }
    if results.as_array().is_some_and(|a| !a.is_empty()) {
        out.push(json!({ "properties": { "id": {}, "result": { "anyOf": results } } }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_versions_of_refs() {
        assert_eq!(core_version("../v1/schema.json#/$defs/SessionId").as_deref(), Some("v1"));
        assert_eq!(core_version("../../schema/v2/schema.json#/$defs/X").as_deref(), Some("v2"));
        assert_eq!(core_version("core.json#/$defs/X"), None);
        assert_eq!(core_version("#/$defs/X"), None);
    }

    #[test]
    fn within_is_by_segment() {
        assert!(within("/$defs/Ask", "/$defs/Ask"));
        assert!(within("/$defs/Ask/properties/x", "/$defs/Ask"));
        assert!(!within("/$defs/AskUser", "/$defs/Ask"));
    }
}
