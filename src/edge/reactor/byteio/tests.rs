//! Unit tests of the write queue and the read loop, with scripted fakes and
//! a pipe.

use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::*;
use crate::edge::proc::syscall;

/// What one call of a fake reader or writer does.
enum Act {
    /// Moves at most this many bytes.
    Take(usize),
    /// Fails with this kind.
    Fail(io::ErrorKind),
}

/// A writer that follows a script, then blocks; it keeps what it took.
struct Script {
    acts: VecDeque<Act>,
    got: Vec<u8>,
    calls: usize,
}

fn script(acts: Vec<Act>) -> Script {
    Script {
        acts: acts.into(),
        got: Vec::new(),
        calls: 0,
    }
}

impl Write for Script {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        match self.acts.pop_front() {
            Some(Act::Take(n)) => {
                let n = n.min(buf.len());
                self.got.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            Some(Act::Fail(kind)) => Err(io::Error::from(kind)),
            None => Err(io::Error::from(io::ErrorKind::WouldBlock)),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A reader serving `data` in scripted pieces, then blocking.
struct Feed {
    data: Vec<u8>,
    pos: usize,
    acts: VecDeque<Act>,
}

impl Read for Feed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.acts.pop_front() {
            Some(Act::Take(n)) => {
                let n = n.min(buf.len()).min(self.data.len() - self.pos);
                buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
                self.pos += n;
                Ok(n)
            }
            Some(Act::Fail(kind)) => Err(io::Error::from(kind)),
            None => Err(io::Error::from(io::ErrorKind::WouldBlock)),
        }
    }
}

#[test]
fn a_queue_writes_in_order_across_partial_writes_and_interruptions() {
    let mut q = WriteQueue::new(0);
    q.buf().extend_from_slice(b"hello, world");
    let mut dst = script(vec![
        Act::Take(3),
        Act::Fail(io::ErrorKind::Interrupted),
        Act::Take(4),
    ]);
    assert!(matches!(q.flush(&mut dst), Flushed::Blocked));
    assert_eq!(dst.got, b"hello, ");
    assert!(!q.is_drained());
    // What is written stays counted until the queue empties.
    assert_eq!(q.held(), 12);
    q.buf().extend_from_slice(b"!");
    let mut dst2 = script(vec![Act::Take(100)]);
    assert!(matches!(q.flush(&mut dst2), Flushed::Done));
    assert_eq!(dst2.got, b"world!");
    assert!(q.is_drained());
    assert_eq!(q.held(), 0);
}

#[test]
fn an_empty_queue_writes_nothing() {
    let mut q = WriteQueue::new(0);
    let mut dst = script(vec![]);
    assert!(matches!(q.flush(&mut dst), Flushed::Done));
    assert_eq!(dst.calls, 0);
}

#[test]
fn a_failed_or_closed_destination_drops_the_queue() {
    let mut q = WriteQueue::new(0);
    q.buf().extend_from_slice(b"abc");
    let mut dst = script(vec![Act::Take(1), Act::Fail(io::ErrorKind::BrokenPipe)]);
    match q.flush(&mut dst) {
        Flushed::Failed(e) => assert_eq!(e.kind(), io::ErrorKind::BrokenPipe),
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(q.is_drained());
    assert_eq!(q.held(), 0);
    q.buf().extend_from_slice(b"abc");
    let mut dst = script(vec![Act::Take(0)]);
    assert!(matches!(q.flush(&mut dst), Flushed::Closed));
    assert_eq!(q.held(), 0);
}

#[test]
fn writable_interest_is_asked_for_once_and_dropped_once() {
    let mut q = WriteQueue::new(0);
    assert!(!q.disarm(), "nothing was asked for yet");
    assert!(q.arm());
    assert!(!q.arm(), "already asked for");
    assert!(q.disarm());
    assert!(!q.disarm());
}

#[test]
fn a_big_buffer_is_freed_once_empty_only_past_the_kept_capacity() {
    let mut small = WriteQueue::new(64);
    small.buf().extend_from_slice(&[7; 32]);
    small.flush(&mut script(vec![Act::Take(100)]));
    assert!(small.buf().capacity() >= 32, "a small buffer is kept");
    let mut big = WriteQueue::new(64);
    big.buf().extend_from_slice(&[7; 1000]);
    big.flush(&mut script(vec![Act::Take(1000)]));
    assert_eq!(big.buf().capacity(), 0);
    let mut keep = WriteQueue::new(0);
    keep.buf().extend_from_slice(&[7; 1000]);
    keep.flush(&mut script(vec![Act::Take(1000)]));
    assert!(keep.buf().capacity() >= 1000, "0 keeps every buffer");
}

fn feed(data: &[u8], acts: Vec<Act>) -> Feed {
    Feed {
        data: data.to_vec(),
        pos: 0,
        acts: acts.into(),
    }
}

#[test]
fn the_read_loop_hands_over_every_chunk_until_it_would_block() {
    let mut src = feed(
        b"abcdefgh",
        vec![
            Act::Take(3),
            Act::Fail(io::ErrorKind::Interrupted),
            Act::Take(100),
        ],
    );
    let mut buf = [0u8; 4];
    let mut chunks = Vec::new();
    let end = read_until(&mut src, &mut buf, |c| {
        chunks.push(c.to_vec());
        ControlFlow::Continue(())
    });
    assert!(matches!(end, ReadEnd::Drained));
    // The buffer bounds each chunk.
    assert_eq!(chunks, vec![b"abc".to_vec(), b"defg".to_vec()]);
}

#[test]
fn the_read_loop_reports_eof_failure_and_a_stop() {
    let mut src = feed(b"ab", vec![Act::Take(2), Act::Take(0)]);
    let mut buf = [0u8; 8];
    let mut seen = 0;
    let end = read_until(&mut src, &mut buf, |c| {
        seen += c.len();
        ControlFlow::Continue(())
    });
    assert!(matches!(end, ReadEnd::Eof));
    assert_eq!(seen, 2);

    let mut src = feed(b"", vec![Act::Fail(io::ErrorKind::ConnectionReset)]);
    match read_until(&mut src, &mut buf, |_| ControlFlow::Continue(())) {
        ReadEnd::Failed(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionReset),
        other => panic!("expected a failure, got {other:?}"),
    }

    let mut src = feed(b"abcd", vec![Act::Take(2), Act::Take(2)]);
    let mut calls = 0;
    let end = read_until(&mut src, &mut buf, |_| {
        calls += 1;
        ControlFlow::Break(())
    });
    assert!(matches!(end, ReadEnd::Stopped));
    assert_eq!((calls, src.pos), (1, 2), "nothing is read after a stop");
}

/// A non-blocking pipe: (read end, write end), both close-on-exec. Other
/// tests of this process start children meanwhile; a child that inherited
/// the write end would hold it open past our `drop`, and the reader would
/// never see the end of the stream.
fn pipe() -> (OwnedFd, std::fs::File) {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors, which we then own.
    syscall!(pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK)).expect("pipe2");
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (r, std::fs::File::from(w))
}

/// Waits until `fd` is readable (data or the end of the stream). A child
/// forked by another test holds the write end between its fork and its
/// exec, so the end may come a moment after our `drop`.
fn wait_readable(fd: std::os::fd::RawFd) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = syscall!(poll(&mut p, 1, 60_000)).expect("poll");
    assert_eq!(n, 1, "the pipe became readable");
}

