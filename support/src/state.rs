//! Client-side state from the schema's `x-state` annotations: the interpreter the generated
//! `state` modules drive.
//!
//! The schema says, per message (a `SessionUpdate` variant, a response, a request), how it changes
//! what a client keeps: an [`Action`] on a `target` (`agentMessage`, `toolCall`, `plan`, …), keyed
//! by the value at an `id` path when the target is a collection, with the value at a `value` path
//! (the whole message when there is none) written to the entry or to one `field` of it. The
//! generator turns each annotation into a [`Rule`] and each version's targets into the members of
//! its `SessionState` / `AgentState` ([`Collection`]s for keyed targets, [`Single`]s for the others);
//! this module applies rules to a message's JSON, the same way for every variant. A new annotation
//! in the next draft is a new row in the generated table, not new code here.
//!
//! Entries are kept as the JSON objects the messages built (lossless: a field this version does
//! not know stays), and decoded into their generated type on access ([`Collection::get`],
//! [`Single::get`]). v2's patch semantics: a member omitted from an `upsert` leaves the entry's
//! member unchanged, `null` clears it, a value replaces it; `append` adds to one field (an array
//! gets the appended value as a new item, a string the appended text); `replace` writes the value
//! (`null` clears it; nothing happens when the message omits it); `remove` drops the entry.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;
use std::marker::PhantomData;

/// What an annotation does to its target (`x-state`'s `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Add the value to one field of the entry: an item of an array, or text to a string.
    Append,
    /// Create the entry or patch it member by member.
    Upsert,
    /// Write the value over the entry (or over one field of it).
    Replace,
    /// Drop the entry.
    Remove,
}

impl Action {
    /// The name the schema uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Append => "append",
            Action::Upsert => "upsert",
            Action::Replace => "replace",
            Action::Remove => "remove",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an `append` adds to its field, decided by the generator from the field's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Append {
    /// The field is an array: the value becomes its last item.
    Item,
    /// The field is a string: the value's text is added at its end.
    Text,
}

/// One `x-state` annotation, as the generated tables write it. Paths are wire names, outermost
/// first (`["subject", "toolCall", "toolCallId"]`); an empty path is "none".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rule {
    /// The state it changes: `session` or `agent` (`x-state`'s key).
    pub scope: &'static str,
    /// What it does.
    pub action: Action,
    /// The schema's target name (`agentMessage`).
    pub target: &'static str,
    /// Where the message carries the entry's id.
    pub id: &'static [&'static str],
    /// The field of the entry that is written (none: the entry itself).
    pub field: &'static [&'static str],
    /// Where the message carries the value (none: the whole message, without its tag).
    pub value: &'static [&'static str],
    /// Where an entry keeps its id, for entries an `append` creates (none: not written).
    pub entry_id: &'static [&'static str],
    /// How an `append` adds to the field.
    pub append: Append,
}

/// A message whose schema type carries `x-state` annotations. Implemented by the generated
/// `state` modules for each annotated type, and for a union whose variants carry them
/// (`SessionUpdate`).
pub trait Stateful: Serialize {
    /// The rules of this message: `None` when its type (or variant) has no annotation, so the
    /// message is kept as unapplied; `Some(&[])` when the schema says it changes no state.
    fn state_rules(&self) -> Option<&'static [Rule]>;

    /// The tag the message's JSON carries that is not part of its state (a union's
    /// discriminator, `sessionUpdate`), removed from whole-message values.
    fn state_tag(&self) -> Option<&'static str> {
        None
    }
}

/// One change a message made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The target changed.
    pub target: &'static str,
    /// The entry's id, for a collection.
    pub id: Option<String>,
    /// What was done to it.
    pub action: Action,
}

/// What applying a message did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The changes, in the order of the message's rules (none when the message omitted every
    /// value its rules read).
    Changed(Vec<Change>),
    /// The schema says this message changes no state (`x-state: {}`).
    NoState,
    /// The message has no annotation (an unknown variant, or one the schema does not describe):
    /// it is kept in the state's `unapplied` list.
    Unapplied,
}

