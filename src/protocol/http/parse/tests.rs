//! Unit tests of the `parse` module (kept apart from the code they test).

use super::*;

/// What a byte stream produced: the requests in order, then the error
/// that stopped it (if any), and how often `Continue` was reported.
#[derive(Debug, Default)]
struct Outcome {
    requests: Vec<Request>,
    error: Option<HttpError>,
    n_continue: usize,
    /// How often `Head` was reported.
    n_head: usize,
}

/// Feeds `pieces` one after the other, like reads from a socket.
fn run_pieces(limits: Limits, pieces: &[&[u8]]) -> Outcome {
    let mut parser = Parser::new(limits);
    let mut outcome = Outcome::default();
    for piece in pieces {
        let mut rest = *piece;
        loop {
            match parser.advance(rest) {
                Err(err) => {
                    outcome.error = Some(err);
                    return outcome;
                }
                Ok((progress, used)) => {
                    assert!(used <= rest.len());
                    rest = &rest[used..];
                    match progress {
                        Progress::NeedMore => {
                            assert!(rest.is_empty(), "NeedMore left {} bytes", rest.len());
                            break;
                        }
                        Progress::Continue => outcome.n_continue += 1,
                        Progress::Head => outcome.n_head += 1,
                        Progress::Done(request) => outcome.requests.push(request),
                    }
                }
            }
        }
    }
    outcome
}

/// One line per request (`METHOD path 1.x keep|close body`) and a last
/// line `error STATUS` if the stream was rejected.
fn summary(outcome: &Outcome) -> String {
    let mut lines: Vec<String> = outcome
        .requests
        .iter()
        .map(|r| {
            let keep = if r.keep_alive { "keep" } else { "close" };
            let body = String::from_utf8_lossy(&r.body);
            format!(
                "{} {} 1.{} {keep} {body:?}",
                r.method, r.path, r.minor_version
            )
        })
        .collect();
    if let Some(err) = &outcome.error {
        lines.push(format!("error {}", err.status()));
    }
    lines.join("\n")
}

/// Parses `input` whole, byte by byte and in every two-piece split,
/// asserts all agree, and compares the summary with `expected`.
#[track_caller]
fn check_with(limits: Limits, input: &str, expected: &str) -> Outcome {
    let bytes = input.as_bytes();
    let whole = run_pieces(limits, &[bytes]);
    assert_eq!(summary(&whole), expected.trim(), "input {input:?}");
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    let by_byte = run_pieces(limits, &singles);
    assert_eq!(by_byte.requests, whole.requests, "byte by byte: {input:?}");
    assert_eq!(by_byte.error, whole.error, "byte by byte: {input:?}");
    for split in 0..=bytes.len() {
        let (a, b) = bytes.split_at(split);
        let halves = run_pieces(limits, &[a, b]);
        assert_eq!(
            halves.requests, whole.requests,
            "split at {split}: {input:?}"
        );
        assert_eq!(halves.error, whole.error, "split at {split}: {input:?}");
    }
    whole
}

#[track_caller]
fn check(input: &str, expected: &str) -> Outcome {
    check_with(Limits::default(), input, expected)
}

const SMALL: Limits = Limits {
    max_line: 32,
    max_headers: 3,
    max_body: 10,
};

