//! End-to-end tests of the Tasks extension (`io.modelcontextprotocol/tasks`)
//! over stdio and HTTP, with the test pool's sleeping `slowEcho`: a call
//! that outlives `--task-after` becomes a task that is polled to its exact
//! result; cancel; a pool killed mid-task; expiry after `--task-ttl`; the
//! capability gate; and on HTTP the `Mcp-Name` routing header.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{post_request, Client, Server as HttpServer};
use crate::support::stdio::Lines;
use crate::util::{self, wait_until, CallTrace, Stopwatch, TempDir, TIMEOUT};

const MODERN: &str = "2026-07-28";
const EXT: &str = "io.modelcontextprotocol/tasks";

fn request(id: u64, method: &str, mut params: Value, tasks: bool) -> Value {
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

fn call(id: u64, tool: &str, ms: u64, tasks: bool) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {"_1": ms}}),
        tasks,
    )
}

fn task_req(id: u64, method: &str, task: &str) -> Value {
    let mut params = json!({"taskId": task});
    if method == "tasks/update" {
        params["inputResponses"] = json!({});
    }
    request(id, method, params, true)
}

/// The shapes program plus `crashPool` (the test pool's fault 92: the pool
/// process exits mid-call).
fn manifest(dir: &TempDir) -> std::path::PathBuf {
    util::shapes_manifest_with(dir, |m| {
        let commands = m["commands"].as_array_mut().expect("commands");
        let mut crash = commands
            .iter()
            .find(|c| c["name"] == "slowEcho")
            .expect("slowEcho")
            .clone();
        crash["name"] = json!("crashPool");
        crash["mid"] = json!(92);
        commands.push(crash);
    })
}

/// A stdio server of this file's program (the support library's [`Lines`]).
type Stdio = Lines;

/// Starts `mcp <program> <extra...>` with `env`.
#[track_caller]
fn start_env(extra: &[&str], env: &[(&str, std::ffi::OsString)]) -> Stdio {
    let dir = TempDir::new();
    let manifest = manifest(&dir);
    Lines::mcp(&manifest, extra, env, Some(dir))
}

#[track_caller]
fn start(extra: &[&str]) -> Stdio {
    start_env(extra, &[])
}

/// Polls `tasks/get` until the task leaves `working`.
#[track_caller]
fn settle(ask: &mut dyn FnMut(&Value) -> Value, task: &str) -> Value {
    wait_until(format!("task {task} settled"), || {
        let reply = ask(&task_req(900, "tasks/get", task));
        let result = &reply["result"];
        assert_eq!(result["resultType"], "complete", "{reply}");
        assert_eq!(result["taskId"], task, "{reply}");
        (result["status"] != "working").then(|| result.clone())
    })
}

