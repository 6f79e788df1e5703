//! The JSON Schema model: a schema file parsed into typed nodes, each with its JSON pointer.
//!
//! Only the keywords the ACP schemas use are understood; any other keyword is an error that names
//! its pointer, so a new construct in a draft is noticed instead of silently ignored. An `x-`
//! keyword is an annotation, not a construct: one the loader does not know is kept, raw, on its
//! node ([`Schema::annotations`]) and reported as a [`Warning`], so the next draft's annotations
//! never stop regeneration.

use crate::error::{Construct, Errors, LoadError, SchemaErrorKind};
use crate::warning::{Warning, WarningKind};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// A JSON type name from the `type` keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum JsonType {
    /// `null`.
    Null,
    /// `boolean`.
    Boolean,
    /// `integer`.
    Integer,
    /// `number`.
    Number,
    /// `string`.
    String,
    /// `array`.
    Array,
    /// `object`.
    Object,
}

/// `additionalProperties` / `unevaluatedProperties`.
#[derive(Debug, Clone)]
pub enum Additional {
    /// `true`: any other property; `false`: none.
    Allowed(bool),
    /// Other properties, each of this schema.
    Schema(Box<Schema>),
}

/// One schema node. Keywords that only validate (lengths, patterns) are kept for completeness.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// Where the node is: a JSON pointer into its file.
    pub pointer: String,
    /// `title`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `type`: one name or a list.
    pub types: Option<Vec<JsonType>>,
    /// `$ref`.
    pub reference: Option<String>,
    /// `allOf`.
    pub all_of: Option<Vec<Schema>>,
    /// `anyOf`.
    pub any_of: Option<Vec<Schema>>,
    /// `oneOf`.
    pub one_of: Option<Vec<Schema>>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// `properties`, in file order.
    pub properties: Option<Vec<(String, Schema)>>,
    /// `required`.
    pub required: Vec<String>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `unevaluatedProperties`.
    pub unevaluated: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Schema>>,
    /// `const`.
    pub constant: Option<Value>,
    /// `enum`.
    pub enumeration: Option<Vec<Value>>,
    /// `default`.
    pub default: Option<Value>,
    /// `format`.
    pub format: Option<String>,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `discriminator.propertyName`.
    pub discriminator: Option<String>,
    /// `x-method`: the method a params or result type belongs to.
    pub x_method: Option<String>,
    /// `x-side`: who receives that method.
    pub x_side: Option<String>,
    /// `x-deserialize-default-on-error`.
    pub default_on_error: bool,
    /// `x-deserialize-skip-invalid-items`.
    pub skip_invalid_items: bool,
    /// `x-deserialize-default-on-null`.
    pub default_on_null: bool,
    /// `x-docs-ignore`: an item the schema's documentation leaves out.
    pub docs_ignore: bool,
    /// The `x-` keywords the loader does not know (`x-state`, `x-scope`, …), with their values,
    /// in file order.
    pub annotations: Vec<(String, Value)>,
}

impl Schema {
    /// The empty schema `{}` (or `true`): any JSON value.
    pub fn is_any(&self) -> bool {
        self.types.is_none()
            && self.reference.is_none()
            && self.all_of.is_none()
            && self.any_of.is_none()
            && self.one_of.is_none()
            && self.properties.is_none()
            && self.items.is_none()
            && self.constant.is_none()
            && self.enumeration.is_none()
            && self.not.is_none()
            && self.additional.is_none()
    }

    /// `anyOf` or `oneOf` (the schemas use both for the same thing: exactly one branch matches).
    pub fn branches(&self) -> Option<&[Schema]> {
        self.any_of.as_deref().or(self.one_of.as_deref())
    }
}

/// A parsed schema file.
#[derive(Debug, Clone)]
pub struct Document {
    /// The file name as given, used in error messages and generated headers.
    pub file: String,
    /// The file's `title`.
    pub title: Option<String>,
    /// The top-level `anyOf` of message shapes.
    pub root: Schema,
    /// `$defs`, in file order.
    pub defs: Vec<(String, Schema)>,
    /// One per unknown `x-` keyword, at its first pointer.
    pub warnings: Vec<Warning>,
}

/// Parses a schema file's text.
pub fn parse(file: &str, text: &str) -> Result<Document, LoadError> {
    let value: Value = serde_json::from_str(text).map_err(|error| LoadError::Json { file: file.to_string(), error })?;
    let mut errors = Errors::default();
    let mut reader = Reader { file, errors: &mut errors, annotations: BTreeMap::new() };
    let mut doc = reader.document(&value);
    doc.warnings = reader.warnings();
    errors.into_result(doc)
}

