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
    is_blank, is_tchar, list_items, parse_chunk_size, parse_field, parse_request_line, path_of,
    snippet,
};

/// Default for [`Limits::max_line`]: 16 KiB, the same cap as the reference
/// server, far above any header a real MCP client sends.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024;

/// Default for [`Limits::max_headers`].
pub const DEFAULT_MAX_HEADERS: usize = 128;

/// Default for [`Limits::max_body`]: 64 MiB, the reference server's cap.
pub const DEFAULT_MAX_BODY: usize = 64 * 1024 * 1024;

/// Most empty lines accepted before a request line (RFC 9112 section 2.2
/// asks servers to skip at least one); one more is a 400. Without a bound a
/// client could hold a connection forever by sending only line endings.
pub const MAX_BLANK_LINES: usize = 8;

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
    pub headers: Fields,
    /// Trailer fields of a chunked body, in the same form; not merged into
    /// `headers` because RFC 9110 forbids that for most fields.
    pub trailers: Fields,
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
        self.headers.get(name)
    }
}

/// Header (or trailer) fields in arrival order, names lowercased: all of
/// their text in one string, each field a span of it, so a request's fields
/// cost two allocations however many there are (a `String` pair per field
/// cost two each).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fields {
    text: String,
    /// Each field's name start, value start (its name's end) and value end
    /// in `text`.
    spans: Vec<(usize, usize, usize)>,
}

impl Fields {
    /// Appends a field; its name is lowercased.
    pub fn push(&mut self, name: &str, value: &str) {
        if self.spans.is_empty() {
            // Room for a usual request's fields at once.
            self.text.reserve(256);
            self.spans.reserve(16);
        }
        let start = self.text.len();
        self.text.push_str(name);
        self.text[start..].make_ascii_lowercase();
        let middle = self.text.len();
        self.text.push_str(value);
        self.spans.push((start, middle, self.text.len()));
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Each field's (lowercase) name and value, in arrival order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.spans
            .iter()
            .map(|&(start, middle, end)| (&self.text[start..middle], &self.text[middle..end]))
    }

    /// The value of the first field called `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        // Compared as bytes, lengths first: this runs many times a request.
        let (text, name) = (self.text.as_bytes(), name.as_bytes());
        let &(_, middle, end) = self.spans.iter().find(|&&(start, middle, _)| {
            middle - start == name.len() && text[start..middle].eq_ignore_ascii_case(name)
        })?;
        self.text.get(middle..end)
    }

    /// Gives every field called `name` (lowercase) the value `value`.
    pub fn set(&mut self, name: &str, value: &str) {
        if self.iter().any(|(key, _)| key == name) {
            let mut fields = Fields::default();
            for (key, old) in self.iter() {
                fields.push(key, if key == name { value } else { old });
            }
            *self = fields;
        }
    }
}

impl<'a> FromIterator<(&'a str, &'a str)> for Fields {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a str)>>(fields: I) -> Fields {
        let mut all = Fields::default();
        for (name, value) in fields {
            all.push(name, value);
        }
        all
    }
}

/// What one call to [`Parser::advance`] achieved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Every byte was used and the request is still incomplete.
    NeedMore,
    /// The head of a request with a body is complete and no byte of the body
    /// has been taken: judge the head (and refuse it before buffering
    /// anything) now, then keep feeding. Reported at most once per request,
    /// instead of `Continue`; [`Parser::head`] shows the head meanwhile.
    Head,
    /// Like `Head`, for an HTTP/1.1 request with `Expect: 100-continue` when
    /// none of the body has arrived yet: send `HTTP/1.1 100 Continue` (or a
    /// final status and close), then keep feeding.
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
    /// Empty lines skipped before the current request line.
    blank_lines: usize,
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
            blank_lines: 0,
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

    /// The declared length of the body being read, when it has a
    /// `Content-Length` (the whole length, however much has arrived);
    /// `None` for a chunked body or when no body is being read.
    pub fn declared_body(&self) -> Option<u64> {
        match self.state {
            State::FixedBody { remaining } => {
                Some(remaining.saturating_add(self.request.body.len() as u64))
            }
            _ => None,
        }
    }

    /// How many body bytes of the current request are held so far.
    pub fn body_len(&self) -> usize {
        self.request.body.len()
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
                    // A line that starts with anything but a method byte or
                    // a line ending is not HTTP (a TLS handshake starts with
                    // 0x16): refuse it at the first byte instead of waiting
                    // for a line ending that may never come.
                    let starting = self.line_complete || self.line.is_empty();
                    if let Some(&first) = buf.get(pos).filter(|_| starting) {
                        if !(is_tchar(first) || first == b'\r' || first == b'\n') {
                            return Err(HttpError::NotHttp(first));
                        }
                    }
                    if !self.read_line(buf, &mut pos, LineKind::Request)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    // RFC 9112 section 2.2: ignore empty lines before a
                    // request, a few of them.
                    if self.line.is_empty() {
                        self.blank_lines += 1;
                        if self.blank_lines > MAX_BLANK_LINES {
                            return Err(HttpError::TooManyBlankLines {
                                limit: MAX_BLANK_LINES,
                            });
                        }
                    } else {
                        self.start_request()?;
                        self.state = State::Headers;
                    }
                }
                State::Headers => {
                    if !self.read_line(buf, &mut pos, LineKind::Header)? {
                        return Ok((Progress::NeedMore, pos));
                    }
                    if !self.line.is_empty() {
                        let (name, value) = parse_field(&self.line)?;
                        if self.request.headers.len() >= self.limits.max_headers {
                            return Err(HttpError::TooManyHeaders {
                                limit: self.limits.max_headers,
                            });
                        }
                        self.request.headers.push(name, &value);
                        continue;
                    }
                    match self.finish_head()? {
                        HeadEnd::Complete => return Ok((Progress::Done(self.take()), pos)),
                        // RFC 9110 section 10.1.1 lets a server skip the
                        // interim response once some of the body is here.
                        HeadEnd::Body {
                            expect_continue: true,
                        } if pos == buf.len() => return Ok((Progress::Continue, pos)),
                        // Stop before the body, so the caller can refuse the
                        // request without holding any of it.
                        HeadEnd::Body { .. } => return Ok((Progress::Head, pos)),
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
                    let (name, value) = parse_field(&self.line)?;
                    if self.request.trailers.len() >= self.limits.max_headers {
                        return Err(HttpError::TooManyHeaders {
                            limit: self.limits.max_headers,
                        });
                    }
                    self.request.trailers.push(name, &value);
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
        match crate::format::json::scan::find_byte(window, b'\n') {
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
        for (name, value) in request.headers.iter() {
            match name {
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
        self.blank_lines = 0;
        std::mem::take(&mut self.request)
    }
}

#[cfg(test)]
mod tests;
