//! Big `tools/call` bodies are checked and encoded in slices between other
//! events: other clients are served meanwhile, several big calls share the
//! thread, a client that leaves mid-way costs nothing more, and every
//! result is exact.

use serde_json::{json, Value};

use crate::support::http::{post_request, simple_request, tool_call, Server};

/// A `sumMany` request of `n` integers (one beyond 64 bits) and its sum.
fn big_sum(id: u64, n: i64) -> (String, String) {
    let mut items: Vec<String> = (0..n).map(|i| (i % 1000 - 500).to_string()).collect();
    items[3] = "1180591620717411303424".into();
    let sum: i128 = (0..i128::from(n))
        .filter(|i| *i != 3)
        .map(|i| i % 1000 - 500)
        .sum::<i128>()
        + (1i128 << 70);
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"sumMany","arguments":{{"_1":[{}]}}}}}}"#,
        items.join(",")
    );
    (body, sum.to_string())
}

fn result_text(reply: &Value) -> String {
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {reply}"))
        .to_string()
}

#[test]
fn other_clients_are_served_while_a_big_body_is_prepared() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut big, big_sid) = server.session();
    let (mut other, other_sid) = server.session();
    // Warm the pool, so the big call does not wait for it to start.
    let warm = other
        .post(Some(&other_sid), &tool_call(1, "addOne", json!({"_1": 1})))
        .expect(200)
        .json();
    assert_eq!(result_text(&warm), "2");
    let (body, sum) = big_sum(7, 1_500_000);
    big.send(&post_request(
        server.addr,
        Some(&big_sid),
        body.as_bytes(),
        &[],
    ));
    // Another client's requests, small and big (a second call in slices
    // beside the first), each answered.
    for i in 0..3 {
        let reply = other
            .post(
                Some(&other_sid),
                &tool_call(10 + i, "addOne", json!({"_1": 41})),
            )
            .expect(200)
            .json();
        assert_eq!(result_text(&reply), "42");
        let health = other.roundtrip(&simple_request("GET", "/health", server.addr, ""));
        assert_eq!(health.status, 200);
    }
    let (small_big, small_sum) = big_sum(20, 40_000);
    let reply = other
        .roundtrip(&post_request(
            server.addr,
            Some(&other_sid),
            small_big.as_bytes(),
            &[],
        ))
        .expect(200)
        .json();
    assert_eq!(result_text(&reply), small_sum);
    // The big call's result is exact.
    let reply = big.read_response().expect(200).json();
    assert_eq!(reply["id"], json!(7), "{reply}");
    assert_eq!(result_text(&reply), sum);
}

#[test]
fn a_request_pipelined_behind_a_big_body_is_answered_after_it() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut client, sid) = server.session();
    let (body, sum) = big_sum(3, 300_000);
    let mut bytes = post_request(server.addr, Some(&sid), body.as_bytes(), &[]);
    let small = tool_call(4, "addOne", json!({"_1": 9})).to_string();
    bytes.extend(post_request(server.addr, Some(&sid), small.as_bytes(), &[]));
    client.send(&bytes);
    let first = client.read_response().expect(200).json();
    assert_eq!(first["id"], json!(3), "{first}");
    assert_eq!(result_text(&first), sum);
    let second = client.read_response().expect(200).json();
    assert_eq!(second["id"], json!(4), "{second}");
    assert_eq!(result_text(&second), "10");
}

#[test]
fn a_big_call_whose_client_leaves_is_dropped_and_others_go_on() {
    let server = Server::start(&["--plain-tool-names"]);
    let (mut other, other_sid) = server.session();
    for id in 0..3 {
        let (mut gone, gone_sid) = server.session();
        let (body, _) = big_sum(id, 500_000);
        gone.send(&post_request(
            server.addr,
            Some(&gone_sid),
            body.as_bytes(),
            &[],
        ));
        drop(gone);
    }
    let (body, sum) = big_sum(9, 200_000);
    let reply = other
        .roundtrip(&post_request(
            server.addr,
            Some(&other_sid),
            body.as_bytes(),
            &[],
        ))
        .expect(200)
        .json();
    assert_eq!(result_text(&reply), sum);
    let health = other.roundtrip(&simple_request("GET", "/health", server.addr, ""));
    assert_eq!(health.status, 200);
}
