//! `mcp-streamable probe URL`: a black-box check of any MCP server's
//! Streamable HTTP layer, over real HTTP, polite and bounded (a handful of
//! requests, each with a timeout). Prints one line per rule: holds, violates,
//! not applicable, or could not test, with the evidence; `--json` for tools.
//! Exits 1 if a MUST rule is violated.
//!
//! This first version covers the session rules and B1; the race A and C
//! probes, replay and priming checks are still to come.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `probe`.
#[derive(clap::Args)]
pub struct ProbeArgs {
    /// The MCP endpoint (http://127.0.0.1:PORT/path).
    url: String,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Holds,
    Violates,
    NotApplicable,
    CouldNotTest,
}

#[derive(serde::Serialize)]
struct Finding {
    rule: &'static str,
    must: bool,
    what: &'static str,
    verdict: Verdict,
    evidence: String,
}

struct Reply {
    status: u16,
    session: Option<String>,
    /// The body ended within the read window.
    ended: bool,
}

struct Target {
    addr: std::net::SocketAddr,
    authority: String,
    path: String,
}

impl Target {
    /// One request on its own connection; reads the body for at most `window`.
    async fn send(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &str,
        window: Duration,
    ) -> Option<Reply> {
        let stream = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(self.addr),
        )
        .await
        .ok()?
        .ok()?;
        stream.set_nodelay(true).ok()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        let driver = tokio::spawn(conn);
        let mut b = hyper::Request::builder()
            .method(method)
            .uri(self.path.as_str())
            .header("host", self.authority.as_str());
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        let req = b.body(Full::new(Bytes::from(body.to_owned()))).ok()?;
        let resp = tokio::time::timeout(Duration::from_secs(5), sender.send_request(req))
            .await
            .ok()?
            .ok()?;
        let status = resp.status().as_u16();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut body = resp.into_body();
        let ended = tokio::time::timeout(window, async {
            while let Some(Ok(_)) = body.frame().await {}
        })
        .await
        .is_ok();
        driver.abort();
        Some(Reply {
            status,
            session,
            ended,
        })
    }
}

const JSON_SSE: &str = "application/json, text/event-stream";
const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-streamable-probe","version":"0"}}}"#;
const PING: &str = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;

