//! Property tests for the SSE codec: encode/decode round trip, chunking invariance, agreement
//! with a naive whole-input reference decoder, and robustness on arbitrary bytes.

use mcp_streamable::sse::{encode_comment, encode_event, SseDecoder, SseError, SseItem};
use proptest::prelude::*;
use proptest::sample::Index;

/// One event to encode: id, retry, data, and an optional comment written before it.
type Event = (Option<String>, Option<u64>, Option<String>, Option<String>);

/// Everything observable after decoding a stream.
#[derive(Debug, PartialEq)]
struct Decoded {
    items: Vec<SseItem>,
    first_err: Option<SseError>,
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
}

/// Cuts `bytes` at the given split points (taken modulo its length + 1).
fn chunks<'a>(bytes: &'a [u8], splits: &[Index]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = splits.iter().map(|i| i.index(bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut out = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for cut in cuts {
        out.push(&bytes[start..cut]);
        start = cut;
    }
    out.push(&bytes[start..]);
    out
}

/// Feeds the chunks in order, then finishes the stream.
fn decode_with(dec: &mut SseDecoder, chunks: &[&[u8]]) -> Decoded {
    let mut items = Vec::new();
    let mut first_err = None;
    for chunk in chunks {
        if let Err(e) = dec.feed(chunk, &mut items) {
            first_err.get_or_insert(e);
        }
    }
    dec.finish();
    Decoded {
        items,
        first_err,
        last_event_id: dec.last_event_id().map(str::to_owned),
        retry_ms: dec.retry_ms(),
    }
}

/// A naive, whole-input reading of the WHATWG rules (with the MCP empty-data rule), no bounds.
fn reference(input: &[u8]) -> Decoded {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let mut lines = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < input.len() {
        match input[i] {
            b'\n' => {
                lines.push(&input[start..i]);
                i += 1;
                start = i;
            }
            b'\r' => {
                lines.push(&input[start..i]);
                i += 1;
                if input.get(i) == Some(&b'\n') {
                    i += 1;
                }
                start = i;
            }
            _ => i += 1,
        }
    }
    // Whatever follows the last line end is an incomplete line: discarded at end of stream.
    let mut items = Vec::new();
    let (mut data, mut event, mut block_id, mut has_field) =
        (String::new(), String::new(), None, false);
    let (mut last_event_id, mut retry_ms) = (None, None);
    for line in lines {
        let line = String::from_utf8_lossy(line);
        if line.is_empty() {
            if let Some(d) =
                Some(data.strip_suffix('\n').unwrap_or(&data)).filter(|d| !d.is_empty())
            {
                items.push(SseItem::Message {
                    id: block_id.take(),
                    event: Some(event.clone()).filter(|e| !e.is_empty()),
                    data: d.to_owned(),
                });
            } else if has_field {
                items.push(SseItem::NoMessage {
                    id: block_id.take(),
                });
            }
            data.clear();
            event.clear();
            block_id = None;
            has_field = false;
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (name, value) = match line.find(':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&line[..], ""),
        };
        match name {
            "data" => {
                data.push_str(value);
                data.push('\n');
                has_field = true;
            }
            "event" => {
                value.clone_into(&mut event);
                has_field = true;
            }
            "id" if !value.contains('\0') => {
                last_event_id = Some(value.to_owned());
                block_id = Some(value.to_owned());
                has_field = true;
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(n) = value.parse::<u64>() {
                    retry_ms = Some(n);
                    items.push(SseItem::Retry(n));
                    has_field = true;
                }
            }
            _ => {}
        }
    }
    Decoded {
        items,
        first_err: None,
        last_event_id,
        retry_ms,
    }
}

/// Bytes biased toward SSE syntax: line ends, colons, field names, NUL, BOM pieces, UTF-8.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let pieces: Vec<&'static [u8]> = vec![
        b"\r",
        b"\n",
        b"\r\n",
        b":",
        b": ",
        b" ",
        b"data",
        b"id",
        b"retry",
        b"event",
        b"\0",
        b"\xEF\xBB\xBF",
        b"\xEF",
        b"\xBB",
        b"\xBF",
        b"0",
        b"42",
        b"x",
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
    ];
    let line = (
        prop::sample::select(vec!["data", "id", "retry", "event", "", "x"]),
        prop::sample::select(vec!["", ":", ": ", ":  "]),
        "[0-9a-z \u{0}é😀]{0,6}",
        prop::sample::select(vec!["\n", "\r", "\r\n", "\n\n", "\r\r", "\r\n\r\n"]),
    )
        .prop_map(|(n, c, v, e)| format!("{n}{c}{v}{e}").into_bytes());
    let token = prop_oneof![
        6 => prop::sample::select(pieces).prop_map(<[u8]>::to_vec),
        4 => line,
        1 => any::<u8>().prop_map(|b| vec![b]),
        1 => any::<char>().prop_map(|c| c.to_string().into_bytes()),
    ];
    prop::collection::vec(token, 0..48).prop_map(|v| v.concat())
}

