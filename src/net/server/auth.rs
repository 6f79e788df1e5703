//! Authentication: a check run on every request's headers before anything else is looked at.

use crate::net::secret::bearer_matches;
use hyper::header::HeaderMap;
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

    /// Requires `Authorization: Bearer <token>`, compared in constant time (the time depends on
    /// the lengths only); a request with two `Authorization` headers is refused.
    pub fn bearer(token: impl Into<String>) -> Self {
        let token = token.into().into_bytes();
        Auth::new(move |headers| match bearer_matches(headers, &token) {
            true => Ok(()),
            false => Err(Rejection::default()),
        })
    }

    /// [`Auth::bearer`] with the token in `path` (surrounding white space taken off, so a
    /// trailing newline does not count). An empty file is an error: a listener meant to need a
    /// token must not start accepting an empty one.
    pub fn bearer_file(path: impl AsRef<std::path::Path>) -> std::io::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        match text.trim() {
            "" => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: no token in the file", path.display()),
            )),
            token => Ok(Auth::bearer(token)),
        }
    }

    pub(crate) fn check(&self, headers: &HeaderMap) -> Result<(), Rejection> {
        (self.check)(headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::AUTHORIZATION;

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
    }

    #[test]
    fn bearer_file() {
        let dir = std::env::temp_dir().join(format!("acp-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n").unwrap();
        let auth = Auth::bearer_file(&file).expect("a token");
        let mut headers = HeaderMap::new();
        headers.insert(hyper::header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(auth.check(&headers).is_ok());
        std::fs::write(&file, " \n").unwrap();
        assert!(Auth::bearer_file(&file).is_err(), "empty");
        assert!(Auth::bearer_file(dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
