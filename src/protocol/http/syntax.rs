//! The line-level grammar of HTTP/1.1 requests (RFC 9112, RFC 9110): the
//! request line, field lines, chunk-size lines and comma-separated lists.
//!
//! These functions see one complete line at a time and know nothing about
//! limits or parser state, which keeps `parse` about framing only.

use std::borrow::Cow;

use super::error::HttpError;

/// Splits `method SP target SP HTTP/d.d`.
pub(super) fn parse_request_line(line: &[u8]) -> Result<(String, String, u8), HttpError> {
    let bad = || HttpError::BadRequestLine(snippet(line));
    let mut parts = line.splitn(3, |&b| b == b' ');
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if method.is_empty() || !method.iter().all(|&b| is_tchar(b)) {
        return Err(bad());
    }
    if target.is_empty() || !target.iter().all(|&b| (0x21..=0x7e).contains(&b)) {
        return Err(bad());
    }
    let minor = match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            if *major != b'1' || *minor > b'1' {
                return Err(HttpError::UnsupportedVersion(snippet(version)));
            }
            minor - b'0'
        }
        _ => return Err(bad()),
    };
    // All bytes checked are ASCII, so these conversions are lossless.
    Ok((
        String::from_utf8_lossy(method).into_owned(),
        String::from_utf8_lossy(target).into_owned(),
        minor,
    ))
}

/// The path of a request target; see `Request::path`.
pub(super) fn path_of(target: &str) -> &str {
    let has_prefix = |prefix: &str| {
        target
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
    };
    let mut path = target;
    if let Some(scheme) = ["http://", "https://"].into_iter().find(|s| has_prefix(s)) {
        let after = &target[scheme.len()..];
        path = &after[after.find(['/', '?', '#']).unwrap_or(after.len())..];
        if !path.starts_with('/') {
            return "/";
        }
    }
    &path[..path.find(['?', '#']).unwrap_or(path.len())]
}

/// Splits a `name: value` field line (the name as sent: tokens, ASCII).
pub(super) fn parse_field(line: &[u8]) -> Result<(&str, Cow<'_, str>), HttpError> {
    let bad = || HttpError::BadHeader(snippet(line));
    // A name may not be followed by blanks before the colon, and a line
    // starting with a blank is an obsolete continuation line; RFC 9112
    // section 5 allows rejecting both, which closes a smuggling door.
    let colon = line.iter().position(|&b| b == b':').ok_or_else(bad)?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(bad());
    }
    let start = value.iter().position(|&b| !is_blank_byte(b));
    let end = value.iter().rposition(|&b| !is_blank_byte(b));
    let value = match (start, end) {
        (Some(start), Some(end)) => &value[start..=end],
        _ => &[],
    };
    // Visible characters, blanks and bytes past ASCII; no control byte.
    if value.iter().any(|&b| (b < b' ' && b != b'\t') || b == 0x7f) {
        return Err(bad());
    }
    // A name is tokens only (ASCII); a value is taken as it is when it is
    // UTF-8, its bad bytes replaced otherwise.
    let name = std::str::from_utf8(name).map_err(|_| bad())?;
    let value = match std::str::from_utf8(value) {
        Ok(value) => Cow::Borrowed(value),
        Err(_) => String::from_utf8_lossy(value),
    };
    Ok((name, value))
}

/// Reads `HEX [blanks] [; extensions]`, the size saturating on overflow (it
/// is then far above any body limit).
pub(super) fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let bad = || HttpError::BadChunk(format!("invalid chunk-size line {:?}", snippet(line)));
    let n_digits = line
        .iter()
        .position(|b| !b.is_ascii_hexdigit())
        .unwrap_or(line.len());
    if n_digits == 0 {
        return Err(bad());
    }
    let size = line[..n_digits].iter().fold(0u64, |acc, &digit| {
        let value = (digit as char).to_digit(16).unwrap_or(0);
        acc.saturating_mul(16).saturating_add(u64::from(value))
    });
    let rest = &line[n_digits..];
    let rest = &rest[rest
        .iter()
        .position(|&b| !is_blank_byte(b))
        .unwrap_or(rest.len())..];
    // Extensions are allowed and ignored; only control bytes are refused.
    let extension_ok = rest.first() == Some(&b';')
        && rest
            .iter()
            .all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if !rest.is_empty() && !extension_ok {
        return Err(bad());
    }
    Ok(size)
}

/// The non-empty items of a comma-separated header value, trimmed.
pub(super) fn list_items(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|item| item.trim_matches(is_blank))
        .filter(|item| !item.is_empty())
}

/// RFC 9110 `tchar`: the bytes allowed in methods and field names.
pub(super) fn is_tchar(b: u8) -> bool {
    TCHAR[b as usize]
}

/// [`is_tchar`] by byte: letters, digits and ``!#$%&'*+-.^_`|~``.
const TCHAR: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric();
        b += 1;
    }
    let marks = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < marks.len() {
        table[marks[i] as usize] = true;
        i += 1;
    }
    table
};

pub(super) fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_blank_byte(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The start of an offending line or value, for error messages.
pub(super) fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 64;
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]).into_owned();
    if bytes.len() > MAX {
        text.push_str("...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_bytes_and_names_are_tokens() {
        // RFC 9110's tchar, byte by byte.
        for b in 0..=255u8 {
            let listed = b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            assert_eq!(is_tchar(b), listed, "{b}");
        }
        let field = |line: &[u8]| {
            let parsed = parse_field(line).map_err(|_| ());
            parsed.map(|(name, value)| (name.to_string(), value.into_owned()))
        };
        let ok = |name: &str, value: &str| Ok((name.to_string(), value.to_string()));
        // Names come as sent (`Fields::push` lowercases them).
        assert_eq!(
            field(b"Mcp-Session-Id: \tab c\t "),
            ok("Mcp-Session-Id", "ab c")
        );
        assert_eq!(field(b"X:caf\xc3\xa9"), ok("X", "caf\u{e9}"));
        assert_eq!(field(b"X: a\xffb"), ok("X", "a\u{fffd}b"));
        assert_eq!(field(b"X: \x80"), ok("X", "\u{fffd}"));
        assert_eq!(field(b"X:"), ok("X", ""));
        for bad in [
            &b"X: a\x7fb"[..],
            b"X: a\x01",
            b"X : a",
            b" X: a",
            b"X",
            b": a",
            b"X\xc3: a",
        ] {
            assert_eq!(field(bad), Err(()), "{bad:?}");
        }
    }

    #[test]
    fn paths() {
        let cases = [
            ("/mcp", "/mcp"),
            ("/mcp?session=1", "/mcp"),
            ("/mcp#frag", "/mcp"),
            ("/", "/"),
            ("*", "*"),
            ("http://example.com/mcp?x", "/mcp"),
            ("HTTPS://example.com:8080", "/"),
            ("http://example.com?x", "/"),
            ("example.com:443", "example.com:443"),
        ];
        for (target, path) in cases {
            assert_eq!(path_of(target), path, "{target:?}");
        }
    }

    #[test]
    fn snippets() {
        let long = "x".repeat(100);
        assert_eq!(snippet(long.as_bytes()), format!("{}...", &long[..64]));
        assert_eq!(snippet(b"a\xffb"), "a\u{fffd}b");
    }
}
