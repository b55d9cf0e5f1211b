//! [`Exchanges`]: the open HTTP exchanges of one owner task, and the moving
//! of its driver's [`Write`]s to them. Written once for the session shell
//! and the fleet shell.
//!
//! An exchange waits for its head (the connection task holds the other end
//! of a oneshot), then is either answered whole or streamed: frames go on a
//! bounded channel to the response body, with the bytes queued in them
//! counted. A client that does not read is cut off at either bound (its
//! stream stays resumable): its connection is closed ([`ConnCut`]), which
//! frees what was queued for it, and the caller tells its core the exchange
//! is over.
//!
//! The bytes queued on all of one session's streams count against one
//! budget (`bytes_queued_max`), streams the core has ended but whose client
//! has not read them yet included: past it, that session's streams with the
//! most bytes queued are cut first, so a client that opens many streams and
//! reads none holds at most the budget of the server's memory, not
//! `frame_bytes_queued_max` per connection. An exchange's session is the one
//! the core routed it to, else the id its request named (the session
//! shell's owner serves one session, so all of its exchanges are one; a
//! fleet instance's owner serves many, 2026-07-28 requests each their own). A
//! request naming a session it is not served gets a whole answer, never a
//! stream, so it cannot spend another's budget.

use super::body::{ClosedTx, ResponseBody};
use bytes::Bytes;
use mcp_streamable::ids::{HttpId, SessionId};
use mcp_streamable::release::Release;
use mcp_streamable::server::wire::{WireHead, Write};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A head and its body, for the connection task to hand to hyper.
pub(crate) type Reply = (WireHead, ResponseBody);

/// Closes one connection from outside its task: the accept loop's task for
/// it selects on [`ConnCut::cut_off`] beside the connection, and drops the
/// connection (its socket, hyper's buffers, the body's queued frames) once
/// [`ConnCut::cut`] is called. Without one (a service mounted behind
/// another server's accept loop) a stream is only detached.
#[derive(Clone, Debug, Default)]
pub struct ConnCut(Arc<tokio::sync::Notify>);

impl ConnCut {
    /// A handle for one connection.
    pub fn new() -> Self {
        ConnCut::default()
    }

    /// Closes the connection (now, or as soon as its task looks).
    pub fn cut(&self) {
        self.0.notify_one();
    }

    /// Resolves once [`Self::cut`] was called.
    pub async fn cut_off(&self) {
        self.0.notified().await;
    }
}

enum Exchange {
    AwaitingHead(oneshot::Sender<Reply>, Option<ConnCut>),
    /// Frames to the body, the bytes still queued in them, its connection.
    Streaming(mpsc::Sender<Bytes>, Arc<AtomicUsize>, Option<ConnCut>),
}

/// A stream the core has ended whose body still holds frames its client
/// has not read: counted against the budget until the body is dropped.
struct Draining {
    queued: Arc<AtomicUsize>,
    cut: Option<ConnCut>,
}

/// The open exchanges of one owner task (see the module docs).
pub(crate) struct Exchanges {
    open: BTreeMap<HttpId, Exchange>,
    /// Streamed bodies report their end here. Made with the first stream and
    /// let go by [`Exchanges::release`]: a whole answer reports nothing (its
    /// exchange was over for the core when written), so an owner that only
    /// answers whole never makes one, and a parked one keeps none.
    closed: Option<(ClosedTx, mpsc::UnboundedReceiver<HttpId>)>,
    /// Ended streams whose clients have not read them whole yet.
    draining: BTreeMap<HttpId, Draining>,
    /// The session each exchange's request named, while it is open or
    /// draining (none: it named none, as an `initialize` does).
    sessions: BTreeMap<HttpId, SessionId>,
    frames_queued_max: usize,
    frame_bytes_queued_max: usize,
    bytes_queued_max: usize,
}

/// The bounds of one owner's [`Exchanges`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueueBounds {
    /// Frames queued on one stream.
    pub(crate) frames_queued_max: usize,
    /// Bytes queued on one stream.
    pub(crate) frame_bytes_queued_max: usize,
    /// Bytes queued on all of one session's streams, ended ones not yet
    /// read included.
    pub(crate) bytes_queued_max: usize,
}

impl Exchanges {
    /// No exchanges yet.
    pub(crate) fn new(bounds: QueueBounds) -> Self {
        Exchanges {
            open: BTreeMap::new(),
            closed: None,
            draining: BTreeMap::new(),
            sessions: BTreeMap::new(),
            frames_queued_max: bounds.frames_queued_max,
            frame_bytes_queued_max: bounds.frame_bytes_queued_max,
            bytes_queued_max: bounds.bytes_queued_max,
        }
    }

