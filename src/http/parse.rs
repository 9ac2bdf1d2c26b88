//! Push parser for HTTP/1.x requests (RFC 9112), one instance per connection.
//!
//! The caller hands [`Parser::advance`] whatever bytes arrived; the parser
//! copies what it needs into its own state and says how many bytes it used.
//! A partial line is kept in a small buffer and a body is appended to the
//! request as it arrives, so every byte is looked at once: a 64 MiB body fed
//! in 4 KiB pieces costs the same as one fed whole. Nothing is validated
//! before its line is complete (only the length limits act early), which
//! makes the outcome independent of how the input was split; the fuzz target
//! checks exactly that.

use super::error::HttpError;
use super::syntax::{
    is_blank, list_items, parse_chunk_size, parse_field, parse_request_line, path_of, snippet,
};

/// Default for [`Limits::max_line`]: 16 KiB, the same cap as the reference
/// server, far above any header a real MCP client sends.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024;

/// Default for [`Limits::max_headers`].
pub const DEFAULT_MAX_HEADERS: usize = 128;

/// Default for [`Limits::max_body`]: 64 MiB, the reference server's cap.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;

/// Size limits for one request. Exceeding one is an [`HttpError`] whose
/// status says which (414, 431 or 413); the caller then closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, header line, trailer line or chunk-size line,
    /// counted with its line ending.
    pub max_line: usize,
    /// Most header fields in one request (and, separately, most trailer
    /// fields); one more is an error.
    pub max_headers: usize,
    /// Largest body: the `Content-Length`, or the running sum of chunk sizes.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_line: DEFAULT_MAX_LINE,
            max_headers: DEFAULT_MAX_HEADERS,
            max_body: DEFAULT_MAX_BODY,
        }
    }
}

/// One complete request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// The method token, case kept (`POST`).
    pub method: String,
    /// The request target as sent (`/mcp?x=1`).
    pub target: String,
    /// The path part of the target: up to the first `?` or `#`; for an
    /// absolute-form target (`http://host/mcp`) the path after the
    /// authority, `/` when there is none.
    pub path: String,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor_version: u8,
    /// Header fields in arrival order, names lowercased, values with
    /// surrounding blanks removed (bytes that are not UTF-8 become U+FFFD).
    pub headers: Vec<(String, String)>,
    /// Trailer fields of a chunked body, in the same form; not merged into
    /// `headers` because RFC 9110 forbids that for most fields.
    pub trailers: Vec<(String, String)>,
    /// The body with any chunked framing removed.
    pub body: Vec<u8>,
    /// Whether the connection may carry another request after this one:
    /// HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with
    /// `Connection: keep-alive`.
    pub keep_alive: bool,
}

impl Request {
    /// The value of the first header field called `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// What one call to [`Parser::advance`] achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every byte was used and the request is still incomplete.
    NeedMore,
    /// The head of an HTTP/1.1 request with `Expect: 100-continue` and a
    /// non-empty body is complete, and none of the body has arrived yet: send
    /// `HTTP/1.1 100 Continue` (or a final status and close), then keep
    /// feeding. Reported at most once per request; [`Parser::head`] shows the
    /// head meanwhile.
    Continue,
    /// A whole request. Bytes after it belong to the next request; when
    /// `keep_alive` is false there is none (answer, then close).
    Done(Request),
}

/// Request parser for one connection; see the module docs.
#[derive(Clone, Debug)]
pub struct Parser {
    limits: Limits,
    state: State,
    /// The current line so far, without its LF. INVARIANT: shorter than
    /// `limits.max_line` (a line must also fit its LF).
    line: Vec<u8>,
    /// Whether `line` holds a whole line already handed to the caller (the
    /// next read starts a new one).
    line_complete: bool,
    /// The request being assembled; moved out when it is done.
    request: Request,
    /// Sum of the chunk sizes announced so far (chunked bodies only).
    chunked_total: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    /// Reading the request line, skipping empty lines before it.
    RequestLine,
    Headers,
    /// Reading a `Content-Length` body; `remaining` is never 0.
    FixedBody {
        remaining: u64,
    },
    ChunkSize,
    /// Reading chunk data; `remaining` is never 0.
    ChunkData {
        remaining: u64,
    },
    /// Expecting the empty line that ends chunk data.
    ChunkEnd,
    Trailers,
    /// An error was returned; every later call returns it again.
    Failed(HttpError),
}

