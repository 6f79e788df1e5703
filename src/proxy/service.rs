//! The proxy on its connection to the conductor: each message routed to its hook by where it
//! comes from (a plain message from the predecessor, a `proxy/successor` envelope from the
//! successor), `proxy/initialize` answered through the successor, and the lifecycle rules kept
//! (ids in [`crate::rules`]): nothing before `proxy/initialize` (`init.first`), `initialize`
//! forwarded before answering (`proxy.forward-initialize`) with the successor's version
//! (`proxy.same-version`), envelopes checked (`proxy.successor-params`).

use super::context::{protocol_version, version_of, ProxyContext, Scope};
use super::handler::ProxyHandler;
use super::message::{Notification, Request};
use crate::envelope::{self, PROXY_INITIALIZE, PROXY_SUCCESSOR};
use crate::jsonrpc::{BoxFuture, Connection, Raw, RequestContext, Service};
use crate::lifecycle::{not_initialized, Negotiated, INITIALIZE};
use crate::rules::RuleId;
use acp_types::support::rpc::RpcError;
use acp_types::{MethodName, Version};
use serde_json::json;
use serde_json::value::RawValue;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub(super) struct ProxyService<H> {
    handler: Arc<H>,
    state: Arc<State>,
}

impl<H> ProxyService<H> {
    pub(super) fn new(handler: Arc<H>) -> Self {
        ProxyService { handler, state: Arc::default() }
    }
}

/// What `proxy/initialize` agreed, shared by the tasks of the connection.
#[derive(Default)]
struct State {
    initialized: AtomicBool,
    /// The version the successor answered (none when this build does not know it).
    version: Negotiated,
}

impl State {
    fn version(&self) -> Option<Version> {
        self.version.get()
    }
}

/// -32600 for a plain `initialize`: a proxy is initialized by its conductor.
fn not_under_conductor() -> RpcError {
    RpcError::new(
        RpcError::INVALID_REQUEST,
        format!(
            "this is an ACP proxy: it runs under a conductor, which sends it {PROXY_INITIALIZE}, not {INITIALIZE} \
             (e.g. `acp conduct agent \"PROXY\" \"AGENT\"`)"
        ),
    )
    .with_data(json!({ "method": INITIALIZE, "expected": PROXY_INITIALIZE }))
}

/// -32603 for an `initialize` answer the proxy must not give, naming the rule.
fn broken(rule: RuleId, why: String) -> RpcError {
    RpcError::internal(format!("the proxy cannot answer {PROXY_INITIALIZE}: {why} (rule {rule})"))
        .with_data(json!({ "method": PROXY_INITIALIZE, "rule": rule }))
}

/// Releases the hold on the notifications, should the hook be dropped before it answered.
struct ReleaseOnDrop(Arc<Scope>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        drop(self.0.close());
    }
}

/// Answers with `result` and lets the notifications behind a forwarded answer go once it is
/// queued (or once the error is, as the request's deferred work is then dropped).
fn answer(result: Result<Raw, RpcError>, scope: &Scope, rcx: &RequestContext) -> Result<Raw, RpcError> {
    if let Some(hold) = scope.close() {
        rcx.after_response(async move { hold.release() });
    }
    result
}

