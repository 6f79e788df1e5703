//! What both ends keep of a connection's lifecycle, and the rules they keep with it: the
//! version `initialize` agreed on (nothing but `initialize` before it: rule `init.first`), and
//! the running work of each session, so that `session/cancel` reaches all of it at once.
//! Crate-private: the agent and client modules build their services on it.

use crate::rules::RuleId;
use crate::sync::lock;
use acp_types::support::rpc::{same_wire_name, Method, RpcError};
use acp_types::{v1, v2, MethodName, Version};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Wire names the runtime sends or names in its errors (it routes by [`MethodName`]): the same
/// in every version, which the build checks against each version's marker (should a version
/// rename one, the code that sends it must change too).
macro_rules! same_in_every_version {
    ($($(#[$doc:meta])* $name:ident = $marker:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) const $name: &str = MethodName::$marker.as_str();
        const _: () = assert!(
            same_wire_name($name, v1::methods::$marker::METHOD) && same_wire_name($name, v2::methods::$marker::METHOD),
            concat!("v1 and v2 name ", stringify!($marker), " apart")
        );
    )*};
}

same_in_every_version! {
    /// `initialize`.
    INITIALIZE = Initialize;
    /// `session/prompt`.
    SESSION_PROMPT = SessionPrompt;
}

/// -32600 for a request before `initialize` agreed a version: no version to decode it with.
/// `why` says what the receiving end lacks; `rule` names the rule broken, when one binds the
/// sender (the agent refusing a client's early request: `init.first`, "The client MUST send an
/// `initialize` request before any other request"; no rule says so of the agent's requests).
pub(crate) fn not_initialized(method: &str, why: &str, rule: Option<RuleId>) -> RpcError {
    let data = match rule {
        Some(rule) => json!({ "method": method, "rule": rule }),
        None => json!({ "method": method }),
    };
    RpcError::new(RpcError::INVALID_REQUEST, format!("{method} before initialize: {why}")).with_data(data)
}

/// The session a message is about: its top-level `sessionId`.
pub(crate) fn session_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "sessionId")]
        session_id: Option<String>,
    }
    params.and_then(|p| serde_json::from_str::<Probe>(p.get()).ok()).and_then(|p| p.session_id)
}

/// The protocol version a connection agreed on, shared by its tasks; none before `initialize`.
#[derive(Clone, Default)]
pub(crate) struct Negotiated(Arc<AtomicU16>);

impl Negotiated {
    /// The agreed version, if any.
    pub(crate) fn get(&self) -> Option<Version> {
        // 0 (no version) is no protocol version number.
        Version::from_number(self.0.load(Ordering::SeqCst))
    }

    pub(crate) fn set(&self, version: Version) {
        self.0.store(version.number(), Ordering::SeqCst);
    }

    /// No version agreed (an `initialize` that failed).
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::SeqCst);
    }
}

/// Running work by session: every request that names a `sessionId` is registered under it
/// while it runs, so that `session/cancel` (and, on the agent, `session/close`) cancels it all.
#[derive(Default)]
pub(crate) struct SessionWork {
    running: Mutex<HashMap<String, Vec<(u64, CancellationToken)>>>,
    next: AtomicU64,
}

/// Unregisters its work on drop.
pub(crate) struct Registration {
    work: Arc<SessionWork>,
    session: String,
    key: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut running = lock(&self.work.running);
        if let Some(list) = running.get_mut(&self.session) {
            list.retain(|(k, _)| *k != self.key);
            if list.is_empty() {
                running.remove(&self.session);
            }
        }
    }
}

impl SessionWork {
    /// Registers `token` under `session` until the registration is dropped.
    pub(crate) fn register(self: &Arc<Self>, session: String, token: CancellationToken) -> Registration {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.running).entry(session.clone()).or_default().push((key, token));
        Registration { work: self.clone(), session, key }
    }

    /// Registers `token` under the session `params` names, if they name one.
    pub(crate) fn register_params(
        self: &Arc<Self>,
        params: Option<&RawValue>,
        token: &CancellationToken,
    ) -> Option<Registration> {
        session_of(params).map(|session| self.register(session, token.clone()))
    }

    /// Cancels everything running for `session`.
    pub(crate) fn cancel(&self, session: &str) {
        if let Some(list) = lock(&self.running).get(session) {
            for (_, token) in list {
                token.cancel();
            }
        }
    }
}
