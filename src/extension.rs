//! Vendor extensions served next to a core handler: [`Extended`], for an agent or a client alike.

use acp_types::support::rpc::{Extension, MessageKind};
use acp_types::Version;

/// A core handler (`.0`: an agent or a client, as [`agent::serve`](crate::agent::serve) or
/// [`client::connect`](crate::client::connect) take it) with the same end's handler of a vendor
/// extension (`.1`), served together.
///
/// An extension schema (`schema/ext/NAME.json`, or `cargo xtask codegen --schema … --ext …`)
/// generates a module with the core's shapes: its types, a marker per method, and per receiving
/// side a `Handler` trait with defaults; its `serve` module wraps a handler of one side
/// (`serve::Agent(handler)`, `serve::Client(handler)`) as an
/// [`rpc::Extension`](crate::types::support::rpc::Extension). `Extended` hands the methods that
/// side of the extension receives to it, and every other message to the core handler: an
/// extension method the extension does not name keeps the core handler's answer (its
/// `ext_method`, by default -32601). Extensions stack: `Extended(Extended(core, a), b)`.
///
/// Calls the other way need nothing registered: an extension's markers implement
/// [`ToAgent`](crate::types::support::rpc::ToAgent) or
/// [`ToClient`](crate::types::support::rpc::ToClient) as the core's do, so the contexts' typed
/// `request` and `notify` take them, checked at compile time.
///
/// ```
/// use acp_rpc::types::support::rpc::RpcError;
/// use acp_rpc::types::v1::{self, ext::example};
/// use acp_rpc::types::Version;
/// use acp_rpc::{AgentContext, Config, Extended, V1};
///
/// struct Agent;
/// impl v1::methods::agent::Handler<AgentContext> for Agent {}
///
/// struct Greeter;
/// impl example::methods::agent::Handler<AgentContext> for Greeter {
///     async fn example_greet(&self, p: example::GreetRequest, cx: AgentContext) -> Result<example::GreetResponse, RpcError> {
///         // A typed call to the client's side of the extension.
///         let ask = example::ConfirmRequest::new(p.session_id, format!("greet {}?", p.name));
///         let answer = cx.request::<example::methods::ExampleConfirm>(&ask).await.map_err(|e| e.to_rpc())?;
///         Ok(example::GreetResponse::new(if answer.confirmed { format!("hello, {}", p.name) } else { String::new() }))
///     }
/// }
///
/// # async fn f(reader: tokio::io::Stdin, writer: tokio::io::Stdout) -> std::io::Result<()> {
/// let agent = Extended(V1(Agent), example::serve::Agent(Greeter));
/// let (_connection, run) = acp_rpc::agent::serve(agent, &[Version::V1], reader, writer, Config::default());
/// run.await
/// # }
/// ```
///
/// The agent's context takes only what the client receives: a method of the extension's agent
/// side (one the client sends) does not compile there.
///
/// ```compile_fail,E0277
/// use acp_rpc::types::v1::ext::example;
/// # async fn f(cx: acp_rpc::AgentContext, greet: example::GreetRequest) {
/// let answer = cx.request::<example::methods::ExampleGreet>(&greet).await;
/// # }
/// ```
///
/// Nor does the client's context take a method of the extension's client side:
///
/// ```compile_fail,E0277
/// use acp_rpc::types::v1::ext::example;
/// # async fn f(cx: acp_rpc::ClientContext, confirm: example::ConfirmRequest) {
/// let answer = cx.request::<example::methods::ExampleConfirm>(&confirm).await;
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Extended<H, E>(pub H, pub E);

/// Whether the extension `E` takes `method` on a connection of `version`: a method its side
/// receives, on a connection of the version its types belong to (any, when it names none).
pub(crate) fn extension_of<E: Extension<Cx>, Cx>(version: Version, method: &str, kind: MessageKind) -> bool {
    E::VERSION.is_none_or(|v| v == version.number()) && E::receives(method, kind)
}
