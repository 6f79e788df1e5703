//! The engine's errors, one type for its API ([`Error`]) and the parts it is made of: why a
//! schema file gave no protocol ([`LoadError`]), one problem at a JSON pointer ([`SchemaError`],
//! what is wrong in [`SchemaErrorKind`], what is supported instead in [`Construct::supported`]),
//! and why emitting failed ([`EmitError`]). Each prints as the one-line-per-problem text the
//! command line shows (`FILE#POINTER: …`). A leaf: it uses no other module of the engine.

use serde_json::Value;
use std::fmt;
#[cfg(test)]
use std::path::Path;
use std::path::PathBuf;

/// Any error of the engine's API.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A schema file could not be read, parsed or lowered.
    Load(LoadError),
    /// A problem found when joining the two files of a version (`merge`).
    Schema(SchemaError),
    /// Emitting Rust failed.
    Emit(EmitError),
    /// A file or directory could not be read.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        error: std::io::Error,
    },
    /// `schema/` has no version directory.
    NoVersions {
        /// The directory searched.
        dir: PathBuf,
    },
    /// Several of the above, found in one run: one line (or more) each.
    Several(Vec<Error>),
}

impl Error {
    /// One error for a list of them (`None` for none).
    pub fn from_list(mut errors: Vec<Error>) -> Option<Error> {
        match errors.len() {
            0 => None,
            1 => errors.pop(),
            _ => Some(Error::Several(errors)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Load(e) => e.fmt(f),
            Error::Schema(e) => e.fmt(f),
            Error::Emit(e) => e.fmt(f),
            Error::Io { path, error } => write!(f, "{}: {error}", path.display()),
            Error::NoVersions { dir } => write!(f, "{}: no version directory (v1, v2, …)", dir.display()),
            Error::Several(errors) => lines(f, errors),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Load(e) => Some(e),
            Error::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

impl From<LoadError> for Error {
    fn from(e: LoadError) -> Error {
        Error::Load(e)
    }
}

impl From<SchemaError> for Error {
    fn from(e: SchemaError) -> Error {
        Error::Schema(e)
    }
}

impl From<EmitError> for Error {
    fn from(e: EmitError) -> Error {
        Error::Emit(e)
    }
}

/// For the drivers, whose commands report errors as text.
impl From<Error> for String {
    fn from(e: Error) -> String {
        e.to_string()
    }
}

/// For the drivers, whose commands report errors as text.
impl From<LoadError> for String {
    fn from(e: LoadError) -> String {
        e.to_string()
    }
}

fn lines<T: fmt::Display>(f: &mut fmt::Formatter<'_>, items: &[T]) -> fmt::Result {
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str("\n")?;
        }
        write!(f, "{e}")?;
    }
    Ok(())
}

/// Why a schema file gave no protocol: it could not be read, is not JSON, or has problems at
/// JSON pointers (all of them, sorted by location). Its text is one line per problem, each
/// `FILE: …` or `FILE#POINTER: …`.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    Read {
        /// The schema file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The text is not JSON.
    Json {
        /// The schema file.
        file: String,
        /// The parse error.
        error: serde_json::Error,
    },
    /// Problems in the schema, each at its pointer: keywords or values the loader does not
    /// support, or constructs lowering cannot express.
    Schema(Vec<SchemaError>),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Read { file, error } => write!(f, "{file}: cannot read: {error}"),
            LoadError::Json { file, error } => write!(f, "{file}: not valid JSON: {error}"),
            LoadError::Schema(errors) => lines(f, errors),
        }
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoadError::Read { error, .. } => Some(error),
            LoadError::Json { error, .. } => Some(error),
            LoadError::Schema(_) => None,
        }
    }
}

/// One problem in a schema file, located by file and JSON pointer. Ordered by file, pointer and
/// text, the order in which a file's problems are reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// The schema file.
    pub file: String,
    /// The JSON pointer of the problem in it.
    pub pointer: String,
    /// Boxed: the kinds that name two sources are large, and errors travel in `Result`s.
    pub kind: Box<SchemaErrorKind>,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}: {}", self.file, fragment(&self.pointer), self.kind)
    }
}

impl Ord for SchemaError {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (&self.file, &self.pointer, self.kind.to_string()).cmp(&(&other.file, &other.pointer, other.kind.to_string()))
    }
}

