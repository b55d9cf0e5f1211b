//! Server-Sent Events codec: an incremental decoder and a cheap encoder.
//!
//! The decoder follows the WHATWG "event stream interpretation" rules (HTML
//! Living Standard §9.2.6) with one deliberate difference that MCP needs: a
//! block whose data is empty after the final `\n` is removed (for example
//! `id: 7\ndata: \n\n`, an MCP "priming event") is reported as
//! [`SseItem::NoMessage`] instead of being dispatched as an event with empty
//! data, so the caller still learns the new last-event-id.
//!
//! Both halves are sans-IO: the decoder is fed byte chunks of any size and
//! produces the same items whatever the chunking; the encoder appends to a
//! caller-owned `Vec<u8>`.

use std::borrow::Cow;

/// The UTF-8 byte order mark, skipped once at the start of a stream.
const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Reusable buffers that grew beyond this many bytes are released after use,
/// so one huge event does not pin its memory for the life of the stream.
const KEEP_CAPACITY_MAX: usize = 64 * 1024;

/// One item produced by the decoder, in stream order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SseItem {
    /// A dispatched event: the data was non-empty at the blank line (after the final `\n` was removed).
    Message {
        /// The value of an `id` field seen in this event's block, if any (not the persistent buffer).
        id: Option<String>,
        /// The event type (`event` field); `None` means the default "message".
        event: Option<String>,
        /// The data, with the multi-line `data` fields joined by `\n` and the final `\n` removed.
        data: String,
    },
    /// A block ended by a blank line that had at least one field line (id, data, event or
    /// valid retry) but empty data: WHATWG dispatches nothing, yet the last-event-id buffer may
    /// have changed. This is how MCP "priming events" (an id plus empty data) reach the caller.
    NoMessage {
        /// The value of an `id` field seen in this block, if any.
        id: Option<String>,
    },
    /// A `retry` field whose value is ASCII digits only: the reconnection time in milliseconds.
    Retry(u64),
}

/// Why decoding a chunk failed; errors are not fatal, the decoder stays usable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// A single line exceeded `line_max` bytes.
    #[error("SSE line longer than {max} bytes")]
    LineTooLong {
        /// The configured line bound, in bytes.
        max: usize,
    },
    /// An event's data exceeded `data_max` bytes.
    #[error("SSE event data longer than {max} bytes")]
    DataTooLong {
        /// The configured data bound, in bytes.
        max: usize,
    },
}

/// Incremental SSE decoder: feed arbitrary chunks, get the same items whatever the chunking.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SseDecoder {
    /// Longest accepted line, in bytes (line end excluded).
    line_max: usize,
    /// Longest accepted event data, in bytes.
    data_max: usize,
    /// Bytes of a line that started in an earlier chunk and is not yet complete.
    line: Vec<u8>,
    /// The current line exceeded `line_max`: its bytes are dropped until the next line end.
    skipping_line: bool,
    /// The last byte seen was a CR, so an LF right after it is part of the same line end.
    after_cr: bool,
    /// No byte of the stream has been interpreted yet, so a BOM may still come.
    at_stream_start: bool,
    /// How many bytes of the BOM have been matched at stream start (0..=2).
    bom_matched: usize,
    /// The WHATWG data buffer: every `data` value followed by `\n`.
    data: String,
    /// The WHATWG event type buffer.
    event: String,
    /// The id set by an `id` field of the current block.
    block_id: Option<String>,
    /// The current block had an id, data, event or valid retry field.
    block_has_field: bool,
    /// The current block violated a bound: it is dropped at its blank line.
    block_poisoned: bool,
    /// The WHATWG last-event-id buffer, kept across blocks and streams.
    last_event_id: Option<String>,
    /// The last valid `retry` value, in milliseconds.
    retry_ms: Option<u64>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new()
    }
}

impl SseDecoder {
    /// Default bound on one line, in bytes: 1 MiB.
    pub const LINE_MAX_DEFAULT: usize = 1 << 20;
    /// Default bound on one event's data, in bytes: 4 MiB.
    pub const DATA_MAX_DEFAULT: usize = 4 << 20;

    /// Creates a decoder with the default bounds, at the start of a stream.
    #[must_use]
    pub const fn new() -> Self {
        Self::with_limits(Self::LINE_MAX_DEFAULT, Self::DATA_MAX_DEFAULT)
    }

    /// Creates a decoder with explicit bounds on line length and event data length, in bytes.
    #[must_use]
    pub const fn with_limits(line_max: usize, data_max: usize) -> Self {
        Self {
            line_max,
            data_max,
            line: Vec::new(),
            skipping_line: false,
            after_cr: false,
            at_stream_start: true,
            bom_matched: 0,
            data: String::new(),
            event: String::new(),
            block_id: None,
            block_has_field: false,
            block_poisoned: false,
            last_event_id: None,
            retry_ms: None,
        }
    }

