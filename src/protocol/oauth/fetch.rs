//! The JWKS fetch over plain HTTP/1.1: the `http://` URL split into what
//! the request needs, the request's bytes, when a response is whole (at the
//! end of its body, whether or not the server then closes), and a whole
//! response split into its status and body.
//!
//! No TLS: an `https://` issuer's keys are reached through the proxy that
//! terminates TLS for this server, or kept in a file (docs/oauth.md, "HTTPS issuers").
//! Hosts are IP literals or `localhost`, as for `--http-host`: no name
//! service lookup.
//!
//! Pure: the reactor connects, writes and reads.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::protocol::log::Untrusted;

/// Most bytes of a response read (head and body).
pub const MAX_RESPONSE: usize = super::jwks::MAX_JWKS + 16 * 1024;

/// Where a JWKS is fetched from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    pub addr: SocketAddr,
    /// The `Host` header: the authority as written.
    pub host: String,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Url {
    /// Parses `http://HOST[:PORT][/PATH]` with an IP literal or `localhost`.
    pub fn parse(text: &str) -> Result<Url, String> {
        if text.starts_with("https://") {
            return Err(format!(
                "'{text}': an https JWKS cannot be fetched directly (no TLS client); \
                 give a file, or an http:// URL on a proxy that fetches it (docs/oauth.md, \"HTTPS issuers\")"
            ));
        }
        let rest = text
            .strip_prefix("http://")
            .ok_or_else(|| format!("'{text}' is not an http:// URL"))?;
        let cut = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(cut);
        let path = match path {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        };
        let path = path.split('#').next().unwrap_or("/").to_string();
        if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return Err(format!(
                "'{text}': the path has spaces or control characters"
            ));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !p.contains(']') => {
                let port = p
                    .parse::<u16>()
                    .map_err(|_| format!("'{text}': bad port '{p}'"))?;
                (h, port)
            }
            _ => (authority, 80),
        };
        let ip = if host.eq_ignore_ascii_case("localhost") {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            let bare = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            bare.parse().map_err(|_| {
                format!("'{text}': the host must be an IP address or localhost (no name lookup)")
            })?
        };
        Ok(Url {
            addr: SocketAddr::new(ip, port),
            host: authority.to_string(),
            path,
        })
    }

    /// The GET request's bytes.
    pub fn request(&self) -> Vec<u8> {
        format!(
            "GET {} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\nUser-Agent: morloc-mcp\r\n\r\n",
            self.path, self.host
        )
        .into_bytes()
    }
}

/// Whether `bytes` hold a whole response, so the fetch may end without
/// waiting for the server to close: its head is in, and its body has its
/// `Content-Length` bytes or its last chunk. A response that says neither
/// (or that cannot be read) is whole only when the server closes.
pub fn complete(bytes: &[u8]) -> bool {
    let Some(end) = find(bytes, b"\r\n\r\n") else {
        return false;
    };
    let Ok((_, framing)) = head(&bytes[..end]) else {
        return false;
    };
    let body = &bytes[end + 4..];
    match framing {
        // The last chunk, then trailers (if any) up to a blank line.
        Framing::Chunked => dechunk(body)
            .is_ok_and(|(_, rest)| rest.starts_with(b"\r\n") || find(rest, b"\r\n\r\n").is_some()),
        Framing::Length(length) => body.len() >= length,
        Framing::Close => false,
    }
}

/// How a response's body ends.
enum Framing {
    Chunked,
    Length(usize),
    /// When the server closes.
    Close,
}

/// The status and body framing of a response head (without its blank
/// line).
fn head(bytes: &[u8]) -> Result<(u16, Framing), String> {
    let head = std::str::from_utf8(bytes).map_err(|_| "the response head is not text")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let mut words = status_line.splitn(3, ' ');
    let version = words.next().unwrap_or("");
    // Exactly three digits, the first not 0 (RFC 9112 §4, RFC 9110 §15):
    // `1000`, `+200` or `000` is no status.
    let status = words
        .next()
        .filter(|s| s.len() == 3 && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| *s >= 100);
    let (true, Some(status)) = (version.starts_with("HTTP/1."), status) else {
        return Err(format!(
            "bad status line {}",
            Untrusted(&status_line.chars().take(80).collect::<String>())
        ));
    };
    let mut length = None;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Err("a response header has no ':'".into());
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| "bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().ends_with("chunked");
        }
    }
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked,
        (false, Some(length)) => Framing::Length(length),
        (false, None) => Framing::Close,
    };
    Ok((status, framing))
}

/// Splits a whole response (see [`complete`], or read until the server
/// closed) into its status and body: a `Content-Length` body, a chunked
/// one, or all the rest.
pub fn response(bytes: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let end = find(bytes, b"\r\n\r\n").ok_or("the response has no complete head")?;
    let (status, framing) = head(&bytes[..end])?;
    let body = &bytes[end + 4..];
    let body = match framing {
        Framing::Chunked => dechunk(body)?.0,
        Framing::Length(length) => body
            .get(..length)
            .ok_or("the response body is shorter than its Content-Length")?
            .to_vec(),
        Framing::Close => body.to_vec(),
    };
    Ok((status, body))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A chunked body's data, and what follows its last chunk's size line
/// (trailers, ignored).
fn dechunk(mut rest: &[u8]) -> Result<(Vec<u8>, &[u8]), String> {
    let mut out = Vec::new();
    loop {
        let line_end = find(rest, b"\r\n").ok_or("a chunk size line is cut off")?;
        let line = std::str::from_utf8(&rest[..line_end]).map_err(|_| "bad chunk size")?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| "bad chunk size")?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok((out, rest));
        }
        if rest.len() < size + 2 || &rest[size..size + 2] != b"\r\n" {
            return Err("a chunk is cut off".into());
        }
        out.extend_from_slice(&rest[..size]);
        if out.len() > MAX_RESPONSE {
            return Err("the response body is too long".into());
        }
        rest = &rest[size + 2..];
    }
}