impl PartialOrd for SchemaError {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// What is wrong at a schema error's pointer. Text from the schema (names, `$ref`s, values) is
/// printed as a JSON string literal, so that quotes and newlines in it stay inside the line.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaErrorKind {
    /// A keyword's value is not of the form JSON Schema gives it (`expected` says what it must
    /// be), or the file is not a schema.
    Malformed {
        /// What the value must be.
        expected: &'static str,
    },
    /// `type` names no JSON type (`name`: the value as JSON).
    UnknownType {
        /// The value of `type`, as JSON.
        name: String,
    },
    /// A keyword, value or combination the generator does not support: which, and (through
    /// [`Construct::supported`]) what it supports instead.
    Unsupported(Construct),
    /// A `$ref` into `#/$defs` naming no entry.
    DanglingRef {
        /// The `$ref`, as JSON.
        reference: String,
    },
    /// A `default` that does not fit its field's type (`value`: the default as JSON).
    BadDefault {
        /// The default, as JSON.
        value: String,
        /// Why it does not fit.
        problem: DefaultProblem,
    },
    /// A Rust type name two schemas would take; `first` is the pointer of the one that took it.
    TypeNameTaken {
        /// The Rust type name.
        name: String,
        /// The JSON pointer of the first item with the name.
        first: String,
    },
    /// Two members (variants, fields) of one type with one Rust name, at `first` and `second`.
    MemberNameTaken {
        /// The Rust name of the members.
        name: String,
        /// The JSON pointer of the first item with the name.
        first: String,
        /// The JSON pointer of the second.
        second: String,
    },
    /// A wire name whose Rust name is not an identifier.
    NotIdentifier {
        /// The wire name.
        wire: String,
        /// The Rust name it would take.
        name: String,
    },
    /// Two methods of one file with one Rust name (`rust`); `other` is at `other_pointer`.
    MethodCollision {
        /// The method's wire name.
        method: String,
        /// The wire name of the other method.
        other: String,
        /// The JSON pointer of the other method.
        other_pointer: String,
        /// The Rust name both would take.
        rust: String,
    },
    /// A method of one file of a version taking the Rust name of a method of the other file.
    MergedMethodCollision {
        /// The method's wire name.
        method: String,
        /// The Rust name both would take.
        rust: String,
        /// The wire name of the other method.
        other: String,
        /// The file of the other method.
        other_file: String,
        /// The JSON pointer of the other method.
        other_pointer: String,
    },
    /// A type made of itself with no JSON level in between: the names along the cycle, back to
    /// the first.
    Cycle {
        /// The names along the cycle, back to the first.
        path: Vec<String>,
    },
    /// A response (`x-method`, `x-side`) that matches no request.
    UnmatchedResponse {
        /// The method's wire name.
        method: String,
        /// Its `x-side`.
        side: String,
    },
    /// An `x-state` / `x-scope` path naming no field of `ty`.
    StatePath {
        /// `id`, `field`, `value`, or the scope's name.
        key: String,
        /// The path as the schema writes it.
        path: String,
        /// The type it should name a field of.
        ty: String,
    },
    /// An `x-state` target keyed by an id in one rule and not in another.
    StateTargetKeyed {
        /// The target's name.
        target: String,
    },
    /// An `append` to a field that holds neither items nor text.
    StateAppend {
        /// The field's path.
        field: String,
        /// Its type.
        ty: String,
    },
    /// A method of an extension schema whose name does not start with `_` (the core protocol's
    /// names are the core's: an extension adds `_`-prefixed ones only).
    NotExtensionMethod {
        /// The method's wire name.
        method: String,
    },
    /// An extension schema whose `$ref`s name more than one core version (`../v1/schema.json`
    /// and `../v2/schema.json`): its types would mix two protocols.
    SeveralCores {
        /// The versions named.
        versions: Vec<String>,
    },
    /// An extension schema whose `$ref`s name a core version that `schema/` does not have.
    UnknownCore {
        /// The version named.
        version: String,
    },
}