/// How the head says the body is framed.
enum Framing {
    Empty,
    Length(u64),
    Chunked,
}

/// What follows a complete head.
enum HeadEnd {
    /// No body: the request is complete.
    Complete,
    /// A body follows; the client may be waiting for `100 Continue`.
    Body { expect_continue: bool },
}

/// Which line a length limit applies to, for the error it produces.
#[derive(Clone, Copy)]
enum LineKind {
    Request,
    Header,
    Chunk,
}

impl Parser {
    /// A parser waiting for the first byte of a request.
    pub fn new(limits: Limits) -> Self {
        Parser {
            limits,
            state: State::RequestLine,
            line: Vec::new(),
            line_complete: false,
            request: Request::default(),
            chunked_total: 0,
        }
    }

    /// Feeds `buf` and returns the progress and how many bytes of `buf` were
    /// used. `NeedMore` always uses all of `buf`; `Continue` and `Done` stop
    /// where the head or the request ends, and the caller passes the rest
    /// (possibly nothing) in the next call. After an error the parser is
    /// stuck: every later call returns the same error.
    pub fn advance(&mut self, buf: &[u8]) -> Result<(Progress, usize), HttpError> {
        if let State::Failed(err) = &self.state {
            return Err(err.clone());
        }
        let res = self.advance_inner(buf);
        if let Err(err) = &res {
            self.state = State::Failed(err.clone());
        }
        res
    }

    /// The head (method, target, headers, keep-alive; body so far) of the
    /// request whose body is being read, `None` while the head is incomplete.
    /// Lets the caller reject a request after `Progress::Continue` without
    /// waiting for its body.
    pub fn head(&self) -> Option<&Request> {
        match self.state {
            State::FixedBody { .. }
            | State::ChunkSize
            | State::ChunkData { .. }
            | State::ChunkEnd
            | State::Trailers => Some(&self.request),
            State::RequestLine | State::Headers | State::Failed(_) => None,
        }
    }

    /// True when no byte of a next request has been seen (empty lines before
    /// a request line do not count): an EOF or idle timeout now is a clean
    /// end of the connection rather than a truncated request.
    pub fn is_idle(&self) -> bool {
        self.state == State::RequestLine && (self.line_complete || self.line.is_empty())
    }

