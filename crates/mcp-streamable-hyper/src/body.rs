//! The response body the server shell hands to hyper: a whole body known at
//! once (JSON answers, errors, short SSE answers), or a stream fed by the
//! session owner. Dropping a stream tells the owner the exchange is over,
//! whether it ended or the client went away.

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use mcp_streamable::ids::HttpId;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

/// Tells the owner an exchange is over.
pub(crate) type ClosedTx = mpsc::UnboundedSender<HttpId>;

pub(crate) enum Inner {
    Full(Option<Bytes>),
    /// Frames from the owner, and the bytes queued in them (the owner adds,
    /// this body subtracts what hyper has taken).
    Stream(mpsc::Receiver<Bytes>, Arc<AtomicUsize>),
}

/// A response body.
pub struct ResponseBody {
    pub(crate) inner: Inner,
    pub(crate) http: HttpId,
    pub(crate) closed: Option<ClosedTx>,
}

impl ResponseBody {
    /// A whole body. Nobody hears of its end: the core counted the
    /// exchange over when it wrote it whole, so no channel is touched.
    pub(crate) fn full(bytes: Bytes) -> Self {
        ResponseBody {
            inner: Inner::Full((!bytes.is_empty()).then_some(bytes)),
            http: HttpId(0),
            closed: None,
        }
    }

    pub(crate) fn stream(
        http: HttpId,
        rx: mpsc::Receiver<Bytes>,
        queued: Arc<AtomicUsize>,
        closed: ClosedTx,
    ) -> Self {
        ResponseBody {
            inner: Inner::Stream(rx, queued),
            http,
            closed: Some(closed),
        }
    }
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.inner {
            Inner::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Inner::Stream(rx, queued) => rx.poll_recv(cx).map(|b| {
                b.map(|b| {
                    queued.fetch_sub(b.len(), Ordering::AcqRel);
                    Ok(Frame::data(b))
                })
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Inner::Full(None) => SizeHint::with_exact(0),
            Inner::Stream(..) => SizeHint::default(),
        }
    }
}

impl Drop for ResponseBody {
    fn drop(&mut self) {
        if let Some(tx) = self.closed.take() {
            let _ = tx.send(self.http);
        }
    }
}
