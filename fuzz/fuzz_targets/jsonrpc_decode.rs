//! Fuzzes JSON-RPC line framing and message classification. Framing the
//! same bytes pushed in two pieces must give the same lines as pushing them
//! at once, no line may hold an LF or exceed the cap, and classifying any
//! line must not panic. Request ids must survive a round trip through JSON.
//! The first byte picks the split point, the second the line cap (small, so
//! the over-long path is reached).
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::jsonrpc::{decode, Frame, Incoming, LineFramer, RequestId};

/// One framed line, or `None` for a discarded over-long line.
type Line = Option<Vec<u8>>;

fn take(frame: Frame<'_>, max_line: usize) -> Line {
    match frame {
        Frame::Line(line) => {
            assert!(!line.contains(&b'\n'), "line holds an LF");
            assert!(
                line.len() <= max_line,
                "line of {} bytes over cap {max_line}",
                line.len()
            );
            Some(line.to_vec())
        }
        Frame::TooLong => None,
    }
}

/// Pushes the pieces in order, draining lines after each, then finishes.
fn frame(pieces: &[&[u8]], max_line: usize) -> Vec<Line> {
    let mut framer = LineFramer::with_max_line(max_line);
    let mut lines = Vec::new();
    for piece in pieces {
        framer.push(piece);
        while let Some(f) = framer.next_line() {
            lines.push(take(f, max_line));
        }
    }
    if let Some(f) = framer.finish() {
        lines.push(take(f, max_line));
    }
    // Finishing twice must not yield the last line again.
    assert!(framer.finish().is_none(), "finish yielded twice");
    lines
}

fn check_decode(line: &[u8]) {
    match decode(line) {
        Incoming::Request { id, .. } => {
            assert_eq!(
                RequestId::from_json(&id.to_json()).as_ref(),
                Some(&id),
                "id {id}"
            );
        }
        Incoming::Invalid(reply) => {
            assert!(
                reply.get("error").is_some_and(|e| e.get("code").is_some()),
                "{reply}"
            );
        }
        Incoming::Notification { .. } | Incoming::Response | Incoming::Empty => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let [first, second, input @ ..] = data else {
        return;
    };
    let split = usize::from(*first) % (input.len() + 1);
    let max_line = usize::from(*second % 64) + 1;
    let whole = frame(&[input], max_line);
    let halves = frame(&[&input[..split], &input[split..]], max_line);
    assert_eq!(whole, halves, "split at {split}, cap {max_line}");
    for line in whole.iter().flatten() {
        check_decode(line);
    }
    // The whole input as one HTTP body.
    check_decode(input);
});
