//! Authentication: a check run on every request's headers before anything else is looked at.

use hyper::header::{HeaderMap, AUTHORIZATION};
use hyper::StatusCode;
use std::sync::Arc;

/// Why a request was refused: the status and plain-text body it is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The answer's status (401 unless the check says otherwise).
    pub status: StatusCode,
    /// The answer's body.
    pub message: String,
}

impl Default for Rejection {
    fn default() -> Self {
        Rejection { status: StatusCode::UNAUTHORIZED, message: "Unauthorized".into() }
    }
}

type Check = dyn Fn(&HeaderMap) -> Result<(), Rejection> + Send + Sync;

/// A check of each request's headers (POST, GET, DELETE and WebSocket upgrades alike).
#[derive(Clone)]
pub struct Auth {
    check: Arc<Check>,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth(..)")
    }
}

impl Auth {
    /// Any check: `Ok` lets the request through, `Err` answers it with the rejection.
    pub fn new(check: impl Fn(&HeaderMap) -> Result<(), Rejection> + Send + Sync + 'static) -> Self {
        Auth { check: Arc::new(check) }
    }

    /// Requires `Authorization: Bearer <token>`, compared in constant time.
    pub fn bearer(token: impl Into<String>) -> Self {
        let token = token.into().into_bytes();
        Auth::new(move |headers| {
            let given =
                headers.get(AUTHORIZATION).and_then(|v| v.as_bytes().strip_prefix(b"Bearer ")).unwrap_or_default();
            if constant_time_eq(given, &token) {
                Ok(())
            } else {
                Err(Rejection::default())
            }
        })
    }

    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        (self.check)(headers)
    }
}

/// Equality whose time depends on the lengths only, not on where the bytes differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, &y) in b.iter().enumerate() {
        let x = a.get(i).copied().unwrap_or(!y);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer() {
        let auth = Auth::bearer("s3cret");
        let mut headers = HeaderMap::new();
        assert_eq!(auth.check(&headers).unwrap_err().status, StatusCode::UNAUTHORIZED);
        headers.insert(AUTHORIZATION, "Bearer s3cre".parse().unwrap());
        assert!(auth.check(&headers).is_err());
        headers.insert(AUTHORIZATION, "Bearer s3cret!".parse().unwrap());
        assert!(auth.check(&headers).is_err());
        headers.insert(AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(auth.check(&headers).is_ok());
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
