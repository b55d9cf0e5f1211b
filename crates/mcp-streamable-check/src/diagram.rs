//! A counterexample as a sequence diagram: lifelines for each client, each
//! HTTP exchange and the server; one row per observation; the fatal step in
//! red. Rendered as SVG (to look at) and Mermaid (to paste in an issue).

use super::model::Action;
use super::trace::{Replay, Trace};
use crate::monitor::Observation;
use crate::sim::{World, HTTP_ID_STRIDE};
use mcp_streamable::client::{ClientEvent, ClientTransmitKind};
use mcp_streamable::head::Method;
use mcp_streamable::ids::HttpId;
use mcp_streamable::jsonrpc::{self, Message};
use mcp_streamable::server::{Content, TransmitKind};
use mcp_streamable::version::ProtocolVersion;
use std::collections::BTreeMap;
use std::fmt::Write;

/// A lifeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    /// Client `n`.
    Client(usize),
    /// One HTTP exchange (client-side id).
    Exchange(HttpId),
    /// The server.
    Server,
}

/// One row: an arrow between two lanes, or a note on one (`from == to`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The trace step it belongs to.
    pub step: usize,
    /// Where it starts.
    pub from: Lane,
    /// Where it ends.
    pub to: Lane,
    /// What it says.
    pub label: String,
}

/// A sequence diagram of one counterexample.
#[derive(Clone, Debug)]
pub struct Diagram {
    /// Title line.
    pub title: String,
    /// Lanes, left to right, with their labels.
    pub lanes: Vec<(Lane, String)>,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Index of the last step (the fatal one).
    pub fatal_step: usize,
    /// The violation, as a sentence.
    pub violation: String,
}

fn http_name(h: HttpId) -> String {
    let c = h.0 / HTTP_ID_STRIDE;
    let n = h.0 % HTTP_ID_STRIDE;
    if c == 0 {
        format!("h{n}")
    } else {
        format!("c{c}.h{n}")
    }
}

fn summary(m: &Message) -> String {
    match m {
        Message::Request { id, method, .. } => format!("{method}({id})"),
        Message::Notification { method, .. } => method.clone(),
        Message::Response { id, .. } => format!("response({id})"),
        Message::Error { id: Some(id), .. } => format!("error({id})"),
        Message::Error { id: None, .. } => "error".into(),
    }
}

fn content_name(c: Content) -> &'static str {
    match c {
        Content::None => "",
        Content::Json => " application/json",
        Content::Sse => " text/event-stream",
    }
}

impl Diagram {
    /// Builds the diagram of a replayed trace.
    pub fn new(trace: &Trace, replay: &Replay) -> Self {
        let world: &World = &replay.last.world;
        let to_client: BTreeMap<HttpId, HttpId> = (*world.by_server).clone();
        let mut rows = Vec::new();
        let mut exchange_labels: BTreeMap<HttpId, String> = BTreeMap::new();
        let clients = trace.scenario.clients.len();
        for (i, step) in replay.steps.iter().enumerate() {
            match &step.action {
                Action::Tick => rows.push(Row {
                    step: i,
                    from: Lane::Server,
                    to: Lane::Server,
                    label: format!("t = {} ms: timers fire", step.after_ms),
                }),
                Action::TickServer => rows.push(Row {
                    step: i,
                    from: Lane::Server,
                    to: Lane::Server,
                    label: "server's timers fire".into(),
                }),
                Action::TickClient { client } => rows.push(Row {
                    step: i,
                    from: Lane::Client(*client),
                    to: Lane::Client(*client),
                    label: "client's timers fire".into(),
                }),
                Action::Idle { client } => rows.push(Row {
                    step: i,
                    from: Lane::Client(*client),
                    to: Lane::Client(*client),
                    label: "time passes for the client".into(),
                }),
                Action::Drop { http, notice } => rows.push(Row {
                    step: i,
                    from: Lane::Exchange(*http),
                    to: Lane::Exchange(*http),
                    label: if *notice {
                        "connection drops".into()
                    } else {
                        "connection drops (server unaware)".into()
                    },
                }),
                Action::ServerNotices { http } => rows.push(Row {
                    step: i,
                    from: Lane::Exchange(*http),
                    to: Lane::Server,
                    label: "server notices the drop".into(),
                }),
                Action::ServerSchedule { http, point } => rows.push(Row {
                    step: i,
                    from: Lane::Server,
                    to: Lane::Server,
                    label: format!("{point:?} on server exchange {http}"),
                }),
                Action::ClientSchedule { http } => rows.push(Row {
                    step: i,
                    from: Lane::Client(World::owner(*http)),
                    to: Lane::Client(World::owner(*http)),
                    label: "foreground commits initialize".into(),
                }),
                _ => {}
            }
            for o in &step.observations {
                if let Some(row) = Self::row(i, o, &to_client, &mut exchange_labels) {
                    rows.push(row);
                }
            }
        }
        let mut lanes: Vec<(Lane, String)> = (0..clients)
            .map(|c| (Lane::Client(c), format!("client {c}")))
            .collect();
        lanes.extend(
            exchange_labels
                .iter()
                .map(|(h, l)| (Lane::Exchange(*h), format!("{} {l}", http_name(*h)))),
        );
        lanes.push((Lane::Server, "server".into()));
        Diagram {
            title: format!(
                "{}: {} x {}",
                trace.scenario.name, trace.server, trace.client
            ),
            lanes,
            rows,
            fatal_step: replay.steps.len().saturating_sub(1),
            violation: format!(
                "{} violated: {}",
                trace.violation.id, trace.violation.detail
            ),
        }
    }

