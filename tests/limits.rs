//! Issue 34: limits that keep one client or one file from locking others
//! out. A tools file past its cap (4 MiB) is refused by name, at start and
//! on reload (the previous configuration keeps serving).

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::http::{request, write_manifest, Server};
use crate::util::{cmd, wait_for, Proc, TempDir};

/// A tools file just over the cap: valid JSON, so only its size refuses it.
fn oversized_tools_file() -> String {
    let description = "x".repeat(4 * 1024 * 1024);
    json!({"tools": {"addOne": {"description": description}}}).to_string()
}

fn titles(server: &Server) -> Vec<Value> {
    let (mut client, sid) = server.session();
    let reply = client
        .post(Some(&sid), &request(2, "tools/list"))
        .expect(200);
    let tools = reply.json()["result"]["tools"].clone();
    let tools = tools.as_array().cloned().unwrap_or_default();
    tools.iter().map(|t| t["title"].clone()).collect()
}

#[test]
fn a_tools_file_past_its_cap_is_refused_at_start_naming_it() {
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "m.json", "main", |_| {});
    let tools = dir.write("tools.json", oversized_tools_file());
    let mut proc = Proc::spawn(&mut cmd([
        "mcp".into(),
        manifest.into_os_string(),
        "--tools-file".into(),
        tools.clone().into_os_string(),
    ]));
    assert!(!proc.wait(Duration::from_secs(30)).success());
    let stderr = proc.stderr_text(Duration::from_secs(10));
    let named = format!("cannot read tools file '{}'", tools.display());
    assert!(stderr.contains(&named), "{stderr}");
    assert!(
        stderr.contains("more than the cap of 4194304 bytes (4 MiB)"),
        "{stderr}"
    );
}

#[test]
fn a_tools_file_past_its_cap_on_reload_keeps_the_previous_one() {
    let dir = TempDir::new();
    let file = dir.write(
        "tools.json",
        r#"{"tools": {"addOne": {"title": "Add one"}}}"#,
    );
    let given = file.display().to_string();
    let server = Server::start(&["--tools-file", &given]);
    assert!(titles(&server).contains(&json!("Add one")));
    dir.write("tools.json.next", oversized_tools_file());
    std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
    wait_for("the refused reload", || {
        server
            .proc
            .stderr_now()
            .contains("still serving the previous build")
    });
    let stderr = server.proc.stderr_now();
    assert!(stderr.contains(&given), "{stderr}");
    assert!(stderr.contains("(4 MiB)"), "{stderr}");
    assert!(titles(&server).contains(&json!("Add one")));
}