/// One event for the round trip.
fn event() -> impl Strategy<Value = Event> {
    (
        prop::option::of("[^\r\n\u{0}]{0,12}"),
        prop::option::of(prop_oneof![0u64..10_000, any::<u64>()]),
        prop::option::of(prop_oneof!["[^\r]{0,40}", "[a \n]{0,8}"]),
        prop::option::of("[^\r]{0,10}"),
    )
}

/// Limits for the chunking test: the defaults, or tiny ones that make errors common.
fn limits() -> impl Strategy<Value = (usize, usize)> {
    prop_oneof![
        Just((SseDecoder::LINE_MAX_DEFAULT, SseDecoder::DATA_MAX_DEFAULT)),
        (0usize..24, 0usize..48),
    ]
}

proptest! {
    /// Encoded events decode back to the expected items whatever the chunking.
    #[test]
    fn round_trip(
        events in prop::collection::vec(event(), 0..12),
        splits in prop::collection::vec(any::<Index>(), 0..12),
    ) {
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        let mut last_id = None;
        let mut last_retry = None;
        for (id, retry, data, comment) in &events {
            if let Some(text) = comment {
                encode_comment(&mut bytes, text);
            }
            encode_event(&mut bytes, id.as_deref(), *retry, data.as_deref());
            if let Some(r) = retry {
                expected.push(SseItem::Retry(*r));
                last_retry = Some(*r);
            }
            if id.is_some() {
                last_id.clone_from(id);
            }
            match data.as_deref() {
                Some(d) if !d.is_empty() => expected.push(SseItem::Message {
                    id: id.clone(),
                    event: None,
                    data: d.to_owned(),
                }),
                _ => expected.push(SseItem::NoMessage { id: id.clone() }),
            }
        }
        let got = decode_with(&mut SseDecoder::new(), &chunks(&bytes, &splits));
        prop_assert_eq!(
            got,
            Decoded { items: expected, first_err: None, last_event_id: last_id, retry_ms: last_retry }
        );
    }

    /// Whole versus split feeding gives identical items, first error and final state.
    #[test]
    fn chunking_invariance(
        bytes in sse_bytes(),
        splits in prop::collection::vec(any::<Index>(), 0..16),
        (line_max, data_max) in limits(),
    ) {
        let mut whole_dec = SseDecoder::with_limits(line_max, data_max);
        let mut split_dec = whole_dec.clone();
        let mut whole_items = Vec::new();
        let whole_res = whole_dec.feed(&bytes, &mut whole_items);
        let mut split_items = Vec::new();
        let mut split_errs = Vec::new();
        for chunk in chunks(&bytes, &splits) {
            if let Err(e) = split_dec.feed(chunk, &mut split_items) {
                split_errs.push(e);
            }
        }
        prop_assert_eq!(&whole_items, &split_items);
        prop_assert_eq!(whole_res.err(), split_errs.first().cloned());
        // The whole internal state agrees too, so later input decodes the same way.
        prop_assert_eq!(&whole_dec, &split_dec);
        prop_assert_eq!(whole_dec.last_event_id(), split_dec.last_event_id());
        prop_assert_eq!(whole_dec.retry_ms(), split_dec.retry_ms());
        // Byte-at-a-time feeding agrees as well.
        let mut byte_dec = SseDecoder::with_limits(line_max, data_max);
        let mut byte_items = Vec::new();
        let mut byte_errs = Vec::new();
        for b in &bytes {
            if let Err(e) = byte_dec.feed(std::slice::from_ref(b), &mut byte_items) {
                byte_errs.push(e);
            }
        }
        prop_assert_eq!(&whole_items, &byte_items);
        prop_assert_eq!(&whole_dec, &byte_dec);
        prop_assert_eq!(split_errs.first(), byte_errs.first());
    }

    /// With default bounds the incremental decoder agrees with the naive reference.
    #[test]
    fn matches_reference(
        bytes in sse_bytes(),
        splits in prop::collection::vec(any::<Index>(), 0..16),
    ) {
        let got = decode_with(&mut SseDecoder::new(), &chunks(&bytes, &splits));
        prop_assert_eq!(got, reference(&bytes));
    }

    /// Arbitrary bytes with tiny limits never panic and never yield over-long data.
    #[test]
    fn never_panics_with_tiny_limits(
        bytes in prop_oneof![any::<Vec<u8>>(), sse_bytes()],
        splits in prop::collection::vec(any::<Index>(), 0..16),
        finish_at in any::<Index>(),
    ) {
        let mut dec = SseDecoder::with_limits(8, 16);
        let mut items = Vec::new();
        let parts = chunks(&bytes, &splits);
        let finish_at = finish_at.index(parts.len() + 1);
        for (i, chunk) in parts.iter().enumerate() {
            if i == finish_at {
                dec.finish();
            }
            let _ = dec.feed(chunk, &mut items);
        }
        dec.finish();
        for item in &items {
            if let SseItem::Message { data, .. } = item {
                prop_assert!(data.len() <= 16);
                prop_assert!(!data.is_empty());
            }
        }
        // Still usable after whatever came before.
        let mut tail = Vec::new();
        prop_assert_eq!(dec.feed(b"data: ok\n\n", &mut tail), Ok(()));
        prop_assert_eq!(
            tail,
            vec![SseItem::Message { id: None, event: None, data: "ok".to_owned() }]
        );
    }
}