    fn row(
        step: usize,
        o: &Observation,
        to_client: &BTreeMap<HttpId, HttpId>,
        labels: &mut BTreeMap<HttpId, String>,
    ) -> Option<Row> {
        let ex = |server: HttpId| to_client.get(&server).copied().map(Lane::Exchange);
        let (from, to, label) = match o {
            Observation::ClientTransmit {
                client,
                transmit: t,
            } => {
                let c = Lane::Client(*client);
                let h = World::world_http(*client, t.http);
                match &t.kind {
                    ClientTransmitKind::Send { head, body } => {
                        let label = match head.method {
                            Method::Post => {
                                let what = jsonrpc::parse_body(body, ProtocolVersion::V2025_03_26)
                                    .ok()
                                    .and_then(|b| b.messages().first().map(summary))
                                    .unwrap_or_default();
                                format!("POST {what}")
                            }
                            Method::Get => {
                                match head.header(mcp_streamable::headers::LAST_EVENT_ID) {
                                    Some(l) => format!("GET Last-Event-ID: {l}"),
                                    None => "GET".into(),
                                }
                            }
                            Method::Delete => "DELETE".into(),
                            Method::Other(ref m) => m.clone(),
                        };
                        labels.entry(h).or_insert_with(|| label.clone());
                        (c, Lane::Exchange(h), label)
                    }
                    ClientTransmitKind::Abort => (c, Lane::Exchange(h), "abort".into()),
                }
            }
            Observation::Request { http, .. } => (ex(*http)?, Lane::Server, "arrives".into()),
            Observation::Transmit(t) => {
                let label = match &t.kind {
                    TransmitKind::Head(h) => format!("{}{}", h.status, content_name(h.content)),
                    TransmitKind::Json(m) => format!("JSON {}", summary(m)),
                    TransmitKind::Event {
                        id,
                        message,
                        retry_ms,
                    } => {
                        let id = id.as_deref().unwrap_or("-");
                        match message {
                            Some(o) => format!("event {id}: {}", summary(&o.message)),
                            None => match retry_ms {
                                Some(r) => format!("priming {id}, retry {r}"),
                                None => format!("priming {id}"),
                            },
                        }
                    }
                    TransmitKind::Comment => "keep-alive".into(),
                    TransmitKind::End(r) => format!("end ({r:?})").to_lowercase(),
                };
                (Lane::Server, ex(t.http)?, label)
            }
            Observation::ClientReceived {
                client,
                http,
                message,
            } => (
                Lane::Exchange(World::world_http(*client, *http)),
                Lane::Client(*client),
                summary(message),
            ),
            Observation::ClientClosed { client, http } => (
                Lane::Exchange(World::world_http(*client, *http)),
                Lane::Client(*client),
                "ends".into(),
            ),
            Observation::ClientEvent { client, event: e } => {
                let label = match e {
                    ClientEvent::Initialized { .. } => "app: initialized".to_owned(),
                    ClientEvent::Response { id, .. } => format!("app gets response({id})"),
                    ClientEvent::Failed { id, error } => format!("app: ({id}) failed: {error}"),
                    ClientEvent::FellBack { id, error } => {
                        format!("app: probe ({id}) {error}: session era")
                    }
                    ClientEvent::InputRequired { id, round, .. } => {
                        format!("app: ({id}) needs input, round {round}")
                    }
                    ClientEvent::ServerRequest { method, .. } => format!("app: asked {method}"),
                    ClientEvent::ServerRequestCancelled { id, .. } => {
                        format!("app: ({id}) withdrawn by the server")
                    }
                    ClientEvent::Notification { method, .. } => format!("app: {method}"),
                    ClientEvent::SessionLost => "app: session lost".into(),
                    ClientEvent::BackgroundDisabled => "app: no background GET".into(),
                    ClientEvent::Listening {
                        listen, resumed, ..
                    } => format!(
                        "app: {listen} acknowledged{}: lists",
                        if *resumed { " again" } else { "" }
                    ),
                    ClientEvent::ListenEnded { listen, error } => match error {
                        Some(e) => format!("app: {listen} ended: {e}"),
                        None => format!("app: {listen} complete"),
                    },
                    ClientEvent::ToolRejected { name, .. } => format!("app: tool {name} left out"),
                };
                return Some(Row {
                    step,
                    from: Lane::Client(*client),
                    to: Lane::Client(*client),
                    label,
                });
            }
            Observation::Sent { key, cause, .. } => {
                let why = match cause {
                    mcp_streamable::server::Cause::Request(id) => format!("for request {id}"),
                    mcp_streamable::server::Cause::Unrelated => "unrelated".to_owned(),
                };
                (
                    Lane::Server,
                    Lane::Server,
                    format!("app sends {key}, {why}"),
                )
            }
            Observation::Dropped { key, .. } => {
                (Lane::Server, Lane::Server, format!("drops {key} by policy"))
            }
            Observation::Broadcast { method, .. } => (
                Lane::Server,
                Lane::Server,
                format!("app broadcasts {method}"),
            ),
            Observation::SessionEnded { deleted_by, .. } => (
                Lane::Server,
                Lane::Server,
                match deleted_by {
                    Some(h) => format!("session ends (DELETE on {})", h.0),
                    None => "session ends".to_owned(),
                },
            ),
            Observation::Closed { .. } | Observation::Fault => return None,
        };
        Some(Row {
            step,
            from,
            to,
            label,
        })
    }

