//! Response encoding: status line and headers, the `100 Continue` interim,
//! `text/event-stream` responses in chunked framing, and CORS header sets.
//!
//! Everything appends to a caller-owned `Vec<u8>` (the connection's write
//! queue), so a response costs no allocation of its own. Header values are
//! sanitised rather than trusted: a CR or LF smuggled into a value (an echoed
//! origin, say) would otherwise let a client inject headers.

use std::borrow::Cow;

/// Methods announced in a CORS preflight.
pub const CORS_ALLOW_METHODS: &str = "POST, DELETE, OPTIONS";

/// Request headers a browser may send cross-origin: the ones the MCP
/// Streamable-HTTP transport defines, plus the two every client sends.
pub const CORS_ALLOW_HEADERS: &str =
    "Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID";

/// Seconds a browser may cache a preflight answer (one day).
pub const CORS_MAX_AGE: &str = "86400";

/// The reason phrase for `status`, from the IANA HTTP status code registry
/// (RFC 9110 section 15 and later additions). Unregistered codes get an
/// empty phrase, which the status-line grammar allows.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        102 => "Processing",
        103 => "Early Hints",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        207 => "Multi-Status",
        208 => "Already Reported",
        226 => "IM Used",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        423 => "Locked",
        424 => "Failed Dependency",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        506 => "Variant Also Negotiates",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        511 => "Network Authentication Required",
        _ => "",
    }
}

