//! Request checks that keep strangers out: the bearer token, and the
//! `Origin` and `Host` checks the MCP transport specification asks for.
//!
//! A browser lets any web page send requests to a server on the loopback
//! interface. `Origin` tells us which page sent one, so only pages served by
//! the bound host itself (or listed by the operator) get in. DNS rebinding
//! gets around that by pointing an attacker's name at 127.0.0.1, making the
//! page same-origin with our server; the `Host` header then still carries
//! the attacker's name, so a loopback-bound server insists on a loopback
//! `Host`.

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether an `Authorization` header value presents `token`: scheme
/// `Bearer` in any case, one or more spaces, then exactly the token bytes.
/// The bytes are compared in constant time. An empty `token` matches
/// nothing, so a misconfigured empty token locks everyone out rather than
/// letting everyone in.
pub fn bearer_ok(authorization: Option<&str>, token: &str) -> bool {
    let Some(value) = authorization else {
        return false;
    };
    let value = value.trim_matches([' ', '\t']);
    let Some((scheme, credentials)) = value.split_once(' ') else {
        return false;
    };
    let credentials = credentials.trim_start_matches(' ');
    let scheme_ok = scheme.eq_ignore_ascii_case("bearer");
    let token_ok = constant_time_eq(credentials.as_bytes(), token.as_bytes());
    scheme_ok && token_ok && !token.is_empty()
}

/// Which origins and hosts may talk to the server, derived from the bind
/// address and an operator-given allow-list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginPolicy {
    /// The bind host, lowercased, without brackets.
    bind_host: String,
    bind_loopback: bool,
    /// Allowed origins as `scheme://host[:port]`, lowercased.
    allowed: Vec<String>,
}

