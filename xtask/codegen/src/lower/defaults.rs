//! Typing schema defaults: each `default` of a property becomes a [`DefaultValue`] of its field's
//! type, or a [`SchemaErrorKind::BadDefault`] at the default's pointer. Runs once every type is
//! converted (a default may name a type declared later) and only when no type is made of itself
//! (typing follows newtypes to their inner type).

use super::Lowerer;
use crate::error::{DefaultProblem, SchemaErrorKind};
use crate::ir::*;
use serde_json::Value;
use std::collections::BTreeMap;

impl Lowerer<'_> {
    /// Types the default of every field that has one and sets its presence.
    pub(super) fn type_defaults(&mut self) {
        let pending = std::mem::take(&mut self.defaults);
        let mut typed = Vec::new();
        for (t, def) in self.types.iter().enumerate() {
            let TypeKind::Struct(s) = &def.kind else { continue };
            for (i, f) in s.fields.iter().enumerate() {
                if let Some(json) = pending.get(&f.origin.pointer) {
                    let value = Typing { types: &self.types, pending: &pending }.value(&f.ty, json);
                    typed.push((t, i, json.clone(), value));
                }
            }
        }
        for (t, i, json, value) in typed {
            let TypeKind::Struct(s) = &mut self.types[t].kind else { continue };
            let field = &mut s.fields[i];
            match value {
                Ok(value) => field.presence = Presence::Defaulted(SchemaDefault { json, value }),
                Err(problem) => {
                    let pointer = format!("{}/default", field.origin.pointer);
                    self.error(&pointer, SchemaErrorKind::BadDefault { value: json.to_string(), problem });
                }
            }
        }
    }
}

/// The types of a protocol being lowered, and the defaults not yet typed (their fields are still
/// marked optional).
struct Typing<'t> {
    types: &'t [TypeDef],
    pending: &'t BTreeMap<String, Value>,
}

impl Typing<'_> {
    /// `value` as a default of type `r`.
    fn value(&self, r: &TypeRef, value: &Value) -> Result<DefaultValue, DefaultProblem> {
        let mismatch = || DefaultProblem::Mismatch { found: kind_of(value), expected: self.describe(r) };
        Ok(match (r, value) {
            (TypeRef::Bool, Value::Bool(b)) => DefaultValue::Bool(*b),
            (TypeRef::String, Value::String(s)) => DefaultValue::String(s.clone()),
            (TypeRef::Int(k), Value::Number(n)) => {
                let i = n.as_i64().map(i128::from).or_else(|| n.as_u64().map(i128::from)).ok_or_else(|| {
                    DefaultProblem::Mismatch { found: "a number with a fraction", expected: self.describe(r) }
                })?;
                let ((min, max), name) = (k.range(), k.rust_name());
                if i < min || i > max {
                    return Err(DefaultProblem::OutOfRange { expected: name });
                }
                DefaultValue::Int(i)
            }
            (TypeRef::Float(_), Value::Number(n)) => DefaultValue::Float(n.as_f64().ok_or_else(mismatch)?),
            (TypeRef::Array(_), Value::Array(items)) if items.is_empty() => DefaultValue::EmptyArray,
            (TypeRef::Object | TypeRef::Map(_), Value::Object(m)) if m.is_empty() => DefaultValue::EmptyObject,
            (TypeRef::Named(id), v) => self.named(*id, v)?,
            _ => return Err(mismatch()),
        })
    }

    fn named(&self, id: TypeId, value: &Value) -> Result<DefaultValue, DefaultProblem> {
        let t = &self.types[id.0];
        match (&t.kind, value) {
            (TypeKind::Struct(s), Value::Object(given)) if s.flatten.is_none() => {
                for key in given.keys() {
                    if !s.fields.iter().any(|f| &f.origin.wire == key) {
                        return Err(DefaultProblem::UnknownField { field: key.clone(), ty: t.name.clone() });
                    }
                }
                let mut fields = Vec::new();
                for f in &s.fields {
                    let defaulted = self.pending.contains_key(&f.origin.pointer);
                    let v = match (given.get(&f.origin.wire), &f.presence) {
                        (None, Presence::Required | Presence::RequiredNullable) => {
                            return Err(DefaultProblem::MissingField {
                                field: f.origin.wire.clone(),
                                ty: t.name.clone(),
                            });
                        }
                        (None, _) => continue,
                        (Some(Value::Null), Presence::Patch | Presence::RequiredNullable) => DefaultValue::Null,
                        (Some(Value::Null), Presence::Optional) if !defaulted => DefaultValue::Null,
                        (Some(v), _) => self.value(&f.ty, v)?,
                    };
                    fields.push((f.origin.wire.clone(), v));
                }
                Ok(DefaultValue::Struct(fields))
            }
            (TypeKind::StringEnum { values, catch_all: c }, Value::String(s)) => {
                if let Some(v) = values.iter().find(|v| &v.origin.wire == s) {
                    Ok(DefaultValue::Variant(v.name.clone()))
                } else if c.source.declared() {
                    // A value only an added catch-all keeps is not the schema's: a bad default.
                    Ok(DefaultValue::CatchAll { variant: c.name.clone(), value: s.clone() })
                } else {
                    Err(DefaultProblem::UnknownValue { value: s.clone(), ty: t.name.clone() })
                }
            }
            (TypeKind::Newtype { inner, .. }, v) => Ok(DefaultValue::Newtype(Box::new(self.value(inner, v)?))),
            _ => Err(DefaultProblem::NotSupported { ty: t.name.clone() }),
        }
    }

    fn describe(&self, r: &TypeRef) -> String {
        describe(self.types, r)
    }
}