impl fmt::Display for SchemaErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use SchemaErrorKind::*;
        match self {
            Malformed { expected } => f.write_str(expected),
            UnknownType { name } => write!(f, "unknown type {name}"),
            Unsupported(c) => c.fmt(f),
            DanglingRef { reference } => write!(f, "dangling $ref {}", quoted(reference)),
            BadDefault { value, problem } => write!(f, "default {value}: {problem}"),
            TypeNameTaken { name, first } => {
                write!(
                    f,
                    "type name `{name}` is already taken by the schema at #{}; rename one of them",
                    fragment(first)
                )
            }
            MemberNameTaken { name, first, second } => {
                write!(f, "variant name `{name}` is used by both #{} and #{}", fragment(first), fragment(second))
            }
            NotIdentifier { wire, name } => {
                write!(f, "{} gives the Rust name {}, which is not an identifier", quoted(wire), quoted(name))
            }
            MethodCollision { method, other, other_pointer, rust } => write!(
                f,
                "methods {} and {} (at {}) would both be named `{rust}` in Rust; rename one",
                quoted(method),
                quoted(other),
                fragment(other_pointer)
            ),
            MergedMethodCollision { method, rust, other, other_file, other_pointer } => write!(
                f,
                "method {} would be named `{rust}` in Rust, as method {} of {other_file}#{}; rename one",
                quoted(method),
                quoted(other),
                fragment(other_pointer)
            ),
            Cycle { path } => write!(
                f,
                "`{}` is made of itself ({}) with no object property or array item in between: no finite JSON value \
                 has this type",
                path.first().map_or("", String::as_str),
                path.join(" → ")
            ),
            UnmatchedResponse { method, side } => {
                write!(f, "response for {} ({}) matches no request", quoted(method), quoted(side))
            }
            StatePath { key, path, ty } => {
                write!(f, "{key} path {} names no field of {}", quoted(path), quoted(ty))
            }
            StateTargetKeyed { target } => write!(
                f,
                "x-state target {} is keyed by an id in one rule and not in another; a target is either a collection or one value",
                quoted(target)
            ),
            StateAppend { field, ty } => {
                write!(f, "append to field {} of type {}: only arrays and strings can be appended to", quoted(field), quoted(ty))
            }
            NotExtensionMethod { method } => write!(
                f,
                "extension method {} does not start with `_`: an extension schema adds vendor methods only",
                quoted(method)
            ),
            UnknownCore { version } => {
                write!(f, "the $refs name core version {version}, which schema/ does not have")
            }
            SeveralCores { versions } => write!(
                f,
                "the $refs name several core versions ({}); an extension extends one (split it in one file per version)",
                versions.join(", ")
            ),
        }
    }
}

/// A construct of JSON Schema the generator does not turn into Rust.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Construct {
    /// A keyword the loader does not know.
    Keyword(String),
    /// A `$ref` outside the file's `$defs`.
    Ref(String),
    /// `allOf` other than `allOf: [{$ref}]`.
    AllOf,
    /// `allOf` beside `properties`.
    AllOfBesideProperties,
    /// An `enum` value that is not a string.
    NonStringEnumValue,
    /// A `const` (as JSON) that is not a string among string constants.
    ConstInStringEnum(String),
    /// An integer `const` outside the range of `i64`.
    IntConstantOutOfRange,
    /// A schema whose JSON type cannot be told.
    Untyped,
    /// `type` with several JSON types (their names).
    SeveralTypes(Vec<String>),
    /// A tagged `anyOf`/`oneOf` branch with branches of its own.
    TaggedBranchWithBranches,
    /// A tagged branch with both `properties` and `allOf`.
    TaggedBranchWithAllOf,
    /// `x-deserialize-skip-invalid-items` on a field that is not an array.
    SkipInvalidItemsOnNonArray,
    /// Union branches tagged by different properties (their names).
    MixedTags(Vec<String>),
    /// A second catch-all branch in one union or enum.
    SecondCatchAll,
}

impl Construct {
    /// What the generator supports instead.
    pub fn supported(&self) -> &'static str {
        use Construct::*;
        match self {
            Keyword(_) => {
                "the keywords the ACP schemas use: types, $ref, allOf/anyOf/oneOf/not, properties, required, \
                 additionalProperties, items, const, enum, default, format, minimum/maximum, discriminator, the x- \
                 extensions of ACP, and keywords that only validate"
            }
            Ref(_) => "references into #/$defs",
            AllOf => "allOf as a single-$ref wrapper",
            AllOfBesideProperties => "properties, or allOf as a single-$ref wrapper, not both",
            NonStringEnumValue => "string enums (integer enums as anyOf of integer constants)",
            ConstInStringEnum(_) => "string constants, and one plain string branch as the catch-all",
            IntConstantOutOfRange => "integer constants in the range of i64",
            Untyped => "a type, $ref, properties, items, const, enum or branches",
            SeveralTypes(_) => "one JSON type, with null: several types as anyOf branches",
            TaggedBranchWithBranches => "tagged branches made of properties or a single $ref",
            TaggedBranchWithAllOf => "tagged branches with properties or allOf, not both",
            SkipInvalidItemsOnNonArray => "x-deserialize-skip-invalid-items on arrays",
            MixedTags(_) => "branches tagged by one property",
            SecondCatchAll => "one catch-all branch",
        }
    }
}

