//! Large `tools/call` arguments over stdio and HTTP: decoded straight from the
//! request's text into the pool's format, with the typed path's results and
//! errors, and a memory cost of about the line plus the packet.

use serde_json::{json, Value};

use crate::support::procfs;
use crate::util::{self, Proc, TempDir, TIMEOUT};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// Adds `sinkInts` (`[Int]`, a function the test pool does not have: it
/// reads the whole call and fails at once) to a shapes manifest.
fn add_sink(manifest: &mut Value) {
    let commands = manifest["commands"].as_array_mut().expect("commands");
    let mut sink = commands
        .iter()
        .find(|c| c["name"] == "sumMany")
        .expect("sumMany")
        .clone();
    sink["name"] = json!("sinkInts");
    sink["mid"] = json!(70);
    commands.push(sink);
}

/// A server of the shapes program plus `sinkInts` (`[Int]`, a function the
/// test pool does not have: it reads the whole call and fails at once).
fn server(dir: &TempDir) -> Proc {
    let manifest = util::shapes_manifest_with(dir, add_sink);
    let mut proc = Proc::spawn(util::cmd(["mcp"]).arg(&manifest));
    proc.send_line(INITIALIZE);
    let reply = proc.read_line(TIMEOUT).expect("initialize reply");
    assert!(reply.contains("\"result\""), "{reply}");
    proc.send_line(INITIALIZED);
    proc
}