/// The JSON kind of a value, as a message names it.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(a) if a.is_empty() => "an empty array",
        Value::Array(_) => "a non-empty array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use crate::error::{DefaultProblem, LoadError, SchemaErrorKind};
    use crate::ir::*;

    const MODE: &str = r#""Mode": { "type": "string", "enum": ["fast", "slow"] }"#;

    fn default_of(p: &Protocol, ty: &str, field: &str) -> Option<DefaultValue> {
        let TypeKind::Struct(s) = &p.get(p.find(ty)?).kind else { return None };
        match &s.fields.iter().find(|f| f.origin.wire == field)?.presence {
            Presence::Defaulted(d) => Some(d.value.clone()),
            _ => None,
        }
    }

    #[test]
    fn a_default_is_typed_against_a_type_declared_after_it() {
        let text = format!(
            r##"{{ "$defs": {{
                "A": {{ "type": "object", "properties": {{
                    "b": {{ "allOf": [{{ "$ref": "#/$defs/B" }}], "default": {{ "mode": "slow", "n": 2 }} }}
                }} }},
                "B": {{ "type": "object", "properties": {{
                    "mode": {{ "allOf": [{{ "$ref": "#/$defs/Mode" }}], "default": "fast" }},
                    "n": {{ "type": "integer", "format": "uint8" }}
                }} }},
                {MODE}
            }} }}"##
        );
        let p = crate::load_text(&text, "t.json").expect("lowers");
        assert_eq!(
            default_of(&p, "A", "b"),
            Some(DefaultValue::Struct(vec![
                ("mode".into(), DefaultValue::Variant("Slow".into())),
                ("n".into(), DefaultValue::Int(2)),
            ]))
        );
        assert_eq!(default_of(&p, "B", "mode"), Some(DefaultValue::Variant("Fast".into())));
    }

    #[test]
    fn a_default_that_does_not_fit_is_a_schema_error_at_its_pointer() {
        let text = format!(
            r##"{{ "$defs": {{
                "A": {{ "type": "object", "properties": {{
                    "mode": {{ "allOf": [{{ "$ref": "#/$defs/Mode" }}], "default": "medium" }},
                    "on": {{ "type": "boolean", "default": 1 }}
                }} }},
                {MODE}
            }} }}"##
        );
        let Err(LoadError::Schema(errors)) = crate::load_text(&text, "t.json") else {
            panic!("expected schema errors")
        };
        let found: Vec<(&str, &SchemaErrorKind)> = errors.iter().map(|e| (e.pointer.as_str(), &*e.kind)).collect();
        assert_eq!(
            found,
            [
                (
                    "/$defs/A/properties/mode/default",
                    &SchemaErrorKind::BadDefault {
                        value: "\"medium\"".into(),
                        problem: DefaultProblem::UnknownValue { value: "medium".into(), ty: "Mode".into() }
                    }
                ),
                (
                    "/$defs/A/properties/on/default",
                    &SchemaErrorKind::BadDefault {
                        value: "1".into(),
                        problem: DefaultProblem::Mismatch { found: "a number", expected: "boolean".into() }
                    }
                ),
            ]
        );
    }
}
