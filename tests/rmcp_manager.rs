//! `CoreSessionManager` driven through rmcp's `SessionManager` trait as
//! rmcp's service drives it, with the test as the session's handler (its
//! `CoreTransport`): the bounds the adapter adds (`inbox_max`,
//! `stream_queued_max`), admission through the manager's table, and a
//! session's end reaching the handler and the table.
#![cfg(feature = "rmcp")]

use mcp_streamable::error::RequestError;
use mcp_streamable_rmcp::{CoreConfig, CoreError, CoreSessionManager, CoreStream, CoreTransport};
use rmcp::model::GetExtensions;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::OriginatingRequestId;
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::Transport;
use serde_json::{json, Value};
use std::pin::Pin;
use std::time::Duration;

fn client(v: Value) -> ClientJsonRpcMessage {
    serde_json::from_value(v).unwrap()
}

fn server(v: Value) -> ServerJsonRpcMessage {
    serde_json::from_value(v).unwrap()
}

fn json_of<T: serde::Serialize>(m: &T) -> Value {
    serde_json::to_value(m).unwrap()
}

/// The next event of `stream`: `Some(None)` when it ended, `None` when
/// nothing came within a second.
async fn next(stream: &mut CoreStream) -> Option<Option<ServerSseMessage>> {
    let poll =
        std::future::poll_fn(|cx| futures_core::Stream::poll_next(Pin::new(&mut *stream), cx));
    tokio::time::timeout(Duration::from_secs(1), poll)
        .await
        .ok()
}

/// A session through `initialize` and `notifications/initialized`, the test
/// its handler.
async fn open(manager: &CoreSessionManager) -> (SessionId, CoreTransport) {
    let (id, mut handler) = manager.create_session().await.unwrap();
    let init = client(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}}),
    );
    let (answer, ()) = tokio::join!(manager.initialize_session(&id, init), async {
        let m = handler.receive().await.unwrap();
        assert_eq!(json_of(&m)["method"], "initialize");
        handler
            .send(server(json!({"jsonrpc": "2.0", "id": 1, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "test", "version": "0"}}})))
            .await
            .unwrap();
    });
    assert_eq!(json_of(&answer.unwrap())["id"], 1);
    manager
        .accept_message(
            &id,
            client(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
        )
        .await
        .unwrap();
    let m = handler.receive().await.unwrap();
    assert_eq!(json_of(&m)["method"], "notifications/initialized");
    (id, handler)
}

fn changed() -> ClientJsonRpcMessage {
    client(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}))
}

