//! The OAuth 2.1 resource server against a mock authorization server
//! (`support::oauth`): the metadata documents, the challenges, every way a
//! token is refused, lazy key fetching and rotation, an unreachable key
//! set, scope step-up (scopes per tool from the flag and from a tools
//! file, reloaded), and sessions owned by the token's subject.

use serde_json::{json, Value};

use crate::support::http::{
    initialize_message, post_request, simple_request, tool_call, write_manifest, Client, Response,
    Server,
};
use crate::support::oauth::{jwks, mint, Issuer, Serving, FUTURE, PAST};
use crate::util::{wait_for, wait_until, TempDir};

/// A server trusting `issuer`'s key set by URL, with `extra` options.
fn serve(issuer: &Issuer, extra: &[&str]) -> Server {
    let (iss, url) = (issuer.issuer(), issuer.jwks_url());
    let mut args = vec![
        "--plain-tool-names",
        "--oauth-issuer",
        &iss,
        "--oauth-jwks",
        &url,
        "--oauth-scopes",
        "mcp:tools",
    ];
    args.extend_from_slice(extra);
    Server::start(&args)
}

fn resource(server: &Server) -> String {
    format!("http://127.0.0.1:{}/mcp", server.addr.port())
}

/// Claims for `sub` that `server` accepts, with `scope`.
fn claims(issuer: &Issuer, server: &Server, sub: &str, scope: &str) -> Value {
    json!({"iss": issuer.issuer(), "aud": resource(server), "sub": sub,
           "exp": FUTURE, "nbf": PAST, "iat": PAST, "scope": scope})
}

fn rs(kid: &str) -> Value {
    json!({"alg": "RS256", "typ": "JWT", "kid": kid})
}

/// A POST of `body` with `token` (and a session), on a new connection.
fn post(server: &Server, token: Option<&str>, session: Option<&str>, body: &Value) -> Response {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = Vec::new();
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    let request = post_request(server.addr, session, body.to_string().as_bytes(), &headers);
    Client::connect(server.addr).roundtrip(&request)
}

/// `initialize` with `token`: the session id.
fn initialize(server: &Server, token: &str) -> String {
    let reply = post(server, Some(token), None, &initialize_message(1)).expect(200);
    let sid = reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(server, Some(token), Some(&sid), &done).expect(202);
    sid
}

#[track_caller]
fn assert_invalid(reply: Response, why: &str) {
    let reply = reply.expect(401);
    let challenge = reply.header("www-authenticate").unwrap_or("").to_string();
    assert!(
        challenge.starts_with("Bearer error=\"invalid_token\""),
        "{challenge}"
    );
    assert!(challenge.contains(why), "{why:?} not in {challenge}");
    assert!(challenge.contains("resource_metadata=\""), "{challenge}");
}

#[test]
fn metadata_and_the_challenge_without_a_token() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &["--oauth-tool-scopes", "addOne=mcp:admin"]);
    let meta_url = format!(
        "http://127.0.0.1:{}/.well-known/oauth-protected-resource/mcp",
        server.addr.port()
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let reply = Client::connect(server.addr)
            .roundtrip(&simple_request("GET", path, server.addr, ""))
            .expect(200);
        assert_eq!(
            reply.json(),
            json!({"resource": resource(&server), "authorization_servers": [issuer.issuer()],
                   "scopes_supported": ["mcp:tools", "mcp:admin"],
                   "bearer_methods_supported": ["header"], "resource_name": "main"})
        );
    }
    let reply = post(&server, None, None, &initialize_message(1)).expect(401);
    assert_eq!(
        reply.header("www-authenticate"),
        Some(format!("Bearer resource_metadata=\"{meta_url}\", scope=\"mcp:tools\"").as_str())
    );
    // /metrics shares the guard.
    let metrics = simple_request(
        "GET",
        "/metrics",
        server.addr,
        "Authorization: Bearer x.y\r\n",
    );
    assert_invalid(Client::connect(server.addr).roundtrip(&metrics), "three");
    // Nothing was fetched before a token with a plausible shape came.
    assert_eq!(issuer.fetches(), 0);
}

