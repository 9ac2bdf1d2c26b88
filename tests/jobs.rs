//! End-to-end tests of `--job-tools`: a long call of a client without the
//! Tasks extension (legacy sessions, and 2026-07-28 requests that did not
//! declare it) is answered with a job handle while it still runs, and
//! `job_status`, `job_result` and `job_cancel` drive it to its exact result;
//! jobs are bound to their authorization; a client of the extension still
//! gets tasks; without the flag nothing changes; a program tool named like
//! a job tool stops the start (or a reload) unless renamed; and a finished
//! job, a task like any other, survives a restart with `--task-dir`.

use serde_json::{json, Value};

use crate::support::http::{post_request, Client, Server as HttpServer};
use crate::support::stdio::Lines;
use crate::util::{
    self, assert_big_text, wait_for, wait_until, CallTrace, Hold, TempDir, NEVER, TIMEOUT,
};

const MODERN: &str = "2026-07-28";
const EXT: &str = "io.modelcontextprotocol/tasks";
const JOB_TOOLS: [&str; 3] = ["job_status", "job_result", "job_cancel"];

/// A modern request, declaring the Tasks extension or not.
fn modern(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {EXT: {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": caps,
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn legacy(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn call_params(tool: &str, arguments: Value) -> Value {
    json!({"name": tool, "arguments": arguments})
}

fn job_params(tool: &str, job: &str) -> Value {
    call_params(tool, json!({"job_id": job}))
}

fn initialize(s: &mut Lines) {
    let init = s.ask_json(&legacy(
        0,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    ));
    assert!(init.get("result").is_some(), "{init}");
    s.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

fn start(extra: &[&str], trace: Option<&CallTrace>) -> Lines {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let env: Vec<_> = trace.map(CallTrace::env).into_iter().collect();
    Lines::mcp(&manifest, extra, &env, Some(dir))
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The job id of a handle, after checking its shape.
#[track_caller]
fn job_of(reply: &Value) -> String {
    let result = &reply["result"];
    assert_eq!(result["isError"], false, "{reply}");
    let s = &result["structuredContent"];
    assert_eq!(s["status"], "working", "{reply}");
    assert_eq!(s["pollIntervalMs"], 1000, "{reply}");
    let job = s["jobId"].as_str().expect("jobId").to_string();
    let (prefix, random) = job.split_once('.').expect("<instance>.<random>");
    assert!(!prefix.is_empty() && random.len() == 32, "{job}");
    let words = text(result);
    assert!(
        words.contains(&format!("job_result with {{\"job_id\": \"{job}\"}}")),
        "{words}"
    );
    job
}

/// Calls `job_result` until the job has finished; returns that result.
#[track_caller]
fn poll_result(ask: &mut dyn FnMut(&Value) -> Value, request: &dyn Fn(u64) -> Value) -> Value {
    let mut id = 500;
    wait_until("the job finished", || {
        id += 1;
        let reply = ask(&request(id));
        let result = reply["result"].clone();
        assert!(result.is_object(), "{reply}");
        let working = result["structuredContent"]["status"] == "working";
        if working {
            // While it runs, job_result answers with the status, not an error.
            assert_eq!(result["isError"], false, "{reply}");
            assert!(text(&result).contains("is working"), "{reply}");
        }
        (!working).then_some(result)
    })
}

#[test]
fn a_legacy_stdio_client_gets_a_handle_then_the_exact_result() {
    let trace = CallTrace::new();
    let hold = Hold::new();
    let mut s = Lines::shapes_held(&["--job-tools", "--task-after", "300"], &trace, &hold);
    initialize(&mut s);
    let list = s.ask_json(&legacy(1, "tools/list", json!({})));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[names.len() - 3..], JOB_TOOLS, "{names:?}");
    // A slow call is answered with a handle while it still runs: it is held
    // in its pool until the test has seen it working, so it passes the
    // threshold whatever the load.
    hold.hold();
    let handle = s.ask_json(&legacy(
        3,
        "tools/call",
        call_params("slowEcho", json!({"_1": 20})),
    ));
    let job = job_of(&handle);
    assert!(
        handle["result"].get("resultType").is_none(),
        "legacy: {handle}"
    );
    assert!(text(&handle["result"]).contains("The call to 'slowEcho'"));
    trace.wait_started("slowEcho", 1);
    let status = s.ask_json(&legacy(4, "tools/call", job_params("job_status", &job)));
    assert_eq!(
        status["result"]["structuredContent"]["status"], "working",
        "{status}"
    );
    assert_eq!(status["result"]["structuredContent"]["jobId"], json!(job));
    hold.release();
    let done = poll_result(&mut |m| s.ask_json(m), &|id| {
        legacy(id, "tools/call", job_params("job_result", &job))
    });
    assert_eq!(
        done,
        json!({"content": [{"type": "text", "text": "20"}], "isError": false}),
        "the call's own result"
    );
    let status = s.ask_json(&legacy(5, "tools/call", job_params("job_status", &job)));
    assert_eq!(status["result"]["structuredContent"]["status"], "completed");
    // Bad arguments and unknown jobs are tool errors that say why.
    let bad = s.ask_json(&legacy(
        6,
        "tools/call",
        call_params("job_status", json!({"id": 1})),
    ));
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        text(&bad["result"]).contains("unknown argument 'id'"),
        "{bad}"
    );
    let unknown = "i0.00000000000000000000000000000000";
    let gone = s.ask_json(&legacy(7, "tools/call", job_params("job_result", unknown)));
    assert_eq!(gone["result"]["isError"], true, "{gone}");
    assert!(text(&gone["result"]).starts_with(&format!("unknown job '{unknown}'")));
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

#[test]
fn a_legacy_stdio_client_with_job_tools_gets_a_call_under_the_threshold_answered() {
    let mut s = start(&["--job-tools", "--task-after", NEVER], None);
    initialize(&mut s);
    let fast = s.ask_json(&legacy(
        2,
        "tools/call",
        call_params("slowEcho", json!({"_1": 0})),
    ));
    assert_eq!(
        fast["result"],
        json!({"content": [{"type": "text", "text": "0"}], "isError": false})
    );
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

#[test]
fn a_modern_stdio_client_without_the_extension_gets_jobs_and_can_cancel() {
    let mut s = start(&["--job-tools", "--task-after", "0"], None);
    let list = s.ask_json(&modern(1, "tools/list", json!({}), false));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let status_tool = tools
        .iter()
        .find(|t| t["name"] == "job_status")
        .expect("job_status");
    assert_eq!(
        status_tool["inputSchema"]["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(status_tool["annotations"]["readOnlyHint"], true);

    let handle = s.ask_json(&modern(
        2,
        "tools/call",
        call_params("slowEcho", json!({"_1": 400})),
        false,
    ));
    assert_eq!(handle["result"]["resultType"], "complete", "{handle}");
    let job = job_of(&handle);
    let done = poll_result(&mut |m| s.ask_json(m), &|id| {
        modern(id, "tools/call", job_params("job_result", &job), false)
    });
    assert_eq!(
        done["content"],
        json!([{"type": "text", "text": "400"}]),
        "{done}"
    );
    assert_eq!(done["isError"], false);
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(
        done["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "main"
    );

    // job_cancel: the job is cancelled at once, and has no result.
    let handle = s.ask_json(&modern(
        3,
        "tools/call",
        call_params("slowEcho", json!({"_1": 20_000})),
        false,
    ));
    let long = job_of(&handle);
    let cancel = s.ask_json(&modern(
        4,
        "tools/call",
        job_params("job_cancel", &long),
        false,
    ));
    assert_eq!(
        cancel["result"]["structuredContent"]["status"], "cancelled",
        "{cancel}"
    );
    assert_eq!(cancel["result"]["isError"], false);
    let result = s.ask_json(&modern(
        5,
        "tools/call",
        job_params("job_result", &long),
        false,
    ));
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert!(
        text(&result["result"]).contains("was cancelled"),
        "{result}"
    );
    // Cancelling again changes nothing.
    let again = s.ask_json(&modern(
        6,
        "tools/call",
        job_params("job_cancel", &long),
        false,
    ));
    assert_eq!(again["result"]["structuredContent"]["status"], "cancelled");

    // A client of the extension still gets a real task, unchanged.
    let task = s.ask_json(&modern(
        7,
        "tools/call",
        call_params("slowEcho", json!({"_1": 300})),
        true,
    ));
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    assert!(task["result"]["taskId"].is_string());
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

fn post(
    client: &mut Client,
    body: &Value,
    session: Option<&str>,
    auth: Option<&str>,
) -> (u16, Value) {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let name = body["params"]["name"].as_str().unwrap_or("").to_string();
    let mut headers: Vec<(&str, &str)> = Vec::new();
    if session.is_none() {
        headers.extend([("MCP-Protocol-Version", MODERN), ("Mcp-Method", &method)]);
        if !name.is_empty() {
            headers.push(("Mcp-Name", &name));
        }
        if let Some(job) = body["params"]["arguments"]["job_id"].as_str() {
            headers.push(("Mcp-Param-Job-Id", job));
        }
    }
    let bearer = auth.map(|t| format!("Bearer {t}"));
    if let Some(b) = &bearer {
        headers.push(("Authorization", b));
    }
    let request = post_request(client.addr, session, body.to_string().as_bytes(), &headers);
    let response = client.roundtrip(&request);
    (response.status, response.json())
}

#[test]
fn over_http_jobs_serve_legacy_sessions_and_stay_with_their_owner() {
    let server = HttpServer::start(&["--job-tools", "--task-after", "0", "--instance-id", "ha"]);
    // A legacy session: without authentication it owns its jobs, whatever
    // `Authorization` its requests carry.
    let (mut c, sid) = server.session();
    let sid = Some(sid.as_str());
    let (status, handle) = post(
        &mut c,
        &legacy(
            1,
            "tools/call",
            call_params("main__slowEcho", json!({"_1": 300})),
        ),
        sid,
        Some("a"),
    );
    assert_eq!(status, 200, "{handle}");
    let job = job_of(&handle);
    assert!(
        job.starts_with("ha."),
        "the instance prefix routes it: {job}"
    );
    assert!(text(&handle["result"]).contains("The call to 'main__slowEcho'"));
    let done = poll_result(&mut |m| post(&mut c, m, sid, Some("b")).1, &|id| {
        legacy(id, "tools/call", job_params("job_result", &job))
    });
    assert_eq!(
        done,
        json!({"content": [{"type": "text", "text": "300"}], "isError": false})
    );
    // Another session does not see it, nor a modern request (no session).
    let (mut other, other_sid) = server.session();
    let (status, foreign) = post(
        &mut other,
        &legacy(2, "tools/call", job_params("job_status", &job)),
        Some(&other_sid),
        Some("a"),
    );
    assert_eq!(status, 200);
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");
    assert!(text(&foreign["result"]).contains("belongs to another owner"));
    let mut m = server.connect();
    let (status, foreign) = post(
        &mut m,
        &modern(3, "tools/call", job_params("job_result", &job), false),
        None,
        Some("a"),
    );
    assert_eq!(status, 200, "{foreign}");
    assert_eq!(foreign["result"]["isError"], true, "{foreign}");
    // A modern call over HTTP becomes a job of its peer's address; only
    // that address cancels it.
    let (_, handle) = post(
        &mut m,
        &modern(
            5,
            "tools/call",
            call_params("main__slowEcho", json!({"_1": 20_000})),
            false,
        ),
        None,
        Some("a"),
    );
    let long = job_of(&handle);
    let mut elsewhere = Client::connect_from(server.addr, 2);
    let (_, refused) = post(
        &mut elsewhere,
        &modern(6, "tools/call", job_params("job_cancel", &long), false),
        None,
        Some("a"),
    );
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let (_, cancel) = post(
        &mut m,
        &modern(7, "tools/call", job_params("job_cancel", &long), false),
        None,
        Some("b"),
    );
    assert_eq!(
        cancel["result"]["structuredContent"]["status"], "cancelled",
        "{cancel}"
    );
    // A modern job tool's call mirrors its job id in Mcp-Param-Job-Id (what
    // a balancer routes on): missing or different, it is refused.
    let body = modern(8, "tools/call", job_params("job_status", &long), false);
    let base = [
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "job_status"),
        ("Authorization", "Bearer a"),
    ];
    for header in [None, Some("ha.other")] {
        let mut headers = base.to_vec();
        headers.extend(header.map(|h| ("Mcp-Param-Job-Id", h)));
        let request = post_request(m.addr, None, body.to_string().as_bytes(), &headers);
        let response = m.roundtrip(&request);
        let refused = response.json();
        assert_eq!(response.status, 400, "{refused}");
        assert_eq!(refused["error"]["code"], -32020, "{refused}");
        assert!(refused["error"]["message"]
            .as_str()
            .is_some_and(|t| t.contains("Mcp-Param-Job-Id")));
    }
    let list = post(
        &mut m,
        &modern(9, "tools/list", json!({}), false),
        None,
        None,
    )
    .1;
    let status_tool = list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "job_status"))
        .cloned()
        .expect("job_status listed");
    assert_eq!(
        status_tool["inputSchema"]["properties"]["job_id"]["x-mcp-header"],
        "Job-Id"
    );
}

/// A job's long result (held apart by the task table, written from it as
/// the client reads) reads over HTTP as it would whole: its text, and for
/// a modern caller its `structuredContent`, whatever the request id holds.
#[test]
fn over_http_a_long_job_result_is_whole_in_either_era() {
    const CHARS: u64 = 100_000;
    let server = HttpServer::start(&["--job-tools", "--task-after", "0"]);
    let mut m = server.connect();
    let call = modern(
        1,
        "tools/call",
        call_params("main__bigText", json!({"_1": CHARS})),
        false,
    );
    let job = job_of(&post(&mut m, &call, None, None).1);
    let done = poll_result(&mut |msg| post(&mut m, msg, None, None).1, &|id| {
        let mut request = modern(id, "tools/call", job_params("job_result", &job), false);
        request["id"] = json!(format!("\u{0}morloc-mcp:task-text\u{0}{id}"));
        request
    });
    assert_big_text(text(&done), CHARS);
    assert_eq!(done["structuredContent"], json!("x".repeat(CHARS as usize)));
    assert_eq!(done["resultType"], "complete", "{}", done["_meta"]);
    let (mut c, sid) = server.session();
    let sid = Some(sid.as_str());
    let call = legacy(
        2,
        "tools/call",
        call_params("main__bigText", json!({"_1": CHARS})),
    );
    let job = job_of(&post(&mut c, &call, sid, None).1);
    let done = poll_result(&mut |msg| post(&mut c, msg, sid, None).1, &|id| {
        legacy(id, "tools/call", job_params("job_result", &job))
    });
    assert_big_text(text(&done), CHARS);
    assert_eq!(done["isError"], false);
    assert!(
        done.get("structuredContent").is_none(),
        "the reference's shape"
    );
}

#[test]
fn without_the_flag_nothing_changes() {
    let mut s = start(&["--task-after", "0"], None);
    initialize(&mut s);
    let list = s.ask_json(&legacy(1, "tools/list", json!({})));
    let names = list["result"]["tools"].to_string();
    assert!(!names.contains("job_"), "{names}");
    let sync = s.ask_json(&legacy(
        2,
        "tools/call",
        call_params("slowEcho", json!({"_1": 300})),
    ));
    assert_eq!(
        sync["result"],
        json!({"content": [{"type": "text", "text": "300"}], "isError": false})
    );
    let unknown = s.ask_json(&legacy(3, "tools/call", job_params("job_status", "i0.x")));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

#[test]
fn the_flag_adds_tools_and_widens_output_schemas_and_nothing_else() {
    let manifest_dir = TempDir::new();
    let manifest = util::shapes_manifest(&manifest_dir);
    let list = |extra: &[&str]| {
        let mut s = Lines::mcp(&manifest, extra, &[], None);
        initialize(&mut s);
        let list = s.ask_json(&legacy(1, "tools/list", json!({})));
        s.proc.close_stdin();
        s.proc.wait(TIMEOUT);
        list["result"]["tools"].as_array().expect("tools").clone()
    };
    let plain = list(&["--lazy-pools"]);
    let jobs = list(&["--lazy-pools", "--job-tools"]);
    assert_eq!(jobs.len(), plain.len() + 3);
    let mut widened = 0;
    for (before, after) in plain.iter().zip(&jobs) {
        match before.get("outputSchema") {
            None => assert_eq!(before, after),
            Some(schema) => {
                widened += 1;
                assert_eq!(after["outputSchema"]["anyOf"][0], *schema, "{after}");
                assert_eq!(after["outputSchema"]["type"], "object");
                assert_eq!(after["outputSchema"]["anyOf"][1]["required"][0], "jobId");
            }
        }
    }
    assert!(widened > 0, "the shapes program has record results");
}

#[test]
fn a_tool_named_as_a_job_tool_stops_the_start_unless_renamed() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest_with(&dir, |m| {
        let commands = m["commands"].as_array_mut().expect("commands");
        let slow = commands
            .iter_mut()
            .find(|c| c["name"] == "slowEcho")
            .expect("slowEcho");
        slow["name"] = json!("job_status");
    });
    let out = util::output(util::cmd(["mcp"]).arg(&manifest).arg("--job-tools"));
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr
            .contains("a tool is named 'job_status', as one of the job tools of --job-tools")
            && out.stderr.contains("rename its command in the tools file"),
        "{}",
        out.stderr
    );
    // Without the flag the name is free.
    let mut s = Lines::mcp(&manifest, &["--lazy-pools"], &[], None);
    initialize(&mut s);
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
    // Renamed by the tools file, it serves; a tools file that brings the
    // clash back on reload keeps the previous build.
    let file = dir.join("morloc-mcp-tools.json");
    std::fs::write(
        &file,
        r#"{"tools": {"job_status": {"name": "echo_slowly"}}}"#,
    )
    .unwrap();
    // Not a test of the job threshold: the call never becomes a job.
    let mut s = Lines::mcp(
        &manifest,
        &["--lazy-pools", "--job-tools", "--task-after", NEVER],
        &[],
        None,
    );
    initialize(&mut s);
    let reply = s.ask_json(&legacy(
        1,
        "tools/call",
        call_params("echo_slowly", json!({"_1": 5})),
    ));
    assert_eq!(reply["result"]["content"][0]["text"], "5", "{reply}");
    dir.write(
        "next.json",
        r#"{"tools": {"job_status": {"title": "Slow"}}}"#,
    );
    std::fs::rename(dir.join("next.json"), &file).unwrap();
    wait_for("the reload refused", || {
        s.proc
            .stderr_now()
            .contains("still serving the previous build")
    });
    s.quiet();
    let reply = s.ask_json(&legacy(
        2,
        "tools/call",
        call_params("echo_slowly", json!({"_1": 6})),
    ));
    assert_eq!(reply["result"]["content"][0]["text"], "6", "{reply}");
    let done = s.finish();
    assert!(
        done.stderr.contains("a tool is named 'job_status'"),
        "{}",
        done.stderr
    );
}

#[test]
fn a_finished_job_survives_a_restart_with_a_task_dir() {
    let store = TempDir::new();
    let dir = store.path().join("tasks");
    let dir_arg = dir.to_string_lossy().to_string();
    let args = [
        "--job-tools",
        "--task-after",
        "0",
        "--task-dir",
        dir_arg.as_str(),
    ];
    let manifest_dir = TempDir::new();
    let manifest = util::shapes_manifest(&manifest_dir);
    let mut s = Lines::mcp(&manifest, &args, &[], None);
    let handle = s.ask_json(&modern(
        1,
        "tools/call",
        call_params("slowEcho", json!({"_1": 100})),
        false,
    ));
    let job = job_of(&handle);
    let done = poll_result(&mut |m| s.ask_json(m), &|id| {
        modern(id, "tools/call", job_params("job_result", &job), false)
    });
    assert_eq!(done["content"][0]["text"], "100", "{done}");
    s.proc.signal(libc::SIGTERM);
    s.proc.wait(TIMEOUT);
    assert!(
        dir.join(format!("{job}.json")).exists(),
        "the job is a task file"
    );

    let mut again = Lines::mcp(&manifest, &args, &[], None);
    let got = again.ask_json(&modern(
        2,
        "tools/call",
        job_params("job_result", &job),
        false,
    ));
    assert_eq!(got["result"], done, "the same result after a restart");
    again.proc.close_stdin();
    again.proc.wait(TIMEOUT);
}

/// With `--auth-token`, the token's holders are one owner in both eras: a
/// job started in a legacy session is read by a modern request.
#[test]
fn with_a_token_a_job_is_its_holders_in_either_era() {
    let server = HttpServer::start(&["--job-tools", "--task-after", "0", "--auth-token", "t"]);
    let mut c = server.connect();
    let init = post_request(
        c.addr,
        None,
        crate::support::http::initialize_message(1)
            .to_string()
            .as_bytes(),
        &[("Authorization", "Bearer t")],
    );
    let sid = c
        .roundtrip(&init)
        .header("mcp-session-id")
        .expect("a session")
        .to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let auth = [("Authorization", "Bearer t")];
    let note = post_request(c.addr, Some(&sid), note.to_string().as_bytes(), &auth);
    assert_eq!(c.roundtrip(&note).status, 202);
    let call = legacy(
        2,
        "tools/call",
        call_params("main__slowEcho", json!({"_1": 100})),
    );
    let (status, handle) = post(&mut c, &call, Some(&sid), Some("t"));
    assert_eq!(status, 200, "{handle}");
    let job = job_of(&handle);
    let mut m = Client::connect_from(server.addr, 2);
    let done = poll_result(&mut |msg| post(&mut m, msg, None, Some("t")).1, &|id| {
        modern(id, "tools/call", job_params("job_result", &job), false)
    });
    assert_eq!(done["content"][0]["text"], "100", "{done}");
}
