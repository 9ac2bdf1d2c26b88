//! Big `tools/call` bodies are checked and encoded in slices between other
//! events, and big result files read so: other clients are served
//! meanwhile, several big calls share the thread, a client that leaves
//! mid-way costs nothing more, and every result is exact.

use serde_json::{json, Value};

use crate::support::http::{
    find, post_request, simple_request, tool_call, write_manifest, Client, Response, Server,
};
use crate::support::{cmd, procfs, spin_until, wait_for, wait_until, TempDir};

/// A `sumMany` request of `n` integers (one beyond 64 bits) and its sum.
fn big_sum(id: u64, n: i64) -> (String, String) {
    let mut items: Vec<String> = (0..n).map(|i| (i % 1000 - 500).to_string()).collect();
    items[3] = "1180591620717411303424".into();
    let sum: i128 = (0..i128::from(n))
        .filter(|i| *i != 3)
        .map(|i| i % 1000 - 500)
        .sum::<i128>()
        + (1i128 << 70);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sumMany","arguments":{{"_1":[{}]}}}}}}"#,
        items.join(",")
    );
    (body, sum.to_string())
}

fn result_text(reply: &Value) -> String {
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
        .to_string()
}

#[test]
fn other_clients_are_served_while_a_big_body_is_prepared() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut big, big_sid) = server.session();
    let (mut other, other_sid) = server.session();
    // Warm the pool, so the big call does not wait for it to start.
    let warm = other
        .post(Some(&other_sid), &tool_call(1, "addOne", json!({"_1": 1})))
        .expect(200)
        .json();
    assert_eq!(result_text(&warm), "2");
    let (body, sum) = big_sum(7, 1_500_000);
    big.send(&post_request(
        server.addr,
        Some(&big_sid),
        body.as_bytes(),
        &[],
    ));
    // Another client's requests, small and big (a second call in slices
    // beside the first), each answered.
    for i in 0..3 {
        let reply = other
            .post(
                Some(&other_sid),
                &tool_call(10 + i, "addOne", json!({"_1": 41})),
            )
            .expect(200)
            .json();
        assert_eq!(result_text(&reply), "42");
        let health = other.roundtrip(&simple_request("GET", "/health", server.addr, ""));
        assert_eq!(health.status, 200);
    }
    let (small_big, small_sum) = big_sum(20, 40_000);
    let reply = other
        .roundtrip(&post_request(
            server.addr,
            Some(&other_sid),
            small_big.as_bytes(),
            &[],
        ))
        .expect(200)
        .json();
    assert_eq!(result_text(&reply), small_sum);
    // The big call's result is exact.
    let reply = big.read_response().expect(200).json();
    assert_eq!(reply["id"], json!(7), "{reply}");
    assert_eq!(result_text(&reply), sum);
}

#[test]
fn a_request_pipelined_behind_a_big_body_is_answered_after_it() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut client, sid) = server.session();
    let (body, sum) = big_sum(3, 300_000);
    let mut bytes = post_request(server.addr, Some(&sid), body.as_bytes(), &[]);
    let small = tool_call(4, "addOne", json!({"_1": 9})).to_string();
    bytes.extend(post_request(server.addr, Some(&sid), small.as_bytes(), &[]));
    client.send(&bytes);
    let first = client.read_response().expect(200).json();
    assert_eq!(first["id"], json!(3), "{first}");
    assert_eq!(result_text(&first), sum);
    let second = client.read_response().expect(200).json();
    assert_eq!(second["id"], json!(4), "{second}");
    assert_eq!(result_text(&second), "10");
}

