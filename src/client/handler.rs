//! What a client connects with: the generated client handler traits of both versions, or one
//! version's handler alone ([`V1`], [`V2`]); and how a message of the negotiated version reaches
//! the handler ([`ClientHandler`], sealed).

use super::context::ClientContext;
use crate::extension::{extension_of, Extended};
use crate::jsonrpc::Raw;
use crate::versions::{V1, V2};
use acp_types::support::rpc::{Extension, MessageKind, RawParams, RpcError};
use acp_types::{v1, v2, Version};
use std::future::Future;

mod sealed {
    pub trait Sealed {}
}

/// A client the runtime can connect: implemented for every type that implements the generated
/// client handler traits of both versions (`v1::methods::client::Handler<ClientContext>`,
/// `v2::methods::client::Handler<ClientContext>`; every method has a default), and for
/// [`V1`]`(handler)` and [`V2`]`(handler)` of one version. Sealed: implement the generated
/// traits instead.
pub trait ClientHandler: sealed::Sealed + Send + Sync + 'static {
    /// The protocol versions this client can decode the agent's messages with.
    const VERSIONS: &'static [Version];

    /// A request of the agent, decoded and handled; the result as JSON.
    #[doc(hidden)]
    fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: ClientContext,
    ) -> impl Future<Output = Result<serde_json::Value, RpcError>> + Send;

    /// A v1 notification of the agent, decoded.
    #[doc(hidden)]
    fn handle_v1(&self, note: v1::methods::client::Notification, cx: ClientContext) -> impl Future<Output = ()> + Send;

    /// A v2 notification of the agent, decoded.
    #[doc(hidden)]
    fn handle_v2(&self, note: v2::methods::client::Notification, cx: ClientContext) -> impl Future<Output = ()> + Send;
}

fn not_spoken(version: Version) -> RpcError {
    RpcError::internal(format!("this client does not speak v{}", version.number()))
}

/// Decodes a request of `method` with one version's client table and answers it with `handler`.
macro_rules! request_fn {
    ($name:ident, $version:ident) => {
        async fn $name<H: $version::methods::client::Handler<ClientContext>>(
            handler: &H,
            method: &str,
            params: Option<Raw>,
            cx: ClientContext,
        ) -> Result<serde_json::Value, RpcError> {
            let request = $version::methods::client::Request::decode_raw(method, params.into())?;
            $version::methods::client::dispatch_request(handler, request, cx).await?.result()
        }
    };
}

request_fn!(v1_request, v1);
request_fn!(v2_request, v2);

impl<T> sealed::Sealed for T where
    T: v1::methods::client::Handler<ClientContext> + v2::methods::client::Handler<ClientContext> + 'static
{
}

impl<T> ClientHandler for T
where
    T: v1::methods::client::Handler<ClientContext> + v2::methods::client::Handler<ClientContext> + 'static,
{
    const VERSIONS: &'static [Version] = Version::ALL;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: ClientContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => v1_request(self, method, params, cx).await,
            Version::V2 => v2_request(self, method, params, cx).await,
        }
    }

    async fn handle_v1(&self, note: v1::methods::client::Notification, cx: ClientContext) {
        v1::methods::client::dispatch_notification(self, note, cx).await
    }

    async fn handle_v2(&self, note: v2::methods::client::Notification, cx: ClientContext) {
        v2::methods::client::dispatch_notification(self, note, cx).await
    }
}

impl<C: v1::methods::client::Handler<ClientContext> + 'static> sealed::Sealed for V1<C> {}

impl<C: v1::methods::client::Handler<ClientContext> + 'static> ClientHandler for V1<C> {
    const VERSIONS: &'static [Version] = &[Version::V1];

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: ClientContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V1 => v1_request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_v1(&self, note: v1::methods::client::Notification, cx: ClientContext) {
        v1::methods::client::dispatch_notification(&self.0, note, cx).await
    }

    async fn handle_v2(&self, _: v2::methods::client::Notification, _: ClientContext) {
        tracing::warn!("acp: a v2 notification ignored: {}", not_spoken(Version::V2));
    }
}

impl<C: v2::methods::client::Handler<ClientContext> + 'static> sealed::Sealed for V2<C> {}

impl<C: v2::methods::client::Handler<ClientContext> + 'static> ClientHandler for V2<C> {
    const VERSIONS: &'static [Version] = &[Version::V2];

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: ClientContext,
    ) -> Result<serde_json::Value, RpcError> {
        match version {
            Version::V2 => v2_request(&self.0, method, params, cx).await,
            other => Err(not_spoken(other)),
        }
    }

    async fn handle_v1(&self, _: v1::methods::client::Notification, _: ClientContext) {
        tracing::warn!("acp: a v1 notification ignored: {}", not_spoken(Version::V1));
    }

    async fn handle_v2(&self, note: v2::methods::client::Notification, cx: ClientContext) {
        v2::methods::client::dispatch_notification(&self.0, note, cx).await
    }
}

impl<C: ClientHandler, E: Extension<ClientContext>> sealed::Sealed for Extended<C, E> {}

/// The client `C` with an extension's client side `E`: the requests and notifications `E`
/// receives go to it, the rest to `C`.
impl<C: ClientHandler, E: Extension<ClientContext>> ClientHandler for Extended<C, E> {
    const VERSIONS: &'static [Version] = C::VERSIONS;

    async fn handle_request(
        &self,
        version: Version,
        method: &str,
        params: Option<Raw>,
        cx: ClientContext,
    ) -> Result<serde_json::Value, RpcError> {
        if extension_of::<E, _>(version, method, MessageKind::Request) {
            self.1.request(method, params.into(), cx).await
        } else {
            self.0.handle_request(version, method, params, cx).await
        }
    }

    async fn handle_v1(&self, note: v1::methods::client::Notification, cx: ClientContext) {
        match note {
            v1::methods::client::Notification::Ext { method, params }
                if extension_of::<E, _>(Version::V1, &method, MessageKind::Notification) =>
            {
                ext_notification(&self.1, &method, params, cx).await
            }
            note => self.0.handle_v1(note, cx).await,
        }
    }

    async fn handle_v2(&self, note: v2::methods::client::Notification, cx: ClientContext) {
        match note {
            v2::methods::client::Notification::Ext { method, params }
                if extension_of::<E, _>(Version::V2, &method, MessageKind::Notification) =>
            {
                ext_notification(&self.1, &method, params, cx).await
            }
            note => self.0.handle_v2(note, cx).await,
        }
    }
}

/// An extension notification the core table kept as JSON, handed to the extension `ext`.
async fn ext_notification<E: Extension<ClientContext>>(
    ext: &E,
    method: &str,
    params: Option<serde_json::Value>,
    cx: ClientContext,
) {
    let params = match params.map(|p| serde_json::value::to_raw_value(&p)).transpose() {
        Ok(params) => RawParams::Owned(params),
        Err(e) => return tracing::warn!("acp: notification {method} ignored: {e}"),
    };
    if let Err(e) = ext.notification(method, params, cx).await {
        tracing::warn!("acp: notification {method} ignored: {e}");
    }
}
