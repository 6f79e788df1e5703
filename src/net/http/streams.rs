//! The SSE streams (`GET` with `Accept: text/event-stream`): the connection's, opened after
//! `initialize`, and one per session, opened before the first message naming the session or as
//! soon as a `session/new` answer names it. Each runs in a task of its own, parsing events and
//! handing them to the core. The connection's stream ending, or any stream failing to open, ends
//! the transport; a session's stream ending fails that session's requests still waiting.

use http_body_util::BodyExt;
use hyper::header::ACCEPT;
use hyper::Method;
use std::io;
use std::sync::Arc;
use tokio::sync::watch;

use super::exchange::{body_text, id_key, read_body, status_error, Shared, CONNECTION_ID, SESSION_ID};
use super::sse::SseParser;
use crate::net::{envelope, Kind, EVENT_STREAM};

/// Opens the connection's stream in a task of its own.
pub(super) fn open_connection_stream(shared: &Arc<Shared>) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let stop = shared.stop.clone();
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            result = read_stream(&shared, None, None) => result,
        };
        let why = match result {
            Ok(()) => "the connection's event stream ended".to_string(),
            Err(e) => format!("the connection's event stream: {e}"),
        };
        shared.fail(io::Error::new(io::ErrorKind::ConnectionAborted, why));
    });
}

/// The readiness of `session`'s stream, opening it (in a task) unless it is open or opening.
pub(super) fn session_stream(shared: &Arc<Shared>, session: &str) -> watch::Receiver<bool> {
    let (generation, ready_tx) = match shared.routes().session(session) {
        Ok(ready) => return ready,
        Err(opening) => opening,
    };
    let ready = ready_tx.subscribe();
    let (shared, session) = (shared.clone(), session.to_string());
    tokio::spawn(async move {
        let stop = shared.stop.clone();
        let result = tokio::select! {
            _ = stop.cancelled() => return,
            result = read_stream(&shared, Some(&session), Some(ready_tx)) => result,
        };
        if let Err(e) = result {
            shared.fail(io::Error::new(e.kind(), format!("the event stream of session {session}: {e}")));
            return;
        }
        // The answers of this session's requests in flight can no longer come.
        let failed = shared.routes().session_ended(&session, generation);
        for id in failed {
            shared.fail_request(&id, "ACP session SSE stream closed", None).await;
        }
    });
    ready
}

/// Opens a stream and hands its events to the core until it ends.
async fn read_stream(
    shared: &Arc<Shared>,
    session: Option<&str>,
    ready: Option<watch::Sender<bool>>,
) -> io::Result<()> {
    let connection_id = shared.connection_id.get().cloned().unwrap_or_default();
    let mut headers = vec![(ACCEPT, EVENT_STREAM), (CONNECTION_ID, connection_id.as_str())];
    if let Some(session) = session {
        headers.push((SESSION_ID, session));
    }
    let response = shared.send(Method::GET, &headers, Vec::new()).await?;
    let status = response.status();
    if !status.is_success() {
        let body = read_body(response.into_body(), 8 << 10, true).await.unwrap_or_default();
        let what = "ACP SSE connection failed";
        return Err(io::Error::new(io::ErrorKind::ConnectionRefused, status_error(what, status, &body_text(&body))));
    }
    if let Some(ready) = ready {
        ready.send_replace(true);
    }
    let mut body = response.into_body();
    let mut parser = SseParser::new(shared.max);
    let mut events = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| io::Error::new(io::ErrorKind::ConnectionAborted, e))?;
        if let Ok(data) = frame.into_data() {
            parser.push(&data, &mut events).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            deliver(shared, session, &mut events).await?;
        }
    }
    parser.finish(&mut events).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    deliver(shared, session, &mut events).await
}

/// Routes and hands over the events parsed so far.
async fn deliver(shared: &Arc<Shared>, session: Option<&str>, events: &mut Vec<Vec<u8>>) -> io::Result<()> {
    for event in events.drain(..) {
        let env = match envelope(&event) {
            Ok(env) => env,
            // As the TypeScript SDK: what is not one JSON object is not a message.
            Err(e) => {
                tracing::warn!("acp http: an SSE event of {} bytes skipped ({e:?})", event.len());
                continue;
            }
        };
        if let Some(created) = &env.result_session_id {
            // Opened now, so that the session's first updates are not missed.
            session_stream(shared, created);
        }
        if let Some(id) = &env.id {
            let mut routes = shared.routes();
            match (env.kind, session) {
                (Kind::Request, Some(session)) => {
                    routes.agent_requests.insert(id_key(id), session.to_string());
                }
                (Kind::Response, _) => {
                    routes.our_requests.remove(&id_key(id));
                }
                _ => {}
            }
        }
        if !shared.deliver(event).await {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the connection is closed"));
        }
    }
    Ok(())
}
