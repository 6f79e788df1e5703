//! A request the checker saw and whose response it awaits (the checker keeps them, the rules read
//! them).

/// A request waiting for its response.
#[derive(Debug, Clone)]
pub(super) struct Pending {
    pub(super) method: String,
    pub(super) line: usize,
    /// The `sessionId` of the params, if any.
    pub(super) session: Option<String>,
    /// The `protocolVersion` of an `initialize` request.
    pub(super) requested: Option<u64>,
}