impl Applied {
    /// The changes made (none for [`Applied::NoState`] and [`Applied::Unapplied`]).
    pub fn changes(&self) -> &[Change] {
        match self {
            Applied::Changed(c) => c,
            _ => &[],
        }
    }
}

/// Where a rule writes: one member of a generated state struct. [`Collection`] and [`Single`]
/// implement it; the generated `Targets` implementations hand them out by target name.
pub trait Slot {
    /// The entry with this id (a collection) or the value (a single), created empty when absent
    /// and `create` is set.
    fn entry(&mut self, id: Option<&str>, create: bool) -> Option<&mut Value>;
    /// Writes the entry (a collection) or the value (a single): `None` removes it.
    fn set(&mut self, id: Option<&str>, value: Option<Value>);
}

/// The members of a generated state struct, by the schema's target name.
pub trait Targets {
    /// The member of `target`, if this state has it.
    fn slot(&mut self, target: &str) -> Option<&mut dyn Slot>;
    /// Keeps a message no rule applies to.
    fn keep_unapplied(&mut self, message: Value);
}

/// A keyed target (`agentMessage`, `toolCall`): entries by id, in the order first seen, each the
/// JSON object the messages built, decoded into `T` on access.
pub struct Collection<T> {
    entries: Map<String, Value>,
    ty: PhantomData<fn() -> T>,
}

impl<T> Default for Collection<T> {
    fn default() -> Self {
        Collection { entries: Map::new(), ty: PhantomData }
    }
}

impl<T> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection { entries: self.entries.clone(), ty: PhantomData }
    }
}

impl<T> PartialEq for Collection<T> {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl<T> fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.entries.iter()).finish()
    }
}

impl<T: serde::de::DeserializeOwned> Collection<T> {
    /// The entry with this id, decoded (an error when the JSON the messages built does not decode
    /// as `T`; [`Collection::raw`] has it still).
    pub fn get(&self, id: &str) -> Option<Result<T, serde_json::Error>> {
        self.entries.get(id).map(|v| T::deserialize(v))
    }

    /// Every entry, decoded, in the order first seen.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Result<T, serde_json::Error>)> + '_ {
        self.entries.iter().map(|(k, v)| (k.as_str(), T::deserialize(v)))
    }
}

impl<T> Collection<T> {
    /// The entry with this id, as JSON.
    pub fn raw(&self, id: &str) -> Option<&Value> {
        self.entries.get(id)
    }

    /// Every entry as JSON, in the order first seen.
    pub fn raw_entries(&self) -> &Map<String, Value> {
        &self.entries
    }

    /// The ids, in the order first seen.
    pub fn ids(&self) -> impl Iterator<Item = &str> + '_ {
        self.entries.keys().map(String::as_str)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<T> Serialize for Collection<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.entries.serialize(s)
    }
}

impl<T> Slot for Collection<T> {
    fn entry(&mut self, id: Option<&str>, create: bool) -> Option<&mut Value> {
        let id = id?;
        if create && !self.entries.contains_key(id) {
            self.entries.insert(id.to_string(), Value::Object(Map::new()));
        }
        self.entries.get_mut(id)
    }

    fn set(&mut self, id: Option<&str>, value: Option<Value>) {
        let Some(id) = id else { return };
        match value {
            Some(v) => {
                self.entries.insert(id.to_string(), v);
            }
            None => {
                self.entries.shift_remove(id);
            }
        }
    }
}

/// A target without ids (`state`, `usage`, `availableCommands`): one value or none, decoded into
/// `T` on access.
pub struct Single<T> {
    value: Option<Value>,
    ty: PhantomData<fn() -> T>,
}

impl<T> Default for Single<T> {
    fn default() -> Self {
        Single { value: None, ty: PhantomData }
    }
}

impl<T> Clone for Single<T> {
    fn clone(&self) -> Self {
        Single { value: self.value.clone(), ty: PhantomData }
    }
}

