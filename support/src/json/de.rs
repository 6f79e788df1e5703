//! The fast pass of [`super::from_str`]: a `serde::Deserializer` over JSON text that gives the
//! visitors exactly the calls `serde_json`'s own gives them on every input it accepts, and gives
//! up (an error, whose words do not matter) on anything else, after which the message is decoded
//! again by `serde_json`.
//!
//! What it does differently is what the profile of the decode row pointed at:
//! - strings are scanned sixteen bytes at a time (SSE2), with the encoder's scanner;
//! - the buffer that unescaped strings are built in belongs to the thread and keeps its capacity
//!   from one message to the next (`serde_json` starts each message with an empty one, which a
//!   text with a line break in it grows two or three times);
//! - it has no byte-offset bookkeeping for error positions.
//!
//! It gives up on: any syntax error, a lone surrogate in a `\u` escape, nesting deeper than
//! `serde_json` allows, a struct written as an array, an enum written as an object, byte strings,
//! 128-bit integers, and map keys read as anything but strings. Numbers other than short integers
//! are parsed by `serde_json` itself (from their text), so floats are the same to the bit.
//!
//! Giving up, and a key twice in an object, also mark the pass as not to be trusted
//! ([`crate::refuse`]): an untagged union tries its branches on the value's text in this pass
//! (`union::text_branches`) and the exact way on a `serde_json::Value`, which keeps the last of
//! two keys and reads structs from arrays, so a branch this pass refuses for such a reason might
//! be the one the exact way takes.

use super::needs_escape;
use crate::meta::RAW_TOKEN;
use serde::de::{self, DeserializeSeed, Visitor};
use std::cell::Cell;

/// How deep arrays and objects may nest: `serde_json` refuses the 128th level.
const DEPTH: usize = 128;

/// The largest unescaping buffer a thread keeps between messages.
const KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// Decodes `text`; `None` when the input is anything this pass does not take, or when `T`
/// refuses it. (An `Option`, which a decoded value moves into without a copy of its own.)
pub(crate) fn from_str<'de, T: de::Deserialize<'de>>(text: &'de str) -> Option<T> {
    let mut reader = Reader { text, pos: 0, depth: DEPTH, scratch: SCRATCH.with(Cell::take) };
    let result = T::deserialize(&mut reader).ok();
    let rest = reader.peek();
    if reader.scratch.capacity() <= KEEP {
        SCRATCH.with(|s| s.set(std::mem::take(&mut reader.scratch)));
    }
    match rest {
        None => result,
        Some(_) => None,
    }
}

/// The error of this pass, without words (the caller decodes again with `serde_json`, whose
/// error is the one reported) and without an allocation: an untagged union's branches fail often.
#[derive(Debug)]
pub(crate) struct Failed;

type Error = Failed;

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Failed {}

impl de::Error for Failed {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Failed
    }
    /// A key twice in an object: serde_json's `Value` keeps the last, so an untagged union's
    /// branch, which the exact way decodes from a `Value`, may take what this pass refuses.
    fn duplicate_field(_: &'static str) -> Self {
        crate::refuse();
        Failed
    }
}

/// Gives up on the input: the result of this pass is not used even if a union swallows this
/// error and takes another branch (see [`crate::refuse`]).
#[cold]
fn give_up() -> Error {
    crate::refuse();
    Failed
}

struct Reader<'de> {
    text: &'de str,
    pos: usize,
    /// Levels of nesting left.
    depth: usize,
    /// Where a string with escapes is unescaped.
    scratch: Vec<u8>,
}