/// Sends one `tools/call` line and returns its result object.
fn call(proc: &mut Proc, id: u64, tool: &str, arguments: &str) -> Value {
    proc.send_line(&format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    ));
    let line = proc.read_line(TIMEOUT).expect("a reply");
    let reply: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(reply["id"], json!(id), "{line}");
    reply["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[test]
fn big_arguments_arrive_exactly() {
    let dir = TempDir::new();
    let mut proc = server(&dir);
    // 200,000 integers, two beyond 64 bits, with spaces and -0.
    let mut items: Vec<String> = (0..200_000i64)
        .map(|i| (i % 1000 - 500).to_string())
        .collect();
    items[7] = "1180591620717411303424".into();
    items[8] = "-170141183460469231731687303715884105727".into();
    items[9] = " -0 ".into();
    let sum: i128 = (0..200_000i128)
        .filter(|i| !(7..=9).contains(i))
        .map(|i| i % 1000 - 500)
        .sum::<i128>()
        + (1i128 << 70)
        - i128::MAX;
    let result = call(
        &mut proc,
        1,
        "sumMany",
        &format!(r#"{{"_1":[{}]}}"#, items.join(",")),
    );
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(text(&result), sum.to_string());
    // An integer of three limbs, and one given as a string.
    let big = "-98765432109876543210987654321098765432109876543210";
    let result = call(&mut proc, 4, "addOne", &format!(r#"{{"_1":{big}}}"#));
    assert_eq!(
        text(&result),
        "-98765432109876543210987654321098765432109876543209"
    );
    let result = call(
        &mut proc,
        5,
        "addOne",
        r#"{"_1":"123456789012345678901234567890"}"#,
    );
    assert_eq!(text(&result), "123456789012345678901234567891");
    // 20,000 records, keys in either order, a duplicate key (the last wins).
    let points: Vec<String> = (0..20_000)
        .map(|i| match i % 3 {
            0 => format!(r#"{{"x":{i},"y":{}}}"#, 2 * i),
            1 => format!(r#"{{"y":{},"x":{i}}}"#, 2 * i),
            _ => format!(r#"{{"x":"junk","y":{},"\u0078":{i}}}"#, 2 * i),
        })
        .collect();
    let result = call(
        &mut proc,
        2,
        "sumPoints",
        &format!(r#"{{"_1":[{}]}}"#, points.join(",")),
    );
    let n: i64 = (0..20_000).sum();
    assert_eq!(
        result["structuredContent"],
        json!({"x": n, "y": 2 * n}),
        "{result}"
    );
    // Escapes and surrogate pairs in a string.
    let result = call(
        &mut proc,
        3,
        "hello",
        r#"{"_1":"w\u00f6rld \ud83d\ude00 \"q\""}"#,
    );
    // A string result is shown as JSON text.
    assert_eq!(text(&result), "\"Hello, w\u{f6}rld \u{1f600} \\\"q\\\"!\"");
}

#[test]
fn a_bad_element_deep_in_a_big_list_is_named_and_the_server_goes_on() {
    let dir = TempDir::new();
    let mut proc = server(&dir);
    let mut items: Vec<String> = (0..100_000).map(|i| i.to_string()).collect();
    items[99_999] = "\"x\"".into();
    let result = call(
        &mut proc,
        1,
        "sumMany",
        &format!(r#"{{"_1":[{}]}}"#, items.join(",")),
    );
    assert_eq!(result["isError"], json!(true), "{result}");
    assert_eq!(
        text(&result),
        "argument '_1[99999]': expected an integer, got \"x\""
    );
    let result = call(
        &mut proc,
        2,
        "sumPoints",
        r#"{"_1":[{"x":1,"y":2},{"x":1,"z":2}]}"#,
    );
    assert_eq!(
        text(&result),
        "argument '_1[1]': unknown field 'z' (expected x, y)"
    );
    // Invalid JSON inside the arguments is a parse error, as before.
    proc.send_line(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sumMany","arguments":{"_1":[1,]}}}"#);
    let line = proc.read_line(TIMEOUT).expect("a reply");
    assert!(
        line.contains("-32700") && line.contains("\"invalid JSON\""),
        "{line}"
    );
    let result = call(&mut proc, 4, "addOne", r#"{"_1":41}"#);
    assert_eq!(text(&result), "42");
}

#[test]
fn a_big_call_costs_about_its_line_and_its_packet() {
    let dir = TempDir::new();
    let mut proc = server(&dir);
    let warm = call(&mut proc, 1, "addOne", r#"{"_1":1}"#);
    assert_eq!(text(&warm), "2");
    // 2,000,000 integers: a 4 MB line and a 32 MB packet. Parsed into a
    // JSON tree this peaked at 418 MiB and kept 270 MiB.
    let items = vec!["1"; 2_000_000].join(",");
    let result = call(&mut proc, 2, "sinkInts", &format!(r#"{{"_1":[{items}]}}"#));
    assert_eq!(result["isError"], json!(true), "{result}");
    assert!(
        text(&result).contains("70"),
        "the pool did not get the call: {result}"
    );
    let pid = proc.pid();
    let peak = procfs::status(pid, "VmHWM");
    let kept = procfs::status(pid, "VmRSS");
    assert!(peak < 150 << 20, "peak resident set {} MiB", peak >> 20);
    assert!(
        kept < 64 << 20,
        "resident set after the call {} MiB",
        kept >> 20
    );
}

#[test]
fn a_big_call_over_http_costs_about_its_body_and_its_packet() {
    use crate::support::http::{post_request, write_manifest, Server};
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "manifest.json", "main", add_sink);
    let server = Server::spawn(
        dir,
        util::cmd(["mcp"])
            .arg(&manifest)
            .args(["--http-port", "0", "--plain-tool-names"]),
    );
    let (mut client, sid) = server.session();
    let warm = client
        .post(
            Some(&sid),
            &crate::support::http::tool_call(1, "addOne", json!({"_1": 1})),
        )
        .expect(200)
        .json();
    assert_eq!(text(&warm["result"]), "2", "{warm}");
    // The same 2,000,000 integers in a POST body: parsed into a JSON tree
    // this peaked at about 420 MiB.
    let items = vec!["1"; 2_000_000].join(",");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"sinkInts","arguments":{{"_1":[{items}]}}}}}}"#
    );
    let reply = client
        .roundtrip(&post_request(server.addr, Some(&sid), body.as_bytes(), &[]))
        .expect(200)
        .json();
    let result = &reply["result"];
    assert_eq!(result["isError"], json!(true), "{reply}");
    assert!(
        text(result).contains("70"),
        "the pool did not get the call: {reply}"
    );
    let peak = procfs::status(server.proc.pid(), "VmHWM");
    assert!(peak < 150 << 20, "peak resident set {} MiB", peak >> 20);
}