impl<T> PartialEq for Single<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> fmt::Debug for Single<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T: serde::de::DeserializeOwned> Single<T> {
    /// The value, decoded (an error when the JSON does not decode as `T`).
    pub fn get(&self) -> Option<Result<T, serde_json::Error>> {
        self.value.as_ref().map(T::deserialize)
    }
}

impl<T> Single<T> {
    /// The value as JSON.
    pub fn raw(&self) -> Option<&Value> {
        self.value.as_ref()
    }

    /// Whether there is no value.
    pub fn is_none(&self) -> bool {
        self.value.is_none()
    }
}

impl<T> Serialize for Single<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<T> Slot for Single<T> {
    fn entry(&mut self, _id: Option<&str>, create: bool) -> Option<&mut Value> {
        if create && self.value.is_none() {
            self.value = Some(Value::Object(Map::new()));
        }
        self.value.as_mut()
    }

    fn set(&mut self, _id: Option<&str>, value: Option<Value>) {
        self.value = value;
    }
}

/// Applies a typed message: its JSON is built once and handed to [`apply_json`].
pub fn apply<M: Stateful + ?Sized>(state: &mut dyn Targets, scope: &str, message: &M) -> Applied {
    let rules = message.state_rules();
    match serde_json::to_value(message) {
        Ok(json) => apply_json(state, scope, rules, message.state_tag(), json),
        // A generated type always encodes; keep the state as it was if one does not.
        Err(_) => Applied::Unapplied,
    }
}

/// Applies the rules of `scope` to a message's JSON (`rules`: `None` when its type has no
/// annotation; then the message is kept as unapplied). `tag`, when given, is removed from
/// whole-message values.
pub fn apply_json(
    state: &mut dyn Targets,
    scope: &str,
    rules: Option<&[Rule]>,
    tag: Option<&str>,
    mut message: Value,
) -> Applied {
    let Some(rules) = rules else {
        state.keep_unapplied(message);
        return Applied::Unapplied;
    };
    if rules.is_empty() {
        return Applied::NoState;
    }
    if let (Some(tag), Value::Object(m)) = (tag, &mut message) {
        m.shift_remove(tag);
    }
    let in_scope: Vec<&Rule> = rules.iter().filter(|r| r.scope == scope).collect();
    if in_scope.is_empty() {
        return Applied::NoState;
    }
    let mut changes = Vec::with_capacity(in_scope.len());
    for (i, rule) in in_scope.iter().enumerate() {
        // The last rule takes its value out of the message instead of copying it.
        let last = i + 1 == in_scope.len();
        if let Some(change) = apply_rule(state, rule, &mut message, last) {
            changes.push(change);
        }
    }
    Applied::Changed(changes)
}

/// The value at a path: `None` when a member is missing; a path through an object whose member
/// is an object goes on into it.
pub fn at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, key| v.as_object()?.get(*key))
}