/// A string read: borrowed from the input when it had no escapes.
enum Text<'de, 's> {
    Borrowed(&'de str),
    Copied(&'s str),
}

impl<'de> Reader<'de> {
    /// The next byte that is not whitespace (the position moved to it), if any.
    #[inline]
    fn peek(&mut self) -> Option<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.pos) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.pos += 1;
        }
        None
    }

    /// Steps over `word` (its first byte already seen at the position).
    #[inline]
    fn literal(&mut self, word: &[u8]) -> Result<(), Error> {
        if self.text.as_bytes()[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(give_up())
        }
    }

    /// Enters an array or an object (its bracket at the position).
    #[inline]
    fn enter(&mut self) -> Result<(), Error> {
        self.depth -= 1;
        if self.depth == 0 {
            return Err(give_up());
        }
        self.pos += 1;
        Ok(())
    }

    /// Leaves an array or an object: `close` must come next.
    #[inline]
    fn leave(&mut self, close: u8) -> Result<(), Error> {
        self.depth += 1;
        if self.peek() == Some(close) {
            self.pos += 1;
            Ok(())
        } else {
            Err(give_up())
        }
    }

    /// A string's contents, the position just after its opening quote.
    #[inline]
    fn string(&mut self) -> Result<Text<'de, '_>, Error> {
        let bytes = self.text.as_bytes();
        let start = self.pos;
        let mut i = start + stop(&bytes[start..]);
        match bytes.get(i) {
            Some(b'"') => {
                self.pos = i + 1;
                // The quote is ASCII, so both ends are character boundaries.
                return Ok(Text::Borrowed(&self.text[start..i]));
            }
            Some(b'\\') => {}
            _ => return Err(give_up()),
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(&bytes[start..i]);
        loop {
            // A backslash at `i`.
            let escape = *bytes.get(i + 1).ok_or_else(give_up)?;
            i += 2;
            match escape {
                b'"' | b'\\' | b'/' => self.scratch.push(escape),
                b'b' => self.scratch.push(0x08),
                b'f' => self.scratch.push(0x0c),
                b'n' => self.scratch.push(b'\n'),
                b'r' => self.scratch.push(b'\r'),
                b't' => self.scratch.push(b'\t'),
                b'u' => {
                    let high = hex4(bytes, i)?;
                    i += 4;
                    let code = match high {
                        0xD800..=0xDBFF => {
                            if bytes.get(i..i + 2) != Some(b"\\u") {
                                return Err(give_up());
                            }
                            let low = hex4(bytes, i + 2)?;
                            if !(0xDC00..=0xDFFF).contains(&low) {
                                return Err(give_up());
                            }
                            i += 6;
                            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                        }
                        0xDC00..=0xDFFF => return Err(give_up()),
                        _ => high,
                    };
                    let c = char::from_u32(code).ok_or_else(give_up)?;
                    self.scratch.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                }
                _ => return Err(give_up()),
            }
            let run = stop(&bytes[i..]);
            self.scratch.extend_from_slice(&bytes[i..i + run]);
            i += run;
            match bytes.get(i) {
                Some(b'"') => break,
                Some(b'\\') => continue,
                _ => return Err(give_up()),
            }
        }
        self.pos = i + 1;
        // Runs of the input cut at ASCII bytes, and whole characters: valid, but checked anyway.
        std::str::from_utf8(&self.scratch).map(Text::Copied).map_err(|_| give_up())
    }

    /// Steps over a string, the position just after its opening quote (escapes checked as
    /// `serde_json` checks them when it skips: a `\u` needs four hex digits, nothing more).
    fn skip_string(&mut self) -> Result<(), Error> {
        let bytes = self.text.as_bytes();
        let mut i = self.pos;
        loop {
            i += stop(&bytes[i..]);
            match bytes.get(i) {
                Some(b'"') => {
                    self.pos = i + 1;
                    return Ok(());
                }
                Some(b'\\') => match bytes.get(i + 1) {
                    Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => i += 2,
                    Some(b'u') => {
                        hex4(bytes, i + 2)?;
                        i += 6;
                    }
                    _ => return Err(give_up()),
                },
                _ => return Err(give_up()),
            }
        }
    }

    /// The end of the number at the position, its grammar checked.
    fn number_end(&self) -> Result<usize, Error> {
        let bytes = self.text.as_bytes();
        let digits = |mut i: usize| {
            let start = i;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            (i > start).then_some(i).ok_or_else(give_up)
        };
        let mut i = self.pos;
        if bytes.get(i) == Some(&b'-') {
            i += 1;
        }
        i = match bytes.get(i) {
            Some(b'0') => i + 1,
            Some(b'1'..=b'9') => digits(i)?,
            _ => return Err(give_up()),
        };
        if bytes.get(i) == Some(&b'.') {
            i = digits(i + 1)?;
        }
        if matches!(bytes.get(i), Some(b'e' | b'E')) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            i = digits(i)?;
        }
        Ok(i)
    }

    /// A number, given to `visitor` as `serde_json` gives it: `u64` for a non-negative integer,
    /// `i64` for a negative one, `f64` otherwise. Integers of up to 18 digits are read here; any
    /// other number is parsed by `serde_json` from its text.
    #[inline]
    fn number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        let bytes = self.text.as_bytes();
        let negative = bytes.get(self.pos) == Some(&b'-');
        let start = self.pos + usize::from(negative);
        let mut i = start;
        let mut value: u64 = 0;
        while let Some(&d) = bytes.get(i).filter(|d| d.is_ascii_digit()) {
            value = value.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            i += 1;
        }
        let digits = i - start;
        let leading_zero = digits > 1 && bytes[start] == b'0';
        let fraction = matches!(bytes.get(i), Some(b'.' | b'e' | b'E'));
        // `-0` is `f64` to serde_json.
        let minus_zero = negative && value == 0;
        let short = (1..=18).contains(&digits) && !leading_zero && !fraction && !minus_zero;
        if short {
            self.pos = i;
            return if negative { visitor.visit_i64(-(value as i64)) } else { visitor.visit_u64(value) };
        }
        let end = self.number_end()?;
        let text = &self.text[self.pos..end];
        self.pos = end;
        let mut number = serde_json::Deserializer::from_str(text);
        let value = de::Deserializer::deserialize_any(&mut number, visitor).map_err(|_| give_up())?;
        number.end().map_err(|_| give_up())?;
        Ok(value)
    }

    /// Steps over one value, checking it is JSON.
    fn skip_value(&mut self) -> Result<(), Error> {
        match self.peek().ok_or_else(give_up)? {
            b'"' => {
                self.pos += 1;
                self.skip_string()
            }
            b'n' => self.literal(b"null"),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'-' | b'0'..=b'9' => {
                self.pos = self.number_end()?;
                Ok(())
            }
            b'[' => {
                self.enter()?;
                if self.peek() != Some(b']') {
                    loop {
                        self.skip_value()?;
                        match self.peek() {
                            Some(b',') => self.pos += 1,
                            _ => break,
                        }
                    }
                }
                self.leave(b']')
            }
            b'{' => {
                self.enter()?;
                if self.peek() != Some(b'}') {
                    loop {
                        if self.peek() != Some(b'"') {
                            return Err(give_up());
                        }
                        self.pos += 1;
                        self.skip_string()?;
                        if self.peek() != Some(b':') {
                            return Err(give_up());
                        }
                        self.pos += 1;
                        self.skip_value()?;
                        match self.peek() {
                            Some(b',') => self.pos += 1,
                            _ => break,
                        }
                    }
                }
                self.leave(b'}')
            }
            _ => Err(give_up()),
        }
    }

    fn seq<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_seq(Seq { de: self, first: true })?;
        self.leave(b']')?;
        Ok(value)
    }

    fn map<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.enter()?;
        let value = visitor.visit_map(Map { de: self, first: true })?;
        self.leave(b'}')?;
        Ok(value)
    }

    /// A string value (its opening quote at the position) given to `visitor`.
    #[inline]
    fn str<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value, Error> {
        self.pos += 1;
        match self.string()? {
            Text::Borrowed(s) => visitor.visit_borrowed_str(s),
            Text::Copied(s) => visitor.visit_str(s),
        }
    }
}

