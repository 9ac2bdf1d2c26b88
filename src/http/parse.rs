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

use std::fmt;

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
    /// A whole request. Bytes after it belong to the next request.
    Done(Request),
}

/// Why a request was rejected. [`HttpError::status`] is the status to answer
/// with; the connection must be closed afterwards because the framing of
/// whatever follows is unknown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpError {
    /// The request line does not fit in `max_line` bytes (414).
    RequestLineTooLong { limit: usize },
    /// A header or trailer line does not fit in `max_line` bytes (431).
    HeaderLineTooLong { limit: usize },
    /// More than `max_headers` header (or trailer) fields (431).
    TooManyHeaders { limit: usize },
    /// The declared or accumulated body length exceeds `max_body` (413).
    BodyTooLarge { length: u64, limit: usize },
    /// The request line is not `method SP target SP HTTP/x.y` (400).
    BadRequestLine(String),
    /// A well-formed version other than HTTP/1.0 and HTTP/1.1 (505).
    UnsupportedVersion(String),
    /// A header or trailer line is not `name: value` (400).
    BadHeader(String),
    /// A `Content-Length` value is not a decimal number (400).
    BadContentLength(String),
    /// `Content-Length` values disagree (400).
    ConflictingContentLength { first: u64, second: u64 },
    /// Both `Content-Length` and `Transfer-Encoding` are present (400).
    ContentLengthWithTransferEncoding,
    /// A transfer coding other than `chunked` (501).
    UnsupportedTransferCoding(String),
    /// `Transfer-Encoding` is empty, repeats `chunked`, or is sent by an
    /// HTTP/1.0 client (400).
    BadTransferEncoding(String),
    /// A chunk-size line or the line ending after chunk data is malformed,
    /// or a chunk-size line is longer than `max_line` (400).
    BadChunk(String),
    /// An HTTP/1.1 request without `Host` (400, RFC 9112 section 3.2).
    MissingHost,
    /// More than one `Host` field (400, RFC 9112 section 3.2).
    DuplicateHost,
}

impl HttpError {
    /// The status code to answer with.
    pub fn status(&self) -> u16 {
        match self {
            HttpError::RequestLineTooLong { .. } => 414,
            HttpError::HeaderLineTooLong { .. } | HttpError::TooManyHeaders { .. } => 431,
            HttpError::BodyTooLarge { .. } => 413,
            HttpError::UnsupportedVersion(_) => 505,
            HttpError::UnsupportedTransferCoding(_) => 501,
            HttpError::BadRequestLine(_)
            | HttpError::BadHeader(_)
            | HttpError::BadContentLength(_)
            | HttpError::ConflictingContentLength { .. }
            | HttpError::ContentLengthWithTransferEncoding
            | HttpError::BadTransferEncoding(_)
            | HttpError::BadChunk(_)
            | HttpError::MissingHost
            | HttpError::DuplicateHost => 400,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::RequestLineTooLong { limit } => {
                write!(f, "request line longer than {limit} bytes")
            }
            HttpError::HeaderLineTooLong { limit } => {
                write!(f, "header line longer than {limit} bytes")
            }
            HttpError::TooManyHeaders { limit } => write!(f, "more than {limit} header fields"),
            HttpError::BodyTooLarge { length, limit } => {
                write!(f, "body of {length} bytes exceeds the limit of {limit}")
            }
            HttpError::BadRequestLine(line) => write!(f, "malformed request line {line:?}"),
            HttpError::UnsupportedVersion(version) => {
                write!(f, "unsupported HTTP version {version:?}")
            }
            HttpError::BadHeader(line) => write!(f, "malformed header line {line:?}"),
            HttpError::BadContentLength(value) => write!(f, "invalid Content-Length {value:?}"),
            HttpError::ConflictingContentLength { first, second } => {
                write!(f, "conflicting Content-Length values {first} and {second}")
            }
            HttpError::ContentLengthWithTransferEncoding => {
                f.write_str("both Content-Length and Transfer-Encoding are present")
            }
            HttpError::UnsupportedTransferCoding(coding) => {
                write!(f, "unsupported transfer coding {coding:?}")
            }
            HttpError::BadTransferEncoding(why) => write!(f, "invalid Transfer-Encoding: {why}"),
            HttpError::BadChunk(why) => write!(f, "malformed chunked body: {why}"),
            HttpError::MissingHost => f.write_str("HTTP/1.1 request without a Host header"),
            HttpError::DuplicateHost => f.write_str("more than one Host header"),
        }
    }
}

impl std::error::Error for HttpError {}

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
    FixedBody { remaining: u64 },
    ChunkSize,
    /// Reading chunk data; `remaining` is never 0.
    ChunkData { remaining: u64 },
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
    fn read_line(&mut self, buf: &[u8], pos: &mut usize, kind: LineKind) -> Result<bool, HttpError> {
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
                            acc.saturating_mul(10).saturating_add(u64::from(digit - b'0'))
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

/// Splits `method SP target SP HTTP/d.d`.
fn parse_request_line(line: &[u8]) -> Result<(String, String, u8), HttpError> {
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

/// The path of a request target; see [`Request::path`].
fn path_of(target: &str) -> &str {
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

/// Splits a `name: value` field line; the name is lowercased.
fn parse_field(line: &[u8]) -> Result<(String, String), HttpError> {
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
    if !value.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80) {
        return Err(bad());
    }
    Ok((
        String::from_utf8_lossy(name).to_ascii_lowercase(),
        String::from_utf8_lossy(value).into_owned(),
    ))
}

/// Reads `HEX [blanks] [; extensions]`, the size saturating on overflow (it
/// is then far above any body limit).
fn parse_chunk_size(line: &[u8]) -> Result<u64, HttpError> {
    let bad = || HttpError::BadChunk(format!("invalid chunk-size line {:?}", snippet(line)));
    let n_digits = line.iter().position(|b| !b.is_ascii_hexdigit()).unwrap_or(line.len());
    if n_digits == 0 {
        return Err(bad());
    }
    let size = line[..n_digits].iter().fold(0u64, |acc, &digit| {
        let value = (digit as char).to_digit(16).unwrap_or(0);
        acc.saturating_mul(16).saturating_add(u64::from(value))
    });
    let rest = &line[n_digits..];
    let rest = &rest[rest.iter().position(|&b| !is_blank_byte(b)).unwrap_or(rest.len())..];
    // Extensions are allowed and ignored; only control bytes are refused.
    let extension_ok = rest.first() == Some(&b';')
        && rest.iter().all(|&b| b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80);
    if !rest.is_empty() && !extension_ok {
        return Err(bad());
    }
    Ok(size)
}

/// The non-empty items of a comma-separated header value, trimmed.
fn list_items(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|item| item.trim_matches(is_blank))
        .filter(|item| !item.is_empty())
}

/// RFC 9110 `tchar`: the bytes allowed in methods and field names.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn is_blank_byte(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The start of an offending line or value, for error messages.
fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 64;
    let mut text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]).into_owned();
    if bytes.len() > MAX {
        text.push_str("...");
    }
    text
}
