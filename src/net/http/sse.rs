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
pub(super) struct TooLarge {
    /// The limit, in bytes of data.
    pub(super) max: usize,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an SSE event is larger than {} bytes", self.max)
    }
}

impl std::error::Error for TooLarge {}

/// An incremental SSE parser yielding each event's data.
#[derive(Debug)]
pub(super) struct SseParser {
    line: Vec<u8>,
    data: Vec<u8>,
    has_data: bool,
    /// The last chunk ended in CR: an LF starting the next one belongs to that line end.
    after_cr: bool,
    max: usize,
}

impl SseParser {
    /// A parser whose events hold at most `max` bytes of data.
    pub(super) fn new(max: usize) -> Self {
        SseParser { line: Vec::new(), data: Vec::new(), has_data: false, after_cr: false, max }
    }

    /// Parses `chunk`, appending the data of each event it completes to `events`.
    pub(super) fn push(&mut self, mut chunk: &[u8], events: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
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
    pub(super) fn finish(&mut self, events: &mut Vec<Vec<u8>>) -> Result<(), TooLarge> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn parse_all(chunks: &[&[u8]], max: usize) -> Vec<String> {
        let mut parser = SseParser::new(max);
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push(chunk, &mut events).unwrap();
        }
        parser.finish(&mut events).unwrap();
        events.into_iter().map(|e| String::from_utf8(e).unwrap()).collect()
    }

    #[test]
    fn sse_line_ends_multi_line_data_and_comments() {
        let stream = b": keep-alive\n\ndata: {\"a\":1}\n\ndata: one\r\ndata:two\r\n\r\nevent: message\rid: 7\rdata: x\r\rretry: 10\n:\n\n";
        assert_eq!(parse_all(&[stream], 1 << 20), ["{\"a\":1}", "one\ntwo", "x"]);
        // The same stream one byte at a time: CRLF split across chunks is still one line end.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse_all(&bytes, 1 << 20), ["{\"a\":1}", "one\ntwo", "x"]);
        // A last event without its blank line still counts at the end of the stream.
        assert_eq!(parse_all(&[b"data: a\n\ndata: b"], 1 << 20), ["a", "b"]);
        assert_eq!(
            parse_all(&[b"data: a\r\n\r\ndata:b\rdata: c\r\r: keep\n\nid: 1\ndata: d\n\n"], 1 << 20),
            ["a", "b\nc", "d"]
        );
        // A CR at the end of a chunk, its LF at the start of the next: one line end, not two.
        assert_eq!(parse_all(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], 1 << 20), ["a\nb"]);
    }

    #[test]
    fn sse_event_larger_than_the_limit_is_an_error() {
        let mut parser = SseParser::new(8);
        let mut events = Vec::new();
        parser.push(b"data: 12345678\n\n", &mut events).unwrap();
        assert_eq!(events.len(), 1);
        assert!(parser.push(b"data: 1234", &mut events).is_ok());
        assert!(parser.push(b"56789\n", &mut events).is_err(), "9 bytes of data passed a limit of 8");
        // Nor does a long line wait for its end to be refused.
        let mut parser = SseParser::new(8);
        assert!(parser.push(&[b'x'; 64], &mut events).is_err(), "a 64-byte line was buffered under a limit of 8");
        // Data lines of one event count together, with the newline that joins them.
        let mut parser = SseParser::new(4);
        parser.push(b"data: abcd\n\n", &mut events).unwrap();
        assert_eq!(parser.push(b"data: ab\ndata: cd\n", &mut events), Err(TooLarge { max: 4 }));
    }

    #[test]
    fn sse_ten_megabyte_event_in_small_chunks_is_linear() {
        let size = 10 << 20;
        let mut stream = b"data: ".to_vec();
        stream.resize(6 + size, b'x');
        stream.extend_from_slice(b"\n\n");
        let mut parser = SseParser::new(32 << 20);
        let mut events = Vec::new();
        let start = Instant::now();
        // 1 KiB chunks: a parser that re-scans what it buffered would read ~50 GB here.
        for chunk in stream.chunks(1024) {
            parser.push(chunk, &mut events).unwrap();
        }
        let elapsed = start.elapsed();
        println!("a 10 MiB SSE event in 1 KiB chunks parsed in {elapsed:?}");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].len(), size);
        assert!(elapsed < Duration::from_secs(10), "10 MiB took {elapsed:?}: not linear");
    }
}