/// The index of the first `"`, `\` or control byte in `bytes`, or its length.
#[inline(always)]
fn stop(bytes: &[u8]) -> usize {
    let len = bytes.len();
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    while i + 16 <= len {
        let mask = super::sse2_mask(&bytes[i..i + 16]);
        if mask != 0 {
            return i + mask.trailing_zeros() as usize;
        }
        i += 16;
    }
    while i + 8 <= len {
        let word = u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
        if needs_escape(word) {
            break;
        }
        i += 8;
    }
    while i < len && !matches!(bytes[i], b'"' | b'\\' | 0..=0x1F) {
        i += 1;
    }
    i
}

/// The value of four hex digits at `at`.
#[inline]
fn hex4(bytes: &[u8], at: usize) -> Result<u32, Error> {
    let digits = bytes.get(at..at + 4).ok_or_else(give_up)?;
    digits.iter().try_fold(0u32, |acc, &d| {
        let v = (d as char).to_digit(16).ok_or_else(give_up)?;
        Ok(acc << 4 | v)
    })
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek().ok_or_else(give_up)? {
            b'"' => self.str(visitor),
            b'{' => self.map(visitor),
            b'[' => self.seq(visitor),
            b'-' | b'0'..=b'9' => self.number(visitor),
            b'n' => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            b't' => {
                self.literal(b"true")?;
                visitor.visit_bool(true)
            }
            b'f' => {
                self.literal(b"false")?;
                visitor.visit_bool(false)
            }
            _ => Err(give_up()),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b't' | b'f') => self.deserialize_any(visitor),
            _ => Err(give_up()),
        }
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }
    /// Every number type: `serde_json` reads any number the same way and lets the visitor
    /// decide whether it fits.
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'-' | b'0'..=b'9') => self.number(visitor),
            _ => Err(give_up()),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'"') => self.str(visitor),
            _ => Err(give_up()),
        }
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'n') => {
                self.literal(b"null")?;
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'n') => {
                self.literal(b"null")?;
                visitor.visit_unit()
            }
            _ => Err(give_up()),
        }
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value, Error> {
        if name != RAW_TOKEN {
            return visitor.visit_newtype_struct(self);
        }
        // The raw-value protocol, as serde_json answers it: a map of one entry, the token and
        // the value's text (whitespace before it left out).
        self.peek();
        let start = self.pos;
        self.skip_value()?;
        visitor.visit_map(Raw { text: Some(&self.text[start..self.pos]) })
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'[') => self.seq(visitor),
            _ => Err(give_up()),
        }
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.peek() {
            Some(b'{') => self.map(visitor),
            _ => Err(give_up()),
        }
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if self.peek() != Some(b'"') {
            return Err(give_up());
        }
        self.pos += 1;
        match self.string()? {
            Text::Borrowed(s) => visitor.visit_enum(de::value::BorrowedStrDeserializer::new(s)),
            Text::Copied(s) => visitor.visit_enum(de::value::StrDeserializer::new(s)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.skip_value()?;
        visitor.visit_unit()
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(give_up())
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(give_up())
    }
    fn deserialize_i128<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(give_up())
    }
    fn deserialize_u128<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(give_up())
    }
}