    fn x(&self, lane: Lane) -> f64 {
        let i = self.lanes.iter().position(|(l, _)| *l == lane).unwrap_or(0);
        90.0 + 150.0 * i as f64
    }

    /// The diagram as a standalone SVG document.
    pub fn svg(&self) -> String {
        let width = 150.0 * self.lanes.len() as f64 + 40.0;
        let top = 84.0;
        let row_h = 22.0;
        let height = top + row_h * (self.rows.len() as f64 + 2.0) + 30.0;
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="monospace" font-size="11">"#
        );
        s.push_str(r##"<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#333"/></marker><marker id="r" markerWidth="8" markerHeight="8" refX="7" refY="4" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#c00"/></marker></defs>"##);
        let _ = writeln!(
            s,
            r##"<rect width="100%" height="100%" fill="#fff"/><text x="10" y="20" font-size="14" font-weight="bold">{}</text>"##,
            esc(&self.title)
        );
        for (lane, label) in &self.lanes {
            let x = self.x(*lane);
            let (first, second) = label.split_once(' ').unwrap_or((label, ""));
            let _ = writeln!(
                s,
                r##"<rect x="{}" y="30" width="140" height="36" rx="4" fill="#eef" stroke="#88a"/><text x="{x}" y="45" text-anchor="middle" font-weight="bold">{}</text><text x="{x}" y="59" text-anchor="middle" font-size="10">{}</text>"##,
                x - 70.0,
                esc(&clip(first, 22)),
                esc(&clip(second, 24))
            );
            let _ = writeln!(
                s,
                r##"<line x1="{x}" y1="64" x2="{x}" y2="{}" stroke="#bbb" stroke-dasharray="4 3"/>"##,
                height - 20.0
            );
        }
        let mut last_step = usize::MAX;
        for (i, row) in self.rows.iter().enumerate() {
            let y = top + row_h * i as f64 + 14.0;
            let fatal = row.step == self.fatal_step;
            let color = if fatal { "#c00" } else { "#333" };
            if row.step != last_step {
                last_step = row.step;
                let _ = writeln!(
                    s,
                    r##"<line x1="4" y1="{}" x2="{}" y2="{}" stroke="#eee"/><text x="6" y="{}" fill="#999">s{}</text>"##,
                    y - 14.0,
                    width - 4.0,
                    y - 14.0,
                    y - 3.0,
                    row.step
                );
            }
            let (x1, x2) = (self.x(row.from), self.x(row.to));
            if row.from == row.to {
                let text = clip(&row.label, 42);
                let w = text.chars().count() as f64 * 6.7 + 10.0;
                // Notes on the rightmost lane open leftwards, so they stay on the page.
                let left = if x1 + 6.0 + w > width {
                    x1 - 6.0 - w
                } else {
                    x1 + 6.0
                };
                let _ = writeln!(
                    s,
                    r##"<rect x="{left}" y="{}" width="{w}" height="16" rx="3" fill="{}" stroke="{color}"/><text x="{}" y="{}" fill="{color}">{}</text>"##,
                    y - 12.0,
                    if fatal { "#fdd" } else { "#ffd" },
                    left + 5.0,
                    y,
                    esc(&text)
                );
            } else {
                let marker = if fatal { "r" } else { "a" };
                let _ = writeln!(
                    s,
                    r##"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" stroke-width="{}" marker-end="url(#{marker})"/><text x="{}" y="{}" text-anchor="middle" fill="{color}">{}</text>"##,
                    if fatal { 2 } else { 1 },
                    (x1 + x2) / 2.0,
                    y - 4.0,
                    esc(&clip(&row.label, 40))
                );
            }
        }
        let y = top + row_h * self.rows.len() as f64 + 24.0;
        let _ = writeln!(
            s,
            r##"<rect x="10" y="{}" width="{}" height="22" fill="#fdd" stroke="#c00"/><text x="16" y="{}" fill="#c00" font-weight="bold">{}</text>"##,
            y - 15.0,
            width - 20.0,
            y,
            esc(&self.violation)
        );
        s.push_str("</svg>\n");
        s
    }