#[test]
fn only_tokens_for_this_resource_from_its_issuer_are_accepted() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1"), ("ec1", "ec-1")]));
    let server = serve(&issuer, &[]);
    let good = claims(&issuer, &server, "alice", "mcp:tools");
    let with = |key: &str, value: Value| {
        let mut c = good.clone();
        c[key] = value;
        c
    };
    let mut no_aud = good.clone();
    no_aud.as_object_mut().unwrap().remove("aud");
    let refused = [
        (
            mint(
                &rs("rsa-1"),
                &with("aud", json!("http://127.0.0.1:1/mcp")),
                "rsa1",
            ),
            "aud",
        ),
        (mint(&rs("rsa-1"), &no_aud, "rsa1"), "aud"),
        (
            mint(&rs("rsa-1"), &with("exp", json!(PAST)), "rsa1"),
            "expired",
        ),
        (
            mint(&rs("rsa-1"), &with("nbf", json!(FUTURE)), "rsa1"),
            "nbf",
        ),
        (
            mint(
                &rs("rsa-1"),
                &with("iss", json!("http://127.0.0.1:1")),
                "rsa1",
            ),
            "issuer",
        ),
        // Signed by a key the issuer does not publish, under a kid it does.
        (mint(&rs("rsa-1"), &good, "rogue"), "signature"),
        (
            mint(&json!({"alg": "ES256", "kid": "rsa-1"}), &good, "ec1"),
            "signature",
        ),
        (
            mint(&json!({"alg": "HS256", "kid": "rsa-1"}), &good, "rsa1"),
            "alg HS256",
        ),
    ];
    for (token, why) in &refused {
        assert_invalid(
            post(&server, Some(token), None, &initialize_message(1)),
            why,
        );
    }
    // The key set was fetched once, for the first token that needed it.
    assert_eq!(issuer.fetches(), 1);
    let good_token = mint(&rs("rsa-1"), &good, "rsa1");
    let mut parts: Vec<String> = good_token.split('.').map(str::to_string).collect();
    parts[1] = crate::support::oauth::b64(with("sub", json!("mallory")).to_string().as_bytes());
    assert_invalid(
        post(
            &server,
            Some(&parts.join(".")),
            None,
            &initialize_message(1),
        ),
        "signature",
    );
    parts[0] = crate::support::oauth::b64(br#"{"alg":"none","kid":"rsa-1"}"#);
    parts[2] = String::new();
    assert_invalid(
        post(
            &server,
            Some(&parts.join(".")),
            None,
            &initialize_message(1),
        ),
        "alg none",
    );
    // Accepted: `aud` exactly the server's URL, RS256 and ES256, in both eras.
    let sid = initialize(&server, &good_token);
    let call = post(
        &server,
        Some(&good_token),
        Some(&sid),
        &tool_call(2, "addOne", json!({"_1": 41})),
    );
    assert_eq!(call.expect(200).json()["result"]["isError"], false);
    let es = mint(
        &json!({"alg": "ES256", "kid": "ec-1"}),
        &with("aud", json!(["x", resource(&server)])),
        "ec1",
    );
    initialize(&server, &es);
    let modern = json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ];
    let request = post_request(server.addr, None, modern.to_string().as_bytes(), &headers);
    Client::connect(server.addr).roundtrip(&request).expect(401);
    let auth = format!("Bearer {es}");
    let mut with_auth = headers.to_vec();
    with_auth.push(("Authorization", &auth));
    let request = post_request(server.addr, None, modern.to_string().as_bytes(), &with_auth);
    Client::connect(server.addr).roundtrip(&request).expect(200);
    assert_eq!(issuer.fetches(), 1);
}

#[test]
fn an_unknown_key_id_fetches_the_keys_again_at_most_once_a_minute() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &[]);
    let c = claims(&issuer, &server, "alice", "mcp:tools");
    initialize(&server, &mint(&rs("rsa-1"), &c, "rsa1"));
    assert_eq!(issuer.fetches(), 1);
    // The issuer rotates to a new key: the unknown kid is fetched.
    issuer.rotate(jwks(&[("rsa2", "rsa-2")]));
    initialize(&server, &mint(&rs("rsa-2"), &c, "rsa2"));
    assert_eq!(issuer.fetches(), 2);
    // Another unknown kid soon after: refused without a fetch.
    let rogue = mint(&rs("rogue"), &c, "rogue");
    assert_invalid(
        post(&server, Some(&rogue), None, &initialize_message(1)),
        "unknown key id",
    );
    assert_eq!(issuer.fetches(), 2);
    // The retired key is no longer trusted.
    let old = mint(&rs("rsa-1"), &c, "rsa1");
    assert_invalid(
        post(&server, Some(&old), None, &initialize_message(1)),
        "unknown key id",
    );
}

#[test]
fn keys_past_their_age_are_fetched_again_and_a_withdrawn_key_is_refused() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &["--oauth-jwks-max-age", "0"]);
    let c = claims(&issuer, &server, "alice", "mcp:tools");
    let old = mint(&rs("rsa-1"), &c, "rsa1");
    post(&server, Some(&old), None, &initialize_message(1)).expect(200);
    assert_eq!(issuer.fetches(), 1);
    // The issuer withdraws the key: the next token refreshes the set first,
    // and the token accepted (and remembered) before is refused.
    issuer.rotate(jwks(&[("rsa2", "rsa-2")]));
    assert_invalid(
        post(&server, Some(&old), None, &initialize_message(1)),
        "unknown key id",
    );
    assert_eq!(issuer.fetches(), 2);
    let new = mint(&rs("rsa-2"), &c, "rsa2");
    post(&server, Some(&new), None, &initialize_message(1)).expect(200);
    assert_eq!(issuer.fetches(), 3);
}

