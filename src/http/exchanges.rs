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
use crate::ids::HttpId;
use crate::server::wire::{WireHead, Write};
use bytes::Bytes;
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
    closed_tx: ClosedTx,
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
    /// No exchanges yet; bodies report their end on `closed_tx`.
    pub(crate) fn new(
        closed_tx: ClosedTx,
        frames_queued_max: usize,
        frame_bytes_queued_max: usize,
    ) -> Self {
        Exchanges {
            open: BTreeMap::new(),
            closed_tx,
            frames_queued_max,
            frame_bytes_queued_max,
        }
    }

    /// Whether none is open.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
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
                let closed = self.closed_tx.clone();
                let _ = reply.send((head, ResponseBody::full(http, Bytes::from(body), closed)));
            }
            (Some(Exchange::AwaitingHead(reply)), Write::Open { head, body }) => {
                let closed = self.closed_tx.clone();
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