/// An id as a collection key: a string as it is, any other value as its JSON text.
fn id_key(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// The value at a path, taken out of the message (`take`) or copied.
fn value_at(message: &mut Value, path: &[&str], take: bool) -> Option<Value> {
    let mut v = message;
    for key in path {
        v = v.as_object_mut()?.get_mut(*key)?;
    }
    Some(if take { v.take() } else { v.clone() })
}

/// What one rule does to the state; `None` when the message omits what the rule reads (its id or
/// value), or this state has no member for the target. `last`: no rule reads the message after
/// this one, so its value is moved, not copied.
fn apply_rule(state: &mut dyn Targets, rule: &Rule, message: &mut Value, last: bool) -> Option<Change> {
    let id_value = if rule.id.is_empty() { None } else { Some(at(message, rule.id)?.clone()) };
    let id = match &id_value {
        Some(v) => Some(id_key(v)?),
        None => None,
    };
    let slot = state.slot(rule.target)?;
    let id_ref = id.as_deref();
    match rule.action {
        Action::Remove => slot.set(id_ref, None),
        Action::Replace => {
            let value = value_at(message, rule.value, last)?;
            if rule.field.is_empty() {
                slot.set(id_ref, (!value.is_null()).then_some(value));
            } else {
                let entry = slot.entry(id_ref, true)?;
                write_field(entry, rule.field, value);
            }
        }
        Action::Upsert => {
            let value = value_at(message, rule.value, last)?;
            if !rule.field.is_empty() {
                let entry = slot.entry(id_ref, true)?;
                let field = field_mut(entry, rule.field)?;
                patch(field, value);
            } else if value.is_null() {
                slot.set(id_ref, None);
            } else {
                let entry = slot.entry(id_ref, true)?;
                patch(entry, value);
            }
        }
        Action::Append => {
            let value = value_at(message, rule.value, last)?;
            let entry = slot.entry(id_ref, true)?;
            if let (Some(id), false) = (id_value, rule.entry_id.is_empty()) {
                if at(entry, rule.entry_id).is_none() {
                    write_field(entry, rule.entry_id, id);
                }
            }
            append(field_mut(entry, rule.field)?, value, rule.append);
        }
    }
    Some(Change { target: rule.target, id, action: rule.action })
}

/// The member at `path` of `entry`, objects created on the way (a member that is not an object is
/// replaced by one, since the path says it holds one).
fn field_mut<'v>(entry: &'v mut Value, path: &[&str]) -> Option<&'v mut Value> {
    let mut v = entry;
    for key in path {
        if !v.is_object() {
            *v = Value::Object(Map::new());
        }
        v = v.as_object_mut()?.entry(key.to_string()).or_insert(Value::Null);
    }
    Some(v)
}

/// Writes `value` at `path` (`null` clears the member).
fn write_field(entry: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        *entry = value;
        return;
    };
    let Some(parent) = field_mut(entry, parents) else { return };
    if !parent.is_object() {
        *parent = Value::Object(Map::new());
    }
    if let Some(m) = parent.as_object_mut() {
        if value.is_null() {
            m.shift_remove(*last);
        } else {
            m.insert(last.to_string(), value);
        }
    }
}

/// v2's patch: each member of `update` replaces the entry's, `null` clears it, omitted ones stay.
/// An entry that is not an object takes the update as it is.
fn patch(entry: &mut Value, update: Value) {
    match (entry.as_object_mut(), update) {
        (Some(e), Value::Object(u)) => {
            for (k, v) in u {
                if v.is_null() {
                    e.shift_remove(&k);
                } else {
                    e.insert(k, v);
                }
            }
        }
        (_, update) => *entry = update,
    }
}

