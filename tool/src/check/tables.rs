//! The version adapter: each version's generated method tables behind one version-independent
//! interface, so that the checker's logic is written once for every version.

use acp_types::support::rpc::{self, MessageKind, Role, RpcError, Stability, Tables};
use acp_types::{v1, v2, Version};
use serde_json::value::RawValue;
use serde_json::Value;
use std::marker::PhantomData;

/// A row of a version's method table, as the checker needs it (the typed side stays with the
/// version's tables, behind `index`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Row {
    pub(super) index: usize,
    /// The end that receives the method, when it is one of the two.
    pub(super) receiver: Option<Role>,
    pub(super) stability: Stability,
    /// The schema names (`$defs`) of the params and result types.
    pub(super) params: &'static str,
    pub(super) result: Option<&'static str>,
}

impl Row {
    /// The end that sends the method, when it is one of the two.
    pub(super) fn sender(self) -> Option<Role> {
        self.receiver.map(Role::peer)
    }
}

/// The side a message is decoded as received by: its row's, or, for a method the table does not
/// have, the side of the end that is the sender's peer (the agent's when the sender is unknown).
#[derive(Debug, Clone, Copy)]
pub(super) enum Receiver {
    Row(usize),
    Role(Role),
}

impl Receiver {
    pub(super) fn of(row: Option<Row>, sender: Option<Role>) -> Receiver {
        match row {
            Some(row) => Receiver::Row(row.index),
            None => Receiver::Role(sender.map_or(Role::Agent, Role::peer)),
        }
    }
}

/// One version's tables behind a version-independent interface, so that the checker's logic is
/// written once for every version.
pub(super) trait VersionTables: Sync {
    fn find(&self, method: &str, kind: MessageKind) -> Option<Row>;
    fn decode(
        &self,
        receiver: Receiver,
        kind: MessageKind,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Option<Value>, RpcError>;
    fn decode_response(&self, receiver: Receiver, method: &str, result: Option<&RawValue>) -> Result<Value, RpcError>;
}

struct Of<T>(PhantomData<fn() -> T>);

impl<T: Tables> Of<T> {
    fn side(receiver: Receiver, method: &str) -> Result<T::Side, RpcError> {
        let side = match receiver {
            Receiver::Row(index) => T::METHODS.get(index).map(|row| row.side),
            Receiver::Role(role) => <T::Side as rpc::Side>::of_role(role),
        };
        side.ok_or_else(|| RpcError::method_not_found(method))
    }
}

impl<T: Tables> VersionTables for Of<T> {
    fn find(&self, method: &str, kind: MessageKind) -> Option<Row> {
        let rows = T::METHODS;
        let index = rows
            .iter()
            .position(|r| r.name == method && r.kind == kind)
            .or_else(|| rows.iter().position(|r| r.name == method))?;
        let row = &rows[index];
        Some(Row {
            index,
            receiver: rpc::Side::role(row.side),
            stability: row.stability,
            params: row.params,
            result: row.result,
        })
    }

    fn decode(
        &self,
        receiver: Receiver,
        kind: MessageKind,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Option<Value>, RpcError> {
        T::decode(Self::side(receiver, method)?, kind, method, params)
    }

    fn decode_response(&self, receiver: Receiver, method: &str, result: Option<&RawValue>) -> Result<Value, RpcError> {
        T::decode_response(Self::side(receiver, method)?, method, result)
    }
}

/// The tables of `version`.
pub(super) fn tables(version: Version) -> &'static dyn VersionTables {
    match version {
        Version::V1 => &Of::<v1::methods::Tables>(PhantomData),
        Version::V2 => &Of::<v2::methods::Tables>(PhantomData),
    }
}