#[test]
fn an_unreachable_key_set_refuses_every_token() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let iss = "https://issuer.example".to_string();
    let url = format!("http://{closed}/jwks");
    let server = Server::start(&["--oauth-issuer", &iss, "--oauth-jwks", &url]);
    let c = json!({"iss": iss, "aud": resource(&server), "sub": "a", "exp": FUTURE});
    let token = mint(&rs("rsa-1"), &c, "rsa1");
    assert_invalid(
        post(&server, Some(&token), None, &initialize_message(1)),
        "cannot be fetched",
    );
    wait_for("the fetch failure on stderr", || {
        server
            .proc
            .stderr_now()
            .contains("cannot fetch the JWKS from")
    });
}

#[test]
fn a_tool_needing_a_broader_scope_gets_403_until_the_token_has_it() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &["--oauth-tool-scopes", "addOne=mcp:admin"]);
    let narrow = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools"),
        "rsa1",
    );
    let none = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "other"),
        "rsa1",
    );
    let reply = post(&server, Some(&none), None, &initialize_message(1)).expect(403);
    let challenge = reply.header("www-authenticate").unwrap_or("");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:tools\""),
        "{challenge}"
    );
    let sid = initialize(&server, &narrow);
    let call = tool_call(2, "addOne", json!({"_1": 1}));
    let reply = post(&server, Some(&narrow), Some(&sid), &call).expect(403);
    let challenge = reply.header("www-authenticate").unwrap_or("");
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp:tools mcp:admin\""),
        "{challenge}"
    );
    // A tool needing nothing more is served on the narrow token.
    let other = post(
        &server,
        Some(&narrow),
        Some(&sid),
        &tool_call(3, "pureAnswer", json!({})),
    );
    assert_eq!(other.expect(200).json()["result"]["isError"], false);
    // Step-up: the same subject with the broader token, same session.
    let broad = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools mcp:admin"),
        "rsa1",
    );
    let reply = post(&server, Some(&broad), Some(&sid), &call)
        .expect(200)
        .json();
    assert_eq!(reply["result"]["isError"], false, "{reply}");
}

/// `scopes_supported` of `server`'s metadata document.
fn scopes_supported(server: &Server) -> Value {
    let path = "/.well-known/oauth-protected-resource/mcp";
    let reply = Client::connect(server.addr)
        .roundtrip(&simple_request("GET", path, server.addr, ""))
        .expect(200);
    reply.json()["scopes_supported"].clone()
}

#[test]
fn a_tools_file_makes_a_tool_need_its_scopes_too_and_a_reload_changes_them() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let dir = TempDir::new();
    let file = dir.join("tools.json");
    std::fs::write(&file, r#"{"tools": {"addOne": {"scopes": ["mcp:math"]}}}"#).unwrap();
    let given = file.display().to_string();
    let server = serve(
        &issuer,
        &[
            "--tools-file",
            &given,
            "--oauth-tool-scopes",
            "addOne=mcp:flag",
        ],
    );
    assert_eq!(
        scopes_supported(&server),
        json!(["mcp:tools", "mcp:flag", "mcp:math"])
    );
    let token = |scope: &str| {
        let claims = claims(&issuer, &server, "alice", scope);
        mint(&rs("rsa-1"), &claims, "rsa1")
    };
    let refused = |token: &str, sid: &str, scope: &str| {
        let call = tool_call(9, "addOne", json!({"_1": 1}));
        let reply = post(&server, Some(token), Some(sid), &call).expect(403);
        let challenge = reply.header("www-authenticate").unwrap_or("").to_string();
        let wanted = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
        assert!(challenge.starts_with(&wanted), "{challenge}");
    };
    // The flag's scope and the file's: a token needs both.
    let narrow = token("mcp:tools mcp:flag");
    let sid = initialize(&server, &narrow);
    refused(&narrow, &sid, "mcp:tools mcp:flag mcp:math");
    let other = tool_call(2, "pureAnswer", json!({}));
    let reply = post(&server, Some(&narrow), Some(&sid), &other).expect(200);
    assert_eq!(reply.json()["result"]["isError"], false);
    let math = token("mcp:tools mcp:flag mcp:math");
    let call = tool_call(3, "addOne", json!({"_1": 1}));
    let reply = post(&server, Some(&math), Some(&sid), &call).expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");

    // A new file (written aside and moved in): its scopes apply once loaded.
    dir.write(
        "tools.json.next",
        r#"{"tools": {"addOne": {"scopes": ["mcp:math", "mcp:admin"]}}}"#,
    );
    std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
    wait_for("the new scope in the metadata", || {
        scopes_supported(&server) == json!(["mcp:tools", "mcp:flag", "mcp:math", "mcp:admin"])
    });
    refused(&math, &sid, "mcp:tools mcp:flag mcp:math mcp:admin");
    let admin = token("mcp:tools mcp:flag mcp:math mcp:admin");
    let reply = post(&server, Some(&admin), Some(&sid), &call).expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
}

