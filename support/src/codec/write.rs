//! The encoder the runtime writes messages with: a `serde::Serializer` that writes compact JSON,
//! byte for byte what `serde_json::to_writer` writes, and faster on what these types are made of.
//!
//! Most of serde_json's encoding time on protocol messages is its string escaping, which looks up
//! every byte in a table (58% of the instructions on the benchmark corpus). Here strings are
//! scanned sixteen bytes at a time (SSE2; eight elsewhere) and copied in runs, and the short ones
//! that most keys and ids are, in one or two overlapping words with one reservation of the output.
//! Anything this encoder does not handle itself (byte arrays, non-string map
//! keys, `RawValue`s, enum variants with data, errors from a `Serialize` impl) starts the value over
//! with serde_json, so the output and the errors are serde_json's in every case; floats are
//! written by serde_json too.

use serde::ser::{self, Impossible, Serialize};

use super::scan::clean_prefix;

/// Encodes `value` as compact JSON, exactly as `serde_json::to_vec` does.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    // Most messages fit (the benchmark's average 300-350 bytes): from serde_json's 128, most
    // grow twice.
    let mut out = Vec::with_capacity(1024);
    to_writer(&mut out, value)?;
    Ok(out)
}

/// Encodes `value` as compact JSON at the end of `out`, exactly as `serde_json::to_writer` does.
/// On error, `out` is left as it was.
pub fn to_writer<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), serde_json::Error> {
    let start = out.len();
    if value.serialize(Writer { out: &mut *out }).is_ok() {
        return Ok(());
    }
    out.truncate(start);
    let result = serde_json::to_writer(&mut *out, value);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

/// Encodes `value` as a `RawValue` (the runtime's params and results), as
/// `serde_json::value::to_raw_value` does.
pub fn to_raw_value<T: Serialize + ?Sized>(value: &T) -> Result<Box<serde_json::value::RawValue>, serde_json::Error> {
    let bytes = to_vec(value)?;
    // The writer only writes valid UTF-8 (whole `str`s and ASCII); the check is a cheap scan.
    // `from_string` parses the text once more to validate it (serde_json's own `to_raw_value`
    // does not need to): the price of a public constructor, paid on params and results only.
    let text = String::from_utf8(bytes).map_err(ser::Error::custom)?;
    serde_json::value::RawValue::from_string(text)
}

/// Why this encoder gave up on a value; the caller then encodes it with serde_json.
#[derive(Debug)]
struct GiveUp;

impl std::fmt::Display for GiveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for GiveUp {}

impl ser::Error for GiveUp {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        GiveUp
    }
}

type Done<T = ()> = Result<T, GiveUp>;

/// `s` as a JSON string, escaped as serde_json does: `\"`, `\\`, `\b`, `\t`, `\n`, `\f`, `\r`,
/// and `\u00XX` (lower-case hex) for the other control bytes.
#[inline]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    write_key_or_str(out, b"", s, b"");
}

/// `before`, then `s` as a JSON string, then `after` (`before` and `after` at most one byte each:
/// the comma and colon around a key). Strings without escapes, nearly all of them, take one
/// reservation and a copy without a call for the short ones.
#[inline(always)]
fn write_key_or_str(out: &mut Vec<u8>, before: &[u8], s: &str, after: &[u8]) {
    let bytes = s.as_bytes();
    let len = bytes.len();
    let clean = clean_prefix(bytes);
    if clean < len {
        out.extend_from_slice(before);
        out.push(b'"');
        out.extend_from_slice(&bytes[..clean]);
        escape_rest(out, &bytes[clean..]);
        out.push(b'"');
        out.extend_from_slice(after);
        return;
    }
    let (before, after) = (&before[..before.len().min(1)], &after[..after.len().min(1)]);
    out.reserve(len + 4);
    let start = out.len();
    // SAFETY: `len + 4` bytes of spare capacity are reserved past `start`; the writes below cover
    // exactly `before.len() + len + 2 + after.len()` (at most `len + 4`) bytes from `start`, each
    // written before `set_len` makes them part of the vector.
    unsafe {
        let mut p = out.as_mut_ptr().add(start);
        if let [b] = before {
            p.write(*b);
            p = p.add(1);
        }
        p.write(b'"');
        p = p.add(1);
        copy_to(bytes, p);
        p = p.add(len);
        p.write(b'"');
        p = p.add(1);
        if let [a] = after {
            p.write(*a);
        }
        out.set_len(start + before.len() + len + 2 + after.len());
    }
}

/// Copies `bytes` to `dst`: strings of up to 16 bytes in two overlapping loads and stores, longer
/// ones with `copy_nonoverlapping`.
///
/// # Safety
/// `dst` must be valid for `bytes.len()` bytes of writes and not overlap `bytes`.
#[inline(always)]
unsafe fn copy_to(bytes: &[u8], dst: *mut u8) {
    let len = bytes.len();
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap_or([0; 4]));
    // SAFETY (each arm): the writes cover dst[..len], in bounds by the caller's contract.
    unsafe {
        match len {
            0 => {}
            1..=3 => {
                dst.write(bytes[0]);
                dst.add(len / 2).write(bytes[len / 2]);
                dst.add(len - 1).write(bytes[len - 1]);
            }
            4..=7 => {
                dst.cast::<u32>().write_unaligned(u32_at(0).to_le());
                dst.add(len - 4).cast::<u32>().write_unaligned(u32_at(len - 4).to_le());
            }
            8..=16 => {
                dst.cast::<u64>().write_unaligned(u64_at(0).to_le());
                dst.add(len - 8).cast::<u64>().write_unaligned(u64_at(len - 8).to_le());
            }
            _ => std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len),
        }
    }
}