    /// The diagram as Mermaid `sequenceDiagram` text.
    pub fn mermaid(&self) -> String {
        let id = |lane: Lane| match lane {
            Lane::Client(c) => format!("C{c}"),
            Lane::Exchange(h) => format!("X{}", h.0),
            Lane::Server => "S".to_owned(),
        };
        let mut s = String::from("sequenceDiagram\n");
        let _ = writeln!(s, "    title {}", mermaid_text(&self.title));
        for (lane, label) in &self.lanes {
            let _ = writeln!(
                s,
                "    participant {} as {}",
                id(*lane),
                mermaid_text(label)
            );
        }
        let mut in_fatal = false;
        for row in &self.rows {
            if row.step == self.fatal_step && !in_fatal {
                in_fatal = true;
                s.push_str("    rect rgb(255, 215, 215)\n");
            }
            let label = mermaid_text(&row.label);
            if row.from == row.to {
                let _ = writeln!(s, "    Note over {}: {label}", id(row.from));
            } else {
                let _ = writeln!(s, "    {}->>{}: {label}", id(row.from), id(row.to));
            }
        }
        let _ = writeln!(s, "    Note over S: {}", mermaid_text(&self.violation));
        if in_fatal {
            s.push_str("    end\n");
        }
        s
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn mermaid_text(s: &str) -> String {
    s.replace([';', '#', '\n'], " ").replace("->", "to")
}
