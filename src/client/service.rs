//! The client's side of a connection as a JSON-RPC service: each message of the agent decoded
//! with the negotiated version and handed to the client's handler, then routed to its session's
//! handle and, for v2 state updates, to the prompt waiting for its turn to end. A permission
//! request of a cancelled session is answered `cancelled` (rule `turn.cancel-permission`).

use super::context::ClientContext;
use super::handler::ClientHandler;
use super::routes::Routes;
use super::states::SessionStates;
use super::turn_end::TurnWaiters;
use crate::jsonrpc::{BoxFuture, Connection, Raw, RequestContext, Service};
use crate::lifecycle::{not_initialized, Negotiated, SessionWork};
use acp_types::support::rpc::RpcError;
use acp_types::{v1, v2, MethodName, Version};
use serde_json::json;
use std::sync::Arc;

pub(super) struct ClientService<C> {
    pub(super) client: Arc<C>,
    pub(super) version: Negotiated,
    pub(super) work: Arc<SessionWork>,
    pub(super) turns: Arc<TurnWaiters>,
    pub(super) routes: Arc<Routes>,
    pub(super) states: Arc<SessionStates>,
    pub(super) conn: Connection,
}

/// -32600 for a request of the agent before the client sent `initialize`: no version is
/// negotiated to decode it with.
fn refused(method: &str) -> RpcError {
    not_initialized(method, "the client has not sent initialize, so no protocol version is agreed", None)
}

/// The answer to a permission request whose turn was cancelled (the same in v1 and v2).
fn cancelled_outcome() -> Raw {
    serde_json::value::to_raw_value(&json!({ "outcome": { "outcome": "cancelled" } })).unwrap_or_else(|_| {
        // Encoding a literal cannot fail; an empty object keeps the signature total.
        serde_json::value::RawValue::from_string("{}".into()).unwrap_or_default()
    })
}

impl<C: ClientHandler> Service for ClientService<C> {
    fn request(&self, method: String, params: Option<Raw>, cx: RequestContext) -> BoxFuture<Result<Raw, RpcError>> {
        let client = self.client.clone();
        let version = self.version.get();
        let work = self.work.clone();
        // A request the schema says changes state (a permission request names a tool call).
        let stateful = version.filter(|v| *v == Version::V2).and_then(|_| v2::state::message_types(&method));
        if let (Some((params_type, _)), Some(Ok(json))) =
            (stateful, params.as_deref().map(|p| serde_json::from_str(p.get())))
        {
            self.states.apply_json(params_type, json);
        }
        // Registered now, while the reader is still on this message: a `session/cancel` right
        // behind it must find it.
        let turn = cx.cancellation().child_token();
        let registered = work.register_params(params.as_deref(), &turn);
        Box::pin(async move {
            let _registered = registered;
            let work = async {
                let Some(version) = version else {
                    return Err(refused(&method));
                };
                let ccx = ClientContext::new(cx.connection().clone(), version, turn.clone());
                let result = client.handle_request(version, &method, params, ccx).await?;
                acp_types::support::json::to_raw_value(&result).map_err(|e| RpcError::internal(e.to_string()))
            };
            if matches!(MethodName::of(&method), Some(MethodName::SessionRequestPermission)) {
                // Rule `turn.cancel-permission`: a permission request of a cancelled session (or
                // one the agent cancelled) is answered `cancelled`, whatever the handler does.
                tokio::select! {
                    answer = work => answer,
                    _ = turn.cancelled() => Ok(cancelled_outcome()),
                }
            } else {
                work.await
            }
        })
    }

    fn notification(&self, method: String, params: Option<Raw>, _conn: Connection) -> BoxFuture<()> {
        let Some(version) = self.version.get() else {
            tracing::warn!("acp: notification {method} ignored: {}", refused(&method));
            return Box::pin(async {});
        };
        let client = self.client.clone();
        let (turns, routes, states) = (self.turns.clone(), self.routes.clone(), self.states.clone());
        let cx = ClientContext::new(self.conn.clone(), version, Default::default());
        Box::pin(async move {
            let ignored = |e: RpcError| tracing::warn!("acp: notification {method} ignored: {e}");
            match version {
                Version::V1 => match v1::methods::client::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => {
                        // A copy for the session's handle, if it has one.
                        let routed = match &n {
                            v1::methods::client::Notification::SessionUpdate(u) if routes.wants_v1(&u.session_id.0) => {
                                Some((u.session_id.0.clone(), u.update.clone()))
                            }
                            _ => None,
                        };
                        client.handle_v1(n, cx).await;
                        if let Some((session, update)) = routed {
                            routes.send_v1(&session, update);
                        }
                    }
                    Err(e) => ignored(e),
                },
                Version::V2 => match v2::methods::client::Notification::decode_raw(&method, params.into()) {
                    Ok(n) => {
                        let (routed, state) = match &n {
                            v2::methods::client::Notification::SessionUpdate(u) => {
                                let session = &u.session_id.0;
                                // The session's state first: the handler may read it.
                                states.apply(session, &u.update);
                                let state = match &u.update {
                                    v2::SessionUpdate::StateUpdate(state) => Some((session.clone(), state.clone())),
                                    _ => None,
                                };
                                (routes.wants_v2(session).then(|| (session.clone(), u.update.clone())), state)
                            }
                            _ => (None, None),
                        };
                        client.handle_v2(n, cx).await;
                        // After the handler: a prompt that ends here sees its updates handled
                        // (and routed to its session's handle).
                        if let Some((session, update)) = routed {
                            routes.send_v2(&session, update);
                        }
                        if let Some((session, update)) = state {
                            // The turn's end as the session's state has it (the update itself if
                            // the state could not be read back).
                            let activity = states.activity(&session).unwrap_or(*update);
                            turns.observe(&session, &activity);
                        }
                    }
                    Err(e) => ignored(e),
                },
            }
        })
    }
}
