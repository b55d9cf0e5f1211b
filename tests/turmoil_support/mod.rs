//! What the turmoil tests share: a listener over turmoil's simulated TCP
//! for the hyper shells.

use mcp_streamable_hyper::Listen;

/// A turmoil listener as the shells' [`Listen`].
pub struct SimListener(pub turmoil::net::TcpListener);

impl Listen for SimListener {
    type Io = turmoil::net::TcpStream;
    async fn accept(&mut self) -> std::io::Result<Self::Io> {
        Ok(self.0.accept().await?.0)
    }
}