/// The elements of an array.
struct Seq<'a, 'de> {
    de: &'a mut Reader<'de>,
    first: bool,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        match self.de.peek() {
            Some(b']') => return Ok(None),
            Some(b',') if !self.first => {
                self.de.pos += 1;
                if self.de.peek() == Some(b']') {
                    return Err(give_up());
                }
            }
            Some(_) if self.first => {}
            _ => return Err(give_up()),
        }
        self.first = false;
        seed.deserialize(&mut *self.de).map(Some)
    }
}

/// The entries of an object.
struct Map<'a, 'de> {
    de: &'a mut Reader<'de>,
    first: bool,
}

impl<'de> de::MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        match self.de.peek() {
            Some(b'}') => return Ok(None),
            Some(b',') if !self.first => {
                self.de.pos += 1;
                if self.de.peek() != Some(b'"') {
                    return Err(give_up());
                }
            }
            Some(b'"') if self.first => {}
            _ => return Err(give_up()),
        }
        self.first = false;
        self.de.pos += 1;
        let key = seed.deserialize(Key { de: &mut *self.de })?;
        if self.de.peek() != Some(b':') {
            return Err(give_up());
        }
        self.de.pos += 1;
        Ok(Some(key))
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        seed.deserialize(&mut *self.de)
    }
}

