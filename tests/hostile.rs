//! End-to-end tests of the HTTP front against hostile peers: the real binary
//! serves the shapes test program over HTTP, and the tests play clients that
//! try to take memory or connection slots away from everyone else.
//!
//! Covered: a refused request is answered from its head alone, before its
//! body is read (and the server's peak memory stays far below the bodies
//! sent); the buffer budget refuses a new body with 503 while an admitted
//! one completes; a TLS handshake and a flood of blank lines get a 400 and a
//! close; blank lines start the request deadline; one address cannot hold
//! more than its share of connections while another is served; one owner
//! creating many sessions cannot push out another owner's session.
//!
//! A second client address is had by binding to 127.0.0.2 (all of 127/8 is
//! loopback on Linux). Figures (memory, latency under 1,030 held
//! connections) are in `bench/hostile_bench.py`, not here.

use std::ffi::OsString;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::thread;

use crate::support::http::connect_from;
use crate::util::{self, Proc, TempDir};

/// 63 MiB: a body just under the server's 64 MiB per-request cap.
const BIG_BODY: usize = 63 * 1024 * 1024;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

struct Server {
    proc: Proc,
    addr: SocketAddr,
    _dir: TempDir,
}

impl Server {
    /// `morloc-mcp mcp <shapes> --http-port 0 --lazy-pools <extra>`, once
    /// its banner names the address.
    fn start(extra: &[&str]) -> Server {
        let dir = TempDir::new();
        let manifest = util::shapes_manifest(&dir);
        let mut args: Vec<OsString> = vec![
            "mcp".into(),
            manifest.into(),
            "--http-port".into(),
            "0".into(),
            "--lazy-pools".into(),
        ];
        args.extend(extra.iter().map(OsString::from));
        let proc = Proc::spawn(&mut util::cmd(args));
        let addr = wait_for_line(&proc, |line| {
            let rest = line.split(" over HTTP at http://").nth(1)?;
            rest.strip_suffix("/mcp")?.parse().ok()
        });
        Server {
            proc,
            addr,
            _dir: dir,
        }
    }

    /// A connection from 127.0.0.`last`.
    fn connect_from(&self, last: u8) -> TcpStream {
        let stream = connect_from(Ipv4Addr::new(127, 0, 0, last), self.addr);
        stream.set_read_timeout(Some(util::TIMEOUT)).unwrap();
        stream.set_write_timeout(Some(util::TIMEOUT)).unwrap();
        stream
    }

    /// The server's peak resident memory (VmHWM), in KiB.
    fn peak_kib(&self) -> u64 {
        let status = util::read(format!("/proc/{}/status", self.proc.pid()).as_ref());
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/<pid>/status")
    }

    /// Waits for a stderr line containing `needle`.
    #[track_caller]
    fn wait_stderr(&self, needle: &str) -> String {
        wait_for_line(&self.proc, |line| {
            line.contains(needle).then(|| line.to_string())
        })
    }
}

/// Waits (up to `util::TIMEOUT`) for a whole stderr line `pick` accepts.
#[track_caller]
fn wait_for_line<T>(proc: &Proc, pick: impl Fn(&str) -> Option<T>) -> T {
    let found = util::poll_until(|| {
        let stderr = proc.stderr_now();
        let lines = stderr
            .split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'));
        lines.into_iter().find_map(&pick)
    });
    match found {
        Some(found) => found,
        None => panic!("not on stderr in time:\n{}", proc.stderr_now()),
    }
}

/// One response: status, header block (names lowercased), body.
#[derive(Debug)]
struct Response {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads once, retrying on EINTR and EAGAIN; 0 at EOF or a reset.
fn read_some(stream: &mut TcpStream, buf: &mut [u8]) -> usize {
    match crate::support::http::read_retrying(stream, buf, util::TIMEOUT) {
        Ok(n) => n,
        Err(e) if e.kind() == ErrorKind::ConnectionReset => 0,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            panic!("no answer in time")
        }
        Err(e) => panic!("read failed: {e}"),
    }
}

