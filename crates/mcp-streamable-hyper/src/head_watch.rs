//! [`HeadWatch`]: the header-read deadline of one connection, kept without a
//! timer per request.
//!
//! A connection may take `header_read_timeout` to send a request head,
//! counted from the moment the server waits for one: from the accept, and
//! from the end of each response (an idle keep-alive connection, or a
//! half-sent head, is closed past it). hyper can keep that deadline itself,
//! but it arms a boxed timer when it starts waiting for each head and drops
//! it when the head is in: a timer-wheel insert and remove, and an
//! allocation, on every request, which measured 5% of the whole request at
//! one connection (`docs/performance.md`, issue 16).
//!
//! Here the deadline is lazy. Each request marks the connection busy while
//! it is in flight (from its head until hyper drops its response body) and
//! notes the time when it ends; one sleep per connection wakes at the
//! earliest moment the deadline could have passed, looks at what happened
//! meanwhile, and either closes the connection or sleeps again. So a request
//! costs two atomic stores and a clock read, and the timer fires about once
//! per `header_read_timeout` per connection.
//!
//! ```text
//!   accept ─► waiting(since) ──head──► busy ──response body dropped──► waiting(now) ─► …
//!                 │
//!                 └── since + timeout passed, still waiting ──► close
//! ```

use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;

/// One connection's watch (see the module docs).
#[derive(Debug)]
pub(crate) struct HeadWatch {
    /// When the connection was accepted: the origin of `waiting_since_us`.
    start: Instant,
    /// Requests in flight (hyper serves one at a time on HTTP/1.1).
    busy: AtomicU32,
    /// Microseconds after `start` since which the connection waits for a head.
    waiting_since_us: AtomicU64,
}

impl HeadWatch {
    /// A connection accepted now, waiting for its first head.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(HeadWatch {
            start: Instant::now(),
            busy: AtomicU32::new(0),
            waiting_since_us: AtomicU64::new(0),
        })
    }

    /// A request's head is in: busy until the returned guard is dropped.
    pub(crate) fn request(self: &Arc<Self>) -> InRequest {
        self.busy.fetch_add(1, Ordering::AcqRel);
        InRequest(self.clone())
    }

    /// Since when the connection has waited for a head; `None` while a
    /// request is in flight.
    pub(crate) fn waiting_since(&self) -> Option<Instant> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        let us = self.waiting_since_us.load(Ordering::Acquire);
        Some(self.start + Duration::from_micros(us))
    }

    /// Completes once the connection has waited `timeout` for a head: the
    /// caller closes it then.
    pub(crate) async fn overdue(&self, timeout: Duration) {
        loop {
            let now = Instant::now();
            match self.waiting_since() {
                Some(since) if since + timeout <= now => return,
                Some(since) => tokio::time::sleep_until(since + timeout).await,
                // Busy: no head is awaited; look again a timeout from now.
                None => tokio::time::sleep_until(now + timeout).await,
            }
        }
    }
}

/// A request in flight on a watched connection; dropped with its response
/// body, when the connection starts waiting for the next head.
#[derive(Debug)]
pub(crate) struct InRequest(Arc<HeadWatch>);

impl Drop for InRequest {
    fn drop(&mut self) {
        let watch = &self.0;
        let us = Instant::now()
            .saturating_duration_since(watch.start)
            .as_micros();
        // The time first, then not busy: a watcher that sees it idle sees when.
        watch
            .waiting_since_us
            .store(u64::try_from(us).unwrap_or(u64::MAX), Ordering::Release);
        watch.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that holds its request's [`InRequest`] until hyper is
/// done with it.
pub(crate) struct Watched<B> {
    body: B,
    _request: InRequest,
}

impl<B> Watched<B> {
    /// `body`, its request in flight until it is dropped.
    pub(crate) fn new(body: B, request: InRequest) -> Self {
        Watched {
            body,
            _request: request,
        }
    }
}

impl<B: Body + Unpin> Body for Watched<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Duration = Duration::from_secs(10);

    /// Whether `overdue` completes within `within` of (paused) time.
    async fn overdue_within(watch: &HeadWatch, within: Duration) -> bool {
        tokio::time::timeout(within, watch.overdue(T)).await.is_ok()
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_that_sends_no_head_is_overdue_at_the_timeout() {
        let watch = HeadWatch::new();
        assert!(!overdue_within(&watch, T - Duration::from_millis(1)).await);
        assert!(overdue_within(&watch, Duration::from_millis(2)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_in_flight_is_never_overdue() {
        let watch = HeadWatch::new();
        let request = watch.request();
        assert!(!overdue_within(&watch, 5 * T).await);
        drop(request);
        // Waiting again from the moment the request ended, not the accept.
        let ended = Instant::now();
        assert!(!overdue_within(&watch, T - Duration::from_millis(1)).await);
        assert!(overdue_within(&watch, Duration::from_millis(2)).await);
        assert!(Instant::now() >= ended + T);
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_counts_from_the_end_of_the_last_response() {
        let watch = HeadWatch::new();
        // A request answered 9 s in: the next head is due 10 s after that,
        // so the first look (at 10 s) sleeps again instead of closing.
        tokio::time::sleep(Duration::from_secs(9)).await;
        drop(watch.request());
        assert!(!overdue_within(&watch, Duration::from_secs(9)).await);
        assert!(overdue_within(&watch, Duration::from_millis(1_001)).await);
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_holds_its_request_until_dropped() {
        let watch = HeadWatch::new();
        let body = Watched::new(
            http_body_util::Empty::<bytes::Bytes>::new(),
            watch.request(),
        );
        assert!(body.is_end_stream());
        assert!(watch.waiting_since().is_none());
        drop(body);
        assert!(watch.waiting_since().is_some());
    }
}
