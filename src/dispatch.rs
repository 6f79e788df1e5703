//! A request of one protocol version, decoded and handed to that version's generated handler:
//! one function per version and side, shared by the agent ([`crate::agent::Speaks`]) and the
//! client ([`crate::client::Client`]).

macro_rules! request_fn {
    ($version:ident, $side:ident) => {
        /// Decodes `params` as `method`'s and answers it with `handler`; the result as JSON.
        pub(crate) async fn request<H: acp_types::$version::methods::$side::Handler<crate::session::Context>>(
            handler: &H,
            method: &str,
            params: Option<crate::connection::Raw>,
            cx: crate::session::Context,
        ) -> Result<serde_json::Value, acp_types::support::rpc::RpcError> {
            let request = acp_types::$version::methods::$side::Request::decode_raw(method, params.into())?;
            acp_types::$version::methods::$side::dispatch_request(handler, request, cx).await?.result()
        }
    };
}

/// The agent's side: the client's requests.
pub(crate) mod agent {
    pub(crate) mod v1 {
        request_fn!(v1, agent);
    }
    pub(crate) mod v2 {
        request_fn!(v2, agent);
    }
}

/// The client's side: the agent's requests.
pub(crate) mod client {
    pub(crate) mod v1 {
        request_fn!(v1, client);
    }
    pub(crate) mod v2 {
        request_fn!(v2, client);
    }
}
