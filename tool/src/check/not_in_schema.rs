//! Where in a message the values are that only a catch-all the generator added kept
//! ([`LenientEvent::NotInSchema`]): a union's tag or an enum value that this schema does not list
//! (a newer revision of it may). The decoder records the type and the value, not the place; the
//! place is found in what was received.
//!
//! Decoding reads a message in order, so each event takes the first place holding its value that
//! no earlier event took (nothing inside an object a union kept whole is decoded, so no later
//! event is found there). When several places could hold it (the same text in a `_meta`, say),
//! each is tried in turn: its value is changed and the message decoded again, and the place whose
//! change shows up in the new events is the one.

use acp_types::support::lenient::LenientEvent;
use serde_json::Value;

/// One step into a JSON value.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// A value that only an added catch-all kept, found in the message: its path and the reason.
pub(super) struct Found {
    /// Path from the message root (`params.update.sessionUpdate`); `None` when not found.
    pub path: Option<String>,
    pub reason: String,
    /// The value, as JSON text.
    pub value: String,
}

/// Turns the [`LenientEvent::NotInSchema`] among `events` into [`Found`] places in `received`
/// (found under `root`) and hands back the other events. `decode` decodes a changed copy of
/// `received` as the message was decoded and returns the events it recorded.
pub(super) fn locate(
    root: &str,
    received: Option<&Value>,
    events: Vec<LenientEvent>,
    decode: &dyn Fn(&Value) -> Vec<LenientEvent>,
) -> (Vec<Found>, Vec<LenientEvent>) {
    let (unknown, rest): (Vec<LenientEvent>, Vec<LenientEvent>) =
        events.into_iter().partition(|e| matches!(e, LenientEvent::NotInSchema { .. }));
    let mut found = Vec::new();
    // Places taken so far: a union's object (nothing inside it was decoded) or an enum's value.
    let mut taken: Vec<Vec<Step>> = Vec::new();
    for event in unknown {
        let LenientEvent::NotInSchema { ty, tag, value } = event else { continue };
        let reason = format!("{value} not in this schema; kept");
        let place = received.and_then(|received| {
            let wanted: Value = serde_json::from_str(&value).ok()?;
            let mut places = Vec::new();
            candidates(received, tag, &wanted, &mut Vec::new(), &taken, &mut places);
            let place = match places.len() {
                0 => return None,
                1 => places.swap_remove(0),
                _ => pick(received, ty, tag, &wanted, places, decode),
            };
            taken.push(place.clone());
            Some(place)
        });
        match place {
            Some(mut place) => {
                if let Some(tag) = tag {
                    place.push(Step::Key(tag.to_string()));
                }
                found.push(Found { path: Some(show(root, &place)), reason, value });
            }
            None => found.push(Found { path: None, reason: format!("{ty}: {reason}"), value }),
        }
    }
    (found, rest)
}

/// The places, in document order and outside those already `taken`, that could hold the value:
/// an object whose `tag` is `wanted` (a union), or a value equal to `wanted` (an enum).
fn candidates(
    value: &Value,
    tag: Option<&str>,
    wanted: &Value,
    at: &mut Vec<Step>,
    taken: &[Vec<Step>],
    out: &mut Vec<Vec<Step>>,
) {
    if taken.iter().any(|t| at.starts_with(t)) {
        return;
    }
    let here = match (tag, value) {
        (Some(tag), Value::Object(object)) => object.get(tag) == Some(wanted),
        (None, Value::String(_) | Value::Number(_)) => value == wanted,
        _ => false,
    };
    if here {
        out.push(at.clone());
    }
    match value {
        Value::Object(object) => {
            for (key, item) in object {
                at.push(Step::Key(key.clone()));
                candidates(item, tag, wanted, at, taken, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(Step::Index(i));
                candidates(item, tag, wanted, at, taken, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// The one of several `places` that the decoder took the value from: the first whose changed
/// value (a string with a suffix no schema lists) shows up in the events of decoding again; the
/// first place when none does (an integer, which is not changed).
fn pick(
    received: &Value,
    ty: &str,
    tag: Option<&str>,
    wanted: &Value,
    places: Vec<Vec<Step>>,
    decode: &dyn Fn(&Value) -> Vec<LenientEvent>,
) -> Vec<Step> {
    if let Value::String(text) = wanted {
        let probe = Value::String(format!("{text}~probe"));
        let shown = probe.to_string();
        for place in &places {
            let mut changed = received.clone();
            let mut target = place.clone();
            if let Some(tag) = tag {
                target.push(Step::Key(tag.to_string()));
            }
            if let Some(slot) = get_mut(&mut changed, &target) {
                *slot = probe.clone();
            }
            let seen = decode(&changed).into_iter().any(|e| {
                matches!(e, LenientEvent::NotInSchema { ty: t, tag: g, value } if t == ty && g == tag && value == shown)
            });
            if seen {
                return place.clone();
            }
        }
    }
    places.into_iter().next().unwrap_or_default()
}

fn get_mut<'v>(value: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, step| match step {
        Step::Key(key) => v.get_mut(key.as_str()),
        Step::Index(i) => v.get_mut(*i),
    })
}

/// The path as the checker prints paths: `params.update.content[1].type`.
fn show(root: &str, path: &[Step]) -> String {
    path.iter().fold(root.to_string(), |out, step| match step {
        Step::Key(key) => super::diff::key_path(&out, key),
        Step::Index(i) => format!("{out}[{i}]"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ty: &'static str, tag: Option<&'static str>, value: &str) -> LenientEvent {
        LenientEvent::NotInSchema { ty, tag, value: value.to_string() }
    }

    #[test]
    fn a_union_tag_and_an_enum_value_are_found_in_order() {
        let received = json!({ "update": { "sessionUpdate": "future", "kind": "future", "nested": { "k": "x" } },
                                "kind": "x" });
        let events = vec![
            event("SessionUpdate", Some("sessionUpdate"), "\"future\""),
            event("ToolKind", None, "\"x\""),
            LenientEvent::DefaultOnNull,
        ];
        let (found, rest) = locate("params", Some(&received), events, &|_| Vec::new());
        assert_eq!(rest, vec![LenientEvent::DefaultOnNull]);
        let paths: Vec<Option<&str>> = found.iter().map(|f| f.path.as_deref()).collect();
        // Inside the object the union kept, nothing was decoded: `x` is the later one.
        assert_eq!(paths, [Some("params.update.sessionUpdate"), Some("params.kind")]);
        assert_eq!(found[0].reason, "\"future\" not in this schema; kept");
    }

    #[test]
    fn of_several_places_the_one_decoding_reads_is_chosen() {
        let received = json!({ "_meta": { "note": "future" }, "kind": "future" });
        // The decoder reads `kind` only: changing `_meta.note` leaves its event unchanged.
        let decode = |v: &Value| vec![event("ToolKind", None, &v["kind"].to_string())];
        let (found, _) = locate("params", Some(&received), vec![event("ToolKind", None, "\"future\"")], &decode);
        assert_eq!(found[0].path.as_deref(), Some("params.kind"));
    }

    #[test]
    fn a_value_not_found_is_reported_without_a_path() {
        let (found, _) = locate("params", None, vec![event("ToolKind", None, "\"future\"")], &|_| Vec::new());
        assert_eq!(found[0].path, None);
        assert_eq!(found[0].reason, "ToolKind: \"future\" not in this schema; kept");
    }
}