/// An object's key (the position just after its opening quote): a string, whatever is asked,
/// except that an option is `Some` and a newtype its content, as with `serde_json`. A visitor
/// that wants a number or a bool from a key refuses the string, and this pass gives up.
struct Key<'a, 'de> {
    de: &'a mut Reader<'de>,
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de> {
    type Error = Error;
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.de.string()? {
            Text::Borrowed(s) => visitor.visit_borrowed_str(s),
            Text::Copied(s) => visitor.visit_str(s),
        }
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.de.skip_string()?;
        visitor.visit_unit()
    }
    fn deserialize_bool<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Error> {
        Err(give_up())
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Error> {
        Err(give_up())
    }
    serde::forward_to_deserialize_any! {
        i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The raw-value protocol's map: the token, then the text.
struct Raw<'de> {
    text: Option<&'de str>,
}

impl<'de> de::MapAccess<'de> for Raw<'de> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        if self.text.is_none() {
            return Ok(None);
        }
        seed.deserialize(de::value::BorrowedStrDeserializer::new(RAW_TOKEN)).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let text = self.text.take().ok_or_else(give_up)?;
        seed.deserialize(de::value::BorrowedStrDeserializer::new(text))
    }
}

#[cfg(test)]
mod tests {
    use super::from_str;
    use serde::Deserialize;
    use serde_json::Value;

    /// What serde_json and this pass make of `text`: this pass may give up, but when it does not,
    /// it agrees with serde_json, to the text of every number.
    fn agree<T: for<'de> Deserialize<'de> + std::fmt::Debug + PartialEq>(text: &str) -> Option<T> {
        let ours = from_str::<T>(text);
        let theirs = serde_json::from_str::<T>(text);
        match ours {
            Some(ours) => {
                let theirs = theirs.unwrap_or_else(|e| panic!("only this pass took {text:?}: {e}"));
                assert_eq!(ours, theirs, "{text:?}");
                assert_eq!(format!("{ours:?}"), format!("{theirs:?}"), "{text:?}");
                Some(ours)
            }
            None => None,
        }
    }

    #[test]
    fn takes_what_serde_json_takes_and_reads_it_the_same() {
        let cases = [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            " \t\r\n{ \"a\" : [ 1 , -2 , 3.5 , -0.0 , 1e3 , 1E-3 , -12.5e+2 ] } \n",
            r#""plain""#,
            r#""esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac \ud83d\ude00 end""#,
            r#""héllo wörld — ünïcode ✓ outside escapes""#,
            r#"["a long string that goes over sixteen bytes, and then some more after it", "x"]"#,
            "0",
            "-0",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "123456789012345678901234567890",
            "-9223372036854775808",
            "-9223372036854775809",
            "0.1",
            "2.2250738585072014e-308",
            "1.7976931348623157e308",
            "9007199254740993",
            "3.141592653589793238462643383279",
            "[]",
            "{}",
            "[[[[[[]]]]]]",
            r#"{"":""}"#,
            r#"{"a":1,"a":2}"#,
        ];
        for text in cases {
            assert!(agree::<Value>(text).is_some(), "gave up on {text:?}");
        }
    }

