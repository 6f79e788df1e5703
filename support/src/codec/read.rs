//! The decoder behind `json::from_str` and the lenient fields: a `serde::Deserializer` over
//! JSON text that behaves as `serde_json::Deserializer::from_str` does, to the visitor calls it
//! makes, the values it gives and the words and positions of its errors, and is faster on what
//! protocol messages are made of.
//!
//! Why it exists: reading JSON was most of the decode row's time (`serde_json`'s string scanning,
//! an unescaping buffer that starts empty in every message, its per-call bookkeeping). Here:
//! - strings are scanned sixteen bytes at a time (SSE2), with the encoder's scanner, and one that
//!   ends within those sixteen bytes is read without a call;
//! - the unescaping buffer belongs to the thread and keeps its capacity between messages;
//! - integers of up to 18 digits, and decimals of up to 15, are read in place.
//!
//! Why it replaces `serde_json` rather than running before it: a deserializer that gave up to
//! `serde_json` on what it did not do had every type's `Deserialize` compiled for both, which cost
//! more of the `acp-types` build than it saved (BENCHMARKS.md). With this one the generated
//! crates compile the types for it instead of for `serde_json`'s, and the generic code here is
//! written so that no more is compiled per type than `serde_json`'s is (`tri!` rather than `?`,
//! no closures, the per-type helpers inlined).
//!
//! How it stays `serde_json`'s: each method makes the calls `serde_json`'s makes, in its order,
//! and fills in the position of a visitor's error at the same points (`fix`). What goes wrong
//! inside a token (a string, a number, a literal, a value skipped) is left to `serde_json` itself:
//! it reads the text from that token on, and its error, and the index where it stopped, are moved
//! onto this text (`delegated`), so that malformed input costs a second read of one token and no
//! second copy of `serde_json`'s error rules. Numbers other than the short ones are parsed by
//! `serde_json` from their text, so floats are the same to the bit. The errors are
//! `serde_json::Error`s whose text is `serde_json`'s; they are made with `de::Error::custom`,
//! so `classify()` says `Data` where `serde_json` would say `Syntax` or `Eof`.

use super::compat::{without_position, RAW_TOKEN};
use serde::de::{self, DeserializeSeed, IgnoredAny, Unexpected, Visitor};
use serde::Deserialize;
use serde_json::Error;
use std::cell::Cell;
use std::fmt::Display;

type Result<T, E = Error> = std::result::Result<T, E>;

/// `?` without its conversion, as `serde_json` writes it: in the generic functions here, `?`
/// would be compiled once more for every type decoded (the build row of BENCHMARKS.md).
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(value) => value,
            Err(error) => return Err(error),
        }
    };
}

/// A visitor's error placed where `serde_json` places it: at the index once the method is done
/// (`fix`).
macro_rules! placed {
    ($reader:ident, $value:expr) => {
        match $value {
            Ok(value) => Ok(value),
            Err(error) => Err($reader.fix(error)),
        }
    };
}

/// The `deserialize_*` methods of every number type but the 128-bit ones, each calling `$read`:
/// `serde_json` reads any number the same way and lets the visitor decide whether it fits.
macro_rules! numbers {
    ($read:ident) => {
        numbers!($read: deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
            deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32 deserialize_f64);
    };
    ($read:ident: $($method:ident)*) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
                self.$read(visitor)
            }
        )*
    };
}

/// How deep arrays and objects may nest: `serde_json` refuses the 128th level.
const DEPTH: u8 = 128;

/// The powers of ten up to 10^15, each exactly an `f64`.
const EXACT_POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/// The largest unescaping buffer a thread keeps between messages.
const KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

// serde_json's words for its syntax errors.
const EOF_LIST: &str = "EOF while parsing a list";
const EOF_OBJECT: &str = "EOF while parsing an object";
const EOF_VALUE: &str = "EOF while parsing a value";
const EXPECTED_COLON: &str = "expected `:`";
const EXPECTED_LIST_COMMA: &str = "expected `,` or `]`";
const EXPECTED_OBJECT_COMMA: &str = "expected `,` or `}`";
const EXPECTED_VALUE: &str = "expected value";
const EXPECTED_IDENT: &str = "expected ident";
const EXPECTED_QUOTE: &str = "expected `\"`";
const EXPECTED_NUMERIC_KEY: &str = "invalid value: expected key to be a number in quotes";
const INVALID_NUMBER: &str = "invalid number";
const OUT_OF_RANGE: &str = "number out of range";
const KEY_MUST_BE_STRING: &str = "key must be a string";
const TRAILING_CHARACTERS: &str = "trailing characters";
const TRAILING_COMMA: &str = "trailing comma";
const RECURSION: &str = "recursion limit exceeded";

/// Decodes `text` as `serde_json::from_str` does.
pub(crate) fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T> {
    let mut reader = Reader::new(text);
    let result = match T::deserialize(&mut reader) {
        Ok(value) => match reader.end() {
            Ok(()) => Ok(value),
            Err(error) => Err(error),
        },
        Err(error) => Err(error),
    };
    reader.finish();
    result
}

/// The decoder's state over one text: `serde_json::Deserializer<StrRead>`'s, with the unescaping
/// buffer borrowed from the thread.
pub(crate) struct Reader<'de> {
    text: &'de str,
    /// The next byte to read (`serde_json`'s `index`, positions are counted from it).
    index: usize,
    /// Levels of nesting left.
    depth: u8,
    /// Where a string with escapes is unescaped, and where a skipped value's nesting is kept.
    scratch: Vec<u8>,
}

/// A string read: borrowed from the input when it had no escapes.
enum Text<'de, 's> {
    Borrowed(&'de str),
    Copied(&'s str),
}

impl Text<'_, '_> {
    fn as_str(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Copied(s) => s,
        }
    }
}

/// A number as `serde_json` gives it to a visitor.
#[derive(Clone, Copy)]
enum Number {
    U64(u64),
    I64(i64),
    F64(f64),
}

impl Number {
    #[inline(always)]
    fn visit<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self {
            Number::U64(n) => visitor.visit_u64(n),
            Number::I64(n) => visitor.visit_i64(n),
            Number::F64(n) => visitor.visit_f64(n),
        }
    }
    fn unexpected(self) -> Unexpected<'static> {
        match self {
            Number::U64(n) => Unexpected::Unsigned(n),
            Number::I64(n) => Unexpected::Signed(n),
            Number::F64(n) => Unexpected::Float(n),
        }
    }
}

/// What `serde_json` is asked to read again from a token on, for its error.
#[derive(Clone, Copy)]
enum Token {
    /// A scalar value: a string, a number or a literal (`deserialize_any`).
    Value,
    /// A value skipped (`IgnoredAny`).
    Skipped,
    /// A string read as bytes.
    Bytes,
}

/// `serde_json`'s line and column for byte `i` of `bytes`: the column counts the bytes before
/// `i` on its line.
fn position(bytes: &[u8], i: usize) -> (usize, usize) {
    let head = &bytes[..i];
    let start_of_line = head.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
    let line = 1 + head[..start_of_line].iter().filter(|&&b| b == b'\n').count();
    (line, i - start_of_line)
}