#[test]
fn a_big_call_whose_client_leaves_is_dropped_and_others_go_on() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut other, other_sid) = server.session();
    for id in 0..3 {
        let (mut gone, gone_sid) = server.session();
        let (body, _) = big_sum(id, 500_000);
        gone.send(&post_request(
            server.addr,
            Some(&gone_sid),
            body.as_bytes(),
            &[],
        ));
        drop(gone);
    }
    let (body, sum) = big_sum(9, 200_000);
    let reply = other
        .roundtrip(&post_request(
            server.addr,
            Some(&other_sid),
            body.as_bytes(),
            &[],
        ))
        .expect(200)
        .json();
    assert_eq!(result_text(&reply), sum);
    let health = other.roundtrip(&simple_request("GET", "/health", server.addr, ""));
    assert_eq!(health.status, 200);
}

/// The bytes of a result file the server reads per turn.
const FILE_SLICE: u64 = 512 << 10;
/// The characters of a big text result: 128 slices of its file.
const CHARS: u64 = 64 << 20;

/// A server whose pool writes large results to files (`no_shm`), logging
/// its reads of them (`--log-level debug`), its pool warm.
struct FileResults {
    server: Server,
    pid: i32,
}

impl FileResults {
    fn start() -> FileResults {
        let dir = TempDir::new();
        let manifest = write_manifest(&dir, "manifest.json", "main", |m| {
            m["no_shm"] = json!(true);
        });
        let mut command = cmd([
            "mcp".as_ref(),
            manifest.as_os_str(),
            "--http-port".as_ref(),
            "0".as_ref(),
            "--lazy-pools".as_ref(),
            "--plain-tool-names".as_ref(),
            "--log-level".as_ref(),
            "debug".as_ref(),
        ]);
        let server = Server::spawn(dir, &mut command);
        let pid = server.proc.pid() as i32;
        let (mut warm, sid) = server.session();
        let reply = warm
            .post(Some(&sid), &tool_call(1, "addOne", json!({"_1": 1})))
            .expect(200)
            .json();
        assert_eq!(result_text(&reply), "2");
        FileResults { server, pid }
    }

    /// Reads of result files that ended with every byte.
    fn reads_ended(&self) -> usize {
        let stderr = self.server.proc.stderr_now();
        stderr.matches("read the result file ").count()
    }

    /// Sends a `bigText` call of [`CHARS`] on `client` and stops the server
    /// (SIGSTOP) while its read of the result file has at least 16 slices
    /// to go (the file open, its offset far from its end): true. False if
    /// the read ended before the test could stop it (the server runs on).
    fn stop_inside_read(&self, client: &mut Client, sid: &str, id: u64) -> bool {
        let ended = self.reads_ended();
        let call = tool_call(id, "bigText", json!({"_1": CHARS})).to_string();
        let addr = self.server.addr;
        client.send(&post_request(addr, Some(sid), call.as_bytes(), &[]));
        let far = |o: procfs::OpenFile| o.size - o.pos >= 16 * FILE_SLICE;
        let pid = self.pid;
        spin_until(|| {
            if procfs::open_file(pid, "morloc-pkt-").is_some_and(far) {
                self.server.proc.signal(libc::SIGSTOP);
                wait_for("the server stopped", || {
                    procfs::stat(pid).is_some_and(|s| s.state == "T")
                });
                let inside = procfs::open_file(pid, "morloc-pkt-").is_some_and(far);
                if !inside {
                    self.server.proc.signal(libc::SIGCONT);
                }
                return Some(inside);
            }
            (self.reads_ended() > ended).then_some(false)
        })
        .expect("neither the result file open nor its read ended")
    }

    fn resume(&self) {
        self.server.proc.signal(libc::SIGCONT);
    }

    /// The server's log lines from the start of its `n`th read of a result
    /// file (counted from 1), that line first, once they hold `last` (lines
    /// reach stderr at the end of each turn).
    fn since_read(&self, n: usize, last: &str) -> Vec<String> {
        wait_until(format!("read {n} and then {last:?} in the log"), || {
            let stderr = self.server.proc.stderr_now();
            let lines: Vec<&str> = stderr.lines().collect();
            let began = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.contains("reading the result file "))
                .nth(n - 1)?
                .0;
            let lines = &lines[began..];
            lines
                .iter()
                .any(|l| l.contains(last))
                .then(|| lines.iter().map(|l| l.to_string()).collect())
        })
    }
}

