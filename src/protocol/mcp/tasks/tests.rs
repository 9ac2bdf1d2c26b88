//! Unit tests of the task table: the state machine, owners, expiry, the cap,
//! restored tasks, the capability check and the timestamps.

use serde_json::json;

use super::*;
use crate::format::json::page::Form;
use crate::protocol::mcp::structured;

const HOUR: u64 = 3_600_000;

#[test]
fn a_task_settles_once_and_expires_after_its_ttl() {
    let mut t = Tasks::new(1000, 8);
    t.create("a".into(), "me", 10_000, 10_000).unwrap();
    let got = t.get("a", "me", 10_500).unwrap();
    assert_eq!(got.status, Status::Working);
    let j = task_json(got, t.ttl_ms(), 12_000);
    assert_eq!(j["statusMessage"], "running for 2.0 s");
    assert_eq!(j["ttlMs"], 1000);
    assert!(j.get("result").is_none());
    let result = json!({"content": [{"type": "text", "text": "42"}], "isError": false});
    t.settle("a", Outcome::Completed(result.clone()), 13_000)
        .unwrap();
    // A late second outcome (e.g. a cancel racing the result) changes nothing.
    assert!(t.settle("a", Outcome::Cancelled, 13_100).is_none());
    let got = t.get("a", "me", 13_500).unwrap();
    let j = task_json(got, t.ttl_ms(), 13_500);
    assert_eq!(j["status"], "completed");
    assert_eq!(j["result"], result);
    // TTL counts from creation: 3 s of running + 1 s kept.
    assert_eq!(j["ttlMs"], 4000);
    assert_eq!(t.next_expiry(), Some(14_000));
    assert_eq!(t.get("a", "me", 14_000), Err(TaskError::Unknown));
    assert_eq!(t.expire(14_000), vec!["a".to_string()]);
    assert!(t.is_empty());
}

#[test]
fn a_task_is_seen_only_by_its_owner() {
    let mut t = Tasks::new(HOUR, 8);
    t.create("a".into(), "token-1", 0, 0).unwrap();
    assert!(t.get("a", "token-1", 1).is_ok());
    assert_eq!(t.get("a", "token-2", 1), Err(TaskError::Unknown));
    assert_eq!(t.get("b", "token-1", 1), Err(TaskError::Unknown));
}

#[test]
fn failures_inline_a_json_rpc_error_and_tool_errors_complete() {
    let mut t = Tasks::new(HOUR, 8);
    t.create("f".into(), "", 0, 0).unwrap();
    t.settle("f", Outcome::Failed(-32603, "pool 'py' died".into()), 5);
    let j = task_json(t.get("f", "", 6).unwrap(), HOUR, 6);
    assert_eq!(j["status"], "failed");
    assert_eq!(
        j["error"],
        json!({"code": -32603, "message": "pool 'py' died"})
    );
    assert_eq!(j["statusMessage"], "pool 'py' died");
    assert!(j.get("result").is_none());

    t.create("e".into(), "", 0, 0).unwrap();
    let tool_error = json!({"content": [{"type": "text", "text": "boom"}], "isError": true});
    t.settle("e", Outcome::Completed(tool_error.clone()), 5);
    let j = task_json(t.get("e", "", 6).unwrap(), HOUR, 6);
    assert_eq!(j["status"], "completed");
    assert_eq!(j["result"], tool_error);

    t.create("c".into(), "", 0, 0).unwrap();
    t.settle("c", Outcome::Cancelled, 5);
    let j = task_json(t.get("c", "", 6).unwrap(), HOUR, 6);
    assert_eq!(j["status"], "cancelled");
    assert!(j.get("result").is_none() && j.get("error").is_none());
}

#[test]
fn at_the_cap_the_oldest_settled_task_goes_and_running_ones_stay() {
    let mut t = Tasks::new(HOUR, 2);
    t.create("a".into(), "", 0, 0).unwrap();
    t.create("b".into(), "", 1, 1).unwrap();
    assert_eq!(t.create("c".into(), "", 2, 2).err(), Some(TaskError::Full));
    t.settle("b", Outcome::Cancelled, 3);
    let (_, freed) = t.create("c".into(), "", 4, 4).unwrap();
    // The reactor removes the stored files of the tasks freed.
    assert_eq!(freed, vec!["b".to_string()]);
    assert!(t.get("b", "", 5).is_err());
    assert!(t.get("a", "", 5).is_ok() && t.get("c", "", 5).is_ok());
    assert_eq!(t.len(), 2);
}

