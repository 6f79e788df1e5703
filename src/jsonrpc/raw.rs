//! [`Raw`]: a message's params or result as received, kept as JSON text.

use serde_json::value::RawValue;

/// Raw params or result, as received.
pub type Raw = Box<RawValue>;
