//! Which requests a listener serves by where they come from, checked before anything else: the
//! `Origin` a browser puts on every cross-origin request and every WebSocket upgrade (no CORS
//! protects a WebSocket: without this, any page the user opens drives the agent), and the
//! `Host` the request was sent to (a DNS name rebound to our address shows up there). Shared by
//! `net::server` and the MCP HTTP bridge; the MCP transport spec requires the `Origin` check.

use hyper::header::{HeaderMap, HeaderValue, HOST, ORIGIN};
use std::net::{IpAddr, SocketAddr};

/// Why a request was refused; its text is the body of the `403` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// More than one `Origin` header.
    DuplicateOrigin,
    /// An `Origin` not allowed (`null` included), as sent (lossy when not text).
    Origin(String),
    /// More than one `Host` header.
    DuplicateHost,
    /// A `Host` that is none of the listener's names.
    Host(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::DuplicateOrigin => f.write_str("Forbidden: more than one Origin header"),
            Refused::Origin(origin) => write!(f, "Forbidden: Origin {origin:?} is not allowed"),
            Refused::DuplicateHost => f.write_str("Forbidden: more than one Host header"),
            Refused::Host(host) => write!(f, "Forbidden: Host {host:?} is not a name this listener answers to"),
        }
    }
}

/// The `Host` names served.
#[derive(Debug, Clone)]
enum Hosts {
    /// Any: a listener beyond loopback that requires a credential (a rebound name gets no
    /// further than the credential check).
    Any,
    /// These names (lower case, IPv6 in brackets), each with the port it must carry when it
    /// carries one (`None`: any); with `any_ip`, every IP literal with the bound port too (a
    /// wildcard bind answers on addresses not known here, and no DNS answer can rebind a literal).
    Listed { names: Vec<(String, Option<u16>)>, port: u16, any_ip: bool },
}

/// The checks of one listener; see the module's documentation.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    /// Allowed origins, lower case, without a trailing `/`.
    origins: Vec<String>,
    hosts: Hosts,
}

impl Guard {
    /// The checks of a listener bound to `addr`: `origins` allowed besides requests without one,
    /// `hosts` (`NAME` or `NAME:PORT`) served besides the names of the bound address (for a
    /// loopback bind `localhost`, `127.0.0.1` and `[::1]`). `credential`: every request must
    /// also pass a credential check, so that beyond loopback any `Host` is served.
    pub(crate) fn new(addr: SocketAddr, credential: bool, origins: &[String], hosts: &[String]) -> Guard {
        let origins = origins.iter().map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase()).collect();
        let ip = addr.ip();
        if credential && !ip.is_loopback() {
            return Guard { origins, hosts: Hosts::Any };
        }
        let port = addr.port();
        let mut names: Vec<(String, Option<u16>)> = hosts
            .iter()
            .map(|h| {
                let (name, port) = split_host(h.trim());
                (name.to_ascii_lowercase(), port)
            })
            .collect();
        if ip.is_loopback() || ip.is_unspecified() {
            names.extend(["localhost", "127.0.0.1", "[::1]"].map(|n| (n.to_string(), Some(port))));
        }
        if !ip.is_unspecified() {
            names.push((literal(ip), Some(port)));
        }
        Guard { origins, hosts: Hosts::Listed { names, port, any_ip: ip.is_unspecified() } }
    }

    /// `Ok` with the request's allowed `Origin` (`None` when it has none), or why it is refused.
    pub(crate) fn check<'h>(&self, headers: &'h HeaderMap) -> Result<Option<&'h HeaderValue>, Refused> {
        self.check_host(headers)?;
        let mut origins = headers.get_all(ORIGIN).iter();
        let Some(origin) = origins.next() else { return Ok(None) };
        if origins.next().is_some() {
            return Err(Refused::DuplicateOrigin);
        }
        let text = origin.to_str().unwrap_or_default();
        let allowed = !text.is_empty() && self.origins.iter().any(|o| o.eq_ignore_ascii_case(text));
        match allowed {
            true => Ok(Some(origin)),
            false => Err(Refused::Origin(String::from_utf8_lossy(origin.as_bytes()).into_owned())),
        }
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<(), Refused> {
        let Hosts::Listed { names, port, any_ip } = &self.hosts else { return Ok(()) };
        let mut hosts = headers.get_all(HOST).iter();
        // No `Host` at all is no browser's request (HTTP/1.0, or a raw client): nothing rebound.
        let Some(host) = hosts.next() else { return Ok(()) };
        if hosts.next().is_some() {
            return Err(Refused::DuplicateHost);
        }
        let refused = || Refused::Host(String::from_utf8_lossy(host.as_bytes()).into_owned());
        let (name, given_port) = split_host(host.to_str().map_err(|_| refused())?);
        // A browser leaves the port out only when it is the scheme's default, i.e. when it
        // connected to the port in the name: a missing port is never a rebinding.
        let port_ok = |wanted: Option<u16>| given_port.is_none() || wanted.is_none() || given_port == wanted;
        let listed = names.iter().any(|(n, p)| n.eq_ignore_ascii_case(name) && port_ok(*p));
        let literal = *any_ip && is_ip_literal(name) && port_ok(Some(*port));
        match listed || literal {
            true => Ok(()),
            false => Err(refused()),
        }
    }
}