    /// Whether none is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The next exchange whose streamed body was dropped (it ended, or its
    /// client went away); pending while no stream was made.
    pub(crate) async fn next_closed(&mut self) -> HttpId {
        match &mut self.closed {
            // Never `None`: the sender is held here.
            Some((_, rx)) => match rx.recv().await {
                Some(http) => http,
                None => std::future::pending().await,
            },
            None => std::future::pending().await,
        }
    }

    /// Lets the channel go when nothing is open (an owner parking): the
    /// bodies of streams that ended still hold senders, whose reports no
    /// longer matter (the core counted those exchanges over already). The
    /// emptied map's node goes too (`mcp_streamable::release`).
    /// Ended streams still draining are no longer counted: a parked owner
    /// keeps nothing (their bodies hold what their clients have yet to read,
    /// at most `frame_bytes_queued_max` each).
    pub(crate) fn release(&mut self) {
        if self.open.is_empty() {
            self.closed = None;
            self.draining = BTreeMap::new();
            self.sessions = BTreeMap::new();
        }
        self.open.release_if_empty();
    }

    fn closed_tx(&mut self) -> ClosedTx {
        self.closed
            .get_or_insert_with(mpsc::unbounded_channel)
            .0
            .clone()
    }

    /// Exchange `http`, whose request named `session`, waits for its head,
    /// to be sent on `reply`; `cut` closes its connection.
    pub(crate) fn awaiting(
        &mut self,
        http: HttpId,
        session: Option<SessionId>,
        reply: oneshot::Sender<Reply>,
        cut: Option<ConnCut>,
    ) {
        self.open.insert(http, Exchange::AwaitingHead(reply, cut));
        if let Some(session) = session {
            self.sessions.insert(http, session);
        }
    }

    /// Exchange `http`, still awaiting its head, belongs to `session` (the
    /// core's routing, which a request's header only anticipates).
    pub(crate) fn assign(&mut self, http: HttpId, session: SessionId) {
        if self.open.contains_key(&http) {
            self.sessions.insert(http, session);
        }
    }

    /// Exchange `http` is over (its body was dropped).
    pub(crate) fn remove(&mut self, http: HttpId) {
        self.open.remove(&http);
        self.draining.remove(&http);
        self.sessions.remove(&http);
    }

    /// Forgets `http`'s session once it is neither open nor draining.
    fn settle(&mut self, http: HttpId) {
        if !self.open.contains_key(&http) && !self.draining.contains_key(&http) {
            self.sessions.remove(&http);
        }
    }

    /// Moves `write` to exchange `http`. The exchanges whose clients were
    /// cut off for it (too slow, or the most behind once the budget is
    /// passed), which the core must be told are over, are added to
    /// `cut_off`; this one may be among them.
    pub(crate) fn write(&mut self, http: HttpId, write: Write, cut_off: &mut Vec<HttpId>) {
        let ends = write.ends();
        match (self.open.remove(&http), write) {
            (Some(Exchange::AwaitingHead(reply, _)), Write::Whole { head, body }) => {
                let _ = reply.send((head, ResponseBody::full(Bytes::from(body))));
            }
            (Some(Exchange::AwaitingHead(reply, cut)), Write::Open { head, body }) => {
                let closed = self.closed_tx();
                let (tx, rx) = mpsc::channel(self.frames_queued_max);
                let queued = Arc::new(AtomicUsize::new(body.len()));
                if !body.is_empty() {
                    let _ = tx.try_send(Bytes::from(body));
                }
                if reply
                    .send((head, ResponseBody::stream(http, rx, queued.clone(), closed)))
                    .is_ok()
                {
                    self.open.insert(http, Exchange::Streaming(tx, queued, cut));
                }
            }
            (Some(Exchange::Streaming(tx, queued, cut)), Write::More(body) | Write::Last(body)) => {
                let len = body.len();
                // Counted before it is sent: the body subtracts what it takes.
                let behind = len > 0
                    && queued.fetch_add(len, Ordering::AcqRel) + len > self.frame_bytes_queued_max;
                if len > 0 && (behind || tx.try_send(Bytes::from(body)).is_err()) {
                    if let Some(cut) = &cut {
                        cut.cut();
                    }
                    cut_off.push(http);
                    self.settle(http);
                    return;
                }
                if !ends {
                    self.open.insert(http, Exchange::Streaming(tx, queued, cut));
                } else if queued.load(Ordering::Acquire) > 0 {
                    self.draining.insert(http, Draining { queued, cut });
                }
            }
            // The core writes a head first and once: nothing else can come.
            (Some(exchange), _) => {
                self.open.insert(http, exchange);
            }
            (None, _) => {}
        }
        let session = self.sessions.get(&http).cloned();
        self.settle(http);
        self.keep_within_budget(session.as_ref(), cut_off);
    }

