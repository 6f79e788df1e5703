//! Decode, encode and scan rows: the same bytes into `acp-types` and into the official
//! `agent-client-protocol-schema`, typed by the schema name of each message.

use crate::corpus::Message;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// Decodes one message into a value that can be encoded again.
pub type Decoded = Box<dyn Encode>;

/// Type-erased encoding of a decoded value, with the encoder of its library.
pub trait Encode {
    fn encode(&self) -> Vec<u8>;
}

/// Ours: the encoder our runtime writes messages with (`acp_types::support::json`).
struct Ours<T>(T);
/// The official crates: serde_json.
struct Official<T>(T);

impl<T: Serialize> Encode for Ours<T> {
    fn encode(&self) -> Vec<u8> {
        acp_types::support::json::to_vec(&self.0).expect("encodes")
    }
}

impl<T: Serialize> Encode for Official<T> {
    fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(&self.0).expect("encodes")
    }
}

fn ours<T: DeserializeOwned + Serialize + 'static>(text: &str) -> Option<Decoded> {
    acp_types::support::json::from_str::<T>(text).ok().map(|v| Box::new(Ours(v)) as Decoded)
}

fn official<T: DeserializeOwned + Serialize + 'static>(text: &str) -> Option<Decoded> {
    serde_json::from_str::<T>(text).ok().map(|v| Box::new(Official(v)) as Decoded)
}

/// Decodes `text` as a `T` and drops the value: what the decode rows time. Unlike [`Decoded`] it
/// neither boxes the value nor looks its type up by name, work the scan floor does not do either.
pub type Check = fn(&str) -> bool;

fn ours_check<T: DeserializeOwned>(text: &str) -> bool {
    std::hint::black_box(acp_types::support::json::from_str::<T>(text)).is_ok()
}

fn official_check<T: DeserializeOwned>(text: &str) -> bool {
    std::hint::black_box(serde_json::from_str::<T>(text)).is_ok()
}

/// Decodes one message into a value that the encode rows can encode again.
type DecodeFn = fn(&str) -> Option<Decoded>;

macro_rules! decoder {
    ($module:path, $update:ident, $decode:ident, $check:ident) => {
        /// The [`Check`] and the [`DecodeFn`] of the type named `type_name`; `None` for a type
        /// outside the turn.
        fn entry(type_name: &str) -> Option<(Check, DecodeFn)> {
            use $module as m;
            macro_rules! both {
                ($t:ty) => {
                    ($check::<$t> as Check, $decode::<$t> as DecodeFn)
                };
            }
            Some(match type_name {
                "InitializeRequest" => both!(m::InitializeRequest),
                "InitializeResponse" => both!(m::InitializeResponse),
                "NewSessionRequest" => both!(m::NewSessionRequest),
                "NewSessionResponse" => both!(m::NewSessionResponse),
                "PromptRequest" => both!(m::PromptRequest),
                "PromptResponse" => both!(m::PromptResponse),
                "RequestPermissionRequest" => both!(m::RequestPermissionRequest),
                "RequestPermissionResponse" => both!(m::RequestPermissionResponse),
                name if name == stringify!($update) => both!(m::$update),
                _ => return None,
            })
        }

        /// Decodes `text` as the type named `type_name`; `None` when it fails or is unknown.
        pub fn decode_as(type_name: &str, text: &str) -> Option<Decoded> {
            entry(type_name)?.1(text)
        }

        /// The [`Check`] of the type named `type_name`; `None` for a type outside the turn.
        pub fn check_as(type_name: &str) -> Option<Check> {
            entry(type_name).map(|(check, _)| check)
        }
    };
}

mod ours_v1 {
    use super::*;
    decoder!(acp_types::v1, SessionNotification, ours, ours_check);
}
mod ours_v2 {
    use super::*;
    decoder!(acp_types::v2, UpdateSessionNotification, ours, ours_check);
}
mod official_v1 {
    use super::*;
    decoder!(agent_client_protocol_schema::v1, SessionNotification, official, official_check);
}
mod official_v2 {
    use super::*;
    decoder!(agent_client_protocol_schema::v2, UpdateSessionNotification, official, official_check);
}

/// Which library decodes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Lib {
    Ours,
    Official,
}

/// The decoder of `lib` for `version`.
pub fn decoder(lib: Lib, version: u16) -> fn(&str, &str) -> Option<Decoded> {
    match (lib, version) {
        (Lib::Ours, 1) => ours_v1::decode_as,
        (Lib::Ours, _) => ours_v2::decode_as,
        (Lib::Official, 1) => official_v1::decode_as,
        (Lib::Official, _) => official_v2::decode_as,
    }
}

/// The messages both libraries decode (the few the official crate rejects are left out of both
/// sides, so the two rows measure the same bytes).
pub fn common(version: u16, messages: Vec<Message>) -> Vec<Message> {
    let ours = decoder(Lib::Ours, version);
    let official = decoder(Lib::Official, version);
    messages
        .into_iter()
        .filter(|m| ours(&m.type_name, &m.payload).is_some() && official(&m.type_name, &m.payload).is_some())
        .collect()
}

/// The [`Check`] of `lib` for the type named `type_name` in `version`.
pub fn checker(lib: Lib, version: u16, type_name: &str) -> Option<Check> {
    match (lib, version) {
        (Lib::Ours, 1) => ours_v1::check_as(type_name),
        (Lib::Ours, _) => ours_v2::check_as(type_name),
        (Lib::Official, 1) => official_v1::check_as(type_name),
        (Lib::Official, _) => official_v2::check_as(type_name),
    }
}

/// Each message's [`Check`] for `lib`, looked up once, before anything is timed.
pub fn checks(lib: Lib, version: u16, messages: &[Message]) -> Vec<(Check, &str)> {
    messages
        .iter()
        .map(|m| (checker(lib, version, &m.type_name).expect("a type of the turn"), m.payload.as_str()))
        .collect()
}

/// Decodes every message once and drops it; the number decoded.
pub fn decode_all(checks: &[(Check, &str)]) -> usize {
    checks.iter().filter(|(check, text)| check(std::hint::black_box(text))).count()
}

/// Decodes every message once (outside the measurement) for the encode row.
pub fn decoded(lib: Lib, version: u16, messages: &[Message]) -> Vec<Decoded> {
    let decode = decoder(lib, version);
    messages.iter().filter_map(|m| decode(&m.type_name, &m.payload)).collect()
}

/// Encodes every value once; total bytes written.
pub fn encode_all(values: &[Decoded]) -> usize {
    values.iter().map(|v| std::hint::black_box(v.encode()).len()).sum()
}

/// The floor: the same bytes read and thrown away.
pub fn scan_all(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| serde_json::from_str::<serde::de::IgnoredAny>(std::hint::black_box(&m.payload)).is_ok())
        .count()
}