#[test]
fn stdio_tasks_complete_cancel_fail_and_expire() {
    let trace = CallTrace::new();
    let mut s = start_env(
        &["--task-after", "1000", "--task-ttl", "1.5"],
        &[trace.env()],
    );
    // The pool is up (a synchronous call without the extension), so the
    // next call does not wait for its start-up.
    let warm = s.ask_json(&call(20, "slowEcho", 0, false));
    assert_eq!(warm["result"]["content"][0]["text"], "0", "{warm}");
    // A fast call answers normally, even to a client that wants tasks: it
    // takes far less than --task-after.
    let fast = s.ask_json(&call(1, "slowEcho", 0, true));
    assert_eq!(fast["result"]["resultType"], "complete", "{fast}");
    assert_eq!(fast["result"]["content"][0]["text"], "0");

    // A slow call becomes a task after --task-after, while it still runs.
    let started = Stopwatch::start();
    let created = s.ask_json(&call(2, "slowEcho", 3000, true));
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working");
    started.assert_at_least(Duration::from_millis(950), "task handle");
    let running = trace.wait_started("slowEcho", 3);
    assert_eq!(
        running[2].end, None,
        "the call ended before its handle came"
    );
    let task = result["taskId"].as_str().expect("taskId").to_string();
    let (prefix, random) = task.split_once('.').expect("<instance>.<random>");
    assert!(!prefix.is_empty());
    assert_eq!(random.len(), 32, "128 random bits: {task}");
    let now = s.ask_json(&task_req(3, "tasks/get", &task));
    assert_eq!(now["result"]["status"], "working", "{now}");
    // The elapsed time counts from the call's start, --task-after before the
    // task was made, not from the task.
    for shown in [result, &now["result"]] {
        let message = shown["statusMessage"].as_str().unwrap_or_default();
        let secs: f64 = message
            .strip_prefix("running for ")
            .and_then(|m| m.strip_suffix(" s"))
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("statusMessage {message:?}"));
        assert!(
            secs >= 0.95,
            "{message:?} for a call started 1 s before its task"
        );
    }
    assert_eq!(now["result"]["pollIntervalMs"], 1000);
    let done = settle(&mut |m| s.ask_json(m), &task);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"],
        json!({"content": [{"type": "text", "text": "3000"}], "structuredContent": 3000, "isError": false})
    );
    // ttlMs counts from creation: the run time after it plus the 1.5 s kept.
    assert!(done["ttlMs"].as_u64().is_some_and(|t| t >= 3300), "{done}");
    let ack = s.ask_json(&task_req(4, "tasks/update", &task));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");

    // Cancel: acknowledged at once, settled as cancelled, and idempotent.
    let created = s.ask_json(&call(5, "slowEcho", 20_000, true));
    let long = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let ack = s.ask_json(&task_req(6, "tasks/cancel", &long));
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("status").is_none());
    let got = s.ask_json(&task_req(7, "tasks/get", &long));
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    let again = s.ask_json(&task_req(8, "tasks/cancel", &long));
    assert_eq!(again["result"]["resultType"], "complete", "{again}");

    // The completed task is freed once its TTL is over.
    let gone = wait_until("the completed task freed after its TTL", || {
        let reply = s.ask_json(&task_req(9, "tasks/get", &task));
        reply.get("error").is_some().then_some(reply)
    });
    assert_eq!(gone["error"]["code"], -32602, "{gone}");
    assert!(gone["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("unknown task")));

    // Without the extension: synchronous, and tasks/* are refused.
    let sync = s.ask_json(&call(10, "slowEcho", 700, false));
    assert_eq!(sync["result"]["content"][0]["text"], "700", "{sync}");
    assert!(sync["result"].get("taskId").is_none());
    let mut get = task_req(11, "tasks/get", &long);
    get["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let refused = s.ask_json(&get);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    // Pure commands stay synchronous.
    let pure = s.ask_json(&request(
        12,
        "tools/call",
        json!({"name": "pureAnswer", "arguments": {}}),
        true,
    ));
    assert_eq!(pure["result"]["resultType"], "complete", "{pure}");
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

#[test]
fn stdio_a_pool_killed_mid_task_fails_the_task() {
    let mut s = start(&["--task-after", "0"]);
    let created = s.ask_json(&call(1, "crashPool", 1, true));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let failed = settle(&mut |m| s.ask_json(m), &task);
    assert_eq!(failed["status"], "failed", "{failed}");
    assert_eq!(failed["error"]["code"], -32603, "{failed}");
    assert!(failed["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("pool 'py' died")));
    assert!(failed.get("result").is_none());
    // The restarted pool serves the next task.
    let created = s.ask_json(&call(2, "slowEcho", 50, true));
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let done = settle(&mut |m| s.ask_json(m), &task);
    assert_eq!(done["result"]["content"][0]["text"], "50", "{done}");
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

fn post(client: &mut Client, body: &Value, name: Option<&str>, auth: Option<&str>) -> (u16, Value) {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let mut headers: Vec<(&str, &str)> =
        vec![("MCP-Protocol-Version", MODERN), ("Mcp-Method", &method)];
    if let Some(n) = name {
        headers.push(("Mcp-Name", n));
    }
    let bearer = auth.map(|t| format!("Bearer {t}"));
    if let Some(b) = &bearer {
        headers.push(("Authorization", b));
    }
    let request = post_request(client.addr, None, body.to_string().as_bytes(), &headers);
    let response = client.roundtrip(&request);
    (response.status, response.json())
}

#[test]
fn http_tasks_are_created_polled_cancelled_and_routed_by_mcp_name() {
    let server = HttpServer::start(&["--task-after", "0", "--auth-token", "tok"]);
    let mut c = server.connect();
    let auth = Some("tok");
    let (status, discover) = post(
        &mut c,
        &request(1, "server/discover", json!({}), true),
        None,
        auth,
    );
    assert_eq!(status, 200);
    assert_eq!(
        discover["result"]["capabilities"]["extensions"][EXT],
        json!({})
    );
    let (status, created) = post(
        &mut c,
        &call(2, "main__slowEcho", 800, true),
        Some("main__slowEcho"),
        auth,
    );
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    // The routing header must name the task.
    let (status, bad) = post(
        &mut c,
        &task_req(3, "tasks/get", &task),
        Some("other"),
        auth,
    );
    assert_eq!(status, 400, "{bad}");
    assert_eq!(bad["error"]["code"], -32020);
    let (status, bad) = post(&mut c, &task_req(4, "tasks/get", &task), None, auth);
    assert_eq!(status, 400, "{bad}");
    let mut ask = |m: &Value| post(&mut c, m, m["params"]["taskId"].as_str(), auth).1;
    let done = settle(&mut ask, &task);
    assert_eq!(
        done["result"],
        json!({"content": [{"type": "text", "text": "800"}], "structuredContent": 800, "isError": false})
    );
    // A call on a connection that is then closed goes on as a task.
    let mut other = server.connect();
    let (_, created) = post(
        &mut other,
        &call(5, "main__slowEcho", 600, true),
        Some("main__slowEcho"),
        auth,
    );
    let second = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    drop(other);
    let done = settle(&mut ask, &second);
    assert_eq!(done["result"]["content"][0]["text"], "600", "{done}");
    // Cancel over HTTP.
    let (_, created) = post(
        &mut c,
        &call(6, "main__slowEcho", 20_000, true),
        Some("main__slowEcho"),
        auth,
    );
    let long = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let (status, ack) = post(
        &mut c,
        &task_req(7, "tasks/cancel", &long),
        Some(&long),
        auth,
    );
    assert_eq!(status, 200, "{ack}");
    let (_, got) = post(&mut c, &task_req(8, "tasks/get", &long), Some(&long), auth);
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    // Unknown ids (another instance's included) are -32602.
    let foreign = "mm1.00000000000000000000000000000000";
    let (_, unknown) = post(
        &mut c,
        &task_req(9, "tasks/get", foreign),
        Some(foreign),
        auth,
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // No extension declared: a synchronous result.
    let (_, sync) = post(
        &mut c,
        &call(10, "main__slowEcho", 30, false),
        Some("main__slowEcho"),
        auth,
    );
    assert_eq!(sync["result"]["content"][0]["text"], "30", "{sync}");
    assert_eq!(sync["result"]["resultType"], "complete");
}

#[test]
fn stdio_subscribers_hear_a_task_settle() {
    let mut s = start(&["--task-after", "0"]);
    let created = s.ask_json(&call(1, "slowEcho", 600, true));
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let listen = request(
        2,
        "subscriptions/listen",
        json!({"notifications": {"taskIds": [task, "i0.unknown"]}}),
        true,
    );
    let ack = s.ask_json(&listen);
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    // Only the task this caller may see is agreed to.
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task]));
    let note = match s.proc.read_line(TIMEOUT) {
        Some(line) => serde_json::from_str::<Value>(line.trim_end()).expect("JSON"),
        None => panic!("no notification; stderr:\n{}", s.proc.stderr_now()),
    };
    assert_eq!(note["method"], "notifications/tasks", "{note}");
    assert_eq!(note["params"]["taskId"], json!(task));
    assert_eq!(note["params"]["status"], "completed");
    assert_eq!(note["params"]["result"]["content"][0]["text"], "600");
    assert_eq!(
        note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        json!(2)
    );
    // Without the extension, asking for task notifications is refused.
    let mut plain = listen.clone();
    plain["id"] = json!(3);
    plain["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let refused = s.ask_json(&plain);
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}

#[test]
fn task_dir_keeps_results_across_a_restart() {
    let store = TempDir::new();
    let dir = store.path().join("tasks");
    let dir_arg = dir.to_string_lossy().to_string();
    let args = ["--task-after", "0", "--task-dir", dir_arg.as_str()];
    let mut s = start(&args);
    let created = s.ask_json(&call(1, "slowEcho", 100, true));
    let done_id = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let done = settle(&mut |m| s.ask_json(m), &done_id);
    assert_eq!(done["status"], "completed");
    let created = s.ask_json(&call(2, "slowEcho", 30_000, true));
    let running = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    s.proc.signal(libc::SIGTERM);
    s.proc.wait(TIMEOUT);
    // One file per task.
    let files = std::fs::read_dir(&dir).expect("task dir").count();
    assert_eq!(files, 2);

    let mut again = start(&args);
    let got = again.ask_json(&task_req(3, "tasks/get", &done_id));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(got["result"]["result"], done["result"]);
    assert_eq!(got["result"]["result"]["structuredContent"], 100, "{got}");
    let got = again.ask_json(&task_req(4, "tasks/get", &running));
    assert_eq!(got["result"]["status"], "failed", "{got}");
    assert_eq!(
        got["result"]["statusMessage"],
        "the server restarted while the task was running"
    );
    assert_eq!(got["result"]["error"]["code"], -32603);
    again.proc.close_stdin();
    again.proc.wait(TIMEOUT);
}

/// The mode bits of `path`.
fn mode(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    meta.permissions().mode() & 0o777
}

/// Issue 34, row 7: under umask 022, `--task-dir` was 0755 and its files
/// 0644, so every local user could read stored values.
#[test]
fn task_dir_and_its_files_are_private_whatever_the_umask() {
    let store = TempDir::new();
    let dir = store.path().join("deep/tasks");
    let dir_arg = dir.to_string_lossy().to_string();
    let args = [
        "--task-after",
        "0",
        "--max-result-chars",
        "100",
        "--task-dir",
        dir_arg.as_str(),
    ];
    let program = TempDir::new();
    let program_file = manifest(&program);
    let mut command = util::cmd(["mcp"]);
    command.arg(&program_file).args(args);
    util::with_umask(&mut command, 0o022);
    let mut s = Lines::spawn(&mut command, Some(program));
    let created = s.ask_json(&call(1, "slowEcho", 10, true));
    let task = created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    settle(&mut |m| s.ask_json(m), &task);
    let params = json!({"name": "bigList", "arguments": {"_1": 500}});
    let big = s.ask_json(&request(2, "tools/call", params, false));
    assert!(big["result"]["content"][1]["uri"].is_string(), "{big}");
    assert_eq!(mode(&dir), 0o700, "the task directory");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .expect("task dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 2, "a task file and a result file: {files:?}");
    for file in &files {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    let stderr = s.proc.stderr_now();
    assert!(!stderr.contains("open to its group"), "{stderr}");
    s.finish();
    // A directory made open by someone else is used, with a warning.
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let program = TempDir::new();
    let program_file = manifest(&program);
    let mut command = util::cmd(["mcp"]);
    command.arg(&program_file).args(args);
    util::with_umask(&mut command, 0o022);
    let mut again = Lines::spawn(&mut command, Some(program));
    let warned = util::poll_until(|| {
        let stderr = again.proc.stderr_now();
        stderr
            .contains("is open to its group or others (mode 755)")
            .then_some(())
    });
    assert!(warned.is_some(), "{}", again.proc.stderr_now());
    let got = again.ask_json(&task_req(3, "tasks/get", &task));
    assert_eq!(got["result"]["status"], "completed", "{got}");
    again.finish();
}

/// Issue 34, bytes per owner: a finished task's result counts toward its
/// owner's bytes (`--max-owner-bytes`, with stored results): past the cap,
/// the owner's task that finished first is freed; a single result over the
/// cap ends its task with a tool error naming the cap.
#[test]
fn stdio_finished_tasks_results_count_toward_the_owners_bytes() {
    const CHARS: u64 = 1_200_000;
    let mut s = start(&["--task-after", "0", "--max-owner-bytes", "3m"]);
    let mut tasks = Vec::new();
    for id in 1..=3 {
        let created = s.ask_json(&call(id, "bigText", CHARS, true));
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let task = created["result"]["taskId"].as_str().expect("taskId");
        let task = task.to_string();
        let done = settle(&mut |m| s.ask_json(m), &task);
        assert_eq!(done["status"], "completed");
        tasks.push(task);
    }
    // Three results of 1.2 MB pass 3 MiB: the first finished is freed.
    let gone = s.ask_json(&task_req(10, "tasks/get", &tasks[0]));
    assert!(gone.get("error").is_some(), "{gone}");
    for task in &tasks[1..] {
        let kept = s.ask_json(&task_req(11, "tasks/get", task));
        assert_eq!(kept["result"]["status"], "completed", "{kept}");
    }
    let created = s.ask_json(&call(4, "bigText", 4_000_000, true));
    let task = created["result"]["taskId"].as_str().expect("taskId");
    let task = task.to_string();
    let done = settle(&mut |m| s.ask_json(m), &task);
    assert_eq!(done["result"]["isError"], true, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("--max-owner-bytes"), "{text}");
    s.proc.close_stdin();
    s.proc.wait(TIMEOUT);
}