/// Adds `value` to a field: as an array's last item, or as text at a string's end (a field that
/// holds neither starts as the kind `how` says).
fn append(field: &mut Value, value: Value, how: Append) {
    match (how, field, value) {
        (Append::Text, Value::String(s), Value::String(add)) => s.push_str(&add),
        (Append::Text, f @ Value::Null, Value::String(add)) => *f = Value::String(add),
        (_, Value::Array(items), v) => items.push(v),
        (_, f, v) if f.is_null() => *f = Value::Array(vec![v]),
        // A field holding something else (a string given to an item field, say): keep both.
        (_, f, v) => {
            let old = std::mem::take(f);
            *f = Value::Array(vec![old, v]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Default)]
    struct State {
        messages: Collection<Value>,
        usage: Single<Value>,
        unapplied: Vec<Value>,
    }

    impl Targets for State {
        fn slot(&mut self, target: &str) -> Option<&mut dyn Slot> {
            match target {
                "agentMessage" => Some(&mut self.messages),
                "usage" => Some(&mut self.usage),
                _ => None,
            }
        }
        fn keep_unapplied(&mut self, message: Value) {
            self.unapplied.push(message);
        }
    }

    const CHUNK: &[Rule] = &[Rule {
        scope: "session",
        action: Action::Append,
        target: "agentMessage",
        id: &["messageId"],
        field: &["content"],
        value: &["content"],
        entry_id: &["messageId"],
        append: Append::Item,
    }];
    const MESSAGE: &[Rule] = &[Rule {
        scope: "session",
        action: Action::Upsert,
        target: "agentMessage",
        id: &["messageId"],
        field: &[],
        value: &[],
        entry_id: &["messageId"],
        append: Append::Item,
    }];

    #[test]
    fn chunks_append_and_upserts_patch() {
        let mut s = State::default();
        let a = apply_json(&mut s, "session", Some(CHUNK), None, json!({"messageId": "m", "content": {"text": "a"}}));
        assert_eq!(a.changes()[0].id.as_deref(), Some("m"));
        apply_json(&mut s, "session", Some(CHUNK), None, json!({"messageId": "m", "content": {"text": "b"}}));
        assert_eq!(s.messages.raw("m"), Some(&json!({"messageId": "m", "content": [{"text": "a"}, {"text": "b"}]})));
        apply_json(
            &mut s,
            "session",
            Some(MESSAGE),
            Some("sessionUpdate"),
            json!({"sessionUpdate": "agent_message", "messageId": "m", "_meta": {"x": 1}}),
        );
        // Omitted `content` stays; the tag is not state.
        assert_eq!(
            s.messages.raw("m"),
            Some(&json!({"messageId": "m", "content": [{"text": "a"}, {"text": "b"}], "_meta": {"x": 1}}))
        );
        apply_json(&mut s, "session", Some(MESSAGE), None, json!({"messageId": "m", "content": null}));
        assert_eq!(s.messages.raw("m"), Some(&json!({"messageId": "m", "_meta": {"x": 1}})));
    }

    #[test]
    fn unannotated_messages_are_kept_and_empty_annotations_change_nothing() {
        let mut s = State::default();
        assert_eq!(apply_json(&mut s, "session", None, None, json!({"x": 1})), Applied::Unapplied);
        assert_eq!(s.unapplied, vec![json!({"x": 1})]);
        assert_eq!(apply_json(&mut s, "session", Some(&[]), None, json!({"x": 2})), Applied::NoState);
        assert_eq!(s.unapplied.len(), 1);
    }

    #[test]
    fn text_appends_concatenate_and_remove_drops() {
        let mut s = State::default();
        let rule = Rule {
            scope: "session",
            action: Action::Append,
            target: "agentMessage",
            id: &["id"],
            field: &["output", "data"],
            value: &["data"],
            entry_id: &["id"],
            append: Append::Text,
        };
        for part in ["ab", "cd"] {
            apply_json(&mut s, "session", Some(&[rule]), None, json!({"id": 7, "data": part}));
        }
        assert_eq!(s.messages.raw("7"), Some(&json!({"id": 7, "output": {"data": "abcd"}})));
        let remove = Rule { action: Action::Remove, field: &[], value: &[], ..rule };
        apply_json(&mut s, "session", Some(&[remove]), None, json!({"id": 7}));
        assert!(s.messages.is_empty());
    }

    #[test]
    fn replace_writes_clears_and_skips_omitted_values() {
        let mut s = State::default();
        let rule = Rule {
            scope: "session",
            action: Action::Replace,
            target: "usage",
            id: &[],
            field: &[],
            value: &["used"],
            entry_id: &[],
            append: Append::Item,
        };
        apply_json(&mut s, "session", Some(&[rule]), None, json!({"used": {"n": 1}}));
        assert_eq!(s.usage.raw(), Some(&json!({"n": 1})));
        assert_eq!(apply_json(&mut s, "session", Some(&[rule]), None, json!({})), Applied::Changed(vec![]));
        assert_eq!(s.usage.raw(), Some(&json!({"n": 1})));
        apply_json(&mut s, "session", Some(&[rule]), None, json!({"used": null}));
        assert!(s.usage.is_none());
        // Another scope's rules do not apply here.
        assert_eq!(apply_json(&mut s, "agent", Some(&[rule]), None, json!({"used": 1})), Applied::NoState);
    }
}
