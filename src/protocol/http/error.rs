//! The error type of the request parser: what was wrong with a request and
//! which status code says so.
//!
//! Every error ends the connection, because once the framing of one request
//! is in doubt the start of the next cannot be found.

use std::fmt;

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
    /// A byte that cannot start a request line, such as the 0x16 of a TLS
    /// handshake sent to the plain-HTTP port (400).
    NotHttp(u8),
    /// More than `limit` empty lines before a request line (400).
    TooManyBlankLines { limit: usize },
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
            | HttpError::DuplicateHost
            | HttpError::NotHttp(_)
            | HttpError::TooManyBlankLines { .. } => 400,
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
            // Lengths are parsed saturating: u64::MAX stands for "at least
            // that", so it is not printed as if the client had sent it.
            HttpError::BodyTooLarge { length, limit } if *length == u64::MAX => {
                write!(
                    f,
                    "body of {length} or more bytes exceeds the limit of {limit}"
                )
            }
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
            HttpError::NotHttp(0x16) => f.write_str(
                "byte 0x16 cannot start an HTTP request (a TLS handshake? this port speaks plain HTTP)",
            ),
            HttpError::NotHttp(byte) => {
                write!(f, "byte 0x{byte:02x} cannot start an HTTP request")
            }
            HttpError::TooManyBlankLines { limit } => {
                write!(f, "more than {limit} empty lines before a request line")
            }
        }
    }
}

impl std::error::Error for HttpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let messages = [
            (
                HttpError::RequestLineTooLong { limit: 5 },
                "request line longer than 5 bytes",
            ),
            (
                HttpError::BadHeader("a\u{1}".into()),
                r#"malformed header line "a\u{1}""#,
            ),
            (
                HttpError::ConflictingContentLength {
                    first: 1,
                    second: 2,
                },
                "conflicting Content-Length values 1 and 2",
            ),
            (
                HttpError::BodyTooLarge {
                    length: 9,
                    limit: 8,
                },
                "body of 9 bytes exceeds the limit of 8",
            ),
        ];
        for (err, message) in messages {
            assert_eq!(err.to_string(), message);
        }
        for (err, status) in [
            (HttpError::RequestLineTooLong { limit: 1 }, 414),
            (HttpError::HeaderLineTooLong { limit: 1 }, 431),
            (HttpError::TooManyHeaders { limit: 1 }, 431),
            (
                HttpError::BodyTooLarge {
                    length: 2,
                    limit: 1,
                },
                413,
            ),
            (HttpError::UnsupportedVersion("HTTP/2.0".into()), 505),
            (HttpError::UnsupportedTransferCoding("gzip".into()), 501),
            (HttpError::MissingHost, 400),
        ] {
            assert_eq!(err.status(), status, "{err}");
        }
    }
}