/// Reads one response with a `Content-Length` body.
#[track_caller]
fn read_response(stream: &mut TcpStream) -> Response {
    let mut got = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = read_some(stream, &mut buf);
        assert!(
            n > 0,
            "closed before a response: {:?}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&got[..head_end]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let mut response = Response {
        status,
        head,
        body: got[head_end..].to_vec(),
    };
    let length: usize = response
        .header("content-length")
        .map_or(0, |v| v.parse().expect("a numeric Content-Length"));
    while response.body.len() < length {
        let n = read_some(stream, &mut buf);
        assert!(n > 0, "closed inside a body: {response:?}");
        response.body.extend_from_slice(&buf[..n]);
    }
    response
}

/// Whether the server closes `stream` (EOF or reset) with nothing more sent.
#[track_caller]
fn assert_closed(stream: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    let n = read_some(stream, &mut buf);
    assert_eq!(
        n,
        0,
        "more after the answer: {:?}",
        String::from_utf8_lossy(&buf[..n])
    );
}

/// Sends `head` and a body of `body` bytes of `byte`.
fn post(path: &str, extra: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

fn health(stream: &mut TcpStream) -> Response {
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    read_response(stream)
}

/// A JSON text of exactly `len` bytes: `message` padded with spaces.
fn padded(message: &str, len: usize) -> Vec<u8> {
    let mut body = message.as_bytes().to_vec();
    body.resize(len, b' ');
    body
}

#[test]
fn a_refused_head_is_answered_before_its_body() {
    let server = Server::start(&["--auth-token", "sesame"]);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {BIG_BODY}\r\n\r\n"
    );
    // The answer comes with no byte of the body sent.
    let mut stream = server.connect_from(1);
    stream.write_all(head.as_bytes()).unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 401, "{response:?}");
    assert_eq!(response.header("connection"), Some("close"));
    assert_closed(&mut stream);
    // Eight clients sending their whole bodies: each gets its 401, and the
    // server never holds anything like one body.
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let mut stream = server.connect_from(1);
            let head = head.clone();
            let writer = stream.try_clone().unwrap();
            let sender = thread::spawn(move || {
                let mut writer = writer;
                let _ = writer.write_all(head.as_bytes());
                let chunk = vec![b' '; 1024 * 1024];
                for _ in 0..BIG_BODY / chunk.len() {
                    // The server stops reading and closes: writes then fail.
                    if writer.write_all(&chunk).is_err() {
                        break;
                    }
                }
            });
            thread::spawn(move || {
                let response = read_response(&mut stream);
                let _ = sender.join();
                response
            })
        })
        .collect();
    for client in clients {
        let response = client.join().unwrap();
        assert_eq!(response.status, 401, "{response:?}");
    }
    let peak = server.peak_kib();
    assert!(
        peak < (BIG_BODY / 1024 / 4) as u64,
        "peak {peak} KiB for eight refused 63 MiB bodies"
    );
    // Still serving.
    assert_eq!(health(&mut server.connect_from(1)).status, 200);
}

#[test]
fn the_budget_refuses_a_new_body_while_an_admitted_one_completes() {
    let server = Server::start(&["--max-buffered", "1m"]);
    const LEN: usize = 600 * 1024;
    let body = padded(INITIALIZE, LEN);
    let request = post("/mcp", "Expect: 100-continue\r\n", &body);
    let head_len = request.len() - LEN;
    // A's head is admitted (the 100 says so) and part of its body sent.
    let mut a = server.connect_from(1);
    a.write_all(&request[..head_len]).unwrap();
    let mut interim = [0u8; 25];
    a.read_exact(&mut interim).unwrap();
    assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n");
    a.write_all(&request[head_len..head_len + LEN / 2]).unwrap();
    // B's body does not fit next to A's.
    let mut b = server.connect_from(1);
    b.write_all(&request[..head_len]).unwrap();
    let refused = read_response(&mut b);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(refused.header("connection"), Some("close"));
    assert!(refused.text().contains("retry later"), "{}", refused.text());
    assert_closed(&mut b);
    server.wait_stderr("morloc-mcp: HTTP: the buffer budget is reached");
    // A completes.
    a.write_all(&request[head_len + LEN / 2..]).unwrap();
    let done = read_response(&mut a);
    assert_eq!(done.status, 200, "{done:?}");
    assert!(done.header("mcp-session-id").is_some());
    // With A done, the same body fits again.
    let mut c = server.connect_from(1);
    c.write_all(&post("/mcp", "", &body)).unwrap();
    assert_eq!(read_response(&mut c).status, 200);
}