#[test]
fn sessions_belong_to_the_tokens_subject() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &[]);
    let alice = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools"),
        "rsa1",
    );
    let bob = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "bob", "mcp:tools"),
        "rsa1",
    );
    let sid = initialize(&server, &alice);
    let call = tool_call(2, "addOne", json!({"_1": 1}));
    post(&server, Some(&bob), Some(&sid), &call).expect(404);
    let delete = format!("Authorization: Bearer {bob}\r\nMcp-Session-Id: {sid}\r\n");
    Client::connect(server.addr)
        .roundtrip(&simple_request("DELETE", "/mcp", server.addr, &delete))
        .expect(404);
    post(&server, Some(&alice), Some(&sid), &call).expect(200);
}

#[test]
fn a_key_file_and_the_static_token_work_together() {
    let dir = crate::util::TempDir::new();
    let file = dir.write("jwks.json", jwks(&[("ec1", "ec-1")]));
    let file = file.to_string_lossy().into_owned();
    let server = Server::start(&[
        "--oauth-issuer",
        "https://issuer.example",
        "--oauth-jwks",
        &file,
        "--oauth-audience",
        "https://mcp.example/mcp",
        "--auth-token",
        "operator-secret",
    ]);
    let c = json!({"iss": "https://issuer.example", "aud": "https://mcp.example/mcp", "sub": "a", "exp": FUTURE});
    initialize(
        &server,
        &mint(&json!({"alg": "ES256", "kid": "ec-1"}), &c, "ec1"),
    );
    initialize(&server, "operator-secret");
    let reply = post(&server, Some("wrong"), None, &initialize_message(1)).expect(401);
    let challenge = reply.header("www-authenticate").unwrap_or("");
    assert!(
        challenge.contains(
            "resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp\""
        ) || challenge.contains(".well-known/oauth-protected-resource/mcp"),
        "{challenge}"
    );
}

/// The calls in flight, read from `/metrics` with the static token.
fn in_flight(addr: std::net::SocketAddr) -> u64 {
    let auth = "Authorization: Bearer scrape\r\n";
    let text = Client::connect(addr)
        .roundtrip(&simple_request("GET", "/metrics", addr, auth))
        .expect(200)
        .text();
    let line = text
        .lines()
        .find(|l| l.starts_with("mcp_server_calls_in_flight "));
    let value = line.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    value.unwrap_or(0.0) as u64
}

#[test]
fn one_subjects_calls_share_one_place_in_the_queue() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let extra = [
        "--pool-replicas",
        "py=1",
        "--max-queued-per-owner",
        "2",
        "--auth-token",
        "scrape",
    ];
    let server = serve(&issuer, &extra);
    let alice = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools"),
        "rsa1",
    );
    let bob = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "bob", "mcp:tools"),
        "rsa1",
    );
    let addr = server.addr;
    // The pool is started first (a call waiting for it counts as waiting).
    let sid = initialize(&server, &bob);
    let warm = post(
        &server,
        Some(&bob),
        Some(&sid),
        &tool_call(1, "addOne", json!({"_1": 1})),
    );
    assert_eq!(warm.expect(200).json()["result"]["isError"], false);
    // Alice's calls come on three sessions: one runs, two wait.
    let mut threads = Vec::new();
    for n in 0..3u64 {
        let sid = initialize(&server, &alice);
        let token = alice.clone();
        threads.push(std::thread::spawn(move || {
            // The first runs until the others have been judged.
            let ms = if n == 0 { 4000 } else { 200 + n };
            let call = tool_call(2, "slowEcho", json!({ "_1": ms }));
            let auth = format!("Bearer {token}");
            let request = post_request(
                addr,
                Some(&sid),
                call.to_string().as_bytes(),
                &[("Authorization", &auth)],
            );
            Client::connect(addr).roundtrip(&request).expect(200).json()
        }));
        wait_for("the slow call is in", || in_flight(addr) == n + 1);
    }
    // A fourth session of hers is past her cap; Bob is served.
    let sid = initialize(&server, &alice);
    let refused = post(
        &server,
        Some(&alice),
        Some(&sid),
        &tool_call(3, "addOne", json!({"_1": 1})),
    );
    let refused = refused.expect(200).json();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let why = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(why.contains("already has 2 calls waiting"), "{why}");
    let sid = initialize(&server, &bob);
    let served = post(
        &server,
        Some(&bob),
        Some(&sid),
        &tool_call(4, "addOne", json!({"_1": 6})),
    );
    assert_eq!(served.expect(200).json()["result"]["isError"], false);
    for t in threads {
        assert_eq!(t.join().unwrap()["result"]["isError"], false);
    }
    wait_for("the cap's warning on stderr", || {
        server
            .proc
            .stderr_now()
            .contains("an OAuth subject reached the cap of 2 calls waiting")
    });
}

/// A modern (2026-07-28) request declaring the tasks extension, with
/// `token`: status and body.
fn modern(
    server: &Server,
    token: &str,
    id: u64,
    method: &str,
    name: &str,
    mut params: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let auth = format!("Bearer {token}");
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        ("Authorization", auth.as_str()),
    ];
    let request = post_request(server.addr, None, body.to_string().as_bytes(), &headers);
    let reply = Client::connect(server.addr).roundtrip(&request);
    (reply.status, reply.json())
}