pub fn run(args: ProbeArgs) -> Result<ExitCode, String> {
    let (authority, path) =
        mcp_streamable::http::client::split_url(&args.url).map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let findings = rt.block_on(async move {
        let addr = tokio::net::lookup_host(&authority)
            .await
            .map_err(|e| e.to_string())?
            .next()
            .ok_or("no address")?;
        let t = Target {
            addr,
            authority,
            path,
        };
        Ok::<_, String>(probe(&t).await)
    })?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&findings).map_err(|e| e.to_string())?
        );
    } else {
        println!(
            "{:<5} {:<4} {:<15} {:<48} evidence",
            "rule", "must", "verdict", "what"
        );
        for f in &findings {
            println!(
                "{:<5} {:<4} {:<15} {:<48} {}",
                f.rule,
                if f.must { "yes" } else { "" },
                format!("{:?}", f.verdict),
                f.what,
                f.evidence
            );
        }
    }
    let bad = findings
        .iter()
        .any(|f| f.must && f.verdict == Verdict::Violates);
    Ok(if bad {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn finding(
    rule: &'static str,
    must: bool,
    what: &'static str,
    ok: Option<bool>,
    evidence: String,
) -> Finding {
    let verdict = match ok {
        Some(true) => Verdict::Holds,
        Some(false) => Verdict::Violates,
        None => Verdict::CouldNotTest,
    };
    Finding {
        rule,
        must,
        what,
        verdict,
        evidence,
    }
}

async fn probe(t: &Target) -> Vec<Finding> {
    let mut out = Vec::new();
    let quick = Duration::from_millis(300);
    fn post(sid: Option<&str>) -> Vec<(&'static str, &str)> {
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", JSON_SSE),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        if let Some(s) = sid {
            h.push(("mcp-session-id", s));
        }
        h
    }
    // A session to probe with.
    let init = t.send("POST", &post(None), INIT, quick).await;
    let sid = init.as_ref().and_then(|r| r.session.clone());
    out.push(finding(
        "R21",
        true,
        "session id is visible ASCII (0x21-0x7E)",
        sid.as_ref()
            .map(|s| !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b))),
        format!(
            "initialize -> {:?}, Mcp-Session-Id {:?}",
            init.as_ref().map(|r| r.status),
            sid
        ),
    ));
    let Some(sid) = sid else {
        out.push(Finding {
            rule: "-",
            must: false,
            what: "session rules",
            verdict: Verdict::NotApplicable,
            evidence: "the server issued no session id".into(),
        });
        return out;
    };
    let _ = t
        .send(
            "POST",
            &post(Some(&sid)),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            quick,
        )
        .await;

    let r = t.send("POST", &post(None), PING, quick).await;
    out.push(finding(
        "R23",
        false,
        "request without a session id gets 400 (B6: never 401)",
        r.as_ref().map(|r| r.status == 400),
        format!("{:?}", r.map(|r| r.status)),
    ));
    let r = t
        .send(
            "POST",
            &post(Some("0123456789abcdef0123456789abcdef")),
            PING,
            quick,
        )
        .await;
    out.push(finding(
        "R24",
        true,
        "unknown session id gets 404 (B6: never 401)",
        r.as_ref().map(|r| r.status == 404),
        format!("{:?}", r.map(|r| r.status)),
    ));
    let mut bad_version = post(Some(&sid));
    bad_version.retain(|(n, _)| *n != "mcp-protocol-version");
    bad_version.push(("mcp-protocol-version", "1999-01-01"));
    let r = t.send("POST", &bad_version, PING, quick).await;
    out.push(finding(
        "R31",
        true,
        "unsupported MCP-Protocol-Version gets 400",
        r.as_ref().map(|r| r.status == 400),
        format!("{:?}", r.map(|r| r.status)),
    ));
    let mut json_only = post(Some(&sid));
    json_only.retain(|(n, _)| *n != "accept");
    json_only.push(("accept", "application/json"));
    let r = t.send("POST", &json_only, PING, quick).await;
    out.push(finding(
        "R2",
        true,
        "POST whose Accept lacks text/event-stream is refused (4xx)",
        r.as_ref().map(|r| (400..500).contains(&r.status)),
        format!("{:?}", r.map(|r| r.status)),
    ));
    let mut evil = post(Some(&sid));
    evil.push(("origin", "http://evil.example.com"));
    let r = t.send("POST", &evil, PING, quick).await;
    out.push(finding(
        "R42",
        true,
        "invalid Origin gets 403",
        r.as_ref().map(|r| r.status == 403),
        format!("{:?}", r.map(|r| r.status)),
    ));

    // B1: does a second standalone GET end the first?
    let get = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let first = t.send("GET", &get, "", Duration::from_millis(100));
    let b1 = async {
        let (first, second) = tokio::join!(first, async {
            tokio::time::sleep(Duration::from_millis(30)).await;
            t.send("GET", &get, "", Duration::from_millis(50)).await
        });
        (first, second)
    };
    let (g1, g2) = b1.await;
    match (g1, g2) {
        (Some(g1), Some(g2)) if g1.status == 200 && g2.status == 200 => out.push(finding(
            "B1",
            true,
            "a second standalone GET does not end the first",
            Some(!g1.ended),
            format!(
                "GET#1 200 {}, GET#2 200",
                if g1.ended {
                    "ended when GET#2 arrived"
                } else {
                    "stayed open"
                }
            ),
        )),
        (Some(g1), Some(g2)) => out.push(Finding {
            rule: "B1",
            must: true,
            what: "a second standalone GET does not end the first",
            verdict: Verdict::NotApplicable,
            evidence: format!(
                "GET#1 {}, GET#2 {} (one stream per session)",
                g1.status, g2.status
            ),
        }),
        _ => out.push(finding(
            "B1",
            true,
            "a second standalone GET does not end the first",
            None,
            "no answer".into(),
        )),
    }

    let r = t
        .send("DELETE", &[("mcp-session-id", sid.as_str())], "", quick)
        .await;
    let deleted = r.as_ref().is_some_and(|r| (200..300).contains(&r.status));
    let after = t.send("POST", &post(Some(&sid)), PING, quick).await;
    out.push(if deleted {
        finding(
            "R24",
            true,
            "a deleted session's id gets 404",
            after.as_ref().map(|r| r.status == 404),
            format!(
                "DELETE {:?}, then {:?}",
                r.map(|r| r.status),
                after.map(|r| r.status)
            ),
        )
    } else {
        Finding {
            rule: "R26",
            must: false,
            what: "a deleted session's id gets 404",
            verdict: Verdict::NotApplicable,
            evidence: format!("DELETE answered {:?}", r.map(|r| r.status)),
        }
    });
    out
}