impl fmt::Display for Construct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use Construct::*;
        match self {
            Keyword(k) => write!(f, "unsupported keyword {}", quoted(k)),
            Ref(r) => write!(f, "unsupported $ref {}: only references into #/$defs are supported", quoted(r)),
            AllOf => f.write_str("allOf is only supported as a single-$ref wrapper"),
            AllOfBesideProperties => f.write_str("allOf next to properties is not supported"),
            NonStringEnumValue => f.write_str("only string enums are supported"),
            ConstInStringEnum(value) => write!(f, "const {value} in a string enum"),
            IntConstantOutOfRange => f.write_str("integer enum constant out of range"),
            Untyped => f.write_str("schema without a type this generator understands"),
            SeveralTypes(types) => {
                write!(f, "a value of several JSON types [{}] needs anyOf branches", types.join(", "))
            }
            TaggedBranchWithBranches => f.write_str("a tagged branch with its own anyOf/oneOf is not supported"),
            TaggedBranchWithAllOf => f.write_str("a tagged branch with both properties and allOf is not supported"),
            SkipInvalidItemsOnNonArray => {
                f.write_str("x-deserialize-skip-invalid-items on a field that is not an array")
            }
            MixedTags(tags) => write!(f, "branches are tagged by different properties: {tags:?}"),
            SecondCatchAll => f.write_str("a second catch-all branch"),
        }
    }
}

/// Why a default does not fit its type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefaultProblem {
    /// A value of another JSON kind (`found`, e.g. "a string") than the type (`expected`).
    Mismatch {
        /// The JSON kind of the default, e.g. "a string".
        found: &'static str,
        /// The field's type.
        expected: String,
    },
    /// An integer outside the range of the field's integer type.
    OutOfRange {
        /// The Rust integer type.
        expected: &'static str,
    },
    /// A key that is no field of the struct `ty`.
    UnknownField {
        /// The field's wire name.
        field: String,
        /// The Rust type.
        ty: String,
    },
    /// A required field of the struct `ty` left out.
    MissingField {
        /// The field's wire name.
        field: String,
        /// The Rust type.
        ty: String,
    },
    /// A string that is no value of the enum `ty`, which has no catch-all of the schema's.
    UnknownValue {
        /// The string.
        value: String,
        /// The Rust type.
        ty: String,
    },
    /// A type no default can be written for (a union, a struct with a flattened part, any JSON).
    NotSupported {
        /// The Rust type.
        ty: String,
    },
}

impl fmt::Display for DefaultProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DefaultProblem::Mismatch { found, expected } => {
                write!(f, "{found} does not fit a field of type {expected}")
            }
            DefaultProblem::OutOfRange { expected } => write!(f, "out of the range of {expected}"),
            DefaultProblem::UnknownField { field, ty } => write!(f, "`{field}` is not a field of {ty}"),
            DefaultProblem::MissingField { field, ty } => write!(f, "required field `{field}` of {ty} is missing"),
            DefaultProblem::UnknownValue { value, ty } => write!(f, "`{value}` is not a value of {ty}"),
            DefaultProblem::NotSupported { ty } => write!(f, "a default for {ty} is not supported"),
        }
    }
}

