//! # Embedding the server core in a transport
//!
//! The core ([`ServerEndpoint`]) decides everything MCP decides: statuses,
//! headers, which stream a message goes on, what a resumption replays,
//! when an exchange is over. A transport moves bytes and time, and reports
//! what happened to its connections. Most embeddings hold a
//! [`ServerDriver`], which runs the drain the core's contract asks for,
//! hands events to an [`App`], and turns transmits into [`Write`]s: bytes
//! ready for the socket. `examples/blocking.rs` is a whole embedding on
//! `std::net` in one file; `examples/axum.rs` mounts the hyper shell in axum.
//!
//! ## The loop
//!
//! For each input, call one `handle_*`, then drain [`ServerDriver::poll_write`]
//! until it returns `None`, then look at [`ServerDriver::poll_timeout`]:
//!
//! | what happened | call |
//! |---|---|
//! | a request's head and whole body arrived | [`ServerDriver::handle_request`] with `Ok(body)` |
//! | its body could not be read (too large, malformed framing, too slow) | [`ServerDriver::handle_request`] with `Err(`[`UnreadBody`]`)`: the core answers 413, 400 or 408 |
//! | the peer closed a connection an exchange was on, or a write to it failed | [`ServerDriver::handle_http_closed`] |
//! | the deadline [`ServerDriver::poll_timeout`] gave has come | [`ServerDriver::handle_timeout`] |
//!
//! Read the body's size bound with [`body_limit`] before reading it: it says
//! 413 at once when `Content-Length` already exceeds the bound, so nothing
//! is read. Time is an [`Instant`]: milliseconds since an epoch the transport
//! picks (the core never reads a clock).
//!
//! ## Routing writes
//!
//! [`ServerDriver::handle_request`] returns the [`HttpId`] the answer will be
//! written on. Every write names its exchange, and writes for one exchange
//! come in order: [`Write::Whole`] (a complete response, with
//! `Content-Length`) or [`Write::Open`], then [`Write::More`]s, then
//! [`Write::Last`]. [`Write::ends`] says when the exchange is over: forget
//! its route then. Writes for an exchange may come out of *any* input, not
//! only its own request: a notification for a standalone GET comes out of
//! another session's POST, or out of a timer. So a transport keeps a map
//! from `HttpId` to the writer of that connection and sends each write there.
//!
//! - **async** (tokio, async-std): one task per connection holds a channel
//!   receiver; the loop that owns the driver sends each write to the
//!   channel of its `HttpId`. The hyper shell (`http::server`) is built so.
//! - **a thread per request** (`std::net`, `tiny_http`): the same map, with
//!   `std::sync::mpsc` senders; the driver sits behind one mutex that a
//!   thread holds only to hand in an input and drain (never while writing
//!   to a socket). One timer thread sleeps until the earliest deadline.
//!   A new request can move that deadline *earlier* (a new stream's
//!   keep-alive, a new session's handshake timeout): after each input,
//!   compare [`ServerDriver::poll_timeout`] with the one the timer thread
//!   sleeps towards and wake it (a condition variable, or a short tick as
//!   `examples/blocking.rs` does).
//!
//! ## How soon a closed connection must be reported
//!
//! Where a message goes depends on which connections the core believes
//! open. A message unrelated to any request goes on the session's standalone
//! GET; if that GET's connection is dead but not yet reported, the message
//! is written into a dead socket, and only a resumption by `Last-Event-ID`
//! brings it back. The core keeps what it wrote for replay, so nothing is
//! lost for a client that resumes, but a client that opens a *fresh* GET
//! instead gets only what comes after it. So report a close as soon as the
//! transport can know it:
//!
//! - a transport that sees a peer's close at once (a readable EOF, hyper's
//!   body sender failing) calls [`ServerDriver::handle_http_closed`] then;
//! - a transport that learns of a close only when a write fails (many
//!   blocking servers, `tiny_http` among them) needs writes to happen:
//!   lower [`SessionConfig::keepalive_ms`] (15 s by default) so an idle
//!   stream is written to, and its death found, within that time. Each
//!   keep-alive is a comment line, `: keep-alive`, a dozen bytes.
//!
//! `mcp-streamable probe URL` sends the schedules that tell (race B's
//! competing GETs, B4's starved GET): a transport that reports closes late
//! is found there.
//!
//! ## JSON or a stream
//!
//! By default a POST that carries a request is answered with
//! `text/event-stream`, committed at once ([`ResponseMode::Sse`]), which is
//! what lets a client resume it. [`ResponseMode::JsonWhenAlone`] answers
//! `application/json` when the response is the first and only thing to
//! write, and a stream otherwise (progress, a request to the client, a
//! notification related to the call). A call the client cancels before
//! anything was written for it is answered `202` with no body, the head
//! every exchange gets before its end. Set it in
//! [`SessionConfig::response_mode`] through [`EndpointConfig::session`].
//! Requests of the 2026-07-28 era are always answered as the era says,
//! whatever this setting.
//!
//! ## Sessions, eras and limits
//!
//! One endpoint serves every session and both eras: the era is decided per
//! request from its headers and body, and the core answers each in its own
//! way (a session-era `initialize` opens a session; a 2026-07-28 request
//! has none). Every queue has a bound named `*_max`
//! ([`SessionConfig`], [`EndpointConfig`]); what a client sees past each
//! is in `docs/limits.md`. Session ids come from the [`IdSource`] the
//! endpoint was given: [`ServerEndpoint::new`] keys a CSPRNG from the OS.
//!
//! [`ServerEndpoint`]: crate::server::ServerEndpoint
//! [`ServerEndpoint::new`]: crate::server::ServerEndpoint::new
//! [`ServerDriver`]: crate::server::ServerDriver
//! [`ServerDriver::poll_write`]: crate::server::ServerDriver::poll_write
//! [`ServerDriver::poll_timeout`]: crate::server::ServerDriver::poll_timeout
//! [`ServerDriver::handle_request`]: crate::server::ServerDriver::handle_request
//! [`ServerDriver::handle_http_closed`]: crate::server::ServerDriver::handle_http_closed
//! [`ServerDriver::handle_timeout`]: crate::server::ServerDriver::handle_timeout
//! [`App`]: crate::app::App
//! [`Write`]: crate::server::wire::Write
//! [`Write::Whole`]: crate::server::wire::Write::Whole
//! [`Write::Open`]: crate::server::wire::Write::Open
//! [`Write::More`]: crate::server::wire::Write::More
//! [`Write::Last`]: crate::server::wire::Write::Last
//! [`Write::ends`]: crate::server::wire::Write::ends
//! [`UnreadBody`]: crate::server::UnreadBody
//! [`body_limit`]: crate::server::body_limit
//! [`Instant`]: crate::time::Instant
//! [`HttpId`]: crate::ids::HttpId
//! [`SessionConfig`]: crate::server::SessionConfig
//! [`SessionConfig::keepalive_ms`]: crate::server::SessionConfig::keepalive_ms
//! [`SessionConfig::response_mode`]: crate::server::SessionConfig::response_mode
//! [`EndpointConfig`]: crate::server::EndpointConfig
//! [`EndpointConfig::session`]: crate::server::EndpointConfig::session
//! [`ResponseMode::Sse`]: crate::server::ResponseMode::Sse
//! [`ResponseMode::JsonWhenAlone`]: crate::server::ResponseMode::JsonWhenAlone
//! [`IdSource`]: crate::id_source::IdSource
