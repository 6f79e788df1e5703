//! What the fuzz targets share: the schemas they start from, and a structure-aware mutator that
//! reads the fuzz input as a program of edits to a schema's JSON. Byte-level mutations of a
//! 400 KB JSON file almost never parse; edits (delete a node, rename a keyword, point a `$ref`
//! at its own definition, add a casing twin of a definition) reach the generator's logic.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A schema to start from.
pub struct Base {
    /// The name errors are reported under.
    pub name: String,
    /// Its JSON.
    pub value: Value,
}

fn root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The committed ACP schemas, then the small snapshot schemas (quick to lower).
pub fn bases() -> &'static [Base] {
    static BASES: OnceLock<Vec<Base>> = OnceLock::new();
    BASES.get_or_init(|| {
        let root = root();
        let mut names: Vec<String> =
            ["v1/schema.json", "v1/schema.unstable.json", "v2/schema.json", "v2/schema.unstable.json"]
                .iter()
                .map(|f| format!("schema/{f}"))
                .collect();
        let ok = root.join("xtask/codegen/tests/data/ok");
        let mut small: Vec<String> = std::fs::read_dir(&ok)
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.ends_with(".json"))
                    .map(|n| format!("xtask/codegen/tests/data/ok/{n}"))
                    .collect()
            })
            .unwrap_or_default();
        small.sort();
        names.extend(small);
        names
            .into_iter()
            .map(|name| {
                // The harness's own inputs: a missing file is a broken checkout, not a finding.
                let text = std::fs::read_to_string(root.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
                let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
                Base { name, value }
            })
            .collect()
    })
}

/// One step of a path into a JSON value.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Index(usize),
}

/// The path of the `k`-th node in depth-first order (`k` wraps around the node count).
fn nth_path(value: &Value, k: usize) -> Vec<Seg> {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Array(a) => a.iter().map(count).sum(),
            Value::Object(o) => o.values().map(count).sum(),
            _ => 0,
        }
    }
    fn find(v: &Value, k: &mut usize, path: &mut Vec<Seg>) -> bool {
        if *k == 0 {
            return true;
        }
        *k -= 1;
        match v {
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    path.push(Seg::Index(i));
                    if find(item, k, path) {
                        return true;
                    }
                    path.pop();
                }
            }
            Value::Object(o) => {
                for (key, item) in o {
                    path.push(Seg::Key(key.clone()));
                    if find(item, k, path) {
                        return true;
                    }
                    path.pop();
                }
            }
            _ => {}
        }
        false
    }
    let mut k = k % count(value);
    let mut path = Vec::new();
    find(value, &mut k, &mut path);
    path
}

