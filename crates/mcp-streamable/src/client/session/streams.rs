//! How the client keeps its streams going: a request's stream ending without
//! its response (resume after `retry` with the last id seen on that stream,
//! bounded), the background GET (reconnect with its own last id; a 405
//! disables it), EventSource-style readers (preset), and timers.

use super::{ClientSession, Reader, Role};
use crate::client::{ClientError, ClientTimer};
use crate::head::{Content, Method, RequestHead};
use crate::headers;
use crate::ids::HttpId;
use crate::policy::BackgroundGet;
use crate::time::Instant;
use std::time::Duration;

impl ClientSession {
    /// Exchange `http` is over: the response ended (cleanly or not), or the
    /// connection failed.
    pub fn handle_http_closed(&mut self, http: HttpId, now: Instant) {
        let Some(ex) = self.exchanges.remove(&http) else {
            return;
        };
        match ex.role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                self.request_stream_ended(n, http, &ex, now)
            }
            Role::Background => self.background_ended(http, &ex, now),
            Role::Reader(r) => self.reader_ended(r, http, &ex, now),
            Role::Listen(l, _) => {
                self.listen_stream_ended(crate::client::ListenId(l), http, &ex, now)
            }
            Role::Notify | Role::Delete => {}
        }
        self.connection_freed();
    }

    /// Fires the timers due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        for timer in self.timers.expire(now) {
            match timer {
                ClientTimer::Deadline(n) => self.give_up(n, ClientError::Timeout, true, now),
                ClientTimer::Resume(n) => self.resume(n, now),
                ClientTimer::Background => self.open_background(),
                ClientTimer::Reader(r) => self.reopen_reader(r),
                ClientTimer::Relisten(l) => self.relisten(crate::client::ListenId(l), now),
            }
        }
    }

    fn request_stream_ended(&mut self, n: i64, http: HttpId, ex: &super::Exchange, now: Instant) {
        let Some(p) = self.pending.get_mut(&n) else {
            return;
        };
        if p.http != Some(http) {
            return;
        }
        p.http = None;
        self.policy
            .resume_cursor
            .after_end(&mut p.last_id, ex.last_id.as_deref());
        if let Some(max) = ex.too_large {
            self.give_up(n, ClientError::TooLarge { max }, true, now);
            return;
        }
        // JSON (or 202/204) that ended without our response is worth a
        // cancellation; a refusal is not. What it held instead, if anything
        // the client could not use, is the better reason.
        let why = ex.flaw.unwrap_or("answer ended without the response");
        if let Some(error) = ex.refusal(why) {
            if matches!(error, ClientError::Malformed(_))
                && ex.content == Content::Json
                && self.policy.json_without_response.waits(ex.flaw.is_none())
                && !matches!(ex.role, Role::Initialize(_))
            {
                // Taken as accepted: the response is awaited on a stream
                // that will not carry it.
                return;
            }
            let tell_server = matches!(error, ClientError::Malformed(_));
            self.give_up(n, error, tell_server, now);
            return;
        }
        // Nothing to resume from, or (an `initialize`) nothing to resume
        // in: the session is not the client's until the answer arrives.
        if p.last_id.is_none() || matches!(ex.role, Role::Initialize(_)) {
            self.lose_stream(n, ClientError::StreamLost, now);
            return;
        }
        let bound = self.policy.resume_bound;
        let clean = ex.status == Some(200) && ex.content == Content::Sse;
        if bound.made_progress(ex.messages, ex.last_id.is_some(), clean) {
            p.attempts = 0;
            if bound.windowed() {
                p.resuming_since = None;
            }
        }
        p.attempts += 1;
        let since = *p.resuming_since.get_or_insert(now);
        let too_many = p.attempts > self.config.resume_attempts_max;
        let too_long = now.saturating_duration_since(since)
            > Duration::from_millis(self.config.resume_window_ms)
            && bound.windowed();
        if too_many || too_long {
            self.lose_stream(n, ClientError::ResumeExhausted, now);
            return;
        }
        let delay = p.retry_ms.unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Resume(n), now + Duration::from_millis(delay));
    }

    /// Request `n` has no stream left: it fails to its caller, unless the
    /// policy leaves it waiting ([`crate::policy::LostStream`]).
    fn lose_stream(&mut self, n: i64, error: ClientError, now: Instant) {
        if self.policy.lost_stream.fails() {
            self.give_up(n, error, true, now);
        }
    }

    /// Resumes request `n`'s stream: GET with the last id seen on it (R34).
    fn resume(&mut self, n: i64, now: Instant) {
        let Some(p) = self.pending.get(&n) else {
            return;
        };
        if p.http.is_some() {
            return;
        }
        let Some(last) = p.last_id.clone().filter(|_| self.phase.ready()) else {
            // The session is gone: a timer that did nothing would leave the
            // caller waiting for its deadline.
            self.give_up(n, ClientError::StreamLost, false, now);
            return;
        };
        let head = self.get_head(Some(&last));
        let http = self.open(Role::Request(n), head, Vec::new());
        if let Some(p) = self.pending.get_mut(&n) {
            p.http = Some(http);
        }
    }

    fn get_head(&self, last_event_id: Option<&str>) -> RequestHead {
        let mut head = self.session_headers(
            RequestHead::new(Method::Get).with(headers::ACCEPT, headers::MIME_SSE),
        );
        if let Some(l) = last_event_id {
            head = head.with(headers::LAST_EVENT_ID, l);
        }
        head
    }

    /// Opens (or reopens) the standalone background GET, unless it would
    /// take the pool's last free connection (`BackgroundGet::On`): then
    /// once one is freed.
    pub(super) fn open_background(&mut self) {
        if self.background.disabled || self.background.http.is_some() || !self.phase.ready() {
            return;
        }
        let spare = self
            .config
            .connections_max
            .is_none_or(|n| self.exchanges.len() + 1 < n);
        self.background.deferred = !spare && self.policy.background_get == BackgroundGet::On;
        if self.background.deferred {
            return;
        }
        let last = self.background.last_id.clone();
        let head = self.get_head(last.as_deref());
        let http = self.open(Role::Background, head, Vec::new());
        self.background.http = Some(http);
    }

    /// An exchange is over: a background GET deferred for want of a
    /// connection may take the one freed.
    pub(super) fn connection_freed(&mut self) {
        if self.background.deferred {
            self.open_background();
        }
    }

    fn background_ended(&mut self, http: HttpId, ex: &super::Exchange, now: Instant) {
        if self.background.http != Some(http) {
            return;
        }
        self.background.http = None;
        if self.background.disabled || !self.phase.ready() {
            return;
        }
        match ex.status {
            Some(200) if ex.content == Content::Sse => self.background.failures = 0,
            Some(400) if self.background.last_id.is_some() => {
                // The server no longer knows our cursor: start a fresh stream.
                self.background.last_id = None;
                self.background.failures += 1;
            }
            _ => self.background.failures += 1,
        }
        if self.background.failures > self.config.background_failures_max {
            return;
        }
        let delay = self
            .background
            .retry_ms
            .unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Background, now + Duration::from_millis(delay));
    }

    /// EventSource-style: the POST stream that brought a response keeps being
    /// read to its end, then reconnects with its last id (`ReconnectStreams::EveryEnd`).
    pub(super) fn become_reader(&mut self, http: HttpId) {
        let r = self.next_reader;
        self.next_reader += 1;
        let Some(ex) = self.exchanges.get_mut(&http) else {
            return;
        };
        ex.role = Role::Reader(r);
        self.readers.insert(
            r,
            Reader {
                http: Some(http),
                last_id: ex.last_id.clone(),
                retry_ms: ex.retry_ms,
                reconnects: 0,
            },
        );
    }

    fn reader_ended(&mut self, r: u32, http: HttpId, ex: &super::Exchange, now: Instant) {
        let Some(reader) = self.readers.get_mut(&r) else {
            return;
        };
        if reader.http != Some(http) {
            return;
        }
        reader.http = None;
        // WHATWG: a non-200 or non-event-stream answer fails the EventSource.
        let clean = ex.status == Some(200) && ex.content == Content::Sse;
        if !clean || reader.reconnects >= self.config.reader_reconnects_max || !self.phase.ready() {
            self.readers.remove(&r);
            return;
        }
        let delay = reader.retry_ms.unwrap_or(self.config.retry_default_ms);
        self.timers
            .set(ClientTimer::Reader(r), now + Duration::from_millis(delay));
    }

    fn reopen_reader(&mut self, r: u32) {
        let Some(reader) = self.readers.get(&r) else {
            return;
        };
        if reader.http.is_some() || !self.phase.ready() {
            return;
        }
        let last = reader.last_id.clone();
        let head = self.get_head(last.as_deref());
        let http = self.open(Role::Reader(r), head, Vec::new());
        if let Some(reader) = self.readers.get_mut(&r) {
            reader.http = Some(http);
            reader.reconnects += 1;
        }
    }

    /// Records an event id seen on `http` as the cursor of whatever it carries.
    pub(super) fn note_id(&mut self, http: HttpId, id: String) {
        let Some(role) = self.exchanges.get(&http).map(|e| e.role) else {
            return;
        };
        match role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                if let Some(p) = self.pending.get_mut(&n) {
                    p.last_id = Some(id);
                }
            }
            Role::Background => self.background.last_id = Some(id),
            Role::Reader(r) => {
                if let Some(reader) = self.readers.get_mut(&r) {
                    reader.last_id = Some(id);
                }
            }
            Role::Notify | Role::Delete | Role::Listen(..) => {}
        }
    }

    /// Records a `retry` seen on `http`.
    pub(super) fn note_retry(&mut self, http: HttpId, ms: u64) {
        let Some(role) = self.exchanges.get(&http).map(|e| e.role) else {
            return;
        };
        match role {
            Role::Initialize(n) | Role::Request(n) | Role::Round(_, n) => {
                if let Some(p) = self.pending.get_mut(&n) {
                    p.retry_ms = Some(ms);
                }
            }
            Role::Background => self.background.retry_ms = Some(ms),
            Role::Reader(r) => {
                if let Some(reader) = self.readers.get_mut(&r) {
                    reader.retry_ms = Some(ms);
                }
            }
            Role::Notify | Role::Delete | Role::Listen(..) => {}
        }
    }
}
