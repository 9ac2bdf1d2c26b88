//! Tests of result URIs, the result table and the shapes of linked results.

use super::*;
use serde_json::json;

#[test]
fn uris_parse_with_their_pages_and_refuse_what_is_wrong() {
    let p = parse_uri("morloc://result/a.0f?offset=10&limit=5").unwrap();
    assert_eq!(
        (p.id.as_str(), p.offset, p.limit),
        ("a.0f", Some(10), Some(5))
    );
    let p = parse_uri("morloc://result/a.0f?limit=5&offset=0").unwrap();
    assert_eq!((p.offset, p.limit), (Some(0), Some(5)));
    let whole = parse_uri("morloc://result/a.0f").unwrap();
    assert!(!whole.is_page());
    assert!(parse_uri("morloc://result/a.0f?offset=1")
        .unwrap()
        .is_page());
    for (bad, why) in [
        ("file:///etc/passwd", "not a result URI"),
        ("morloc://result/", "not a result id"),
        ("morloc://result/../x", "not a result id"),
        ("morloc://result/a/b", "not a result id"),
        ("morloc://result/a?offset=-1", "non-negative"),
        ("morloc://result/a?offset=1&offset=2", "twice"),
        ("morloc://result/a?page=1", "unknown query parameter 'page'"),
        ("morloc://result/a?offset", "has no '='"),
        (
            "morloc://result/a?limit=99999999999999999999",
            "non-negative",
        ),
        ("morloc://result/a?limit=", "non-negative"),
    ] {
        let err = parse_uri(bad).unwrap_err();
        assert!(err.contains(why), "{bad}: {err}");
    }
}

const HOUR: u64 = 3_600_000;

fn paged(n: usize) -> Paged {
    Paged::new(format!("\"{}\"", "x".repeat(n)))
}

#[test]
fn results_belong_to_their_owner_and_expire() {
    let mut store = ResultStore::new(1000);
    store.insert("i.1".into(), "Bearer a", "f", paged(10), 100);
    assert!(store.get("i.1", "Bearer a", 100).is_some());
    assert!(store.get("i.1", "Bearer b", 100).is_none());
    assert!(store.get("i.1", "Bearer a", 1100).is_none());
    assert_eq!(store.next_expiry(), Some(1100));
    assert_eq!(store.of_owner("Bearer a", 100).len(), 1);
    assert_eq!(store.of_owner("", 100).len(), 0);
    assert_eq!(store.expire(1100), vec!["i.1".to_string()]);
    assert!(store.is_empty());
    assert_eq!(store.bytes(), 0);
}

#[test]
fn caps_free_the_oldest_of_the_owner_at_fault() {
    let mut store = ResultStore::new(1_000_000).with_caps(4, 2, 1000);
    assert!(store.insert("1".into(), "a", "f", paged(1), 1).is_empty());
    assert!(store.insert("2".into(), "a", "f", paged(1), 2).is_empty());
    // a at its own cap: its oldest goes.
    assert_eq!(store.insert("3".into(), "a", "f", paged(1), 3), vec!["1"]);
    assert!(store.insert("4".into(), "b", "f", paged(1), 4).is_empty());
    assert!(store.insert("5".into(), "c", "f", paged(1), 5).is_empty());
    // Full: the owner holding the most (a) gives its oldest.
    assert_eq!(store.insert("6".into(), "d", "f", paged(1), 6), vec!["2"]);
    assert_eq!(store.len(), 4);
    // Bytes: a big one frees until it fits.
    let freed = store.insert("7".into(), "e", "f", paged(990), 7);
    assert_eq!(freed, vec!["3", "4"]);
    assert!(store.bytes() <= 1000);
    // Bigger than the cap: kept, alone.
    store.insert("8".into(), "e", "f", paged(2000), 8);
    assert_eq!(store.len(), 1);
}

#[test]
fn an_owner_over_its_bytes_frees_only_its_own_oldest() {
    // Each value is 102 bytes; one owner may hold 250.
    let mut store = ResultStore::new(HOUR).with_owner_bytes(250);
    store.insert("i.b".into(), "peer b", "f", paged(100), 1);
    store.insert("i.1".into(), "peer a", "f", paged(100), 2);
    store.insert("i.2".into(), "peer a", "f", paged(100), 3);
    assert_eq!(store.bytes_of("peer a"), 204);
    let freed = store.insert("i.3".into(), "peer a", "f", paged(100), 4);
    assert_eq!(freed, vec!["i.1".to_string()]);
    assert_eq!(store.bytes_of("peer a"), 204);
    assert!(store.get("i.b", "peer b", 5).is_some());
    assert_eq!(store.most_owner_bytes(), 204);
    // A bigger one frees as many of its own as it takes, oldest first.
    let freed = store.insert("i.4".into(), "peer a", "f", paged(200), 5);
    assert_eq!(freed, vec!["i.2".to_string(), "i.3".to_string()]);
    assert_eq!(store.of_owner("peer b", 6).len(), 1);
    assert_eq!(store.bytes(), 102 + 202);
    // Read back from storage, a result over its owner's bytes stays out.
    let head = StoredHead {
        id: "i.5".into(),
        owner: "peer a".into(),
        tool: "f".into(),
        created_ms: 6,
        expires_ms: HOUR,
    };
    assert!(!store.restore(head, paged(100), 6));
    assert!(store.get("i.b", "peer b", 7).is_some());
}

