//! The job tools' pure parts: definitions, argument checks, the handle and
//! status texts and objects, and the widening of output schemas.

use serde_json::{json, Value as Json};

use super::*;
use crate::protocol::mcp::tasks::{Outcome, Tasks};

const T0: u64 = 1_700_000_000_000;

fn table_with(outcome: Option<Outcome>) -> (Tasks, String) {
    let mut table = Tasks::new(60_000, 16);
    let id = "i1.00112233445566778899aabbccddeeff".to_string();
    table
        .create(id.clone(), "Bearer a", T0, T0 - 1500)
        .expect("room");
    if let Some(outcome) = outcome {
        table.settle(&id, outcome, T0 + 2000);
    }
    (table, id)
}

fn text_of(result: &Json) -> &str {
    result["content"][0]["text"].as_str().expect("a text block")
}

#[test]
fn the_three_tools_are_described_with_schemas_and_true_hints() {
    let tools = tools();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, NAMES);
    for tool in &tools {
        let input = &tool["inputSchema"];
        assert_eq!(input["required"], json!([ARG]), "{tool}");
        assert_eq!(input["properties"][ARG]["type"], "string");
        assert_eq!(input["additionalProperties"], false);
        assert!(tool["description"].as_str().unwrap().len() > 40);
        assert_eq!(tool["annotations"]["title"], tool["title"]);
        assert_eq!(tool["annotations"]["openWorldHint"], false);
    }
    let hint = |i: usize, h: &str| tools[i]["annotations"].get(h).cloned();
    assert_eq!(hint(0, "readOnlyHint"), Some(json!(true)));
    assert_eq!(hint(1, "readOnlyHint"), Some(json!(true)));
    assert_eq!(hint(2, "readOnlyHint"), Some(json!(false)));
    assert_eq!(hint(2, "destructiveHint"), Some(json!(true)));
    // job_result returns whatever the call returned: no schema of its own.
    assert!(tools[1].get("outputSchema").is_none());
    assert_eq!(tools[0]["outputSchema"]["required"][0], "jobId");
}

#[test]
fn the_job_id_argument_is_checked_with_messages_that_name_the_fix() {
    let ok = json!({"job_id": "i1.abc"});
    assert_eq!(job_id(JobMethod::Status, Some(&ok)), Ok("i1.abc".into()));
    let cases = [
        (
            None,
            "missing argument 'job_id' (the arguments of 'job_result': job_id)",
        ),
        (
            Some(json!({})),
            "missing argument 'job_id' (the arguments of 'job_result': job_id)",
        ),
        (
            Some(json!([1])),
            "the arguments of 'job_result' must be an object, got [1]",
        ),
        (
            Some(json!({"job_id": "x", "id": 1})),
            "unknown argument 'id' (the arguments of 'job_result': job_id)",
        ),
        (
            Some(json!({"job_id": 7})),
            "argument 'job_id' must be a job id (a non-empty string), got 7",
        ),
        (
            Some(json!({"job_id": ""})),
            "argument 'job_id' must be a job id (a non-empty string), got \"\"",
        ),
    ];
    for (args, message) in cases {
        assert_eq!(
            job_id(JobMethod::Result, args.as_ref()),
            Err(message.to_string())
        );
    }
    assert_eq!(JobMethod::from_name("job_cancel"), Some(JobMethod::Cancel));
    assert_eq!(JobMethod::from_name("job_statu"), None);
    for name in NAMES {
        assert_eq!(JobMethod::from_name(name).map(JobMethod::name), Some(name));
    }
}

#[test]
fn a_handle_says_what_to_call_next_in_text_and_structure() {
    let (table, id) = table_with(None);
    let task = table.by_id(&id).unwrap();
    let handle = handle_result(task, "slowEcho", 60_000, T0 + 500);
    assert_eq!(handle["isError"], false);
    let text = text_of(&handle);
    assert!(text.contains("The call to 'slowEcho'"), "{text}");
    assert!(
        text.contains(&format!("as job {id} (running for 2.0 s)")),
        "{text}"
    );
    assert!(
        text.contains(&format!("job_result with {{\"job_id\": \"{id}\"}}")),
        "{text}"
    );
    assert!(text.contains("This is not its result"), "{text}");
    assert!(text.contains("kept for 60 s"), "{text}");
    let short = handle_result(task, "slowEcho", 1500, T0 + 500);
    assert!(text_of(&short).contains("kept for 1.5 s"), "{short}");
    let s = &handle["structuredContent"];
    assert_eq!(s["jobId"], json!(id));
    assert_eq!(s["status"], "working");
    assert_eq!(s["pollIntervalMs"], 1000);
    assert_eq!(s["ttlMs"], 60_000);
    assert_eq!(s["createdAt"], "2023-11-14T22:13:20.000Z");
    assert!(s.get("taskId").is_none());
}