/// The big text of a `bigText` reply is exact.
fn assert_big_text_reply(reply: &Response) {
    // The text is the JSON string: `"\"xx...x\""`.
    let needle = b"\"text\":\"\\\"";
    let text_at = find(&reply.body, needle).expect("a text result") + needle.len();
    let run = reply.body[text_at..]
        .iter()
        .take_while(|&&b| b == b'x')
        .count();
    assert_eq!(run as u64, CHARS);
}

/// A result of tens of MB that a pool without shared memory (`no_shm`)
/// writes to a file is read a slice per turn: a `/health` sent while the
/// server holds the file open with most of it unread is answered between
/// the read's start and its end. The server is stopped (SIGSTOP) inside
/// the read to place the request there, so the overlap is certain; an
/// attempt whose read ended before the test could stop it is tried again.
#[test]
fn another_client_is_answered_while_a_big_result_file_is_read() {
    let s = FileResults::start();
    let (mut caller, sid) = s.server.session();
    let health_request = simple_request("GET", "/health", s.server.addr, "");
    let mut health = s.server.connect();
    assert_eq!(health.roundtrip(&health_request).status, 200);
    let (mut caught, mut reads) = (false, 0);
    for attempt in 0..10 {
        reads += 1;
        let inside = s.stop_inside_read(&mut caller, &sid, 100 + attempt);
        if inside {
            // Stopped mid-read: the request waits in the socket.
            health.send(&health_request);
            s.resume();
        }
        // The big reply first: while it is unread, the per-address output
        // budget holds this address's other connections.
        let reply = caller.read_response().expect(200);
        assert_big_text_reply(&reply);
        if inside {
            assert_eq!(health.read_response().status, 200);
            caught = true;
            break;
        }
    }
    assert!(
        caught,
        "the server was never stopped inside a result file's read"
    );
    // In order: the read began, `/health` was answered, the read ended, in
    // more than 16 slices.
    let lines = s.since_read(reads, "read the result file ");
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} after the read began:\n{lines:#?}"))
    };
    let answered = at("path=/health");
    let ended = at("read the result file ");
    assert!(answered < ended, "{lines:#?}");
    let slices: u64 = lines[ended]
        .split(" in ")
        .last()
        .and_then(|s| s.strip_suffix(" slices"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no slice count in {}", lines[ended]));
    assert!(slices > 16, "{}", lines[ended]);
}

/// A client that goes away while its result file is read: the read stops
/// there (it never ends with every byte), the file is removed, and the
/// server serves the next call.
#[test]
fn a_result_file_whose_client_leaves_mid_read_is_removed_unread() {
    let s = FileResults::start();
    let (mut caught, mut reads) = (false, 0);
    for attempt in 0..10 {
        reads += 1;
        let (mut gone, sid) = s.server.session();
        if s.stop_inside_read(&mut gone, &sid, 100 + attempt) {
            drop(gone);
            s.resume();
            caught = true;
            break;
        }
        assert_big_text_reply(&gone.read_response().expect(200));
    }
    assert!(
        caught,
        "the server was never stopped inside a result file's read"
    );
    let began = s.since_read(reads, "reading the result file ");
    let path = began[0]
        .split("reading the result file ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" in slices"))
        .expect("the file's path")
        .to_string();
    wait_for("the result file removed", || {
        !std::path::Path::new(&path).exists()
    });
    let (mut next, sid) = s.server.session();
    let reply = next
        .post(Some(&sid), &tool_call(200, "addOne", json!({"_1": 41})))
        .expect(200)
        .json();
    assert_eq!(result_text(&reply), "42");
    // Every line up to the next call's answer is in: none says the read
    // ended.
    let lines = s.since_read(reads, "tool=addOne");
    assert!(
        !lines.iter().any(|l| l.contains("read the result file ")),
        "{lines:#?}"
    );
}