fn at_mut<'a>(mut v: &'a mut Value, path: &[Seg]) -> Option<&'a mut Value> {
    for seg in path {
        v = match (seg, v) {
            (Seg::Key(k), Value::Object(o)) => o.get_mut(k)?,
            (Seg::Index(i), Value::Array(a)) => a.get_mut(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

fn at<'a>(mut v: &'a Value, path: &[Seg]) -> Option<&'a Value> {
    for seg in path {
        v = match (seg, v) {
            (Seg::Key(k), Value::Object(o)) => o.get(k)?,
            (Seg::Index(i), Value::Array(a)) => a.get(*i)?,
            _ => return None,
        };
    }
    Some(v)
}

const KEYS: &[&str] = &[
    "type",
    "$ref",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "properties",
    "required",
    "items",
    "const",
    "enum",
    "default",
    "format",
    "minimum",
    "title",
    "description",
    "discriminator",
    "additionalProperties",
    "unevaluatedProperties",
    "x-method",
    "x-side",
    "x-deserialize-default-on-error",
    "x-deserialize-skip-invalid-items",
    "x-deserialize-default-on-null",
    "patternProperties",
    "$defs",
    "definitions",
    "sessionId",
    "type_",
    "self",
    "",
    "a/b~c",
    "2.0",
    "_meta",
    "params",
    "result",
    "method",
    "id",
];

const STRINGS: &[&str] = &[
    "object",
    "string",
    "integer",
    "number",
    "boolean",
    "array",
    "null",
    "uint16",
    "int64",
    "uint128",
    "float",
    "agent",
    "client",
    "protocol",
    "initialize",
    "session/new",
    "_ext",
    "text",
    "self",
    "Self",
    "",
    "#/$defs/",
    "#",
    "#/$defs",
    "a b",
    "A",
    "a",
    "1",
    "type",
];

/// A value from a small palette; `defs` names the document's definitions, for `$ref`s.
fn palette(n: u8, defs: &[String]) -> Value {
    let def = |i: u8| defs.get(i as usize % defs.len().max(1)).cloned().unwrap_or_else(|| "X".into());
    let pointer = |i: u8| format!("#/$defs/{}", def(i).replace('~', "~0").replace('/', "~1"));
    match n % 32 {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(false),
        3 => json!(0),
        4 => json!(-1),
        5 => json!(70000),
        6 => json!(1e300),
        7 => json!(""),
        8 => json!("x"),
        9 => json!([]),
        10 => json!({}),
        11 => json!({ "$ref": pointer(n / 32) }),
        12 => json!({ "$ref": "#/$defs/Nope" }),
        13 => json!({ "$ref": "other.json#/x" }),
        14 => json!({ "type": "object" }),
        15 => json!({ "type": ["string", "null"] }),
        16 => json!({ "anyOf": [] }),
        17 => json!({ "allOf": [{ "$ref": pointer(n / 32 + 1) }] }),
        18 => json!({ "const": "a" }),
        19 => json!({ "enum": ["a", "A", 1] }),
        20 => json!({ "type": "integer", "format": "uint128" }),
        21 => json!({ "not": {} }),
        22 => json!({ "patternProperties": {} }),
        23 => json!({ "x-method": "m", "x-side": "agent", "type": "object", "properties": {} }),
        24 => json!({ "anyOf": [{ "type": "string", "const": "a" }, { "type": "string" }, { "type": "string" }] }),
        25 => json!({ "type": ["string", "integer"] }),
        26 => json!({ "anyOf": [{ "type": "null" }, { "$ref": pointer(n / 32 + 2) }] }),
        27 => json!({ "type": "array", "items": { "$ref": pointer(n / 32 + 3) } }),
        28 => json!({ "type": "object", "additionalProperties": { "$ref": pointer(n / 32) } }),
        29 => {
            json!({ "properties": { "type": { "const": "x" } }, "anyOf": [{ "properties": { "kind": { "const": "y" } } }] })
        }
        30 => json!({ "discriminator": { "propertyName": "type" }, "oneOf": [{ "$ref": pointer(n / 32) }] }),
        _ => json!({ "default": "yes", "type": "boolean" }),
    }
}

/// A casing twin of a definition name: `FooBar` → `foo_bar`, `fooBar`, …
fn twin(name: &str, n: u8) -> String {
    match n % 5 {
        0 => name.to_lowercase(),
        1 => {
            let mut out = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_uppercase() && i > 0 {
                    out.push('_');
                }
                out.extend(c.to_lowercase());
            }
            out
        }
        2 => format!("{name}-"),
        3 => name.replace('_', "."),
        _ => name.to_uppercase(),
    }
}

fn def_names(doc: &Value) -> Vec<String> {
    doc.get("$defs").and_then(Value::as_object).map(|d| d.keys().cloned().collect()).unwrap_or_default()
}

/// Applies the edits that `program` encodes (4 bytes each: operation, node index, argument) to
/// `doc`. Every program is valid: edits that do not apply are skipped.
pub fn mutate(doc: &mut Value, program: &[u8]) {
    for op in program.chunks_exact(4) {
        let (code, node, arg) = (op[0], usize::from(u16::from_be_bytes([op[1], op[2]])), op[3]);
        let defs = def_names(doc);
        let path = nth_path(doc, node);
        match code % 8 {
            // Delete the node.
            0 => {
                if let Some((last, parent)) = path.split_last() {
                    match (last, at_mut(doc, parent)) {
                        (Seg::Key(k), Some(Value::Object(o))) => {
                            o.shift_remove(k);
                        }
                        (Seg::Index(i), Some(Value::Array(a))) if *i < a.len() => {
                            a.remove(*i);
                        }
                        _ => {}
                    }
                }
            }
            // Replace it with a palette value.
            1 => {
                if let Some(v) = at_mut(doc, &path) {
                    *v = palette(arg, &defs);
                }
            }
            // Rename its key.
            2 => {
                if let Some((Seg::Key(k), parent)) = path.split_last() {
                    if let Some(Value::Object(o)) = at_mut(doc, parent) {
                        if let Some(v) = o.shift_remove(k) {
                            o.insert(KEYS[arg as usize % KEYS.len()].to_string(), v);
                        }
                    }
                }
            }
            // Add a member.
            3 => {
                if let Some(Value::Object(o)) = at_mut(doc, &path) {
                    o.insert(KEYS[arg as usize % KEYS.len()].to_string(), palette(arg / 8, &defs));
                }
            }
            // Copy another node over it.
            4 => {
                let from = nth_path(doc, node.wrapping_mul(31).wrapping_add(usize::from(arg)));
                if let Some(copy) = at(doc, &from).cloned() {
                    if let Some(v) = at_mut(doc, &path) {
                        *v = copy;
                    }
                }
            }
            // Make it a `$ref` to a definition (its own, often: a cycle).
            5 => {
                let own = match path.as_slice() {
                    [Seg::Key(d), Seg::Key(name), ..] if d == "$defs" => Some(name.clone()),
                    _ => None,
                };
                let target = match (arg % 4, own) {
                    (0, Some(own)) => own,
                    _ => defs.get(arg as usize % defs.len().max(1)).cloned().unwrap_or_default(),
                };
                if let Some(v) = at_mut(doc, &path) {
                    *v = json!({ "$ref": format!("#/$defs/{target}") });
                }
            }
            // Add a casing twin of a definition.
            6 => {
                if let Some(name) = defs.get(node % defs.len().max(1)) {
                    let copy = doc.get("$defs").and_then(|d| d.get(name)).cloned().unwrap_or(Value::Null);
                    if let Some(Value::Object(d)) = doc.get_mut("$defs") {
                        d.insert(twin(name, arg), copy);
                    }
                }
            }
            // Change a scalar.
            _ => {
                if let Some(v) = at_mut(doc, &path) {
                    match v {
                        Value::String(s) => *s = STRINGS[arg as usize % STRINGS.len()].to_string(),
                        Value::Number(_) => *v = palette(arg % 7, &defs),
                        Value::Bool(b) => *b = !*b,
                        _ => {}
                    }
                }
            }
        }
    }
}