#[test]
fn job_result_gives_the_calls_own_result_its_status_or_a_tool_error() {
    let done = json!({"content": [{"type": "text", "text": "3000"}], "isError": false});
    let (table, id) = table_with(Some(Outcome::Completed(done.clone())));
    let task = table.by_id(&id).unwrap();
    assert_eq!(result_of(task, 60_000, T0 + 3000, true), done);
    assert!(text_of(&status_result(task, 60_000, T0 + 3000)).contains("has completed"));

    let (table, id) = table_with(None);
    let working = result_of(table.by_id(&id).unwrap(), 60_000, T0, true);
    assert_eq!(working["isError"], false, "a running job is not an error");
    assert_eq!(working["structuredContent"]["status"], "working");

    let (table, id) = table_with(Some(Outcome::Failed(-32603, "pool 'py' died".into())));
    let failed = result_of(table.by_id(&id).unwrap(), 60_000, T0, true);
    assert_eq!(failed, error_result("pool 'py' died"));

    let (table, id) = table_with(Some(Outcome::Cancelled));
    let cancelled = result_of(table.by_id(&id).unwrap(), 60_000, T0, true);
    assert_eq!(cancelled["isError"], true);
    assert!(text_of(&cancelled).contains("was cancelled"));

    let unknown = unknown_job("i9.x");
    assert_eq!(unknown["isError"], true);
    assert!(text_of(&unknown).starts_with("unknown job 'i9.x'"));
}

#[test]
fn output_schemas_widen_to_accept_a_handle_and_keep_their_refs() {
    let record = json!({"type": "object", "properties": {"x": {"type": "integer"}},
        "required": ["x"], "additionalProperties": false});
    let wide = widen_output_schema(&record);
    assert_eq!(
        wide["type"], "object",
        "legacy revisions need an object root"
    );
    assert_eq!(wide["anyOf"][0], record);
    assert_eq!(wide["anyOf"][1]["required"][0], "jobId");

    let recursive = json!({"$schema": "d", "$ref": "#/$defs/T", "$defs": {"T": {"type": "array"}}});
    let wide = widen_output_schema(&recursive);
    assert_eq!(wide["$schema"], "d");
    assert_eq!(wide["$defs"], json!({"T": {"type": "array"}}));
    assert_eq!(wide["anyOf"][0], json!({"$ref": "#/$defs/T"}));
    assert!(
        wide.get("type").is_none(),
        "an array schema gets no object root"
    );

    let tool = json!({"name": "f", "inputSchema": {}});
    assert_eq!(widen_tool(&tool), tool, "no outputSchema, nothing to widen");
}

#[test]
fn a_tool_named_as_a_job_tool_is_a_clash_naming_the_fix() {
    let message = clash("job_result").expect("a clash");
    assert!(message.contains("'job_result'"), "{message}");
    assert!(message.contains("tools file"), "{message}");
    assert_eq!(clash("main__job_result"), None);
    assert_eq!(clash("job"), None);
}

#[test]
fn the_job_id_header_must_mirror_the_body() {
    assert_eq!(check_param_header("i1.ab", Some("i1.ab")), Ok(()));
    assert_eq!(
        check_param_header("i1.ab", Some("=?base64?aTEuYWI=?=")),
        Ok(())
    );
    let missing = check_param_header("i1.ab", None).unwrap_err();
    assert_eq!(
        missing,
        "header mismatch: missing Mcp-Param-Job-Id header (the body has arguments.job_id)"
    );
    let other = check_param_header("i1.ab", Some("i2.ab")).unwrap_err();
    assert!(
        other.contains("'i2.ab' does not match body value 'i1.ab'"),
        "{other}"
    );
    let broken = check_param_header("i1.ab", Some("=?base64?%%?=")).unwrap_err();
    assert!(broken.contains("is not valid Base64"), "{broken}");
    // Only the modern surface names the header.
    let modern = modern_tools(std::iter::empty());
    for tool in &modern {
        assert_eq!(
            tool["inputSchema"]["properties"][ARG]["x-mcp-header"],
            PARAM_HEADER
        );
    }
    assert!(tools()[0]["inputSchema"]["properties"][ARG]
        .get("x-mcp-header")
        .is_none());
}
