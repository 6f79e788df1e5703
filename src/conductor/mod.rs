//! The conductor (feature `unstable`): runs a chain of proxies in front of an agent and presents
//! it as one agent, as the official conductor (`agent-client-protocol-conductor` 5.0.0) does.
//!
//! ```text
//! editor <-> conductor <-> component 0 <-> … <-> component N-1 (the agent)
//!        link 0        link 1                  link N
//! ```
//!
//! Each component is a program spawned with its stdio as the link to the conductor. The
//! conductor sends `proxy/initialize` (the params of `initialize`) to every component that has a
//! successor and `initialize` to the last, and routes the `proxy/successor` envelopes the proxies
//! use to talk to their successors. Messages are forwarded as raw JSON (fields and variants it
//! does not know pass unchanged); only the envelope is taken off or put on and `initialize`
//! renamed. Requests go on, and answers go back unchanged, after the notifications their sender
//! wrote before them.
//! Ids are per link, and cancellation is per hop: the editor's `$/cancel_request`, or a proxy's
//! of a `proxy/successor` request, cancels the conductor's own request downstream with its own
//! `$/cancel_request`, and the answer that comes back (the agent's cancelled outcome) is passed
//! on. A `proxy/successor` from the editor, from the agent, or wrapped in another
//! is refused with -32600 (a notification dropped); a malformed envelope is -32602, and the chain
//! goes on serving.
//!
//! The chain is started when its editor connects (the official conductor starts it at the first
//! `initialize`, to choose it by the request; this one's components are fixed, and a component
//! that cannot start is reported at once). Messages before `initialize` go to component 0 like
//! any other, which refuses them as an agent or a proxy does (the official conductor answers
//! -32600 itself).
//!
//! Versions: the conductor sends on the protocol version the editor asks for in `initialize`
//! unless it speaks only lower ones (1 and 2 here), then the highest it speaks; the editor gets
//! the chain's answer.
//!
//! The chain ends as one unit: when the editor closes its side, every component's stdin is
//! closed at once, each is given [`SpawnOptions::grace`](crate::spawn::SpawnOptions::grace) to
//! exit (1 s by default), then its process group is sent `SIGTERM` and, after the term grace
//! (500 ms), `SIGKILL`: less than a client gives the conductor itself (see [`Conductor::new`]). Each
//! component runs in a process group of its own (what it starts, behind `npx` or a shell, is
//! ended with it), and every group is ended. When a component ends before the editor leaves,
//! the requests waiting on the chain are answered with an error that names it, and the rest of
//! the chain is ended.
//!
//! With [`Conductor::trace`], every message of every link is recorded, one JSON line each,
//! `{"from": "client"|"agent", "link": K, "message": …}`, in the order the conductor reads and
//! writes them: link 0 is editor <-> conductor (the editor is `client`), link K >= 1 conductor <->
//! component K-1 (the conductor is `client`, the component `agent`). `acp check` reads it.
//!
//! One job per module: `chain` the components and their processes (spawn, end as one unit);
//! `router` the links' services (where each message goes, and the refusals of envelopes where
//! none belongs; the envelope itself is the crate's, shared with the proxy role); `version` the version sent on; `trace` the transcript and the
//! links' transport; `serve` the [`Conductor`] and the life of one chain.
//!
//! The `acp conduct agent COMPONENT…` command of the `acp` tool runs it.

mod chain;
mod router;
mod serve;
mod trace;
mod version;

pub use chain::Component;
pub use serve::Conductor;
