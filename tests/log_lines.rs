//! Issue 34, rows 4 and 5: every stderr line goes through the logger, in
//! the chosen format, and strings from outside (a token's subject, a key
//! server's status line, a tools file's key) reach it escaped: no raw
//! control byte in text, one JSON object per line in json, start-up and
//! shutdown included.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{initialize_message, post_request, Client, Server};
use crate::support::oauth::{jwks, mint, Issuer, FUTURE, PAST};
use crate::util::{wait_for, TempDir, TIMEOUT};

/// What an attacker puts in a string the server logs: a line break, a
/// forged line, a terminal escape (ESC and C1 CSI), a bell.
const NASTY: &str = "x\r\nmorloc-mcp: forged\u{1b}[2J\u{9b}31m\u{7}";

/// Fails if `stderr` has a raw control character (but the newlines ending
/// lines and, in text, tabs), or under json a line that is not one object.
#[track_caller]
fn assert_clean(stderr: &str, json: bool) {
    for line in stderr.lines() {
        let raw = line
            .chars()
            .find(|&c| c.is_control() && (c != '\t' || json));
        assert!(raw.is_none(), "raw {raw:?} on stderr: {line:?}");
        assert!(
            !line.contains("morloc mcp:"),
            "the old banner label: {line}"
        );
        if json {
            let parsed: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}"));
            assert!(parsed.is_object(), "{line}");
            let msg = parsed["msg"].as_str().unwrap_or_default();
            assert!(!msg.starts_with("morloc-mcp:"), "the label in msg: {line}");
        }
    }
}

/// The messages of `stderr`'s lines: the lines themselves in text, their
/// `msg` under json.
fn messages(stderr: &str, json: bool) -> String {
    if !json {
        return stderr.to_string();
    }
    let msg = |l: &str| serde_json::from_str::<Value>(l).unwrap()["msg"].clone();
    stderr
        .lines()
        .map(|l| format!("{}\n", msg(l).as_str().unwrap_or_default()))
        .collect()
}

/// A key server that answers every request with `reply`, as it is.
fn raw_key_server(reply: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock key server");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let _ = stream.write_all(reply);
        }
    });
    format!("http://{addr}/jwks")
}

fn post(server: &Server, token: &str, body: &Value) -> crate::support::http::Response {
    let auth = format!("Bearer {token}");
    let request = post_request(
        server.addr,
        None,
        body.to_string().as_bytes(),
        &[("Authorization", auth.as_str())],
    );
    Client::connect(server.addr).roundtrip(&request)
}

#[track_caller]
fn stop(mut server: Server) -> String {
    server.proc.signal(libc::SIGTERM);
    server.proc.wait_keeping_stdin(Duration::from_secs(30));
    server.proc.stderr_text(TIMEOUT)
}