    fn advance_inner(&mut self, buf: &[u8]) -> Result<(Progress, usize), HttpError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::RequestLine => {
                    if !self.read_line(buf, &mut pos, LineKind::Request)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    // RFC 9112 section 2.2: ignore empty lines before a request.
                    if !self.line.is_empty() {
                        self.start_request()?;
                        self.state = State::Headers;
                    }
                }
                State::Headers => {
                    if !self.read_line(buf, &mut pos, LineKind::Header)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    if !self.line.is_empty() {
                        let field = parse_field(&self.line)?;
                        if self.request.headers.len() >= self.limits.max_headers {
                            return Err(HttpError::TooManyHeaders {
                                limit: self.limits.max_headers,
                            });
                        }
                        self.request.headers.push(field);
                        continue;
                    }
                    match self.finish_head()? {
                        HeadEnd::Complete => return Ok((Progress::Done(self.take()), pos)),
                        // RFC 9110 section 10.1.1 lets a server skip the
                        // interim response once some of the body is here.
                        HeadEnd::Body {
                            expect_continue: true,
                        } if pos == buf.len() => return Ok((Progress::Continue, pos)),
                        HeadEnd::Body { .. } => {}
                    }
                }
                State::FixedBody { remaining } => {
                    let taken = self.take_body(buf, &mut pos, remaining);
                    if taken < remaining {
                        self.state = State::FixedBody {
                            remaining: remaining - taken,
                        };
                        return Ok((Progress::NeedMore, pos));
                    }
                    return Ok((Progress::Done(self.take()), pos));
                }
                State::ChunkSize => {
                    if !self.read_line(buf, &mut pos, LineKind::Chunk)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    let size = parse_chunk_size(&self.line)?;
                    let total = self.chunked_total.saturating_add(size);
                    if total > self.limits.max_body as u64 {
                        return Err(HttpError::BodyTooLarge {
                            length: total,
                            limit: self.limits.max_body,
                        });
                    }
                    self.chunked_total = total;
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::ChunkData { remaining: size }
                    };
                }
                State::ChunkData { remaining } => {
                    let taken = self.take_body(buf, &mut pos, remaining);
                    if taken < remaining {
                        self.state = State::ChunkData {
                            remaining: remaining - taken,
                        };
                        return Ok((Progress::NeedMore, pos));
                    }
                    self.state = State::ChunkEnd;
                }
                State::ChunkEnd => {
                    if !self.read_line(buf, &mut pos, LineKind::Chunk)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    if !self.line.is_empty() {
                        return Err(HttpError::BadChunk(format!(
                            "chunk data followed by {:?} instead of a line ending",
                            snippet(&self.line)
                        )));
                    }
                    self.state = State::ChunkSize;
                }
                State::Trailers => {
                    if !self.read_line(buf, &mut pos, LineKind::Header)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    if self.line.is_empty() {
                        return Ok((Progress::Done(self.take()), pos));
                    }
                    let field = parse_field(&self.line)?;
                    if self.request.trailers.len() >= self.limits.max_headers {
                        return Err(HttpError::TooManyHeaders {
                            limit: self.limits.max_headers,
                        });
                    }
                    self.request.trailers.push(field);
                }
                State::Failed(ref err) => return Err(err.clone()),
            }
        }
    }

    /// Moves bytes of `buf` from `pos` into the line buffer. Returns true
    /// when a whole line is there (LF and one CR before it removed); a line
    /// completed by an earlier call is cleared first. Looks at most
    /// `max_line` bytes ahead, so a missing LF costs no extra scanning.
    fn read_line(
        &mut self,
        buf: &[u8],
        pos: &mut usize,
        kind: LineKind,
    ) -> Result<bool, HttpError> {
        if self.line_complete {
            self.line.clear();
            self.line_complete = false;
        }
        let rest = buf.get(*pos..).unwrap_or_default();
        let room = self.limits.max_line.saturating_sub(self.line.len());
        let window = &rest[..rest.len().min(room)];
        match window.iter().position(|&byte| byte == b'\n') {
            Some(lf) => {
                self.line.extend_from_slice(&window[..lf]);
                *pos += lf + 1;
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                self.line_complete = true;
                Ok(true)
            }
            None if rest.len() >= room => Err(match kind {
                LineKind::Request => HttpError::RequestLineTooLong {
                    limit: self.limits.max_line,
                },
                LineKind::Header => HttpError::HeaderLineTooLong {
                    limit: self.limits.max_line,
                },
                LineKind::Chunk => HttpError::BadChunk(format!(
                    "chunk line longer than {} bytes",
                    self.limits.max_line
                )),
            }),
            None => {
                self.line.extend_from_slice(rest);
                *pos = buf.len();
                Ok(false)
            }
        }
    }

    /// Parses the request line in `self.line` into `self.request`.
    fn start_request(&mut self) -> Result<(), HttpError> {
        let (method, target, minor_version) = parse_request_line(&self.line)?;
        self.request = Request {
            path: path_of(&target).to_string(),
            method,
            target,
            minor_version,
            ..Request::default()
        };
        Ok(())
    }

    /// Validates the framing headers once the head is complete and picks the
    /// state for the body.
    fn finish_head(&mut self) -> Result<HeadEnd, HttpError> {
        let request = &mut self.request;
        let mut content_length: Option<u64> = None;
        let mut transfer_encoding = false;
        let mut n_chunked = 0;
        let mut unknown_coding: Option<String> = None;
        let mut n_host = 0;
        let mut close = false;
        let mut keep_alive = false;
        let mut expect_continue = false;
        for (name, value) in &request.headers {
            match name.as_str() {
                "content-length" => {
                    for item in value.split(',') {
                        let item = item.trim_matches(is_blank);
                        if item.is_empty() || !item.bytes().all(|b| b.is_ascii_digit()) {
                            return Err(HttpError::BadContentLength(snippet(value.as_bytes())));
                        }
                        let length = item.bytes().fold(0u64, |acc, digit| {
                            acc.saturating_mul(10)
                                .saturating_add(u64::from(digit - b'0'))
                        });
                        match content_length {
                            Some(first) if first != length => {
                                return Err(HttpError::ConflictingContentLength {
                                    first,
                                    second: length,
                                })
                            }
                            _ => content_length = Some(length),
                        }
                    }
                }
                "transfer-encoding" => {
                    transfer_encoding = true;
                    for coding in list_items(value) {
                        if coding.eq_ignore_ascii_case("chunked") {
                            n_chunked += 1;
                        } else if unknown_coding.is_none() {
                            unknown_coding = Some(snippet(coding.as_bytes()));
                        }
                    }
                }
                "host" => n_host += 1,
                "connection" => {
                    for option in list_items(value) {
                        close |= option.eq_ignore_ascii_case("close");
                        keep_alive |= option.eq_ignore_ascii_case("keep-alive");
                    }
                }
                "expect" => {
                    expect_continue |=
                        list_items(value).any(|item| item.eq_ignore_ascii_case("100-continue"));
                }
                _ => {}
            }
        }
        let http11 = request.minor_version == 1;
        // Request smuggling hides in disagreements about framing, so any
        // doubt is a 400 (RFC 9112 section 6.1 and 6.3).
        let framing = if transfer_encoding {
            if content_length.is_some() {
                return Err(HttpError::ContentLengthWithTransferEncoding);
            }
            if !http11 {
                return Err(HttpError::BadTransferEncoding(
                    "not allowed in an HTTP/1.0 request".to_string(),
                ));
            }
            if let Some(coding) = unknown_coding {
                return Err(HttpError::UnsupportedTransferCoding(coding));
            }
            match n_chunked {
                0 => return Err(HttpError::BadTransferEncoding("empty value".to_string())),
                1 => Framing::Chunked,
                _ => {
                    return Err(HttpError::BadTransferEncoding(
                        "chunked applied more than once".to_string(),
                    ))
                }
            }
        } else {
            match content_length {
                Some(0) | None => Framing::Empty,
                Some(length) => Framing::Length(length),
            }
        };
        if n_host > 1 {
            return Err(HttpError::DuplicateHost);
        }
        if http11 && n_host == 0 {
            return Err(HttpError::MissingHost);
        }
        request.keep_alive = !close && (http11 || keep_alive);
        self.state = match framing {
            Framing::Empty => return Ok(HeadEnd::Complete),
            Framing::Length(length) if length > self.limits.max_body as u64 => {
                return Err(HttpError::BodyTooLarge {
                    length,
                    limit: self.limits.max_body,
                })
            }
            Framing::Length(length) => State::FixedBody { remaining: length },
            Framing::Chunked => State::ChunkSize,
        };
        Ok(HeadEnd::Body {
            // An HTTP/1.0 client never waits for 100 (RFC 9110 section 10.1.1).
            expect_continue: expect_continue && http11,
        })
    }

    /// Appends up to `remaining` bytes of `buf` from `pos` to the body and
    /// returns how many were taken.
    fn take_body(&mut self, buf: &[u8], pos: &mut usize, remaining: u64) -> u64 {
        let rest = buf.get(*pos..).unwrap_or_default();
        let n = usize::try_from(remaining).map_or(rest.len(), |r| r.min(rest.len()));
        if self.request.body.is_empty() {
            // Reserve for what is here, never for the declared length: a
            // client announcing 64 MiB and sending nothing costs nothing.
            self.request.body.reserve(n);
        }
        self.request.body.extend_from_slice(&rest[..n]);
        *pos += n;
        n as u64
    }

    /// Hands out the finished request and resets for the next one.
    fn take(&mut self) -> Request {
        self.state = State::RequestLine;
        self.chunked_total = 0;
        std::mem::take(&mut self.request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a byte stream produced: the requests in order, then the error
    /// that stopped it (if any), and how often `Continue` was reported.
    #[derive(Debug, Default)]
    struct Outcome {
        requests: Vec<Request>,
        error: Option<HttpError>,
        n_continue: usize,
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
        assert_eq!(
            request.headers,
            [
                ("host".into(), "a b".into()),
                ("x-empty".into(), String::new())
            ]
        );
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
            &format!("{head}5;name=value\r\nhello\r\n00A \t; a=\"b;c\" ;d\r\n0123456789\r\n000;x\r\n\r\n"),
            r#"POST /mcp 1.1 keep "hello0123456789""#,
        );
        // Trailers are kept apart from the headers.
        let outcome = check(
            &format!("{head}3\r\nabc\r\n0\r\nX-Checksum: 42\r\nX-Other:  y \r\n\r\n"),
            r#"POST /mcp 1.1 keep "abc""#,
        );
        let request = &outcome.requests[0];
        assert_eq!(
            request.trailers,
            [
                ("x-checksum".into(), "42".into()),
                ("x-other".into(), "y".into())
            ]
        );
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
        let head =
            "POST /mcp HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n";
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
        let chunked = "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n";
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
            (Progress::NeedMore, head.len())
        );
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
}