#[test]
fn tasks_belong_to_the_subject_not_to_the_token() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &["--task-after", "0"]);
    let alice = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools"),
        "rsa1",
    );
    let mut later = claims(&issuer, &server, "alice", "mcp:tools");
    later["jti"] = json!("a second token");
    let alice_again = mint(&rs("rsa-1"), &later, "rsa1");
    let bob = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "bob", "mcp:tools"),
        "rsa1",
    );
    let args = json!({"name": "slowEcho", "arguments": {"_1": 50}});
    let (status, created) = modern(&server, &alice, 1, "tools/call", "slowEcho", args);
    assert_eq!(status, 200, "{created}");
    let task = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let get = |token: &str| {
        modern(
            &server,
            token,
            2,
            "tasks/get",
            &task,
            json!({"taskId": task}),
        )
    };
    // Another token of the same subject sees it; another subject does not.
    let (status, mine) = get(&alice_again);
    assert_eq!(status, 200, "{mine}");
    assert!(mine["result"]["status"].is_string(), "{mine}");
    let (_, theirs) = get(&bob);
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
}

#[test]
fn the_metrics_token_is_not_judged_by_oauth_and_access_lines_name_the_subject() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(
        &issuer,
        &["--metrics-token", "scrape", "--log-format", "json"],
    );
    let scrape = |auth: &str| {
        let extra = format!("Authorization: Bearer {auth}\r\n");
        Client::connect(server.addr)
            .roundtrip(&simple_request("GET", "/metrics", server.addr, &extra))
            .status
    };
    // A scraper has its own token and no JWT.
    assert_eq!(scrape("scrape"), 200);
    assert_eq!(scrape("not-the-token"), 401);
    let alice = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "alice", "mcp:tools"),
        "rsa1",
    );
    // A JWT does not open /metrics while it has a token of its own.
    assert_eq!(scrape(&alice), 401);
    let sid = initialize(&server, &alice);
    let call = tool_call(2, "addOne", json!({"_1": 1}));
    post(&server, Some(&alice), Some(&sid), &call).expect(200);
    // The access line of the call names the token's subject, never the token.
    let line = wait_until("the call's access line", || {
        let stderr = server.proc.stderr_now();
        let found = stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|l| l["msg"] == "access" && l["tool"] == "addOne");
        found
    });
    let owner = line["owner"].as_str().unwrap_or_default();
    assert!(owner.contains("alice"), "{line}");
    assert!(!stderr_has(&server, &alice), "the token was logged");
}

fn stderr_has(server: &Server, text: &str) -> bool {
    server.proc.stderr_now().contains(text)
}

/// Issue 34, row 3: two subjects of one issuer whose owner strings collide
/// under FNV-1a 64 (the hash owners were once compared by) are two owners,
/// in memory and after a restart from `--task-dir`.
#[test]
fn subjects_whose_owner_hashes_collide_see_only_their_own() {
    let dir = TempDir::new();
    let keys = dir.write("jwks.json", jwks(&[("rsa1", "rsa-1")]));
    let keys = keys.to_string_lossy().into_owned();
    let store = dir.join("store");
    let store = store.to_string_lossy().into_owned();
    let args = [
        "--oauth-issuer",
        "https://issuer.test/",
        "--oauth-jwks",
        &keys,
        "--oauth-audience",
        "https://mcp.example/mcp",
        "--max-result-chars",
        "100",
        "--task-after",
        "0",
        "--task-dir",
        &store,
    ];
    let token = |sub: &str| {
        let c = json!({"iss": "https://issuer.test/", "aud": "https://mcp.example/mcp",
                       "sub": sub, "exp": FUTURE});
        mint(&rs("rsa-1"), &c, "rsa1")
    };
    let (first, second) = (token("mFB_Cswu9_C"), token("Z2GBYbqi8jC"));
    let server = Server::start(&args);
    let call = json!({"name": "main__bigList", "arguments": {"_1": 500}});
    let (status, created) = modern(&server, &first, 1, "tools/call", "main__bigList", call);
    assert_eq!(status, 200, "{created}");
    let task = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_string();
    let done = wait_until("the task settled", || {
        let (_, got) = modern(
            &server,
            &first,
            2,
            "tasks/get",
            &task,
            json!({"taskId": task}),
        );
        (got["result"]["status"] == "completed").then_some(got)
    });
    let uri = done["result"]["result"]["content"][1]["uri"]
        .as_str()
        .expect("a linked result")
        .to_string();
    let check = |server: &Server| {
        let read = |token: &str| {
            let params = json!({"uri": uri});
            modern(server, token, 3, "resources/read", &uri, params).1
        };
        let list = |token: &str| modern(server, token, 4, "resources/list", "", json!({})).1;
        let task_of = |token: &str| {
            let params = json!({"taskId": task});
            modern(server, token, 5, "tasks/get", &task, params).1
        };
        assert!(read(&first)["result"]["contents"].is_array());
        assert_eq!(list(&first)["result"]["resources"][0]["uri"], uri.as_str());
        assert_eq!(task_of(&first)["result"]["status"], "completed");
        let theirs = read(&second);
        assert_eq!(theirs["error"]["code"], -32602, "{theirs}");
        assert_eq!(list(&second)["result"]["resources"], json!([]));
        assert_eq!(task_of(&second)["error"]["code"], -32602);
    };
    check(&server);
    drop(server);
    let again = Server::start(&args);
    check(&again);
}