impl<'de> Reader<'de> {
    #[inline]
    fn new(text: &'de str) -> Self {
        Reader { text, index: 0, depth: DEPTH, scratch: SCRATCH.with(Cell::take) }
    }

    /// Gives the unescaping buffer back to the thread.
    #[inline]
    fn finish(&mut self) {
        if self.scratch.capacity() <= KEEP {
            let scratch = std::mem::take(&mut self.scratch);
            SCRATCH.with(|s| s.set(scratch));
        }
    }

    #[inline(always)]
    fn bytes(&self) -> &'de [u8] {
        self.text.as_bytes()
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes().get(self.index).copied()
    }

    /// The next byte that is not whitespace (the index moved to it), if any.
    #[inline]
    fn parse_whitespace(&mut self) -> Option<u8> {
        let bytes = self.bytes();
        // Most values and keys follow their comma or colon directly (whitespace is below `!`).
        if let Some(&b) = bytes.get(self.index) {
            if b > b' ' {
                return Some(b);
            }
        }
        while let Some(&b) = bytes.get(self.index) {
            if !matches!(b, b' ' | b'\n' | b'\t' | b'\r') {
                return Some(b);
            }
            self.index += 1;
        }
        None
    }

    /// An error at byte `i`, worded and placed as `serde_json` places it.
    #[cold]
    #[inline(never)]
    fn error_at(&self, message: &dyn Display, i: usize) -> Error {
        let (line, column) = position(self.bytes(), i);
        // serde_json reads the position back out of a message that ends this way.
        de::Error::custom(format_args!("{message} at line {line} column {column}"))
    }

    /// `serde_json`'s `error`: at the index (the byte just read).
    #[cold]
    fn error(&self, message: &str) -> Error {
        self.error_at(&message, self.index)
    }

    /// `serde_json`'s `peek_error`: at the byte after the index.
    #[cold]
    fn peek_error(&self, message: &str) -> Error {
        self.error_at(&message, (self.index + 1).min(self.text.len()))
    }

    /// `serde_json`'s `fix_position`: a visitor's error, which has no position, gets the index's.
    #[cold]
    #[inline(never)]
    fn fix(&self, error: Error) -> Error {
        if error.line() == 0 {
            self.error_at(&error, self.index)
        } else {
            error
        }
    }

    /// `serde_json`'s error for the token at `start`: it reads the text from there as it would
    /// have in place, and its position is moved back onto this text, as is the index: where
    /// `serde_json` stopped matters to a visitor's error that is placed afterwards (a union
    /// rewords the error of its body, and its deserializer places the new one where it stands).
    #[cold]
    #[inline(never)]
    fn delegated(&mut self, start: usize, token: Token) -> Error {
        let rest = &self.text[start..];
        let mut json = serde_json::Deserializer::from_str(rest);
        let outcome = match token {
            Token::Value => de::Deserializer::deserialize_any(&mut json, IgnoredAny).map(drop),
            Token::Skipped => IgnoredAny::deserialize(&mut json).map(drop),
            Token::Bytes => de::Deserializer::deserialize_bytes(&mut json, IgnoredAny).map(drop),
        };
        let error = match outcome {
            Err(error) => error,
            // Not expected: this reader refused what serde_json takes. Said, not hidden.
            Ok(()) => return self.error_at(&"this input is JSON serde_json reads but this decoder does not", start),
        };
        if error.line() == 0 {
            return error;
        }
        let offset = if error.line() == 1 {
            error.column()
        } else {
            let newline = rest
                .bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .nth(error.line() - 2)
                .map_or(rest.len(), |(i, _)| i);
            newline + 1 + error.column()
        };
        let at = (start + offset).min(self.text.len());
        let text = error.to_string();
        let message = without_position(&text);
        self.index = stopped_at(self.bytes(), message, at);
        self.error_at(&message, at)
    }

    /// After the value: nothing but whitespace.
    #[inline]
    fn end(&mut self) -> Result<()> {
        match self.parse_whitespace() {
            Some(_) => Err(self.peek_error(TRAILING_CHARACTERS)),
            None => Ok(()),
        }
    }

    /// Steps over `word` (at the index).
    #[inline]
    fn ident(&mut self, word: &[u8]) -> Result<()> {
        if self.bytes()[self.index..].starts_with(word) {
            self.index += word.len();
            Ok(())
        } else {
            Err(self.delegated(self.index, Token::Value))
        }
    }

    /// A string's contents, the index just after its opening quote: its bounds when it has no
    /// escapes, otherwise `None` with the unescaped bytes in `scratch`. `raw` takes lone
    /// surrogates (as WTF-8), as `serde_json` does for bytes.
    #[inline(always)]
    fn scan_string(&mut self, raw: bool) -> Result<Option<(usize, usize)>> {
        let bytes = self.bytes();
        let start = self.index;
        let i = start + stop(&bytes[start..]);
        if bytes.get(i) == Some(&b'"') {
            self.index = i + 1;
            return Ok(Some((start, i)));
        }
        match self.escaped(start, i, raw) {
            Ok(()) => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// The rest of [`scan_string`](Self::scan_string) after its first run, which ends at `i`
    /// (an escape, or something `serde_json` refuses): the string unescaped into `scratch`.
    #[inline(never)]
    fn escaped(&mut self, start: usize, mut i: usize, raw: bool) -> Result<()> {
        let bytes = self.bytes();
        let quote = start - 1;
        if bytes.get(i) == Some(&b'\\') {
            self.scratch.clear();
            self.scratch.extend_from_slice(&bytes[start..i]);
            // A backslash at `i`.
            while let Some(&escape) = bytes.get(i + 1) {
                i += 2;
                match escape {
                    b'"' | b'\\' | b'/' => self.scratch.push(escape),
                    b'b' => self.scratch.push(0x08),
                    b'f' => self.scratch.push(0x0c),
                    b'n' => self.scratch.push(b'\n'),
                    b'r' => self.scratch.push(b'\r'),
                    b't' => self.scratch.push(b'\t'),
                    b'u' => match unicode(bytes, i, raw) {
                        Some((code, len)) => {
                            push_wtf8(code, &mut self.scratch);
                            i += len;
                        }
                        None => break,
                    },
                    _ => break,
                }
                let run = stop(&bytes[i..]);
                self.scratch.extend_from_slice(&bytes[i..i + run]);
                i += run;
                match bytes.get(i) {
                    Some(b'"') => {
                        self.index = i + 1;
                        return Ok(());
                    }
                    Some(b'\\') => continue,
                    _ => break,
                }
            }
        }
        Err(self.delegated(quote, if raw { Token::Bytes } else { Token::Value }))
    }

    /// A string, the index just after its opening quote.
    #[inline]
    fn string(&mut self) -> Result<Text<'de, '_>> {
        match self.scan_string(false)? {
            Some((start, end)) => Ok(Text::Borrowed(&self.text[start..end])),
            None => {
                debug_assert!(std::str::from_utf8(&self.scratch).is_ok());
                // SAFETY: `escaped` without `raw` builds the buffer from runs of the input (a
                // `&str`) that start and end at ASCII bytes, ASCII bytes, and the UTF-8 encoding
                // of `char`s (a surrogate is refused, not encoded): whole characters only.
                Ok(Text::Copied(unsafe { std::str::from_utf8_unchecked(&self.scratch) }))
            }
        }
    }

    /// A string value (the index just after its opening quote) given to `visitor`.
    #[inline(always)]
    fn visit_string<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        if let Some(s) = self.short_string() {
            return visitor.visit_borrowed_str(s);
        }
        match tri!(self.string()) {
            Text::Borrowed(s) => visitor.visit_borrowed_str(s),
            Text::Copied(s) => visitor.visit_str(s),
        }
    }

    /// A string without escapes that ends within the next sixteen bytes (most keys, ids and
    /// tags), the index just after its opening quote; read here without a call.
    #[inline]
    fn short_string(&mut self) -> Option<&'de str> {
        #[cfg(target_arch = "x86_64")]
        {
            let bytes = self.bytes();
            let start = self.index;
            let mask = super::scan::sse2_mask(bytes.get(start..start + 16)?);
            let end = start + mask.trailing_zeros() as usize;
            // No stop at all gives `end` 32 past `start`, outside the chunk.
            if bytes.get(end) != Some(&b'"') || mask == 0 {
                return None;
            }
            self.index = end + 1;
            self.text.get(start..end)
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }

    /// The number at the index, as `serde_json` reads it: `u64` for a non-negative integer,
    /// `i64` for a negative one, `f64` otherwise (`-0` included).
    #[inline]
    fn number(&mut self) -> Result<Number> {
        let bytes = self.bytes();
        let negative = bytes.get(self.index) == Some(&b'-');
        let first = self.index + usize::from(negative);
        let mut i = first;
        let mut value: u64 = 0;
        while let Some(&d) = bytes.get(i) {
            if !d.is_ascii_digit() {
                break;
            }
            value = value.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
            i += 1;
        }
        let digits = i - first;
        let short = (1..=18).contains(&digits)
            && (digits == 1 || bytes[first] != b'0')
            && !matches!(bytes.get(i), Some(b'.' | b'e' | b'E'))
            && !(negative && value == 0);
        if short {
            self.index = i;
            // Up to 18 digits: below 2^63.
            return Ok(if negative { Number::I64(-(value as i64)) } else { Number::U64(value) });
        }
        // A short decimal (`0.8`): its digits and the power of ten are exact in an `f64`, so one
        // division rounds it correctly, and serde_json gets the same bits (with `float_roundtrip`
        // or without, when its own algorithm does this very division).
        if bytes.get(i) == Some(&b'.') && digits >= 1 && (digits == 1 || bytes[first] != b'0') {
            let mut j = i + 1;
            let mut significand = value;
            while let Some(&d) = bytes.get(j) {
                if !d.is_ascii_digit() {
                    break;
                }
                significand = significand.wrapping_mul(10).wrapping_add(u64::from(d - b'0'));
                j += 1;
            }
            let fraction = j - i - 1;
            if fraction >= 1 && digits + fraction <= 15 && !matches!(bytes.get(j), Some(b'e' | b'E')) {
                self.index = j;
                let f = significand as f64 / EXACT_POW10[fraction];
                return Ok(Number::F64(if negative { -f } else { f }));
            }
        }
        self.long_number()
    }

    /// Any other number, parsed by `serde_json` from its text.
    #[cold]
    #[inline(never)]
    fn long_number(&mut self) -> Result<Number> {
        let start = self.index;
        let Some(end) = number_end(self.bytes(), start) else { return Err(self.delegated(start, Token::Value)) };
        match serde_json::from_str::<serde_json::Number>(&self.text[start..end]) {
            Ok(n) => {
                self.index = end;
                Ok(match (n.as_u64(), n.as_i64(), n.as_f64()) {
                    (Some(u), _, _) if n.is_u64() => Number::U64(u),
                    (_, Some(i), _) if n.is_i64() => Number::I64(i),
                    (_, _, Some(f)) => Number::F64(f),
                    _ => return Err(self.delegated(start, Token::Value)),
                })
            }
            Err(_) => Err(self.delegated(start, Token::Value)),
        }
    }

    /// `serde_json`'s `peek_invalid_type`: the value at the index read, and named in the error.
    #[cold]
    #[inline(never)]
    fn peek_invalid_type(&mut self, expected: &dyn de::Expected) -> Error {
        let error = match self.peek().unwrap_or(0) {
            b'n' => match self.ident(b"null") {
                Ok(()) => de::Error::invalid_type(Unexpected::Unit, expected),
                Err(error) => return error,
            },
            b't' => match self.ident(b"true") {
                Ok(()) => de::Error::invalid_type(Unexpected::Bool(true), expected),
                Err(error) => return error,
            },
            b'f' => match self.ident(b"false") {
                Ok(()) => de::Error::invalid_type(Unexpected::Bool(false), expected),
                Err(error) => return error,
            },
            b'-' | b'0'..=b'9' => match self.number() {
                Ok(n) => de::Error::invalid_type(n.unexpected(), expected),
                Err(error) => return error,
            },
            b'"' => {
                self.index += 1;
                match self.string() {
                    Ok(s) => de::Error::invalid_type(Unexpected::Str(s.as_str()), expected),
                    Err(error) => return error,
                }
            }
            b'[' => de::Error::invalid_type(Unexpected::Seq, expected),
            b'{' => de::Error::invalid_type(Unexpected::Map, expected),
            _ => self.peek_error(EXPECTED_VALUE),
        };
        self.fix(error)
    }

    /// One level deeper (the bracket at the index, stepped over).
    #[inline]
    fn enter(&mut self) -> Result<()> {
        // Saturating: after this error the levels are not given back (as with serde_json), and a
        // visitor that went on reading would otherwise take the count below zero.
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            return Err(self.peek_error(RECURSION));
        }
        self.index += 1;
        Ok(())
    }

    /// An array given to `visitor`, its `[` at the index; the closing bracket is read even when
    /// the visitor fails, as `serde_json` does.
    #[inline(always)]
    fn array<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        tri!(self.enter());
        let ret = visitor.visit_seq(Seq { de: self, first: true });
        self.depth += 1;
        let end = self.end_seq();
        match (ret, end) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(error), _) | (_, Err(error)) => Err(error),
        }
    }

    /// An object given to `visitor`, its `{` at the index.
    #[inline(always)]
    fn object<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        tri!(self.enter());
        let ret = visitor.visit_map(Map { de: self, first: true });
        self.depth += 1;
        let end = self.end_map();
        match (ret, end) {
            (Ok(value), Ok(())) => Ok(value),
            (Err(error), _) | (_, Err(error)) => Err(error),
        }
    }

    #[inline]
    fn end_seq(&mut self) -> Result<()> {
        match self.parse_whitespace() {
            Some(b']') => {
                self.index += 1;
                Ok(())
            }
            Some(b',') => {
                self.index += 1;
                match self.parse_whitespace() {
                    Some(b']') => Err(self.peek_error(TRAILING_COMMA)),
                    _ => Err(self.peek_error(TRAILING_CHARACTERS)),
                }
            }
            Some(_) => Err(self.peek_error(TRAILING_CHARACTERS)),
            None => Err(self.peek_error(EOF_LIST)),
        }
    }

    #[inline]
    fn end_map(&mut self) -> Result<()> {
        match self.parse_whitespace() {
            Some(b'}') => {
                self.index += 1;
                Ok(())
            }
            Some(b',') => Err(self.peek_error(TRAILING_COMMA)),
            Some(_) => Err(self.peek_error(TRAILING_CHARACTERS)),
            None => Err(self.peek_error(EOF_OBJECT)),
        }
    }

    #[inline]
    fn object_colon(&mut self) -> Result<()> {
        match self.parse_whitespace() {
            Some(b':') => {
                self.index += 1;
                Ok(())
            }
            Some(_) => Err(self.peek_error(EXPECTED_COLON)),
            None => Err(self.peek_error(EOF_OBJECT)),
        }
    }

    /// Steps over one value, as `serde_json`'s `ignore_value` does (nesting unbounded, a `\u`
    /// escape's surrogates unchecked, numbers not parsed); its error on anything else.
    fn skip_value(&mut self) -> Result<()> {
        let start = self.index;
        let mut frames = std::mem::take(&mut self.scratch);
        frames.clear();
        let skipped = self.skip(&mut frames);
        self.scratch = frames;
        match skipped {
            Some(()) => Ok(()),
            None => Err(self.delegated(start, Token::Skipped)),
        }
    }

    /// [`skip_value`](Self::skip_value)'s walk, the open brackets kept in `frames`.
    fn skip(&mut self, frames: &mut Vec<u8>) -> Option<()> {
        let bytes = self.bytes();
        loop {
            // A value.
            match self.parse_whitespace()? {
                b'"' => {
                    self.index += 1;
                    self.skip_string()?;
                }
                b'n' => self.skip_word(b"null")?,
                b't' => self.skip_word(b"true")?,
                b'f' => self.skip_word(b"false")?,
                b'-' | b'0'..=b'9' => self.index = number_end(bytes, self.index)?,
                open @ (b'[' | b'{') => {
                    self.index += 1;
                    let close = if open == b'[' { b']' } else { b'}' };
                    if self.parse_whitespace()? == close {
                        self.index += 1;
                    } else {
                        frames.push(open);
                        if open == b'{' {
                            self.skip_key()?;
                        }
                        continue;
                    }
                }
                _ => return None,
            }
            // After a value: a comma, or the ends of the arrays and objects it closes.
            loop {
                let Some(&frame) = frames.last() else { return Some(()) };
                match self.parse_whitespace()? {
                    b',' => {
                        self.index += 1;
                        if frame == b'{' {
                            self.parse_whitespace()?;
                            self.skip_key()?;
                        }
                        break;
                    }
                    b']' if frame == b'[' => {}
                    b'}' if frame == b'{' => {}
                    _ => return None,
                }
                self.index += 1;
                frames.pop();
            }
        }
    }

    /// An object's key and its colon, skipped (the index at the key's quote).
    fn skip_key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.index += 1;
        self.skip_string()?;
        if self.parse_whitespace()? != b':' {
            return None;
        }
        self.index += 1;
        Some(())
    }

    fn skip_word(&mut self, word: &[u8]) -> Option<()> {
        self.bytes()[self.index..].starts_with(word).then(|| self.index += word.len())
    }

    /// Steps over a string, the index just after its opening quote: a `\u` needs four hex
    /// digits, nothing more (what `serde_json` checks when it skips).
    fn skip_string(&mut self) -> Option<()> {
        let bytes = self.bytes();
        let mut i = self.index;
        loop {
            i += stop(&bytes[i..]);
            match bytes.get(i)? {
                b'"' => {
                    self.index = i + 1;
                    return Some(());
                }
                b'\\' => match bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        hex4(bytes, i + 2)?;
                        i += 6;
                    }
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    /// The raw-value protocol, as `serde_json` answers it: a map of one entry, the token and the
    /// value's text (the whitespace before it left out).
    fn raw_value<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        self.parse_whitespace();
        let start = self.index;
        tri!(self.skip_value());
        visitor.visit_map(Raw { text: Some(&self.text[start..self.index]) })
    }

    /// A number for a visitor that asked for one; `serde_json`'s `deserialize_number`.
    fn deserialize_number<V: Visitor<'de>>(&mut self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'-' | b'0'..=b'9') => tri!(self.number()).visit(visitor),
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }

    /// A 128-bit integer, read as `serde_json` reads one: digits only, no fraction.
    fn deserialize_int128<V: Visitor<'de>>(&mut self, visitor: V, signed: bool) -> Result<V::Value> {
        let negative = match self.parse_whitespace() {
            None => return Err(self.peek_error(EOF_VALUE)),
            Some(b'-') if !signed => return Err(self.peek_error(OUT_OF_RANGE)),
            Some(b'-') => {
                self.index += 1;
                true
            }
            Some(_) => false,
        };
        let bytes = self.bytes();
        let start = self.index;
        match bytes.get(start).copied().unwrap_or(0) {
            b'0' => {
                self.index += 1;
                if bytes.get(self.index).is_some_and(u8::is_ascii_digit) {
                    return Err(self.peek_error(INVALID_NUMBER));
                }
            }
            b'1'..=b'9' => {
                self.index += 1;
                while bytes.get(self.index).is_some_and(u8::is_ascii_digit) {
                    self.index += 1;
                }
            }
            _ => {
                self.index = (self.index + 1).min(bytes.len());
                return Err(self.error(INVALID_NUMBER));
            }
        }
        let digits = &self.text[start..self.index];
        let value = if signed {
            let text = if negative { format!("-{digits}") } else { digits.to_owned() };
            match text.parse::<i128>() {
                Ok(n) => visitor.visit_i128(n),
                Err(_) => return Err(self.error(OUT_OF_RANGE)),
            }
        } else {
            match digits.parse::<u128>() {
                Ok(n) => visitor.visit_u128(n),
                Err(_) => return Err(self.error(OUT_OF_RANGE)),
            }
        };
        match value {
            Ok(value) => Ok(value),
            Err(error) => Err(self.fix(error)),
        }
    }
}