#[test]
fn a_tls_handshake_gets_400_and_a_close() {
    let server = Server::start(&[]);
    let mut stream = server.connect_from(1);
    // The start of a ClientHello: handshake record, TLS 1.0, a length.
    stream
        .write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
        .unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 400, "{response:?}");
    assert_eq!(response.header("connection"), Some("close"));
    assert!(response.text().contains("0x16"), "{}", response.text());
    assert_closed(&mut stream);
    assert_eq!(health(&mut server.connect_from(1)).status, 200);
}

#[test]
fn blank_lines_are_bounded_and_start_the_request_deadline() {
    let server = Server::start(&["--request-timeout", "1"]);
    // Eight blank lines before a request are fine.
    let mut stream = server.connect_from(1);
    stream.write_all("\r\n".repeat(8).as_bytes()).unwrap();
    assert_eq!(health(&mut stream).status, 200);
    // One more is a 400 and a close.
    let mut stream = server.connect_from(1);
    stream.write_all("\r\n".repeat(9).as_bytes()).unwrap();
    let response = read_response(&mut stream);
    assert_eq!(response.status, 400, "{response:?}");
    assert!(
        response.text().contains("empty lines"),
        "{}",
        response.text()
    );
    assert_closed(&mut stream);
    // A blank line starts the request deadline (not the 120-s idle
    // timeout): the connection is closed, with nothing to answer.
    let mut stream = server.connect_from(1);
    stream.write_all(b"\r\n").unwrap();
    assert_closed(&mut stream);
    // A request begun after a blank line gets its 408.
    let mut stream = server.connect_from(1);
    stream.write_all(b"\r\nGET /hea").unwrap();
    assert_eq!(read_response(&mut stream).status, 408);
}

#[test]
fn one_address_cannot_hold_every_slot() {
    let server = Server::start(&["--max-conns-per-peer", "4"]);
    let mut held: Vec<TcpStream> = (0..4).map(|_| server.connect_from(1)).collect();
    for stream in &mut held {
        stream.write_all(b"\r\n").unwrap();
    }
    let mut fifth = server.connect_from(1);
    let refused = read_response(&mut fifth);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(
        refused.text().contains("from your address"),
        "{}",
        refused.text()
    );
    assert_closed(&mut fifth);
    server.wait_stderr("morloc-mcp: HTTP: 127.0.0.1 holds 4 connections");
    // Another address is served meanwhile.
    let mut other = server.connect_from(2);
    assert_eq!(health(&mut other).status, 200);
    // The held connections are still served too.
    assert_eq!(health(&mut held[0]).status, 200);
}

#[test]
fn an_owner_cannot_push_out_another_owners_session() {
    let initialize = |stream: &mut TcpStream| -> String {
        stream
            .write_all(&post("/mcp", "", INITIALIZE.as_bytes()))
            .unwrap();
        let response = read_response(stream);
        assert_eq!(response.status, 200, "{response:?}");
        response.header("mcp-session-id").unwrap().to_string()
    };
    let ping = |stream: &mut TcpStream, session: &str| -> Response {
        let extra = format!("Mcp-Session-Id: {session}\r\n");
        let message = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        stream
            .write_all(&post("/mcp", &extra, message.as_bytes()))
            .unwrap();
        read_response(stream)
    };
    // At its own cap, A drops its own oldest session; B's stays.
    // With the table full (4 in all), A, holding the most, gives one up,
    // though B's session is the least recently used of all.
    for limits in [["--max-sessions-per-owner", "3"], ["--max-sessions", "4"]] {
        let server = Server::start(&limits);
        let mut b = server.connect_from(2);
        let b_session = initialize(&mut b);
        let mut a = server.connect_from(1);
        let a_sessions: Vec<String> = (0..20).map(|_| initialize(&mut a)).collect();
        let b_ping = ping(&mut b, &b_session);
        assert_eq!(b_ping.status, 200, "{limits:?}: {b_ping:?}");
        assert!(b_ping.text().contains("\"result\""), "{}", b_ping.text());
        // A's oldest are gone, its newest live.
        assert_eq!(ping(&mut a, &a_sessions[0]).status, 404, "{limits:?}");
        assert_eq!(ping(&mut a, &a_sessions[19]).status, 200, "{limits:?}");
        if limits[0] == "--max-sessions-per-owner" {
            server.wait_stderr("morloc-mcp: HTTP: \"peer 127.0.0.1\" holds its cap of sessions");
        }
    }
}