/// Appends a status line and headers, in this order: `Content-Type` (if
/// given), `Content-Length` (if given), `Connection: keep-alive` or `close`,
/// then `headers` in order, then the empty line. Use it directly for a
/// response to `HEAD` (the length of the body that is not sent) or for a
/// head whose body is framed another way.
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    content_length: Option<usize>,
    headers: &[(&str, &str)],
    keep_alive: bool,
) {
    write_status_line(out, status);
    if let Some(content_type) = content_type {
        write_header(out, "Content-Type", content_type);
    }
    if let Some(length) = content_length {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, length as u64);
        out.extend_from_slice(b"\r\n");
    }
    let connection = if keep_alive { "keep-alive" } else { "close" };
    write_header(out, "Connection", connection);
    for (name, value) in headers {
        write_header(out, name, value);
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a complete response with a `Content-Length` body. A 1xx, 204 or
/// 304 status carries neither body nor length (RFC 9110 sections 8.6 and
/// 15), so `body` is ignored for those.
pub fn write_response(
    out: &mut Vec<u8>,
    status: u16,
    content_type: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
    keep_alive: bool,
) {
    if (100..200).contains(&status) || status == 204 || status == 304 {
        write_head(out, status, content_type, None, headers, keep_alive);
        return;
    }
    write_head(
        out,
        status,
        content_type,
        Some(body.len()),
        headers,
        keep_alive,
    );
    out.extend_from_slice(body);
}

/// Appends the `100 Continue` interim response.
pub fn write_continue(out: &mut Vec<u8>) {
    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
}

/// Appends the head of a `200` event stream: `Content-Type:
/// text/event-stream`, `Cache-Control: no-cache`, `Transfer-Encoding:
/// chunked`, `Connection`, then `headers`. Chunked framing needs an
/// HTTP/1.1 client; answer an HTTP/1.0 client with a plain response instead.
/// Follow with [`write_sse_message`] per message and [`write_last_chunk`].
pub fn write_sse_head(out: &mut Vec<u8>, headers: &[(&str, &str)], keep_alive: bool) {
    write_status_line(out, 200);
    write_header(out, "Content-Type", "text/event-stream");
    write_header(out, "Cache-Control", "no-cache");
    write_header(out, "Transfer-Encoding", "chunked");
    let connection = if keep_alive { "keep-alive" } else { "close" };
    write_header(out, "Connection", connection);
    // Reverse proxies (nginx) would otherwise buffer the stream.
    write_header(out, "X-Accel-Buffering", "no");
    for (name, value) in headers {
        write_header(out, name, value);
    }
    out.extend_from_slice(b"\r\n");
}

/// One SSE comment chunk (`:` line), a keep-alive for long-lived streams
/// that clients ignore.
pub fn write_sse_comment(out: &mut Vec<u8>) {
    out.extend_from_slice(b"3\r\n:\n\n\r\n");
}

/// Appends one chunk holding one server-sent event, `event: message` with
/// `data` (normally one compact JSON-RPC message). Should `data` contain line
/// breaks, each line becomes its own `data:` field, which the receiver joins
/// back with LF (HTML Living Standard, "event stream interpretation").
pub fn write_sse_message(out: &mut Vec<u8>, data: &str) {
    const EVENT: &str = "event: message\n";
    const DATA: &str = "data: ";
    // CRLF, CR and LF all end a line in an event stream; normalise to LF.
    let data: Cow<'_, str> = if data.contains('\r') {
        Cow::Owned(data.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(data)
    };
    let payload_len = EVENT.len()
        + data
            .split('\n')
            .map(|line| DATA.len() + line.len() + 1)
            .sum::<usize>()
        + 1;
    out.extend_from_slice(format!("{payload_len:x}\r\n").as_bytes());
    out.extend_from_slice(EVENT.as_bytes());
    for line in data.split('\n') {
        out.extend_from_slice(DATA.as_bytes());
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    out.extend_from_slice(b"\n\r\n");
}

/// Appends the zero-length chunk that ends a chunked body (no trailers).
pub fn write_last_chunk(out: &mut Vec<u8>) {
    out.extend_from_slice(b"0\r\n\r\n");
}

/// The headers answering a CORS preflight (`OPTIONS` with
/// `Access-Control-Request-Method`) from `origin`, which the caller has
/// already found allowed. Send them with status 204.
pub fn cors_preflight_headers(origin: &str) -> [(&'static str, &str); 6] {
    [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Allow-Methods", CORS_ALLOW_METHODS),
        ("Access-Control-Allow-Headers", CORS_ALLOW_HEADERS),
        ("Access-Control-Expose-Headers", "Mcp-Session-Id"),
        ("Access-Control-Max-Age", CORS_MAX_AGE),
        ("Vary", "Origin"),
    ]
}

/// The headers to add to an ordinary response for an allowed `origin`, so a
/// browser lets the page read the response and its `Mcp-Session-Id`.
pub fn cors_headers(origin: &str) -> [(&'static str, &str); 3] {
    [
        ("Access-Control-Allow-Origin", origin),
        ("Access-Control-Expose-Headers", "Mcp-Session-Id"),
        ("Vary", "Origin"),
    ]
}

fn write_status_line(out: &mut Vec<u8>, status: u16) {
    // A status outside 100..=999 cannot be written as three digits; such a
    // call is a bug in the caller, answered as a server error.
    let status = if (100..=999).contains(&status) {
        status
    } else {
        500
    };
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `n` in decimal, without the formatting machinery.
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `name: value`, replacing control bytes (other than HTAB) with
/// spaces and dropping bytes not allowed in a field name.
fn write_header(out: &mut Vec<u8>, name: &str, value: &str) {
    let name_ok = |b: u8| b.is_ascii_graphic() && b != b':';
    let value_ok = |b: u8| (b >= b' ' || b == b'\t') && b != 0x7f;
    out.reserve(name.len() + value.len() + 4);
    // Clean fields (all of them in practice) are copied whole.
    if name.bytes().all(name_ok) {
        out.extend_from_slice(name.as_bytes());
    } else {
        out.extend(name.bytes().filter(|&b| name_ok(b)));
    }
    out.extend_from_slice(b": ");
    if value.bytes().all(value_ok) {
        out.extend_from_slice(value.as_bytes());
    } else {
        out.extend(value.bytes().map(|b| if value_ok(b) { b } else { b' ' }));
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(write: impl FnOnce(&mut Vec<u8>), expected: &str) {
        let mut out = b"previous bytes stay|".to_vec();
        write(&mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.strip_prefix("previous bytes stay|"), Some(expected));
    }

    #[test]
    fn responses() {
        check(
            |out| {
                let headers = [("Mcp-Session-Id", "ab12"), ("X-Two", "2")];
                write_response(out, 200, Some("application/json"), &headers, b"{}\n", true)
            },
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\
             Connection: keep-alive\r\nMcp-Session-Id: ab12\r\nX-Two: 2\r\n\r\n{}\n",
        );
        check(
            |out| write_response(out, 413, None, &[], b"", false),
            "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        // No length and no body for 204; the length only for HEAD.
        check(
            |out| write_response(out, 204, None, &[("Vary", "Origin")], b"ignored", true),
            "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\nVary: Origin\r\n\r\n",
        );
        check(
            |out| write_head(out, 405, Some("application/json"), Some(31), &[("Allow", "POST, DELETE")], true),
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: 31\r\n\
             Connection: keep-alive\r\nAllow: POST, DELETE\r\n\r\n",
        );
        check(write_continue, "HTTP/1.1 100 Continue\r\n\r\n");
        // Injected line breaks cannot start a new header.
        check(
            |out| write_head(out, 403, None, None, &[("X\r\nY", "a\r\nSet-Cookie: x"), ("T", "a\tb")], false),
            "HTTP/1.1 403 Forbidden\r\nConnection: close\r\nXY: a  Set-Cookie: x\r\nT: a\tb\r\n\r\n",
        );
        // A status that cannot be written is turned into a server error.
        check(
            |out| write_head(out, 42, None, None, &[], true),
            "HTTP/1.1 500 Internal Server Error\r\nConnection: keep-alive\r\n\r\n",
        );
    }

    #[test]
    fn reason_phrases() {
        let cases = [
            (200, "OK"),
            (202, "Accepted"),
            (400, "Bad Request"),
            (401, "Unauthorized"),
            (403, "Forbidden"),
            (404, "Not Found"),
            (405, "Method Not Allowed"),
            (406, "Not Acceptable"),
            (413, "Content Too Large"),
            (414, "URI Too Long"),
            (415, "Unsupported Media Type"),
            (431, "Request Header Fields Too Large"),
            (500, "Internal Server Error"),
            (501, "Not Implemented"),
            (503, "Service Unavailable"),
            (505, "HTTP Version Not Supported"),
            (299, ""),
        ];
        for (status, phrase) in cases {
            assert_eq!(reason(status), phrase, "{status}");
        }
        // Every status the parser can produce has a phrase.
        for status in [400, 413, 414, 431, 501, 505] {
            assert!(!reason(status).is_empty());
        }
    }

    #[test]
    fn event_stream() {
        check(
            |out| write_sse_head(out, &[("Mcp-Session-Id", "ab")], true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Transfer-Encoding: chunked\r\nConnection: keep-alive\r\nX-Accel-Buffering: no\r\n\
             Mcp-Session-Id: ab\r\n\r\n",
        );
        check(write_sse_comment, "3\r\n:\n\n\r\n");
        // 15 + 6 + 17 + 1 + 1 = 40 = 0x28 bytes in the chunk.
        check(
            |out| write_sse_message(out, r#"{"jsonrpc":"2.0"}"#),
            "28\r\nevent: message\ndata: {\"jsonrpc\":\"2.0\"}\n\n\r\n",
        );
        check(
            |out| write_sse_message(out, "a\r\nb\rc\nd"),
            "30\r\nevent: message\ndata: a\ndata: b\ndata: c\ndata: d\n\n\r\n",
        );
        check(write_last_chunk, "0\r\n\r\n");
        // The chunk sizes frame the stream exactly: decode it back.
        let mut out = Vec::new();
        let messages = ["x".repeat(300), String::new(), "[1,\n2]".to_string()];
        for message in &messages {
            write_sse_message(&mut out, message);
        }
        write_last_chunk(&mut out);
        let mut rest = &out[..];
        let mut payloads = Vec::new();
        loop {
            let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap(), 16).unwrap();
            rest = &rest[line_end + 2..];
            if size == 0 {
                assert_eq!(rest, b"\r\n");
                break;
            }
            payloads.push(String::from_utf8(rest[..size].to_vec()).unwrap());
            assert_eq!(&rest[size..size + 2], b"\r\n");
            rest = &rest[size + 2..];
        }
        let expected = [
            format!("event: message\ndata: {}\n\n", "x".repeat(300)),
            "event: message\ndata: \n\n".to_string(),
            "event: message\ndata: [1,\ndata: 2]\n\n".to_string(),
        ];
        assert_eq!(payloads, expected);
    }

    #[test]
    fn cors() {
        let origin = "http://localhost:5173";
        let mut out = Vec::new();
        write_response(
            &mut out,
            204,
            None,
            &cors_preflight_headers(origin),
            b"",
            true,
        );
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 204 No Content\r\nConnection: keep-alive\r\n\
             Access-Control-Allow-Origin: http://localhost:5173\r\n\
             Access-Control-Allow-Methods: POST, DELETE, OPTIONS\r\n\
             Access-Control-Allow-Headers: Authorization, Content-Type, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID\r\n\
             Access-Control-Expose-Headers: Mcp-Session-Id\r\n\
             Access-Control-Max-Age: 86400\r\nVary: Origin\r\n\r\n"
        );
        let mut headers = vec![("Mcp-Session-Id", "ab")];
        headers.extend(cors_headers(origin));
        assert_eq!(
            headers,
            [
                ("Mcp-Session-Id", "ab"),
                ("Access-Control-Allow-Origin", origin),
                ("Access-Control-Expose-Headers", "Mcp-Session-Id"),
                ("Vary", "Origin"),
            ]
        );
    }
}