/// `morloc-mcp <args>` that must not start: its stderr.
#[track_caller]
fn refused_start(args: &[&str]) -> String {
    let out = crate::util::run(args);
    assert_ne!(out.code, Some(0), "started: {}", out.stderr);
    out.stderr
}

/// Issue 34, rows 1 and 2: `--oauth-tool-scopes addOne=…` was matched
/// against the advertised name (`main__addOne`) only, so it protected
/// nothing and a misspelt name was accepted; and a tools file renaming the
/// tool on reload lifted the scope. Now the name is resolved to the command
/// at start (any name a user would write), an unknown one stops the start,
/// and the scope follows the command.
#[test]
fn tool_scopes_name_a_command_by_any_name_and_follow_it_through_renames() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let (iss, url) = (issuer.issuer(), issuer.jwks_url());
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "manifest.json", "main", |_| {});
    let manifest = manifest.to_string_lossy().into_owned();
    let file = dir.join("tools.json");
    std::fs::write(&file, r#"{"tools": {"hello": {"name": "greet"}}}"#).unwrap();
    let given = file.display().to_string();
    let base = |scopes: &str| -> Vec<String> {
        [
            "mcp",
            &manifest,
            "--http-port",
            "0",
            "--lazy-pools",
            "--tools-file",
            &given,
            "--oauth-issuer",
            &iss,
            "--oauth-jwks",
            &url,
            "--oauth-tool-scopes",
            scopes,
        ]
        .map(str::to_string)
        .to_vec()
    };
    // Unknown names stop the start, naming them.
    for bad in [
        "noSuchTool=mcp:x",
        "other__addOne=mcp:x",
        "main__add_one=mcp:x",
    ] {
        let args = base(bad);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let stderr = refused_start(&args);
        let name = bad.split('=').next().unwrap();
        assert!(
            stderr.contains(&format!(
                "--oauth-tool-scopes {name}: no tool or command is named '{name}'"
            )),
            "{stderr}"
        );
    }
    // The command, the advertised name, the curated name and the curated
    // name without the module all bind.
    for spelling in ["addOne", "main__addOne", "greet", "main__greet", "hello"] {
        let target = if spelling.contains("ddOne") {
            "main__addOne"
        } else {
            "main__greet"
        };
        let args = base(&format!("{spelling}=mcp:admin"));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::spawn(TempDir::new(), &mut crate::util::cmd(&args));
        let narrow = mint(
            &rs("rsa-1"),
            &claims(&issuer, &server, "a", "mcp:tools"),
            "rsa1",
        );
        let sid = initialize(&server, &narrow);
        let arguments = match target {
            "main__addOne" => json!({"_1": 1}),
            _ => json!({"_1": "x"}),
        };
        let call = tool_call(2, target, arguments);
        post(&server, Some(&narrow), Some(&sid), &call).expect(403);
    }
    // A reload that renames the command's tool keeps the scope on it.
    let args = base("main__addOne=mcp:admin");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let server = Server::spawn(TempDir::new(), &mut crate::util::cmd(&args));
    let narrow = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "a", "mcp:tools"),
        "rsa1",
    );
    let admin = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "a", "mcp:tools mcp:admin"),
        "rsa1",
    );
    let sid = initialize(&server, &narrow);
    dir.write(
        "tools.json.next",
        r#"{"tools": {"addOne": {"name": "add_one"}}}"#,
    );
    std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
    wait_for("the renamed tool", || {
        let list = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"});
        let reply = post(&server, Some(&narrow), Some(&sid), &list)
            .expect(200)
            .json();
        reply.to_string().contains("\"main__add_one\"")
    });
    let call = tool_call(6, "main__add_one", json!({"_1": 1}));
    post(&server, Some(&narrow), Some(&sid), &call).expect(403);
    let reply = post(&server, Some(&admin), Some(&sid), &call)
        .expect(200)
        .json();
    assert_eq!(reply["result"]["content"][0]["text"], "2", "{reply}");
    // A rebuild without the command is not served: the scope would be lost.
    dir.write("tools.json.next", r#"{"tools": {}}"#);
    std::fs::rename(dir.join("tools.json.next"), &file).unwrap();
    wait_for("the tool's first name back", || {
        let list = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
        let reply = post(&server, Some(&narrow), Some(&sid), &list)
            .expect(200)
            .json();
        reply.to_string().contains("\"main__addOne\"")
    });
    let call = tool_call(8, "main__addOne", json!({"_1": 1}));
    post(&server, Some(&narrow), Some(&sid), &call).expect(403);
    write_manifest(&dir, "manifest.json.next", "main", |m| {
        let commands = m["commands"].as_array_mut().unwrap();
        commands.retain(|c| c["name"] != "addOne");
    });
    std::fs::rename(dir.join("manifest.json.next"), dir.join("manifest.json")).unwrap();
    wait_for("the refused reload", || {
        stderr_has(&server, "--oauth-tool-scopes is bound to command 'main__addOne', which the new build lacks); still serving the previous build")
    });
    post(&server, Some(&narrow), Some(&sid), &call).expect(403);
}