    /// Feeds bytes; pushes complete items onto `out`.
    ///
    /// Every complete item in `bytes` is pushed even when an error is returned. On a bound
    /// violation the offending line (and, unless the line is a comment, its whole event) is
    /// discarded and decoding continues with the next line; the returned error is the first
    /// violation met in this call.
    ///
    /// # Errors
    ///
    /// [`SseError::LineTooLong`] or [`SseError::DataTooLong`] when a bound was exceeded; the
    /// decoder remains usable.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) -> Result<(), SseError> {
        let mut first_err = None;
        let rest = if self.at_stream_start {
            self.skip_bom(bytes, out, &mut first_err)
        } else {
            bytes
        };
        self.consume(rest, out, &mut first_err);
        match first_err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Signals end of stream: per WHATWG an incomplete block (no final blank line) is
    /// discarded, not dispatched.
    ///
    /// Resets the per-block and per-line state and keeps `last_event_id` and `retry_ms`. The
    /// decoder is then at the start of a new stream (a reconnection), which may again begin
    /// with a BOM.
    pub fn finish(&mut self) {
        self.line.clear();
        release_vec(&mut self.line);
        self.skipping_line = false;
        self.after_cr = false;
        self.at_stream_start = true;
        self.bom_matched = 0;
        self.reset_block();
    }

    /// The persistent last-event-id buffer (WHATWG): what a client sends as `Last-Event-ID` on
    /// reconnect. `None` until any valid `id` field.
    #[must_use]
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last valid `retry` value seen, in milliseconds.
    #[must_use]
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Matches the BOM at stream start; returns the bytes left to interpret.
    fn skip_bom<'a>(
        &mut self,
        mut rest: &'a [u8],
        out: &mut Vec<SseItem>,
        err: &mut Option<SseError>,
    ) -> &'a [u8] {
        while let Some((&b, tail)) = rest.split_first() {
            if BOM.get(self.bom_matched) == Some(&b) {
                self.bom_matched += 1;
                rest = tail;
                if self.bom_matched == BOM.len() {
                    self.at_stream_start = false;
                    self.bom_matched = 0;
                    return rest;
                }
            } else {
                // Not a BOM: the bytes matched so far are ordinary input.
                self.at_stream_start = false;
                let matched = self.bom_matched;
                self.bom_matched = 0;
                if let Some(prefix) = BOM.get(..matched) {
                    self.consume(prefix, out, err);
                }
                return rest;
            }
        }
        rest
    }

    /// Splits bytes into lines and interprets every complete one.
    fn consume(&mut self, mut rest: &[u8], out: &mut Vec<SseItem>, err: &mut Option<SseError>) {
        while !rest.is_empty() {
            if self.after_cr {
                self.after_cr = false;
                if let Some(tail) = rest.strip_prefix(b"\n") {
                    rest = tail;
                    continue;
                }
            }
            let Some(end) = find_line_end(rest) else {
                self.push_partial(rest, err);
                return;
            };
            let (line, tail) = rest.split_at(end);
            let Some((&eol, tail)) = tail.split_first() else {
                return;
            };
            if self.line.is_empty() && !self.skipping_line {
                // Fast path: the whole line is inside this chunk, no copy needed.
                if line.len() > self.line_max {
                    self.line_too_long(line.first().copied(), err);
                } else {
                    self.process_line(line, out, err);
                }
            } else {
                self.push_partial(line, err);
                if self.skipping_line {
                    self.skipping_line = false;
                } else {
                    let buf = std::mem::take(&mut self.line);
                    self.process_line(&buf, out, err);
                    self.line = buf;
                    self.line.clear();
                    release_vec(&mut self.line);
                }
            }
            self.after_cr = eol == b'\r';
            rest = tail;
        }
    }

    /// Appends bytes of an unfinished line, enforcing `line_max`.
    fn push_partial(&mut self, seg: &[u8], err: &mut Option<SseError>) {
        if self.skipping_line || seg.is_empty() {
            return;
        }
        if self.line.len().saturating_add(seg.len()) > self.line_max {
            let first = self.line.first().or(seg.first()).copied();
            self.line_too_long(first, err);
            self.line.clear();
            release_vec(&mut self.line);
            self.skipping_line = true;
        } else {
            self.line.extend_from_slice(seg);
        }
    }

    /// Records a line over `line_max`; drops the current event unless the line is a comment.
    fn line_too_long(&mut self, first_byte: Option<u8>, err: &mut Option<SseError>) {
        err.get_or_insert(SseError::LineTooLong { max: self.line_max });
        if first_byte != Some(b':') {
            self.block_poisoned = true;
        }
    }

    /// Interprets one complete line (line end excluded).
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseItem>, err: &mut Option<SseError>) {
        let Some(&first) = line.first() else {
            self.dispatch(out);
            return;
        };
        if first == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let (name, value) = line.split_at(colon);
                let value = value.get(1..).unwrap_or_default();
                (name, value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => self.field_data(value, err),
            b"event" => {
                self.block_has_field = true;
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.block_has_field = true;
                let id = String::from_utf8_lossy(value);
                match &mut self.last_event_id {
                    Some(buf) => {
                        buf.clear();
                        buf.push_str(&id);
                    }
                    None => self.last_event_id = Some(id.to_string()),
                }
                self.block_id = Some(id.into_owned());
            }
            b"retry" => {
                if let Some(ms) = parse_retry(value) {
                    self.block_has_field = true;
                    self.retry_ms = Some(ms);
                    out.push(SseItem::Retry(ms));
                }
            }
            _ => {}
        }
    }

    /// Appends a `data` value to the data buffer, enforcing `data_max`.
    fn field_data(&mut self, value: &[u8], err: &mut Option<SseError>) {
        self.block_has_field = true;
        if self.block_poisoned {
            return;
        }
        let value: Cow<'_, str> = String::from_utf8_lossy(value);
        if self.data.len().saturating_add(value.len()) > self.data_max {
            err.get_or_insert(SseError::DataTooLong { max: self.data_max });
            self.block_poisoned = true;
            self.data.clear();
            release_string(&mut self.data);
            return;
        }
        self.data.push_str(&value);
        self.data.push('\n');
    }

    /// Handles a blank line: emits the block's item, if any, and resets the block.
    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if !self.block_poisoned {
            let data = self.data.strip_suffix('\n').unwrap_or(&self.data);
            if !data.is_empty() {
                let event = if self.event.is_empty() {
                    None
                } else {
                    Some(self.event.clone())
                };
                out.push(SseItem::Message {
                    id: self.block_id.take(),
                    event,
                    data: data.to_owned(),
                });
            } else if self.block_has_field {
                out.push(SseItem::NoMessage {
                    id: self.block_id.take(),
                });
            }
        }
        self.reset_block();
    }

    /// Clears the per-block buffers (data, event type, block id, flags).
    fn reset_block(&mut self) {
        self.data.clear();
        release_string(&mut self.data);
        self.event.clear();
        release_string(&mut self.event);
        self.block_id = None;
        self.block_has_field = false;
        self.block_poisoned = false;
    }
}