    #[test]
    fn refuses_what_serde_json_refuses() {
        let cases = [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "[,1]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":1 \"b\":2}",
            "{a:1}",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "nul",
            "truee",
            "[1] 2",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"unterminated",
            "\"tab\tinside\"",
            "\"nl\ninside\"",
            "[1 2]",
            "{\"a\":}",
            "NaN",
            "Infinity",
        ];
        for text in cases {
            assert!(serde_json::from_str::<Value>(text).is_err(), "serde_json took {text:?}");
            assert!(from_str::<Value>(text).is_none(), "this pass took {text:?}");
        }
    }

    #[test]
    fn gives_up_on_what_it_does_not_do() {
        // serde_json takes these; this pass leaves them to it.
        for text in [r#""\ud800""#, r#""\udc00 x""#, r#""\ud800\u0041""#] {
            assert!(from_str::<String>(text).is_none(), "{text}");
        }
        // Nesting: both stop at the same depth.
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let limit = (1..300).find(|&n| serde_json::from_str::<Value>(&nested(n)).is_err()).unwrap();
        assert!(from_str::<Value>(&nested(limit)).is_none());
        assert!(agree::<Value>(&nested(limit - 1)).is_some(), "{limit}");
        #[derive(Deserialize, Debug, PartialEq)]
        struct Point {
            x: i32,
            y: i32,
        }
        assert_eq!(serde_json::from_str::<Point>("[1,2]").unwrap(), Point { x: 1, y: 2 });
        assert!(from_str::<Point>("[1,2]").is_none());
    }

    #[test]
    fn typed_values_decode_as_with_serde_json() {
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        enum Kind {
            Text,
            ResourceLink,
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Id(String);
        #[derive(Deserialize, Debug, PartialEq)]
        #[serde(rename_all = "camelCase")]
        struct Message {
            session_id: Id,
            kind: Kind,
            count: u32,
            delta: i64,
            ratio: f64,
            small: u8,
            note: Option<String>,
            tags: Vec<String>,
            nested: Option<Box<Message>>,
            #[serde(default)]
            entries: std::collections::BTreeMap<String, u64>,
            unit: (),
            pair: (u8, String),
            letter: char,
        }
        let text = r#"{"sessionId":"s-1","kind":"resourceLink","count":7,"delta":-3,"ratio":0.25,"small":255,
            "note":null,"tags":["a","b\n"],"ignored":{"deep":[1,{"x":"\u0041"}]},"entries":{"k":1,"l\u00e9":2},
            "nested":{"sessionId":"s-2","kind":"text","count":0,"delta":0,"ratio":1e2,"small":0,"note":"n",
            "tags":[],"nested":null,"unit":null,"pair":[1,"p"],"letter":"z"},"unit":null,"pair":[2,"q"],"letter":"\u00e9"}"#;
        assert!(agree::<Message>(text).is_some());
        // A number out of its type's range, an unknown enum value, a missing field: both refuse.
        for bad in [
            text.replace("\"small\":255", "\"small\":256"),
            text.replace("\"kind\":\"resourceLink\"", "\"kind\":\"other\""),
            text.replace("\"count\":7,", ""),
            text.replace("\"count\":7", "\"count\":-7"),
            text.replace("\"count\":7", "\"count\":7.5"),
        ] {
            assert!(serde_json::from_str::<Message>(&bad).is_err());
            assert!(from_str::<Message>(&bad).is_none());
        }
    }