#[test]
fn simple_requests() {
    check(
        "GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
        r#"GET /mcp 1.1 keep """#,
    );
    check(
        "POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
        r#"POST /mcp 1.1 keep "hello""#,
    );
    // Bare LF line endings and empty lines before the request line.
    check(
        "\r\n\n\r\nGET / HTTP/1.1\nHost: a\n\n",
        r#"GET / 1.1 keep """#,
    );
    check("DELETE * HTTP/1.0\r\n\r\n", r#"DELETE * 1.0 close """#);
    // Blanks around values and an empty value.
    let outcome = check(
        "GET / HTTP/1.1\r\nHOST:\t a b \t\r\nX-Empty:\r\n\r\n",
        r#"GET / 1.1 keep """#,
    );
    let request = &outcome.requests[0];
    let headers: Vec<_> = request.headers.iter().collect();
    assert_eq!(headers, [("host", "a b"), ("x-empty", "")]);
    // Incomplete input is not an error.
    check(
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel",
        "",
    );
}

#[test]
fn pipelining() {
    let input = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc\
                 GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n\
                 POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n";
    check(
        input,
        "POST /a 1.1 keep \"abc\"\nGET /b 1.1 close \"\"\nPOST /c 1.1 keep \"z\"",
    );
    // The byte count reported for each request is exactly its length.
    let mut parser = Parser::new(Limits::default());
    let first = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n";
    let both = format!("{first}GET /b HTTP/1.1\r\nHost: h\r\n\r\n");
    let (progress, used) = parser.advance(both.as_bytes()).unwrap();
    assert!(matches!(progress, Progress::Done(ref r) if r.path == "/a"));
    assert_eq!(used, first.len());
    let (progress, used) = parser.advance(&both.as_bytes()[used..]).unwrap();
    assert!(matches!(progress, Progress::Done(ref r) if r.path == "/b"));
    assert_eq!(used, both.len() - first.len());
    assert!(parser.is_idle());
    assert_eq!(parser.advance(b"").unwrap(), (Progress::NeedMore, 0));
}

#[test]
fn chunked_bodies() {
    let head = "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    check(
        &format!("{head}5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
        r#"POST /mcp 1.1 keep "hello world""#,
    );
    // Extensions, blanks before them, upper-case hex, leading zeros.
    check(
        &format!(
            "{head}5;name=value\r\nhello\r\n00A \t; a=\"b;c\" ;d\r\n0123456789\r\n000;x\r\n\r\n"
        ),
        r#"POST /mcp 1.1 keep "hello0123456789""#,
    );
    // Trailers are kept apart from the headers.
    let outcome = check(
        &format!("{head}3\r\nabc\r\n0\r\nX-Checksum: 42\r\nX-Other:  y \r\n\r\n"),
        r#"POST /mcp 1.1 keep "abc""#,
    );
    let request = &outcome.requests[0];
    let trailers: Vec<_> = request.trailers.iter().collect();
    assert_eq!(trailers, [("x-checksum", "42"), ("x-other", "y")]);
    assert_eq!(request.header("x-checksum"), None);
    // Codings and names are case-insensitive; blanks in the list are fine.
    check(
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , Chunked \r\n\r\n0\r\n\r\n",
        r#"POST / 1.1 keep """#,
    );
    // Malformed framing.
    for bad in [
        "x\r\n",
        "\r\n",
        "-1\r\n",
        "5 x\r\n",
        "5\r\nhelloX\r\n",
        "5\r\nhello\r\r\n",
        "5;\x01\r\n",
    ] {
        check(&format!("{head}{bad}0\r\n\r\n"), "error 400");
    }
    // A bad trailer line.
    check(&format!("{head}0\r\nno colon\r\n\r\n"), "error 400");
}

#[test]
fn expect_continue() {
    let head = "POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n";
    let mut parser = Parser::new(Limits::default());
    assert_eq!(
        parser.advance(head.as_bytes()).unwrap(),
        (Progress::Continue, head.len())
    );
    assert_eq!(parser.head().map(|r| r.path.as_str()), Some("/mcp"));
    assert_eq!(parser.advance(b"").unwrap(), (Progress::NeedMore, 0));
    assert_eq!(parser.advance(b"ab").unwrap(), (Progress::NeedMore, 2));
    let (progress, used) = parser.advance(b"cdGET").unwrap();
    assert_eq!(used, 2);
    assert!(matches!(progress, Progress::Done(ref r) if r.body == b"abcd"));
    assert_eq!(parser.head(), None);
    assert!(parser.is_idle());
    assert_eq!(parser.advance(b"GET").unwrap(), (Progress::NeedMore, 3));
    assert!(!parser.is_idle(), "part of the next request is buffered");

    // With the body already here the interim response is skipped.
    let outcome = check(&format!("{head}abcd"), r#"POST /mcp 1.1 keep "abcd""#);
    assert_eq!(outcome.n_continue, 0);
    let outcome = run_pieces(Limits::default(), &[head.as_bytes(), b"abcd"]);
    assert_eq!(outcome.n_continue, 1);
    // Chunked bodies too.
    let chunked =
        "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n";
    let outcome = run_pieces(
        Limits::default(),
        &[chunked.as_bytes(), b"1\r\nx\r\n0\r\n\r\n"],
    );
    assert_eq!(
        (summary(&outcome).as_str(), outcome.n_continue),
        (r#"POST / 1.1 keep "x""#, 1)
    );
    // No body, HTTP/1.0, or another expectation: no interim response.
    for input in [
        "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        "POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: h\r\nExpect: something\r\nContent-Length: 1\r\n\r\n",
    ] {
        let outcome = run_pieces(Limits::default(), &[input.as_bytes(), b"x"]);
        assert_eq!(outcome.n_continue, 0, "{input:?}");
        assert_eq!(outcome.requests.len(), 1, "{input:?}");
    }
}

#[test]
fn keep_alive() {
    let cases = [
        ("HTTP/1.1", "", "keep"),
        ("HTTP/1.1", "Connection: close\r\n", "close"),
        ("HTTP/1.1", "Connection: Upgrade, CLOSE\r\n", "close"),
        (
            "HTTP/1.1",
            "Connection: keep-alive\r\nConnection: close\r\n",
            "close",
        ),
        ("HTTP/1.1", "Connection: closed\r\n", "keep"),
        ("HTTP/1.0", "", "close"),
        ("HTTP/1.0", "Connection: Keep-Alive\r\n", "keep"),
        ("HTTP/1.0", "Connection: keep-alive, close\r\n", "close"),
    ];
    for (version, header, expected) in cases {
        let minor = &version[7..];
        check(
            &format!("GET / {version}\r\nHost: h\r\n{header}\r\n"),
            &format!("GET / 1.{minor} {expected} \"\""),
        );
    }
}

#[test]
fn limits() {
    // Lines: 32 bytes including the line ending fit, 33 do not.
    let line = |len: usize| format!("GET /{} HTTP/1.0\r\n", "a".repeat(len - 16));
    assert_eq!(line(32).len(), 32);
    check_with(
        SMALL,
        &format!("{}\r\n", line(32)),
        &format!("GET /{} 1.0 close \"\"", "a".repeat(16)),
    );
    check_with(SMALL, &format!("{}\r\n", line(33)), "error 414");
    check_with(SMALL, &"x".repeat(100), "error 414");
    let header = |len: usize| format!("X: {}\r\n", "v".repeat(len - 5));
    check_with(
        SMALL,
        &format!("GET / HTTP/1.0\r\n{}\r\n", header(32)),
        r#"GET / 1.0 close """#,
    );
    check_with(
        SMALL,
        &format!("GET / HTTP/1.0\r\n{}\r\n", header(33)),
        "error 431",
    );
    check_with(
        SMALL,
        &format!("GET / HTTP/1.0\r\n{}", "v".repeat(40)),
        "error 431",
    );
    // Header count: 3 fit, 4 do not.
    check_with(
        SMALL,
        "GET / HTTP/1.0\r\na:1\r\nb:2\r\nc:3\r\n\r\n",
        r#"GET / 1.0 close """#,
    );
    check_with(
        SMALL,
        "GET / HTTP/1.0\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\n\r\n",
        "error 431",
    );
    // Body: judged from Content-Length before any of it arrives.
    check_with(
        SMALL,
        "POST / HTTP/1.0\r\nContent-Length: 10\r\n\r\n0123456789",
        r#"POST / 1.0 close "0123456789""#,
    );
    check_with(
        SMALL,
        "POST / HTTP/1.0\r\nContent-Length: 11\r\n\r\n",
        "error 413",
    );
    check(
        "POST / HTTP/1.0\r\nContent-Length: 99999999999999999999999\r\n\r\n",
        "error 413",
    );
    // Chunked: judged as the sum grows, also with an absurd chunk size.
    let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    check_with(
        SMALL,
        &format!("{chunked}5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n"),
        r#"POST / 1.1 keep "0123456789""#,
    );
    check_with(SMALL, &format!("{chunked}5\r\n01234\r\n6\r\n"), "error 413");
    check_with(
        SMALL,
        &format!("{chunked}fffffffffffffffffffff\r\n"),
        "error 413",
    );
    // A chunk line past the line limit is malformed framing.
    check_with(
        SMALL,
        &format!("{chunked}1;{}\r\nx\r\n0\r\n\r\n", "e".repeat(40)),
        "error 400",
    );
    // Trailers obey the header limits.
    check_with(
        SMALL,
        &format!("{chunked}0\r\na:1\r\nb:2\r\nc:3\r\nd:4\r\n\r\n"),
        "error 431",
    );
    check_with(
        SMALL,
        &format!("{chunked}0\r\nX: {}\r\n\r\n", "v".repeat(40)),
        "error 431",
    );
    // The default limits are the documented ones.
    assert_eq!(
        Limits::default(),
        Limits {
            max_line: 16384,
            max_headers: 128,
            max_body: 67_108_864
        }
    );
}

#[test]
fn default_limits_at_the_edges() {
    let many = |n: usize| (0..n).map(|i| format!("x-{i}: v\r\n")).collect::<String>();
    let outcome = run_pieces(
        Limits::default(),
        &[format!("GET / HTTP/1.0\r\n{}\r\n", many(128)).as_bytes()],
    );
    assert_eq!(outcome.requests.len(), 1);
    let outcome = run_pieces(
        Limits::default(),
        &[format!("GET / HTTP/1.0\r\n{}\r\n", many(129)).as_bytes()],
    );
    assert_eq!(
        outcome.error,
        Some(HttpError::TooManyHeaders { limit: 128 })
    );
    let outcome = run_pieces(
        Limits::default(),
        &[b"POST / HTTP/1.0\r\nContent-Length: 67108865\r\n\r\n"],
    );
    assert_eq!(outcome.error.map(|e| e.status()), Some(413));
}

#[test]
fn large_body_in_small_pieces() {
    const LEN: usize = 8 * 1024 * 1024;
    let mut parser = Parser::new(Limits::default());
    let head = format!("POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: {LEN}\r\n\r\n");
    assert_eq!(
        parser.advance(head.as_bytes()).unwrap(),
        (Progress::Head, head.len())
    );
    assert_eq!(parser.declared_body(), Some(LEN as u64));
    let piece = [7u8; 4096];
    for _ in 0..LEN / 4096 - 1 {
        assert_eq!(parser.advance(&piece).unwrap(), (Progress::NeedMore, 4096));
    }
    let (progress, used) = parser.advance(&piece).unwrap();
    assert_eq!(used, 4096);
    let Progress::Done(request) = progress else {
        panic!("expected a request, got {progress:?}");
    };
    assert_eq!(request.body.len(), LEN);
}

#[test]
fn bad_syntax() {
    let cases = [
        ("GET /\r\n\r\n", 400),
        ("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400),
        ("GET / http/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400),
        ("GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET /\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET /é HTTP/1.1\r\nHost: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\rHost: h\r\n\r\n", 400),
        ("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505),
        ("GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505),
        ("GET / HTTP/0.9\r\n\r\n", 505),
        ("GET / HTTP/1.1\r\nHost h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\x00b\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: -1\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: 1x\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length:\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: +1\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: 1,\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nContent-Length: 1, 2\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 501),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\n\r\n", 400),
        ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400),
    ];
    for (input, status) in cases {
        check(input, &format!("error {status}"));
    }
    // Identical Content-Length values are one value (RFC 9112 section 6.3).
    check(
        "POST / HTTP/1.0\r\nContent-Length: 2, 2\r\nContent-Length: 02\r\n\r\nok",
        r#"POST / 1.0 close "ok""#,
    );
    // A request before the bad one is still delivered.
    check(
        "GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\nBAD\r\n\r\n",
        "GET /a 1.0 keep \"\"\nerror 400",
    );
}

#[test]
fn errors_are_sticky_and_readable() {
    let mut parser = Parser::new(Limits::default());
    let err = parser.advance(b"GET / HTTP/3.0\r\n").unwrap_err();
    assert_eq!(err.to_string(), r#"unsupported HTTP version "HTTP/3.0""#);
    assert_eq!(
        parser.advance(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"),
        Err(err)
    );
    assert!(!parser.is_idle());
}

#[test]
fn header_lookup() {
    let outcome = run_pieces(
        Limits::default(),
        &[b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nMcp-Session-Id: abc\r\n\r\n"],
    );
    let request = &outcome.requests[0];
    assert_eq!(request.header("X-A"), Some("1"));
    assert_eq!(request.header("mcp-session-id"), Some("abc"));
    assert_eq!(request.header("missing"), None);
    // Bytes that are not UTF-8 in values are kept as replacement characters.
    let outcome = run_pieces(
        Limits::default(),
        &[b"GET / HTTP/1.1\r\nHost: h\r\nX: a\xffb\r\n\r\n"],
    );
    assert_eq!(outcome.requests[0].header("x"), Some("a\u{fffd}b"));
}

#[test]
fn a_byte_that_cannot_start_a_request_is_refused_at_once() {
    // A TLS ClientHello starts with 0x16: refused at its first byte, with
    // nothing else needed.
    let mut parser = Parser::new(Limits::default());
    let err = parser.advance(&[0x16]).unwrap_err();
    assert_eq!(err, HttpError::NotHttp(0x16));
    assert_eq!(err.status(), 400);
    assert!(err.to_string().contains("TLS"), "{err}");
    for first in [0u8, b' ', b'\t', b'{', b'/', 0x80, 0xff] {
        let outcome = run_pieces(Limits::default(), &[&[first], b"GET / HTTP/1.1\r\n"]);
        assert_eq!(outcome.error, Some(HttpError::NotHttp(first)), "{first:#x}");
    }
    // After blank lines, and after a whole request, the same rule holds.
    let outcome = run_pieces(Limits::default(), &[b"\r\n\n", &[0x16, 3, 1]]);
    assert_eq!(outcome.error, Some(HttpError::NotHttp(0x16)));
    check(
        "GET / HTTP/1.1\r\nHost: h\r\n\r\n\x16\x03",
        "GET / 1.1 keep \"\"\nerror 400",
    );
    // A method byte is fine, and so is a line ending.
    check("get / HTTP/1.1\r\nHost: h\r\n\r\n", "get / 1.1 keep \"\"");
    check(
        "\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
        "GET / 1.1 keep \"\"",
    );
}

#[test]
fn leading_blank_lines_are_bounded() {
    let request = "GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    let at_limit = format!("{}{request}", "\r\n".repeat(MAX_BLANK_LINES));
    check(&at_limit, "GET / 1.1 keep \"\"");
    let bare_lf = format!("{}{request}", "\n".repeat(MAX_BLANK_LINES));
    check(&bare_lf, "GET / 1.1 keep \"\"");
    let over = "\r\n".repeat(MAX_BLANK_LINES + 1);
    let outcome = check(&over, "error 400");
    assert_eq!(
        outcome.error,
        Some(HttpError::TooManyBlankLines {
            limit: MAX_BLANK_LINES
        })
    );
    // Dribbled one at a time, the count is the same.
    let pieces: Vec<&[u8]> = vec![b"\r\n"; MAX_BLANK_LINES + 1];
    let outcome = run_pieces(Limits::default(), &pieces);
    assert_eq!(outcome.error.map(|e| e.status()), Some(400));
    // The count starts again for each request.
    let twice = format!("{at_limit}{at_limit}");
    check(&twice, "GET / 1.1 keep \"\"\nGET / 1.1 keep \"\"");
}

#[test]
fn a_head_with_a_body_stops_before_the_body() {
    let head = "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n";
    let mut parser = Parser::new(Limits::default());
    let input = format!("{head}abcd");
    assert_eq!(
        parser.advance(input.as_bytes()).unwrap(),
        (Progress::Head, head.len())
    );
    assert_eq!(parser.head().map(|r| r.path.as_str()), Some("/mcp"));
    assert_eq!((parser.declared_body(), parser.body_len()), (Some(4), 0));
    let (progress, used) = parser.advance(b"abcd").unwrap();
    assert_eq!(used, 4);
    assert!(matches!(progress, Progress::Done(ref r) if r.body == b"abcd"));
    // Chunked: no declared length; no Head for a request without a body.
    let chunked = "POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(
        parser.advance(chunked.as_bytes()).unwrap(),
        (Progress::Head, chunked.len())
    );
    assert_eq!(parser.declared_body(), None);
    let outcome = check(&format!("{head}abcd"), r#"POST /mcp 1.1 keep "abcd""#);
    assert_eq!(outcome.n_head, 1);
    let outcome = check("GET / HTTP/1.1\r\nHost: h\r\n\r\n", "GET / 1.1 keep \"\"");
    assert_eq!(outcome.n_head, 0);
}

#[test]
fn fields_are_spans_of_one_text() {
    let mut fields = Fields::default();
    assert!(fields.is_empty());
    fields.push("Authorization", "Bearer x");
    fields.push("HOST", "a");
    fields.push("authorization", "second");
    assert_eq!(fields.len(), 3);
    let all: Vec<_> = fields.iter().collect();
    assert_eq!(
        all,
        [
            ("authorization", "Bearer x"),
            ("host", "a"),
            ("authorization", "second")
        ]
    );
    assert_eq!(fields.get("Authorization"), Some("Bearer x"));
    assert_eq!(fields.get("x-none"), None);
    // Every field of the name is given the value; the others keep theirs.
    fields.set("authorization", "oauth iss sub");
    let all: Vec<_> = fields.iter().collect();
    let owner = "oauth iss sub";
    assert_eq!(
        all,
        [
            ("authorization", owner),
            ("host", "a"),
            ("authorization", owner)
        ]
    );
    // Built the same way, fields compare equal.
    assert_eq!(fields, all.into_iter().collect::<Fields>());
}
