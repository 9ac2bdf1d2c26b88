//! The HTTP client of the tests, for both protocol revisions: raw HTTP/1.1
//! over a `TcpStream`, so every byte on the wire is under the test's
//! control, and the launcher of a server on an OS-chosen port that waits for
//! its "serving ... over HTTP at" line before returning.
//!
//! Reads retry when interrupted (`EINTR`) or when a socket reports
//! `EAGAIN` before its read timeout has passed, so a signal delivered to the
//! test process or a spurious wake-up never fails a test.

use std::ffi::OsString;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::fd::FromRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::proc::{self as util, Proc, TempDir};
use super::time::{wait_until, Stopwatch};

/// The protocol revision the tests negotiate.
pub const PROTOCOL: &str = "2025-06-18";
/// The longest any single read from the server may take (see
/// `time::TIMEOUT`: only a failing test waits this long).
pub const IO_TIMEOUT: Duration = Duration::from_secs(60);
/// The server's connection cap (`MAX_CONNECTIONS` in the reactor).
pub const MAX_CONNECTIONS: usize = 1024;

// ---- the server -----------------------------------------------------------

/// Writes a copy of the shapes manifest into `dir/<file>` with module name
/// `name` and its pool running the test pool (by absolute path), and
/// returns its path. `edit` may change the manifest further.
pub fn write_manifest(
    dir: &TempDir,
    file: &str,
    name: &str,
    edit: impl FnOnce(&mut Value),
) -> PathBuf {
    let text = util::read(&util::data("shapes/manifest.json"));
    let mut manifest: Value = serde_json::from_str(&text).expect("the shapes manifest is JSON");
    manifest["name"] = json!(name);
    let pool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pool/testpool.py");
    manifest["pools"][0]["exec"] = json!(["python3", pool.to_string_lossy()]);
    edit(&mut manifest);
    dir.write(
        file,
        serde_json::to_string(&manifest).expect("a manifest serialises"),
    )
}

/// A running server and the directory holding its manifest.
pub struct Server {
    pub proc: Proc,
    pub addr: SocketAddr,
    pub dir: TempDir,
}

impl Server {
    /// `morloc-mcp mcp <shapes as "main"> --http-port 0 --lazy-pools <extra>`.
    pub fn start(extra: &[&str]) -> Server {
        Server::start_env(extra, &[])
    }

    /// Like [`Server::start`], with environment variables set.
    pub fn start_env(extra: &[&str], env: &[(&str, &str)]) -> Server {
        let dir = TempDir::new();
        let manifest = write_manifest(&dir, "manifest.json", "main", |_| {});
        let mut args: Vec<OsString> = vec![
            "mcp".into(),
            manifest.into(),
            "--http-port".into(),
            "0".into(),
        ];
        args.push("--lazy-pools".into());
        args.extend(extra.iter().map(OsString::from));
        let mut command = util::cmd(args);
        for (key, value) in env {
            command.env(key, value);
        }
        Server::spawn(dir, &mut command)
    }

    /// [`Server::start`] with the test pool tracing its calls into `trace`.
    pub fn start_traced(extra: &[&str], trace: &super::trace::CallTrace) -> Server {
        let (key, value) = trace.env();
        let value = value.to_string_lossy().into_owned();
        Server::start_env(extra, &[(key, value.as_str())])
    }

    /// [`Server::start_traced`] whose test pool also holds `slowEcho` calls
    /// while `hold` says so.
    pub fn start_held(
        extra: &[&str],
        trace: &super::trace::CallTrace,
        hold: &super::trace::Hold,
    ) -> Server {
        let pairs = [trace.env(), hold.env()];
        let env: Vec<(&str, String)> = pairs
            .iter()
            .map(|(k, v)| (*k, v.to_string_lossy().into_owned()))
            .collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_env(extra, &env)
    }

    /// Runs `command` and waits for its banner.
    pub fn spawn(dir: TempDir, command: &mut Command) -> Server {
        let proc = Proc::spawn(command);
        let addr = wait_for_banner(&proc);
        Server { proc, addr, dir }
    }

    pub fn connect(&self) -> Client {
        Client::connect(self.addr)
    }

    /// A new connection with an initialized session on it.
    pub fn session(&self) -> (Client, String) {
        let mut client = self.connect();
        let sid = client.initialize();
        (client, sid)
    }
}