/// `name` and the port of `NAME[:PORT]` (`[v6]` and `[v6]:PORT` too); an unparsable port
/// stays part of the name, which then matches nothing.
fn split_host(host: &str) -> (&str, Option<u16>) {
    let cut = match host.rfind(':') {
        Some(i) if host[..i].ends_with(']') || (!host.starts_with('[') && !host[..i].contains(':')) => i,
        _ => return (host, None),
    };
    match host[cut + 1..].parse() {
        Ok(port) => (&host[..cut], Some(port)),
        Err(_) => (host, None),
    }
}

/// An address as a `Host` header names it (IPv6 in brackets).
fn literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn is_ip_literal(name: &str) -> bool {
    match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => name.parse::<std::net::Ipv4Addr>().is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        map
    }

    fn loopback(origins: &[&str], hosts: &[&str]) -> Guard {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        Guard::new("127.0.0.1:8080".parse().unwrap(), false, &owned(origins), &owned(hosts))
    }

    #[test]
    fn loopback_names_with_the_bound_port() {
        let guard = loopback(&[], &[]);
        for host in ["localhost:8080", "127.0.0.1:8080", "[::1]:8080", "LOCALHOST:8080", "localhost"] {
            assert_eq!(guard.check(&headers(&[("host", host)])), Ok(None), "{host}");
        }
        assert_eq!(guard.check(&headers(&[])), Ok(None), "no Host");
        for host in ["localhost:8081", "evil.example:8080", "evil.example", "10.0.0.1:8080", "localhost:x", ""] {
            assert!(matches!(guard.check(&headers(&[("host", host)])), Err(Refused::Host(_))), "{host}");
        }
        let two = headers(&[("host", "localhost:8080"), ("host", "localhost:8080")]);
        assert_eq!(guard.check(&two), Err(Refused::DuplicateHost));
    }

    #[test]
    fn allowed_hosts_with_or_without_a_port() {
        let guard = loopback(&[], &["agent.example", "other.example:9000"]);
        assert!(guard.check(&headers(&[("host", "agent.example:1234")])).is_ok());
        assert!(guard.check(&headers(&[("host", "other.example:9000")])).is_ok());
        assert!(guard.check(&headers(&[("host", "other.example:8080")])).is_err());
    }

    #[test]
    fn origins_only_when_allowed() {
        let guard = loopback(&["http://app.example:3000/"], &[]);
        let ok = headers(&[("host", "localhost:8080"), ("origin", "http://app.example:3000")]);
        assert_eq!(guard.check(&ok).unwrap().unwrap(), "http://app.example:3000");
        for origin in ["https://evil.example", "null", "http://app.example:3001", "http://app.example:3000/x"] {
            let sent = headers(&[("origin", origin)]);
            assert_eq!(guard.check(&sent), Err(Refused::Origin(origin.into())), "{origin}");
        }
        let two = headers(&[("origin", "http://app.example:3000"), ("origin", "http://app.example:3000")]);
        assert_eq!(guard.check(&two), Err(Refused::DuplicateOrigin));
        assert!(loopback(&["null"], &[]).check(&headers(&[("origin", "null")])).is_ok(), "null when allowed");
    }

    #[test]
    fn beyond_loopback() {
        let wildcard = |credential| Guard::new("0.0.0.0:80".parse().unwrap(), credential, &[], &[]);
        assert!(wildcard(true).check(&headers(&[("host", "agent.example")])).is_ok());
        assert!(wildcard(false).check(&headers(&[("host", "agent.example")])).is_err());
        assert!(wildcard(false).check(&headers(&[("host", "192.168.1.5:80")])).is_ok(), "a literal");
        assert!(wildcard(false).check(&headers(&[("host", "[fe80::1]:80")])).is_ok());
        assert!(wildcard(false).check(&headers(&[("host", "192.168.1.5:81")])).is_err());
        let bound = Guard::new("192.168.1.5:80".parse().unwrap(), false, &[], &[]);
        assert!(bound.check(&headers(&[("host", "192.168.1.5")])).is_ok());
        assert!(bound.check(&headers(&[("host", "localhost")])).is_err());
        // The origin check stays whatever the credential.
        assert!(wildcard(true).check(&headers(&[("origin", "https://evil.example")])).is_err());
    }

    #[test]
    fn hosts_split() {
        assert_eq!(split_host("a:1"), ("a", Some(1)));
        assert_eq!(split_host("[::1]:2"), ("[::1]", Some(2)));
        assert_eq!(split_host("[::1]"), ("[::1]", None));
        assert_eq!(split_host("a:99999"), ("a:99999", None));
        assert_eq!(split_host("::1"), ("::1", None));
    }
}