/// Where `serde_json`'s reading stopped when it gave `message` at byte `at` of `bytes`: its
/// `error` is placed at its index, its `peek_error` one byte past it. Which one a message comes
/// from is known from the message, except for `invalid number`, which is a peek after a leading
/// zero (a digit follows) and after a decimal point (no digit follows), and otherwise not.
fn stopped_at(bytes: &[u8], message: &str, at: usize) -> usize {
    let peeked = match message {
        EXPECTED_VALUE
        | EXPECTED_LIST_COMMA
        | EXPECTED_OBJECT_COMMA
        | KEY_MUST_BE_STRING
        | EXPECTED_COLON
        | TRAILING_COMMA
        | TRAILING_CHARACTERS => true,
        INVALID_NUMBER => at >= 1 && (bytes[at - 1].is_ascii_digit() || (at >= 2 && bytes[at - 2] == b'.')),
        _ => false,
    };
    if peeked && at > 0 {
        at - 1
    } else {
        at
    }
}

/// The index of the first `"`, `\` or control byte in `bytes`, or its length: the encoder's
/// scan (what a string escapes is what ends a run of one).
#[inline(always)]
fn stop(bytes: &[u8]) -> usize {
    super::scan::clean_prefix(bytes)
}

/// The value of four hex digits at `at`.
#[inline]
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, &d| Some(acc << 4 | (d as char).to_digit(16)?))
}