/// Waits for `serving "<name>" over HTTP at http://<addr>/mcp` on stderr and
/// returns the address; fails at once on an error line.
#[track_caller]
pub fn wait_for_banner(proc: &Proc) -> SocketAddr {
    wait_until("the server's \"over HTTP at\" line on stderr", || {
        let stderr = proc.stderr_now();
        // Only whole lines: stderr arrives in pieces that may split one.
        for line in stderr
            .split_inclusive('\n')
            .filter_map(|l| l.strip_suffix('\n'))
        {
            if let Some(rest) = line.split(" over HTTP at http://").nth(1) {
                // With `--log-format json` the banner is a JSON line.
                let rest = rest.strip_suffix("\"}").unwrap_or(rest);
                let addr = rest.strip_suffix("/mcp").unwrap_or(rest);
                return Some(
                    addr.parse()
                        .unwrap_or_else(|e| panic!("bad address in banner {line:?}: {e}")),
                );
            }
            if line.starts_with("morloc-mcp: ") && !line.starts_with("morloc-mcp: warning") {
                panic!("the server failed to start:\n{stderr}");
            }
        }
        None
    })
}

/// One `read` that retries on `EINTR`, and on `EAGAIN` until `wait` has
/// passed since the first attempt (a socket with a read timeout reports
/// its expiry as `EAGAIN`; anything earlier is spurious).
pub fn read_retrying(stream: &mut TcpStream, buf: &mut [u8], wait: Duration) -> io::Result<usize> {
    let clock = Stopwatch::start();
    loop {
        match stream.read(buf) {
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
                    && clock.read() < wait =>
            {
                continue
            }
            other => return other,
        }
    }
}

// ---- requests and responses -----------------------------------------------

/// One parsed response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub reason: String,
    /// Names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body, chunked framing removed.
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == &name.to_ascii_lowercase())
            .map(|(_, v)| v.as_str())
    }

    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Fails unless the status is `status`; shows the whole response if not.
    #[track_caller]
    pub fn expect(self, status: u16) -> Response {
        assert_eq!(
            self.status,
            status,
            "unexpected response: {self:?} body {:?}",
            self.text()
        );
        self
    }
}

/// A client connection with its own receive buffer.
pub struct Client {
    pub stream: TcpStream,
    pub addr: SocketAddr,
    pub buf: Vec<u8>,
}

impl Client {
    #[track_caller]
    pub fn connect(addr: SocketAddr) -> Client {
        let stream =
            TcpStream::connect(addr).unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"));
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set a read timeout");
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        Client {
            stream,
            addr,
            buf: Vec::new(),
        }
    }

    /// A connection from 127.0.0.`last` (a second client address).
    #[track_caller]
    pub fn connect_from(addr: SocketAddr, last: u8) -> Client {
        let stream = connect_from(Ipv4Addr::new(127, 0, 0, last), addr);
        stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set a read timeout");
        stream.set_nodelay(true).expect("set TCP_NODELAY");
        Client {
            stream,
            addr,
            buf: Vec::new(),
        }
    }

    #[track_caller]
    pub fn send(&mut self, bytes: &[u8]) {
        if let Err(e) = self.stream.write_all(bytes) {
            panic!("cannot send to the server: {e}");
        }
    }

    /// Sends `request` and reads one final response (skipping nothing).
    #[track_caller]
    pub fn roundtrip(&mut self, request: &[u8]) -> Response {
        self.send(request);
        self.read_response()
    }

    /// POSTs a JSON-RPC message to /mcp with the usual headers.
    #[track_caller]
    pub fn post(&mut self, session: Option<&str>, body: &Value) -> Response {
        let request = post_request(self.addr, session, body.to_string().as_bytes(), &[]);
        self.roundtrip(&request)
    }

    /// `initialize` then `notifications/initialized`; returns the session id.
    #[track_caller]
    pub fn initialize(&mut self) -> String {
        let reply = self.post(None, &initialize_message(1)).expect(200);
        let sid = reply
            .header("mcp-session-id")
            .expect("initialize sets Mcp-Session-Id")
            .to_string();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(Some(&sid), &note).expect(202);
        sid
    }

