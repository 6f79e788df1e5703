//! Newline-delimited JSON framing: one message per line, read in time linear in its size, with a
//! maximum size. A longer line is skipped as it streams past (only its first bytes are kept, to
//! find its `id`), so a peer cannot make us hold more than the limit.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

/// How much of an over-long line is kept to look for its `id` (and what `acp tap` logs of it).
pub const PREFIX: usize = 4096;

/// One frame read from the peer.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A complete line, without its newline.
    Line(Vec<u8>),
    /// A line longer than the limit, skipped; what its first bytes said about it.
    TooLong {
        /// The id and whether a method came before the cut.
        prefix: Prefix,
        /// How many bytes the line had.
        len: usize,
    },
}

/// Reads frames from `reader`, never holding more than `max` bytes of one line.
pub struct FrameReader<R> {
    reader: R,
    max: usize,
    line: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> FrameReader<R> {
    /// A reader of lines of at most `max` bytes.
    pub fn new(reader: R, max: usize) -> Self {
        FrameReader { reader, max, line: Vec::new() }
    }

    /// The next frame; `None` at end of input. An unterminated last line counts as a line.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        self.line.clear();
        let mut skipped: Option<usize> = None; // Some(total) once the line went over the limit
        loop {
            let buf = self.reader.fill_buf().await?;
            if buf.is_empty() {
                return Ok(match skipped {
                    Some(len) => Some(Frame::TooLong { prefix: scan_prefix(&self.line), len }),
                    // The last line may lack its newline; it is read like any other.
                    None => self.take_line(),
                });
            }
            let newline = memchr::memchr(b'\n', buf);
            // The common case, a whole line in the buffer: one allocation of its size.
            if let (Some(i), None, true) = (newline, skipped, self.line.is_empty()) {
                if i <= self.max {
                    let mut line = buf[..i].to_vec();
                    self.reader.consume(i + 1);
                    if line.last() == Some(&b'\r') {
                        line.pop();
                    }
                    if line.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    return Ok(Some(Frame::Line(line)));
                }
            }
            let (chunk, done) = match newline {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let used = done.unwrap_or(chunk.len());
            match &mut skipped {
                Some(total) => {
                    *total += chunk.len();
                    // The kept prefix is the line's first bytes whatever the chunk sizes were.
                    let room = PREFIX.saturating_sub(self.line.len()).min(chunk.len());
                    self.line.extend_from_slice(&chunk[..room]);
                }
                None if self.line.len() + chunk.len() > self.max => {
                    let total = self.line.len() + chunk.len();
                    let room = PREFIX.saturating_sub(self.line.len()).min(chunk.len());
                    self.line.extend_from_slice(&chunk[..room]);
                    self.line.truncate(PREFIX);
                    self.line.shrink_to(PREFIX);
                    skipped = Some(total);
                }
                None => self.line.extend_from_slice(chunk),
            }
            self.reader.consume(used);
            if done.is_some() {
                if let Some(len) = skipped {
                    return Ok(Some(Frame::TooLong { prefix: scan_prefix(&self.line), len }));
                }
                match self.take_line() {
                    Some(frame) => return Ok(Some(frame)),
                    None => continue,
                }
            }
        }
    }

    /// The line read so far, without a trailing `\r`; `None` for a blank line (not a message).
    fn take_line(&mut self) -> Option<Frame> {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        if self.line.iter().all(u8::is_ascii_whitespace) {
            self.line.clear();
            return None;
        }
        Some(Frame::Line(std::mem::take(&mut self.line)))
    }
}

/// Messages smaller than this are gathered into one write of up to about this size.
pub(crate) const WRITE_BATCH: usize = 64 << 10;

/// Writes messages, each with its newline, in as few writes as it can: small ones are copied into
/// `batch` and written together, a large one is written from where it is. Flushes at the end.
pub(crate) async fn write_frames<W: AsyncWrite + Unpin>(
    writer: &mut W,
    messages: impl IntoIterator<Item = Vec<u8>>,
    batch: &mut Vec<u8>,
) -> std::io::Result<()> {
    batch.clear();
    for message in messages {
        if message.len() >= WRITE_BATCH {
            if !batch.is_empty() {
                writer.write_all(batch).await?;
                batch.clear();
            }
            writer.write_all(&message).await?;
            writer.write_all(b"\n").await?;
        } else {
            batch.extend_from_slice(&message);
            batch.push(b'\n');
            if batch.len() >= WRITE_BATCH {
                writer.write_all(batch).await?;
                batch.clear();
            }
        }
    }
    if !batch.is_empty() {
        writer.write_all(batch).await?;
    }
    // A large batch buffer is not kept for good.
    batch.clear();
    batch.shrink_to(WRITE_BATCH * 2);
    writer.flush().await
}

/// What the first bytes of a cut message say: its `id` and whether it has a `method`.
#[derive(Debug, Default, PartialEq)]
pub struct Prefix {
    /// The id's JSON text, if it was complete before the cut.
    pub id: Option<String>,
    /// Whether a top-level `method` member started before the cut.
    pub has_method: bool,
}

/// Scans the top-level members of a (possibly truncated) JSON object, skipping over values.
pub fn scan_prefix(bytes: &[u8]) -> Prefix {
    let mut out = Prefix::default();
    let mut s = Scan { b: bytes, i: 0 };
    s.ws();
    if s.eat(b'{').is_none() {
        return out;
    }
    loop {
        s.ws();
        let Some(key) = s.string() else { return out };
        out.has_method |= key == b"\"method\"";
        s.ws();
        if s.eat(b':').is_none() {
            return out;
        }
        s.ws();
        let start = s.i;
        if s.value().is_none() {
            return out;
        }
        if key == b"\"id\"" {
            out.id = std::str::from_utf8(&bytes[start..s.i]).ok().map(str::to_string);
        }
        s.ws();
        if s.eat(b',').is_none() {
            return out;
        }
    }
}

/// How deeply arrays and objects may nest in one message. serde_json gives up at 128 levels; a
/// smaller limit checked on the bytes first means that everything accepted also decodes, and
/// that the peer is told why a message was refused.
pub const MAX_DEPTH: usize = 100;

/// Whether arrays and objects in `bytes` nest more than `limit` deep (brackets inside strings do
/// not count). One pass, no allocation, for any bytes.
pub(crate) fn nesting_exceeds(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        i += 1;
        match b {
            // A string is skipped to its closing quote (with memchr: long texts are most of a
            // large message), escapes and all.
            b'"' => loop {
                match memchr::memchr2(b'"', b'\\', &bytes[i..]) {
                    None => return false,
                    Some(j) if bytes[i + j] == b'"' => {
                        i += j + 1;
                        break;
                    }
                    Some(j) => i += j + 2,
                }
                if i >= bytes.len() {
                    return false;
                }
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }
    /// A string, returned with its quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        self.eat(b'"')?;
        loop {
            match self.peek()? {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(&self.b[start..self.i]);
                }
                _ => self.i += 1,
            }
        }
    }
    /// Skips one value; `None` if the bytes end inside it.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(|_| ()),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while matches!(self.peek(), Some(c) if !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
                {
                    self.i += 1;
                }
                // A scalar that runs to the end of the kept bytes may have been cut.
                (self.i > start && self.i < self.b.len()).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_gives_the_id_and_whether_a_method_came_first() {
        let p = |b: &[u8]| scan_prefix(b);
        assert_eq!(
            p(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":{"a":"#),
            Prefix { id: Some("7".into()), has_method: true }
        );
        assert_eq!(p(br#"{"params":{"a":[1,{"id":3}]},"id":"q\"1"}"#).id, Some(r#""q\"1""#.into()));
        assert_eq!(p(br#"{"method":"x","params":{"text":"aaaa"#), Prefix { id: None, has_method: true });
        assert_eq!(p(br#"{"id":0,"result":"xxxx"#), Prefix { id: Some("0".into()), has_method: false });
        assert_eq!(p(br#"{"id":12"#).id, None, "a number cut at the end may be longer");
        assert_eq!(p(b"[1,2]"), Prefix::default());
    }

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = FrameReader::new(tokio::io::BufReader::with_capacity(16, input), max);
        let mut out = Vec::new();
        while let Some(f) = r.next().await.expect("in-memory reads succeed") {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn write_frames_gives_one_line_per_message_in_order() {
        let large = vec![b'x'; WRITE_BATCH + 3];
        let messages = vec![b"a".to_vec(), large.clone(), b"b".to_vec(), vec![b'y'; WRITE_BATCH - 1], b"c".to_vec()];
        let mut out = Vec::new();
        let mut batch = Vec::new();
        write_frames(&mut out, messages.clone(), &mut batch).await.expect("writes to memory");
        let expected: Vec<u8> = messages.iter().flat_map(|m| m.iter().copied().chain([b'\n'])).collect();
        assert_eq!(out, expected);
        assert!(batch.is_empty() && batch.capacity() <= 2 * WRITE_BATCH);
        // And the reader gets them back.
        let lines: Vec<Frame> = frames(&out, 2 * WRITE_BATCH).await;
        assert_eq!(lines, messages.into_iter().map(Frame::Line).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn lines_blank_lines_crlf_and_unterminated_tail() {
        let got = frames(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\n{\"c\":3}", 1024).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"{\"a\":1}".to_vec()),
                Frame::Line(b"{\"b\":2}".to_vec()),
                Frame::Line(b"{\"c\":3}".to_vec())
            ]
        );
    }

    #[tokio::test]
    async fn over_long_line_is_skipped_with_its_id_and_reading_goes_on() {
        let long =
            format!("{{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"m\",\"params\":\"{}\"}}\n", "x".repeat(10_000));
        let input = format!("{long}{{\"ok\":true}}\n");
        let got = frames(input.as_bytes(), 1000).await;
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            Frame::TooLong { prefix: Prefix { id: Some("42".into()), has_method: true }, len: long.len() - 1 }
        );
        assert_eq!(got[1], Frame::Line(b"{\"ok\":true}".to_vec()));
    }

    // Found by fuzzing: with chunks smaller than the limit, only the bytes up to the one that
    // crossed it were kept, so an id further in was missed and the request went unanswered.
    #[tokio::test]
    async fn the_prefix_of_an_over_long_line_is_its_first_bytes_whatever_the_reads() {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"{}\",\"id\":42}}", "m".repeat(40));
        let got = frames(format!("{line}\n").as_bytes(), 20).await;
        assert_eq!(
            got,
            vec![Frame::TooLong { prefix: Prefix { id: Some("42".into()), has_method: true }, len: line.len() }]
        );
    }

    // Found while writing the fuzz target's framing oracle: an unterminated last line kept its
    // `\r`, and a blank one was answered as invalid JSON.
    #[tokio::test]
    async fn an_unterminated_last_line_is_read_like_the_others() {
        assert_eq!(frames(b"{\"a\":1}\n  \r", 1024).await, vec![Frame::Line(b"{\"a\":1}".to_vec())]);
        assert_eq!(frames(b"{\"b\":2}\r", 1024).await, vec![Frame::Line(b"{\"b\":2}".to_vec())]);
    }

    #[test]
    fn nesting_is_counted_outside_strings_and_matches_what_serde_json_parses() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(!nesting_exceeds(nested(MAX_DEPTH).as_bytes(), MAX_DEPTH));
        assert!(nesting_exceeds(nested(MAX_DEPTH + 1).as_bytes(), MAX_DEPTH));
        // Everything within the limit parses.
        assert!(serde_json::from_str::<serde_json::Value>(&nested(MAX_DEPTH)).is_ok());
        assert!(!nesting_exceeds(br#"{"a":"[[[[\"[[[["}"#, 1));
        assert!(nesting_exceeds(br#"{"a":"\\","b":[[]]}"#, 2), "an escaped backslash ends the string");
    }

    /// The byte-at-a-time definition that the memchr scan must agree with.
    fn nesting_exceeds_bytewise(bytes: &[u8], limit: usize) -> bool {
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        for &b in bytes {
            if in_string {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_string = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > limit {
                        return true;
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        false
    }

    #[test]
    fn the_nesting_scan_agrees_with_the_bytewise_definition() {
        // Every string of up to 7 bytes over the characters that matter, at limits 0 to 3.
        let alphabet = b"[]{}\"\\a";
        let mut checked = 0;
        for len in 0..=7u32 {
            for mut n in 0..alphabet.len().pow(len) {
                let mut bytes = Vec::new();
                for _ in 0..len {
                    bytes.push(alphabet[n % alphabet.len()]);
                    n /= alphabet.len();
                }
                for limit in 0..4 {
                    assert_eq!(
                        nesting_exceeds(&bytes, limit),
                        nesting_exceeds_bytewise(&bytes, limit),
                        "{:?} at limit {limit}",
                        String::from_utf8_lossy(&bytes)
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 1_000_000);
    }
}
