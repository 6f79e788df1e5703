//! The floor's client: one connection (two for HTTP: the SSE stream and the POSTs, as our client
//! keeps them), turns one after another, each done when the response has arrived. Messages are
//! counted, never parsed: a line, a text frame, an SSE event (`\n\n`).

use crate::server::Transport;
use crate::wire::{flood_message, Socket, Tls, REQUEST};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::io;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A connected client.
pub enum Client {
    Lines(BufReader<Socket>),
    Ws(Box<WebSocketStream<Socket>>),
    Http {
        posts: SendRequest<Full<Bytes>>,
        events: Events,
        addr: String,
        /// The stream's connection, kept open with it.
        _stream: SendRequest<Full<Bytes>>,
    },
}

/// The SSE stream, counted in events.
pub struct Events {
    body: Incoming,
    /// The last byte seen was a `\n` (an event's end may straddle two frames).
    newline: bool,
}

impl Events {
    /// Reads until `n` more events have ended.
    async fn wait(&mut self, mut n: usize) -> io::Result<()> {
        while n > 0 {
            let frame = self.body.frame().await.ok_or_else(|| io::Error::other("the stream ended"))?;
            let Ok(data) = frame.map_err(|e| io::Error::other(format!("SSE: {e}")))?.into_data() else { continue };
            let mut i = 0;
            while let Some(at) = memchr::memchr(b'\n', &data[i..]) {
                let at = i + at;
                let prev = if at == 0 { self.newline } else { data[at - 1] == b'\n' };
                if prev {
                    n = n.saturating_sub(1);
                }
                i = at + 1;
            }
            // Events are `data: …\n\n`: a `\n` never follows an event's end.
            self.newline = data.last() == Some(&b'\n');
        }
        Ok(())
    }
}

async fn socket(addr: &str, tls: &Tls) -> io::Result<Socket> {
    tls.wrap(TcpStream::connect(addr).await?).await
}

async fn handshake(addr: &str, tls: &Tls) -> io::Result<SendRequest<Full<Bytes>>> {
    let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(socket(addr, tls).await?))
        .await
        .map_err(io::Error::other)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("net-floor: client connection: {e}");
        }
    });
    Ok(send)
}

impl Client {
    pub async fn connect(transport: Transport, addr: &str, tls: &Tls) -> io::Result<Client> {
        match transport {
            Transport::Tcp => Ok(Client::Lines(BufReader::new(socket(addr, tls).await?))),
            Transport::Ws => {
                let scheme = if matches!(tls, Tls::None) { "ws" } else { "wss" };
                let (ws, _) = tokio_tungstenite::client_async(format!("{scheme}://{addr}/"), socket(addr, tls).await?)
                    .await
                    .map_err(io::Error::other)?;
                Ok(Client::Ws(Box::new(ws)))
            }
            Transport::Http => {
                let mut get = handshake(addr, tls).await?;
                let request = Request::get("/")
                    .header("host", addr)
                    .header("accept", "text/event-stream")
                    .body(Full::new(Bytes::new()))
                    .map_err(io::Error::other)?;
                let response = get.send_request(request).await.map_err(|e| io::Error::other(format!("GET: {e}")))?;
                let events = Events { body: response.into_body(), newline: false };
                let posts = handshake(addr, tls).await?;
                Ok(Client::Http { posts, events, addr: addr.to_string(), _stream: get })
            }
        }
    }

    /// One turn: `message` sent, then `replies` messages (the updates and the response) received.
    pub async fn turn(&mut self, message: &[u8], replies: usize) -> io::Result<()> {
        match self {
            Client::Lines(socket) => {
                let mut out = Vec::with_capacity(message.len() + 1);
                out.extend_from_slice(message);
                out.push(b'\n');
                socket.get_mut().write_all(&out).await?;
                let mut line = Vec::new();
                for _ in 0..replies {
                    line.clear();
                    if socket.read_until(b'\n', &mut line).await? == 0 {
                        return Err(io::Error::other("the server hung up"));
                    }
                }
                Ok(())
            }
            Client::Ws(ws) => {
                let text = std::str::from_utf8(message).map_err(io::Error::other)?;
                ws.send(Message::text(text)).await.map_err(io::Error::other)?;
                for _ in 0..replies {
                    ws.next().await.ok_or_else(|| io::Error::other("closed"))?.map_err(io::Error::other)?;
                }
                Ok(())
            }
            Client::Http { posts, events, addr, .. } => {
                let request = Request::post("/")
                    .header("host", addr.as_str())
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::copy_from_slice(message)))
                    .map_err(io::Error::other)?;
                // The events are read while the POST is answered (a stream turn's updates may
                // fill the server's queue before its `202`).
                let post = async {
                    // The connection takes a new request only once the last one is done with.
                    posts.ready().await.map_err(|e| io::Error::other(format!("POST: {e}")))?;
                    let answer =
                        posts.send_request(request).await.map_err(|e| io::Error::other(format!("POST: {e}")))?;
                    answer.into_body().collect().await.map_err(|e| io::Error::other(format!("POST body: {e}")))?;
                    Ok::<_, io::Error>(())
                };
                let (posted, received) = tokio::join!(post, events.wait(replies));
                posted.and(received)
            }
        }
    }

    /// A prompt turn: the request, the update and the response.
    pub async fn prompt(&mut self) -> io::Result<()> {
        self.turn(REQUEST, 2).await
    }

    /// A stream turn: `updates` updates and the response.
    pub async fn flood(&mut self, updates: usize) -> io::Result<()> {
        self.turn(&flood_message(updates), updates + 1).await
    }
}