/// The same in the router, where a bare command name may mean several
/// programs' commands.
#[test]
fn in_the_router_tool_scopes_bind_to_one_programs_command() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let (iss, url) = (issuer.issuer(), issuer.jwks_url());
    let dir = TempDir::new();
    let alpha = write_manifest(&dir, "alpha/manifest.json", "alpha", |_| {});
    let beta = write_manifest(&dir, "beta/manifest.json", "beta", |_| {});
    let (alpha, beta) = (
        alpha.to_string_lossy().into_owned(),
        beta.to_string_lossy().into_owned(),
    );
    let args = |scopes: &str| -> Vec<String> {
        [
            "router",
            &alpha,
            &beta,
            "--http-port",
            "0",
            "--lazy-pools",
            "--oauth-issuer",
            &iss,
            "--oauth-jwks",
            &url,
            "--oauth-tool-scopes",
            scopes,
        ]
        .map(str::to_string)
        .to_vec()
    };
    let ambiguous = args("addOne=mcp:admin");
    let ambiguous: Vec<&str> = ambiguous.iter().map(String::as_str).collect();
    let stderr = refused_start(&ambiguous);
    assert!(
        stderr.contains("'addOne' could mean alpha__addOne or beta__addOne"),
        "{stderr}"
    );
    let bound = args("beta__addOne=mcp:admin");
    let bound: Vec<&str> = bound.iter().map(String::as_str).collect();
    let server = Server::spawn(TempDir::new(), &mut crate::util::cmd(&bound));
    let narrow = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "a", "mcp:tools"),
        "rsa1",
    );
    let sid = initialize(&server, &narrow);
    let call = |tool: &str| tool_call(2, tool, json!({"_1": 1}));
    post(&server, Some(&narrow), Some(&sid), &call("beta__addOne")).expect(403);
    let reply = post(&server, Some(&narrow), Some(&sid), &call("alpha__addOne")).expect(200);
    assert_eq!(reply.json()["result"]["content"][0]["text"], "2");
}

/// Issue 34, row 6: a key server that answers `200` with a
/// `Content-Length` body and keeps the connection open made the fetch
/// "time out" after 10 s, every token was refused, and nothing was tried
/// again for 60 s. The fetch ends at the end of the body.
#[test]
fn a_key_server_that_keeps_the_connection_open_is_read_to_the_end_of_the_body() {
    let how = Serving {
        keep_open: true,
        ..Serving::default()
    };
    let issuer = Issuer::start_with(jwks(&[("rsa1", "rsa-1")]), how);
    let server = serve(&issuer, &[]);
    let c = claims(&issuer, &server, "alice", "mcp:tools");
    initialize(&server, &mint(&rs("rsa-1"), &c, "rsa1"));
    assert_eq!(issuer.fetches(), 1);
    assert!(!stderr_has(&server, "cannot fetch the JWKS"));
    // A rotation is fetched from the same kind of server.
    issuer.rotate(jwks(&[("rsa2", "rsa-2")]));
    initialize(&server, &mint(&rs("rsa-2"), &c, "rsa2"));
    assert_eq!(issuer.fetches(), 2);
}

/// A failed fetch is tried again after a backoff of seconds, not a minute.
#[test]
fn a_failed_key_fetch_is_tried_again_after_a_short_backoff() {
    let how = Serving {
        fail_first: 2,
        ..Serving::default()
    };
    let issuer = Issuer::start_with(jwks(&[("rsa1", "rsa-1")]), how);
    let server = serve(&issuer, &[]);
    let c = claims(&issuer, &server, "alice", "mcp:tools");
    let token = mint(&rs("rsa-1"), &c, "rsa1");
    assert_invalid(
        post(&server, Some(&token), None, &initialize_message(1)),
        "cannot be fetched",
    );
    wait_for("the failure on stderr", || {
        stderr_has(&server, "HTTP status 500") && stderr_has(&server, "tries again after 1 s")
    });
    // Refused at once while the backoff runs, then accepted once a try
    // gets the keys (the second fails too, the third serves them).
    wait_for("a token accepted after the backoff", || {
        post(&server, Some(&token), None, &initialize_message(1)).status == 200
    });
    assert_eq!(issuer.fetches(), 3);
    wait_for("the second failure on stderr", || {
        stderr_has(&server, "tries again after 2 s")
    });
}

/// Issue 34: a token accepted once is remembered, but still expires on
/// time (its `exp` plus the 60 s leeway).
#[test]
fn a_remembered_token_still_expires_on_time() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &[]);
    let now = crate::support::oauth::unix_now();
    // Past its exp, within the leeway for 10 more seconds.
    let mut c = claims(&issuer, &server, "alice", "mcp:tools");
    c["exp"] = json!(now - 50);
    let token = mint(&rs("rsa-1"), &c, "rsa1");
    let sid = initialize(&server, &token);
    let call = tool_call(2, "pureAnswer", json!({}));
    wait_for("the remembered token refused as expired", || {
        let reply = post(&server, Some(&token), Some(&sid), &call);
        match reply.status {
            200 => false,
            _ => {
                assert_invalid(reply, "token expired");
                true
            }
        }
    });
}