/// Parses a `retry` value: non-empty, ASCII digits only, fits in `u64`.
fn parse_retry(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

/// Position of the first CR or LF in `s`, scanning eight bytes at a time.
fn find_line_end(s: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const LFS: u64 = u64::from_le_bytes([b'\n'; 8]);
    const CRS: u64 = u64::from_le_bytes([b'\r'; 8]);
    let mut rest = s;
    let mut base = 0usize;
    while let Some((word, tail)) = rest.split_first_chunk::<8>() {
        let x = u64::from_le_bytes(*word);
        let lf = x ^ LFS;
        let cr = x ^ CRS;
        // A byte of `lf`/`cr` is zero where `x` holds LF/CR. The lowest flagged byte is always
        // exact (borrows only propagate upwards), which is all we need.
        let hits = ((lf.wrapping_sub(ONES) & !lf) | (cr.wrapping_sub(ONES) & !cr)) & HIGHS;
        if hits != 0 {
            return Some(base + (hits.trailing_zeros() / 8) as usize);
        }
        base += 8;
        rest = tail;
    }
    rest.iter()
        .position(|&b| b == b'\n' || b == b'\r')
        .map(|i| base + i)
}

/// Drops a reusable byte buffer's allocation if it grew too large.
fn release_vec(v: &mut Vec<u8>) {
    if v.capacity() > KEEP_CAPACITY_MAX {
        *v = Vec::new();
    }
}

/// Drops a reusable string buffer's allocation if it grew too large.
fn release_string(s: &mut String) {
    if s.capacity() > KEEP_CAPACITY_MAX {
        *s = String::new();
    }
}

/// Writes one event: optional `id`, optional `retry`, then the data lines, then a blank line.
///
/// `data` is split on CRLF, LF and CR into one `data: ` line each; `None` and `Some("")` write a
/// single empty `data: ` line, so `encode_event(out, Some("X"), None, None)` writes the MCP
/// priming event `id: X\ndata: \n\n`. An `id` containing CR, LF or NUL is a caller bug: it
/// trips a debug assertion, and release builds strip those characters.
pub fn encode_event(
    out: &mut Vec<u8>,
    id: Option<&str>,
    retry_ms: Option<u64>,
    data: Option<&str>,
) {
    let data = data.unwrap_or("").as_bytes();
    out.reserve(data.len() + id.map_or(0, str::len) + 48);
    if let Some(id) = id {
        let id = id.as_bytes();
        let bad = |b: &u8| matches!(*b, b'\r' | b'\n' | 0);
        let has_bad = id.iter().any(bad);
        debug_assert!(!has_bad, "SSE event id must not contain CR, LF or NUL");
        out.extend_from_slice(b"id: ");
        if has_bad {
            out.extend(id.iter().filter(|b| !bad(b)));
        } else {
            out.extend_from_slice(id);
        }
        out.push(b'\n');
    }
    if let Some(ms) = retry_ms {
        out.extend_from_slice(b"retry: ");
        push_decimal(out, ms);
        out.push(b'\n');
    }
    let mut rest = data;
    loop {
        out.extend_from_slice(b"data: ");
        let Some(end) = find_line_end(rest) else {
            out.extend_from_slice(rest);
            out.push(b'\n');
            break;
        };
        let (line, tail) = rest.split_at(end);
        out.extend_from_slice(line);
        out.push(b'\n');
        rest = match tail {
            [b'\r', b'\n', tail @ ..] => tail,
            _ => tail.get(1..).unwrap_or_default(),
        };
    }
    out.push(b'\n');
}

/// Writes a comment block `:{text}\n\n` (e.g. a keep-alive); it dispatches nothing.
///
/// CR and LF in `text` are replaced by spaces so the comment stays one line. Pass
/// `" keep-alive"` to get the conventional `: keep-alive`.
pub fn encode_comment(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 3);
    out.push(b':');
    out.extend(text.bytes().map(|b| match b {
        b'\r' | b'\n' => b' ',
        other => other,
    }));
    out.extend_from_slice(b"\n\n");
}

