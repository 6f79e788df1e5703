//! `--ext EXT.json`: extension schemas, ACP-layout JSON Schemas of vendor methods (such as
//! `schema/ext/agentao.json`). A `$defs` entry with `x-method` describes that method's params, or
//! its result when its name ends in `Response` (the core schemas' naming); `$ref`s into
//! `../vN/schema.json` resolve to the schemas this tool was built with. An extension message
//! whose method an extension schema describes is validated (`ok`, or `error` with the JSON path)
//! instead of being reported as `extension`. A `$defs` entry with `x-meta-of: TYPE` describes the
//! `_meta` of the core type `TYPE` (Agentao's `InitializeResponse` `_meta`), validated wherever a
//! message's params or result is of that type.

use acp_types::{v1, v2};
use jsonschema::{Draft, Retrieve, Uri, Validator};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// Where an extension schema is taken to live, so that its `../vN/schema.json` resolve to
/// [`CORE`], wherever the file is.
const BASE: &str = "file:///acp/ext/schema.json";
/// The core schemas by the URI a relative `../vN/schema.json` resolves to from [`BASE`].
const CORE: &[(&str, &str)] =
    &[("file:///acp/v1/schema.json", v1::schema_json::SCHEMA), ("file:///acp/v2/schema.json", v2::schema_json::SCHEMA)];

/// The methods of the extension schemas given, each with its params and result validators.
#[derive(Default)]
pub struct ExtSchemas {
    methods: HashMap<String, ExtMethod>,
    /// `x-meta-of`: by core type name, the validators of its `_meta`.
    meta: HashMap<String, Vec<(String, Validator)>>,
}

impl std::fmt::Debug for ExtSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut methods: Vec<&String> = self.methods.keys().collect();
        methods.sort();
        f.debug_struct("ExtSchemas").field("methods", &methods).finish()
    }
}

#[derive(Default)]
struct ExtMethod {
    params: Option<(String, Validator)>,
    result: Option<(String, Validator)>,
}

/// What a message of an extension method is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    Params,
    Result,
}

/// Serves the core schemas to `$ref`s; refuses anything else (no network, no files).
struct CoreSchemas;

impl Retrieve for CoreSchemas {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let text = CORE.iter().find(|(at, _)| *at == uri.as_str()).map(|(_, text)| *text);
        let text = text.ok_or_else(|| format!("{uri} is not a core schema (../v1/schema.json, ../v2/schema.json)"))?;
        Ok(serde_json::from_str(text)?)
    }
}

impl ExtSchemas {
    /// Reads and compiles each file; an error names the file and the definition.
    pub fn load(files: &[impl AsRef<Path>]) -> Result<ExtSchemas, String> {
        let mut schemas = ExtSchemas::default();
        for file in files {
            let file = file.as_ref();
            let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            let document: Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
            schemas.add(&document).map_err(|e| format!("{}: {e}", file.display()))?;
        }
        Ok(schemas)
    }

    fn add(&mut self, document: &Value) -> Result<(), String> {
        let defs = document.get("$defs").and_then(Value::as_object).ok_or("no $defs")?;
        for (name, def) in defs {
            if let Some(core) = def.get("x-meta-of").and_then(Value::as_str) {
                let validator = compile(document, name)?;
                self.meta.entry(core.to_string()).or_default().push((name.clone(), validator));
            }
            let Some(method) = def.get("x-method").and_then(Value::as_str) else {
                continue;
            };
            let validator = compile(document, name)?;
            let entry = self.methods.entry(method.to_string()).or_default();
            let slot = if name.ends_with("Response") { &mut entry.result } else { &mut entry.params };
            *slot = Some((name.clone(), validator));
        }
        Ok(())
    }

    /// The violations of `value` (`params` or `result` of a `method` message), each as the JSON
    /// path from the message root and the reason; `None` when no schema describes that part.
    pub(super) fn violations(&self, method: &str, part: Part, value: &Value) -> Option<Vec<(String, String)>> {
        let entry = self.methods.get(method)?;
        let (name, validator) = match part {
            Part::Params => entry.params.as_ref()?,
            Part::Result => entry.result.as_ref()?,
        };
        let root = match part {
            Part::Params => "params",
            Part::Result => "result",
        };
        Some(errors(name, validator, root, value))
    }

    /// The violations of the `_meta` (at `root`) of a value of the core type `core` against the
    /// extension schemas' `x-meta-of` entries for it.
    pub(super) fn meta_violations(&self, core: &str, root: &str, meta: &Value) -> Vec<(String, String)> {
        let validators = self.meta.get(core).map(Vec::as_slice).unwrap_or_default();
        validators.iter().flat_map(|(name, validator)| errors(name, validator, root, meta)).collect()
    }
}

/// `#/$defs/{name}` of `document` compiled, its `$ref`s into the core schemas served by
/// [`CoreSchemas`].
fn compile(document: &Value, name: &str) -> Result<Validator, String> {
    let mut root = document.clone();
    if let Some(object) = root.as_object_mut() {
        object.insert("$ref".into(), format!("#/$defs/{name}").into());
    }
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .with_base_uri(BASE)
        .with_retriever(CoreSchemas)
        .build(&root)
        .map_err(|e| format!("#/$defs/{name}: {e}"))
}

/// Each violation of `value` (found at `root` in the message) as its JSON path and the reason,
/// naming the extension schema's definition.
fn errors(name: &str, validator: &Validator, root: &str, value: &Value) -> Vec<(String, String)> {
    let found = validator.iter_errors(value).map(|error| {
        let pointer = error.instance_path().to_string();
        let path = pointer.split('/').skip(1).fold(root.to_string(), |path, segment| match segment.parse::<usize>() {
            Ok(i) => format!("{path}[{i}]"),
            Err(_) => super::diff::key_path(&path, &segment.replace("~1", "/").replace("~0", "~")),
        });
        (path, format!("{name}: schema `{}`: {error}", error.kind().keyword()))
    });
    found.collect()
}