impl OriginPolicy {
    /// A policy for a server bound to `bind_host` (the host text it was
    /// given: `127.0.0.1`, `::1`, `[::1]`, `localhost`, `0.0.0.0`, a name)
    /// that also admits the exact origins in `allowed_origins`
    /// (`scheme://host[:port]`, compared ignoring ASCII case).
    pub fn new<S: AsRef<str>>(
        bind_host: &str,
        allowed_origins: impl IntoIterator<Item = S>,
    ) -> Self {
        let bind_host = strip_brackets(bind_host).to_ascii_lowercase();
        let allowed = allowed_origins.into_iter();
        OriginPolicy {
            bind_loopback: is_loopback_host(&bind_host),
            bind_host,
            allowed: allowed
                .map(|origin| origin.as_ref().to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether the bind host is a loopback name or address.
    pub fn bind_is_loopback(&self) -> bool {
        self.bind_loopback
    }

    /// Whether a request with this `Origin` header may be served. No header
    /// (not a browser, or a same-origin navigation) is fine; otherwise the
    /// origin must be on the allow-list, or have the bind host as its host,
    /// or, on a loopback bind, have a loopback host. Anything else,
    /// including `null` and unparsable values, is forbidden (answer 403).
    pub fn origin_ok(&self, origin: Option<&str>) -> bool {
        let Some(origin) = origin else {
            return true;
        };
        if self
            .allowed
            .iter()
            .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let Some(host) = origin_host(origin) else {
            return false;
        };
        let host = strip_brackets(host);
        host.eq_ignore_ascii_case(&self.bind_host) || (self.bind_loopback && is_loopback_host(host))
    }

    /// Whether a request with this `Host` header may be served. On a
    /// loopback bind the host must be a loopback name or address, with an
    /// optional port: `localhost`, `127.x.y.z`, `[::1]`. A missing header is
    /// accepted: browsers always send one, and the parser already rejects an
    /// HTTP/1.1 request without it. Other binds accept any host.
    pub fn host_ok(&self, host: Option<&str>) -> bool {
        match host {
            Some(host) if self.bind_loopback => {
                split_port(host).is_some_and(|(name, _)| is_loopback_authority_host(name))
            }
            _ => true,
        }
    }
}

/// Whether `host` (a name or an address, IPv6 without brackets) is
/// `localhost` or a loopback address (`127.0.0.0/8`, `::1`, or an
/// IPv4-mapped `127.x.y.z`).
pub fn is_loopback_host(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

/// Like [`is_loopback_host`] for the host part of a URI authority, where an
/// IPv6 address must be bracketed.
fn is_loopback_authority_host(host: &str) -> bool {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().is_ok() && is_loopback_host(v6),
        None => {
            host.eq_ignore_ascii_case("localhost")
                || host.parse::<Ipv4Addr>().is_ok_and(|v4| v4.is_loopback())
        }
    }
}

/// The host of a serialised origin `scheme://host[:port]` (brackets kept),
/// or `None` if it is not of that form.
fn origin_host(origin: &str) -> Option<&str> {
    let (scheme, authority) = origin.split_once("://")?;
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok || authority.contains(['/', '?', '#', '@']) {
        return None;
    }
    let (host, _) = split_port(authority)?;
    Some(host)
}

/// Splits `host[:port]` (host possibly a bracketed IPv6 address); the port
/// must be digits. `None` for an empty host or a malformed port.
fn split_port(authority: &str) -> Option<(&str, &str)> {
    let host_end = if authority.starts_with('[') {
        authority.find(']')? + 1
    } else {
        authority.find(':').unwrap_or(authority.len())
    };
    let (host, rest) = authority.split_at(host_end);
    let port = match rest.strip_prefix(':') {
        Some(port) if port.bytes().all(|b| b.is_ascii_digit()) => port,
        Some(_) => return None,
        None if rest.is_empty() => "",
        None => return None,
    };
    if host.is_empty() {
        return None;
    }
    Some((host, port))
}

fn strip_brackets(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Compares in time that depends on the lengths only, never on where the
/// first differing byte is.
fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = usize::from(given.len() != expected.len());
    for (i, &want) in expected.iter().enumerate() {
        let got = given.get(i).copied().unwrap_or(0);
        diff |= usize::from(black_box(got ^ want));
    }
    black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer() {
        let cases = [
            (Some("Bearer s3cret"), "s3cret", true),
            (Some("bearer s3cret"), "s3cret", true),
            (Some("BEARER    s3cret"), "s3cret", true),
            (Some("  Bearer s3cret \t"), "s3cret", true),
            (Some("Bearer s3cre"), "s3cret", false),
            (Some("Bearer s3cret2"), "s3cret", false),
            (Some("Bearer S3CRET"), "s3cret", false),
            (Some("Bearer\ts3cret"), "s3cret", false),
            (Some("Bearers3cret"), "s3cret", false),
            (Some("Basic s3cret"), "s3cret", false),
            (Some("s3cret"), "s3cret", false),
            (Some("Bearer "), "s3cret", false),
            (Some(""), "s3cret", false),
            (None, "s3cret", false),
            // An empty configured token admits nobody.
            (Some("Bearer "), "", false),
            (Some("Bearer"), "", false),
            (None, "", false),
        ];
        for (header, token, expected) in cases {
            assert_eq!(
                bearer_ok(header, token),
                expected,
                "{header:?} vs {token:?}"
            );
        }
        assert!(constant_time_eq(b"", b""));
        assert!(!constant_time_eq(b"a", b""));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(!constant_time_eq(b"ab\0", b"ab"));
    }

    #[test]
    fn origins() {
        let loopback = OriginPolicy::new(
            "127.0.0.1",
            ["https://App.example.com", "http://tool.test:8080"],
        );
        let v6 = OriginPolicy::new("[::1]", [""; 0]);
        let public = OriginPolicy::new("0.0.0.0", vec!["https://app.example.com".to_string()]);
        let named = OriginPolicy::new("mcp.example.org", Vec::<String>::new());
        assert!(loopback.bind_is_loopback() && v6.bind_is_loopback());
        assert!(!public.bind_is_loopback() && !named.bind_is_loopback());
        let cases: [(&OriginPolicy, Option<&str>, bool); 22] = [
            (&loopback, None, true),
            (&loopback, Some("http://127.0.0.1:3000"), true),
            (&loopback, Some("http://localhost"), true),
            (&loopback, Some("http://LOCALHOST:5173"), true),
            (&loopback, Some("http://127.8.9.10"), true),
            (&loopback, Some("http://[::1]:80"), true),
            (&loopback, Some("https://app.example.com"), true),
            (&loopback, Some("http://tool.test:8080"), true),
            (&loopback, Some("http://tool.test"), false),
            (&loopback, Some("https://evil.example"), false),
            (&loopback, Some("http://localhost.evil.example"), false),
            (&loopback, Some("http://127.0.0.1.evil.example"), false),
            (&loopback, Some("null"), false),
            (&loopback, Some(""), false),
            (&loopback, Some("http://localhost/path"), false),
            (&loopback, Some("http://localhost:80x"), false),
            (&loopback, Some("http://user@localhost"), false),
            (&v6, Some("http://[::1]:9000"), true),
            (&v6, Some("http://localhost:9000"), true),
            (&public, Some("http://localhost"), false),
            (&public, Some("https://app.example.com"), true),
            (&named, Some("https://MCP.example.org:443"), true),
        ];
        for (policy, origin, expected) in cases {
            assert_eq!(
                policy.origin_ok(origin),
                expected,
                "{origin:?} for {policy:?}"
            );
        }
    }

    #[test]
    fn hosts() {
        let loopback = OriginPolicy::new("localhost", [""; 0]);
        let cases = [
            (None, true),
            (Some("localhost"), true),
            (Some("LocalHost:8080"), true),
            (Some("127.0.0.1"), true),
            (Some("127.1.2.3:1"), true),
            (Some("[::1]"), true),
            (Some("[::1]:8080"), true),
            (Some("[0:0:0:0:0:0:0:1]:8080"), true),
            (Some("localhost:"), true),
            (Some("::1"), false),
            (Some("[::2]"), false),
            (Some("[::1"), false),
            (Some("[::1]x"), false),
            (Some("127.1"), false),
            (Some("0177.0.0.1"), false),
            (Some("128.0.0.1"), false),
            (Some("evil.example"), false),
            (Some("localhost.evil.example"), false),
            (Some("localhost:80:80"), false),
            (Some("localhost:http"), false),
            (Some(""), false),
        ];
        for (host, expected) in cases {
            assert_eq!(loopback.host_ok(host), expected, "{host:?}");
        }
        let public = OriginPolicy::new("0.0.0.0", [""; 0]);
        assert!(public.host_ok(Some("evil.example")));
    }

    #[test]
    fn loopback_names() {
        for host in [
            "localhost",
            "127.0.0.1",
            "127.255.0.1",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "[::1]",
            "0.0.0.0",
            "::",
            "10.0.0.1",
            "example.com",
            "localhost.",
            "",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}