    /// Reads more bytes into the buffer; fails the test on timeout or EOF.
    #[track_caller]
    pub fn fill(&mut self) {
        match self.try_fill() {
            Ok(true) => {}
            Ok(false) => panic!(
                "the server closed the connection; got so far {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
            Err(e) => panic!("{e}"),
        }
    }

    /// Reads more bytes into the buffer: `Ok(false)` at EOF or a reset,
    /// `Err` on a timeout or another failure.
    pub fn try_fill(&mut self) -> Result<bool, String> {
        let mut chunk = [0u8; 64 * 1024];
        match read_retrying(&mut self.stream, &mut chunk, IO_TIMEOUT) {
            Ok(0) => Ok(false),
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Ok(false),
            Err(e) => Err(format!(
                "read from the server failed ({e}); got so far {:?}",
                String::from_utf8_lossy(&self.buf)
            )),
        }
    }

    /// One line without its CRLF, or why there is none.
    pub fn try_line(&mut self) -> Result<String, String> {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..end + 2);
                return Ok(line);
            }
            if !self.try_fill()? {
                return Err(format!(
                    "connection closed inside a line: {:?}",
                    String::from_utf8_lossy(&self.buf)
                ));
            }
        }
    }

    /// `n` bytes, or why they did not come.
    pub fn try_take(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.buf.len() < n {
            if !self.try_fill()? {
                return Err(format!(
                    "connection closed after {} of {n} body bytes",
                    self.buf.len()
                ));
            }
        }
        Ok(self.buf.drain(..n).collect())
    }

    /// The next final response, interim 1xx responses skipped, without
    /// failing the test: `Ok(None)` when the connection closes before a
    /// byte of it arrives, `Err` for a malformed or truncated one. For
    /// tests that record what the server does with hostile input.
    pub fn try_read_response(&mut self) -> Result<Option<Response>, String> {
        loop {
            if self.buf.is_empty() && !self.try_fill()? {
                return Ok(None);
            }
            let status_line = self.try_line()?;
            let mut parts = status_line.splitn(3, ' ');
            let _version = parts.next();
            let status: u16 = parts
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("bad status line {status_line:?}"))?;
            let reason = parts.next().unwrap_or("").to_string();
            let mut headers = Vec::new();
            loop {
                let line = self.try_line()?;
                if line.is_empty() {
                    break;
                }
                let (name, value) = line
                    .split_once(':')
                    .ok_or_else(|| format!("bad response header {line:?}"))?;
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
            let mut response = Response {
                status,
                reason,
                headers,
                body: Vec::new(),
            };
            if (100..200).contains(&status) {
                continue;
            }
            if response
                .header("transfer-encoding")
                .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
            {
                loop {
                    let size = self.try_line()?;
                    let size =
                        usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16)
                            .map_err(|_| format!("bad chunk size {size:?}"))?;
                    let data = self.try_take(size)?;
                    response.body.extend_from_slice(&data);
                    self.try_line()?;
                    if size == 0 {
                        break;
                    }
                }
            } else if let Some(length) = response.header("content-length") {
                let length: usize = length
                    .parse()
                    .map_err(|_| format!("bad Content-Length {length:?}"))?;
                response.body = self.try_take(length)?;
            }
            return Ok(Some(response));
        }
    }

    /// Takes one line (without CRLF) from the buffer, reading as needed.
    #[track_caller]
    pub fn line(&mut self) -> String {
        loop {
            if let Some(end) = find(&self.buf, b"\r\n") {
                let line = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                self.buf.drain(..end + 2);
                return line;
            }
            self.fill();
        }
    }

    #[track_caller]
    pub fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            self.fill();
        }
        self.buf.drain(..n).collect()
    }

    /// Reads a status line and headers.
    #[track_caller]
    pub fn read_head(&mut self) -> Response {
        let status_line = self.line();
        let mut parts = status_line.splitn(3, ' ');
        let version = parts.next().unwrap_or("");
        assert_eq!(version, "HTTP/1.1", "status line {status_line:?}");
        let status = parts
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let reason = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let line = self.line();
            if line.is_empty() {
                break;
            }
            let (name, value) = line
                .split_once(':')
                .unwrap_or_else(|| panic!("header line {line:?}"));
            headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
        }
        Response {
            status,
            reason,
            headers,
            body: Vec::new(),
        }
    }

    /// Reads one chunk of a chunked body; `None` for the last (empty) one.
    #[track_caller]
    pub fn read_chunk(&mut self) -> Option<Vec<u8>> {
        let size_line = self.line();
        let size = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
            .unwrap_or_else(|e| panic!("chunk size line {size_line:?}: {e}"));
        if size == 0 {
            // No trailers are expected: the empty line ends the body.
            assert_eq!(self.line(), "", "trailer after the last chunk");
            return None;
        }
        let data = self.take(size);
        assert_eq!(self.line(), "", "chunk data not followed by CRLF");
        Some(data)
    }

    /// Reads one whole response (an interim 1xx is returned as such).
    #[track_caller]
    pub fn read_response(&mut self) -> Response {
        let mut response = self.read_head();
        let no_body = (100..200).contains(&response.status)
            || response.status == 204
            || response.status == 304;
        if no_body {
            assert_eq!(response.header("content-length"), None, "{response:?}");
            return response;
        }
        if response
            .header("transfer-encoding")
            .is_some_and(|te| te.eq_ignore_ascii_case("chunked"))
        {
            while let Some(chunk) = self.read_chunk() {
                response.body.extend_from_slice(&chunk);
            }
        } else {
            let length = response
                .header("content-length")
                .unwrap_or_else(|| panic!("no Content-Length in {response:?}"));
            let length: usize = length
                .parse()
                .unwrap_or_else(|e| panic!("Content-Length {length:?}: {e}"));
            response.body = self.take(length);
        }
        response
    }

    /// Whether the server closed the connection (EOF or reset) within
    /// `wait`, with nothing more to read.
    pub fn closed_within(&mut self, wait: Duration) -> bool {
        if !self.buf.is_empty() {
            return false;
        }
        self.stream
            .set_read_timeout(Some(wait))
            .expect("set a read timeout");
        let mut byte = [0u8; 1];
        let closed = match read_retrying(&mut self.stream, &mut byte, wait) {
            Ok(0) => true,
            Ok(_) => {
                self.buf.push(byte[0]);
                false
            }
            Err(e) => e.kind() == ErrorKind::ConnectionReset,
        };
        self.stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set a read timeout");
        closed
    }

    /// Fails unless the server closes the connection soon.
    #[track_caller]
    pub fn expect_closed(&mut self) {
        assert!(
            self.closed_within(IO_TIMEOUT),
            "the connection is still open; buffered {:?}",
            String::from_utf8_lossy(&self.buf)
        );
    }

    /// Fails unless the connection stays open and silent for `wait`.
    #[track_caller]
    pub fn expect_silent(&mut self, wait: Duration) {
        self.stream
            .set_read_timeout(Some(wait))
            .expect("set a read timeout");
        let mut chunk = [0u8; 4096];
        match read_retrying(&mut self.stream, &mut chunk, wait) {
            Ok(0) => panic!("the server closed the connection"),
            Ok(n) => panic!(
                "unexpected bytes from the server: {:?}",
                String::from_utf8_lossy(&chunk[..n])
            ),
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                "read failed: {e}"
            ),
        }
        self.stream
            .set_read_timeout(Some(IO_TIMEOUT))
            .expect("set a read timeout");
    }
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A `POST /mcp` request with Host, Content-Type, Accept, Content-Length,
/// the session header if any, and `extra` headers.
pub fn post_request(
    addr: SocketAddr,
    session: Option<&str>,
    body: &[u8],
    extra: &[(&str, &str)],
) -> Vec<u8> {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(sid) = session {
        head.push_str(&format!("Mcp-Session-Id: {sid}\r\n"));
    }
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    request
}

