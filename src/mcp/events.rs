//! The SSE events of one bridged HTTP response, queued between the task that runs the call and
//! the HTTP body that sends them, with a byte budget: an HTTP client that reads slower than the
//! provider notifies cannot make the bridge hold an unbounded backlog. What overflows is
//! refused, and the bridge then ends the stream with a -33000 (as the TypeScript bridge does
//! when its response buffer passes `maxBufferedResponseBytes`, `dist/mcp/http.js`).

use crate::sync::lock;
use bytes::Bytes;
use std::collections::VecDeque;
use std::sync::Mutex;
use tokio::sync::Notify;

/// One response's events: many pushes, one reader.
pub(crate) struct EventQueue {
    state: Mutex<State>,
    ready: Notify,
    budget: usize,
}

#[derive(Default)]
struct State {
    events: VecDeque<Bytes>,
    /// The bytes of `events`.
    bytes: usize,
    /// The last event is queued: nothing more comes.
    ended: bool,
}

impl EventQueue {
    /// A queue that holds at most `budget` bytes of events not yet read (the last event aside).
    pub(crate) fn new(budget: usize) -> Self {
        EventQueue { state: Mutex::default(), ready: Notify::new(), budget }
    }

    /// Queues `event`; false, and nothing queued, when it would pass the budget or the queue
    /// has ended.
    pub(crate) fn push(&self, event: Bytes) -> bool {
        {
            let mut state = lock(&self.state);
            if state.ended || state.bytes + event.len() > self.budget {
                return false;
            }
            state.bytes += event.len();
            state.events.push_back(event);
        }
        self.ready.notify_one();
        true
    }

    /// Queues the last event, whatever the budget (it is one small JSON-RPC message); later
    /// pushes are refused.
    pub(crate) fn finish(&self, last: Bytes) {
        {
            let mut state = lock(&self.state);
            if state.ended {
                return;
            }
            state.bytes += last.len();
            state.events.push_back(last);
            state.ended = true;
        }
        self.ready.notify_one();
    }

    /// The next event, waiting for one; `None` once the last has been read.
    pub(crate) async fn next(&self) -> Option<Bytes> {
        loop {
            {
                let mut state = lock(&self.state);
                if let Some(event) = state.events.pop_front() {
                    state.bytes -= event.len();
                    return Some(event);
                }
                if state.ended {
                    return None;
                }
            }
            // `notify_one` keeps a permit when no one waits: a push between the check and
            // here is not missed.
            self.ready.notified().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt as _;

    fn bytes(n: usize) -> Bytes {
        Bytes::from(vec![b'x'; n])
    }

    #[test]
    fn events_past_the_budget_are_refused_and_the_last_still_goes() {
        let queue = EventQueue::new(10);
        assert!(queue.push(bytes(6)));
        assert!(queue.push(bytes(4)));
        assert!(!queue.push(bytes(1)), "11 bytes held is past a budget of 10");
        queue.finish(bytes(20));
        assert!(!queue.push(bytes(1)), "nothing after the last event");
        let read: Vec<usize> = std::iter::from_fn(|| queue.next().now_or_never().flatten()).map(|e| e.len()).collect();
        assert_eq!(read, [6, 4, 20]);
        assert_eq!(queue.next().now_or_never(), Some(None), "ended");
    }

    #[test]
    fn what_is_read_frees_the_budget() {
        let queue = EventQueue::new(10);
        assert!(queue.push(bytes(10)));
        assert!(!queue.push(bytes(1)));
        assert_eq!(queue.next().now_or_never().flatten().map(|e| e.len()), Some(10));
        assert!(queue.push(bytes(10)), "the reader took the first ten bytes");
    }

    #[test]
    fn the_reader_waits_for_an_event() {
        let queue = EventQueue::new(10);
        let mut next = Box::pin(queue.next());
        assert_eq!((&mut next).now_or_never(), None, "nothing queued yet");
        assert!(queue.push(bytes(3)));
        assert_eq!(next.now_or_never().flatten().map(|e| e.len()), Some(3));
    }
}