/// OAuth, HTTP and a tools file: a subject with control characters fills
/// its session cap, the tools file is rewritten with such a key, then the
/// server stops. In both formats nothing raw reaches stderr; in json every
/// line, from the banner to the last, is one object.
#[test]
fn a_subject_and_a_tools_file_key_reach_stderr_escaped() {
    for format in ["text", "json"] {
        let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
        let dir = TempDir::new();
        let file = dir.write(
            "tools.json",
            r#"{"tools": {"addOne": {"title": "Add one"}}}"#,
        );
        let (iss, url, tools) = (
            issuer.issuer(),
            issuer.jwks_url(),
            file.display().to_string(),
        );
        let server = Server::start(&[
            "--log-format",
            format,
            "--oauth-issuer",
            &iss,
            "--oauth-jwks",
            &url,
            "--tools-file",
            &tools,
            "--max-sessions-per-owner",
            "1",
        ]);
        let claims = json!({"iss": iss, "sub": NASTY, "exp": FUTURE, "nbf": PAST,
            "aud": format!("http://127.0.0.1:{}/mcp", server.addr.port())});
        let token = mint(&json!({"alg": "RS256", "kid": "rsa-1"}), &claims, "rsa1");
        // The second session of the subject drops its first: a notice
        // naming the subject.
        post(&server, &token, &initialize_message(1)).expect(200);
        post(&server, &token, &initialize_message(2)).expect(200);
        wait_for("the session-cap notice", || {
            server
                .proc
                .stderr_now()
                .contains("holds its cap of sessions")
        });
        // A tools file whose key has them: refused on reload, named.
        let bad = json!({"tools": {"addOne": {NASTY: 1}}}).to_string();
        dir.write("tools.json.next", bad);
        std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
        wait_for("the refused tools file", || {
            server.proc.stderr_now().contains("cannot be served")
        });
        let stderr = stop(server);
        assert_clean(&stderr, format == "json");
        let banner = stderr.lines().next().unwrap_or_default();
        if format == "text" {
            assert!(
                banner.starts_with("morloc-mcp: serving \"main\""),
                "{banner}"
            );
            assert!(stderr.contains("forged\\u001b[2J\\u009b31m"), "{stderr}");
            assert!(
                stderr.contains("OAuth: tokens must name the audience"),
                "{stderr}"
            );
        } else {
            let first: Value = serde_json::from_str(banner).unwrap();
            assert!(first["msg"]
                .as_str()
                .unwrap()
                .starts_with("serving \"main\""));
            // The subject comes back whole from the json line.
            let notice = stderr
                .lines()
                .find(|l| l.contains("holds its cap"))
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .unwrap();
            let msg = notice["msg"].as_str().unwrap();
            assert!(msg.contains("forged\\u001b[2J"), "{msg}");
        }
    }
}

/// A key server whose status line holds a terminal escape and a lone CR:
/// the fetch failure names it escaped.
#[test]
fn a_key_servers_status_line_reaches_stderr_escaped() {
    let url = raw_key_server(b"HTTP/1.1 \x1b[2J\r2OO\x07 OK\r\nContent-Length: 0\r\n\r\n");
    for format in ["text", "json"] {
        let iss = "https://issuer.example";
        let server = Server::start(&[
            "--log-format",
            format,
            "--oauth-issuer",
            iss,
            "--oauth-jwks",
            &url,
        ]);
        let claims = json!({"iss": iss, "sub": "a", "exp": FUTURE,
            "aud": format!("http://127.0.0.1:{}/mcp", server.addr.port())});
        let token = mint(&json!({"alg": "RS256", "kid": "rsa-1"}), &claims, "rsa1");
        post(&server, &token, &initialize_message(1)).expect(401);
        wait_for("the fetch failure on stderr", || {
            server.proc.stderr_now().contains("bad status line")
        });
        let stderr = stop(server);
        assert_clean(&stderr, format == "json");
        let said = messages(&stderr, format == "json");
        assert!(said.contains("\\u001b[2J\\r2OO\\u0007"), "{said}");
    }
}

/// A tools file refused at start-up: the error names its key escaped, and
/// under json even that last line is an object.
#[test]
fn a_tools_file_refused_at_start_up_is_one_escaped_line() {
    for format in ["text", "json"] {
        let dir = TempDir::new();
        let manifest = crate::support::http::write_manifest(&dir, "m.json", "main", |_| {});
        let bad = json!({"tools": {"addOne": {NASTY: 1}}}).to_string();
        let tools = dir.write("tools.json", bad);
        let mut proc = crate::util::Proc::spawn(&mut crate::util::cmd([
            "mcp".into(),
            manifest.into_os_string(),
            "--tools-file".into(),
            tools.into_os_string(),
            "--log-format".into(),
            format.into(),
        ]));
        let status = proc.wait(Duration::from_secs(30));
        assert!(!status.success());
        let stderr = proc.stderr_text(TIMEOUT);
        assert_clean(&stderr, format == "json");
        let said = messages(&stderr, format == "json");
        assert!(
            said.contains("unknown key \"x\\r\\nmorloc-mcp: forged"),
            "{said}"
        );
    }
}
