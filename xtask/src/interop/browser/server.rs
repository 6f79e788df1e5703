//! The page's local HTTP server: `GET /` (any query) is the page, `POST /result` a page's
//! outcomes (JSON), kept for the scenario to wait on; one request per connection.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// The page every scenario loads.
const PAGE: &str = include_str!("../../../../interop/browser/page.html");

/// A local HTTP server of the page: `GET /…` is the page, `POST /result` a page's outcomes.
pub(super) struct PageServer {
    pub(super) port: u16,
    results: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
}

impl PageServer {
    pub(super) fn start() -> std::io::Result<PageServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let (results, stop) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        let (kept, stopped) = (results.clone(), stop.clone());
        thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let kept = kept.clone();
                        thread::spawn(move || serve(stream, &kept));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(PageServer { port, results, stop })
    }

    pub(super) fn results(&self) -> Vec<Value> {
        self.results.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The results once there are `n`, or `None` after `timeout`.
    pub(super) fn wait_for(&self, n: usize, timeout: Duration) -> Option<Vec<Value>> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let results = self.results();
            if results.len() >= n {
                return Some(results);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One request (the connection closed after it).
fn serve(stream: TcpStream, results: &Mutex<Vec<Value>>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let answer = match request_line.split_whitespace().take(2).collect::<Vec<_>>()[..] {
        ["POST", "/result"] => {
            if let Ok(value) = serde_json::from_slice::<Value>(&body) {
                results.lock().unwrap_or_else(|p| p.into_inner()).push(value);
            }
            "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n".to_string()
        }
        ["GET", path] if path == "/" || path.starts_with("/?") => format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n{PAGE}",
            PAGE.len()
        ),
        _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string(),
    };
    let _ = writer.write_all(answer.as_bytes());
}