    #[test]
    fn raw_values_are_the_same_text() {
        #[derive(Deserialize)]
        struct Holder<'a> {
            #[serde(borrow)]
            raw: &'a serde_json::value::RawValue,
            meta: crate::Meta,
        }
        let text = r#"{"raw":  [1, {"a" : "b\"c"}, "\ud800"] ,"meta": {"k": [1,2], "s":"\u00e9"} }"#;
        let ours: Holder = from_str(text).unwrap();
        let theirs: Holder = serde_json::from_str(text).unwrap();
        assert_eq!(ours.raw.get(), theirs.raw.get());
        assert_eq!(ours.meta.as_str(), theirs.meta.as_str());
    }

    /// A small deterministic generator (xorshift), for the property test below.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// Random JSON text: every kind of value, escapes, numbers of every shape, random whitespace.
    fn random_json(rng: &mut Rng, depth: u32, out: &mut String) {
        let space = |rng: &mut Rng, out: &mut String| {
            for _ in 0..rng.below(3) {
                out.push([' ', '\n', '\t', '\r'][rng.below(4) as usize]);
            }
        };
        space(rng, out);
        match rng.below(if depth > 4 { 5 } else { 7 }) {
            0 => out.push_str(["null", "true", "false"][rng.below(3) as usize]),
            1 | 2 => {
                let sign = if rng.below(3) == 0 { "-" } else { "" };
                let int = match rng.below(4) {
                    0 => "0".to_string(),
                    1 => (rng.below(1000)).to_string(),
                    2 => (rng.next() >> rng.below(64)).to_string(),
                    _ => format!("{}{}", rng.next(), rng.next()),
                };
                let int = if int.len() > 1 { int.trim_start_matches('0').to_string() } else { int };
                let int = if int.is_empty() { "1".to_string() } else { int };
                let frac = if rng.below(3) == 0 { format!(".{}", rng.below(100_000)) } else { String::new() };
                let exp = match rng.below(5) {
                    0 => format!("e{}", rng.below(40)),
                    1 => format!("E-{}", rng.below(400)),
                    _ => String::new(),
                };
                out.push_str(&format!("{sign}{int}{frac}{exp}"));
            }
            3 | 4 => random_string(rng, out),
            5 => {
                out.push('[');
                let n = rng.below(5);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    random_json(rng, depth + 1, out);
                }
                space(rng, out);
                out.push(']');
            }
            _ => {
                out.push('{');
                let n = rng.below(5);
                for i in 0..n {
                    if i > 0 {
                        out.push(',');
                    }
                    space(rng, out);
                    random_string(rng, out);
                    space(rng, out);
                    out.push(':');
                    random_json(rng, depth + 1, out);
                }
                space(rng, out);
                out.push('}');
            }
        }
        space(rng, out);
    }

    fn random_string(rng: &mut Rng, out: &mut String) {
        out.push('"');
        for _ in 0..rng.below(40) {
            match rng.below(12) {
                0 => out.push_str(["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"][rng.below(8) as usize]),
                1 => out.push_str(&format!("\\u{:04x}", rng.below(0xD800))),
                2 => out.push_str("\\ud83d\\ude00"),
                3 => out.push(['é', '€', '😀', 'ß'][rng.below(4) as usize]),
                _ => out.push((b'a' + rng.below(26) as u8) as char),
            }
        }
        out.push('"');
    }

    #[test]
    fn random_json_reads_the_same_and_damaged_json_never_differs() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let mut taken = 0;
        for _ in 0..3000 {
            let mut text = String::new();
            random_json(&mut rng, 0, &mut text);
            assert!(agree::<Value>(&text).is_some(), "gave up on valid {text:?}");
            // Damage it: a byte removed, or one of JSON's own bytes put in.
            let mut bytes = text.clone().into_bytes();
            let at = rng.below(bytes.len() as u64 + 1) as usize;
            if rng.below(2) == 0 && at < bytes.len() {
                bytes.remove(at);
            } else {
                bytes.insert(at.min(bytes.len()), b"{}[],:\"\\0-e. "[rng.below(13) as usize]);
            }
            if let Ok(damaged) = String::from_utf8(bytes) {
                taken += usize::from(agree::<Value>(&damaged).is_some());
            }
        }
        // Some damage leaves valid JSON (a space added, a digit removed): those were compared too.
        assert!(taken > 100, "{taken}");
    }
}
