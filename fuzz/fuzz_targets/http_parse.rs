//! Fuzzes the HTTP request parser: no input may panic it, and feeding the
//! same bytes in two pieces must give the same requests and the same error
//! as feeding them at once. The first byte picks the split point.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::http::{HttpError, Limits, Parser, Progress, Request};

/// Small limits, so short inputs reach every limit check.
const LIMITS: Limits = Limits {
    max_line: 64,
    max_headers: 8,
    max_body: 256,
};

/// Feeds the pieces in order and collects every request and the error, if
/// any, that ended the stream.
fn run(pieces: &[&[u8]]) -> (Vec<Request>, Option<HttpError>) {
    let mut parser = Parser::new(LIMITS);
    let mut requests = Vec::new();
    for piece in pieces {
        let mut rest = *piece;
        loop {
            match parser.advance(rest) {
                Err(err) => return (requests, Some(err)),
                Ok((progress, used)) => {
                    assert!(used <= rest.len(), "used {used} of {} bytes", rest.len());
                    rest = &rest[used..];
                    match progress {
                        Progress::NeedMore => {
                            assert!(rest.is_empty(), "NeedMore left {} bytes", rest.len());
                            break;
                        }
                        // Whether the interim answer is due depends on the
                        // split, so only the requests are compared.
                        Progress::Continue | Progress::Head => {}
                        Progress::Done(request) => requests.push(request),
                    }
                }
            }
        }
    }
    (requests, None)
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, input)) = data.split_first() else {
        return;
    };
    let split = usize::from(first) % (input.len() + 1);
    let whole = run(&[input]);
    let halves = run(&[&input[..split], &input[split..]]);
    assert_eq!(whole, halves, "split at {split}");
    if let Some(err) = &whole.1 {
        assert!(matches!(err.status(), 400 | 413 | 414 | 431 | 501 | 505));
        assert!(!err.to_string().is_empty());
    }
});