#[test]
fn a_value_over_the_owner_bytes_alone_is_refused() {
    let store = ResultStore::new(HOUR).with_owner_bytes(250);
    assert_eq!(store.owner_bytes_cap(), 250);
    assert!(store.refuses(250).is_none());
    let why = store.refuses(251).unwrap();
    assert!(
        why.contains("251 bytes") && why.contains("--max-owner-bytes"),
        "{why}"
    );
    assert!(ResultStore::new(HOUR).refuses(MAX_OWNER_BYTES).is_none());
}

#[test]
fn only_long_successful_single_text_results_are_taken() {
    let mut r = json!({"content": [{"type": "text", "text": "ééééé"}], "isError": false});
    assert_eq!(take_big_text(&mut r, 5), None);
    assert_eq!(take_big_text(&mut r, 4).as_deref(), Some("ééééé"));
    assert_eq!(r["content"][0]["text"], "");
    let mut e = json!({"content": [{"type": "text", "text": "long error"}], "isError": true});
    assert_eq!(take_big_text(&mut e, 1), None);
    let mut img = json!({"content": [{"type": "image", "data": "AAAA"}], "isError": false});
    assert_eq!(take_big_text(&mut img, 1), None);
}

#[test]
fn a_linked_result_has_preview_link_and_small_structured_content() {
    let value = Paged::new(format!("[{}]", vec!["12345"; 100].join(",")));
    let result = link_result("i.ab", "f", &value, 40);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("[12345,12345,12345]\n"), "{text}");
    assert!(text.contains("a list of 100 elements, 601 bytes"), "{text}");
    assert_eq!(result["content"][1]["type"], "resource_link");
    assert_eq!(result["content"][1]["uri"], "morloc://result/i.ab");
    assert_eq!(result["structuredContent"][LINK_KEY]["count"], 100);
    assert_eq!(result["isError"], false);
}

