//! Emitting an extension's module (`ext/NAME/`, see [`crate::ext`]) inside the crate of the core
//! version it extends: `types.rs` (its own types; the core's by `use crate::types::*`, so one
//! Rust type stands for each core type), `methods.rs` (markers, tables, enums and handler traits,
//! as the core's), `serve.rs` (each receiving end's handler as an `rpc::Extension`, for a runtime
//! to serve next to its core handler) and `mod.rs`; and the `ext/mod.rs` listing the extensions.

use super::common::{docs, ident, render, support};
use super::methods::methods_module;
use super::types_module_of;
use crate::error::Error;
use crate::ext::Extension;
use crate::ir::*;
use crate::naming;
use quote::{format_ident, quote};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// The module name of an extension file (`schema/ext/agentao.json` → `agentao`).
pub fn module_name(file_stem: &str) -> String {
    naming::field(file_stem)
}

/// The files of one extension's module, by path relative to the `ext/` directory: `NAME/mod.rs`,
/// `NAME/types.rs`, `NAME/methods.rs`, `NAME/serve.rs`. `sources` names the extension and the
/// core file in each file's header; `version` is the number of the core version, when known.
pub fn module(
    ext: &Extension,
    name: &str,
    sources: &str,
    version: Option<u16>,
) -> Result<Vec<(PathBuf, String)>, Error> {
    let p = &ext.protocol;
    let keep = |id: TypeId| ext.own.contains(&id);
    let prelude = quote! {
        // The core types this extension uses, by their own names.
        #[allow(unused_imports)]
        use crate::types::*;
    };
    let types = types_module_of(p, sources, &keep, prelude)?;
    let methods = methods_module(p, sources)?;
    let serve = serve_module(p, sources, version)?;
    let doc = format!(
        " The extension `{name}` ({sources}): its types, and its methods' markers, tables and handler traits, \
         as the core version's; [`serve`](crate::ext::{name}::serve) wraps a handler of one side for a runtime \
         to serve next to its core handler."
    );
    let root = render(
        sources,
        quote! {
            #![doc = #doc]
            // Formatted by prettyplease when generated; `cargo fmt` must not rewrite it.
            #[rustfmt::skip]
            mod types;
            #[rustfmt::skip]
            pub mod methods;
            #[rustfmt::skip]
            pub mod serve;
            pub use types::*;
        },
    )?;
    let dir = PathBuf::from(name);
    Ok(vec![
        (dir.join("mod.rs"), root),
        (dir.join("types.rs"), types),
        (dir.join("methods.rs"), methods),
        (dir.join("serve.rs"), serve),
    ])
}

/// `ext/mod.rs`: one module per extension, with the description each schema gives.
pub fn index(extensions: &[(String, Option<String>)], sources: &str) -> Result<String, Error> {
    let modules = extensions.iter().map(|(name, description)| {
        let m = ident(name);
        let d = docs(description.as_deref());
        quote! {
            #d
            #[rustfmt::skip]
            pub mod #m;
        }
    });
    Ok(render(
        sources,
        quote! {
            //! Vendor extensions of this version, generated from their schemas (`schema/ext/*.json`): per
            //! extension, the same types, method markers, tables and handler traits as the core's.
            #(#modules)*
        },
    )?)
}

/// `serve.rs`: per receiving end (agent, client), a wrapper that serves that side's handler as an
/// `rpc::Extension`.
fn serve_module(p: &Protocol, sources: &str, version: Option<u16>) -> Result<String, Error> {
    let version = match version {
        Some(n) => {
            let n = proc_macro2::Literal::u16_unsuffixed(n);
            quote! { const VERSION: Option<u16> = Some(#n); }
        }
        None => quote! {},
    };
    let sides: BTreeSet<&Side> = p.methods.iter().map(|m| &m.side).filter(|s| s.receiver.role().is_some()).collect();
    let wrappers = sides.iter().map(|side| {
        let wrapper = format_ident!("{}", naming::type_name(&side.wire));
        let variant = wrapper.clone();
        let module = ident(&naming::field(&side.wire));
        let doc = format!(
            " Serves the `{}` side of this extension: its handler ([`methods::{module}::Handler`]) as an \
             [`rpc::Extension`], which a runtime serves next to its core handler. It receives this side's \
             methods of the extension; any other goes to the core handler.",
            side.wire
        );
        quote! {
            #[doc = #doc]
            #[derive(Debug, Clone, Default)]
            pub struct #wrapper<H>(pub H);

            impl<H: methods::#module::Handler<Cx> + 'static, Cx: Send + 'static> rpc::Extension<Cx> for #wrapper<H> {
                #version

                fn receives(method: &str, kind: rpc::MessageKind) -> bool {
                    methods::METHODS.iter().any(|m| m.side == methods::Side::#variant && m.kind == kind && m.name == method)
                }

                async fn request(&self, method: &str, params: rpc::RawParams<'static>, cx: Cx) -> Result<serde_json::Value, rpc::RpcError> {
                    let request = methods::#module::Request::decode_raw(method, params)?;
                    methods::#module::dispatch_request(&self.0, request, cx).await?.result()
                }

                async fn notification(&self, method: &str, params: rpc::RawParams<'static>, cx: Cx) -> Result<(), rpc::RpcError> {
                    let notification = methods::#module::Notification::decode_raw(method, params)?;
                    methods::#module::dispatch_notification(&self.0, notification, cx).await;
                    Ok(())
                }
            }
        }
    });
    let support = support();
    Ok(render(
        sources,
        quote! {
            //! Each receiving end's handler of this extension as an [`rpc::Extension`].
            use super::methods;
            use #support::rpc;

            #(#wrappers)*
        },
    )?)
}