#[test]
fn an_owner_only_frees_its_own_tasks() {
    let mut t = Tasks::new(HOUR, 6).with_owner_cap(3);
    t.create("b1".into(), "Bearer b", 0, 0).unwrap();
    t.settle("b1", Outcome::Cancelled, 1);
    // A fills its share; settled or not, its next task frees only its own.
    for n in 0..3u64 {
        let id = format!("a{n}");
        t.create(id.clone(), "Bearer a", 10 + n, 10 + n).unwrap();
        t.settle(&id, Outcome::Cancelled, 20 + n);
    }
    let (_, freed) = t.create("a3".into(), "Bearer a", 30, 30).unwrap();
    assert_eq!(freed, vec!["a0".to_string()]);
    assert!(
        t.get("b1", "Bearer b", 31).is_ok(),
        "B's settled task stays"
    );
    // A's share all running: A gets Full; B still gets its tasks.
    t.create("a4".into(), "Bearer a", 32, 32)
        .unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(t.create("a5".into(), "Bearer a", 33, 33).err(), None);
    for id in ["a3", "a4", "a5"] {
        assert_eq!(
            t.get(id, "Bearer a", 34).map(|x| x.status),
            Ok(Status::Working)
        );
    }
    assert_eq!(
        t.create("a6".into(), "Bearer a", 35, 35).err(),
        Some(TaskError::Full)
    );
    t.create("b2".into(), "Bearer b", 36, 36).unwrap();
    // The table full (6): the owner holding the most gives up a settled
    // task, even though B's settled task is older.
    t.create("c1".into(), "Bearer c", 37, 37).unwrap();
    t.settle("c1", Outcome::Cancelled, 38);
    assert_eq!(t.len(), 6);
    t.settle("a5", Outcome::Cancelled, 39);
    let (_, freed) = t.create("d1".into(), "Bearer d", 40, 40).unwrap();
    assert_eq!(freed, vec!["a5".to_string()]);
    assert!(t.get("b1", "Bearer b", 41).is_ok());
}

/// Two OAuth subjects whose owners collide under FNV-1a 64 (issue 34, row
/// 3; the hash owners were once compared by).
pub(crate) const COLLIDING: [&str; 2] = [
    "oauth https://issuer.test/ mFB_Cswu9_C",
    "oauth https://issuer.test/ Z2GBYbqi8jC",
];

fn fnv1a64(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[test]
fn owners_whose_hashes_collide_are_still_two_owners() {
    let [first, second] = COLLIDING;
    // The test data is what it claims: the two collide under FNV-1a.
    assert_eq!(fnv1a64(first), fnv1a64(second));
    let mut t = Tasks::new(HOUR, 8);
    t.create("a".into(), first, 0, 0).unwrap();
    assert!(t.get("a", first, 1).is_ok());
    assert_eq!(t.get("a", second, 1), Err(TaskError::Unknown));
    let stored = to_stored(t.by_id("a").unwrap());
    assert_eq!(stored["owner"], first, "the owner is stored whole");
    let back = from_stored(stored.to_string().as_bytes()).unwrap();
    assert_eq!(back.owner, first);
}

#[test]
fn a_restored_running_task_is_failed() {
    let mut t = Tasks::new(HOUR, 8);
    let task = Task {
        id: "r".into(),
        owner: String::new(),
        status: Status::Working,
        message: None,
        created_ms: 0,
        started_ms: 0,
        updated_ms: 0,
        expires_ms: None,
        payload: None,
        payload_bytes: 0,
        apart: None,
    };
    t.restore(task, 100);
    let j = task_json(t.get("r", "", 100).unwrap(), HOUR, 100);
    assert_eq!(j["status"], "failed");
    assert_eq!(j["statusMessage"], RESTARTED);
    assert_eq!(j["error"]["code"], -32603);
}

#[test]
fn capability_and_params() {
    let with = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities":
        {"extensions": {"io.modelcontextprotocol/tasks": {}}}}});
    let without = json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}});
    assert!(declared(Some(&with)));
    assert!(!declared(Some(&without)));
    assert!(!declared(None));
    assert_eq!(task_id_param(Some(&json!({"taskId": "x"}))), Ok("x".into()));
    assert!(task_id_param(Some(&json!({"taskId": 3}))).is_err());
    assert!(task_id_param(None).is_err());
}

