//! The wire names the checker and `acp conform` send and name, and the checks on names they
//! share. They route by [`MethodName`]; the names here are its `as_str` for the messages they
//! write.

use acp_types::support::rpc::{Method, MethodInfo, Role, Side as _, Tables};
use acp_types::{v1::methods as v1, v2::methods as v2, MethodName};

/// Methods both versions have, for code that serves both: the build fails should v1's or v2's
/// marker name one otherwise (that code would then miss a version's).
macro_rules! both {
    ($($(#[$attr:meta])* $name:ident = $variant:ident, $marker:ident;)*) => {$(
        $(#[$attr])*
        pub(crate) const $name: &str = MethodName::$variant.as_str();
        $(#[$attr])*
        const _: () = assert!(
            acp_types::support::rpc::same_wire_name($name, v1::$marker::METHOD)
                && acp_types::support::rpc::same_wire_name($name, v2::$marker::METHOD),
            concat!("v1 and v2 name ", stringify!($marker), " apart")
        );
    )*};
}

both! {
    INITIALIZE = Initialize, Initialize;
    SESSION_NEW = SessionNew, SessionNew;
    SESSION_UPDATE = SessionUpdate, SessionUpdate;
    SESSION_REQUEST_PERMISSION = SessionRequestPermission, SessionRequestPermission;
}

/// Whether `method` opens a connection and negotiates its version: `initialize`, or
/// `proxy/initialize` ("The params and the response are the same as for `initialize`",
/// `InitializeProxyRequest`) where the unstable tables are built in.
pub(crate) fn opens_connection(method: &str) -> bool {
    let name = MethodName::of(method);
    matches!(name, Some(MethodName::Initialize))
        || (cfg!(feature = "unstable") && matches!(name, Some(MethodName::ProxyInitialize)))
}

// Methods only v1 has: named by its markers.
pub(crate) const SESSION_LOAD: &str = v1::SessionLoad::METHOD;
pub(crate) const SESSION_SET_MODE: &str = v1::SessionSetMode::METHOD;

/// The namespace of a wire name: up to and including its first `/` (`session/` of
/// `session/new`), if it has one.
pub(crate) fn namespace(method: &str) -> Option<&str> {
    method.find('/').map(|end| &method[..=end])
}

/// Whether `method` is a method of `T`'s tables (either side, either kind) in the namespace
/// of `of`: with `of` = [`MethodName::SessionNew`], v2's `session/*` methods.
pub(crate) fn in_namespace_of<T: Tables>(method: &str, of: MethodName) -> bool {
    namespace(of.as_str())
        .is_some_and(|ns| T::METHODS.iter().any(|m| m.name == method && namespace(m.name) == Some(ns)))
}

/// Whether `method` is in the namespace of `T`'s protocol-level methods, the side that both
/// ends receive (`$/cancel_request`): the schemas let a receiver ignore such notifications
/// ("Notifications whose methods start with '$/' … it is free to ignore"), so a name there
/// the tables do not have is no custom method and no unknown one.
pub(crate) fn protocol_level<T: Tables>(method: &str) -> bool {
    let both = |m: &&MethodInfo<T::Side>| m.side.received_by(Role::Agent) && m.side.received_by(Role::Client);
    namespace(method).is_some_and(|ns| T::METHODS.iter().filter(both).any(|m| namespace(m.name) == Some(ns)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// The names of `T`'s methods received by `role` in the namespace of `of`.
    fn received<T: Tables>(role: Role, of: &str) -> BTreeSet<&'static str> {
        let rows = T::METHODS.iter().filter(|m| m.side.received_by(role) && namespace(m.name) == namespace(of));
        rows.map(|m| m.name).collect()
    }

    /// The v1 methods received by the client that `rules::ClientGate` gates with `gate`.
    fn gated(gate: &[acp_rpc::rules::ClientGate]) -> BTreeSet<&'static str> {
        let gates =
            |m: &&MethodInfo<v1::Side>| acp_rpc::rules::ClientGate::of_v1(m.name).is_some_and(|g| gate.contains(&g));
        v1::Tables::METHODS.iter().filter(|m| m.side.received_by(Role::Client)).filter(gates).map(|m| m.name).collect()
    }

    #[test]
    fn the_client_capability_gates_are_the_v1_families() {
        use acp_rpc::rules::ClientGate::{ReadTextFile, Terminal, WriteTextFile};
        let (fs, terminal) = (v1::FsReadTextFile::METHOD, v1::TerminalCreate::METHOD);
        assert_eq!(received::<v1::Tables>(Role::Client, fs), gated(&[ReadTextFile, WriteTextFile]));
        assert_eq!(received::<v1::Tables>(Role::Client, terminal), gated(&[Terminal]));
        assert!(received::<v2::Tables>(Role::Client, terminal).is_empty());
    }

    #[test]
    fn namespaces_follow_the_tables() {
        for cancel in [v1::CancelRequest::METHOD, v2::CancelRequest::METHOD] {
            assert!(protocol_level::<v1::Tables>(cancel) && protocol_level::<v2::Tables>(cancel));
        }
        let cancel = MethodName::SessionCancel.as_str();
        assert!(!protocol_level::<v1::Tables>(cancel) && !protocol_level::<v2::Tables>(INITIALIZE));
        let session = MethodName::SessionNew;
        assert!(in_namespace_of::<v2::Tables>(MethodName::SessionPrompt.as_str(), session));
        assert!(in_namespace_of::<v2::Tables>(SESSION_UPDATE, session));
        assert!(!in_namespace_of::<v2::Tables>(SESSION_LOAD, session), "v2 has no session/load");
        assert!(!in_namespace_of::<v2::Tables>(INITIALIZE, session));
    }
}
