//! The placeholder's life: marked, settled per era, written raw.

use serde_json::{json, Map, Value as Json};

use super::*;

/// A `CallToolResult` whose text block holds `text`, marked and settled
/// for a modern answer.
fn marked(text: &str, record: bool) -> Json {
    let mut result = Map::new();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    mark(&mut result, record);
    result.insert("isError".into(), Json::Bool(false));
    let mut result = Json::Object(result);
    for_era(&mut result, true);
    result
}

/// The message as a client reads it.
fn parsed(msg: &Json) -> Json {
    let bytes = to_vec(msg);
    assert_eq!(bytes.len(), length(msg));
    serde_json::from_slice(&bytes).expect("the writer writes JSON")
}

#[test]
fn any_value_is_written_raw_beside_its_escaped_text() {
    for text in [
        "[1,2,3]",
        "42",
        "-1.5e300",
        "\"a \\\"quoted\\\" line\\n\\u0001 and é\"",
        "true",
        "null",
        "{}",
        "[]",
        "\"\"",
        r#"{"a":[{"b":{"c":[null,{"d":"}"}]}}],"e":"\\"}"#,
        "123456789012345678901234567890",
    ] {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "result": marked(text, false)});
        let got = parsed(&msg);
        let value: Json = serde_json::from_str(text).unwrap();
        assert_eq!(got["result"][KEY], value, "{text}");
        assert_eq!(got["result"]["content"][0]["text"], text, "{text}");
        // The raw text itself, not a re-serialization.
        let wire = to_string(&msg);
        assert!(wire.contains(&format!(r#""structuredContent":{text},"isError""#)));
    }
}

#[test]
fn keys_keep_their_order_and_messages_without_a_placeholder_are_serde_bytes() {
    let msg = json!({"jsonrpc": "2.0", "id": "x", "result": marked("[1]", false)});
    assert_eq!(
        to_string(&msg),
        r#"{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"[1]"}],"structuredContent":[1],"isError":false}}"#
    );
    let plain = json!({
        "a": {"b": {"c": {"d": {"e": "\u{1}é\"", "f": [1.5, {"g": null}]}}}},
        "structuredContent": "not ours", "k\"ey": []
    });
    assert_eq!(to_vec(&plain), serde_json::to_vec(&plain).unwrap());
    let mut line = Vec::new();
    write_line(&mut line, &plain);
    assert_eq!(
        line,
        [serde_json::to_vec(&plain).unwrap(), b"\n".to_vec()].concat()
    );
}

#[test]
fn a_task_result_inlined_one_level_down_is_written_raw_too() {
    let msg = json!({"jsonrpc": "2.0", "id": 3, "result": {
        "taskId": "t", "status": "completed", "result": marked("[7,8]", false)
    }});
    assert_eq!(parsed(&msg)["result"]["result"][KEY], json!([7, 8]));
    let note = json!({"jsonrpc": "2.0", "method": "notifications/tasks",
        "params": {"taskId": "t", "result": marked("9", false)}});
    assert_eq!(parsed(&note)["params"]["result"][KEY], json!(9));
}

#[test]
fn a_huge_string_value_is_written_once_raw_and_once_escaped() {
    let inner = "ab\"\\\n".repeat(200_000);
    let mut text = String::new();
    crate::format::json::write_str(&mut text, &inner);
    let msg = json!({"jsonrpc": "2.0", "id": 1, "result": marked(&text, false)});
    let got = parsed(&msg);
    assert_eq!(got["result"][KEY], Json::String(inner));
    assert_eq!(got["result"]["content"][0]["text"], Json::String(text));
}

#[test]
fn text_that_is_not_one_json_value_is_not_spliced() {
    for text in ["", "[1,", "1 2", "NaN", "{\"a\":1}}", "\"\u{1}\""] {
        let result = marked(text, false);
        assert!(!is_marked(&result), "{text:?}");
        assert!(result.get(KEY).is_none());
        let msg = json!({"id": 1, "result": result});
        assert_eq!(to_vec(&msg), serde_json::to_vec(&msg).unwrap());
    }
    // Nor is a result whose first block is not text.
    let mut media = Map::new();
    media.insert(
        "content".into(),
        json!([{"type": "image", "data": "", "mimeType": "image/png"}]),
    );
    mark(&mut media, false);
    assert!(media.get(KEY).is_none());
}

/// A marked result, not settled yet.
fn unsettled(text: &str, record: bool) -> Json {
    let mut result = Map::new();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    mark(&mut result, record);
    assert!(result.contains_key(KEY));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

#[test]
fn legacy_answers_keep_the_reference_shape() {
    // A record: its value parsed, in the placeholder's position.
    let mut record = unsettled(r#"{"status":"ok","value":7}"#, true);
    for_era(&mut record, false);
    assert_eq!(
        record.to_string(),
        r#"{"content":[{"type":"text","text":"{\"status\":\"ok\",\"value\":7}"}],"structuredContent":{"status":"ok","value":7},"isError":false}"#
    );
    // Anything else: no structuredContent at all.
    let mut list = unsettled("[1,2]", false);
    for_era(&mut list, false);
    assert_eq!(
        list.to_string(),
        r#"{"content":[{"type":"text","text":"[1,2]"}],"isError":false}"#
    );
    // Modern answers keep the placeholder for the writer.
    let mut modern = unsettled("[1,2]", false);
    for_era(&mut modern, true);
    assert!(is_marked(&modern));
    // A legacy record whose text does not parse: none, as before.
    let mut broken = unsettled("{", true);
    for_era(&mut broken, false);
    assert!(broken.get(KEY).is_none());
}

#[test]
fn a_placeholder_that_lost_its_text_is_left_out() {
    let mut result = marked("1", false);
    result["content"] = json!([]);
    let msg = json!({"id": 1, "result": result});
    assert_eq!(
        to_string(&msg),
        r#"{"id":1,"result":{"content":[],"isError":false}}"#
    );
    assert_eq!(length(&msg), to_vec(&msg).len());
}

/// `msg` written with a text held apart, its spans filled from `text`.
fn filled(msg: &Json, at: &[&str], text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let apart = Apart {
        at,
        len: text.len(),
    };
    for part in parts(msg, apart) {
        match part {
            Part::Bytes(bytes) => out.extend_from_slice(&bytes),
            Part::Text(range, Form::Raw) => out.extend_from_slice(text[range].as_bytes()),
            Part::Text(range, _) => {
                crate::format::json::write_str_body_into(&mut out, &text[range]);
            }
        }
    }
    out
}

/// A text held apart goes where its typed location says, escaped in the
/// first block and raw in place of the placeholder: the bytes are those of
/// the message written whole, whatever its other strings hold (a request
/// id, another result's text, a key named like the path).
#[test]
fn a_text_held_apart_is_written_where_its_location_says() {
    for (text, record) in [
        (r#"{"a":"q\"\n\u0000","b":[1,2]}"#, true),
        ("[1,2,3]", false),
        (r#""\u0000morloc-mcp:task-text\u0000""#, false),
    ] {
        let whole = json!({"jsonrpc": "2.0", "id": text, "result": {
            "taskId": "t", "other": marked("[9]", false),
            "result": marked(text, record), "status": "completed"
        }});
        let mut apart = whole.clone();
        apart["result"]["result"]["content"][0]["text"] = "".into();
        let got = filled(&apart, &["result", "result"], text);
        assert_eq!(got, to_vec(&whole), "{text}");
        let spans = parts(
            &apart,
            Apart {
                at: &["result", "result"],
                len: text.len(),
            },
        );
        let forms: Vec<_> = spans
            .iter()
            .filter_map(|p| match p {
                Part::Text(range, form) => Some((range.clone(), *form)),
                Part::Bytes(_) => None,
            })
            .collect();
        assert_eq!(
            forms,
            [(0..text.len(), Form::Escaped), (0..text.len(), Form::Raw)]
        );
    }
    // A legacy answer (no placeholder, a second block) and a result one
    // level up (a job's `job_result`).
    let mut result = Map::new();
    result.insert(
        "content".into(),
        json!([{"type": "text", "text": "[5]"}, {"type": "text", "text": "more"}]),
    );
    result.insert("isError".into(), Json::Bool(false));
    let whole = json!({"jsonrpc": "2.0", "id": 2, "result": result});
    let mut apart = whole.clone();
    apart["result"]["content"][0]["text"] = "".into();
    assert_eq!(filled(&apart, &["result"], "[5]"), to_vec(&whole));
}