#[tokio::test]
async fn a_handler_inbox_max_behind_refuses_the_next_message_until_it_reads() {
    let manager = CoreSessionManager::new(CoreConfig {
        inbox_max: 2,
        ..CoreConfig::default()
    });
    let (id, mut handler) = open(&manager).await;
    manager.accept_message(&id, changed()).await.unwrap();
    manager.accept_message(&id, changed()).await.unwrap();
    let refused = manager.accept_message(&id, changed()).await;
    assert!(
        matches!(refused, Err(CoreError::HandlerBehind { max: 2 })),
        "{refused:?}"
    );
    // A request needs room too.
    let ping = client(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let refused = manager.create_stream(&id, ping).await;
    assert!(
        matches!(refused, Err(CoreError::HandlerBehind { max: 2 })),
        "{:?}",
        refused.err()
    );
    assert!(handler.receive().await.is_some());
    manager.accept_message(&id, changed()).await.unwrap();
    for _ in 0..2 {
        let m = handler.receive().await.unwrap();
        assert_eq!(json_of(&m)["method"], "notifications/roots/list_changed");
    }
}

#[tokio::test]
async fn a_reader_stream_queued_max_behind_is_dropped_and_resumes_losing_nothing() {
    let manager = CoreSessionManager::new(CoreConfig {
        stream_queued_max: 2,
        ..CoreConfig::default()
    });
    let (id, mut handler) = open(&manager).await;
    let mut get = manager.create_standalone_stream(&id).await.unwrap();
    for n in 0..5 {
        handler
            .send(server(
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": n}}),
            ))
            .await
            .unwrap();
    }
    // Nobody read: the stream holds what fit, then ends (dropped as slow).
    let mut seen = Vec::new();
    let mut last_id = None;
    loop {
        match next(&mut get).await {
            Some(Some(event)) => {
                last_id = event.event_id.clone().or(last_id);
                if let Some(m) = event.message {
                    seen.push(json_of(&*m)["params"]["data"].as_i64().unwrap());
                }
            }
            Some(None) => break,
            None => panic!("a reader this far behind is dropped, its stream ended"),
        }
    }
    assert!(
        seen.len() <= 2,
        "at most stream_queued_max events were queued: {seen:?}"
    );
    // The replay is longer than the bound: it still fits (a reader that
    // fell behind can catch up by resuming).
    assert!(5 - seen.len() > 2, "{seen:?}");
    drop(get);
    // Resumed from the last event it had: the rest, once each, in order.
    let last_id = last_id.expect("an event id before the drop");
    let mut resumed = manager.resume(&id, last_id).await.unwrap();
    while seen.len() < 5 {
        match next(&mut resumed).await {
            Some(Some(event)) => {
                if let Some(m) = event.message {
                    seen.push(json_of(&*m)["params"]["data"].as_i64().unwrap());
                }
            }
            other => panic!("the resumed stream stopped at {seen:?}: {other:?}"),
        }
    }
    assert_eq!(seen, vec![0, 1, 2, 3, 4]);
}

#[tokio::test]
async fn admission_refuses_while_the_only_session_is_busy_and_evicts_it_once_idle() {
    let mut config = CoreConfig::default();
    config.admission.sessions_max = 1;
    let manager = CoreSessionManager::new(config);
    let (first, mut handler) = open(&manager).await;
    let ping = client(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    let mut stream = manager.create_stream(&first, ping).await.unwrap();
    assert_eq!(json_of(&handler.receive().await.unwrap())["method"], "ping");

    // Initialized and busy: nobody to evict.
    let refused = manager.create_session().await;
    assert!(
        matches!(refused, Err(CoreError::Refused(RequestError::SessionLimit))),
        "{:?}",
        refused.err()
    );
    assert_eq!(manager.sessions(), 1);

    handler
        .send(server(json!({"jsonrpc": "2.0", "id": 2, "result": {}})))
        .await
        .unwrap();
    loop {
        match next(&mut stream).await {
            Some(Some(event)) if event.message.is_some() => break,
            Some(Some(_)) => {}
            other => panic!("the answer did not come: {other:?}"),
        }
    }
    drop(stream);

    // Idle now: the new session evicts it; its handler's read ends.
    let (second, _handler) = manager.create_session().await.unwrap();
    assert!(!manager.has_session(&first).await.unwrap());
    assert!(manager.has_session(&second).await.unwrap());
    assert_eq!(manager.sessions(), 1);
    assert!(handler.receive().await.is_none());
}

#[tokio::test]
async fn delete_ends_the_handler_and_leaves_the_table() {
    let manager = CoreSessionManager::default();
    let (id, mut handler) = open(&manager).await;
    let unknown = SessionId::from("no-such-session");
    assert!(manager.has_session(&id).await.unwrap());
    assert!(!manager.has_session(&unknown).await.unwrap());
    assert_eq!(manager.sessions(), 1);
    manager.accept_message(&id, changed()).await.unwrap();
    manager.close_session(&id).await.unwrap();
    // What was delivered before the end is still read, then the end.
    assert_eq!(
        json_of(&handler.receive().await.unwrap())["method"],
        "notifications/roots/list_changed"
    );
    assert!(handler.receive().await.is_none());
    assert!(!manager.has_session(&id).await.unwrap());
    assert_eq!(manager.sessions(), 0);
    let after = manager.accept_message(&id, changed()).await;
    assert!(matches!(after, Err(CoreError::UnknownSession)), "{after:?}");
}

#[tokio::test]
async fn a_server_request_rides_the_stream_of_the_request_it_serves() {
    let manager = CoreSessionManager::default();
    let (id, mut handler) = open(&manager).await;
    let mut get = manager.create_standalone_stream(&id).await.unwrap();
    let call = client(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "t"}}));
    let mut post = manager.create_stream(&id, call).await.unwrap();
    assert_eq!(json_of(&handler.receive().await.unwrap())["id"], 2);
    // Sent while serving request 2 (rmcp marks it with the origin).
    let mut ping = server(json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
    if let ServerJsonRpcMessage::Request(r) = &mut ping {
        r.request
            .extensions_mut()
            .insert(OriginatingRequestId(rmcp::model::RequestId::Number(2)));
    }
    handler.send(ping).await.unwrap();
    let on_post = loop {
        match next(&mut post).await {
            Some(Some(event)) => {
                if let Some(m) = event.message {
                    break json_of(&*m);
                }
            }
            other => panic!("nothing on the request's stream: {other:?}"),
        }
    };
    assert_eq!(on_post["method"], "ping");
    // And not on the GET.
    loop {
        match next(&mut get).await {
            Some(Some(event)) => assert!(event.message.is_none(), "{event:?}"),
            None => break,
            Some(None) => panic!("the GET ended"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_session_expires_on_the_adapters_clock() {
    let mut config = CoreConfig::default();
    config.session.idle_timeout_ms = Some(1_000);
    let manager = CoreSessionManager::new(config);
    let (id, mut handler) = open(&manager).await;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert!(manager.has_session(&id).await.unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!manager.has_session(&id).await.unwrap());
    assert_eq!(manager.sessions(), 0);
    assert!(handler.receive().await.is_none());
}
