//! What the shells need from the network: a listener that accepts streams,
//! and a connector that opens them. Implemented for tokio TCP here (with
//! TCP_NODELAY: without it each sequential request waits ~40 ms for delayed
//! ACKs); turmoil's simulated TCP implements the same traits in tests.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use tokio::io::{AsyncRead, AsyncWrite};

/// Accepts connections.
pub trait Listen: Send + 'static {
    /// One accepted connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Waits for the next connection.
    fn accept(&mut self) -> impl Future<Output = io::Result<Self::Io>> + Send;
    /// The peer's address, for per-client quotas (none if unknown).
    fn peer(_io: &Self::Io) -> Option<SocketAddr> {
        None
    }
}

impl Listen for tokio::net::TcpListener {
    type Io = tokio::net::TcpStream;
    async fn accept(&mut self) -> io::Result<Self::Io> {
        let (stream, _) = tokio::net::TcpListener::accept(self).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }

    fn peer(io: &Self::Io) -> Option<SocketAddr> {
        io.peer_addr().ok()
    }
}

/// Opens connections to one server.
pub trait Connect: Clone + Send + Sync + 'static {
    /// One open connection.
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Opens a connection.
    fn connect(&self) -> impl Future<Output = io::Result<Self::Io>> + Send;
}

/// Connects over tokio TCP, with TCP_NODELAY.
#[derive(Clone, Debug)]
pub struct TcpConnect(pub SocketAddr);

impl Connect for TcpConnect {
    type Io = tokio::net::TcpStream;
    async fn connect(&self) -> io::Result<Self::Io> {
        let stream = tokio::net::TcpStream::connect(self.0).await?;
        stream.set_nodelay(true)?;
        Ok(stream)
    }
}
