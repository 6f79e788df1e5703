//! The JSON diff of a message and its re-encoding: differences that lenient decoding explains
//! become warnings, the rest make the message `lossy`; and the JSON paths the findings are given at.

use acp_types::support::lenient::LenientEvent;
use serde_json::{Map, Value};

use super::report::{Difference, Report, Status, Warning};

/// `root` + `path` (a path as `rpc::decode_params` gives it, in `serde_path_to_error`'s form: `.` for the root).
pub(super) fn join(root: &str, path: &str) -> String {
    match path {
        "" | "." => root.to_string(),
        p if p.starts_with('[') => format!("{root}{p}"),
        p if root.is_empty() => p.to_string(),
        p => format!("{root}.{p}"),
    }
}

pub(super) fn key_path(root: &str, key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$');
    if plain {
        join(root, key)
    } else {
        format!("{root}[{}]", Value::String(key.to_string()))
    }
}

/// Compares what was received with its re-encoding. Differences that lenient decoding explains
/// become warnings; the rest make the message `lossy`.
pub(super) fn compare(
    report: &mut Report,
    root: &str,
    received: Option<&Value>,
    reencoded: Option<&Value>,
    events: Vec<LenientEvent>,
) {
    let empty = Value::Object(Map::new());
    // Absent and `null` params read as `{}`: an empty re-encoding of those is faithful.
    let received = match received {
        None | Some(Value::Null) if reencoded.is_none_or(|r| *r == empty) => return note_events(report, events),
        other => other,
    };
    let mut events: Vec<Option<LenientEvent>> = events.into_iter().map(Some).collect();
    let mut changes = Vec::new();
    diff(root, received, reencoded, &mut events, report, &mut changes);
    for change in changes {
        let explained = change.received.as_ref().and_then(|old| {
            let same = |text: &str| serde_json::from_str::<Value>(text).is_ok_and(|v| json_equal(&v, old));
            events.iter_mut().find_map(|slot| match slot {
                Some(LenientEvent::DefaultOnError { value, .. }) if same(value) => slot.take(),
                Some(LenientEvent::DefaultOnNull) if old.is_null() => slot.take(),
                _ => None,
            })
        });
        match explained {
            Some(LenientEvent::DefaultOnError { error, value }) => report.warnings.push(Warning {
                path: Some(change.path),
                reason: format!("default-on-error: {value} replaced by the default ({error})"),
            }),
            Some(_) => report.warnings.push(Warning {
                path: Some(change.path),
                reason: "default-on-null: null replaced by the default".into(),
            }),
            None => report.differences.push(change),
        }
    }
    note_events(report, events.into_iter().flatten().collect());
    if !report.differences.is_empty() && report.status != Status::Error {
        report.status = Status::Lossy;
    }
}

/// Whether the value at `path` is the one at `ancestor` or inside it.
pub(super) fn within(path: &str, ancestor: &str) -> bool {
    path.strip_prefix(ancestor).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Lenient repairs that left no trace in the JSON (or could not be located).
fn note_events(report: &mut Report, events: Vec<LenientEvent>) {
    for event in events {
        let reason = match event {
            LenientEvent::DefaultOnError { error, value } => {
                format!("default-on-error: {value} replaced by the default ({error})")
            }
            LenientEvent::SkippedItem { index, error } => {
                format!("skip-invalid-items: item [{index}] dropped ({error})")
            }
            LenientEvent::DefaultOnNull => "default-on-null: null replaced by the default".into(),
            LenientEvent::NotInSchema { ty, value, .. } => format!("{ty}: {value} not in this schema; kept"),
        };
        report.warnings.push(Warning { path: None, reason });
    }
}

/// Structural difference; arrays shorter after decoding are aligned with the skipped items that
/// lenient decoding recorded.
fn diff(
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    events: &mut [Option<LenientEvent>],
    report: &mut Report,
    out: &mut Vec<Difference>,
) {
    match (old, new) {
        (None, None) => {}
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            for (key, value) in a {
                diff(&key_path(path, key), Some(value), b.get(key), events, report, out);
            }
            for (key, value) in b {
                if !a.contains_key(key) {
                    diff(&key_path(path, key), None, Some(value), events, report, out);
                }
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            let mut extra = a.len().saturating_sub(b.len());
            let mut j = 0;
            for (i, item) in a.iter().enumerate() {
                let at = format!("{path}[{i}]");
                if extra > 0 {
                    let skipped = events
                        .iter_mut()
                        .find(|e| matches!(e, Some(LenientEvent::SkippedItem { index, .. }) if *index == i));
                    if let Some(slot) = skipped {
                        if let Some(LenientEvent::SkippedItem { error, .. }) = slot.take() {
                            report.warnings.push(Warning {
                                path: Some(at),
                                reason: format!("skip-invalid-items: item dropped ({error})"),
                            });
                        }
                        extra -= 1;
                        continue;
                    }
                }
                diff(&at, Some(item), b.get(j), events, report, out);
                j += 1;
            }
            for (k, item) in b.iter().enumerate().skip(j) {
                diff(&format!("{path}[{k}]"), None, Some(item), events, report, out);
            }
        }
        (Some(a), Some(b)) if json_equal(a, b) => {}
        (a, b) => out.push(Difference { path: path.to_string(), received: a.cloned(), reencoded: b.cloned() }),
    }
}

/// JSON equality with numbers compared by value (`1` and `1.0` are the same number).
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(x), Some(y), _, _) => x == y,
            (_, _, Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_equal(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(!json_equal(&serde_json::json!(1), &serde_json::json!(2)));
        assert!(!json_equal(&serde_json::json!({"a": 1}), &serde_json::json!({"a": 1, "b": 2})));
    }
}
