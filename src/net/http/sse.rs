//! Server-sent events, parsed incrementally: chunks in, the `data` of each event out. Each byte
//! is looked at once (the line being read is the only buffer, and a finished line is consumed
//! before the next is started), so the time is linear in the input however it is chunked.
//!
//! What ACP's streams need of the format (WHATWG HTML, "Server-sent events"): lines end in LF,
//! CRLF or a bare CR; `data:` lines (one optional space after the colon) are joined with `\n`; a
//! blank line ends the event; comments (`:` keep-alives) and other fields are ignored. A UTF-8
//! BOM before a line is skipped, as the TypeScript SDK does.

use std::fmt;

/// Bytes a line may have beyond its data: a BOM and `data: `.
const LINE_OVERHEAD: usize = 9;
/// A line buffer that grew past this is given back after its line, not kept for the next.
const KEEP_LINE_CAPACITY: usize = 64 << 10;

/// An event larger than the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit, in bytes of data.
    pub max: usize,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an SSE event is larger than {} bytes", self.max)
    }
}

impl std::error::Error for TooLarge {}

/// An incremental SSE parser yielding each event's data.
#[derive(Debug)]
pub struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The last chunk ended in CR: an LF starting the next one belongs to that line end.
    after_cr: bool,
    max: usize,
}

impl SseParser {
    /// A parser whose events hold at most `max` bytes of data.
    pub fn new(max: usize) -> Self {
        SseParser { line: Vec::new(), data: Vec::new(), has_data: false, after_cr: false, max }
    }

    /// Parses `chunk`, appending the data of each event it completes to `events`.
    pub fn push(&mut self, mut chunk: &[u8], events: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
        if std::mem::take(&mut self.after_cr) && chunk.first() == Some(&b'\n') {
            chunk = &chunk[1..];
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            self.extend_line(&chunk[..end])?;
            self.end_line(events)?;
            let mut next = end + 1;
            if chunk[end] == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            chunk = &chunk[next..];
        }
        self.extend_line(chunk)
    }

    /// The stream ended: a last line without its line end counts, and so does an event without
    /// its blank line (as in the TypeScript SDK).
    pub fn finish(&mut self, events: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
        self.after_cr = false;
        if !self.line.is_empty() {
            self.end_line(events)?;
        }
        self.dispatch(events);
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), TooLarge> {
        if self.line.len() + bytes.len() > self.max.saturating_add(LINE_OVERHEAD) {
            return Err(TooLarge { max: self.max });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
        let line = self.line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&self.line);
        let result = if line.is_empty() {
            self.dispatch(events);
            Ok(())
        } else if let Some(value) = line.strip_prefix(b"data:") {
            let value = value.strip_prefix(b" ").unwrap_or(value);
            let separator = usize::from(self.has_data);
            if self.data.len() + separator + value.len() > self.max {
                Err(TooLarge { max: self.max })
            } else {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
                Ok(())
            }
        } else {
            // A comment or a field ACP does not use (`event`, `id`, `retry`).
            Ok(())
        };
        if self.line.capacity() > KEEP_LINE_CAPACITY {
            self.line = Vec::new();
        } else {
            self.line.clear();
        }
        result
    }

    fn dispatch(&mut self, events: &mut Vec<Vec<u8>>) {
        if std::mem::take(&mut self.has_data) {
            events.push(std::mem::take(&mut self.data));
        }
    }
}
