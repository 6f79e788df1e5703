//! The floor's server (`net-floor serve`): answers each message of a turn with the update and the
//! response, and a `FLOOD n` message with n updates and the response, over the transport asked.
//!
//! - `tcp`: one message per line, both ways.
//! - `http`: the shape of Streamable HTTP as our server speaks it: `GET` opens an SSE stream,
//!   each `POST` body is a client message, answered `202`, and what the agent sends goes out on
//!   the stream as `data:` events.
//! - `ws`: one message per text frame, both ways (tokio-tungstenite's handshake).

use crate::wire::{flood_count, Socket, Tls, RESPONSE, UPDATE};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::io;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

/// Which transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Http,
    Ws,
}

impl Transport {
    pub fn parse(text: &str) -> Option<Transport> {
        match text {
            "tcp" => Some(Transport::Tcp),
            "http" => Some(Transport::Http),
            "ws" => Some(Transport::Ws),
            _ => None,
        }
    }
}

/// Listens on loopback, prints `listening on ADDR` and serves until killed.
pub async fn serve(transport: Transport, tls: Tls) -> io::Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("listening on {}", listener.local_addr()?);
    let stream: Arc<Mutex<Option<mpsc::Sender<Bytes>>>> = Arc::default();
    loop {
        let (tcp, _) = listener.accept().await?;
        let (tls, stream) = (tls.clone(), stream.clone());
        tokio::spawn(async move {
            let Ok(socket) = tls.wrap(tcp).await else { return };
            let _ = match transport {
                Transport::Tcp => serve_lines(socket).await,
                Transport::Ws => serve_ws(socket).await,
                Transport::Http => serve_http(socket, stream).await,
            };
        });
    }
}

async fn serve_lines(socket: Socket) -> io::Result<()> {
    let (read, write) = tokio::io::split(socket);
    let (mut read, mut write) = (BufReader::new(read), BufWriter::with_capacity(64 * 1024, write));
    let mut line = Vec::new();
    loop {
        line.clear();
        if read.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        for _ in 0..flood_count(&line).unwrap_or(1) {
            write.write_all(UPDATE).await?;
            write.write_all(b"\n").await?;
        }
        write.write_all(RESPONSE).await?;
        write.write_all(b"\n").await?;
        write.flush().await?;
    }
}

async fn serve_ws(socket: Socket) -> io::Result<()> {
    let mut ws = tokio_tungstenite::accept_async(socket).await.map_err(io::Error::other)?;
    let (update, response) = (Bytes::from_static(UPDATE), Bytes::from_static(RESPONSE));
    let text = |b: &Bytes| Message::Text(b.clone().try_into().expect("UTF-8"));
    while let Some(message) = ws.next().await {
        let count = match message.map_err(io::Error::other)? {
            Message::Text(t) => flood_count(t.as_bytes()).unwrap_or(1),
            Message::Close(_) => return Ok(()),
            _ => continue,
        };
        for _ in 0..count {
            ws.feed(text(&update)).await.map_err(io::Error::other)?;
        }
        ws.send(text(&response)).await.map_err(io::Error::other)?;
    }
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

/// One SSE event of `data`.
fn event(data: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(data.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(data);
    out.extend_from_slice(b"\n\n");
    out.into()
}

async fn serve_http(socket: Socket, stream: Arc<Mutex<Option<mpsc::Sender<Bytes>>>>) -> io::Result<()> {
    let (update, response) = (event(UPDATE), event(RESPONSE));
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let (stream, update, response) = (stream.clone(), update.clone(), response.clone());
        async move {
            let empty = |status| {
                let mut r = Response::new(Empty::new().boxed());
                *r.status_mut() = status;
                r
            };
            if request.method() == Method::GET {
                let (tx, rx) = mpsc::channel::<Bytes>(1024);
                *stream.lock().expect("lock") = Some(tx);
                // What is queued goes out as one frame, up to 64 events (as our server's writer
                // gathers them): one write per event would make the floor slower than ours.
                let frames = futures_util::stream::unfold(rx, |mut rx| async move {
                    let first = rx.recv().await?;
                    let mut batch = Vec::with_capacity(first.len() * 4);
                    batch.extend_from_slice(&first);
                    for _ in 1..64 {
                        let Ok(next) = rx.try_recv() else { break };
                        batch.extend_from_slice(&next);
                    }
                    Some((Ok::<_, Infallible>(Frame::data(Bytes::from(batch))), rx))
                });
                let mut r = Response::new(BodyExt::boxed(StreamBody::new(frames)));
                r.headers_mut().insert("content-type", "text/event-stream".parse().expect("header"));
                return Ok::<Response<Body>, Infallible>(r);
            }
            let Ok(body) = request.into_body().collect().await else { return Ok(empty(StatusCode::BAD_REQUEST)) };
            let count = flood_count(&body.to_bytes()).unwrap_or(1);
            let Some(tx) = stream.lock().expect("lock").clone() else { return Ok(empty(StatusCode::CONFLICT)) };
            for _ in 0..count {
                let _ = tx.send(update.clone()).await;
            }
            let _ = tx.send(response).await;
            Ok(empty(StatusCode::ACCEPTED))
        }
    });
    hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(socket), service)
        .await
        .map_err(io::Error::other)
}
