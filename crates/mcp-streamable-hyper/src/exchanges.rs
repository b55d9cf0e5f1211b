//! [`Exchanges`]: the open HTTP exchanges of one owner task, and the moving
//! of its driver's [`Write`]s to them. Written once for the session shell
//! and the fleet shell.
//!
//! An exchange waits for its head (the connection task holds the other end
//! of a oneshot), then is either answered whole or streamed: frames go on a
//! bounded channel to the response body, with the bytes queued in them
//! counted. A client that does not read is cut off at either bound (its
//! stream stays resumable): the caller tells its core the exchange is over.

use super::body::{ClosedTx, ResponseBody};
use bytes::Bytes;
use mcp_streamable::ids::HttpId;
use mcp_streamable::release::Release;
use mcp_streamable::server::wire::{WireHead, Write};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

/// A head and its body, for the connection task to hand to hyper.
pub(crate) type Reply = (WireHead, ResponseBody);

enum Exchange {
    AwaitingHead(oneshot::Sender<Reply>),
    /// Frames to the body, and the bytes still queued in them.
    Streaming(mpsc::Sender<Bytes>, Arc<AtomicUsize>),
}

/// The open exchanges of one owner task (see the module docs).
pub(crate) struct Exchanges {
    open: BTreeMap<HttpId, Exchange>,
    /// Streamed bodies report their end here. Made with the first stream and
    /// let go by [`Exchanges::release`]: a whole answer reports nothing (its
    /// exchange was over for the core when written), so an owner that only
    /// answers whole never makes one, and a parked one keeps none.
    closed: Option<(ClosedTx, mpsc::UnboundedReceiver<HttpId>)>,
    frames_queued_max: usize,
    frame_bytes_queued_max: usize,
}

/// What [`Exchanges::write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// Moved (or nothing to move it to).
    Done,
    /// The client is too slow (or gone): the exchange is dropped here, and
    /// the core must be told it is over.
    TooSlow,
}

impl Exchanges {
    /// No exchanges yet.
    pub(crate) fn new(frames_queued_max: usize, frame_bytes_queued_max: usize) -> Self {
        Exchanges {
            open: BTreeMap::new(),
            closed: None,
            frames_queued_max,
            frame_bytes_queued_max,
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
    pub(crate) fn release(&mut self) {
        if self.open.is_empty() {
            self.closed = None;
        }
        self.open.release_if_empty();
    }

    fn closed_tx(&mut self) -> ClosedTx {
        self.closed
            .get_or_insert_with(mpsc::unbounded_channel)
            .0
            .clone()
    }

    /// Exchange `http` waits for its head, to be sent on `reply`.
    pub(crate) fn awaiting(&mut self, http: HttpId, reply: oneshot::Sender<Reply>) {
        self.open.insert(http, Exchange::AwaitingHead(reply));
    }

    /// Exchange `http` is over.
    pub(crate) fn remove(&mut self, http: HttpId) {
        self.open.remove(&http);
    }

    /// Moves `write` to exchange `http`.
    pub(crate) fn write(&mut self, http: HttpId, write: Write) -> Written {
        let ends = write.ends();
        match (self.open.remove(&http), write) {
            (Some(Exchange::AwaitingHead(reply)), Write::Whole { head, body }) => {
                let _ = reply.send((head, ResponseBody::full(Bytes::from(body))));
            }
            (Some(Exchange::AwaitingHead(reply)), Write::Open { head, body }) => {
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
                    self.open.insert(http, Exchange::Streaming(tx, queued));
                }
            }
            (Some(Exchange::Streaming(tx, queued)), Write::More(body) | Write::Last(body)) => {
                let len = body.len();
                // Counted before it is sent: the body subtracts what it takes.
                let behind = len > 0
                    && queued.fetch_add(len, Ordering::AcqRel) + len > self.frame_bytes_queued_max;
                if len > 0 && (behind || tx.try_send(Bytes::from(body)).is_err()) {
                    return Written::TooSlow;
                }
                if !ends {
                    self.open.insert(http, Exchange::Streaming(tx, queued));
                }
            }
            // The core writes a head first and once: nothing else can come.
            (Some(exchange), _) => {
                self.open.insert(http, exchange);
            }
            (None, _) => {}
        }
        Written::Done
    }
}