/// A bodiless request with a Host header and `extra` header lines.
pub fn simple_request(method: &str, target: &str, addr: SocketAddr, extra: &str) -> Vec<u8> {
    format!("{method} {target} HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n").into_bytes()
}

pub fn initialize_message(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    })
}

pub fn request(id: u64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method})
}

pub fn tool_call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

/// Starts `router <manifests...> --http-port 0 --lazy-pools <extra>`.
pub fn router(dir: TempDir, manifests: &[&Path], extra: &[&str]) -> Server {
    let mut args: Vec<OsString> = vec!["router".into()];
    args.extend(manifests.iter().map(|m| m.as_os_str().to_owned()));
    args.extend(["--http-port", "0", "--lazy-pools"].map(OsString::from));
    args.extend(extra.iter().map(OsString::from));
    Server::spawn(dir, &mut util::cmd(args))
}

/// A TCP connection to `to` from the local address `from` (all of 127/8
/// is loopback on Linux, so 127.0.0.2 is a second client address).
pub fn connect_from(from: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let SocketAddr::V4(to) = to else {
        panic!("the server listens on IPv4")
    };
    let sockaddr = |ip: Ipv4Addr, port: u16| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(ip).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns; the
    // addresses are valid `sockaddr_in` values of the size given.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let stream = TcpStream::from_raw_fd(fd);
        let local = sockaddr(from, 0);
        let rc = libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len);
        assert_eq!(rc, 0, "bind {from}: {}", std::io::Error::last_os_error());
        let remote = sockaddr(*to.ip(), to.port());
        loop {
            let rc = libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len);
            if rc == 0 {
                break;
            }
            let err = std::io::Error::last_os_error();
            assert_eq!(err.kind(), ErrorKind::Interrupted, "connect {to}: {err}");
        }
        stream
    }
}