/// The code point of the `\u` escape whose digits start at `at`, and how many bytes it takes
/// (a surrogate pair is two escapes). `None` where `serde_json` fails: a lone surrogate, unless
/// `raw`, where it is taken as it stands.
#[inline]
fn unicode(bytes: &[u8], at: usize, raw: bool) -> Option<(u32, usize)> {
    let high = hex4(bytes, at)?;
    match high {
        0xD800..=0xDBFF => {
            if bytes.get(at + 4..at + 6) == Some(b"\\u") {
                if let Some(low @ 0xDC00..=0xDFFF) = hex4(bytes, at + 6) {
                    return Some((0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), 10));
                }
            }
            raw.then_some((high, 4))
        }
        0xDC00..=0xDFFF => raw.then_some((high, 4)),
        _ => Some((high, 4)),
    }
}

/// Appends code point `code` in UTF-8 (WTF-8 for a surrogate).
#[inline]
fn push_wtf8(code: u32, out: &mut Vec<u8>) {
    if let Some(c) = char::from_u32(code) {
        out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
    } else {
        out.extend_from_slice(&[
            0xE0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3F) as u8,
            0x80 | (code & 0x3F) as u8,
        ]);
    }
}

/// The end of the number that starts at `at`, when it is one by `serde_json`'s grammar (one
/// leading zero at most, digits after a point and in an exponent).
fn number_end(bytes: &[u8], at: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        let start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        (i > start).then_some(i)
    };
    let mut i = at + usize::from(bytes.get(at) == Some(&b'-'));
    i = match bytes.get(i)? {
        b'0' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => return None,
        b'0' => i + 1,
        b'1'..=b'9' => digits(i)?,
        _ => return None,
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
    Some(i)
}

