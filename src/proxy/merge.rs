//! Keeping what the generated types do not know across a typed edit: they drop object members
//! that their schema does not list (a newer peer's fields), so decoding, changing and encoding
//! alone would lose them. Three values tell an unknown member from one the edit removed: the
//! original JSON, the typed value encoded before the edit, and after it.

use serde_json::Value;

/// Puts back into `edited` the members of `original` that `decoded` (the original decoded and
/// encoded again) lost, wherever the edit kept their parent: a member the types dropped is
/// missing from both `decoded` and `edited`, while one the edit removed is only missing from
/// `edited`. Arrays are followed item by item when the three have the same length.
pub(super) fn keep_unknown(original: &Value, decoded: &Value, edited: &mut Value) {
    match (original, decoded, edited) {
        (Value::Object(original), Value::Object(decoded), Value::Object(edited)) => {
            for (key, value) in original {
                match (decoded.get(key), edited.get_mut(key)) {
                    (None, None) => {
                        edited.insert(key.clone(), value.clone());
                    }
                    (Some(decoded), Some(edited)) => keep_unknown(value, decoded, edited),
                    _ => {}
                }
            }
        }
        (Value::Array(original), Value::Array(decoded), Value::Array(edited))
            if original.len() == decoded.len() && decoded.len() == edited.len() =>
        {
            for ((original, decoded), edited) in original.iter().zip(decoded).zip(edited) {
                keep_unknown(original, decoded, edited);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::keep_unknown;
    use serde_json::json;

    #[test]
    fn unknown_members_come_back_and_removed_ones_stay_removed() {
        let original = json!({"a": 1, "b": {"x": 1, "new": true}, "gone": 2, "list": [{"k": 1, "u": 0}], "extra": "e"});
        let decoded = json!({"a": 1, "b": {"x": 1}, "gone": 2, "list": [{"k": 1}]});
        let mut edited = json!({"a": 5, "b": {"x": 2}, "list": [{"k": 3}]});
        keep_unknown(&original, &decoded, &mut edited);
        assert_eq!(edited, json!({"a": 5, "b": {"x": 2, "new": true}, "list": [{"k": 3, "u": 0}], "extra": "e"}));
    }

    #[test]
    fn a_replaced_parent_is_not_patched() {
        let original = json!({"b": {"x": 1, "new": true}});
        let decoded = json!({"b": {"x": 1}});
        let mut edited = json!({"b": "replaced"});
        keep_unknown(&original, &decoded, &mut edited);
        assert_eq!(edited, json!({"b": "replaced"}));
    }
}
