//! The ceiling: hyper, a JSON parse of the request, the SSE bytes of an
//! answer (priming event + response), nothing else. One task per connection.
//! The same bytes `serve` answers a `tools/call` with: its headers
//! (`cache-control`, `x-accel-buffering`), a 32-digit session id and event ids
//! of its shape, so that the client's side of a request costs the same.
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let id = v.get("id").cloned().unwrap_or(serde_json::Value::Null);
    let text = v
        .pointer("/params/arguments/text")
        .cloned()
        .unwrap_or_default();
    let response = serde_json::json!({"jsonrpc": "2.0", "id": id,
        "result": {"content": [{"type": "text", "text": text}]}});
    let sse =
        format!("id: 7b9a48f9-2-1\nretry: 1000\ndata: \n\nid: 7b9a48f9-2-2\ndata: {response}\n\n");
    let mut r = hyper::Response::new(Full::new(Bytes::from(sse)));
    r.headers_mut()
        .insert("content-type", "text/event-stream".parse().unwrap());
    r.headers_mut()
        .insert("cache-control", "no-cache".parse().unwrap());
    r.headers_mut()
        .insert("x-accel-buffering", "no".parse().unwrap());
    r.headers_mut().insert(
        "mcp-session-id",
        "4f68812225f2c516784c9c0916016a4a".parse().unwrap(),
    );
    Ok(r)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(3005);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("bare ready");
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(answer))
                .await;
        });
    }
}
