//! The generated `x-state` reducer (`acp_types::v2::state`) against a simple model of the
//! annotations: random sequences of valid `SessionUpdate`s (sampled from the generator's IR, their
//! ids drawn from a small pool so that entries are created, patched, appended to and removed) are
//! applied to a `SessionState`, and to a model that reads `x-state` straight from the schema file
//! and applies it to plain JSON. The two must agree after every update; the reducer must never
//! panic, on any decoded update nor on any JSON.
//!
//! The seed comes from `ACP_PROPTEST_SEED` or the clock, and is printed on failure.

use acp_codegen::samples::{instance, Rng};
use acp_types::v2;
use acp_types::v2::state::SessionState;
use serde_json::{json, Map, Value};
use std::path::Path;

fn seed() -> u64 {
    std::env::var("ACP_PROPTEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(1)
    })
}

fn schema_name() -> &'static str {
    if cfg!(feature = "unstable") {
        "schema/v2/schema.unstable.json"
    } else {
        "schema/v2/schema.json"
    }
}

/// The model: `x-state` rules of each `SessionUpdate` branch by tag, read from the schema file.
struct Model {
    rules: Map<String, Value>,
    targets: Map<String, Value>,
    unapplied: Vec<Value>,
    /// target → where its entries keep their id (from the rule that writes whole entries).
    entry_ids: Map<String, Value>,
    /// The targets keyed by an id (collections).
    keyed: std::collections::BTreeSet<String>,
}

fn path(p: Option<&Value>) -> Vec<String> {
    p.and_then(Value::as_str).map(|s| s.split('.').map(str::to_string).collect()).unwrap_or_default()
}