impl<H: ProxyHandler> Service for ProxyService<H> {
    fn request(&self, method: String, params: Option<Raw>, rcx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let handler = self.handler.clone();
        let state = self.state.clone();
        Box::pin(async move {
            let name = MethodName::of(&method);
            match name {
                Some(MethodName::Initialize) => return Err(not_under_conductor()),
                Some(MethodName::ProxyInitialize) => return initialize(&*handler, &state, params, &rcx).await,
                _ => {}
            }
            if !state.initialized.load(Ordering::SeqCst) {
                let why = format!("the first request must be {PROXY_INITIALIZE}, from the conductor");
                return Err(not_initialized(&method, &why, Some(RuleId::InitFirst)));
            }
            let (from_agent, request) = if matches!(name, Some(MethodName::ProxySuccessor)) {
                let inner = envelope::unwrap(params.as_deref())?;
                (true, Request::new(inner.method, inner.params))
            } else {
                (false, Request::new(method, params))
            };
            let version = state.version();
            // What the peer sent before this request goes on before it.
            rcx.connection().sync_notifications().await;
            let scope = Arc::new(Scope::open());
            let _release = ReleaseOnDrop(scope.clone());
            let cx =
                ProxyContext::new(rcx.connection().clone(), version, rcx.cancellation().clone(), Some(scope.clone()));
            let request = request.with_version(version);
            let result = if from_agent {
                handler.agent_request(request, cx).await
            } else {
                handler.client_request(request, cx).await
            };
            answer(result.map(|r| r.into_raw()), &scope, &rcx)
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, conn: Connection) -> BoxFuture<()> {
        if !self.state.initialized.load(Ordering::SeqCst) {
            tracing::warn!("acp: notification {method} before {PROXY_INITIALIZE} ignored");
            return Box::pin(async {});
        }
        let (from_agent, notification) = if matches!(MethodName::of(&method), Some(MethodName::ProxySuccessor)) {
            match envelope::unwrap(params.as_deref()) {
                Ok(inner) => (true, Notification::new(inner.method, inner.params)),
                Err(e) => {
                    tracing::warn!("acp: {PROXY_SUCCESSOR} notification dropped: {e}");
                    return Box::pin(async {});
                }
            }
        } else {
            (false, Notification::new(method, params))
        };
        let version = self.state.version();
        let notification = notification.with_version(version);
        let handler = self.handler.clone();
        let cx = ProxyContext::new(conn, version, CancellationToken::new(), None);
        Box::pin(async move {
            let method = notification.method().to_string();
            let (result, from) = if from_agent {
                (handler.agent_notification(notification, cx).await, "agent")
            } else {
                (handler.client_notification(notification, cx).await, "client")
            };
            if let Err(e) = result {
                tracing::warn!("acp: notification {method} from the {from} not passed on: {e}");
            }
        })
    }
}

/// `proxy/initialize`: the hook forwards `initialize` to the successor; its answer is ours, with
/// the successor's `protocolVersion`, which the connection speaks from then on.
async fn initialize<H: ProxyHandler>(
    handler: &H,
    state: &State,
    params: Option<Raw>,
    rcx: &RequestContext,
) -> Result<Raw, RpcError> {
    let scope = Arc::new(Scope::open());
    let _release = ReleaseOnDrop(scope.clone());
    let cx = ProxyContext::new(rcx.connection().clone(), None, rcx.cancellation().clone(), Some(scope.clone()));
    let request = Request::new(INITIALIZE, params.clone()).with_version(requested_version(params.as_deref()));
    let response = handler.initialize(request, cx).await;
    let result = response.and_then(|response| {
        let Some(answered) = scope.successor_version() else {
            let why = format!("it did not forward {INITIALIZE} to its successor (through {PROXY_SUCCESSOR}) first");
            return Err(broken(RuleId::ProxyForwardInitialize, why));
        };
        let ours = protocol_version(response.result());
        if ours.as_ref() != Some(&answered) {
            let ours = ours.map_or_else(|| "none".to_string(), |v| v.to_string());
            let why = format!("its answer changed protocolVersion from the successor's {answered} to {ours}");
            return Err(broken(RuleId::ProxySameVersion, why));
        }
        match version_of(&answered) {
            Some(version) => state.version.set(version),
            None => state.version.clear(),
        }
        state.initialized.store(true, Ordering::SeqCst);
        Ok(response.into_raw())
    });
    answer(result, &scope, rcx)
}

/// The highest version this build knows at or below the one an `initialize` asks for (none when
/// the params name none: the successor judges them).
fn requested_version(params: Option<&RawValue>) -> Option<Version> {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "protocolVersion")]
        protocol_version: u16,
    }
    let requested = serde_json::from_str::<Probe>(params?.get()).ok()?.protocol_version;
    Version::ALL.iter().copied().filter(|v| v.number() <= requested).max()
}