struct Reader<'a> {
    file: &'a str,
    errors: &'a mut Errors,
    /// Unknown annotation keyword → (its first pointer, how many times it occurs).
    annotations: BTreeMap<String, (String, usize)>,
}

impl Reader<'_> {
    fn error(&mut self, pointer: &str, kind: SchemaErrorKind) {
        self.errors.push(self.file, pointer, kind);
    }

    fn malformed(&mut self, pointer: &str, expected: &'static str) {
        self.error(pointer, SchemaErrorKind::Malformed { expected });
    }

    /// Keeps an `x-` keyword the loader does not know on its node, and counts it for the warning.
    fn annotation(&mut self, s: &mut Schema, keyword: &str, value: &Value, pointer: &str) {
        s.annotations.push((keyword.to_string(), value.clone()));
        self.annotations.entry(keyword.to_string()).or_insert_with(|| (pointer.to_string(), 0)).1 += 1;
    }

    /// One warning per unknown annotation keyword, at its first pointer.
    fn warnings(&self) -> Vec<Warning> {
        let mut warnings: Vec<Warning> = self
            .annotations
            .iter()
            .map(|(keyword, (pointer, count))| Warning {
                file: self.file.to_string(),
                pointer: pointer.clone(),
                kind: WarningKind::UnknownAnnotation { keyword: keyword.clone(), count: *count },
            })
            .collect();
        warnings.sort();
        warnings
    }

    fn document(&mut self, value: &Value) -> Document {
        let mut doc = Document {
            file: self.file.to_string(),
            title: None,
            root: Schema::default(),
            defs: Vec::new(),
            warnings: Vec::new(),
        };
        let Some(object) = value.as_object() else {
            self.malformed("", "a schema file must be a JSON object");
            return doc;
        };
        let mut root = Map::new();
        for (key, value) in object {
            match key.as_str() {
                "$schema" => {}
                "$defs" | "definitions" => match value.as_object() {
                    Some(defs) => {
                        for (name, def) in defs {
                            let pointer = format!("/{key}/{}", escape(name));
                            doc.defs.push((name.clone(), self.schema(def, &pointer)));
                        }
                    }
                    None => self.malformed(&format!("/{key}"), "must be an object"),
                },
                _ => {
                    root.insert(key.clone(), value.clone());
                }
            }
        }
        doc.root = self.schema(&Value::Object(root), "");
        doc.title = doc.root.title.clone();
        doc
    }

    fn schema(&mut self, value: &Value, pointer: &str) -> Schema {
        let mut s = Schema { pointer: pointer.to_string(), ..Schema::default() };
        let object = match value {
            Value::Object(object) => object,
            Value::Bool(true) => return s,
            _ => {
                self.malformed(pointer, "a schema must be an object or `true`");
                return s;
            }
        };
        for (key, value) in object {
            let at = format!("{pointer}/{}", escape(key));
            match key.as_str() {
                "title" => s.title = self.string(value, &at),
                "description" => s.description = self.string(value, &at),
                "type" => s.types = self.types(value, &at),
                "$ref" => s.reference = self.string(value, &at),
                "allOf" => s.all_of = Some(self.list(value, &at)),
                "anyOf" => s.any_of = Some(self.list(value, &at)),
                "oneOf" => s.one_of = Some(self.list(value, &at)),
                "not" => s.not = Some(Box::new(self.schema(value, &at))),
                "properties" => s.properties = self.properties(value, &at),
                "required" => s.required.extend(self.required(value, &at)),
                "additionalProperties" => s.additional = Some(self.additional(value, &at)),
                "unevaluatedProperties" => s.unevaluated = Some(self.additional(value, &at)),
                "items" => s.items = Some(Box::new(self.schema(value, &at))),
                "const" => s.constant = Some(value.clone()),
                "enum" => match value.as_array() {
                    Some(values) => s.enumeration = Some(values.clone()),
                    None => self.malformed(&at, "must be an array"),
                },
                "default" => s.default = Some(value.clone()),
                "format" => s.format = self.string(value, &at),
                "minimum" => s.minimum = self.number(value, &at),
                "maximum" => s.maximum = self.number(value, &at),
                "discriminator" => s.discriminator = self.discriminator(value, &at),
                "x-method" => s.x_method = self.string(value, &at),
                "x-side" => s.x_side = self.string(value, &at),
                "x-deserialize-default-on-error" => s.default_on_error = self.flag(value, &at),
                "x-deserialize-skip-invalid-items" => s.skip_invalid_items = self.flag(value, &at),
                "x-deserialize-default-on-null" => s.default_on_null = self.flag(value, &at),
                "x-docs-ignore" => s.docs_ignore = self.flag(value, &at),
                // Read by lowering (`lower::state`) from the node's annotations.
                "x-state" | "x-scope" => s.annotations.push((key.to_string(), value.clone())),
                // Validation-only keywords: they constrain values but never change the Rust type.
                // `propertyNames` (1.20.0 of the schema crate: `{"not": {"enum": ["sessionId", …]}}`
                // on an elicitation scope) forbids keys that are not properties of the struct.
                "minLength" | "maxLength" | "minItems" | "maxItems" | "pattern" | "contentEncoding"
                | "contentMediaType" | "uniqueItems" | "examples" | "deprecated" | "readOnly" | "writeOnly"
                | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | "$comment" | "$id" | "propertyNames" => {}
                other if other.starts_with("x-") => self.annotation(&mut s, other, value, &at),
                other => self.error(&at, SchemaErrorKind::Unsupported(Construct::Keyword(other.to_string()))),
            }
        }
        s
    }

    /// `properties`: each property's schema, by name, in the file's order.
    fn properties(&mut self, value: &Value, pointer: &str) -> Option<Vec<(String, Schema)>> {
        let Some(props) = value.as_object() else {
            self.malformed(pointer, "must be an object");
            return None;
        };
        Some(
            props
                .iter()
                .map(|(name, p)| (name.clone(), self.schema(p, &format!("{pointer}/{}", escape(name)))))
                .collect(),
        )
    }

    /// `required`: the names of the required properties.
    fn required(&mut self, value: &Value, pointer: &str) -> Vec<String> {
        let Some(items) = value.as_array() else {
            self.malformed(pointer, "must be an array of property names");
            return Vec::new();
        };
        let mut names = Vec::new();
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(name) => names.push(name.to_string()),
                None => self.malformed(&format!("{pointer}/{i}"), "must be a string"),
            }
        }
        names
    }

    /// `discriminator`: its `propertyName`.
    fn discriminator(&mut self, value: &Value, pointer: &str) -> Option<String> {
        let name = value.get("propertyName").and_then(Value::as_str).map(str::to_string);
        if name.is_none() {
            self.malformed(pointer, "expected an object with a string `propertyName`");
        }
        name
    }

    fn list(&mut self, value: &Value, pointer: &str) -> Vec<Schema> {
        match value.as_array() {
            Some(items) => items.iter().enumerate().map(|(i, v)| self.schema(v, &format!("{pointer}/{i}"))).collect(),
            None => {
                self.malformed(pointer, "must be an array of schemas");
                Vec::new()
            }
        }
    }

    fn additional(&mut self, value: &Value, pointer: &str) -> Additional {
        match value {
            Value::Bool(b) => Additional::Allowed(*b),
            other => Additional::Schema(Box::new(self.schema(other, pointer))),
        }
    }

    fn string(&mut self, value: &Value, pointer: &str) -> Option<String> {
        match value.as_str() {
            Some(s) => Some(s.to_string()),
            None => {
                self.malformed(pointer, "must be a string");
                None
            }
        }
    }

    fn number(&mut self, value: &Value, pointer: &str) -> Option<f64> {
        let n = value.as_f64();
        if n.is_none() {
            self.malformed(pointer, "must be a number");
        }
        n
    }

    fn flag(&mut self, value: &Value, pointer: &str) -> bool {
        match value.as_bool() {
            Some(b) => b,
            None => {
                self.malformed(pointer, "must be a boolean");
                false
            }
        }
    }

    fn types(&mut self, value: &Value, pointer: &str) -> Option<Vec<JsonType>> {
        let one = |name: &str| match name {
            "null" => Some(JsonType::Null),
            "boolean" => Some(JsonType::Boolean),
            "integer" => Some(JsonType::Integer),
            "number" => Some(JsonType::Number),
            "string" => Some(JsonType::String),
            "array" => Some(JsonType::Array),
            "object" => Some(JsonType::Object),
            _ => None,
        };
        let names: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        let mut types = Vec::new();
        for name in names {
            match name.as_str().and_then(one) {
                Some(t) => types.push(t),
                None => self.error(pointer, SchemaErrorKind::UnknownType { name: name.to_string() }),
            }
        }
        Some(types)
    }
}

/// Escapes a key for use in a JSON pointer (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}