/// The definitions that `start` reaches through `$ref`s, as a document of their own: a small,
/// self-contained schema (fast to lower, so many more runs per second than a whole file).
fn subset(doc: &Value, start: usize) -> Value {
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(o) => {
                if let Some(Value::String(r)) = o.get("$ref") {
                    if let Some(name) = r.strip_prefix("#/$defs/") {
                        out.push(name.replace("~1", "/").replace("~0", "~"));
                    }
                }
                o.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let Some(defs) = doc.get("$defs").and_then(Value::as_object).filter(|d| !d.is_empty()) else {
        return doc.clone();
    };
    let mut keep = serde_json::Map::new();
    let mut todo: Vec<String> = defs.keys().nth(start % defs.len()).cloned().into_iter().collect();
    while let Some(name) = todo.pop() {
        if keep.contains_key(&name) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            refs(def, &mut todo);
            keep.insert(name, def.clone());
        }
    }
    json!({ "$defs": keep })
}

/// A schema to lower, as the text a schema file would hold. `selector` picks the base (low bits)
/// and whether to take only the definitions one of them reaches (bit 0x40; the first two bytes of
/// `program` then pick that definition); the rest of `program` is applied with [`mutate`].
pub fn mutated(selector: u8, program: &[u8]) -> (&'static str, String) {
    let bases = bases();
    let base = &bases[usize::from(selector & 0x3f) % bases.len()];
    let mut doc = match (selector & 0x40 != 0, program) {
        (true, [hi, lo, rest @ ..]) => {
            let doc = subset(&base.value, usize::from(u16::from_be_bytes([*hi, *lo])));
            mutate_into(doc, rest)
        }
        _ => mutate_into(base.value.clone(), program),
    };
    (&base.name, std::mem::take(&mut doc).to_string())
}

fn mutate_into(mut doc: Value, program: &[u8]) -> Value {
    mutate(&mut doc, program);
    doc
}

/// Checks the form of the generator's error text: every line is `FILE#POINTER: message` whose
/// pointer (percent-encoded where it holds spaces, `%` or control characters) names a node of
/// `doc`, or `FILE: not valid JSON: …`. Panics otherwise: an error a user cannot locate is a
/// finding.
pub fn assert_located(file: &str, doc: Option<&Value>, errors: &str) {
    assert!(!errors.is_empty(), "an empty error");
    for line in errors.lines() {
        if line.starts_with(&format!("{file}: not valid JSON: ")) {
            continue;
        }
        let Some(rest) = line.strip_prefix(file).and_then(|r| r.strip_prefix('#')) else {
            panic!("error without a JSON pointer: {line:?}");
        };
        let Some((fragment, message)) = rest.split_once(": ") else {
            panic!("error without a message: {line:?}");
        };
        assert!(!message.trim().is_empty(), "error without a message: {line:?}");
        let pointer = percent_decode(fragment).unwrap_or_else(|| panic!("malformed fragment: {line:?}"));
        assert!(pointer.is_empty() || pointer.starts_with('/'), "malformed pointer: {line:?}");
        if let Some(doc) = doc {
            assert!(doc.pointer(&pointer).is_some(), "error at a pointer that names nothing: {line:?}");
        }
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(b);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}