#[test]
fn a_full_pipe_blocks_the_queue_and_the_read_loop_drains_it_in_order() {
    let (r, mut w) = pipe();
    let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut q = WriteQueue::new(0);
    q.buf().extend_from_slice(&data);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let mut reader = RawReader(r.as_raw_fd());
    loop {
        match q.flush(&mut w) {
            Flushed::Done => break,
            Flushed::Blocked => {}
            other => panic!("unexpected {other:?}"),
        }
        let end = read_until(&mut reader, &mut buf, |c| {
            got.extend_from_slice(c);
            ControlFlow::Continue(())
        });
        assert!(matches!(end, ReadEnd::Drained));
    }
    drop(w);
    let end = loop {
        wait_readable(r.as_raw_fd());
        match read_until(&mut reader, &mut buf, |c| {
            got.extend_from_slice(c);
            ControlFlow::Continue(())
        }) {
            ReadEnd::Drained => continue,
            end => break end,
        }
    };
    assert!(matches!(end, ReadEnd::Eof), "{end:?}");
    assert!(got == data, "every byte, in order");
}

/// A streamed value goes out escaped, whole and in order, after what was
/// queued and before what follows it, across partial and blocked writes,
/// while the queue never holds more than a slice of it but counts all that
/// is not yet out; its table may free it meanwhile.
#[test]
fn a_streamed_value_is_made_a_slice_at_a_time_as_writes_go_through() {
    let text: String = (0..100_000)
        .map(|i| ["ab", "\"q\\", "é\n", "☃\u{1}"][i % 4])
        .collect();
    let value = Rc::new(Paged::new(format!("\"{text}\"")));
    let mut expected = b"{\"text\":\"".to_vec();
    let mut body = String::new();
    json::write_str_body(&mut body, value.text());
    expected.extend_from_slice(body.as_bytes());
    expected.extend_from_slice(b"\"}");
    let mut q = WriteQueue::new(1024);
    q.buf().extend_from_slice(b"{\"text\":\"");
    let mut streamed = Streamed::new();
    streamed.text(&value, 0..value.bytes(), Form::Escaped);
    streamed.bytes(b"\"}");
    let whole = 9 + streamed.len();
    assert_eq!(whole, expected.len());
    q.stream(streamed);
    assert_eq!(q.held(), whole);
    // Freed by its table meanwhile: the answer keeps it until written.
    let bytes = value.text().len();
    drop(value);
    let mut dst = script(Vec::new());
    let mut most = 0;
    loop {
        // Each round the destination takes 7,000 bytes, then blocks.
        dst.acts.extend([Act::Take(5000), Act::Take(2000)]);
        let flushed = q.flush(&mut dst);
        most = most.max(q.buf.len());
        // What is not yet out is counted, made or not.
        assert_eq!(q.held() - q.written + dst.got.len(), whole);
        match flushed {
            Flushed::Blocked => assert!(!q.is_drained()),
            Flushed::Done => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(q.is_drained() && q.held() == 0);
    assert_eq!(
        String::from_utf8(dst.got).unwrap(),
        String::from_utf8(expected).unwrap()
    );
    assert!(most <= 6 * STREAM_SLICE + 16, "held {most}");
    assert!(bytes > 2 * STREAM_SLICE);
}

/// A string's page goes out decoded and escaped again, a list's page with
/// its brackets, a raw span as it is: each the bytes serializing the page
/// whole gives, and the value outlives its table's copy until written.
#[test]
fn pages_and_raw_spans_stream_as_their_whole_serialization() {
    let body: String = (0..40_000)
        .map(|i| ["a\\u00e9", "\\\"q", "☃\\n", "\\ud83d\\ude00", "\\/"][i % 5])
        .collect();
    let string = Rc::new(Paged::new(format!("\"{body}\"")));
    let list = Rc::new(Paged::new(format!(
        "[ {} ]",
        ["\"x\\ty\"", "{\"k\":[1,2]}"].repeat(20_000).join(" , ")
    )));
    for (value, offset, limit) in [
        (&string, 3, 150_000),
        (&string, 0, 10),
        (&string, 39_990, 100),
        (&list, 5, 30_000),
        (&list, 0, 0),
        (&list, 39_999, 10),
    ] {
        let page = value.page(offset, limit);
        let span = value.span(offset, limit);
        let mut streamed = Streamed::new();
        streamed.bytes(b"[\"");
        streamed.bytes(span.open.as_bytes());
        let form = if span.decoded {
            Form::Decoded
        } else {
            Form::Escaped
        };
        streamed.text(value, span.range.clone(), form);
        streamed.bytes(span.close.as_bytes());
        streamed.bytes(b"\",");
        streamed.text(value, 0..value.bytes(), Form::Raw);
        streamed.bytes(b"]");
        let expected = serde_json::to_vec(&serde_json::json!([
            page,
            serde_json::from_str::<serde_json::Value>(value.text()).unwrap()
        ]))
        .unwrap();
        let mut raw = serde_json::to_vec(&serde_json::json!([page])).unwrap();
        raw.pop();
        raw.push(b',');
        raw.extend_from_slice(value.text().as_bytes());
        raw.push(b']');
        assert_eq!(streamed.len(), raw.len());
        assert_eq!(
            streamed.skeleton().len(),
            9 + span.open.len() + span.close.len()
        );
        let mut q = WriteQueue::new(1024);
        q.stream(streamed);
        let mut dst = script((0..10_000).map(|_| Act::Take(usize::MAX)).collect());
        assert!(matches!(q.flush(&mut dst), Flushed::Done));
        assert!(dst.got == raw, "page {offset}+{limit}");
        let parsed: serde_json::Value = serde_json::from_slice(&dst.got).unwrap();
        assert_eq!(serde_json::to_vec(&parsed).unwrap(), expected);
    }
}

/// A task's answer with its text held apart: the text goes, escaped, in
/// its result's first block and, raw, in place of the structured
/// placeholder, where the typed location says, whatever the message's
/// other strings hold (a request id like any other text); the answer is
/// the bytes of the same message written whole, and holds only its
/// envelope itself.
#[test]
fn a_text_held_apart_is_streamed_where_its_result_stands() {
    use crate::protocol::mcp::structured;
    let text = format!(r#"{{"a":"q\"\n\u0000","b":"{}"}}"#, "x".repeat(200_000));
    let value = Rc::new(Paged::new(text.clone()));
    let mut result = serde_json::Map::new();
    result.insert(
        "content".into(),
        serde_json::json!([{"type": "text", "text": text}]),
    );
    structured::mark(&mut result, true);
    result.insert("isError".into(), serde_json::Value::Bool(false));
    let mut whole = serde_json::json!({"jsonrpc": "2.0", "id": "\u{0}x\u{0}", "result": {
        "taskId": "t", "status": "completed", "result": result}});
    let expected = structured::to_vec(&whole);
    whole["result"]["result"]["content"][0]["text"] = "".into();
    let streamed = Streamed::apart(&whole, &["result", "result"], &value);
    assert_eq!(streamed.len(), expected.len());
    assert!(streamed.owned() < 300, "{}", streamed.owned());
    let mut q = WriteQueue::new(0);
    q.stream(streamed);
    let mut dst = script((0..100).map(|_| Act::Take(usize::MAX)).collect());
    assert!(matches!(q.flush(&mut dst), Flushed::Done));
    assert!(dst.got == expected);
    let parsed: serde_json::Value = serde_json::from_slice(&dst.got).expect("JSON");
    assert_eq!(
        parsed["result"]["result"]["structuredContent"]["a"],
        "q\"\n\u{0}"
    );
}
