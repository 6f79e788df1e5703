//! Handlers of one protocol version alone. A type that implements the generated handler traits
//! of both versions speaks both; one version's handler alone is wrapped, [`V1`]`(handler)` or
//! [`V2`]`(handler)`, for an agent or a client alike, so that speaking both is a choice, not a
//! tax. The other version is then never negotiated.

/// A handler of v1 alone: an agent's (served as `V1(agent)`) or a client's (connected as
/// `V1(client)`).
pub struct V1<H>(pub H);

/// A handler of v2 alone: an agent's, with its prompt turn (served as `V2(agent)`), or a
/// client's (connected as `V2(client)`).
pub struct V2<H>(pub H);