/// A tool's scopes bind to the tool called, not to whichever tool comes
/// first with the command that runs: `addOne` renders `hello` (its
/// `_render` projection runs `hello`), so a scope on `hello` was checked
/// against `addOne` (listed first, no scope) and a direct call of `hello`
/// needed nothing; and a projection of a tool with a scope ran without it
/// when the projected command's own tool came first.
#[test]
fn a_tool_scope_binds_to_the_tool_called_not_to_a_tool_rendering_its_command() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let (iss, url) = (issuer.issuer(), issuer.jwks_url());
    let dir = TempDir::new();
    let manifest = write_manifest(&dir, "manifest.json", "main", |m| {
        let commands = m["commands"].as_array_mut().unwrap();
        let by = |commands: &mut Vec<Value>, name: &str| {
            let i = commands.iter().position(|c| c["name"] == name).unwrap();
            i
        };
        let add = by(commands, "addOne");
        commands[add]["terminals"] = json!([{"long": "greeting", "entry": "hello"}]);
        let hello = by(commands, "hello");
        commands[hello]["terminals"] = json!([{"long": "sum", "entry": "addOne"}]);
    });
    let manifest = manifest.to_string_lossy().into_owned();
    let base = [
        "mcp",
        &manifest,
        "--http-port",
        "0",
        "--lazy-pools",
        "--plain-tool-names",
        "--oauth-issuer",
        &iss,
        "--oauth-jwks",
        &url,
        "--oauth-tool-scopes",
        "hello=mcp:admin",
    ];
    let server = Server::spawn(TempDir::new(), &mut crate::util::cmd(base));
    let narrow = mint(
        &rs("rsa-1"),
        &claims(&issuer, &server, "a", "mcp:tools"),
        "rsa1",
    );
    let sid = initialize(&server, &narrow);
    let call = |id: u64, tool: &str, arguments: Value| {
        post(
            &server,
            Some(&narrow),
            Some(&sid),
            &tool_call(id, tool, arguments),
        )
    };
    // hello needs mcp:admin, called directly or projected to addOne.
    call(2, "hello", json!({"_1": "x"})).expect(403);
    call(3, "hello", json!({"_1": "x", "_render": "sum"})).expect(403);
    // addOne needs nothing more, even when its projection runs hello.
    let reply = call(4, "addOne", json!({"_1": 1})).expect(200).json();
    assert_eq!(reply["result"]["content"][0]["text"], "2", "{reply}");
    call(5, "addOne", json!({"_1": 1, "_render": "greeting"})).expect(200);
}

/// A modern request's raw body `body` with `token`: status and reply.
fn modern_text(server: &Server, token: &str, method: &str, name: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
        ("Authorization", auth.as_str()),
    ];
    let request = post_request(server.addr, None, body.as_bytes(), &headers);
    let reply = Client::connect(server.addr).roundtrip(&request);
    (reply.status, reply.json())
}

/// A task made by a call read in place and one made by the same call read
/// the long way (an escaped key forces the full parse) belong alike to the
/// token's subject: another subject can neither read, update nor cancel
/// them, and its attempts leave them as they were.
#[test]
fn tasks_of_calls_read_either_way_belong_to_the_subject() {
    let issuer = Issuer::start(jwks(&[("rsa1", "rsa-1")]));
    let server = serve(&issuer, &["--task-after", "0"]);
    let token = |sub: &str| {
        let claims = claims(&issuer, &server, sub, "mcp:tools");
        mint(&rs("rsa-1"), &claims, "rsa1")
    };
    let (alice, bob) = (token("alice"), token("bob"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let plain = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "slowEcho", "arguments": {"_1": 60000}, "_meta": meta}})
    .to_string();
    let twin = plain.replacen('{', r#"{"\u0078":0,"#, 1);
    for body in [plain, twin] {
        let (status, created) = modern_text(&server, &alice, "tools/call", "slowEcho", &body);
        assert_eq!(status, 200, "{created}");
        assert_eq!(created["result"]["resultType"], "task", "{created}");
        let task = created["result"]["taskId"].as_str().expect("a task");
        let ask = |who: &str, method: &str| {
            let mut params = json!({"taskId": task});
            if method == "tasks/update" {
                params["inputResponses"] = json!({});
            }
            modern(&server, who, 2, method, task, params).1
        };
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let theirs = ask(&bob, method);
            assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
        }
        assert_eq!(ask(&alice, "tasks/get")["result"]["status"], "working");
        let cancelled = ask(&alice, "tasks/cancel");
        assert_eq!(cancelled["result"]["resultType"], "complete", "{cancelled}");
        assert_eq!(ask(&alice, "tasks/get")["result"]["status"], "cancelled");
    }
}