    /// Bytes queued on every stream, ended ones still draining included.
    #[cfg(test)]
    pub(crate) fn bytes_queued(&self) -> usize {
        let open = self.open.values().map(|e| match e {
            Exchange::Streaming(_, queued, _) => queued.load(Ordering::Acquire),
            Exchange::AwaitingHead(..) => 0,
        });
        let draining = self
            .draining
            .values()
            .map(|d| d.queued.load(Ordering::Acquire));
        open.chain(draining).sum()
    }

    /// Bytes queued on the streams of `session` (of the requests that named
    /// none, for `None`), ended ones still draining included.
    pub(crate) fn bytes_queued_in(&self, session: Option<&SessionId>) -> usize {
        let open = self.open.iter().filter_map(|(h, e)| match e {
            Exchange::Streaming(_, queued, _) if self.is_in(*h, session) => {
                Some(queued.load(Ordering::Acquire))
            }
            _ => None,
        });
        let draining = self
            .draining
            .iter()
            .filter(|(h, _)| self.is_in(**h, session))
            .map(|(_, d)| d.queued.load(Ordering::Acquire));
        open.chain(draining).sum()
    }

    fn is_in(&self, http: HttpId, session: Option<&SessionId>) -> bool {
        self.sessions.get(&http) == session
    }