/// The rest of a string from its first byte to escape on: each escape, then the run of bytes
/// after it that need none.
fn escape_rest(out: &mut Vec<u8>, mut bytes: &[u8]) {
    while let Some((&byte, rest)) = bytes.split_first() {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let unicode;
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            0x0C => b"\\f",
            b'\r' => b"\\r",
            _ => {
                unicode = [b'\\', b'u', b'0', b'0', HEX[(byte >> 4) as usize], HEX[(byte & 0xF) as usize]];
                &unicode
            }
        };
        out.extend_from_slice(escape);
        let clean = clean_prefix(rest);
        out.extend_from_slice(&rest[..clean]);
        bytes = &rest[clean..];
    }
}

struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

/// An array or object being written; `first` until its first element.
struct Compound<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
    /// serde_json's raw-value struct: its one field is JSON text, written as it is.
    raw: bool,
}

impl Compound<'_> {
    #[inline]
    fn comma(&mut self) {
        if self.first {
            self.first = false;
        } else {
            self.out.push(b',');
        }
    }

    #[inline]
    fn key(&mut self, key: &str) {
        let comma: &[u8] = if std::mem::take(&mut self.first) { b"" } else { b"," };
        write_key_or_str(self.out, comma, key, b":");
    }
}

macro_rules! integers {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Done {
            self.out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            Ok(())
        }
    )*};
}

impl<'a> ser::Serializer for Writer<'a> {
    type Ok = ();
    type Error = GiveUp;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Impossible<(), GiveUp>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Impossible<(), GiveUp>;

    fn serialize_bool(self, v: bool) -> Done {
        self.out.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    integers!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128,
        serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);

    fn serialize_f32(self, v: f32) -> Done {
        serde_json::to_writer(&mut *self.out, &v).map_err(|_| GiveUp)
    }

    fn serialize_f64(self, v: f64) -> Done {
        serde_json::to_writer(&mut *self.out, &v).map_err(|_| GiveUp)
    }

