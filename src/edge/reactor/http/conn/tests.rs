//! Unit tests of one connection's state: requests parsed in order and held
//! while the connection is busy, heads judged before bodies, the budget
//! count, timers, and a refusal's linger. The socket only carries the
//! refusal; input is put in the buffer directly.

use std::io::Read;

use mio::Poll;

use super::*;

/// A connection (the server side of a loopback pair) and its client.
/// The default timeouts.
const TIMEOUTS: Timeouts = Timeouts {
    request: Duration::from_secs(30),
    idle: Duration::from_secs(120),
};

fn conn() -> (Conn, std::net::TcpStream) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (server, peer) = listener.accept().unwrap();
    server.set_nonblocking(true).unwrap();
    (Conn::new(TcpStream::from_std(server), peer.ip()), client)
}

fn feed(conn: &mut Conn, bytes: &[u8]) {
    conn.input.buf.extend_from_slice(bytes);
}

fn post(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn busy() -> Busy {
    Busy {
        session: String::new(),
        sse: false,
        keep_alive: true,
        cors: Vec::new(),
        modern: false,
        listen: None,
    }
}

/// Parses until a request, a refusal or nothing more.
fn next_request(conn: &mut Conn) -> Option<Request> {
    loop {
        match conn.parse_next() {
            Parsed::Idle | Parsed::NeedMore { .. } => return None,
            Parsed::Head { .. } => {}
            Parsed::Request(r) => return Some(r),
            Parsed::Bad(e) => panic!("unexpected {e}"),
        }
    }
}

#[test]
fn pipelined_requests_come_out_in_order_and_wait_while_busy() {
    let (mut c, _client) = conn();
    feed(
        &mut c,
        format!("{}{}", post("/a", "1"), post("/b", "22")).as_bytes(),
    );
    let first = next_request(&mut c).expect("the first request");
    assert_eq!(
        (first.path.as_str(), first.body.as_slice()),
        ("/a", &b"1"[..])
    );
    c.set_busy(busy());
    assert!(
        matches!(c.parse_next(), Parsed::Idle),
        "busy: the next waits"
    );
    c.take_busy();
    // Output still pending holds the next one too.
    c.out().extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    assert!(matches!(c.parse_next(), Parsed::Idle));
    c.out.clear();
    let second = next_request(&mut c).expect("the second request");
    assert_eq!(second.path, "/b");
    assert!(matches!(c.parse_next(), Parsed::Idle), "all input used");
    c.compact_input();
    assert!(c.input.buf.is_empty() && c.input.pos == 0);
}

#[test]
fn a_head_is_reported_before_its_body_and_its_body_is_counted_once() {
    let (mut c, _client) = conn();
    let head =
        "POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n";
    feed(&mut c, head.as_bytes());
    assert!(matches!(
        c.parse_next(),
        Parsed::Head {
            expect_continue: true
        }
    ));
    assert_eq!(c.head().map(|h| h.path.as_str()), Some("/mcp"));
    assert_eq!(c.body_due(), 10);
    assert!(!c.body_is_here());
    c.reserve_body();
    let (_, held) = c.recount();
    // The whole declared body is counted from now on, not only what came.
    assert_eq!(held.input, head.len() + 10);
    assert_eq!(held.output, Unread::default());
    feed(&mut c, b"0123");
    assert_eq!(c.body_due(), 6);
    let (before, after) = c.recount();
    assert_eq!(
        (before, after),
        (held, held),
        "arrived body bytes are not counted twice"
    );
    feed(&mut c, b"456789");
    assert!(c.body_is_here());
    let request = next_request(&mut c).expect("the whole request");
    assert_eq!(request.body, b"0123456789");
}

#[test]
fn a_chunked_body_is_reported_as_growing() {
    let (mut c, _client) = conn();
    feed(
        &mut c,
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert!(matches!(c.parse_next(), Parsed::Head { .. }));
    feed(&mut c, b"4\r\nabcd\r\n");
    assert!(matches!(
        c.parse_next(),
        Parsed::NeedMore {
            used: true,
            chunked: true
        }
    ));
}

#[test]
fn timers_follow_the_request_being_read() {
    let (mut c, _client) = conn();
    let timeouts = TIMEOUTS;
    let timeout = timeouts.request;
    let idle_at = c.last_active + timeouts.idle;
    assert_eq!(c.deadline(timeouts), Some(idle_at));
    assert!(matches!(c.due(idle_at, timeouts), Due::Idle));
    // Part of a request: the request deadline runs.
    feed(&mut c, b"POST /mcp HTTP/1.1\r\n");
    assert!(matches!(
        c.parse_next(),
        Parsed::NeedMore { used: true, .. }
    ));
    let start = c.input.started.expect("started");
    assert_eq!(c.deadline(timeouts), Some(start + timeout));
    assert!(matches!(c.due(start, timeouts), Due::Nothing));
    assert!(matches!(c.due(start + timeout, timeouts), Due::Late));
    // A busy connection has no timer, unless it is a listen stream.
    c.set_busy(busy());
    assert_eq!(c.deadline(timeouts), None);
    let at = start + KEEP_ALIVE;
    c.take_busy();
    c.set_busy(Busy {
        listen: Some((jsonrpc::RequestId::Int("1".into()), at)),
        ..busy()
    });
    assert_eq!(c.deadline(timeouts), Some(at));
    assert!(matches!(c.due(at, timeouts), Due::Quiet));
    c.keep_alive(at);
    assert_eq!(c.deadline(timeouts), Some(at + KEEP_ALIVE));
    assert!(c.out().ends_with(b":\n\n\r\n"), "an SSE comment is queued");
}

#[test]
fn only_blank_lines_time_out_as_idle_not_late() {
    let (mut c, _client) = conn();
    let timeout = TIMEOUTS.request;
    feed(&mut c, b"\r\n\r\n");
    c.input.started = Some(c.last_active);
    assert!(matches!(c.parse_next(), Parsed::NeedMore { .. }));
    let start = c.input.started.expect("started");
    assert!(matches!(c.due(start + timeout, TIMEOUTS), Due::Idle));
}

#[test]
fn a_refusal_is_written_then_the_connection_lingers_dropping_input() {
    let (mut c, mut client) = conn();
    let poll = Poll::new().unwrap();
    let token = Token(7);
    poll.registry()
        .register(&mut c.stream, token, Interest::READABLE)
        .unwrap();
    feed(
        &mut c,
        b"POST /mcp HTTP/1.1\r\nHost: h\r\nContent-Length: 99\r\n",
    );
    c.refuse();
    assert!(c.input.buf.is_empty(), "what was buffered is dropped");
    c.out().extend_from_slice(b"HTTP/1.1 503 x\r\n\r\n");
    assert!(matches!(c.flush(poll.registry(), token), Flush::Lingering));
    let (at, dropped) = c.linger.expect("lingering");
    assert_eq!(dropped, 0);
    assert_eq!(c.deadline(TIMEOUTS), Some(at));
    assert!(matches!(c.due(at, TIMEOUTS), Due::Idle));
    // The answer reached the client, and our side is shut.
    let mut got = Vec::new();
    client.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"HTTP/1.1 503 x\r\n\r\n");
    // A connection not refusing closes after its answer instead.
    let (mut d, _client) = conn();
    d.close_after_write();
    assert!(matches!(d.flush(poll.registry(), Token(8)), Flush::Close));
    let (mut e, _client) = conn();
    assert!(matches!(e.flush(poll.registry(), Token(9)), Flush::Open));
}

#[test]
fn a_pump_ends_by_closing_or_cancelling_when_the_peer_left() {
    let (mut c, _client) = conn();
    assert!(c.start_pump());
    assert!(!c.start_pump(), "a nested pump returns at once");
    assert!(matches!(c.end_pump(), AfterPump::Keep));
    c.peer_closed = true;
    assert!(matches!(c.end_pump(), AfterPump::Close));
    // A plain request waiting for its call is cancelled; a legacy event
    // stream is not (its session may still want the answer elsewhere).
    c.set_busy(busy());
    assert!(matches!(c.end_pump(), AfterPump::CancelAndClose));
    c.take_busy();
    c.set_busy(Busy {
        sse: true,
        ..busy()
    });
    c.out().push(b'x');
    assert!(matches!(c.end_pump(), AfterPump::Keep));
}
