//! A raw HTTP/1.1 server over `std::net` for tests that need a peer no SDK
//! would be: each connection's one request read (its request line and its
//! `Content-Length` body), answered with whatever bytes the test returns,
//! then closed.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;

/// One request as the raw server read it.
pub struct RawRequest {
    /// The request line (`POST /mcp HTTP/1.1\r\n`).
    pub line: String,
    /// The header lines, as sent.
    pub head: String,
    /// The body (as long as its `Content-Length` said, or what arrived).
    pub body: Vec<u8>,
}

impl RawRequest {
    /// Whether it is a POST.
    pub fn is_post(&self) -> bool {
        self.line.starts_with("POST")
    }
}

/// A response head: `status` (e.g. `200 OK`), `Content-Type`, a session id
/// `s1`, a `Content-Length` of `length`, and `Connection: close`.
pub fn head(status: &str, ctype: &str, length: usize) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nMcp-Session-Id: s1\r\n\
         Content-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

/// Serves on a free loopback port, a thread per connection: each request
/// is answered with `respond(request)`'s bytes.
pub fn serve(respond: impl Fn(&RawRequest) -> Vec<u8> + Send + Sync + 'static) -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let respond = Arc::new(respond);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                let mut line = String::new();
                let _ = reader.read_line(&mut line);
                let (mut length, mut head) = (0, String::new());
                loop {
                    let mut header = String::new();
                    if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
                        break;
                    }
                    head.push_str(&header);
                    if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let _ = out.write_all(&respond(&RawRequest { line, head, body }));
            });
        }
    });
    addr
}