fn get<'v>(v: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn get_mut<'v>(mut v: &'v mut Value, path: &[String]) -> &'v mut Value {
    for k in path {
        if !v.is_object() {
            *v = json!({});
        }
        v = v.as_object_mut().expect("object").entry(k.clone()).or_insert(Value::Null);
    }
    v
}

impl Model {
    fn new(schema: &Value) -> Model {
        let mut rules = Map::new();
        let mut entry_ids = Map::new();
        let mut keyed = std::collections::BTreeSet::new();
        for branch in schema["$defs"]["SessionUpdate"]["anyOf"].as_array().expect("SessionUpdate branches") {
            let Some(tag) = branch["properties"]["sessionUpdate"]["const"].as_str() else { continue };
            let Some(state) = branch.get("x-state") else { continue };
            let session = state.get("session").cloned().unwrap_or(json!([]));
            for rule in session.as_array().into_iter().flatten() {
                let whole =
                    matches!(rule["action"].as_str(), Some("upsert" | "replace")) && rule.get("field").is_none();
                let target = rule["target"].as_str().unwrap_or_default().to_string();
                if rule.get("id").is_some() {
                    keyed.insert(target.clone());
                }
                if whole && rule.get("id").is_some() && !entry_ids.contains_key(&target) {
                    let (id, value) = (path(rule.get("id")), path(rule.get("value")));
                    let relative = if id.starts_with(&value) { id[value.len()..].to_vec() } else { Vec::new() };
                    entry_ids.insert(target, json!(relative));
                }
            }
            rules.insert(tag.to_string(), session);
        }
        Model { rules, targets: Map::new(), unapplied: Vec::new(), entry_ids, keyed }
    }

    /// The id paths of a tag's rules, to draw ids for.
    fn id_paths(&self, tag: &str) -> Vec<Vec<String>> {
        self.rules.get(tag).and_then(Value::as_array).into_iter().flatten().map(|r| path(r.get("id"))).collect()
    }

    fn apply(&mut self, update: &Value) {
        let tag = update["sessionUpdate"].as_str().unwrap_or_default();
        let Some(rules) = self.rules.get(tag).cloned() else {
            self.unapplied.push(update.clone());
            return;
        };
        let mut body = update.clone();
        body.as_object_mut().expect("object").remove("sessionUpdate");
        for rule in rules.as_array().into_iter().flatten() {
            let target = rule["target"].as_str().unwrap_or_default().to_string();
            let (id_path, field, value_path) = (path(rule.get("id")), path(rule.get("field")), path(rule.get("value")));
            let id = if id_path.is_empty() {
                None
            } else {
                match get(&body, &id_path) {
                    Some(Value::String(s)) => Some((s.clone(), Value::String(s.clone()))),
                    Some(Value::Null) | None => continue,
                    Some(other) => Some((other.to_string(), other.clone())),
                }
            };
            let value = if value_path.is_empty() { Some(body.clone()) } else { get(&body, &value_path).cloned() };
            let Some(value) = value else { continue };
            let slot = self.targets.entry(target.clone()).or_insert(Value::Null);
            // A collection is an object of entries by id; a one-value target is the value.
            let entry: &mut Value = match &id {
                Some((key, _)) => {
                    if !slot.is_object() {
                        *slot = json!({});
                    }
                    slot.as_object_mut().expect("object").entry(key.clone()).or_insert(Value::Null)
                }
                None => slot,
            };
            match rule["action"].as_str() {
                Some("remove") => *entry = Value::Null,
                Some("replace") => *entry = value,
                Some("upsert") if value.is_null() => *entry = Value::Null,
                Some("upsert") => upsert(entry, &value),
                Some("append") => {
                    if entry.is_null() {
                        *entry = json!({});
                    }
                    if let (Some((_, raw)), Some(at)) = (&id, self.entry_ids.get(&target)) {
                        let at: Vec<String> = serde_json::from_value(at.clone()).expect("path");
                        if !at.is_empty() && get(entry, &at).is_none() {
                            *get_mut(entry, &at) = raw.clone();
                        }
                    }
                    append(get_mut(entry, &field), value);
                }
                other => panic!("an action the model does not know: {other:?}"),
            }
        }
        self.drop_cleared();
    }

    /// Cleared entries and values are gone.
    fn drop_cleared(&mut self) {
        for (target, slot) in self.targets.iter_mut() {
            if let (true, Value::Object(entries)) = (self.keyed.contains(target), slot) {
                entries.retain(|_, v| !v.is_null());
            }
        }
        let keyed = &self.keyed;
        self.targets.retain(|t, v| !(v.is_null() || keyed.contains(t) && v.as_object().is_some_and(Map::is_empty)));
    }

    fn json(&self) -> Value {
        let mut out = self.targets.clone();
        if !self.unapplied.is_empty() {
            out.insert("unapplied".into(), Value::Array(self.unapplied.clone()));
        }
        Value::Object(out)
    }
}

/// `upsert`: the value's members replace the entry's, a `null` one removes it.
fn upsert(entry: &mut Value, value: &Value) {
    if !entry.is_object() {
        *entry = json!({});
    }
    for (k, v) in value.as_object().expect("object") {
        let e = entry.as_object_mut().expect("object");
        if v.is_null() {
            e.shift_remove(k);
        } else {
            e.insert(k.clone(), v.clone());
        }
    }
}

/// `append` to a field: text to text, anything else to a list.
fn append(field: &mut Value, value: Value) {
    match (field, value) {
        (Value::String(s), Value::String(add)) => s.push_str(&add),
        (f @ Value::Null, v) if v.is_string() => *f = v,
        (Value::Array(items), v) => items.push(v),
        (f @ Value::Null, v) => *f = json!([v]),
        (f, v) => *f = json!([f.take(), v]),
    }
}

#[test]
fn the_generated_reducer_agrees_with_a_model_of_the_annotations() {
    let name = schema_name();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(root.join(name)).expect("schema")).expect("JSON");
    let protocol = acp_codegen::load(&root.join(name), name).expect("the committed schema lowers");
    let updates = protocol.find("SessionUpdate").expect("SessionUpdate");
    let seed = seed();
    let mut rng = Rng::new(seed);
    let pool = ["a", "b", "c"];
    let (mut applied, mut sequences) = (0, 0);
    for _ in 0..60 {
        sequences += 1;
        let mut model = Model::new(&schema);
        let mut state = SessionState::default();
        for step in 0..40 {
            let mut json = instance(&protocol, updates, &mut rng);
            let tag = json["sessionUpdate"].as_str().unwrap_or_default().to_string();
            for id in model.id_paths(&tag) {
                if !id.is_empty() && get(&json, &id).is_some() {
                    *get_mut(&mut json, &id) = json!(pool[rng.below(pool.len())]);
                }
            }
            let update: v2::SessionUpdate = match serde_json::from_value(json.clone()) {
                Ok(u) => u,
                Err(e) => panic!("a sampled update does not decode (ACP_PROPTEST_SEED={seed}): {e}\n{json}"),
            };
            // The model reads what the update encodes to (the same JSON: the types round-trip).
            let encoded = serde_json::to_value(&update).expect("encodes");
            state.apply(&update);
            model.apply(&encoded);
            applied += 1;
            let got = serde_json::to_value(&state).expect("state encodes");
            let want = model.json();
            assert_eq!(
                got, want,
                "after step {step} ({tag}), ACP_PROPTEST_SEED={seed}\nupdate: {encoded}\nreducer: {got}\nmodel: {want}"
            );
            // Each collection keeps its entries in the order first seen.
            for target in &model.keyed {
                let keys = |v: &Value| -> Vec<String> {
                    v[target].as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default()
                };
                assert_eq!(keys(&got), keys(&want), "entry order of {target}, ACP_PROPTEST_SEED={seed}");
            }
        }
    }
    assert!(applied == sequences * 40);
}

#[test]
fn the_reducer_never_panics_on_any_json() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let tags = ["agent_message_chunk", "tool_call_update", "terminal_output_chunk", "plan_update", "plan_removed", "x"];
    let values = [json!(null), json!(1), json!("s"), json!([1, "a"]), json!({}), json!({"planId": 3, "data": []})];
    for _ in 0..2000 {
        let mut v = json!({ "sessionUpdate": tags[rng.below(tags.len())] });
        for key in ["messageId", "toolCallId", "terminalId", "planId", "plan", "content", "data", "output", "status"] {
            if rng.chance(2) {
                v[key] = values[rng.below(values.len())].clone();
            }
        }
        let mut state = SessionState::default();
        state.apply_json("SessionUpdate", v.clone());
        state.apply_json("SessionUpdate", v);
        state.apply_json("UpdateSessionNotification", json!({"sessionId": "s", "update": 7}));
    }
}
