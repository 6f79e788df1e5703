//! Validation of params and results against the JSON Schema of their version (draft 2020-12),
//! in addition to the typed decoding: the schema's own constraints (`minItems`, `pattern`, …)
//! that the Rust types do not enforce. Each schema file is compiled once, on first use, into one
//! validator per `$defs` entry (the `unstable` feature picks `schema.unstable.json`, as it does
//! for the method tables).

use acp_types::{v1, v2, Version};
use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use jsonschema::{Draft, ValidationError, ValidatorMap};
use serde_json::Value;
use std::sync::OnceLock;

/// A place where a message breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Violation {
    /// JSON path from the message root, in the checker's style (`params.prompt[0].text`).
    pub path: String,
    /// The violated keyword (`minItems`).
    pub keyword: String,
    /// The validator's message, the keyword, and the first sentence of the violated schema
    /// node's description when it has one.
    pub reason: String,
}

/// One schema file, compiled.
struct Compiled {
    document: Value,
    validators: ValidatorMap,
}

/// The text of the schema file `version` is checked against.
fn text(version: Version) -> &'static str {
    #[cfg(not(feature = "unstable"))]
    let text = match version {
        Version::V1 => v1::schema_json::SCHEMA,
        Version::V2 => v2::schema_json::SCHEMA,
    };
    #[cfg(feature = "unstable")]
    let text = match version {
        Version::V1 => v1::schema_json::SCHEMA_UNSTABLE,
        Version::V2 => v2::schema_json::SCHEMA_UNSTABLE,
    };
    text
}

fn compiled(version: Version) -> Result<&'static Compiled, &'static str> {
    static V1: OnceLock<Result<Compiled, String>> = OnceLock::new();
    static V2: OnceLock<Result<Compiled, String>> = OnceLock::new();
    let cell = match version {
        Version::V1 => &V1,
        Version::V2 => &V2,
    };
    cell.get_or_init(|| compile(text(version)).map_err(|e| format!("the {version} schema does not compile: {e}")))
        .as_ref()
        .map_err(String::as_str)
}

fn compile(text: &str) -> Result<Compiled, String> {
    let document: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let validators =
        jsonschema::options().with_draft(Draft::Draft202012).build_map(&document).map_err(|e| e.to_string())?;
    Ok(Compiled { document, validators })
}

/// The violations of `instance` (found at `root` in the message) against `#/$defs/{def}` of
/// `version`'s schema. A definition the schema lacks, or a schema that does not compile, is
/// one violation at `root`.
pub(super) fn violations(version: Version, def: &str, root: &str, instance: &Value) -> Vec<Violation> {
    let compiled = match compiled(version) {
        Ok(compiled) => compiled,
        Err(e) => return vec![Violation { path: root.into(), keyword: String::new(), reason: e.into() }],
    };
    let pointer = format!("#/$defs/{def}");
    let Some(validator) = compiled.validators.get(&pointer) else {
        let reason = format!("schema: {pointer} is not in the {version} schema");
        return vec![Violation { path: root.into(), keyword: String::new(), reason }];
    };
    let mut out = Vec::new();
    for error in validator.iter_errors(instance) {
        collect(&compiled.document, def, root, &error, &mut out);
    }
    out
}

/// The violations `error` stands for: a failed union (`anyOf`/`oneOf`) whose tag picks one
/// variant stands for that variant's violations (`maximum` at `…annotations.priority`, not
/// `anyOf` at the content block); any other error for itself.
fn collect(document: &Value, def: &str, root: &str, error: &ValidationError<'_>, out: &mut Vec<Violation>) {
    let branches = match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => context,
        _ => return out.push(violation(document, def, root, error)),
    };
    // A variant is ruled out by a `const` failing at a property of the union's value (its
    // tag), by the wrong `type` of the value itself (`null` in a nullable), or by a `not` (the
    // catch-all variant of an open union, for tags the others do not have).
    let depth = error.instance_path().iter().count();
    let ruled_out = |branch: &[ValidationError<'static>]| {
        branch.iter().any(|e| {
            let at = e.instance_path().iter().count();
            match e.kind() {
                ValidationErrorKind::Constant { .. } => at == depth + 1,
                ValidationErrorKind::Type { .. } | ValidationErrorKind::Not { .. } => at == depth,
                _ => false,
            }
        })
    };
    let mut chosen = branches.iter().filter(|branch| !ruled_out(branch));
    match (chosen.next(), chosen.next()) {
        (Some(branch), None) if branches.iter().all(|b| !b.is_empty()) => {
            for inner in branch {
                collect(document, def, root, inner, out);
            }
        }
        _ => out.push(violation(document, def, root, error)),
    }
}

fn violation(document: &Value, def: &str, root: &str, error: &ValidationError<'_>) -> Violation {
    let mut path = root.to_string();
    for segment in error.instance_path() {
        path = match segment {
            LocationSegment::Property(key) => super::diff::key_path(&path, &key),
            LocationSegment::Index(i) => format!("{path}[{i}]"),
        };
    }
    let keyword = error.kind().keyword().to_string();
    let mut reason = format!("schema `{keyword}`: {error}");
    if let Some(sentence) = description(document, def, error) {
        reason.push_str(&format!(" ({sentence})"));
    }
    Violation { path, keyword, reason }
}

/// The first sentence of the description of the schema node whose keyword failed.
/// Its location is from the document's root once a `$ref` was followed, else from the
/// definition's (`def`).
fn description(document: &Value, def: &str, error: &ValidationError<'_>) -> Option<String> {
    let location = error.schema_path().as_str();
    let node = location.rsplit_once('/').map_or("", |(node, _keyword)| node);
    let node = if node.starts_with("/$defs/") { node.to_string() } else { format!("/$defs/{def}{node}") };
    let text = document.pointer(&node)?.get("description")?.as_str()?;
    first_sentence(text)
}

/// The first paragraph up to its first full stop, on one line.
fn first_sentence(text: &str) -> Option<String> {
    let paragraph = text.split("\n\n").next()?.split_whitespace().collect::<Vec<_>>().join(" ");
    let end = paragraph.find(". ").map_or(paragraph.len(), |i| i + 1);
    let sentence = paragraph[..end].trim();
    (!sentence.is_empty()).then(|| sentence.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentences() {
        assert_eq!(first_sentence("One\nline. Two.\n\nThree.").as_deref(), Some("One line."));
        assert_eq!(first_sentence("No stop").as_deref(), Some("No stop"));
        assert_eq!(first_sentence(""), None);
    }

    #[test]
    fn every_version_compiles() {
        for &version in Version::ALL {
            assert!(compiled(version).is_ok(), "{:?}", compiled(version).err());
        }
    }
}