/// Appends the decimal digits of `n` without allocating (SSE `retry`
/// fields here, event ids in `server::event_ids`).
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        if let Some(d) = digits.get_mut(start) {
            *d = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    out.extend_from_slice(digits.get(start..).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decoder's reusable buffers keep their allocation for events up to
    /// `KEEP_CAPACITY_MAX` (the next one reuses it) and give back anything
    /// larger once the event is out: one huge event does not pin its memory
    /// for the life of the stream.
    #[test]
    fn buffers_up_to_keep_capacity_max_are_kept_and_larger_ones_released() {
        for (len, kept) in [(32 * 1024, true), (100 * 1024, false)] {
            let mut dec = SseDecoder::new();
            let mut out = Vec::new();
            let event = format!("data: {}\n\n", "x".repeat(len));
            // Split inside the line, so that it is buffered across the chunks.
            let (a, b) = event.as_bytes().split_at(len / 2);
            assert_eq!(dec.feed(a, &mut out), Ok(()));
            assert_eq!(dec.feed(b, &mut out), Ok(()));
            assert!(matches!(&out[..], [SseItem::Message { data, .. }] if data.len() == len));
            let (line, data) = (dec.line.capacity(), dec.data.capacity());
            if kept {
                assert!(line >= len && data >= len, "{len}: kept {line}, {data}");
            } else {
                assert!(
                    line == 0 && data == 0,
                    "{len}: released, not {line}, {data}"
                );
            }
        }
    }

    /// At the edge: a buffer of exactly `KEEP_CAPACITY_MAX` is kept, one byte
    /// more is released, a small one is kept.
    #[test]
    fn release_keeps_keep_capacity_max_and_releases_one_byte_more() {
        for (cap, kept) in [
            (16, true),
            (KEEP_CAPACITY_MAX, true),
            (KEEP_CAPACITY_MAX + 1, false),
        ] {
            let mut v = Vec::<u8>::with_capacity(cap);
            let mut s = String::with_capacity(cap);
            release_vec(&mut v);
            release_string(&mut s);
            let want = if kept { cap } else { 0 };
            assert_eq!((v.capacity(), s.capacity()), (want, want), "capacity {cap}");
        }
    }

    /// The encoders reserve about what they write, up front: never a
    /// multiple of it (a 4 MiB event must not reserve tens of MiB).
    #[test]
    fn encoders_reserve_about_what_they_write() {
        let mut out = Vec::new();
        encode_event(
            &mut out,
            Some("0123456789"),
            None,
            Some(&"x".repeat(100_000)),
        );
        assert!(
            out.capacity() < 2 * out.len(),
            "{} for {}",
            out.capacity(),
            out.len()
        );
        let mut out = Vec::new();
        encode_comment(&mut out, &"y".repeat(1_000));
        assert!(
            out.capacity() < 2 * out.len(),
            "{} for {}",
            out.capacity(),
            out.len()
        );
    }

    /// Release builds strip CR, LF and NUL from an event id (debug builds
    /// assert, a caller bug): the id stays one line, nothing else is lost.
    #[cfg(not(debug_assertions))]
    #[test]
    fn release_builds_strip_line_breaks_and_nul_from_an_id() {
        let mut out = Vec::new();
        encode_event(&mut out, Some("a\rb\nc\0d"), None, Some("x"));
        assert_eq!(out, b"id: abcd\ndata: x\n\n");
    }

    fn msg(id: Option<&str>, event: Option<&str>, data: &str) -> SseItem {
        SseItem::Message {
            id: id.map(str::to_owned),
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    fn none(id: Option<&str>) -> SseItem {
        SseItem::NoMessage {
            id: id.map(str::to_owned),
        }
    }

    fn decode(input: &[u8]) -> Vec<SseItem> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        assert_eq!(dec.feed(input, &mut out), Ok(()));
        out
    }

    /// Decodes `input` fed one chunk per element of `chunks`.
    fn decode_chunks(chunks: &[&[u8]]) -> (SseDecoder, Vec<SseItem>) {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            assert_eq!(dec.feed(chunk, &mut out), Ok(()));
        }
        (dec, out)
    }

    /// Decodes `input` fed one byte at a time.
    fn decode_bytewise(input: &[u8]) -> Vec<SseItem> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        for b in input {
            assert_eq!(dec.feed(std::slice::from_ref(b), &mut out), Ok(()));
        }
        out
    }

    #[test]
    fn line_ends_lf_cr_crlf() {
        let expected = vec![
            msg(None, None, "a"),
            msg(None, None, "b"),
            msg(None, None, "c"),
        ];
        assert_eq!(decode(b"data: a\n\ndata: b\r\rdata: c\r\n\r\n"), expected);
        assert_eq!(
            decode_bytewise(b"data: a\n\ndata: b\r\rdata: c\r\n\r\n"),
            expected
        );
        // Mixed line ends inside one block.
        assert_eq!(
            decode(b"data: 1\rdata: 2\r\ndata: 3\n\n"),
            vec![msg(None, None, "1\n2\n3")]
        );
    }

    #[test]
    fn cr_at_chunk_end_then_lf_is_one_line_end() {
        let (_, out) = decode_chunks(&[b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"]);
        assert_eq!(out, vec![msg(None, None, "x\ny")]);
        // CR then CR across chunks is two line ends (a blank line).
        let (_, out) = decode_chunks(&[b"data: x\r", b"\r"]);
        assert_eq!(out, vec![msg(None, None, "x")]);
        // CR, then an empty chunk, then LF: still one line end.
        let (_, out) = decode_chunks(&[b"data: x\r", b"", b"\n", b"\n"]);
        assert_eq!(out, vec![msg(None, None, "x")]);
    }

    #[test]
    fn bom_skipped_once_at_start() {
        assert_eq!(
            decode(b"\xEF\xBB\xBFdata: a\n\n"),
            vec![msg(None, None, "a")]
        );
        let (_, out) = decode_chunks(&[b"\xEF", b"\xBB", b"\xBFdata: a\n\n"]);
        assert_eq!(out, vec![msg(None, None, "a")]);
        // A second BOM is not skipped: it makes the field name unknown.
        assert_eq!(decode(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n"), vec![]);
        // A BOM later in the stream is not skipped either.
        assert_eq!(decode(b"\n\xEF\xBB\xBFdata: a\n\n"), vec![]);
        // A partial BOM is ordinary input, even when split.
        let (_, out) = decode_chunks(&[b"\xEF\xBB", b"data: a\n\ndata: b\n\n"]);
        assert_eq!(out, vec![msg(None, None, "b")]);
        // A partial BOM line is decoded lossily like any line.
        let (_, out) = decode_chunks(&[b"\xEF", b"\n", b"data: c\n\n"]);
        assert_eq!(out, vec![msg(None, None, "c")]);
    }

    #[test]
    fn bom_rearmed_after_finish() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"\xEF\xBB\xBFid: 1\ndata: a\n\n", &mut out)
            .unwrap();
        dec.finish();
        dec.feed(b"\xEF\xBB\xBFdata: b\n\n", &mut out).unwrap();
        assert_eq!(out, vec![msg(Some("1"), None, "a"), msg(None, None, "b")]);
        assert_eq!(dec.last_event_id(), Some("1"));
    }

    #[test]
    fn comments_are_ignored() {
        assert_eq!(decode(b": hello\n\n"), vec![]);
        assert_eq!(decode(b":\n\n"), vec![]);
        assert_eq!(
            decode(b"data: a\n: comment\ndata: b\n\n"),
            vec![msg(None, None, "a\nb")]
        );
    }

    #[test]
    fn multi_line_data_joined() {
        assert_eq!(
            decode(b"data: a\ndata: b\ndata: c\n\n"),
            vec![msg(None, None, "a\nb\nc")]
        );
        assert_eq!(
            decode(b"data: a\ndata:\ndata: c\n\n"),
            vec![msg(None, None, "a\n\nc")]
        );
        // Two empty data lines make the data "\n", which is non-empty.
        assert_eq!(decode(b"data:\ndata:\n\n"), vec![msg(None, None, "\n")]);
    }

    #[test]
    fn field_without_colon() {
        // `data` with no colon appends an empty line.
        assert_eq!(decode(b"data\ndata\n\n"), vec![msg(None, None, "\n")]);
        assert_eq!(decode(b"data: a\ndata\n\n"), vec![msg(None, None, "a\n")]);
        assert_eq!(decode(b"data\n\n"), vec![none(None)]);
        // `id` with no colon sets an empty id.
        assert_eq!(decode(b"id\ndata: x\n\n"), vec![msg(Some(""), None, "x")]);
    }

    #[test]
    fn only_one_leading_space_stripped() {
        assert_eq!(decode(b"data:  a \n\n"), vec![msg(None, None, " a ")]);
        assert_eq!(decode(b"data:a\n\n"), vec![msg(None, None, "a")]);
        assert_eq!(decode(b"data:\ta\n\n"), vec![msg(None, None, "\ta")]);
        assert_eq!(
            decode(b"id:  7\nevent:  x\ndata: a\n\n"),
            vec![msg(Some(" 7"), Some(" x"), "a")]
        );
        // Only the first colon separates name and value.
        assert_eq!(decode(b"data: a:b: c\n\n"), vec![msg(None, None, "a:b: c")]);
    }

    #[test]
    fn field_names_are_exact() {
        assert_eq!(decode(b"Data: a\n\n"), vec![]);
        assert_eq!(decode(b"data : a\n\n"), vec![]);
        assert_eq!(decode(b" data: a\n\n"), vec![]);
        assert_eq!(decode(b"foo: bar\n\n"), vec![]);
    }

    #[test]
    fn event_type() {
        assert_eq!(
            decode(b"event: ping\ndata: a\n\n"),
            vec![msg(None, Some("ping"), "a")]
        );
        // The last event field wins; an empty one means the default type.
        assert_eq!(
            decode(b"event: a\nevent: b\ndata: x\n\n"),
            vec![msg(None, Some("b"), "x")]
        );
        assert_eq!(
            decode(b"event: a\nevent:\ndata: x\n\n"),
            vec![msg(None, None, "x")]
        );
        // The event type does not leak into the next block.
        assert_eq!(
            decode(b"event: a\ndata: x\n\ndata: y\n\n"),
            vec![msg(None, Some("a"), "x"), msg(None, None, "y")]
        );
        // An event field with no data is a NoMessage.
        assert_eq!(decode(b"event: a\n\n"), vec![none(None)]);
    }

    #[test]
    fn id_with_nul_ignored() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n", &mut out)
            .unwrap();
        assert_eq!(out, vec![msg(Some("1"), None, "a"), msg(None, None, "b")]);
        assert_eq!(dec.last_event_id(), Some("1"));
        // An ignored id line alone does not make a NoMessage.
        out.clear();
        dec.feed(b"id: \0\n\n", &mut out).unwrap();
        assert_eq!(out, vec![]);
        assert_eq!(dec.last_event_id(), Some("1"));
    }

    #[test]
    fn empty_id_sets_buffer_to_empty() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        assert_eq!(dec.last_event_id(), None);
        dec.feed(b"id: 5\n\nid:\n\n", &mut out).unwrap();
        assert_eq!(out, vec![none(Some("5")), none(Some(""))]);
        assert_eq!(dec.last_event_id(), Some(""));
    }

    #[test]
    fn last_event_id_persists_but_block_id_does_not() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"id: 9\ndata: a\n\ndata: b\n\n", &mut out)
            .unwrap();
        assert_eq!(out, vec![msg(Some("9"), None, "a"), msg(None, None, "b")]);
        assert_eq!(dec.last_event_id(), Some("9"));
        // An id line in an unfinished block still updates the buffer (WHATWG).
        out.clear();
        dec.feed(b"id: 10\ndata: c\n", &mut out).unwrap();
        dec.finish();
        assert_eq!(out, vec![]);
        assert_eq!(dec.last_event_id(), Some("10"));
    }

    #[test]
    fn retry_digits_only() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"retry: 1500\n\n", &mut out).unwrap();
        assert_eq!(out, vec![SseItem::Retry(1500), none(None)]);
        assert_eq!(dec.retry_ms(), Some(1500));
        out.clear();
        for bad in [
            &b"retry: 12a\n\n"[..],
            b"retry:\n\n",
            b"retry: \n\n",
            b"retry\n\n",
            b"retry: -1\n\n",
            b"retry: +1\n\n",
            b"retry:  5\n\n",
            b"retry: 5 \n\n",
            b"retry: 18446744073709551616\n\n",
        ] {
            dec.feed(bad, &mut out).unwrap();
        }
        assert_eq!(out, vec![]);
        assert_eq!(dec.retry_ms(), Some(1500));
        dec.feed(b"retry:18446744073709551615\n", &mut out).unwrap();
        assert_eq!(out, vec![SseItem::Retry(u64::MAX)]);
        assert_eq!(dec.retry_ms(), Some(u64::MAX));
    }

    #[test]
    fn retry_emitted_in_order() {
        assert_eq!(
            decode(b"data: a\nretry: 7\ndata: b\n\n"),
            vec![SseItem::Retry(7), msg(None, None, "a\nb")]
        );
    }

    #[test]
    fn empty_data_block_is_no_message() {
        assert_eq!(decode(b"data:\n\n"), vec![none(None)]);
        assert_eq!(decode(b"data: \n\n"), vec![none(None)]);
        assert_eq!(decode(b"id: 3\ndata: \n\n"), vec![none(Some("3"))]);
    }

    #[test]
    fn blocks_without_fields_emit_nothing() {
        assert_eq!(decode(b"\n\n\n"), vec![]);
        assert_eq!(decode(b": keep-alive\n\n"), vec![]);
        assert_eq!(decode(b"foo: bar\n\n"), vec![]);
        assert_eq!(decode(b"\r\n\r\n"), vec![]);
    }

    #[test]
    fn unterminated_block_discarded_at_finish() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"data: a\n", &mut out).unwrap();
        dec.finish();
        dec.feed(b"\n", &mut out).unwrap();
        assert_eq!(out, vec![]);
        // A partial last line is dropped too, even an id.
        dec.feed(b"data: b\n\nid: 4", &mut out).unwrap();
        dec.finish();
        assert_eq!(out, vec![msg(None, None, "b")]);
        assert_eq!(dec.last_event_id(), None);
        // A CR pending at finish does not swallow the next stream's LF.
        out.clear();
        dec.feed(b"data: c\r", &mut out).unwrap();
        dec.finish();
        dec.feed(b"\ndata: d\n\n", &mut out).unwrap();
        assert_eq!(out, vec![msg(None, None, "d")]);
    }

    #[test]
    fn utf8_split_across_chunks() {
        let text = "data: é€😀\n\n".as_bytes();
        for split in 0..text.len() {
            let (a, b) = text.split_at(split);
            let (_, out) = decode_chunks(&[a, b]);
            assert_eq!(out, vec![msg(None, None, "é€😀")], "split at {split}");
        }
        assert_eq!(decode_bytewise(text), vec![msg(None, None, "é€😀")]);
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(
            decode(b"data: a\xFFb\xC3\n\n"),
            vec![msg(None, None, "a\u{FFFD}b\u{FFFD}")]
        );
        assert_eq!(
            decode(b"id: \xFF\ndata: x\n\n"),
            vec![msg(Some("\u{FFFD}"), None, "x")]
        );
    }

    #[test]
    fn priming_event_then_retry() {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        dec.feed(b"id: 0/1\ndata: \n\nretry: 500\n\n", &mut out)
            .unwrap();
        assert_eq!(
            out,
            vec![none(Some("0/1")), SseItem::Retry(500), none(None)]
        );
        assert_eq!(dec.last_event_id(), Some("0/1"));
        assert_eq!(dec.retry_ms(), Some(500));
    }

    #[test]
    fn line_too_long_is_reported_and_recovered() {
        let mut dec = SseDecoder::with_limits(10, 100);
        let mut out = Vec::new();
        // The overlong data line drops its event; the next event decodes fine.
        let r = dec.feed(
            b"id: 1\ndata: 0123456789\ndata: x\n\nid: 2\ndata: ok\n\n",
            &mut out,
        );
        assert_eq!(r, Err(SseError::LineTooLong { max: 10 }));
        assert_eq!(out, vec![msg(Some("2"), None, "ok")]);
        assert_eq!(dec.last_event_id(), Some("2"));
        // A line of exactly line_max bytes is fine.
        out.clear();
        assert_eq!(dec.feed(b"data: 0123\n\n", &mut out), Ok(()));
        assert_eq!(out, vec![msg(None, None, "0123")]);
    }

    #[test]
    fn line_too_long_across_chunks() {
        let mut dec = SseDecoder::with_limits(10, 100);
        let mut out = Vec::new();
        assert_eq!(dec.feed(b"data: 0123", &mut out), Ok(()));
        assert_eq!(
            dec.feed(b"4567", &mut out),
            Err(SseError::LineTooLong { max: 10 })
        );
        // Skipped bytes are not re-reported; the CR ending the bad line pairs with the LF.
        assert_eq!(dec.feed(b"89 more bytes\r", &mut out), Ok(()));
        assert_eq!(dec.feed(b"\n\ndata: b\n\n", &mut out), Ok(()));
        assert_eq!(out, vec![msg(None, None, "b")]);
    }

    #[test]
    fn overlong_comment_keeps_event() {
        let mut dec = SseDecoder::with_limits(10, 100);
        let mut out = Vec::new();
        let r = dec.feed(b"data: a\n: a very long comment\ndata: b\n\n", &mut out);
        assert_eq!(r, Err(SseError::LineTooLong { max: 10 }));
        assert_eq!(out, vec![msg(None, None, "a\nb")]);
    }

    #[test]
    fn data_too_long_is_reported_and_recovered() {
        let mut dec = SseDecoder::with_limits(100, 5);
        let mut out = Vec::new();
        let r = dec.feed(
            b"data: abc\ndata: d\ndata: e\n\ndata: abcde\n\ndata: a\ndata: bc\n\n",
            &mut out,
        );
        // "abc\nd" is 5 bytes (fine); adding "\ne" exceeds the bound.
        assert_eq!(r, Err(SseError::DataTooLong { max: 5 }));
        assert_eq!(
            out,
            vec![msg(None, None, "abcde"), msg(None, None, "a\nbc")]
        );
        // Still usable afterwards.
        out.clear();
        assert_eq!(dec.feed(b"id: 1\ndata: z\n\n", &mut out), Ok(()));
        assert_eq!(out, vec![msg(Some("1"), None, "z")]);
    }

    #[test]
    fn first_error_of_the_call_is_returned() {
        let mut dec = SseDecoder::with_limits(8, 2);
        let mut out = Vec::new();
        let r = dec.feed(b"data:abc\n\ndata: 0123456789\n\ndata: ok\n\n", &mut out);
        assert_eq!(r, Err(SseError::DataTooLong { max: 2 }));
        assert_eq!(out, vec![msg(None, None, "ok")]);
    }

    #[test]
    fn zero_limits_do_not_panic() {
        let mut dec = SseDecoder::with_limits(0, 0);
        let mut out = Vec::new();
        assert_eq!(
            dec.feed(b"data: a\n\n\n", &mut out),
            Err(SseError::LineTooLong { max: 0 })
        );
        assert_eq!(
            dec.feed(b"data\n\n", &mut out),
            Err(SseError::LineTooLong { max: 0 })
        );
        assert_eq!(out, vec![]);
        // Empty lines are never too long; empty data never exceeds the bound.
        assert_eq!(dec.feed(b"\n\n", &mut out), Ok(()));
        assert_eq!(out, vec![]);
    }

    #[test]
    fn encode_event_shapes() {
        let mut out = Vec::new();
        encode_event(&mut out, Some("0/1"), None, None);
        assert_eq!(out, b"id: 0/1\ndata: \n\n");
        out.clear();
        encode_event(&mut out, Some("7"), Some(500), Some("a\nb\r\nc\rd"));
        assert_eq!(
            out,
            b"id: 7\nretry: 500\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
        );
        out.clear();
        encode_event(&mut out, None, Some(0), Some(""));
        assert_eq!(out, b"retry: 0\ndata: \n\n");
        out.clear();
        encode_event(&mut out, None, Some(u64::MAX), Some("x\n"));
        assert_eq!(out, b"retry: 18446744073709551615\ndata: x\ndata: \n\n");
    }

    #[test]
    fn encode_comment_shapes() {
        let mut out = Vec::new();
        encode_comment(&mut out, " keep-alive");
        assert_eq!(out, b": keep-alive\n\n");
        out.clear();
        encode_comment(&mut out, "a\r\nb");
        assert_eq!(out, b":a  b\n\n");
        assert_eq!(decode(&out), vec![]);
    }

    #[test]
    fn encode_decode_round_trip() {
        let mut bytes = Vec::new();
        encode_event(&mut bytes, Some("0/1"), Some(500), None);
        encode_comment(&mut bytes, " ping");
        encode_event(&mut bytes, Some("0/2"), None, Some("{\"a\":1}\n  x"));
        encode_event(&mut bytes, None, None, Some(" lead"));
        let expected = vec![
            SseItem::Retry(500),
            none(Some("0/1")),
            msg(Some("0/2"), None, "{\"a\":1}\n  x"),
            msg(None, None, " lead"),
        ];
        assert_eq!(decode(&bytes), expected);
        assert_eq!(decode_bytewise(&bytes), expected);
    }

    #[test]
    fn find_line_end_matches_naive_scan() {
        let mut buf = vec![b'a'; 40];
        assert_eq!(find_line_end(&buf), None);
        for i in 0..buf.len() {
            for eol in [b'\n', b'\r'] {
                buf[i] = eol;
                // Add a second line end later to check the first one is found.
                let j = (i + 9).min(buf.len() - 1);
                let saved = buf[j];
                buf[j] = b'\n';
                assert_eq!(find_line_end(&buf), Some(i));
                buf[j] = saved;
                buf[i] = b'a';
            }
        }
        // Bytes that differ from CR/LF by one bit or by borrow patterns.
        let tricky = [0x0B, 0x0C, 0x0E, 0x09, 0x8A, 0x8D, 0x00, 0x01, 0xFF];
        assert_eq!(find_line_end(&tricky), None);
        assert_eq!(find_line_end(b"\x0B\x0C\x00\x00\x01\x0E\x8A\x0A"), Some(7));
    }

    #[test]
    fn push_decimal_values() {
        for n in [0u64, 1, 9, 10, 99, 100, 12345, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }
}
