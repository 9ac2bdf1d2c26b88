//! Tools files end to end: a curated surface served over stdio (renamed tool
//! and argument, title, hints, a hidden tool), found beside the manifest or
//! given with `--tools-file`, reloaded when it changes, refused at start-up
//! and on reload with a message naming the problem, and `tools --template`.

use serde_json::{json, Value};

use crate::support::stdio::Lines;
use crate::util::{self, wait_for, TempDir};

const CURATED: &str = r#"{"tools": {
  "addOne": {"name": "add_one", "title": "Add one", "annotations": {"readOnlyHint": true},
             "arguments": {"_1": {"name": "n", "description": "The number."}}},
  "slowEcho": {"hidden": true}
}}"#;

fn initialize(s: &mut Lines) {
    let init = s.ask_json(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    assert!(init.get("result").is_some(), "{init}");
    s.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
}

fn tool<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == name))
}

fn call(s: &mut Lines, id: u64, name: &str, arguments: Value) -> Value {
    s.ask_json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}}))
}

#[test]
fn a_tools_file_beside_the_manifest_curates_the_served_tools() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    dir.write("morloc-mcp-tools.json", CURATED);
    let mut s = Lines::mcp(&manifest, &["--lazy-pools"], &[], None);
    initialize(&mut s);
    let list = s.ask_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    let add = tool(&list, "add_one").expect("the renamed tool is listed");
    assert_eq!(add["title"], "Add one");
    assert_eq!(
        add["annotations"],
        json!({"title": "Add one", "readOnlyHint": true})
    );
    assert_eq!(
        add["inputSchema"]["properties"]["n"]["description"],
        "The number."
    );
    assert!(tool(&list, "addOne").is_none());
    assert!(tool(&list, "slowEcho").is_none());
    let reply = call(&mut s, 2, "add_one", json!({"n": 41}));
    assert_eq!(reply["result"]["content"][0]["text"], "42", "{reply}");
    let hidden = call(&mut s, 3, "slowEcho", json!({"_1": 1}));
    assert!(hidden.get("error").is_some(), "{hidden}");
    s.finish();
}

#[test]
fn a_changed_tools_file_is_reloaded_and_a_broken_one_keeps_the_old_tools() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let file = dir.join("curation.json");
    std::fs::write(&file, CURATED).unwrap();
    let given = file.display().to_string();
    let mut s = Lines::mcp(
        &manifest,
        &["--lazy-pools", "--tools-file", &given],
        &[],
        None,
    );
    initialize(&mut s);
    let list = s.ask_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert!(tool(&list, "add_one").is_some(), "{list}");

    // A new version: written aside and moved in, as an editor saves.
    dir.write(
        "curation.json.next",
        r#"{"tools": {"addOne": {"name": "plus_one"}}}"#,
    );
    std::fs::rename(dir.join("curation.json.next"), &file).unwrap();
    let note = s.json();
    assert_eq!(note["method"], "notifications/tools/list_changed", "{note}");
    let list = s.ask_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert!(tool(&list, "plus_one").is_some(), "{list}");
    assert!(tool(&list, "slowEcho").is_some(), "{list}");
    // The log says what changed: the tools file, not the program. Its line
    // and the notification leave in one turn, by two pipes: wait for it.
    let reloaded = format!("the tools file {given} was reloaded; now serving");
    wait_for("the reload's line on stderr", || {
        s.proc.stderr_now().contains(&reloaded)
    });
    let stderr = s.proc.stderr_now();
    assert!(!stderr.contains("was rebuilt"), "{stderr}");
    // The old names answer with the new one.
    let old = call(&mut s, 21, "addOne", json!({"_1": 1}));
    assert!(
        old.to_string().contains(
            "unknown tool 'addOne': the tools file renamed it 'plus_one'; call 'plus_one'"
        ),
        "{old}"
    );

    // A file naming a command the program lacks: the old tools stay.
    dir.write(
        "curation.json.next",
        r#"{"tools": {"plusOne": {"title": "x"}}}"#,
    );
    std::fs::rename(dir.join("curation.json.next"), &file).unwrap();
    wait_for("the report of the bad tools file", || {
        s.proc
            .stderr_now()
            .contains("still serving the previous build")
    });
    s.quiet();
    let reply = call(&mut s, 3, "plus_one", json!({"_1": 1}));
    assert_eq!(reply["result"]["content"][0]["text"], "2", "{reply}");
    let done = s.finish();
    assert!(
        done.stderr
            .contains("tools.plusOne: the program has no command 'plusOne' (its tools: addOne,"),
        "{}",
        done.stderr
    );
}

#[test]
fn a_broken_tools_file_stops_the_start_with_its_reason() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    dir.write(
        "morloc-mcp-tools.json",
        r#"{"tools": {"addOne": {"arguments": {"_2": {"description": "no such"}}}}}"#,
    );
    let out = util::output(util::cmd(["mcp"]).arg(&manifest));
    assert_ne!(out.code, Some(0), "{out:?}");
    assert!(
        out.stderr.contains(
            "morloc-mcp-tools.json': tools.addOne.arguments._2: tool 'addOne' has no argument '_2' (its arguments: _1)"
        ),
        "{}",
        out.stderr
    );
    // A tools file given on the command line must exist.
    let missing = util::output(
        util::cmd(["mcp"])
            .arg(&manifest)
            .args(["--tools-file", "/nonexistent/tools.json"]),
    );
    assert_ne!(missing.code, Some(0), "{missing:?}");
    assert!(
        missing
            .stderr
            .contains("cannot read tools file '/nonexistent/tools.json'"),
        "{}",
        missing.stderr
    );
}

#[test]
fn the_template_lists_every_tool_and_changes_nothing_until_edited() {
    let dir = TempDir::new();
    let manifest = util::shapes_manifest(&dir);
    let target = manifest.display().to_string();
    let template = util::output(&mut util::cmd(["tools", &target, "--template"]));
    assert_eq!(template.code, Some(0), "{template:?}");
    let file: Value = serde_json::from_str(&template.stdout).unwrap();
    assert_eq!(file["tools"]["addOne"]["title"], Value::Null);
    assert_eq!(file["tools"]["addOne"]["arguments"]["_1"]["name"], "_1");
    let plain = util::output(&mut util::cmd(["tools", &target]));
    dir.write("morloc-mcp-tools.json", template.stdout);
    let curated = util::output(&mut util::cmd(["tools", &target]));
    assert_eq!(curated.code, Some(0), "{curated:?}");
    assert_eq!(curated.stdout, plain.stdout);
}
