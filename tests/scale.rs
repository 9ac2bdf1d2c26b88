//! Several instances behind a load balancer: instance ids in session ids,
//! `GET /health`, and the graceful drain on SIGTERM. (The balancer itself,
//! with the shipped nginx and HAProxy configurations, is driven by
//! `make test-scale`.)

use serde_json::{json, Value};

use crate::http::Server;

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

#[test]
fn a_session_id_names_its_instance_and_other_instances_do_not_know_it() {
    let a = Server::start(&["--instance-id", "a"]);
    let b = Server::start(&["--instance-id", "b"]);
    let (mut on_a, sid) = a.session();
    let random = sid
        .strip_prefix("a.")
        .expect("the id starts with the instance id");
    assert_eq!(random.len(), 32, "{sid}");
    on_a.post(Some(&sid), &ping(1)).expect(200);
    // The same id at another instance is an unknown session: 404, as the
    // transport says, so the client re-initializes.
    let mut on_b = b.connect();
    let reply = on_b.post(Some(&sid), &ping(2)).expect(404);
    assert_eq!(
        reply.json()["error"],
        json!("unknown or expired session; re-initialize")
    );
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "main__pureAnswer", "arguments": {}}});
    on_b.post(Some(&sid), &call).expect(404);
    // Its random part under the other instance's name is not a session either.
    let renamed = format!("b.{random}");
    on_b.post(Some(&renamed), &ping(4)).expect(404);
    let delete = format!(
        "DELETE /mcp HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {sid}\r\n\r\n",
        b.addr
    );
    on_b.roundtrip(delete.as_bytes()).expect(404);
    // The session is untouched at its own instance.
    on_a.post(Some(&sid), &ping(5)).expect(200);
    let reply = on_a.post(Some(&sid), &call).expect(200);
    assert_eq!(
        reply.json()["result"]["isError"],
        json!(false),
        "{:?}",
        reply.text()
    );
}