/// Why emitting Rust failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmitError {
    /// The tokens built for a file do not parse as Rust: a bug of the generator.
    Unparsable {
        /// The generated file.
        file: String,
        /// The parser's message.
        error: String,
    },
    /// A default lowering typed does not fit the type it is emitted as: the two files of a
    /// version, joined by `merge`, give its field's type a shape the default does not have.
    Default {
        /// The schema file.
        file: String,
        /// The JSON pointer of the default.
        pointer: String,
        /// The default, as JSON.
        value: String,
        /// Why it does not fit.
        problem: Box<DefaultProblem>,
    },
    /// A method's marker type would take a name the methods module defines besides the markers.
    ReservedMarker {
        /// The schema file.
        file: String,
        /// The method's wire name.
        method: String,
        /// The side (`x-side`).
        side: String,
        /// The marker type's name.
        marker: String,
    },
    /// Two wire names, of one version or of two, would take one `MethodName` variant.
    MethodNameClash {
        /// The first wire name, in wire-name order.
        first: String,
        /// The second.
        second: String,
        /// The variant both would be.
        variant: String,
    },
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmitError::Unparsable { file, error } => write!(f, "{file}: generated code does not parse: {error}"),
            EmitError::Default { file, pointer, value, problem } => {
                write!(f, "{file}#{}: default {value}: {problem}", fragment(pointer))
            }
            EmitError::ReservedMarker { file, method, side, marker } => write!(
                f,
                "{file}: the marker type of method `{method}` ({side} side) would be named `{marker}`, which the \
                 methods module already defines"
            ),
            EmitError::MethodNameClash { first, second, variant } => {
                write!(f, "the method names `{first}` and `{second}` would both be `MethodName::{variant}`")
            }
        }
    }
}

impl std::error::Error for EmitError {}

/// Errors collected while reading or lowering one file, reported together, sorted by location.
#[derive(Debug, Default)]
pub struct Errors(pub Vec<SchemaError>);

impl Errors {
    /// Records a problem at `pointer` of `file`.
    pub fn push(&mut self, file: &str, pointer: &str, kind: SchemaErrorKind) {
        self.0.push(SchemaError { file: file.to_string(), pointer: pointer.to_string(), kind: Box::new(kind) });
    }

    /// `value` when no problem was recorded; else every problem, sorted by location, duplicates dropped.
    pub fn into_result<T>(mut self, value: T) -> Result<T, LoadError> {
        if self.0.is_empty() {
            return Ok(value);
        }
        self.0.sort();
        self.0.dedup();
        Err(LoadError::Schema(self.0))
    }
}

/// A JSON pointer as the fragment of a URI (RFC 6901, section 6), as far as one line of an error
/// needs it: spaces, control characters and `%` are percent-encoded, so that a key holding a
/// newline or `": "` cannot break or fake the `FILE#POINTER: message` form.
pub fn fragment(pointer: &str) -> String {
    let mut out = String::with_capacity(pointer.len());
    for c in pointer.chars() {
        if c == ' ' || c == '%' || c.is_control() {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Text from a schema (a name, a `$ref`) as a JSON string literal, so that quotes and newlines
/// in it stay inside the message.
pub fn quoted(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsupported_keyword_says_what_is_supported() {
        let text = r##"{ "$defs": { "A": { "type": "object", "patternProperties": {} } } }"##;
        let Err(LoadError::Schema(errors)) = crate::load_text(text, "t.json") else { panic!("expected schema errors") };
        let [e] = errors.as_slice() else { panic!("one error: {errors:?}") };
        assert_eq!(e.pointer, "/$defs/A/patternProperties");
        let SchemaErrorKind::Unsupported(construct) = &*e.kind else { panic!("unsupported: {e:?}") };
        assert_eq!(construct, &Construct::Keyword("patternProperties".into()));
        assert!(construct.supported().contains("additionalProperties"), "{}", construct.supported());
        assert_eq!(e.to_string(), r##"t.json#/$defs/A/patternProperties: unsupported keyword "patternProperties""##);
    }

    #[test]
    fn errors_of_one_file_are_sorted_by_pointer_then_text() {
        let mut errors = Errors::default();
        errors.push("f", "/b", SchemaErrorKind::Unsupported(Construct::SecondCatchAll));
        errors.push("f", "/a", SchemaErrorKind::UnmatchedResponse { method: "z".into(), side: "agent".into() });
        errors.push("f", "/a", SchemaErrorKind::DanglingRef { reference: "#/$defs/X".into() });
        let Err(e) = errors.into_result(()) else { panic!("errors") };
        assert_eq!(
            e.to_string(),
            "f#/a: dangling $ref \"#/$defs/X\"\nf#/a: response for \"z\" (\"agent\") matches no request\nf#/b: a second catch-all branch"
        );
    }

    #[test]
    fn a_root_without_schemas_is_an_io_error_naming_the_directory() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/no-such-dir");
        match crate::generate(&root) {
            Err(Error::Io { path, .. }) => assert_eq!(path, root.join("schema")),
            other => panic!("expected an I/O error, got {:?}", other.map(|_| ())),
        }
    }
}