    /// Cuts `session`'s clients furthest behind until what is queued on its
    /// streams is within `bytes_queued_max`; the open ones cut go to
    /// `cut_off`.
    fn keep_within_budget(&mut self, session: Option<&SessionId>, cut_off: &mut Vec<HttpId>) {
        let mut total = self.bytes_queued_in(session);
        while total > self.bytes_queued_max {
            let open = self.open.iter().filter_map(|(h, e)| match e {
                Exchange::Streaming(_, q, _) if self.is_in(*h, session) => {
                    Some((q.load(Ordering::Acquire), *h, true))
                }
                _ => None,
            });
            let draining = self
                .draining
                .iter()
                .filter(|(h, _)| self.is_in(**h, session))
                .map(|(h, d)| (d.queued.load(Ordering::Acquire), *h, false));
            let Some((queued, http, is_open)) = open.chain(draining).max() else {
                return;
            };
            if queued == 0 {
                return;
            }
            let cut = if is_open {
                cut_off.push(http);
                match self.open.remove(&http) {
                    Some(Exchange::Streaming(_, _, cut)) => cut,
                    _ => None,
                }
            } else {
                self.draining.remove(&http).and_then(|d| d.cut)
            };
            if let Some(cut) = cut {
                cut.cut();
            }
            self.settle(http);
            total -= queued;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(bytes_queued_max: usize) -> QueueBounds {
        QueueBounds {
            frames_queued_max: 16,
            frame_bytes_queued_max: 1000,
            bytes_queued_max,
        }
    }

    fn head() -> WireHead {
        WireHead {
            status: 200,
            headers: Vec::new(),
        }
    }

    /// Opens stream `h` with `first` bytes queued; its body is kept (never
    /// read) in `bodies`.
    fn open(x: &mut Exchanges, h: u64, first: usize, bodies: &mut Vec<Reply>) -> ConnCut {
        open_in(x, None, h, first, bodies)
    }

    /// [`open`] for a request that named `session`.
    fn open_in(
        x: &mut Exchanges,
        session: Option<u128>,
        h: u64,
        first: usize,
        bodies: &mut Vec<Reply>,
    ) -> ConnCut {
        let cut = ConnCut::new();
        let (tx, mut rx) = oneshot::channel();
        x.awaiting(
            HttpId(h),
            session.map(SessionId::from_bits),
            tx,
            Some(cut.clone()),
        );
        let mut cut_off = Vec::new();
        let open = Write::Open {
            head: head(),
            body: vec![b'x'; first],
        };
        x.write(HttpId(h), open, &mut cut_off);
        assert!(cut_off.is_empty());
        bodies.push(rx.try_recv().expect("the head and body"));
        cut
    }

    fn is_cut(cut: &ConnCut) -> bool {
        let fut = cut.cut_off();
        futures_now(fut)
    }

    /// Whether `fut` is ready at its first poll.
    fn futures_now(fut: impl std::future::Future<Output = ()>) -> bool {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut fut = std::pin::pin!(fut);
        fut.as_mut().poll(&mut cx).is_ready()
    }

    #[test]
    fn each_session_has_its_own_budget() {
        let mut x = Exchanges::new(bounds(2_000));
        let mut bodies = Vec::new();
        // The stream of the session named 2 holds the most (900 bytes), but
        // it is not in the budget of the one named 1.
        let a = open_in(&mut x, Some(1), 1, 800, &mut bodies);
        let other = open_in(&mut x, Some(2), 2, 900, &mut bodies);
        let b = open_in(&mut x, Some(1), 3, 700, &mut bodies);
        assert_eq!(x.bytes_queued(), 2_400, "three streams, two budgets");
        let c = open_in(&mut x, Some(1), 4, 0, &mut bodies);
        let mut cut_off = Vec::new();
        x.write(HttpId(4), Write::More(vec![b'y'; 600]), &mut cut_off);
        assert_eq!(
            cut_off,
            [HttpId(1)],
            "the furthest behind of the one named 1"
        );
        assert!(is_cut(&a) && !is_cut(&b) && !is_cut(&c) && !is_cut(&other));
        let one = SessionId::from_bits(1);
        assert_eq!(x.bytes_queued_in(Some(&one)), 1_300);
        assert_eq!(x.bytes_queued_in(Some(&SessionId::from_bits(2))), 900);
        // What named no session is a group of its own.
        let init = open(&mut x, 5, 990, &mut bodies);
        assert!(!is_cut(&init) && !is_cut(&other));
        assert_eq!(x.bytes_queued_in(None), 990);
        x.remove(HttpId(2));
        assert_eq!(x.bytes_queued_in(Some(&SessionId::from_bits(2))), 0);
        // The core's routing, once known, decides: a request that named no
        // session joins the one it was routed to (awaiting its head only).
        let (tx, _rx) = oneshot::channel();
        x.awaiting(HttpId(6), None, tx, None);
        x.assign(HttpId(6), SessionId::from_bits(3));
        x.assign(HttpId(1), SessionId::from_bits(3));
        x.write(
            HttpId(6),
            Write::Open {
                head: head(),
                body: vec![b'z'; 10],
            },
            &mut cut_off,
        );
        assert_eq!(x.bytes_queued_in(Some(&SessionId::from_bits(3))), 10);
        assert_eq!(x.bytes_queued_in(None), 990);
    }

    #[test]
    fn past_the_budget_the_stream_furthest_behind_is_cut_first() {
        let mut x = Exchanges::new(bounds(2_000));
        let mut bodies = Vec::new();
        let a = open(&mut x, 1, 900, &mut bodies);
        let b = open(&mut x, 2, 500, &mut bodies);
        assert_eq!(x.bytes_queued(), 1_400);
        let mut cut_off = Vec::new();
        // Stream 3's first 700 bytes pass 2,000: stream 1 (900) goes.
        let c = open(&mut x, 3, 0, &mut bodies);
        x.write(HttpId(3), Write::More(vec![b'y'; 700]), &mut cut_off);
        assert_eq!(cut_off, [HttpId(1)]);
        assert!(is_cut(&a) && !is_cut(&b) && !is_cut(&c));
        assert_eq!(x.bytes_queued(), 1_200);
    }

    #[test]
    fn an_ended_stream_nobody_reads_still_counts_and_is_cut_without_telling_the_core() {
        let mut x = Exchanges::new(bounds(1_500));
        let mut bodies = Vec::new();
        let a = open(&mut x, 1, 800, &mut bodies);
        let mut cut_off = Vec::new();
        x.write(HttpId(1), Write::Last(vec![b'z'; 100]), &mut cut_off);
        assert!(cut_off.is_empty(), "ended, not cut");
        assert_eq!(x.bytes_queued(), 900, "its unread bytes still count");
        let b = open(&mut x, 2, 0, &mut bodies);
        x.write(HttpId(2), Write::More(vec![b'y'; 700]), &mut cut_off);
        assert!(
            cut_off.is_empty(),
            "the ended one is cut; the core counted it over already"
        );
        assert!(is_cut(&a) && !is_cut(&b));
        // Its body dropped (read or gone): forgotten.
        x.remove(HttpId(1));
        assert_eq!(x.bytes_queued(), 700);
    }

    #[test]
    fn one_stream_past_its_own_bound_is_cut() {
        let mut x = Exchanges::new(bounds(1 << 20));
        let mut bodies = Vec::new();
        let a = open(&mut x, 1, 600, &mut bodies);
        let mut cut_off = Vec::new();
        x.write(HttpId(1), Write::More(vec![b'y'; 600]), &mut cut_off);
        assert_eq!(cut_off, [HttpId(1)]);
        assert!(is_cut(&a));
    }
}
