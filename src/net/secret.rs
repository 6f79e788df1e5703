//! Comparing a secret a request presents with the one a listener holds, in time that depends on
//! the lengths only: the one comparison under `net::server::Auth::bearer` and the MCP HTTP
//! bridge's token check (hand-written: eight lines do not justify a dependency, and the
//! compiler is kept from short-cutting it by folding every byte's difference into one word).

use hyper::header::{HeaderMap, AUTHORIZATION};

/// Equality whose time depends on the lengths only, not on where the bytes differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &y) in b.iter().enumerate() {
        let x = a.get(i).copied().unwrap_or(!y);
        diff |= usize::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

/// Whether `headers` hold exactly one `Authorization: Bearer <token>` (the scheme's name in any
/// case, as RFC 9110 says) with this `token`. Two `Authorization` headers are refused: which one
/// a proxy in front would have looked at is unknown.
pub(crate) fn bearer_matches(headers: &HeaderMap, token: &[u8]) -> bool {
    let mut all = headers.get_all(AUTHORIZATION).iter();
    let (Some(value), None) = (all.next(), all.next()) else { return false };
    let value = value.as_bytes();
    let given = match value.get(..7) {
        Some(scheme) if scheme.eq_ignore_ascii_case(b"bearer ") => &value[7..],
        _ => return false,
    };
    constant_time_eq(given, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_only_when_every_byte_and_the_length_are() {
        assert!(constant_time_eq(b"", b""));
        assert!(constant_time_eq(b"s3cret", b"s3cret"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(!constant_time_eq(b"a", b""));
        assert!(!constant_time_eq(b"s3cre", b"s3cret"));
        assert!(!constant_time_eq(b"s3cret!", b"s3cret"));
        assert!(!constant_time_eq(b"s3creT", b"s3cret"));
    }

    #[test]
    fn one_bearer_header_with_the_token() {
        let mut headers = HeaderMap::new();
        assert!(!bearer_matches(&headers, b"t"));
        headers.insert(AUTHORIZATION, "Bearer t".parse().unwrap());
        assert!(bearer_matches(&headers, b"t"));
        headers.insert(AUTHORIZATION, "bearer t".parse().unwrap());
        assert!(bearer_matches(&headers, b"t"));
        headers.insert(AUTHORIZATION, "Basic t".parse().unwrap());
        assert!(!bearer_matches(&headers, b"t"));
        headers.insert(AUTHORIZATION, "Bearer".parse().unwrap());
        assert!(!bearer_matches(&headers, b"t"));
        headers.insert(AUTHORIZATION, "Bearer t".parse().unwrap());
        headers.append(AUTHORIZATION, "Bearer t".parse().unwrap());
        assert!(!bearer_matches(&headers, b"t"), "two Authorization headers");
    }
}