    fn serialize_char(self, v: char) -> Done {
        write_str(self.out, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Done {
        write_str(self.out, v);
        Ok(())
    }

    fn serialize_bytes(self, _: &[u8]) -> Done {
        Err(GiveUp)
    }

    fn serialize_none(self) -> Done {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Done {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Done {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Done {
        self.serialize_unit()
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Done {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Done {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Done {
        self.out.push(b'{');
        write_str(self.out, variant);
        self.out.push(b':');
        value.serialize(Writer { out: &mut *self.out })?;
        self.out.push(b'}');
        Ok(())
    }

    fn serialize_seq(self, _: Option<usize>) -> Done<Compound<'a>> {
        self.out.push(b'[');
        Ok(Compound { out: self.out, first: true, raw: false })
    }

    fn serialize_tuple(self, len: usize) -> Done<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Done<Compound<'a>> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Done<Self::SerializeTupleVariant> {
        Err(GiveUp)
    }

    fn serialize_map(self, _: Option<usize>) -> Done<Compound<'a>> {
        self.out.push(b'{');
        Ok(Compound { out: self.out, first: true, raw: false })
    }

    fn serialize_struct(self, name: &'static str, len: usize) -> Done<Compound<'a>> {
        // serde_json's raw-value protocol (`RawValue`, `Meta`): the one field is the JSON text.
        if name == super::compat::RAW_TOKEN {
            return Ok(Compound { out: self.out, first: true, raw: true });
        }
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Done<Self::SerializeStructVariant> {
        Err(GiveUp)
    }
}

impl ser::SerializeSeq for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        self.comma();
        value.serialize(Writer { out: &mut *self.out })
    }

    fn end(self) -> Done {
        self.out.push(b']');
        Ok(())
    }
}

impl ser::SerializeTuple for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Done {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Done {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Done {
        self.comma();
        key.serialize(KeyWriter { out: &mut *self.out, raw: false })?;
        self.out.push(b':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Done {
        value.serialize(Writer { out: &mut *self.out })
    }

    fn end(self) -> Done {
        self.out.push(b'}');
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = GiveUp;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Done {
        if self.raw {
            return value.serialize(KeyWriter { out: &mut *self.out, raw: true });
        }
        self.key(key);
        value.serialize(Writer { out: &mut *self.out })
    }

    fn end(self) -> Done {
        if !self.raw {
            self.out.push(b'}');
        }
        Ok(())
    }
}

/// A map key: strings (and newtypes and unit variants of them) only; serde_json's other cases
/// (numbers and booleans written as strings) are left to it. With `raw`, the text of a raw value
/// instead, written as it is.
struct KeyWriter<'a> {
    out: &'a mut Vec<u8>,
    raw: bool,
}

impl ser::Serializer for KeyWriter<'_> {
    type Ok = ();
    type Error = GiveUp;
    type SerializeSeq = Impossible<(), GiveUp>;
    type SerializeTuple = Impossible<(), GiveUp>;
    type SerializeTupleStruct = Impossible<(), GiveUp>;
    type SerializeTupleVariant = Impossible<(), GiveUp>;
    type SerializeMap = Impossible<(), GiveUp>;
    type SerializeStruct = Impossible<(), GiveUp>;
    type SerializeStructVariant = Impossible<(), GiveUp>;

    fn serialize_str(self, v: &str) -> Done {
        if self.raw {
            self.out.extend_from_slice(v.as_bytes());
        } else {
            write_str(self.out, v);
        }
        Ok(())
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Done {
        if self.raw {
            return Err(GiveUp);
        }
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Done {
        if self.raw {
            return Err(GiveUp);
        }
        value.serialize(self)
    }

    fn serialize_bool(self, _: bool) -> Done {
        Err(GiveUp)
    }
    fn serialize_i8(self, _: i8) -> Done {
        Err(GiveUp)
    }
    fn serialize_i16(self, _: i16) -> Done {
        Err(GiveUp)
    }
    fn serialize_i32(self, _: i32) -> Done {
        Err(GiveUp)
    }
    fn serialize_i64(self, _: i64) -> Done {
        Err(GiveUp)
    }
    fn serialize_u8(self, _: u8) -> Done {
        Err(GiveUp)
    }
    fn serialize_u16(self, _: u16) -> Done {
        Err(GiveUp)
    }
    fn serialize_u32(self, _: u32) -> Done {
        Err(GiveUp)
    }
    fn serialize_u64(self, _: u64) -> Done {
        Err(GiveUp)
    }
    fn serialize_f32(self, _: f32) -> Done {
        Err(GiveUp)
    }
    fn serialize_f64(self, _: f64) -> Done {
        Err(GiveUp)
    }
    fn serialize_char(self, _: char) -> Done {
        Err(GiveUp)
    }
    fn serialize_bytes(self, _: &[u8]) -> Done {
        Err(GiveUp)
    }
    fn serialize_none(self) -> Done {
        Err(GiveUp)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Done {
        Err(GiveUp)
    }
    fn serialize_unit(self) -> Done {
        Err(GiveUp)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Done {
        Err(GiveUp)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(self, _: &'static str, _: u32, _: &'static str, _: &T) -> Done {
        Err(GiveUp)
    }
    fn serialize_seq(self, _: Option<usize>) -> Done<Self::SerializeSeq> {
        Err(GiveUp)
    }
    fn serialize_tuple(self, _: usize) -> Done<Self::SerializeTuple> {
        Err(GiveUp)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Done<Self::SerializeTupleStruct> {
        Err(GiveUp)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Done<Self::SerializeTupleVariant> {
        Err(GiveUp)
    }
    fn serialize_map(self, _: Option<usize>) -> Done<Self::SerializeMap> {
        Err(GiveUp)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Done<Self::SerializeStruct> {
        Err(GiveUp)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Done<Self::SerializeStructVariant> {
        Err(GiveUp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_string_of_up_to_3_characters_over_an_alphabet_escapes_as_serde_json_does() {
        let alphabet =
            ['a', '"', '\\', '\n', '\u{1}', '\u{1f}', ' ', '\u{7f}', 'é', '😀', '\u{8}', '\u{c}', '\r', '\t'];
        let mut strings = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> =
                strings.iter().flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}"))).collect();
            strings.extend(longer);
        }
        for s in &strings {
            // Padded on both sides so that each character lands at every place in a word.
            for pad in 0..20 {
                let s = format!("{}{s}{}", "x".repeat(pad), "y".repeat(pad));
                assert_eq!(to_vec(&s).unwrap(), serde_json::to_vec(&s).unwrap(), "{s:?}");
            }
        }
    }

    #[test]
    fn values_encode_as_serde_json_encodes_them() {
        let values = [
            json!(null),
            json!({"a": [1, -2, 3.5, true, false, null], "b\"": {"c": "d\u{0}e"}, "": []}),
            json!([{}, [], "x", 1e300, -0.0, u64::MAX, i64::MIN]),
        ];
        for v in &values {
            assert_eq!(to_vec(v).unwrap(), serde_json::to_vec(v).unwrap());
        }
        let raw = serde_json::value::RawValue::from_string("{ \"a\" : 1 }".into()).unwrap();
        assert_eq!(to_vec(&raw).unwrap(), serde_json::to_vec(&raw).unwrap());
        let map: std::collections::BTreeMap<u32, f32> = [(1, 0.5), (2, f32::NAN)].into();
        assert_eq!(to_vec(&map).unwrap(), serde_json::to_vec(&map).unwrap());
        assert_eq!(to_vec(&(1u8, 'c', b"ab")).unwrap(), serde_json::to_vec(&(1u8, 'c', b"ab")).unwrap());
    }
}