impl<'de> de::Deserializer<'de> for &mut Reader<'de> {
    type Error = Error;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'"') => {
                    self.index += 1;
                    self.visit_string(visitor)
                }
                Some(b'{') => self.object(visitor),
                Some(b'[') => self.array(visitor),
                Some(b'-' | b'0'..=b'9') => tri!(self.number()).visit(visitor),
                Some(b'n') => {
                    tri!(self.ident(b"null"));
                    visitor.visit_unit()
                }
                Some(b't') => {
                    tri!(self.ident(b"true"));
                    visitor.visit_bool(true)
                }
                Some(b'f') => {
                    tri!(self.ident(b"false"));
                    visitor.visit_bool(false)
                }
                Some(_) => Err(self.peek_error(EXPECTED_VALUE)),
            }
        )
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b't') => {
                    tri!(self.ident(b"true"));
                    visitor.visit_bool(true)
                }
                Some(b'f') => {
                    tri!(self.ident(b"false"));
                    visitor.visit_bool(false)
                }
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }

    numbers!(deserialize_number);
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_int128(visitor, true)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_int128(visitor, false)
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }
    #[inline]
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'"') => {
                    self.index += 1;
                    self.visit_string(visitor)
                }
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'"') => {
                    self.index += 1;
                    match self.scan_string(true)? {
                        Some((start, end)) => visitor.visit_borrowed_bytes(&self.bytes()[start..end]),
                        None => visitor.visit_bytes(&self.scratch),
                    }
                }
                Some(b'[') => self.deserialize_seq(visitor),
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.deserialize_bytes(visitor)
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.parse_whitespace() {
            Some(b'n') => {
                tri!(self.ident(b"null"));
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'n') => {
                    tri!(self.ident(b"null"));
                    visitor.visit_unit()
                }
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value> {
        if name == RAW_TOKEN {
            return self.raw_value(visitor);
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'[') => self.array(visitor),
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }
    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(self, _: &'static str, _: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'{') => self.object(visitor),
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }
    /// An object only: the schemas' objects are `"type": "object"`. (`serde_json` also fills a
    /// struct from an array of its fields in order; refusing it means no generated type's
    /// `visit_seq` is compiled for this decoder.)
    #[inline]
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        placed!(
            self,
            match self.parse_whitespace() {
                None => return Err(self.peek_error(EOF_VALUE)),
                Some(b'{') => self.object(visitor),
                Some(_) => Err(self.peek_invalid_type(&visitor)),
            }
        )
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.parse_whitespace() {
            Some(b'{') => {
                tri!(self.enter());
                let ret = visitor.visit_enum(Variant { de: &mut *self });
                self.depth += 1;
                let value = tri!(ret);
                match self.parse_whitespace() {
                    Some(b'}') => {
                        self.index += 1;
                        Ok(value)
                    }
                    Some(_) => Err(self.error(EXPECTED_VALUE)),
                    None => Err(self.error(EOF_OBJECT)),
                }
            }
            Some(b'"') => visitor.visit_enum(UnitVariant { de: self }),
            Some(_) => Err(self.peek_error(EXPECTED_VALUE)),
            None => Err(self.peek_error(EOF_VALUE)),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        tri!(self.skip_value());
        visitor.visit_unit()
    }
}

/// The elements of an array.
struct Seq<'a, 'de> {
    de: &'a mut Reader<'de>,
    first: bool,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
    type Error = Error;
    #[inline]
    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let de = &mut *self.de;
        match de.parse_whitespace() {
            None => return Err(de.peek_error(EOF_LIST)),
            Some(b']') => return Ok(None),
            Some(_) if self.first => self.first = false,
            Some(b',') => {
                de.index += 1;
                match de.parse_whitespace() {
                    Some(b']') => return Err(de.peek_error(TRAILING_COMMA)),
                    Some(_) => {}
                    None => return Err(de.peek_error(EOF_VALUE)),
                }
            }
            Some(_) => return Err(de.peek_error(EXPECTED_LIST_COMMA)),
        }
        Ok(Some(tri!(seed.deserialize(de))))
    }
}

/// The entries of an object.
struct Map<'a, 'de> {
    de: &'a mut Reader<'de>,
    first: bool,
}

impl<'de> de::MapAccess<'de> for Map<'_, 'de> {
    type Error = Error;
    #[inline]
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let de = &mut *self.de;
        match de.parse_whitespace() {
            None => return Err(de.peek_error(EOF_OBJECT)),
            Some(b'}') => return Ok(None),
            Some(peek) if self.first => {
                self.first = false;
                if peek != b'"' {
                    return Err(de.peek_error(KEY_MUST_BE_STRING));
                }
            }
            Some(b',') => {
                de.index += 1;
                match de.parse_whitespace() {
                    Some(b'"') => {}
                    Some(b'}') => return Err(de.peek_error(TRAILING_COMMA)),
                    Some(_) => return Err(de.peek_error(KEY_MUST_BE_STRING)),
                    None => return Err(de.peek_error(EOF_VALUE)),
                }
            }
            Some(_) => return Err(de.peek_error(EXPECTED_OBJECT_COMMA)),
        }
        Ok(Some(tri!(seed.deserialize(Key { de }))))
    }
    #[inline]
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        tri!(self.de.object_colon());
        seed.deserialize(&mut *self.de)
    }
}

