//! SSE decoder: arbitrary bytes, arbitrary chunking, small and default bounds.
//!
//! Input layout: byte 0 = how many chunk-size bytes follow (0..=7), then those
//! bytes (each gives a chunk size 1..=64, used cyclically), then the payload.
//! Checks: no panic, and chunking invariance — the payload decoded whole and
//! decoded in chunks yields identical items, `last_event_id()` and `retry_ms()`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_streamable::sse::{SseDecoder, SseItem};

/// Decodes `payload` in chunks of the given sizes (cyclic), then finishes.
fn decode(
    mut dec: SseDecoder,
    payload: &[u8],
    sizes: &[usize],
) -> (Vec<SseItem>, Option<String>, Option<u64>, SseDecoder) {
    let mut out = Vec::new();
    let mut rest = payload;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes
            .get(i % sizes.len().max(1))
            .copied()
            .unwrap_or(rest.len());
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        // Errors are per call (first bound violation in that chunk), so they
        // legitimately depend on chunking; only the items must not.
        let _ = dec.feed(chunk, &mut out);
        rest = tail;
        i += 1;
    }
    let id = dec.last_event_id().map(str::to_owned);
    let retry = dec.retry_ms();
    (out, id, retry, dec)
}

fn check(make: fn() -> SseDecoder, payload: &[u8], sizes: &[usize], label: &str) {
    let (whole_items, whole_id, whole_retry, mut whole_dec) = decode(make(), payload, &[]);
    let (chunk_items, chunk_id, chunk_retry, mut chunk_dec) = decode(make(), payload, sizes);
    assert_eq!(
        whole_items, chunk_items,
        "{label}: items differ whole vs chunked (sizes {sizes:?})"
    );
    assert_eq!(
        whole_id, chunk_id,
        "{label}: last_event_id differs whole vs chunked (sizes {sizes:?})"
    );
    assert_eq!(
        whole_retry, chunk_retry,
        "{label}: retry_ms differs whole vs chunked (sizes {sizes:?})"
    );

    // End of stream, then a reconnection on the same decoder: the persistent
    // buffers survive `finish()` and the second stream decodes like the first
    // one did on a fresh decoder, apart from the carried-over last-event-id/retry.
    whole_dec.finish();
    chunk_dec.finish();
    assert_eq!(
        whole_dec.last_event_id(),
        whole_id.as_deref(),
        "{label}: finish changed last_event_id"
    );
    assert_eq!(
        whole_dec.retry_ms(),
        whole_retry,
        "{label}: finish changed retry_ms"
    );
    assert_eq!(
        whole_dec, chunk_dec,
        "{label}: decoder state differs after finish (sizes {sizes:?})"
    );
    let mut again_whole = Vec::new();
    let _ = whole_dec.feed(payload, &mut again_whole);
    let mut again_chunk = Vec::new();
    let mut rest = payload;
    let mut i = 0;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()];
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        let _ = chunk_dec.feed(chunk, &mut again_chunk);
        rest = tail;
        i += 1;
    }
    assert_eq!(
        again_whole, whole_items,
        "{label}: second stream after finish decoded differently from the first"
    );
    assert_eq!(
        again_whole, again_chunk,
        "{label}: second stream items differ whole vs chunked (sizes {sizes:?})"
    );
    whole_dec.finish();
    chunk_dec.finish();
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let n = usize::from(n % 8).min(rest.len());
    let (size_bytes, payload) = rest.split_at(n);
    let mut sizes: Vec<usize> = size_bytes.iter().map(|b| usize::from(b % 64) + 1).collect();
    if sizes.is_empty() {
        sizes.push(1);
    }
    check(
        || SseDecoder::with_limits(64, 256),
        payload,
        &sizes,
        "small limits",
    );
    check(SseDecoder::new, payload, &sizes, "default limits");
});