#[test]
fn timestamps_are_iso8601_utc() {
    assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
    assert_eq!(iso8601(1_795_000_000_000), "2026-11-18T11:06:40.000Z");
}

#[test]
fn a_stored_task_reads_back_and_bad_files_are_named() {
    let mut t = Tasks::new(HOUR, 8);
    t.create("i1.ab".into(), "peer 127.0.0.1", 5, 5).unwrap();
    let result = json!({"content": [], "isError": false});
    let task = t
        .settle("i1.ab", Outcome::Completed(result), 9)
        .unwrap()
        .clone();
    let bytes = to_stored(&task).to_string();
    assert_eq!(from_stored(bytes.as_bytes()), Ok(task.clone()));
    let mut back = Tasks::new(HOUR, 8);
    back.restore(task, 10);
    assert!(back.get("i1.ab", "peer 127.0.0.1", 10).is_ok());
    assert!(back.get("i1.ab", "Bearer y", 10).is_err());
    for (bad, why) in [
        ("[]", "not a JSON object"),
        ("{", "not JSON"),
        (r#"{"taskId":"../x"}"#, "is not a task id"),
        (
            r#"{"taskId":"a.b","owner":"","status":"odd"}"#,
            "unknown 'status'",
        ),
        (
            r#"{"taskId":"a.b","owner":"","status":"working","createdMs":-1}"#,
            "'createdMs' must be",
        ),
    ] {
        let err = from_stored(bad.as_bytes()).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

#[test]
fn creating_a_task_reports_the_expired_ones_it_freed() {
    let mut t = Tasks::new(1000, 8);
    t.create("a".into(), "", 0, 0).unwrap();
    t.settle("a", Outcome::Cancelled, 10);
    let (_, freed) = t.create("b".into(), "", 2000, 2000).unwrap();
    assert_eq!(freed, vec!["a".to_string()]);
}

#[test]
fn a_working_task_counts_its_time_from_the_call_start() {
    let mut t = Tasks::new(HOUR, 8);
    let (task, _) = t.create("a".into(), "", 10_000, 8_500).unwrap();
    let shown = task_json(task, HOUR, 10_700);
    assert_eq!(shown["statusMessage"], "running for 2.2 s");
    // A start in the future (clock skew) counts as the creation.
    let (task, _) = t.create("b".into(), "", 10_000, 12_000).unwrap();
    assert_eq!(task.started_ms, 10_000);
}

/// A finished task's result of `chars` characters of text.
fn text_result(chars: usize) -> Json {
    json!({"content": [{"type": "text", "text": "x".repeat(chars)}], "isError": false})
}

fn settled(t: &mut Tasks, id: &str, owner: &str, chars: usize, at: u64) {
    t.create(id.into(), owner, at, at).unwrap();
    t.settle(id, Outcome::Completed(text_result(chars)), at);
}

#[test]
fn finished_tasks_results_count_toward_their_owners_bytes() {
    let mut t = Tasks::new(HOUR, 64).with_owner_bytes(2_000);
    settled(&mut t, "a1", "a", 800, 1);
    settled(&mut t, "b1", "b", 800, 2);
    let one = json_bytes(&text_result(800));
    assert_eq!(t.bytes_of("a"), one);
    assert_eq!(t.bytes(), 2 * one);
    assert_eq!(t.take_freed(), Freed::default());
    // A second result fits; a third passes a's cap: a's oldest goes, never b's.
    settled(&mut t, "a2", "a", 800, 3);
    settled(&mut t, "a3", "a", 800, 4);
    let freed = t.take_freed();
    assert_eq!(freed.tasks, vec!["a1".to_string()]);
    assert!(t.get("a1", "a", 5).is_err());
    assert!(t.get("b1", "b", 5).is_ok());
    assert_eq!(t.bytes_of("a"), 2 * one);
    assert_eq!(t.most_owner_bytes(), 2 * one);
    // Stored results count with them: storing one frees a's oldest task.
    let value = crate::format::json::page::Paged::new("y".repeat(900));
    t.insert_result("r1".into(), "a", "tool", value, 6);
    assert_eq!(t.take_freed().tasks, vec!["a2".to_string()]);
    assert!(t.bytes_of("a") <= 2_000);
}

#[test]
fn a_finished_result_over_the_owner_cap_alone_is_a_tool_error() {
    let mut t = Tasks::new(HOUR, 8).with_owner_bytes(500);
    settled(&mut t, "a1", "a", 100, 1);
    settled(&mut t, "a2", "a", 5_000, 2);
    let j = task_json(t.get("a2", "a", 3).unwrap(), HOUR, 3);
    assert_eq!(j["result"]["isError"], true);
    let text = j["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("--max-owner-bytes"), "{text}");
    // The refusal is small: the owner's other result stays.
    assert!(t.get("a1", "a", 3).is_ok());
    assert!(t.bytes_of("a") <= 500);
}

/// A long result's text is held apart (answers are written from it), and
/// every way of reading the task whole, its bytes and its file see it as
/// if it were still in place.
#[test]
fn a_long_result_is_held_apart_and_read_whole() {
    let mut t = Tasks::new(HOUR, 8);
    let mut result = text_result(APART_AT);
    result["structuredContent"] = json!("placeholder");
    t.create("a".into(), "o", 1, 1).unwrap();
    t.settle("a", Outcome::Completed(result.clone()), 2);
    settled(&mut t, "b", "o", APART_AT - 1, 3);
    let (a, b) = (t.by_id("a").unwrap(), t.by_id("b").unwrap());
    assert!(b.apart.is_none());
    let held = a.apart.as_ref().expect("held apart");
    assert_eq!(held.text().len(), APART_AT);
    assert_eq!(a.payload.as_ref().unwrap()["content"][0]["text"], "");
    assert_eq!(a.payload_whole().unwrap().into_owned(), result);
    assert_eq!(a.payload_bytes, json_bytes(&result));
    assert_eq!(task_json(a, HOUR, 3)["result"], result);
    let apart = shown(a, HOUR, 3, false);
    assert_eq!(apart["result"]["content"][0]["text"], "");
    assert_eq!(apart["result"]["structuredContent"], "placeholder");
    // Written with the text where `RESULT_IN_GET` says, the answer is the
    // whole one's bytes.
    let id = RequestId::Int("1".into());
    let whole = jsonrpc::result_response(&id, Json::Object(shown(a, HOUR, 3, true)));
    let apart = jsonrpc::result_response(&id, Json::Object(apart));
    let at = structured::Apart {
        at: RESULT_IN_GET,
        len: held.bytes(),
    };
    assert_eq!(filled(&apart, at, held.text()), structured::to_vec(&whole));
    // Its file holds the whole text, and reads back held apart again.
    let stored = to_stored(a);
    assert_eq!(stored["payload"], result);
    let text = crate::format::json::text(&stored);
    let mut again = Tasks::new(HOUR, 8);
    assert!(again.restore(from_stored(text.as_bytes()).unwrap(), 3));
    let back = again.by_id("a").unwrap();
    assert!(back.apart.is_some());
    assert_eq!(back.payload_whole().unwrap().into_owned(), result);
    assert_eq!(back.payload_bytes, json_bytes(&result));
}

/// `msg` written with a text held apart, its spans filled from `text`.
fn filled(msg: &Json, apart: structured::Apart<'_>, text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    for part in structured::parts(msg, apart) {
        match part {
            structured::Part::Bytes(bytes) => out.extend_from_slice(&bytes),
            structured::Part::Text(range, Form::Raw) => {
                out.extend_from_slice(text[range].as_bytes())
            }
            structured::Part::Text(range, _) => {
                crate::format::json::write_str_body_into(&mut out, &text[range])
            }
        }
    }
    out
}