/// An object's key, its opening quote at the index: a string, or a number or a bool in quotes
/// when the visitor asks for one, as with `serde_json`.
struct Key<'a, 'de> {
    de: &'a mut Reader<'de>,
}

impl<'de> Key<'_, 'de> {
    /// A number in quotes.
    fn number<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.de.index += 1;
        if !matches!(self.de.peek(), Some(b'0'..=b'9' | b'-')) {
            return Err(self.de.error(EXPECTED_NUMERIC_KEY));
        }
        let value = tri!(self.de.deserialize_number(visitor));
        if self.de.peek() != Some(b'"') {
            return Err(self.de.peek_error(EXPECTED_QUOTE));
        }
        self.de.index += 1;
        Ok(value)
    }

    /// A 128-bit integer in quotes.
    fn int128<V: Visitor<'de>>(self, visitor: V, signed: bool) -> Result<V::Value> {
        self.de.index += 1;
        if !matches!(self.de.peek(), Some(b'0'..=b'9' | b'-')) {
            return Err(self.de.error(EXPECTED_NUMERIC_KEY));
        }
        let value = tri!(self.de.deserialize_int128(visitor, signed));
        if self.de.peek() != Some(b'"') {
            return Err(self.de.peek_error(EXPECTED_QUOTE));
        }
        self.de.index += 1;
        Ok(value)
    }
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de> {
    type Error = Error;
    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.de.index += 1;
        self.de.visit_string(visitor)
    }
    numbers!(number);
    fn deserialize_i128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.int128(visitor, true)
    }
    fn deserialize_u128<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        self.int128(visitor, false)
    }
    /// `true` or `false` in quotes; any other key is read as a string and refused.
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let de = self.de;
        let opening = de.index;
        de.index += 1;
        let value = match de.peek() {
            None => return Err(de.peek_error(EOF_VALUE)),
            Some(b't') => {
                de.index += 1;
                tri!(de.key_word(b"rue\""));
                visitor.visit_bool(true)
            }
            Some(b'f') => {
                de.index += 1;
                tri!(de.key_word(b"alse\""));
                visitor.visit_bool(false)
            }
            // serde_json names the string from its second byte on (it has read the first); a
            // string that is not well formed gets the error of the key read as a string, which
            // may be placed differently from serde_json's.
            Some(_) => {
                let s = match de.scan_string(false) {
                    Ok(Some((start, end))) => de.text[start + 1..end].to_owned(),
                    Ok(None) => String::from_utf8_lossy(de.scratch.get(1..).unwrap_or_default()).into_owned(),
                    Err(_) => return Err(de.delegated(opening, Token::Value)),
                };
                Err(de::Error::invalid_type(Unexpected::Str(&s), &visitor))
            }
        };
        match value {
            Ok(value) => Ok(value),
            Err(error) => Err(de.fix(error)),
        }
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(self, name: &'static str, visitor: V) -> Result<V::Value> {
        if name == RAW_TOKEN {
            return self.de.raw_value(visitor);
        }
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        de::Deserializer::deserialize_enum(self.de, name, variants, visitor)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_bytes(self.de, visitor)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_bytes(self.de, visitor)
    }
    serde::forward_to_deserialize_any! {
        char str string unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

impl Reader<'_> {
    /// The rest of a `true`/`false` key, its closing quote included (`serde_json`'s
    /// `parse_ident`: an error at the byte that differs, or at the end).
    fn key_word(&mut self, rest: &[u8]) -> Result<()> {
        for &expected in rest {
            match self.peek() {
                None => return Err(self.error(EOF_VALUE)),
                Some(b) => {
                    self.index += 1;
                    if b != expected {
                        return Err(self.error(EXPECTED_IDENT));
                    }
                }
            }
        }
        Ok(())
    }
}

/// An externally tagged variant written as an object (`{"Variant": …}`).
struct Variant<'a, 'de> {
    de: &'a mut Reader<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'_, 'de> {
    type Error = Error;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        match self.de.parse_whitespace() {
            Some(b'"') => {}
            Some(b'}') => return Err(self.de.peek_error(EXPECTED_VALUE)),
            Some(_) => return Err(self.de.peek_error(KEY_MUST_BE_STRING)),
            None => return Err(self.de.peek_error(EOF_OBJECT)),
        }
        let value = match seed.deserialize(Key { de: &mut *self.de }) {
            Ok(value) => value,
            Err(error) => return Err(self.de.fix(error)),
        };
        tri!(self.de.object_colon());
        Ok((value, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        <()>::deserialize(self.de)
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        seed.deserialize(self.de)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_seq(self.de, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(self, fields: &'static [&'static str], visitor: V) -> Result<V::Value> {
        de::Deserializer::deserialize_struct(self.de, "", fields, visitor)
    }
}

/// A unit variant written as a string.
struct UnitVariant<'a, 'de> {
    de: &'a mut Reader<'de>,
}

impl<'de> de::EnumAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;
    type Variant = Self;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self)> {
        let variant = tri!(seed.deserialize(&mut *self.de));
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for UnitVariant<'_, 'de> {
    type Error = Error;
    fn unit_variant(self) -> Result<()> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, _: T) -> Result<T::Value> {
        Err(de::Error::invalid_type(Unexpected::UnitVariant, &"newtype variant"))
    }
    fn tuple_variant<V: Visitor<'de>>(self, _: usize, _: V) -> Result<V::Value> {
        Err(de::Error::invalid_type(Unexpected::UnitVariant, &"tuple variant"))
    }
    fn struct_variant<V: Visitor<'de>>(self, _: &'static [&'static str], _: V) -> Result<V::Value> {
        Err(de::Error::invalid_type(Unexpected::UnitVariant, &"struct variant"))
    }
}

/// The raw-value protocol's map: the token, then the text.
struct Raw<'de> {
    text: Option<&'de str>,
}