#[test]
fn output_schemas_become_any_of_value_or_link() {
    assert_eq!(wrap_output_schema(None), None);
    let base = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P"}},
        "$defs": {"P": {"type": "integer"}}
    });
    let wrapped = wrap_output_schema(Some(base)).unwrap();
    assert_eq!(
        wrapped["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(wrapped["type"], "object");
    assert_eq!(wrapped["$defs"]["P"]["type"], "integer");
    assert_eq!(wrapped["anyOf"][0]["properties"]["p"]["$ref"], "#/$defs/P");
    assert!(wrapped["anyOf"][0].get("$defs").is_none());
    assert_eq!(wrapped["anyOf"][1], link_schema());
    let array = wrap_output_schema(Some(json!({"type": "array"}))).unwrap();
    assert!(array.get("type").is_none());
    let tool = json!({"name": "f", "outputSchema": {"type": "object"}});
    assert_eq!(wrap_tool(tool.clone(), None), tool);
    assert!(wrap_tool(tool, Some(10))["outputSchema"]["anyOf"].is_array());
}

#[test]
fn reads_give_pages_with_the_next_one() {
    let value = Paged::new("[1,2,3,4,5]".into());
    let uri = "morloc://result/i.ab?offset=1&limit=2";
    let got = read_result(uri, &parse_uri(uri).unwrap(), &value, false);
    let content = &got["contents"][0];
    assert_eq!(content["text"], "[2,3]");
    assert_eq!(
        content["_meta"]["next"],
        "morloc://result/i.ab?offset=3&limit=2"
    );
    let uri = "morloc://result/i.ab?offset=4&limit=2";
    let got = read_result(uri, &parse_uri(uri).unwrap(), &value, false);
    assert_eq!(got["contents"][0]["text"], "[5]");
    assert!(got["contents"][0]["_meta"].get("next").is_none());
    let whole = read_result(
        "morloc://result/i.ab",
        &parse_uri("morloc://result/i.ab").unwrap(),
        &value,
        false,
    );
    assert_eq!(whole["contents"][0]["text"], "[1,2,3,4,5]");
}

/// A whole value streamed: the message has one placeholder member, and
/// writing the escaped text in its place, piece by piece, gives the bytes
/// of the message with the text in it.
#[test]
fn a_streamed_read_is_the_same_bytes_as_a_whole_one() {
    let value = Paged::new("{\"a\":\"q\\\"é\\n☃\",\"b\":[1,2]}".into());
    let uri = "morloc://result/i.ab";
    let asked = parse_uri(uri).unwrap();
    let whole = serde_json::to_vec(&read_result(uri, &asked, &value, false)).unwrap();
    let streamed = serde_json::to_vec(&read_result(uri, &asked, &value, true)).unwrap();
    let at = streamed
        .windows(STREAMED_TEXT.len())
        .position(|w| w == STREAMED_TEXT)
        .unwrap();
    let rest = &streamed[at + 1..];
    assert!(!rest
        .windows(STREAMED_TEXT.len())
        .any(|w| w == STREAMED_TEXT));
    let mut body = String::new();
    for piece in value.text().split_inclusive(['"', '☃']) {
        crate::format::json::write_str_body(&mut body, piece);
    }
    assert_eq!(body.len(), crate::format::json::str_body_len(value.text()));
    let open = b"\"text\":\"".len();
    let mut rebuilt = streamed[..at + open].to_vec();
    rebuilt.extend_from_slice(body.as_bytes());
    rebuilt.extend_from_slice(&streamed[at + STREAMED_TEXT.len() - 1..]);
    assert_eq!(
        String::from_utf8(rebuilt).unwrap(),
        String::from_utf8(whole).unwrap()
    );
}

#[test]
fn stored_results_read_back_the_same() {
    let mut store = ResultStore::new(1000);
    store.insert("i.1".into(), "Bearer a", "f", paged(5), 100);
    let stored = store.by_id("i.1").unwrap();
    let mut file = stored_head(stored).into_bytes();
    file.extend_from_slice(stored.value.text().as_bytes());
    let (head, text) = from_stored(file).unwrap();
    assert_eq!(text, "\"xxxxx\"");
    assert_eq!(
        (head.id.as_str(), head.tool.as_str(), head.expires_ms),
        ("i.1", "f", 1100)
    );
    let mut again = ResultStore::new(1000);
    assert!(!again.restore(head.clone(), Paged::new(text.clone()), 1100));
    assert!(again.restore(head, Paged::new(text), 200));
    assert!(again.get("i.1", "Bearer a", 200).is_some());
    assert!(again.get("i.1", "Bearer b", 200).is_none());
    for (bad, why) in [
        (&b"no newline"[..], "no head line"),
        (b"[]\n1", "'resultId'"),
        (b"{\"resultId\":\"../x\",\"owner\":\"o\",\"tool\":\"t\",\"createdMs\":1,\"expiresMs\":2}\n1", "not a result id"),
    ] {
        let err = from_stored(bad.to_vec()).unwrap_err();
        assert!(err.contains(why), "{err}");
    }
}

#[test]
fn expiries_give_the_live_earliest_and_take_each_due_id_once() {
    let mut times: HashMap<&str, u64> = HashMap::from([("a", 30), ("b", 10), ("c", 20)]);
    let mut exp = Expiries::default();
    for (id, at) in [("a", 30), ("b", 10), ("c", 20), ("c", 20)] {
        exp.set(id, at, times.len(), Vec::new);
    }
    // `b` is gone and `c` was given a later time: neither counts as before.
    times.remove("b");
    times.insert("c", 40);
    exp.set("c", 40, times.len(), Vec::new);
    let time = |id: &str| times.get(id).copied();
    assert_eq!(exp.next(time), Some(30));
    assert_eq!(exp.due(29, time), Vec::<String>::new());
    assert_eq!(exp.due(100, time), ["a", "c"]);
    assert_eq!(exp.next(time), None);
}

#[test]
fn expiries_stay_within_a_bound_of_the_live_entries() {
    let mut exp = Expiries::default();
    // One live entry given a new time again and again: the stale entries
    // are dropped by a rebuild instead of piling up.
    for at in 0..10_000u64 {
        exp.set("a", at, 1, || vec![(at, "a")]);
    }
    assert!(exp.heap.len() <= 2 + 64 + 1, "{}", exp.heap.len());
    assert_eq!(exp.next(|_| Some(9_999)), Some(9_999));
}

#[test]
fn the_store_finds_its_next_expiry_without_its_freed_results() {
    let mut store = ResultStore::new(1000);
    store.insert("i.1".into(), "a", "f", paged(10), 100);
    store.insert("i.2".into(), "a", "f", paged(10), 200);
    assert_eq!(store.next_expiry(), Some(1100));
    store.remove("i.1");
    assert_eq!(store.next_expiry(), Some(1200));
    assert_eq!(store.expire(5000), vec!["i.2".to_string()]);
    assert_eq!(store.next_expiry(), None);
}
