//! Serving a proxy on its connection to the conductor: stdio (how a conductor runs each
//! component), a reader and writer, or any [`Transport`].

use super::handler::ProxyHandler;
use super::service::ProxyService;
use crate::jsonrpc::{Config, Connection, Pipe, Transport};
use std::future::Future;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serves `proxy` over `reader`/`writer` (the conductor's side of the component's stdio).
/// Returns the connection and the future that drives it (spawn or await it).
///
/// A request the conductor cancels is cancelled downstream and answered with what the
/// successor answers; the connection answers -32800 itself only `config.cancel_grace` after the
/// cancellation. Give a proxy a longer grace than the components behind it (as
/// [`serve_proxy_stdio`] does), so that the successor's own answer wins.
pub fn serve_proxy<H, R, W>(
    proxy: H,
    reader: R,
    writer: W,
    config: Config,
) -> (Connection, impl Future<Output = std::io::Result<()>> + Send)
where
    H: ProxyHandler,
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_proxy_over(Arc::new(proxy), Pipe { reader, writer }, config)
}

/// Serves `proxy` over any [`Transport`] (a [`Pipe`], or [`Channels`](crate::jsonrpc::Channels));
/// otherwise as [`serve_proxy`]. One `Arc` of the proxy serves any number of connections.
pub fn serve_proxy_over<H: ProxyHandler, T: Transport>(
    proxy: Arc<H>,
    transport: T,
    config: Config,
) -> (Connection, impl Future<Output = std::io::Result<()>> + Send) {
    Connection::over(transport, config, move |_| ProxyService::new(proxy))
}

/// Serves `proxy` on this process's stdin/stdout, as a conductor runs it (all logging goes to
/// stderr, never stdout), with twice the default cancellation grace (see [`serve_proxy`]).
pub async fn serve_proxy_stdio<H: ProxyHandler>(proxy: H) -> std::io::Result<()> {
    let config = proxy_config();
    let (_, driver) = serve_proxy(proxy, tokio::io::stdin(), tokio::io::stdout(), config);
    driver.await
}

/// The default [`Config`] of a proxy: twice the default cancellation grace, so that a
/// successor that takes the default grace to answer a cancelled request is still heard.
pub fn proxy_config() -> Config {
    let default = Config::default();
    Config { cancel_grace: default.cancel_grace * 2, ..default }
}