impl<'de> de::MapAccess<'de> for Raw<'de> {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        if self.text.is_none() {
            return Ok(None);
        }
        // Borrowed (the token is `'static`): a key visitor that keeps borrowed text keeps it
        // without a copy, where `serde_json` hands it over with `visit_str`; both take either.
        Ok(Some(tri!(seed.deserialize(de::value::BorrowedStrDeserializer::new(RAW_TOKEN)))))
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        match self.text.take() {
            Some(text) => seed.deserialize(de::value::BorrowedStrDeserializer::new(text)),
            None => Err(de::Error::custom("value is missing")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::from_str;
    use serde::de::IgnoredAny;
    use serde::Deserialize;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// This decoder and serde_json on `text`: the same value (to its `Debug` text, so to the bit
    /// of every float) or the same error text (position included).
    fn same<'a, T: Deserialize<'a> + std::fmt::Debug>(text: &'a str) -> bool {
        let ours = from_str::<T>(text).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
        let theirs = serde_json::from_str::<T>(text).map(|v| format!("{v:?}")).map_err(|e| e.to_string());
        assert_eq!(ours, theirs, "{text:?}");
        // The position is the error's own, as serde_json's is.
        if let (Err(_), Err(_)) = (&ours, &theirs) {
            let ours = from_str::<T>(text).unwrap_err();
            let theirs = serde_json::from_str::<T>(text).unwrap_err();
            assert_eq!((ours.line(), ours.column()), (theirs.line(), theirs.column()), "{text:?}");
        }
        ours.is_ok()
    }

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
    enum Kind {
        Text,
        ResourceLink,
        Pair(u8, u8),
        Wrapped(String),
        Shape { side: f64 },
    }

    #[derive(Deserialize, Debug)]
    struct Id(#[allow(dead_code)] String);

    #[derive(Deserialize, Debug)]
    #[serde(rename_all = "camelCase")]
    #[allow(dead_code)]
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
        entries: BTreeMap<String, u64>,
        #[serde(default)]
        numbered: BTreeMap<i32, bool>,
        #[serde(default)]
        flags: BTreeMap<bool, i8>,
        #[serde(default)]
        big: Option<i128>,
        #[serde(default)]
        huge: Option<u128>,
        unit: (),
        pair: (u8, String),
        letter: char,
        #[serde(default)]
        any: Value,
    }

    const MESSAGE: &str = r#"{"sessionId":"s-1","kind":"resourceLink","count":7,"delta":-3,"ratio":0.25,"small":255,
        "note":null,"tags":["a","b\n"],"ignored":{"deep":[1,{"x":"\u0041","y":"\ud800"}, 1e999, -0]},"entries":{"k":1,"l\u00e9":2},
        "numbered":{"1":true,"-2":false},"flags":{"true":1,"false":-1},"big":-170141183460469231731687303715884105728,
        "huge":340282366920938463463374607431768211455,
        "nested":{"sessionId":"s-2","kind":{"shape":{"side":2.5}},"count":0,"delta":0,"ratio":1e2,"small":0,"note":"n",
        "tags":[],"nested":null,"unit":null,"pair":[1,"p"],"letter":"z"},"unit":null,"pair":[2,"q"],"letter":"\u00e9",
        "any":{"a":[1,2.5,-3,"x",null,true,{"b":{}}]}}"#;

    #[test]
    fn reads_what_serde_json_reads_as_it_reads_it() {
        let cases = [
            r#"{"a":1,"b":[true,false,null],"c":{"d":"e"}}"#,
            " \t\r\n{ \"a\" : [ 1 , -2 , 3.5 , -0.0 , 1e3 , 1E-3 , -12.5e+2 ] } \n",
            r#""esc \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac \ud83d\ude00 \u0000 end""#,
            r#""héllo wörld — ünïcode ✓ outside escapes""#,
            r#"["a long string that goes over sixteen bytes, and then some more after it", "x"]"#,
            "0",
            "-0",
            "123456789012345678",
            "-123456789012345678",
            "1234567890123456789",
            "18446744073709551615",
            "18446744073709551616",
            "123456789012345678901234567890",
            "-9223372036854775808",
            "-9223372036854775809",
            "0.1",
            "2.2250738585072014e-308",
            "1.7976931348623157e308",
            "9007199254740993",
            "3.141592653589793238462643383279",
            "1e-400",
            "[0.8, -0.8, 0.1, 0.7, 1.25, 123456789.12345, 12345678901234.5, 1234567890123456.5, -0.0, 0.000000000000001]",
            "[9007199254740993.5, 0.30000000000000004, 2.675, 1.005, 100.0, 5e-324]",
            "[]",
            "{}",
            "[[[[[[]]]]]]",
            r#"{"":""}"#,
            r#"{"a":1,"a":2}"#,
        ];
        for text in cases {
            assert!(same::<Value>(text), "{text:?}");
        }
        assert!(same::<Message>(MESSAGE), "{:?}", serde_json::from_str::<Message>(MESSAGE).err());
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Point {
            x: i32,
            y: i32,
        }
        assert!(same::<Point>(r#"{"x":1,"y":2}"#));
        // Not a struct from an array of its fields, which serde_json allows: the schemas' objects
        // are `"type": "object"`, and a decoder that never calls a struct's `visit_seq` does not
        // compile one per generated type. The error is serde_json's wording for a wrong type, at
        // the `[`.
        assert!(serde_json::from_str::<Point>("[1,2]").is_ok());
        let refused = from_str::<Point>(" [1,2]").unwrap_err();
        let string = serde_json::from_str::<String>(" [1,2]").unwrap_err();
        assert_eq!(refused.to_string(), string.to_string().replace("a string", "struct Point"));
        let nested = from_str::<Vec<Point>>(r#"[{"x":1,"y":2},[1,2]]"#).unwrap_err();
        assert_eq!((nested.line(), nested.column()), (1, 15), "at the inner `[`");
        assert!(same::<Vec<Kind>>(r#"["text", {"pair": [1, 2]}, {"wrapped": "w"}, {"shape": {"side": 1}}]"#));
        // Raw values and Meta: the same text.
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        struct Holder<'a> {
            #[serde(borrow)]
            raw: &'a serde_json::value::RawValue,
            boxed: Box<serde_json::value::RawValue>,
            meta: crate::Meta,
        }
        assert!(same::<Holder>(
            r#"{"raw":  [1, {"a" : "b\"c"}, "\ud800"] ,"boxed" : 1e999,"meta": {"k": [1,2], "s":"\u00e9"} }"#
        ));
    }

    #[test]
    fn refuses_what_serde_json_refuses_with_its_words() {
        let cases = [
            "",
            " ",
            "{",
            "}",
            "[",
            "]",
            "[1,]",
            "[,1]",
            "[1,",
            "[1",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":1 \"b\":2}",
            "{a:1}",
            "{,}",
            "{\"a\"",
            "{\"a\":",
            "{\"a\":1",
            "{\"a\":1,",
            "{\"a\":1, 2}",
            "01",
            "-01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+",
            "+1",
            "1.e5",
            "nul",
            "nulx",
            "truee",
            "t",
            "fals",
            "[1] 2",
            "1 2",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"unterminated",
            "\"ends in \\",
            "\"tab\tinside\"",
            "\"nl\ninside\"",
            "[1 2]",
            "{\"a\":}",
            "NaN",
            "Infinity",
            "1e999",
            "-1e999",
            "[1e999]",
            "\"\\ud800\"",
            "\"\\udc00 x\"",
            "\"\\ud800\\u0041\"",
            "\"\\ud800\\ud800\"",
            "\"\\ud800\\n\"",
            "\"\\ud800x\"",
            "\"\\ud800",
            "[\n1,\n2\n,]",
            "{\n\"a\"\n:\n}",
            "[\"a\",\n\"b\\q\"]",
            "[1,\n-]",
            "[1.\n]",
        ];
        for text in cases {
            assert!(!same::<Value>(text), "{text:?}");
            assert!(!same::<Vec<Value>>(text) || text.is_empty(), "{text:?}");
        }
        // Nesting: both stop at the same depth, and skipped values are not limited.
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        for n in [126, 127, 128, 129, 200] {
            same::<Value>(&nested(n));
        }
        assert!(same::<BTreeMap<String, ()>>("{}"));
        #[derive(Deserialize, Debug)]
        struct Empty {}
        assert!(same::<Empty>(&format!("{{\"deep\":{}}}", nested(1000))));
        assert!(!same::<Empty>(&format!("{{\"deep\":{}}}", "[".repeat(1000))));
        // Typed: every kind of mismatch, and where each is placed.
        let mut refused = 0;
        for bad in [
            MESSAGE.replace("\"small\":255", "\"small\":256"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":\"other\""),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":{\"pair\":[1]}"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":{\"text\":null}"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":{\"text\":1}"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":{\"shape\":{\"side\":1},\"x\":1}"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":{\"pair\":5}"),
            MESSAGE.replace("\"kind\":\"resourceLink\"", "\"kind\":7"),
            MESSAGE.replace("\"count\":7,", ""),
            MESSAGE.replace("\"count\":7", "\"count\":-7"),
            MESSAGE.replace("\"count\":7", "\"count\":7.5"),
            MESSAGE.replace("\"count\":7", "\"count\":\"7\""),
            MESSAGE.replace("\"count\":7", "\"count\":null"),
            MESSAGE.replace("\"count\":7", "\"count\":[7]"),
            MESSAGE.replace("\"count\":7", "\"count\":{}"),
            MESSAGE.replace("\"count\":7", "\"count\":true"),
            MESSAGE.replace("\"count\":7", "\"count\":nul"),
            MESSAGE.replace("\"tags\":[\"a\",\"b\\n\"]", "\"tags\":\"a\""),
            MESSAGE.replace("\"tags\":[\"a\",\"b\\n\"]", "\"tags\":[\"a\",1]"),
            MESSAGE.replace("\"tags\":[\"a\",\"b\\n\"]", "\"tags\":[\"a\",\"\\ud800\"]"),
            MESSAGE.replace("\"pair\":[2,\"q\"]", "\"pair\":[2]"),
            MESSAGE.replace("\"pair\":[2,\"q\"]", "\"pair\":[2,\"q\",3]"),
            MESSAGE.replace("\"letter\":\"\\u00e9\"", "\"letter\":\"ab\""),
            MESSAGE.replace("\"unit\":null,\"pair\"", "\"unit\":0,\"pair\""),
            MESSAGE.replace("\"numbered\":{\"1\":true", "\"numbered\":{\"x\":true"),
            MESSAGE.replace("\"numbered\":{\"1\":true", "\"numbered\":{\"1x\":true"),
            MESSAGE.replace("\"numbered\":{\"1\":true", "\"numbered\":{\"1.5\":true"),
            MESSAGE.replace("\"flags\":{\"true\":1", "\"flags\":{\"tru\":1"),
            MESSAGE.replace("\"flags\":{\"true\":1", "\"flags\":{\"yes\":1"),
            MESSAGE.replace("\"big\":-1", "\"big\":-91"),
            MESSAGE.replace("\"big\":-1", "\"big\":1.5"),
            MESSAGE.replace("\"huge\":3", "\"huge\":-3"),
            MESSAGE.replace("\"huge\":3", "\"huge\":93"),
            MESSAGE.replace("\"sessionId\":\"s-1\"", "\"sessionId\":\"s-1\",\"sessionId\":\"s-2\""),
            MESSAGE.replace("\"ignored\":{\"deep\"", "\"ignored\":{\"deep\"]"),
            MESSAGE.replace("1e999", "1e99x"),
            format!("{MESSAGE} x"),
            format!("{MESSAGE},"),
        ] {
            refused += usize::from(!same::<Message>(&bad));
        }
        // `{"text": null}` is the unit variant to serde_json too; every other one is refused.
        assert_eq!(refused, 37);
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
            match rng.below(13) {
                0 => out.push_str(["\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t"][rng.below(8) as usize]),
                1 => out.push_str(&format!("\\u{:04x}", rng.below(0xD800))),
                2 => out.push_str("\\ud83d\\ude00"),
                3 => out.push(['é', '€', '😀', 'ß'][rng.below(4) as usize]),
                4 if rng.below(20) == 0 => out.push_str(["\\ud800", "\\udfff", "\\u00g0"][rng.below(3) as usize]),
                _ => out.push((b'a' + rng.below(26) as u8) as char),
            }
        }
        out.push('"');
    }

    /// What a union does with its body's error (`union::in_variant`): takes its position off and
    /// words it again, so that the deserializer places it where it then stands, which is where
    /// reading stopped.
    #[derive(Debug)]
    #[allow(dead_code)]
    struct Reworded<T>(T);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Reworded<T> {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            T::deserialize(deserializer).map(Reworded).map_err(|e| {
                let text = e.to_string();
                serde::de::Error::custom(format_args!("{} (reworded)", crate::codec::without_position(&text)))
            })
        }
    }

    #[test]
    fn random_and_damaged_json_read_the_same() {
        #[derive(Deserialize, Debug)]
        #[allow(dead_code)]
        enum Shape {
            #[serde(rename = "a")]
            A(Value),
        }
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let (mut valid, mut damaged_valid, mut damaged_invalid) = (0, 0, 0);
        for _ in 0..4000 {
            let mut text = String::new();
            random_json(&mut rng, 0, &mut text);
            valid += usize::from(same::<Value>(&text));
            same::<Vec<Value>>(&text);
            same::<BTreeMap<String, Value>>(&text);
            same::<Option<String>>(&text);
            same::<Shape>(&text);
            same::<Box<serde_json::value::RawValue>>(&text);
            // Damage it: a byte removed, or one of JSON's own bytes put in.
            let mut bytes = text.clone().into_bytes();
            let at = rng.below(bytes.len() as u64 + 1) as usize;
            if rng.below(2) == 0 && at < bytes.len() {
                bytes.remove(at);
            } else {
                bytes.insert(at.min(bytes.len()), b"{}[],:\"\\0-e.\n u"[rng.below(15) as usize]);
            }
            if let Ok(damaged) = String::from_utf8(bytes) {
                if same::<Value>(&damaged) {
                    damaged_valid += 1;
                } else {
                    damaged_invalid += 1;
                }
                same::<Vec<Value>>(&damaged);
                same::<BTreeMap<String, Value>>(&damaged);
                same::<Vec<Reworded<Value>>>(&damaged);
                same::<BTreeMap<String, Reworded<Value>>>(&damaged);
                same::<BTreeMap<String, Reworded<Vec<Reworded<Value>>>>>(&damaged);
                same::<Vec<Reworded<BTreeMap<String, IgnoredAny>>>>(&damaged);
                same::<Box<serde_json::value::RawValue>>(&damaged);
            }
        }
        // Most random texts are valid (the rare bad escape is not); damage leaves some valid.
        assert!(
            valid > 3000 && damaged_valid > 100 && damaged_invalid > 2000,
            "{valid} {damaged_valid} {damaged_invalid}"
        );
    }
}
